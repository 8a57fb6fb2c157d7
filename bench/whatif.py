"""Two judges kiana could use instead of its own, measured offline on the detection
corpora before building either (issue 21, round 6).  Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py --write DIR --seeds 0 1 ... 59   # once: the corpora
    .venv/bin/python bench/whatif.py --read DIR --seeds 0 1 ... 59

Each seed of the realistic model is judged once through :func:`detection.judge_folder`
(kiana's one pipeline), and the pooled estimates of every Liger latency finding are
kept (``raw``, ``adj``, ``ctl`` and their standard errors, from
:func:`kiana.stats.aggregate.aggregate`).  Then, beside kiana's verdicts (bridges left
out: they span two units):

* **partial adjustment** (``--share``): instead of the subject's own change (``raw``)
  or its change against its control (``adj``), the best linear combination
  ``raw - beta * ctl`` with ``beta = cov / var(ctl)``, ``cov = share * sitting_noise**2``
  (the part of a sitting's offset that every provider shares; 0.64 in the realistic
  model: common 4%, provider 3%).  Its standard error is below both ``raw``'s and
  ``adj``'s, but a machine's drift, which is no Gaussian offset, is only partly
  removed;
* **cross-GPU corroboration** (``--corroboration``): an ``inconclusive`` finding whose
  kernel, pass and release step (two different labels) is a regression or improvement
  on another GPU becomes one when its own z (change / standard error) points the same
  way by at least the given value.  A code change often lands on every GPU, noise
  never does; but a change that landed on one GPU only makes its siblings look
  corroborated;
* **back at the level** (``--back``): a regression or improvement resting on ``raw`` or
  ``adjusted`` whose step before or after it in the series went the other way and
  left the level within half the smaller step and within the given share (the sum of
  the two steps' estimates, a stand-in for judging the two outer sessions as one step)
  becomes ``inconclusive``: the session between them was off.  The outlier rule does
  this only from 9% (a small dip and return is as likely a change and its revert).

And one check of the noise the lone rule rests on (``--workloads``): in unchanged groups,
each Liger workload's step against the rest of its sweep (:func:`kiana.stats.pooling.
deviation`, its noise the step's without the sitting part), the share beyond the lone
rule's cut for five workloads, by the step's sitting noise.  Were the per-workload noise
right in every sitting, the share would not grow with the sitting noise.

The judges print the issue's rates (false among unchanged and A/A, drift and baseline
changes called a change, >= 10% regressions and improvements found) for kiana and
the alternative, per half of the seeds (below 10: tuned on by rounds 1-5; 10 and above:
held out).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import polars as pl
from detection import CHANGE, FLAGS, UNIT, judge_folder, release_units
from misses import workload_noise

import kiana.stats.sweeps as sweeps

POOLED = ("raw_mu", "raw_se", "adj_mu", "adj_se", "ctl_mu", "ctl_se")


#: The deviations of :func:`judged` (its second frame), filled as the seeds are judged.
DEVIATIONS: list[pl.DataFrame] = []


def _deviations(steps: pl.DataFrame, units: pl.DataFrame) -> pl.DataFrame:
    """Each Liger latency workload's step of an unchanged unit against the rest of its
    sweep: ``z`` (deviation / its standard error) and the step's ``sitting_noise``."""
    from kiana.stats.pooling import deviation

    quiet = units.filter(pl.col("case") == "unchanged").select(UNIT)
    liger = steps.filter(
        pl.col("provider") == "liger", pl.col("metric") == "latency", ~pl.col("outlier")
    ).join(quiet, on=UNIT)
    dev, se, _ = deviation(pl.col("change").log1p(), workload_noise())
    return liger.select("sitting_noise", (dev / se).abs().alias("z")).drop_nulls()


def workloads_table(separation: float = 3.0) -> None:
    """The share of workloads beyond the lone cut, by sitting noise (module docstring)."""
    from kiana.stats.pooling import lone_cut

    cut = lone_cut(5, separation)
    frame = pl.concat(DEVIATIONS)
    bins = pl.col("sitting_noise").cut([0.01, 0.03, 0.06], labels=["< 1%", "1-3%", "3-6%", ">= 6%"])
    table = frame.group_by(bins.alias("bin")).agg(
        pl.len().alias("n"),
        (pl.col("z") > cut).mean().alias("beyond"),
        pl.col("z").median().alias("median"),
    )
    print(f"\n| sitting noise | workloads | beyond the lone cut ({cut:.2f}) | median abs z |")
    print("| --- | ---: | ---: | ---: |")
    for row in table.sort("bin").iter_rows(named=True):
        print(f"| {row['bin']} | {row['n']:,} | {row['beyond']:.4f} | {row['median']:.2f} |")


def judged(root: Path, seeds: list[int]) -> pl.DataFrame:
    """Every labelled Liger latency unit of ``seeds`` with kiana's finding and its
    pooled estimates (and :data:`DEVIATIONS` of their unchanged ones)."""
    captured: list[pl.DataFrame] = []
    aggregate = sweeps.aggregate

    def keep(steps: pl.DataFrame, options: object) -> pl.DataFrame:
        frame = aggregate(steps, options)  # type: ignore[arg-type]
        captured.append(frame)
        return frame

    sweeps.aggregate = keep  # type: ignore[assignment]
    parts = []
    try:
        for seed in seeds:
            captured.clear()
            truth, sessions, _, result, _ = judge_folder(root / "realistic" / f"seed-{seed}")
            liger = (pl.col("provider") == "liger") & (pl.col("metric") == "latency")
            pooled = captured[0].filter(liger).select(*UNIT, *POOLED)
            findings = result.findings.filter(liger).select(
                *UNIT, "verdict", "basis", pl.col("change").alias("found"), "change_se",
                "sitting_noise",
            )  # fmt: skip
            labelled = release_units(truth, sessions)
            DEVIATIONS.append(_deviations(result.steps, labelled))
            units = labelled.join(findings, on=UNIT)
            parts.append(units.join(pooled, on=UNIT, how="left").with_columns(seed=seed))
    finally:
        sweeps.aggregate = aggregate  # type: ignore[assignment]
    return pl.concat(parts, how="diagonal_relaxed")


def partial(units: pl.DataFrame, share: float, separation: float = 3.0) -> pl.DataFrame:
    """``units`` with ``other``: the verdict of the partial adjustment where a control
    exists and kiana's verdict rests on ``raw``, ``adjusted``, ``drift`` or neither."""
    cov = share * pl.col("sitting_noise").pow(2)
    beta = (cov / pl.col("ctl_se").pow(2)).clip(0.0, 1.0)
    est = pl.col("raw_mu") - beta * pl.col("ctl_mu")
    se = (pl.col("raw_se").pow(2) - cov.pow(2) / pl.col("ctl_se").pow(2)).clip(1e-12).sqrt()
    flagged = ((est / se).abs() >= separation) & (est.abs() + se >= math.log1p(0.03))
    direction = pl.when(est > 0).then(pl.lit("regression")).otherwise(pl.lit("improvement"))
    replace = pl.col("ctl_mu").is_not_null() & pl.col("basis").is_in(
        ["raw", "adjusted", "drift", "unchanged", "inconclusive"]
    )
    ours = pl.when(flagged).then(direction).otherwise(pl.lit("inconclusive"))
    return units.with_columns(pl.when(replace).then(ours).otherwise("verdict").alias("other"))


def corroborated(units: pl.DataFrame, z: float) -> pl.DataFrame:
    """``units`` with ``other``: kiana's verdict, an inconclusive one corroborated by
    another GPU's finding of the same release step where its own z reaches ``z``."""
    step = ["seed", "kernel", "pass", "from_version", "to_version"]
    released = pl.col("from_version") != pl.col("to_version")
    support = units.filter(pl.col("verdict").is_in(FLAGS), pl.col("basis") != "bridge", released)
    own = pl.col("found").log1p() / pl.col("change_se")
    candidates = units.filter(pl.col("verdict") == "inconclusive", released).with_columns(
        own.alias("_z")
    )
    promoted = (
        candidates.join(
            support.select(*step, pl.col("gpu").alias("_gpu"), pl.col("verdict").alias("_v")),
            on=step,
        )
        .filter(pl.col("_gpu") != pl.col("gpu"))
        .filter(
            ((pl.col("_v") == "regression") & (pl.col("_z") >= z))
            | ((pl.col("_v") == "improvement") & (pl.col("_z") <= -z))
        )
        .group_by("seed", *UNIT)
        .agg(pl.col("_v").first())
    )
    return units.join(promoted, on=["seed", *UNIT], how="left").with_columns(
        pl.coalesce("_v", "verdict").alias("other")
    )


def back(units: pl.DataFrame, cap: float) -> pl.DataFrame:
    """``units`` with ``other``: kiana's verdict, a flagged ``raw`` or ``adjusted`` one
    made ``inconclusive`` where a neighbouring step took the level back within ``cap``."""
    series = ["seed", "kernel", "pass", "gpu"]
    ordered = units.sort(*series, "from_session").with_columns(
        pl.coalesce("adj_mu", "raw_mu").alias("_m")
    )
    move, before, after = pl.col("_m"), pl.col("_m").shift(1), pl.col("_m").shift(-1)

    def returns(a: pl.Expr, b: pl.Expr) -> pl.Expr:
        within = (a + b).abs() <= pl.min_horizontal(a.abs(), b.abs()) / 2
        return ((a > 0) != (b > 0)) & within & ((a + b).abs() <= cap)

    chained_before = pl.col("from_session") == pl.col("to_session").shift(1)
    chained_after = pl.col("to_session") == pl.col("from_session").shift(-1)
    off = (chained_before & returns(before, move)).fill_null(False) | (
        chained_after & returns(move, after)
    ).fill_null(False)
    flagged = pl.col("verdict").is_in(FLAGS) & pl.col("basis").is_in(["raw", "adjusted"])
    demoted = (flagged & off.over(series)).alias("_off")
    return ordered.with_columns(demoted).with_columns(
        pl.when("_off").then(pl.lit("inconclusive")).otherwise("verdict").alias("other")
    )


def rates(units: pl.DataFrame, column: str) -> list[str]:
    """The issue's rates of the verdicts in ``column``."""
    usable = ~pl.col("case").is_in(["outlier", "conflict"])

    def share(frame: pl.DataFrame, verdicts: tuple[str, ...]) -> str:
        return f"{frame[column].is_in(verdicts).mean():.3f}" if frame.height else "-"

    return [
        share(units.filter(pl.col("case").is_in(["unchanged", "A/A pair"])), FLAGS),
        share(units.filter(pl.col("case") == "drift"), FLAGS),
        share(units.filter(pl.col("case") == "baseline change"), CHANGE),
        share(units.filter(usable, pl.col("effect") == "regression", pl.col("change") >= 0.10),
              ("regression",)),
        share(units.filter(usable, pl.col("effect") == "improvement"), ("improvement",)),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--read", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(60)))
    parser.add_argument("--share", type=float, nargs="*", default=[0.5, 0.64, 0.8])
    parser.add_argument("--corroboration", type=float, nargs="*", default=[1.0, 1.5, 2.0])
    parser.add_argument("--back", type=float, nargs="*", default=[0.02, 0.03, 0.05])
    parser.add_argument("--workloads", action="store_true", help="also the per-workload check")
    args = parser.parse_args()
    units = judged(args.read, args.seeds)
    header = "| judge | seeds | false | drift called | baseline changes called | >= 10% found | improvements |"
    print(header)
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    variants = [("kiana", units.with_columns(pl.col("verdict").alias("other")))]
    variants += [(f"partial adjustment, share {s}", partial(units, s)) for s in args.share]
    variants += [
        (f"corroborated, own z >= {z}", corroborated(units, z)) for z in args.corroboration
    ]
    variants += [(f"back at the level within {c:.0%}", back(units, c)) for c in args.back]
    for name, frame in variants:
        for held in (False, True):
            half = frame.filter((pl.col("seed") >= 10) == held)
            if half.height:
                seeds = "held out (>= 10)" if held else "tuned (< 10)"
                print(f"| {name} | {seeds} | " + " | ".join(rates(half, "other")) + " |")
    if args.workloads:
        workloads_table()


if __name__ == "__main__":
    main()
