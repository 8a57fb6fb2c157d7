"""Detection quality of kiana's findings against the generator's ground truth.

Target: false findings <= 1%, drift called <= 2%, >= 10% regressions found >= 0.95 on the
realistic model; on the spread model >= 5% all found, 3% >= 0.8, improvements >= 0.9; kiana
beside asv and Conbench (``bench/README.md``'s table; ``--grid``: :mod:`grid`).

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py [--seeds 0 1 ...] [--noise spread realistic] [--details] [--misses]
    .venv/bin/python bench/detection.py --write DIR   # only write DIR/<noise>/seed-N/{documents.jsonl,truth.csv,sessions.csv}
    .venv/bin/python bench/detection.py --read DIR    # evaluate those folders
    .venv/bin/python bench/detection.py --grid        # a grid of noise models (bench/grid.py)

For each noise model (``spread``, the default one whose p20-p80 spread predicts the
noise, and ``realistic``, calibrated on Liger's real CSVs: ``docs/CALIBRATION.md``) and
each seed (0-59 by default: the rounds before the fifth tuned on 0-9, 10-19 were held
out in the fifth, 20-39 in the sixth and 40-59 in the seventh), :mod:`kiana.generate` makes a corpus with known effects (see
:func:`corpus_config`; ``--histories 6`` long histories by default), written to a folder
(a temporary one unless ``--write``), the documents go through the real loader into an
in-memory database and :func:`kiana.analyze` judges them.  The first table
(:func:`headline`, markdown) holds issue 21's metrics for both models side by side:
false regressions/improvements among unchanged units (A/A pairs included), A/A pairs,
drift groups and baseline code changes called a change, regressions of >= 10%, >= 5% and
3% found, improvements found, changes called the wrong way; ``--details`` adds the
tables below per model.  ``--read`` evaluates
folders written earlier, needing nothing from :mod:`kiana.generate`: run with
``PYTHONPATH`` at an older checkout, it measures that checkout's statistics on the same
documents (columns the older statistics lack count as not reported).  Evaluation is per *finding*: one
kernel, pass, provider (``liger``), GPU and metric (latency) between two consecutive
sessions.  The universe of findings comes from the generator's sessions
(``Corpus.sessions``: consecutive sessions of one kernel, pass and GPU in (version,
time) order, same-label re-benchmarks included); kiana's findings are matched to it by
kernel, pass, provider, GPU, metric, ``from_session`` and ``to_session``.  A finding
kiana does not report counts as not found.

Truth per finding: the ``regression``/``improvement`` truth row of that session pair
(sweep-wide or one workload), ``drift`` (an environment shift alone), ``conflict`` (a
session of the pair holds another implementation's runs: expected in
``Judgement.quality``, not judged), ``outlier`` (a session of the pair holds a run
that is off, any provider: left out of every rate, counted apart), ``baseline change``
(the step's only change is a baseline's own code: truth ``baseline_change``), ``A/A
pair`` (truth ``aa``), else ``unchanged``.

Rows of the table (targets in brackets):

* sweep-wide 3% regressions, 4-5%, >= 5% [3%: recall >= 0.8; >= 5%: all found];
* one-workload regressions (+20..40% in one workload; and whether that workload is
  named in the finding's ``workloads``);
* improvements [recall >= 0.9], and changes between same-label sessions;
* conflicts reported in ``Judgement.quality`` (kind ``conflict``, same kernel, pass,
  GPU and session);
* false findings: regression or improvement findings on unchanged findings, as a
  share of them [<= 1%];
* environment shifts not called regression or improvement [>= 98%].

Long histories (groups with truth ``changepoint`` rows) are left out of the rows above
and judged apart (:func:`history_rows`, kiana only): change-point recall (a ``liger``
latency change point of the group whose first session after the shift is within one
session of the truth's ``to_session``) and precision (kiana's change points in the long
histories, one per group and session), the level-shift step's finding, and per outlier
truth row (sessions of long histories, single runs elsewhere) whether it was called a
change (a regression/improvement finding or step at its session, or a change point into
or out of it) and whether ``Judgement.quality`` reports it as an ``outlier``; then the
same by noise level, reported spread and outlier size.

Contenders, on the same sessions (medians of a session's runs per workload): ``asv
5%`` flags a finding when a workload moved by 5% or more (airspeed velocity's default
``--factor 1.05``); ``conbench z`` when a workload's new session lies 5 or more
standard deviations from the mean of its earlier sessions (at least three).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from kiana.load import connect, load, runs
from kiana.stats import judge

if TYPE_CHECKING:
    from kiana.generate import CorpusConfig

GROUP = ["kernel", "pass", "gpu"]
UNIT = [*GROUP, "from_session", "to_session"]
METHODS = ("kiana", "asv 5%", "conbench z")
FLAGS = ("regression", "improvement")


def corpus_config(
    seed: int, sweep_size: int, noise: str = "spread", **changes: float
) -> CorpusConfig:
    """The default corpus with more of every case, so five seeds give enough of each;
    ``noise`` is :class:`kiana.generate.CorpusConfig`'s (``spread`` or ``realistic``)."""
    from kiana.generate import CorpusConfig

    extra: dict[str, object] = {} if noise == "spread" else {"noise": noise}
    return CorpusConfig(
        seed=seed,
        sweep_size=sweep_size,
        regression_rate=0.06,
        improvement_rate=0.05,
        rerun_rate=0.05,
        conflict_rate=0.01,
        **extra,  # type: ignore[arg-type]
        **changes,  # type: ignore[arg-type]
    )


def units(sessions: pl.DataFrame) -> pl.DataFrame:
    """Every Liger latency finding there is to make: consecutive sessions of a group."""
    sessions = sessions.sort(*GROUP, "position")
    nxt = [pl.col(c).shift(-1).over(GROUP) for c in ("session", "liger_version", "rerun")]
    return (
        sessions.with_columns(
            nxt[0].alias("to_session"), nxt[1].alias("to_version"), nxt[2].alias("to_rerun")
        )
        .filter(pl.col("to_session").is_not_null())
        .select(
            *GROUP,
            pl.col("session").alias("from_session"),
            "to_session",
            pl.col("liger_version").alias("from_version"),
            "to_version",
            (pl.col("to_rerun") == 1).alias("same_label"),
        )
    )


def label(units: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """Each unit's true case (see the module docstring)."""
    liger = truth.filter(pl.col("provider") == "liger")
    code = (
        liger.filter(pl.col("effect").is_in(FLAGS))
        .select(*UNIT, "effect", "change", pl.col("workload").alias("true_workload"))
        .unique(UNIT, keep="first")
    )
    env = liger.filter(pl.col("effect") == "drift").select(UNIT).unique()
    flags = {
        "baseline": truth.filter(pl.col("effect") == "baseline_change").select(UNIT).unique(),
        "aa": liger.filter(pl.col("effect") == "aa").select(UNIT).unique(),
    }
    touched = {
        kind: pl.concat(
            [
                truth.filter(pl.col("effect") == kind).select(*GROUP, pl.col(end).alias("s"))
                for end in ("from_session", "to_session")
            ]
        ).unique()
        for kind in ("conflict", "outlier")
    }
    out = units.join(code, on=UNIT, how="left").join(
        env.with_columns(pl.lit(True).alias("env")), on=UNIT, how="left"
    )
    for kind, sessions in touched.items():
        hit = pl.concat(
            [
                out.join(sessions, left_on=[*GROUP, end], right_on=[*GROUP, "s"]).select(UNIT)
                for end in ("from_session", "to_session")
            ]
        ).unique()
        out = out.join(hit.with_columns(pl.lit(True).alias(kind)), on=UNIT, how="left")
    for name, frame in flags.items():
        out = out.join(frame.with_columns(pl.lit(True).alias(name)), on=UNIT, how="left")
    out = out.with_columns(pl.col("env", "conflict", "outlier", *flags).fill_null(False))
    change, sweep = pl.col("change"), pl.col("true_workload").is_null()
    case = (
        pl.when(pl.col("outlier"))
        .then(pl.lit("outlier"))
        .when(pl.col("conflict"))
        .then(pl.lit("conflict"))
        .when(pl.col("effect").is_not_null() & pl.col("same_label"))
        .then(pl.lit("same-label change"))
        .when(pl.col("effect") == "improvement")
        .then(pl.lit("improvement"))
        .when((pl.col("effect") == "regression") & ~sweep)
        .then(pl.lit("one-workload regression"))
        .when((pl.col("effect") == "regression") & ((change - 0.03).abs() < 1e-9))
        .then(pl.lit("sweep-wide 3% regression"))
        .when((pl.col("effect") == "regression") & (change < 0.05))
        .then(pl.lit("sweep-wide 3-5% regression"))
        .when(pl.col("effect") == "regression")
        .then(pl.lit(">=5% regression"))
        .when(pl.col("env"))
        .then(pl.lit("drift"))
        .when(pl.col("baseline"))
        .then(pl.lit("baseline change"))
        .when(pl.col("aa"))
        .then(pl.lit("A/A pair"))
        .otherwise(pl.lit("unchanged"))
    )
    return out.with_columns(case.alias("case"))


def with_sessions(frame: pl.DataFrame, gap: timedelta = timedelta(hours=1)) -> pl.DataFrame:
    """The contract's sessions, from the runs alone (for the contenders)."""
    label = "version" if "version" in frame.columns else "liger_version"  # kiana.runs: version
    scope = [*GROUP, "metric", label, *(["origin"] if "origin" in frame.columns else [])]
    ordered = frame.sort(*scope, "observed_at")
    new = (pl.col("observed_at").diff().over(scope) > gap).fill_null(True)
    first = pl.col("observed_at").min().over(*scope, "_n")
    return (
        ordered.with_columns(new.cum_sum().over(scope).alias("_n"))
        .with_columns(first.dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("session"))
        .drop("_n")
    )


def contenders(frame: pl.DataFrame, labelled: pl.DataFrame) -> pl.DataFrame:
    """The asv and Conbench verdicts per unit, from session medians per workload."""
    liger = frame.filter(
        pl.col("provider") == "liger",
        pl.col("metric") == "latency",
        pl.col("status") == "passed",
    )
    points = (
        with_sessions(liger)
        .group_by(*GROUP, "workload", "session")
        .agg(pl.col("median").median())
        .sort(*GROUP, "workload", "session")
    )
    series = [*GROUP, "workload"]
    n = pl.int_range(0, pl.len()).over(series)
    mean = (pl.col("median").cum_sum().over(series) - pl.col("median")) / n
    square = (pl.col("median").pow(2).cum_sum().over(series) - pl.col("median").pow(2)) / n
    std = ((square - mean.pow(2)) * n / (n - 1)).clip(lower_bound=0).sqrt()
    points = points.with_columns(
        pl.col("session").shift(1).over(series).alias("from_session"),
        (pl.col("median") / pl.col("median").shift(1).over(series) - 1).alias("change"),
        pl.when(n >= 3).then((pl.col("median") - mean) / std).alias("z"),
    ).rename({"session": "to_session"})

    def verdict(up: pl.Expr, down: pl.Expr, name: str) -> pl.Expr:
        return (
            pl.when(up.any())
            .then(pl.lit("regression"))
            .when(down.any())
            .then(pl.lit("improvement"))
            .otherwise(pl.lit("unchanged"))
            .alias(name)
        )

    z = pl.col("z").fill_nan(None)
    per_unit = points.group_by(UNIT).agg(
        verdict(pl.col("change") >= 0.05, pl.col("change") <= -0.05, "asv 5%"),
        verdict(z >= 5, z <= -5, "conbench z"),
    )
    return labelled.join(per_unit, on=UNIT, how="left").with_columns(
        pl.col("asv 5%", "conbench z").fill_null("unchanged")
    )


TRUTH_SCHEMA = {
    c: pl.Float64 if c == "change" else pl.String
    for c in (
        "kernel", "pass", "provider", "gpu", "workload", "metric", "from_version",
        "to_version", "from_session", "to_session", "effect", "change", "note",
    )
}  # fmt: skip
SESSIONS_FILE = "sessions.csv"


def write_seed(
    seed: int, sweep_size: int, folder: Path, noise: str = "spread", **changes: float
) -> None:
    """One seed's corpus as a folder: documents.jsonl, truth.csv and sessions.csv."""
    from kiana.generate import generate, write_corpus

    corpus = generate(corpus_config(seed, sweep_size, noise, **changes))
    write_corpus(corpus, folder, layout="jsonl")
    corpus.sessions.write_csv(folder / SESSIONS_FILE)


def read_seed(folder: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A folder's truth and sessions (written by :func:`write_seed`)."""
    truth = pl.read_csv(folder / "truth.csv", schema=TRUTH_SCHEMA)
    sessions = pl.read_csv(
        folder / SESSIONS_FILE,
        schema_overrides={"liger_version": pl.String, "session": pl.String},
    )
    return truth, sessions


def history_groups(truth: pl.DataFrame) -> pl.DataFrame:
    """The kernel, pass and GPU of every long history (the groups with change points)."""
    return truth.filter(pl.col("effect") == "changepoint").select(GROUP).unique()


def kiana_changepoints(cps: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """kiana's change points as (group, provider, workload, position of the first session
    after the shift); a label's first session stands for it."""
    first = (
        sessions.sort("position")
        .unique([*GROUP, "liger_version"], keep="first")
        .select(*GROUP, pl.col("liger_version").alias("to_version"), "position")
    )
    return (
        cps.filter(pl.col("metric") == "latency")
        .select(*GROUP, "provider", "workload", "to_version")
        .join(first, on=[*GROUP, "to_version"], how="inner")
    )


def _near(frame: pl.DataFrame, found: pl.DataFrame, left: str, on: list[str]) -> pl.Series:
    """Per row of ``frame``: whether ``found`` (with ``position``) has a row of the same
    ``on`` keys within one session of ``frame[left]``."""
    if frame.height == 0:
        return pl.Series([], dtype=pl.Boolean)
    numbered = frame.with_row_index("_row")
    hits = (
        numbered.join(found.select(*on, "position"), on=on, how="inner")
        .filter((pl.col("position") - pl.col(left)).abs() <= 1)
        .select("_row")
        .unique()
    )
    return numbered.join(hits.with_columns(pl.lit(True).alias("_hit")), on="_row", how="left")[
        "_hit"
    ].fill_null(False)


def history_rows(
    result: object, truth: pl.DataFrame, sessions: pl.DataFrame, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Per seed: the true change points (found?), kiana's change points in long histories
    (true?), and every outlier truth row (called a change? reported as an outlier?)."""
    position = sessions.select(*GROUP, pl.col("session").alias("s"), "position")
    histories = history_groups(truth)
    cps = kiana_changepoints(getattr(result, "changepoints"), sessions)  # noqa: B009
    liger_cps = cps.filter(pl.col("provider") == "liger")
    noise = pl.col("note").str.extract(r"noise ([0-9.]+%)").alias("noise")
    spread = pl.col("note").str.extract(r"(zero spread|spread reported)").alias("spread")
    true_cps = (
        truth.filter(pl.col("effect") == "changepoint")
        .join(position, left_on=[*GROUP, "to_session"], right_on=[*GROUP, "s"])
        .rename({"position": "to_position"})
        .with_columns(noise, spread)
    )
    true_cps = true_cps.with_columns(
        _near(true_cps, liger_cps, "to_position", GROUP).alias("found")
    )
    findings: pl.DataFrame = getattr(result, "findings")  # noqa: B009
    shift_steps = findings.filter(pl.col("provider") == "liger", pl.col("metric") == "latency")
    shift_steps = shift_steps.select(
        *GROUP, "from_session", "to_session", pl.col("verdict").alias("step_verdict")
    )
    true_cps = true_cps.join(shift_steps, on=UNIT, how="left").with_columns(
        (
            pl.col("step_verdict")
            == pl.when(pl.col("change") > 0)
            .then(pl.lit("regression"))
            .otherwise(pl.lit("improvement"))
        )
        .fill_null(False)
        .alias("step_called")
    )
    mine = (
        liger_cps.join(histories, on=GROUP, how="semi")
        .select(*GROUP, "position")
        .unique()
        .rename({"position": "at"})
    )
    truth_at = true_cps.select(*GROUP, pl.col("to_position").alias("position"))
    mine = mine.with_columns(_near(mine, truth_at, "at", GROUP).alias("true"))
    outliers = outlier_rows(result, truth, sessions, cps).with_columns(noise, spread)
    seeded = pl.lit(seed).alias("seed")
    return true_cps.with_columns(seeded), mine.with_columns(seeded), outliers.with_columns(seeded)


def outlier_rows(
    result: object, truth: pl.DataFrame, sessions: pl.DataFrame, cps: pl.DataFrame
) -> pl.DataFrame:
    """Every outlier truth row: ``history`` (a whole ``liger`` session of a long
    history, workload null) or a single run; ``called`` when a regression/improvement
    finding or step, or a change point into or out of it, sits at its session;
    ``reported`` when ``Judgement.quality`` has an ``outlier`` entry for it."""
    rows = (
        truth.filter(pl.col("effect") == "outlier")
        .join(
            sessions.select(*GROUP, pl.col("session").alias("to_session"), "position"),
            on=[*GROUP, "to_session"],
            how="left",
        )
        .with_row_index("_row")
        .with_columns(pl.col("workload").is_null().alias("history"))
    )
    keys = [*GROUP, "provider"]
    findings: pl.DataFrame = getattr(result, "findings")  # noqa: B009
    steps: pl.DataFrame = getattr(result, "steps")  # noqa: B009
    quality: pl.DataFrame = getattr(result, "quality")  # noqa: B009
    called: dict[str, list[pl.DataFrame]] = {"by_finding": [], "by_step": [], "by_cp": []}
    for end in ("from_session", "to_session"):
        flagged = findings.filter(pl.col("verdict").is_in(FLAGS), pl.col("metric") == "latency")
        called["by_finding"].append(
            rows.join(flagged.select(*keys, end), left_on=[*keys, "to_session"],
                      right_on=[*keys, end]).select("_row")
        )  # fmt: skip
        if end in steps.columns:
            moved = steps.filter(pl.col("verdict").is_in(FLAGS), pl.col("metric") == "latency")
            hits = rows.join(
                moved.select(*keys, "workload", end).rename({"workload": "_w"}),
                left_on=[*keys, "to_session"],
                right_on=[*keys, end],
            )
            called["by_step"].append(
                hits.filter(
                    pl.col("workload").is_null() | (pl.col("workload") == pl.col("_w"))
                ).select("_row")
            )
    near = rows.join(cps.rename({"workload": "_w", "position": "_p"}), on=keys).filter(
        pl.col("_p").is_between(pl.col("position"), pl.col("position") + 1),
        pl.col("workload").is_null() | (pl.col("workload") == pl.col("_w")),
    )
    called["by_cp"].append(near.select("_row"))
    outliers = quality.filter(pl.col("kind") == "outlier") if "kind" in quality.columns else quality
    if outliers.height:
        found = rows.join(
            outliers.select(*keys, pl.col("workload").alias("_w"), "session"),
            left_on=[*keys, "to_session"],
            right_on=[*keys, "session"],
        ).filter(pl.col("workload").is_null() | (pl.col("workload") == pl.col("_w")))
        reported = found.select("_row").unique()
    else:
        reported = pl.DataFrame(schema={"_row": pl.UInt32})
    out = rows.join(reported.with_columns(pl.lit(True).alias("reported")), on="_row", how="left")
    for name, frames in called.items():
        hit = pl.concat([f.cast({"_row": pl.UInt32}) for f in frames]).unique() if frames else None
        if hit is None:
            out = out.with_columns(pl.lit(False).alias(name))
        else:
            out = out.join(hit.with_columns(pl.lit(True).alias(name)), on="_row", how="left")
    flags = ["reported", *called]
    out = out.with_columns(pl.col(flags).fill_null(False))
    return out.with_columns(pl.any_horizontal(*called).alias("called")).drop("_row")


def judged(con: object) -> tuple[pl.DataFrame, object]:
    """The runs and kiana's judgement of them, through :func:`kiana.analyze` (the one
    pipeline; an older tree without it: ``judge(runs(con))``)."""
    try:
        from kiana import analyze
    except ImportError:  # an older checkout (--read with PYTHONPATH at it)
        frame = runs(con)  # type: ignore[arg-type]
        return frame, judge(frame)
    from kiana.stats import JudgeOptions

    chosen = {
        name: value
        for name, value in (("separation", SEPARATION), ("bridge_separation", BRIDGE_SEPARATION))
        if value is not None
    }
    options = JudgeOptions(**chosen) if chosen else None  # type: ignore[arg-type]
    analysis = analyze(con, options=options)  # type: ignore[arg-type]
    return analysis.runs, analysis.judgement


#: ``--separation``: judge with this separation instead of the default (the trade-off
#: between false findings and recall, one point per run).
SEPARATION: float | None = None
#: ``--bridge-separation``: the bar of a bridge (kiana.stats.bridges) instead of the default.
BRIDGE_SEPARATION: float | None = None


def judge_folder(folder: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, Any, float]:
    """One folder of :func:`write_seed` loaded and judged: its truth, sessions, runs,
    kiana's judgement and the seconds the judging took."""
    truth, sessions = read_seed(folder)
    con = connect(None)
    load(con, [folder / "documents.jsonl"])
    started = time.monotonic()
    frame, result = judged(con)
    elapsed = time.monotonic() - started
    con.close()
    return truth, sessions, frame, result, elapsed


def release_units(truth: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """The labelled units outside the long histories (the rows of the first table)."""
    histories = history_groups(truth)
    release = sessions.join(histories, on=GROUP, how="anti")
    return label(units(release), truth.join(histories, on=GROUP, how="anti"))


def one_corpus(
    seed: int, folder: Path
) -> tuple[pl.DataFrame, pl.DataFrame, tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]:
    truth, sessions, frame, result, elapsed = judge_folder(folder)
    findings = result.findings
    missing = [c for c in ("from_session", "to_session", "workloads") if c not in findings.columns]
    if missing or not hasattr(result, "quality"):
        sys.exit(
            f"kiana.stats.judge does not follow the session contract yet (findings lack "
            f"{missing or 'nothing'}; quality {'present' if hasattr(result, 'quality') else 'absent'})"
        )
    histories = history_groups(truth)
    mine = findings.filter(pl.col("provider") == "liger", pl.col("metric") == "latency").select(
        *UNIT, pl.col("verdict").alias("kiana"), pl.col("workloads").alias("named")
    )
    labelled = release_units(truth, sessions)
    merged = labelled.join(mine, on=UNIT, how="left").with_columns(
        pl.col("kiana").fill_null("not reported")
    )
    merged = bridged(merged, findings)
    merged = contenders(frame.join(histories, on=GROUP, how="anti"), merged)
    quality = result.quality.filter(pl.col("kind") == "conflict")
    conflicts = truth.filter(pl.col("effect") == "conflict").select(
        *GROUP, pl.col("to_session").alias("session")
    )
    reported = conflicts.join(
        quality.select(*GROUP, "session").unique(), on=[*GROUP, "session"], how="semi"
    )
    strays = findings.filter(pl.col("verdict").is_in(FLAGS)).join(
        labelled.with_columns(pl.lit("liger").alias("provider")),
        on=[*UNIT, "provider"],
        how="anti",
    )
    coverage = getattr(result, "coverage", None)
    print(
        f"seed {seed}: {frame.height} runs, {findings.height} findings judged in {elapsed:.2f}s; "
        f"{labelled.height} Liger session pairs outside long histories; {strays.height} "
        f"regression/improvement findings outside them (baselines, other pairs, long "
        f"histories); coverage {coverage}"
    )
    extra = pl.DataFrame(
        {"seed": [seed], "conflicts": [conflicts.height], "reported": [reported.height]}
    )
    history = history_rows(result, truth, sessions, seed)
    return merged.with_columns(pl.lit(seed).alias("seed")), extra, history


def bridged(merged: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame:
    """``merged`` with kiana's bridges (``basis`` ``bridge``, :mod:`kiana.stats.bridges`:
    a change between two sessions across one too noisy to place it in) counted on the
    two units they cover: a bridge is *true* when one of them has the true change it
    reports, which is then found (``kiana``; ``bridge`` says so); the other unit is not
    charged.  A false bridge is charged to each covered unit it did not flag already,
    so one false bridge is two false findings."""
    spans = findings.filter(
        pl.col("provider") == "liger", pl.col("metric") == "latency", pl.col("basis") == "bridge"
    ).select(*GROUP, pl.col("from_session").alias("_p"), pl.col("to_session").alias("_n"),
             pl.col("verdict").alias("_bridge"))  # fmt: skip
    first = merged.join(spans, left_on=[*GROUP, "from_session"], right_on=[*GROUP, "_p"])
    second = merged.join(spans, left_on=[*GROUP, "to_session"], right_on=[*GROUP, "_n"])
    covered = pl.concat(
        [
            first.join(merged.select(*GROUP, pl.col("from_session").alias("_s"), pl.col("to_session").alias("_n")),
                       left_on=[*GROUP, "to_session", "_n"], right_on=[*GROUP, "_s", "_n"], how="semi")
            .select(*UNIT, "effect", "_bridge", pl.col("from_session").alias("_p"), "_n"),
            second.join(merged.select(*GROUP, pl.col("from_session").alias("_p"), pl.col("to_session").alias("_s")),
                        left_on=[*GROUP, "_p", "from_session"], right_on=[*GROUP, "_p", "_s"], how="semi")
            .select(*UNIT, "effect", "_bridge", "_p", pl.col("to_session").alias("_n")),
        ]
    )  # fmt: skip
    true = (pl.col("effect") == pl.col("_bridge")).any().over(*GROUP, "_p", "_n")
    charged = (
        covered.with_columns(true.alias("_true"))
        .filter((pl.col("effect") == pl.col("_bridge")) | ~pl.col("_true"))
        .group_by(UNIT)
        .agg(pl.col("_bridge").first())
    )
    kept = pl.col("kiana").is_in(FLAGS) | pl.col("_bridge").is_null()
    return (
        merged.join(charged, on=UNIT, how="left")
        .with_columns(
            (~kept).alias("bridge"),
            pl.when(kept).then(pl.col("kiana")).otherwise(pl.col("_bridge")).alias("kiana"),
        )
        .drop("_bridge")
    )


def _equals(value: str, verdict: pl.Expr) -> pl.Expr:
    return verdict == value


def table(merged: pl.DataFrame, conflicts: pl.DataFrame) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []

    def share(frame: pl.DataFrame, expr_of: Callable[[pl.Expr], pl.Expr]) -> list[str]:
        cells = []
        for method in METHODS:
            hits = frame.filter(expr_of(pl.col(method))).height
            cells.append(f"{hits / frame.height:.3f}" if frame.height else "-")
        return cells

    for case, expected, target in (
        ("sweep-wide 3% regression", "regression", ">= 0.8"),
        ("sweep-wide 3-5% regression", "regression", ""),
        (">=5% regression", "regression", "1.0"),
        ("one-workload regression", "regression", ""),
        ("improvement", "improvement", ">= 0.9"),
    ):
        frame = merged.filter(pl.col("case") == case)
        rows.append(
            (
                f"{case} recall",
                str(frame.height),
                *share(frame, partial(_equals, expected)),
                target,
            )
        )
    frame = merged.filter(pl.col("case") == "one-workload regression")
    named = frame.filter(
        (pl.col("kiana") == "regression")
        & pl.col("named").fill_null("").str.split(",").list.contains(pl.col("true_workload"))
    ).height
    rows.append(("one-workload: workload named", str(frame.height),
                 f"{named / frame.height:.3f}" if frame.height else "-", "-", "-", ""))  # fmt: skip
    frame = merged.filter(pl.col("case") == "same-label change")
    rows.append(("same-label-session changes recall", str(frame.height),
                 *share(frame, lambda v: v == pl.col("effect")), ""))  # fmt: skip
    total, reported = int(conflicts["conflicts"].sum()), int(conflicts["reported"].sum())
    rows.append(("conflicts in Judgement.quality", str(total),
                 f"{reported / total:.3f}" if total else "-", "-", "-", "1.0"))  # fmt: skip
    frame = merged.filter(pl.col("case") == "unchanged")
    rows.append(("false findings / unchanged", str(frame.height),
                 *share(frame, lambda v: v.is_in(FLAGS)), "<= 0.01"))  # fmt: skip
    frame = merged.filter(pl.col("case") == "unchanged", pl.col("same_label"))
    rows.append(("  of which same-label, no change", str(frame.height),
                 *share(frame, lambda v: v.is_in(FLAGS)), ""))  # fmt: skip
    frame = merged.filter(pl.col("case") == "drift")
    rows.append(("env shifts not called reg/imp", str(frame.height),
                 *share(frame, lambda v: ~v.is_in(FLAGS)), ">= 0.98"))  # fmt: skip
    frame = merged.filter(pl.col("case") == "outlier")
    rows.append(("(outlier-touched, flagged)", str(frame.height),
                 *share(frame, lambda v: v.is_in(FLAGS)), "left out"))  # fmt: skip
    return rows


def _rate(frame: pl.DataFrame, column: str) -> str:
    return f"{frame[column].sum() / frame.height:.3f}" if frame.height else "-"


def history_table(
    true_cps: pl.DataFrame, mine: pl.DataFrame, outliers: pl.DataFrame
) -> list[tuple[str, ...]]:
    """Long histories and outliers: kiana only (the contenders have no change points)."""
    history = outliers.filter(pl.col("history"))
    single = outliers.filter(~pl.col("history"))
    return [
        ("change points found (+-1 session)", str(true_cps.height), _rate(true_cps, "found")),
        ("change-point precision (long histories)", str(mine.height), _rate(mine, "true")),
        ("level-shift step called in its direction", str(true_cps.height),
         _rate(true_cps, "step_called")),
        ("outlier sessions called changes", str(history.height), _rate(history, "called")),
        ("  by a regression/improvement finding", str(history.height),
         _rate(history, "by_finding")),
        ("  by a regression/improvement step", str(history.height), _rate(history, "by_step")),
        ("  by a change point into or out of it", str(history.height), _rate(history, "by_cp")),
        ("outlier sessions reported as outlier", str(history.height), _rate(history, "reported")),
        ("one-run outliers (release series) called changes", str(single.height),
         _rate(single, "called")),
        ("one-run outliers reported as outlier", str(single.height), _rate(single, "reported")),
    ]  # fmt: skip


def breakdown(true_cps: pl.DataFrame, outliers: pl.DataFrame) -> list[tuple[str, ...]]:
    """Long histories by noise level and reported spread, and outliers by size."""
    rows: list[tuple[str, ...]] = []
    history = outliers.filter(pl.col("history"))
    for (noise, spread), frame in sorted(true_cps.group_by("noise", "spread")):
        out = history.filter(pl.col("noise") == noise, pl.col("spread") == spread)
        rows.append((f"noise {noise}, {spread}", str(frame.height), _rate(frame, "found"),
                     str(out.height), _rate(out, "called"), _rate(out, "reported")))  # fmt: skip
    sized = history.with_columns(pl.col("change").abs().round(2).alias("size"))
    for (size,), frame in sorted(sized.group_by("size")):
        rows.append((f"outlier size {size:.0%}", "", "", str(frame.height),
                     _rate(frame, "called"), _rate(frame, "reported")))  # fmt: skip
    return rows


def _print(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, *rows]:
        cells = [
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells))


#: The metrics of issue 21, per noise model: (row, cases, verdicts that count, target).
CHANGE = ("regression", "improvement", "drift")


def headline(merged: pl.DataFrame, noise: str) -> list[tuple[str, ...]]:
    """Issue 21's metrics for one noise model: shares of units whose verdict counts."""
    is_reg = pl.col("effect") == "regression"
    found = merged.filter(~pl.col("case").is_in(["outlier", "conflict"]))
    # (row, units, verdicts that count, target on this noise model)
    specs: list[tuple[str, pl.DataFrame, tuple[str, ...] | None, str]] = [
        ("false reg/imp among unchanged (A/A incl.)",
         merged.filter(pl.col("case").is_in(["unchanged", "A/A pair"])), FLAGS, "<= 0.01"),
        ("  A/A pairs called a change (reg/imp/drift)",
         merged.filter(pl.col("case") == "A/A pair"), CHANGE, ""),
        ("drift groups called a change (reg/imp)",
         merged.filter(pl.col("case") == "drift"), FLAGS,
         "<= 0.02" if noise == "realistic" else ""),
        ("baseline changes called a change (reg/imp/drift)",
         merged.filter(pl.col("case") == "baseline change"), CHANGE,
         "<= 0.05" if noise == "realistic" else ""),
        (">= 10% regressions found", found.filter(is_reg, pl.col("change") >= 0.10),
         ("regression",), ">= 0.95" if noise == "realistic" else ""),
        (">= 5% regressions found", found.filter(is_reg, pl.col("change") >= 0.05),
         ("regression",), "1.0" if noise == "spread" else ""),
        ("3% regressions found", found.filter(is_reg, (pl.col("change") - 0.03).abs() < 1e-9),
         ("regression",), ">= 0.8" if noise == "spread" else ""),
        ("improvements found", found.filter(pl.col("effect") == "improvement"),
         ("improvement",), ">= 0.9" if noise == "spread" else ""),
    ]  # fmt: skip
    rows: list[tuple[str, ...]] = []
    for name, frame, verdicts, target in specs:
        counts = [frame.filter(pl.col(m).is_in(verdicts)).height for m in METHODS]
        cells = [f"{c / frame.height:.3f}" if frame.height else "-" for c in counts]
        hits = counts[0]  # kiana's
        rows.append(
            (
                name,
                noise,
                str(frame.height),
                *cells,
                f"{hits}: {wilson(hits, frame.height)}",
                target,
            )
        )
        if name.startswith(">= 10%"):
            by = frame.filter(pl.col("kiana") == "regression")
            share = f"{by['bridge'].mean():.3f}" if by.height else "-"
            rows.append(
                (
                    "  of those found, through a bridge",
                    noise,
                    str(by.height),
                    share,
                    "-",
                    "-",
                    "",
                    "",
                )
            )
    opposite = {"regression": "improvement", "improvement": "regression"}
    flagged = found.filter(pl.col("effect").is_in(FLAGS))
    wrong = [
        str(flagged.filter(pl.col(m) == pl.col("effect").replace_strict(opposite)).height)
        for m in METHODS
    ]
    rows.append(
        ("changes called the wrong way (count)", noise, str(flagged.height), *wrong, "", "0")
    )
    return rows


def wilson(hits: int, n: int, z: float = 1.959964) -> str:
    """The 95% Wilson score interval of the share ``hits / n`` (Wilson 1927; its coverage
    stays near 95% for shares near 0 or 1, where the normal interval's does not): what
    the units of these seeds say about kiana's rate, before any target is compared.

    >>> wilson(58, 5883)
    '0.008-0.013'
    >>> wilson(0, 0)
    '-'
    """
    if n == 0:
        return "-"
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{max(0.0, centre - half):.3f}-{min(1.0, centre + half):.3f}"


def markdown(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """A markdown table (for bench/README.md)."""
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def evaluate(root: Path, seeds: list[int]) -> tuple[pl.DataFrame, ...]:
    """The seeds' folders under ``root`` judged: merged units, conflicts, histories."""
    parts = [one_corpus(s, root / f"seed-{s}") for s in seeds]
    merged = pl.concat([p[0] for p in parts])
    conflicts = pl.concat([p[1] for p in parts])
    true_cps, mine, outliers = (pl.concat([p[2][i] for p in parts]) for i in range(3))
    return merged, conflicts, true_cps, mine, outliers


def details(parts: tuple[pl.DataFrame, ...], noise: str, misses: bool) -> None:
    """The detailed tables of one noise model (and with ``misses`` kiana's misses)."""
    merged, conflicts, true_cps, mine, outliers = parts
    print(f"\n### noise model: {noise}")
    _print(("case", "n", *METHODS, "target"), table(merged, conflicts))
    _print(("long histories and outliers", "n", "kiana"), history_table(true_cps, mine, outliers))
    _print(
        ("long histories by", "change points", "found", "outliers", "called change",
         "reported outlier"),
        breakdown(true_cps, outliers),
    )  # fmt: skip
    if not misses:
        return
    wrong = (
        (pl.col("case").str.contains("regression") & (pl.col("kiana") != "regression"))
        | ((pl.col("case") == "improvement") & (pl.col("kiana") != "improvement"))
        | ((pl.col("case") == "same-label change") & (pl.col("kiana") != pl.col("effect")))
        | (pl.col("case").is_in(["unchanged", "drift", "A/A pair"]) & pl.col("kiana").is_in(FLAGS))
        | ((pl.col("case") == "baseline change") & pl.col("kiana").is_in(CHANGE))
    )
    with pl.Config(tbl_rows=80, tbl_cols=14, fmt_str_lengths=30, tbl_width_chars=220):
        print(merged.filter(wrong).select(
            "seed", *GROUP, "from_version", "to_version", "to_session", "case", "change",
            "kiana", "named",
        ))  # fmt: skip
        print(true_cps.filter(~pl.col("found")).select(
            "seed", *GROUP, "to_version", "change", "noise", "spread", "step_verdict",
        ))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=list(range(60)),
        help="seeds 0-59 by default: 0-9 were the corpora rounds 1-5 tuned on, 10-59 held out when first judged",
    )
    parser.add_argument(
        "--noise", nargs="+", choices=("spread", "realistic"), default=["spread", "realistic"],
        help="noise models to measure, side by side (default both)",
    )  # fmt: skip
    parser.add_argument("--sweep-size", type=int, default=5)
    parser.add_argument(
        "--min-noise-multiple",
        type=float,
        default=2.0,
        help="smallest effect in units of the spread (1.0 puts 3%% shifts on noisier series)",
    )
    parser.add_argument(
        "--session-noise", type=float, default=0.5, help="run-to-run noise, in spread sigmas"
    )
    parser.add_argument(
        "--histories", type=int, default=6, help="long histories per corpus (0: none)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--write", type=Path, metavar="DIR",
        help="only write the corpora to DIR/<noise>/seed-N and stop",
    )  # fmt: skip
    where.add_argument(
        "--read", type=Path, metavar="DIR", help="evaluate the corpora written by --write DIR"
    )
    parser.add_argument("--details", action="store_true", help="also print the detailed tables")
    parser.add_argument(
        "--separation", type=float, default=None,
        help="judge with this separation (default: kiana's); one point of the trade-off curve",
    )  # fmt: skip
    parser.add_argument(
        "--bridge-separation", type=float, default=None,
        help="judge bridges at this separation (default: kiana's; inf: no bridges)",
    )  # fmt: skip
    parser.add_argument(
        "--misses", action="store_true", help="list kiana's misses (implies --details)"
    )
    parser.add_argument(
        "--grid", action="store_true",
        help="judge the grid of noise models instead, kiana beside an oracle (bench/grid.py; "
        "seeds 0 1 unless --seeds)",
    )  # fmt: skip
    parser.add_argument("--grid-models", nargs="+", help="with --grid: only these models")
    args = parser.parse_args()
    if args.grid:
        import grid

        given = args.seeds != list(range(60))
        grid.run(tuple(args.seeds) if given else grid.SEEDS, args.grid_models)
        return
    global SEPARATION, BRIDGE_SEPARATION
    SEPARATION = args.separation
    BRIDGE_SEPARATION = args.bridge_separation
    changes = {
        "min_noise_multiple": args.min_noise_multiple,
        "session_noise": args.session_noise,
        "histories": args.histories,
    }
    if args.write:
        for noise in args.noise:
            for seed in args.seeds:
                write_seed(
                    seed, args.sweep_size, args.write / noise / f"seed-{seed}", noise, **changes
                )
        print(f"wrote seeds {args.seeds} of {', '.join(args.noise)} to {args.write}")
        return
    results: dict[str, tuple[pl.DataFrame, ...]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for noise in args.noise:
            root = (args.read or Path(tmp)) / noise
            if args.read and noise == "spread" and not root.exists():
                root = args.read  # a folder written before the noise models (DIR/seed-N)
            if not args.read:
                for seed in args.seeds:
                    write_seed(seed, args.sweep_size, root / f"seed-{seed}", noise, **changes)
            results[noise] = evaluate(root, args.seeds)
    rows = [row for noise, parts in results.items() for row in headline(parts[0], noise)]
    markdown(("metric", "noise", "n", *METHODS, "kiana: count, 95% interval", "target"), rows)
    if args.details or args.misses:
        for noise, parts in results.items():
            details(parts, noise, args.misses)


if __name__ == "__main__":
    main()
