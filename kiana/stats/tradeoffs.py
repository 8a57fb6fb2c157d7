"""Trade-offs: a speed gain paid for with more memory at the same version step.

Liger's CSVs record peak memory beside latency (``metric`` ``memory``, MB).  Each
metric is judged on its own series, so a step can be an *improvement* in latency
and a *regression* in memory at once.  Neither finding alone tells the story a
kernel author needs ("faster, but it now needs 30% more memory"), so such pairs are
a finding of their own: one row per kernel, pass, provider, GPU and version step
where the latency finding is an improvement and the memory finding a regression.
"""

from __future__ import annotations

import polars as pl

KEY = ("kernel", "pass", "provider", "gpu", "from_version", "to_version")

TRADEOFF_COLUMNS = (
    *KEY,
    "latency_change",
    "memory_change",
    "latency_workloads",
    "memory_workloads",
    "workloads_total",
    "confidence",
)


def tradeoffs(findings: pl.DataFrame) -> pl.DataFrame:
    """Latency-improvement findings joined with memory-regression findings of the
    same step (see the module docstring); most memory first."""
    if findings.height == 0:
        return pl.DataFrame(schema=_schema())

    def side(metric: str, verdict: str, prefix: str) -> pl.DataFrame:
        return findings.filter(pl.col("metric") == metric, pl.col("verdict") == verdict).select(
            *KEY,
            pl.col("median_change").alias(f"{prefix}_change"),
            pl.col("workloads_affected").alias(f"{prefix}_workloads"),
            pl.col("workloads_total").alias(f"{prefix}_total"),
            pl.col("confidence").alias(f"{prefix}_confidence"),
        )

    joined = side("latency", "improvement", "latency").join(
        side("memory", "regression", "memory"), on=list(KEY), how="inner"
    )
    return (
        joined.with_columns(
            pl.max_horizontal("latency_total", "memory_total").alias("workloads_total"),
            pl.min_horizontal("latency_confidence", "memory_confidence").alias("confidence"),
        )
        .select(TRADEOFF_COLUMNS)
        .sort("memory_change", descending=True)
    )


def _schema() -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {k: pl.String() for k in KEY}
    for name in ("latency_change", "memory_change", "confidence"):
        schema[name] = pl.Float64()
    for name in ("latency_workloads", "memory_workloads", "workloads_total"):
        schema[name] = pl.Int64()
    return schema
