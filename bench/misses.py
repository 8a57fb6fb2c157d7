"""The regressions kiana misses, one row each, with what they were and what kiana saw.

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py --write DIR           # once: the corpora
    .venv/bin/python bench/misses.py --read DIR [--noise realistic] [--min-change 0.10]

For every injected Liger regression of at least ``--min-change`` (truth
``regression``; units touching an outlier or a conflict left out, as in
:func:`detection.headline`) that kiana did not call a regression, it prints:

* the truth: sweep-wide or one workload (``CorpusConfig.single_workload_share``),
  its size, on how many GPUs the Liger change landed (the truth's note), between
  same-label sessions or not;
* kiana's finding: verdict, ``basis`` (the rule of :func:`kiana.stats.sweeps.rules`
  that decided it), the change and standard error it rests on, the control (a
  same-sitting baseline, the GPU-wide one ``gpu:...``, or none) and its change;
* the noise it rested on: ``noise_source``, the calibrated ``workload_noise`` and
  ``sitting_noise`` (normal-equivalent sigmas), single-sample workloads, the
  between-workload scatter;
* for one-workload regressions, the true workload's own step: its raw and
  control-adjusted change, and the median adjusted change of its siblings.

Then a count of the misses by kind, verdict and basis.  The units, labels and judging
are :mod:`detection`'s (imported, not copied).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl
from detection import UNIT, judge_folder, release_units

FINDING = (
    "verdict", "basis", "change", "change_se", "raw_change", "control_provider",
    "control_change", "scatter", "workloads_total", "noise_source", "workload_noise",
    "sitting_noise", "single_samples",
)  # fmt: skip


def _steps_of(steps: pl.DataFrame, missed: pl.DataFrame) -> pl.DataFrame:
    """The true workload's step of each one-workload miss, and its siblings' median."""
    liger = steps.filter(pl.col("provider") == "liger", pl.col("metric") == "latency")
    adjusted = pl.col("adjusted_change").fill_null(pl.col("change"))
    keyed = missed.filter(pl.col("true_workload").is_not_null()).select(*UNIT, "true_workload")
    own = liger.join(
        keyed, left_on=[*UNIT, "workload"], right_on=[*UNIT, "true_workload"], how="inner"
    ).select(
        *UNIT,
        pl.col("change").alias("w_raw"),
        adjusted.alias("w_adj"),
        pl.col("workload_noise").alias("w_noise"),
        pl.col("noise_source").alias("w_source"),
    )
    rest = (
        liger.join(keyed, on=UNIT, how="inner")
        .filter(pl.col("workload") != pl.col("true_workload"))
        .group_by(UNIT)
        .agg(adjusted.median().alias("rest_adj"))
    )
    return own.join(rest, on=UNIT, how="left")


def misses(folder: Path, seed: int, min_change: float) -> tuple[pl.DataFrame, int]:
    """One seed's missed regressions of at least ``min_change``, with kiana's finding,
    and how many such regressions it holds."""
    truth, sessions, _, result, _ = judge_folder(folder)
    labelled = release_units(truth, sessions)
    findings = result.findings.filter(pl.col("provider") == "liger", pl.col("metric") == "latency")
    found = labelled.filter(
        ~pl.col("case").is_in(["outlier", "conflict"]),
        pl.col("effect") == "regression",
        pl.col("change") >= min_change,
    ).join(findings.select(*UNIT, *FINDING).rename({"change": "kiana_change"}), on=UNIT, how="left")
    missed = found.filter(pl.col("verdict").fill_null("not reported") != "regression")
    notes = truth.filter(pl.col("provider") == "liger", pl.col("effect") == "regression")
    gpus = notes.select(
        *UNIT, pl.col("note").str.extract(r"\((\d+) GPU").cast(pl.Int64).alias("gpus")
    ).unique(UNIT)
    out = (
        missed.join(gpus, on=UNIT, how="left")
        .join(_steps_of(result.steps, missed), on=UNIT, how="left")
        .with_columns(pl.lit(seed).alias("seed"))
    )
    return out, found.height


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
        pl.when(pl.col("gpus") == 1)
        .then(pl.lit("1 GPU"))
        .otherwise(pl.lit("all GPUs"))
        .alias("on"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--read", type=Path, required=True, metavar="DIR")
    parser.add_argument("--noise", default="realistic", choices=("spread", "realistic"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--min-change", type=float, default=0.10)
    args = parser.parse_args()
    root = args.read / args.noise
    parts = [misses(root / f"seed-{s}", s, args.min_change) for s in args.seeds]
    total = sum(n for _, n in parts)
    out = kind(pl.concat([p for p, _ in parts], how="diagonal_relaxed"))
    print(f"{out.height} of {total} regressions >= {args.min_change:.0%} missed ({args.noise})")
    pct = [
        pl.col(c).round(3) for c in ("kiana_change", "change_se", "raw_change", "control_change")
    ]
    with pl.Config(
        tbl_rows=200, tbl_cols=40, fmt_str_lengths=40, tbl_width_chars=1000,
        tbl_formatting="MARKDOWN", tbl_hide_column_data_types=True, tbl_hide_dataframe_shape=True,
    ):  # fmt: skip
        print(
            out.select(
                "seed", "kernel", "pass", "gpu", "kind", pl.col("change").alias("true"),
                "true_workload", "on", "same_label", "verdict", "basis", *pct, "control",
                "control_provider", pl.col("workload_noise").round(4), pl.col("sitting_noise").round(4),
                "noise_source", "single_samples", pl.col("scatter").round(3), "workloads_total",
                pl.col("w_raw").round(3), pl.col("w_adj").round(3), pl.col("w_noise").round(4),
                "w_source", pl.col("rest_adj").round(3),
            ).sort("kind", "basis", "seed")
        )  # fmt: skip
        print(
            out.group_by("kind", "on", "control", "verdict", "basis")
            .len()
            .sort("len", descending=True)
        )


if __name__ == "__main__":
    main()
