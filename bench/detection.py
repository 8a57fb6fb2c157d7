"""Detection quality of ``kiana regressions`` against the generator's ground truth.

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py [--seeds 0 1 2 3 4] [--sweep-size 5]

For each seed, :mod:`kiana.generate` makes a corpus with known effects (Liger
regressions and improvements of several sizes, environment shifts that move every
provider on one GPU, zero-spread runs, replicates, outliers), the documents go
through the real loader into an in-memory database, and three methods judge the
same runs, per Liger version step (consecutive versions, latency):

* ``kiana``: :func:`kiana.stats.judge` with its defaults;
* ``asv 5%``: a fixed threshold, flag when ``|change| >= 5%`` (airspeed velocity's
  default ``--factor 1.05``), on the same pooled medians;
* ``conbench z``: the new value's z-score against the series' history (all earlier
  versions, at least three), flag when ``|z| >= 5`` (Conbench's default threshold).

Truth per step: ``regression``/``improvement`` (a Liger effect, from the truth rows,
workload null = the whole sweep), ``drift`` (an environment shift alone),
``mixed`` (both; left out), ``outlier`` (a step touching a version with an outlier
run; left out of the rates and reported separately), else ``unchanged``.
Rates: recall = regressions called regression / true regressions; precision =
true regression calls / regression calls on steps that are not outliers or mixed;
false-positive rate = regression or improvement calls / unchanged steps; drift share
= environment-shift steps called drift / all environment-shift steps (and the share
wrongly called regression or improvement).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import polars as pl

from kiana.generate import CorpusConfig, generate, write_corpus
from kiana.load import connect, load, runs
from kiana.stats import judge
from kiana.stats.versions import version_table

STEP = ["kernel", "pass", "provider", "gpu", "workload", "from_version", "to_version"]


def truth_labels(steps: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """Label every step with its true effect (see the module docstring)."""
    keys = ["kernel", "pass", "provider", "gpu", "from_version", "to_version"]
    base = steps.select(STEP).unique()
    effects = truth.filter(pl.col("effect") != "outlier")
    matched = (
        base.join(effects, on=keys, how="inner", suffix="_t")
        .filter(pl.col("workload_t").is_null() | (pl.col("workload_t") == pl.col("workload")))
        .group_by(STEP)
        .agg(
            pl.col("effect").filter(pl.col("effect") != "drift").first().alias("code"),
            (pl.col("effect") == "drift").any().alias("env"),
            pl.col("change").filter(pl.col("effect") != "drift").first().alias("true_change"),
        )
    )
    outliers = truth.filter(pl.col("effect") == "outlier").select(
        "kernel", "pass", "provider", "gpu", "workload", pl.col("from_version").alias("_v")
    )
    touched = pl.concat(
        [
            base.join(
                outliers,
                left_on=[*keys[:4], "workload", "from_version"],
                right_on=[*keys[:4], "workload", "_v"],
            ).select(STEP),
            base.join(
                outliers,
                left_on=[*keys[:4], "workload", "to_version"],
                right_on=[*keys[:4], "workload", "_v"],
            ).select(STEP),
        ]
    ).unique()
    labelled = base.join(matched, on=STEP, how="left").join(
        touched.with_columns(pl.lit(True).alias("outlier")), on=STEP, how="left"
    )
    label = (
        pl.when(pl.col("outlier").fill_null(False))
        .then(pl.lit("outlier"))
        .when(pl.col("code").is_not_null() & pl.col("env").fill_null(False))
        .then(pl.lit("mixed"))
        .when(pl.col("code").is_not_null())
        .then(pl.col("code"))
        .when(pl.col("env").fill_null(False))
        .then(pl.lit("drift"))
        .otherwise(pl.lit("unchanged"))
    )
    return labelled.with_columns(label.alias("truth")).select(*STEP, "truth", "true_change")


def simple_rules(frame: pl.DataFrame) -> pl.DataFrame:
    """The asv and Conbench verdicts per step, on pooled per-version medians."""
    versions = version_table(frame)
    series = ["kernel", "pass", "provider", "gpu", "workload"]
    pts = (
        frame.filter((pl.col("status") == "passed") & (pl.col("metric") == "latency"))
        .group_by(*series, "liger_version")
        .agg(pl.col("median").median())
        .join(versions.select("liger_version", "version_rank"), on="liger_version")
        .sort(*series, "version_rank")
    )
    prev = pl.col("median").shift(1).over(series)
    # History statistics of every earlier point: expanding mean and std, shifted by one.
    mean = pl.col("median").cum_sum().over(series) / pl.int_range(1, pl.len() + 1).over(series)
    pts = pts.with_columns(
        prev.alias("prev"),
        pl.col("liger_version").shift(1).over(series).alias("from_version"),
        mean.shift(1).over(series).alias("h_mean"),
        pl.col("median").cum_count().over(series).shift(1).over(series).alias("h_n"),
        (pl.col("median").pow(2).cum_sum().over(series)).shift(1).over(series).alias("h_sq"),
    ).filter(pl.col("prev").is_not_null())
    var = (pl.col("h_sq") - pl.col("h_n") * pl.col("h_mean").pow(2)) / (pl.col("h_n") - 1)
    z = (pl.col("median") - pl.col("h_mean")) / var.clip(lower_bound=0).sqrt()
    change = pl.col("median") / pl.col("prev") - 1
    return pts.select(
        *series,
        "from_version",
        pl.col("liger_version").alias("to_version"),
        pl.when(change >= 0.05)
        .then(pl.lit("regression"))
        .when(change <= -0.05)
        .then(pl.lit("improvement"))
        .otherwise(pl.lit("unchanged"))
        .alias("asv 5%"),
        pl.when((pl.col("h_n") >= 3) & (z >= 5))
        .then(pl.lit("regression"))
        .when((pl.col("h_n") >= 3) & (z <= -5))
        .then(pl.lit("improvement"))
        .otherwise(pl.lit("unchanged"))
        .alias("conbench z"),
    )


def rates(labelled: pl.DataFrame, column: str) -> dict[str, float | int]:
    t, v = pl.col("truth"), pl.col(column)
    flagged = v.is_in(["regression", "improvement"])
    judged = labelled.filter(~t.is_in(["outlier", "mixed"]))

    def count(expr: pl.Expr, frame: pl.DataFrame = judged) -> int:
        return int(frame.filter(expr).height)

    reg = count(t == "regression")
    imp = count(t == "improvement")
    calls = count(v == "regression")
    unchanged = count(t == "unchanged")
    env = count(t == "drift")
    outl = labelled.filter(t == "outlier")
    return {
        "steps": judged.height,
        "regressions": reg,
        "recall": count((t == "regression") & (v == "regression")) / max(reg, 1),
        "recall_imp": count((t == "improvement") & (v == "improvement")) / max(imp, 1),
        "precision": count((t == "regression") & (v == "regression")) / max(calls, 1),
        "fp_rate": count((t == "unchanged") & flagged) / max(unchanged, 1),
        "unchanged": unchanged,
        "drift_share": count((t == "drift") & (v == "drift")) / max(env, 1),
        "drift_as_reg": count((t == "drift") & flagged) / max(env, 1),
        "env_steps": env,
        "outlier_flagged": outl.filter(flagged).height / max(outl.height, 1),
    }


def one_corpus(seed: int, sweep_size: int) -> pl.DataFrame:
    corpus = generate(CorpusConfig(seed=seed, sweep_size=sweep_size))
    with tempfile.TemporaryDirectory() as tmp:
        write_corpus(corpus, Path(tmp) / "corpus", layout="jsonl")
        con = connect(None)
        load(con, [Path(tmp) / "corpus"])
        frame = runs(con)
        con.close()
    started = time.monotonic()
    result = judge(frame)
    elapsed = time.monotonic() - started
    steps = result.steps.filter(pl.col("is_liger") & (pl.col("metric") == "latency"))
    labelled = truth_labels(steps, corpus.truth)
    merged = (
        labelled.join(steps.select(*STEP, pl.col("verdict").alias("kiana")), on=STEP)
        .join(simple_rules(frame), on=STEP, how="left")
        .with_columns(pl.col("asv 5%", "conbench z").fill_null("unchanged"))
    )
    print(
        f"seed {seed}: {frame.height} runs, {result.steps.height} steps judged in "
        f"{elapsed:.2f}s (noise scale {result.noise_scale:.2f} from "
        f"{result.noise_scale_steps} steps)"
    )
    return merged.with_columns(pl.lit(seed).alias("seed"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--sweep-size", type=int, default=5)
    parser.add_argument("--misses", action="store_true", help="list kiana's misses")
    args = parser.parse_args()
    merged = pl.concat([one_corpus(s, args.sweep_size) for s in args.seeds])
    print()
    header = (
        f"{'method':12} {'precision':>9} {'recall':>7} {'recall-imp':>10} {'FP rate':>8} "
        f"{'drift':>6} {'env->reg':>8} {'outlier':>8}"
    )
    print(header)
    for method in ("kiana", "asv 5%", "conbench z"):
        r = rates(merged, method)
        print(
            f"{method:12} {r['precision']:9.3f} {r['recall']:7.3f} {r['recall_imp']:10.3f} "
            f"{r['fp_rate']:8.4f} {r['drift_share']:6.3f} {r['drift_as_reg']:8.3f} "
            f"{r['outlier_flagged']:8.3f}"
        )
    r = rates(merged, "kiana")
    print(
        f"\n{r['steps']} Liger latency steps: {r['regressions']} true regressions, "
        f"{r['unchanged']} unchanged, {r['env_steps']} environment shifts "
        "(outlier-touched and mixed steps left out)"
    )
    print("targets: recall >= 0.95, FP rate <= 0.01, drift >= 0.95")
    if args.misses:
        with pl.Config(tbl_rows=60, tbl_cols=12, fmt_str_lengths=40):
            print(merged.filter(
                ((pl.col("truth") == "regression") & (pl.col("kiana") != "regression"))
                | ((pl.col("truth") == "unchanged") & pl.col("kiana").is_in(["regression", "improvement"]))
                | ((pl.col("truth") == "drift") & (pl.col("kiana") != "drift"))
            ))  # fmt: skip


if __name__ == "__main__":
    main()
