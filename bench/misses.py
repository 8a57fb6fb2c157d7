"""The regressions kiana misses, one row each, with what they were and what kiana saw.

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py --write DIR           # once: the corpora
    .venv/bin/python bench/misses.py --read DIR [--noise realistic] [--min-change 0.10]

For every injected Liger regression of at least ``--min-change`` (truth
``regression``; units touching an outlier or a conflict left out, as in
:func:`detection.headline`) that kiana did not call a regression, it prints:

* the truth: sweep-wide or one workload (``CorpusConfig.single_workload_share``),
  its size, on how many GPUs the Liger change landed (the truth's note; a change
  between same-label sessions, a development tree re-measured, is one sitting's);
* kiana's finding: verdict, ``basis`` (the rule of :func:`kiana.stats.sweeps.rules`
  that decided it), the change and standard error it rests on, the control (a
  same-sitting baseline, the GPU-wide one ``gpu:...``, or none) and its change;
* the noise it rested on: ``noise_source``, the calibrated ``workload_noise`` and
  ``sitting_noise`` (normal-equivalent sigmas), single-sample workloads, the
  between-workload scatter;
* for one-workload regressions, the true workload's own step: its raw and
  control-adjusted change, and the median adjusted change of its siblings.

Then a count of the misses by kind, verdict and basis; by what could weigh in beyond the
step's own two sittings (:func:`evidence`: one workload, same-label sessions, an outlier
session, a first or last step, or sessions on both sides); every regression's recall by
kind, label and sitting noise; and how well the standard error of kiana's adjusted
findings matches the truth (:func:`errors`), by sitting noise.  The units, labels and judging
are :mod:`detection`'s (imported, not copied).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import polars as pl
from detection import GROUP, UNIT, bridged, judge_folder, markdown, release_units

from kiana.stats import JudgeOptions
from kiana.stats.pooling import deviation, lone_cut

SEPARATION = JudgeOptions().separation

FINDING = (
    "verdict", "basis", "change", "change_se", "raw_change", "control_provider",
    "control_change", "scatter", "workloads_total", "noise_source", "workload_noise",
    "sitting_noise", "single_samples",
)  # fmt: skip


def workload_noise() -> pl.Expr:
    """A step's per-workload noise: its noise without the sitting part."""
    return (pl.col("noise").pow(2) - pl.col("sitting_noise").pow(2)).clip(lower_bound=0).sqrt()


def _steps_of(steps: pl.DataFrame, missed: pl.DataFrame) -> pl.DataFrame:
    """The true workload's step of each one-workload miss: its raw and adjusted change,
    its per-workload noise (the step's noise without the sitting part), its siblings'
    median adjusted change, and the lone rule's z of its raw step against the rest
    (:func:`kiana.stats.pooling.deviation`) beside the Bonferroni cut it had to reach."""
    liger = steps.filter(pl.col("provider") == "liger", pl.col("metric") == "latency")
    adjusted = pl.col("adjusted_change").fill_null(pl.col("change"))
    wnoise = workload_noise()
    dev, dev_se, k = deviation(pl.col("change").log1p(), wnoise)
    keyed = missed.filter(pl.col("true_workload").is_not_null()).select(*UNIT, "true_workload")
    swept = liger.join(keyed, on=UNIT, how="inner").with_columns(
        (dev / dev_se).alias("w_z"), k.alias("_k"), wnoise.alias("w_noise")
    )
    own = swept.filter(pl.col("workload") == pl.col("true_workload")).select(
        *UNIT,
        pl.col("change").alias("w_raw"),
        adjusted.alias("w_adj"),
        "w_noise",
        "w_z",
        pl.col("_k").map_elements(lambda n: lone_cut(n, SEPARATION), pl.Float64).alias("w_cut"),
    )
    rest = (
        swept.filter(pl.col("workload") != pl.col("true_workload"))
        .group_by(UNIT)
        .agg(adjusted.median().alias("rest_adj"))
    )
    return own.join(rest, on=UNIT, how="left")


def regressions(
    folder: Path, seed: int, min_change: float
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """One seed's regressions of at least ``min_change``, with kiana's finding (``missed``
    when it is not a regression) and, for the missed one-workload ones, the true
    workload's step; its :func:`errors`; and its :func:`false_flags`."""
    truth, sessions, _, result, _ = judge_folder(folder)
    labelled = release_units(truth, sessions)
    findings = result.findings.filter(pl.col("provider") == "liger", pl.col("metric") == "latency")
    regs = _regressions(truth, labelled, findings, result.steps, min_change)
    seeded = pl.lit(seed).alias("seed")
    return (
        regs.with_columns(seeded),
        errors(labelled, findings),
        false_flags(labelled, findings).with_columns(seeded),
    )


def false_flags(labelled: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame:
    """The units with no change of Liger's own (unchanged, A/A pairs, drift, baseline
    changes) whose own finding is a regression or an improvement, with its rule."""
    quiet = labelled.filter(
        pl.col("case").is_in(["unchanged", "A/A pair", "drift", "baseline change"])
    )
    flagged = findings.filter(pl.col("verdict").is_in(["regression", "improvement"]))
    return quiet.select(*UNIT, "case").join(flagged.select(*UNIT, "basis"), on=UNIT, how="inner")


def errors(labelled: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame:
    """How far kiana's control-adjusted change lies from the truth, in its own standard
    errors (``z_error``), for every unit whose true sweep-wide change is known: unchanged
    groups, A/A pairs and drift groups (0), sweep-wide regressions (their size)."""
    known = labelled.filter(
        pl.col("case").is_in(["unchanged", "A/A pair", "drift"])
        | ((pl.col("effect") == "regression") & pl.col("true_workload").is_null()
           & ~pl.col("case").is_in(["outlier", "conflict"]))
    )  # fmt: skip
    joined = known.join(
        findings.filter(pl.col("adjusted"), pl.col("change_se") > 0).select(
            *UNIT, pl.col("change").alias("kiana_change"), "change_se", "sitting_noise"
        ),
        on=UNIT,
        how="inner",
    )
    error = pl.col("kiana_change").log1p() - pl.col("change").fill_null(0.0).log1p()
    return joined.select(
        "sitting_noise", "change_se", (error / pl.col("change_se")).alias("z_error")
    )


def _regressions(
    truth: pl.DataFrame, labelled: pl.DataFrame, findings: pl.DataFrame, steps: pl.DataFrame,
    min_change: float,
) -> pl.DataFrame:  # fmt: skip
    found = labelled.filter(
        ~pl.col("case").is_in(["outlier", "conflict"]),
        pl.col("effect") == "regression",
        pl.col("change") >= min_change,
    ).join(
        findings.filter(pl.col("basis") != "bridge")
        .select(*UNIT, *FINDING)
        .rename({"change": "kiana_change"}),
        on=UNIT,
        how="left",
    )
    # Found on its own step, or by a bridge over it (detection.bridged: a change between two
    # sessions across one too noisy to place it in).
    mine = findings.filter(pl.col("basis") != "bridge")
    spanned = bridged(
        labelled.join(
            mine.select(*UNIT, pl.col("verdict").alias("kiana")), on=UNIT, how="left"
        ).with_columns(pl.col("kiana").fill_null("not reported")),
        findings,
    ).select(*UNIT, pl.col("kiana") == "regression")
    found = (
        found.join(spanned.rename({"kiana": "_found"}), on=UNIT, how="left")
        .with_columns((~pl.col("_found").fill_null(False)).alias("missed"))
        .drop("_found")
    )
    found = found.join(places(findings), on=UNIT, how="left")
    missed = found.filter(pl.col("missed"))
    notes = truth.filter(pl.col("provider") == "liger", pl.col("effect") == "regression")
    gpus = notes.select(
        *UNIT, pl.col("note").str.extract(r"\((\d+) GPU").cast(pl.Int64).alias("gpus")
    ).unique(UNIT)
    return found.join(gpus, on=UNIT, how="left").join(_steps_of(steps, missed), on=UNIT, how="left")


def places(findings: pl.DataFrame) -> pl.DataFrame:
    """Each Liger step's place in its group's series of steps (bridges aside): ``step``
    (1-based) and ``steps``.  A first or last step has no session beyond it on one side,
    so nothing outside the pair (a bridge, a later level) can weigh in there."""
    steps = findings.filter(pl.col("basis") != "bridge").sort(*GROUP, "from_session")
    return steps.select(
        *UNIT,
        (pl.int_range(pl.len()).over(GROUP) + 1).alias("step"),
        pl.len().over(GROUP).alias("steps"),
    )


def evidence(frame: pl.DataFrame) -> pl.DataFrame:
    """What each regression's evidence could be, beyond the step's own two sittings
    (``beyond``): one workload of the sweep; a change between same-label sessions (a
    development tree measured once); an outlier session (off and back); a first or last
    step (no session beyond it on one side); else sessions on both sides."""
    end = (pl.col("step") == 1) | (pl.col("step") == pl.col("steps"))
    return frame.with_columns(
        pl.when(pl.col("true_workload").is_not_null())
        .then(pl.lit("one workload of the sweep"))
        .when(pl.col("same_label"))
        .then(pl.lit("same-label sessions"))
        .when(pl.col("basis") == "outlier")
        .then(pl.lit("an outlier session (off and back)"))
        .when(end.fill_null(False))
        .then(pl.lit("first or last step of its series"))
        .otherwise(pl.lit("sessions on both sides"))
        .alias("beyond")
    )


def kind(frame: pl.DataFrame) -> pl.DataFrame:
    """A short name of each miss's kind."""
    one = pl.col("true_workload").is_not_null()
    control = pl.col("control_provider")
    where = (
        pl.when(control.is_null())
        .then(pl.lit("no control"))
        .when(control.str.starts_with("gpu:"))
        .then(pl.lit("GPU-wide control"))
        .otherwise(pl.lit("same-sitting control"))
    )
    return frame.with_columns(
        pl.when(one).then(pl.lit("one workload")).otherwise(pl.lit("sweep-wide")).alias("kind"),
        where.alias("control"),
        (pl.col("gpus").cast(pl.String) + pl.lit(" GPU(s)")).fill_null("one sitting").alias("on"),
    )


def _pct(value: float | None, signed: bool = True) -> str:
    return "-" if value is None else (f"{value:+.1%}" if signed else f"{value:.1%}")


def row(m: dict[str, object]) -> tuple[str, ...]:
    """One miss as table cells (see :data:`HEADER`)."""
    get = m.get
    change, se = get("kiana_change"), get("change_se")
    z = (
        f"{math.log1p(float(change)) / float(se):.2f}"  # type: ignore[arg-type]
        if change is not None and se
        else "-"
    )
    realised = (
        _pct(math.expm1(math.log1p(float(change)) - math.log1p(float(get("change")))))  # type: ignore[arg-type]
        if change is not None and get("true_workload") is None
        else "-"
    )
    control = f"{get('control_provider') or 'none'} {_pct(get('control_change'))}"  # type: ignore[arg-type]
    one = "-"
    if get("true_workload") is not None:
        one = (
            f"raw {_pct(get('w_raw'))}, adj {_pct(get('w_adj'))}, noise {_pct(get('w_noise'), False)}, "  # type: ignore[arg-type]
            f"z {float(get('w_z') or 0):.2f} (cut {float(get('w_cut') or 0):.2f}), rest {_pct(get('rest_adj'))}"  # type: ignore[arg-type]
        )
    return (
        str(get("seed")), f"{get('kernel')}/{get('pass')}", str(get("gpu")).replace("NVIDIA ", ""),
        f"{get('kind')}, {get('on')}{', same label' if get('same_label') else ''}",
        _pct(get("change")),  # type: ignore[arg-type]
        f"{get('verdict')} ({get('basis')})",
        f"{_pct(change)} ± {_pct(se, False)}", z, realised,  # type: ignore[arg-type]
        _pct(get("raw_change")), control,  # type: ignore[arg-type]
        f"{_pct(get('workload_noise'), False)} / {_pct(get('sitting_noise'), False)}",  # type: ignore[arg-type]
        f"{get('noise_source')} ({get('single_samples')} single)", _pct(get("scatter"), False),  # type: ignore[arg-type]
        one, f"{get('step')} of {get('steps')}",
    )  # fmt: skip


HEADER = (
    "seed", "kernel/pass", "gpu", "kind", "true", "verdict (rule)", "kiana change ± se",
    "z", "kiana - true (sweep-wide)", "raw", "control", "noise workload / sitting", "noise source",
    "scatter", "the true workload's step (one-workload)", "step",
)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--read", type=Path, required=True, metavar="DIR")
    parser.add_argument("--noise", default="realistic", choices=("spread", "realistic"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(60)))
    parser.add_argument("--min-change", type=float, default=0.10)
    args = parser.parse_args()
    root = args.read / args.noise
    parts = [regressions(root / f"seed-{s}", s, args.min_change) for s in args.seeds]
    every = evidence(kind(pl.concat([p for p, _, _ in parts], how="diagonal_relaxed")))
    out = every.filter(pl.col("missed"))
    print(
        f"{out.height} of {every.height} regressions >= {args.min_change:.0%} missed ({args.noise})"
    )
    rows = [row(m) for m in out.sort("kind", "basis", "seed").iter_rows(named=True)]
    markdown(HEADER, rows)
    counts = out.group_by("kind", "on", "control", "verdict", "basis").len()
    markdown(
        ("kind", "on", "control", "verdict", "rule", "misses"),
        [tuple(str(v) for v in r) for r in counts.sort("len", descending=True).iter_rows()],
    )
    beyond = out.group_by("beyond").len().sort("len", descending=True)
    markdown(("misses: what could weigh in beyond the step's two sittings", "misses"),
             [(str(b), str(n)) for b, n in beyond.iter_rows()])  # fmt: skip
    markdown(("every regression by", "n", "found", "missed"), recall(every))
    flags = pl.concat([f for _, _, f in parts]).group_by("case", "basis").len()
    markdown(
        ("no change of Liger's own, called one on its own step: case", "rule", "units"),
        [
            tuple(str(v) for v in r)
            for r in flags.sort("case", "len", descending=[False, True]).iter_rows()
        ],
    )
    calibrated = pl.concat([e for _, e, _ in parts])
    markdown(
        ("adjusted findings by", "n", "median se", "robust sd of z_error", "p90 |z_error|",
         "share |z_error| >= 3"),
        [(b, str(n), f"{se:.1%}", f"{sd:.2f}", f"{p90:.2f}", f"{tail:.3f}")
         for b, n, se, sd, p90, tail in by_sitting(calibrated).iter_rows()],
    )  # fmt: skip


def by_sitting(errors: pl.DataFrame) -> pl.DataFrame:
    """:func:`errors` by the finding's sitting noise: a standard error that is right has a
    robust sd of ``z_error`` near 1 and about 0.3% of units beyond 3 (normal tails)."""
    return (
        errors.group_by(sitting_bins().alias("by"))
        .agg(
            pl.len(),
            pl.col("change_se").median(),
            (pl.col("z_error").abs().median() * 1.4826),
            pl.col("z_error").abs().quantile(0.9).alias("p90"),
            (pl.col("z_error").abs() >= 3).mean().alias("tail"),
        )
        .sort("change_se")
    )


def sitting_bins(column: str = "sitting_noise") -> pl.Expr:
    """The bands of sitting noise the tables group by (``bench/lone_tails.py`` too)."""
    sitting = pl.col(column)
    return (
        pl.when(sitting < 0.01).then(pl.lit("sitting noise < 1%"))
        .when(sitting < 0.03).then(pl.lit("sitting noise 1-3%"))
        .when(sitting < 0.06).then(pl.lit("sitting noise 3-6%"))
        .when(sitting.is_not_null()).then(pl.lit("sitting noise >= 6%"))
        .otherwise(pl.lit("sitting noise unknown"))
    )  # fmt: skip


def recall(every: pl.DataFrame) -> list[tuple[str, ...]]:
    """Found and missed by kind, same label, and the sitting noise kiana measured for the
    finding (normal-equivalent sigma, state factor included)."""
    bins = sitting_bins()
    same = pl.when(pl.col("same_label")).then(pl.lit("same label")).otherwise(pl.lit("new label"))
    rows: list[tuple[str, ...]] = []
    for expr in (pl.col("kind"), same, bins):
        counts = every.group_by(expr.alias("by")).agg(
            pl.len().alias("n"), pl.col("missed").sum().alias("missed")
        )
        for by, n, missed in counts.sort("by").iter_rows():
            rows.append((str(by), str(n), f"{(n - missed) / n:.3f}", str(missed)))
    return rows


if __name__ == "__main__":
    main()
