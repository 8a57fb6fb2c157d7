"""Trade-offs: a latency change paid for (or bought) with the opposite memory change.

Liger's CSVs record peak memory beside latency (``metric`` ``memory``, MB), in the same
sitting of the same benchmark script.  Each metric is judged on its own series, so one
pull request can be an *improvement* in latency and a *regression* in memory at once
(in Liger's history, one made KTO 61% faster at +4% memory).  Neither finding alone
tells the story a kernel author needs, so such pairs are a finding of their own: one
row per latency finding and memory finding of the same provider whose sessions are the
same sittings (the same origins, each session of one within ``session_gap`` of the
other's: a metric's session starts seconds after the other's) and whose verdicts are
opposite: ``faster, more memory`` or ``slower, less memory``.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from kiana.stats.sessions import SESSION_GAP

KEY = ("kernel", "pass", "provider", "gpu", "from_version", "to_version")

TRADEOFF_COLUMNS = (
    *KEY,
    "from_session",
    "to_session",
    "memory_pass",
    "kind",
    "latency_change",
    "memory_change",
    "latency_workloads",
    "memory_workloads",
    "workloads_total",
    "confidence",
)
_JOIN = ("kernel", "provider", "gpu", "from_version", "to_version")


def tradeoffs(findings: pl.DataFrame, gap: timedelta = SESSION_GAP) -> pl.DataFrame:
    """Latency and memory findings of the same sittings with opposite verdicts
    (module docstring); the largest memory change first."""
    if findings.height == 0:
        return pl.DataFrame(schema=_schema())
    moved = pl.col("verdict").is_in(["regression", "improvement"])

    def side(metric: str, prefix: str) -> pl.DataFrame:
        return findings.filter((pl.col("metric") == metric) & moved).select(
            *_JOIN,
            pl.col("from_origin").fill_null("").alias("_from_origin"),
            pl.col("to_origin").fill_null("").alias("_to_origin"),
            pl.col("pass").alias(f"{prefix}_pass"),
            pl.col("from_session").alias(f"{prefix}_from"),
            pl.col("to_session").alias(f"{prefix}_to"),
            pl.col("from_observed_at").alias(f"{prefix}_from_at"),
            pl.col("to_observed_at").alias(f"{prefix}_to_at"),
            pl.col("verdict").alias(f"{prefix}_verdict"),
            pl.col("change").alias(f"{prefix}_change"),
            pl.col("workloads_affected").alias(f"{prefix}_workloads"),
            pl.col("workloads_total").alias(f"{prefix}_total"),
            pl.col("confidence").alias(f"{prefix}_confidence"),
        )

    def near(a: str, b: str) -> pl.Expr:
        return (pl.col(a) - pl.col(b)).abs() <= pl.lit(gap)

    joined = side("latency", "latency").join(
        side("memory", "memory"), on=[*_JOIN, "_from_origin", "_to_origin"], how="inner"
    )
    joined = joined.filter(
        near("latency_from_at", "memory_from_at")
        & near("latency_to_at", "memory_to_at")
        & (pl.col("latency_verdict") != pl.col("memory_verdict"))
    )
    return (
        joined.with_columns(
            pl.col("latency_pass").alias("pass"),
            pl.col("latency_from").alias("from_session"),
            pl.col("latency_to").alias("to_session"),
            pl.when(pl.col("latency_verdict") == "improvement")
            .then(pl.lit("faster, more memory"))
            .otherwise(pl.lit("slower, less memory"))
            .alias("kind"),
            pl.max_horizontal("latency_total", "memory_total").alias("workloads_total"),
            pl.min_horizontal("latency_confidence", "memory_confidence").alias("confidence"),
        )
        .select(TRADEOFF_COLUMNS)
        .sort(pl.col("memory_change").abs(), "kernel", "pass", "provider", descending=[True, False, False, False])
    )  # fmt: skip


def _schema() -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {
        k: pl.String() for k in (*KEY, "from_session", "to_session", "memory_pass", "kind")
    }
    for name in ("latency_change", "memory_change", "confidence"):
        schema[name] = pl.Float64()
    for name in ("latency_workloads", "memory_workloads", "workloads_total"):
        schema[name] = pl.Int64()
    return {c: schema[c] for c in TRADEOFF_COLUMNS}
