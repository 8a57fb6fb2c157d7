"""Data quality: sessions that were not judged, and why.

Four kinds (:data:`kiana.vocabulary.QUALITY_KINDS`): ``conflict`` (below), ``outlier``
(one session off its neighbours and back, :mod:`kiana.stats.outliers`), ``rerun`` (an
A/A pair, the same code measured twice: a noise measurement, :mod:`kiana.stats.reruns`)
and ``unstable`` (a whole sweep series that alternates between two levels, with
``levels`` and ``switches`` set: :mod:`kiana.stats.unstable`).

A session's replicates (one provider's runs of one partition in one sitting, see
:mod:`kiana.stats.sessions`) must agree within their noise.  When they disagree far
beyond it (``conflict``), they are most likely two different things under one name:
two implementations behind one provider name (Liger's per-backend CSVs once called
their own backend plain ``liger``), or rows of two machines mixed into one file.
Pooling them would make a "median" of neither, so such a session is reported here and
left out of every step.
"""

from __future__ import annotations

import polars as pl

#: The columns of ``Judgement.quality``, in order.
QUALITY_COLUMNS: tuple[str, ...] = (
    "kind",
    "kernel",
    "pass",
    "provider",
    "gpu",
    "workload",
    "metric",
    "partition_id",
    "version",
    "session",
    "runs",
    "ratio",
    "message",
    "levels",
    "switches",
)
#: The dtypes of the ``Judgement.quality`` columns.
QUALITY_SCHEMA: dict[str, type[pl.DataType]] = {
    **dict.fromkeys(QUALITY_COLUMNS, pl.String),
    "runs": pl.Int64,
    "ratio": pl.Float64,
    "switches": pl.Int64,
}


def shaped(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` in the columns and dtypes of ``Judgement.quality``, a column it lacks
    null (``levels`` and ``switches`` are set for ``unstable`` rows only)."""
    return frame.select(
        (pl.col(c) if c in frame.columns else pl.lit(None)).cast(t).alias(c)
        for c, t in QUALITY_SCHEMA.items()
    )


def empty_quality() -> pl.DataFrame:
    """``Judgement.quality`` without rows."""
    return pl.DataFrame(schema={c: t() for c, t in QUALITY_SCHEMA.items()})


def quality(points: pl.DataFrame) -> pl.DataFrame:
    """One ``conflict`` entry per session point whose replicates disagree."""
    bad = points.filter(pl.col("conflict"))
    ratio = pl.col("log_range").exp()
    return (
        bad.with_columns(
            pl.lit("conflict").alias("kind"),
            pl.col("n_runs").alias("runs"),
            ratio.alias("ratio"),
        )
        .with_columns(
            (
                pl.col("runs").cast(pl.String)
                + pl.lit(" runs of one session differ ")
                + pl.col("ratio").round(2).cast(pl.String)
                + pl.lit("x, far beyond their noise: two implementations under one provider")
                + pl.lit(" name, or mixed-up rows? Not judged; give each implementation its")
                + pl.lit(" own provider name")
            ).alias("message")
        )
        .sort("kernel", "pass", "provider", "gpu", "workload", "metric", "session")
        .pipe(shaped)
    )
