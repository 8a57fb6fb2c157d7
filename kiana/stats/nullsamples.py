"""The samples of the calibration: what the data say about noise when nothing changed.

:func:`workload_samples` and :func:`sitting_samples` turn steps into the samples the
two-groups fit of :mod:`kiana.stats.nullfit` reads (``x``, ``q2``, ``c``,
``may_change`` and their cell keys), as :mod:`kiana.stats.calibration` describes; each
carries its sitting group (``_group``, :mod:`kiana.stats.states`).
"""

from __future__ import annotations

import polars as pl


def sampling_expr() -> pl.Expr:
    """``single`` for a step with a one-sample side (noise source ``single``)."""
    return (
        pl.when(pl.col("noise_source") == "single")
        .then(pl.lit("single"))
        .otherwise(pl.lit("median"))
    )


def workload_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Differences of consecutive workloads of one sweep (the offset and any sweep-wide
    change cancel), ``c = 2``, by sampling (``single`` when a side of either step is one
    sample).  ``steps`` carry ``_group``."""
    sweep = ["kernel", "pass", "provider", "gpu", "metric", "from_session", "to_session"]
    usable = steps.filter(pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed"))
    ordered = usable.sort([*sweep, "workload"]).with_columns(
        (pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2)).alias("_q2"),
        sampling_expr().alias("_sampling"),
    )
    nxt = [
        pl.col(c).shift(-1).over(sweep).alias(f"_n{c}") for c in ("log_ratio", "_q2", "_sampling")
    ]
    paired = ordered.with_columns(nxt).filter(pl.col("_nlog_ratio").is_not_null())
    single = (pl.col("_sampling") == "single") | (pl.col("_n_sampling") == "single")
    return paired.select(
        "_group", "gpu", "metric",
        pl.when(single).then(pl.lit("single")).otherwise(pl.lit("median")).alias("sampling"),
        "kernel", "provider",
        (pl.col("log_ratio") - pl.col("_nlog_ratio")).alias("x"),
        (pl.col("_q2") + pl.col("_n_q2")).alias("q2"),
        pl.lit(2.0).alias("c"),
        pl.lit(True).alias("may_change"),
    )  # fmt: skip


def sitting_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Baseline sweep means, baseline-pair differences and A/A sweep means, each ``c =
    1`` (see :mod:`kiana.stats.calibration`; A/A never a change): nothing of Liger's.  ``steps`` carry
    ``_group`` and ``workload_var`` (the workload component's variance, which enters
    each mean's known part)."""
    sitting = ["_group", "kernel", "pass", "gpu", "metric", "from_session", "to_session"]
    q2 = pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2) + pl.col("workload_var")
    base = steps.filter(pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed"))
    base = base.select(
        *sitting, "partition_id", "provider", "is_liger", "aa", "log_ratio", q2.alias("_q2")
    )
    baselines = base.filter(~pl.col("is_liger") & ~pl.col("aa"))
    pairs = baselines.join(baselines, on=[*sitting, "partition_id"], suffix="_b").filter(
        pl.col("provider") < pl.col("provider_b")
    )
    between = pairs.group_by(*sitting, "provider", "provider_b").agg(
        (pl.col("log_ratio") - pl.col("log_ratio_b")).mean().alias("x"),
        ((pl.col("_q2") + pl.col("_q2_b")).sum() / pl.len().pow(2)).alias("q2"),
    )

    def means(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.group_by(*sitting, "provider").agg(
            pl.col("log_ratio").mean().alias("x"),
            (pl.col("_q2").sum() / pl.len().pow(2)).alias("q2"),
        )

    columns = ["_group", "gpu", "metric", "kernel", "x", "q2", "c", "may_change"]
    parts = [
        (between, 1.0, True),
        (means(baselines), 1.0, True),
        (means(base.filter(pl.col("aa"))), 1.0, False),
    ]
    return pl.concat(
        [
            part.with_columns(pl.lit(c).alias("c"), pl.lit(change).alias("may_change")).select(
                columns
            )
            for part, c, change in parts
        ],
        how="vertical_relaxed",
    )
