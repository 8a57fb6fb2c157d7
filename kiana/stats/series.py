"""Series: one provider's runs in one partition, one metric, in version order.

Only runs with ``status == "passed"`` and a median are judged; the rest stay in the
database and are counted, never read as timings.  Runs of the same version in the
same series are replicates: they are pooled into one *point* per version (median of
medians), and their dispersion feeds the noise model (:mod:`kiana.stats.noise`).
They are never compared with each other as a step.

Everything here is a vectorised polars transform, ``f(frame) -> frame``.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.noise import SPREAD_TO_SIGMA, run_noise
from kiana.stats.options import SERIES_KEYS, SERIES_LABELS

#: Runs-table columns the statistics read.
REQUIRED_COLUMNS: tuple[str, ...] = (
    *SERIES_KEYS,
    *SERIES_LABELS,
    "liger_version",
    "observed_at",
    "status",
    "median",
    "p20",
    "p80",
)


def judgeable(runs: pl.DataFrame) -> pl.DataFrame:
    """Passed runs with a median, with ``rel_spread`` and ``log_median`` added."""
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        from kiana.errors import UsageError

        raise UsageError(
            f"the runs frame lacks column(s) {', '.join(missing)}",
            hint="pass the frame of kiana.load.runs(con)",
        )
    frame = runs.select(REQUIRED_COLUMNS).with_columns(
        pl.col("median", "p20", "p80").cast(pl.Float64).fill_nan(None)
    )
    frame = frame.filter((pl.col("status") == "passed") & pl.col("median").is_not_null())
    return run_noise(frame)


def points(runs: pl.DataFrame, versions: pl.DataFrame) -> pl.DataFrame:
    """One row per series and version: the pooled level and its raw noise estimates.

    Columns: the series keys and labels, ``liger_version``, ``version_rank``,
    ``n_runs``, ``median`` (median of the runs' medians), ``log_median``, ``p20``,
    ``p80`` (medians), ``spread_sigma`` (median positive relative spread / 1.683, null
    when every run has zero spread), ``replicate_sigma`` (sample standard deviation of
    the log medians, null for one run or identical values), ``last_observed_at``,
    ``position`` (0-based within the series) and ``series_id`` (an integer per series
    in the order of its keys; absent when a key is null), sorted by series and version.
    """
    ranked = runs.join(
        versions.select("liger_version", "version_rank"), on="liger_version", how="left"
    )
    series = _series_ids(ranked)
    if series is None:  # a null key: group by the strings themselves (slower, same result)
        keys: list[str] = [*SERIES_KEYS, "liger_version"]
        order: list[str] = [*SERIES_KEYS, "version_rank"]
        window: list[str] = list(SERIES_KEYS)
        labels: list[pl.Expr] = []
    else:
        # One integer per series, in the order of its keys, and the version's rank (one
        # per label): grouping, sorting and windows on two integers instead of four
        # strings; the strings are carried along as first values of their group.
        ranked = ranked.with_columns(series.alias("series_id"))
        keys = ["series_id", "version_rank"]
        order = keys
        window = ["series_id"]
        labels = [pl.col(c).first() for c in (*SERIES_KEYS, "liger_version")]
    grouped = ranked.group_by(*keys).agg(
        *labels,
        *(pl.col(c).first() for c in SERIES_LABELS),
        *([pl.col("version_rank").first()] if series is None else []),
        pl.len().cast(pl.Int64).alias("n_runs"),
        pl.col("median").median(),
        pl.col("p20").median(),
        pl.col("p80").median(),
        (pl.col("rel_spread").median() / SPREAD_TO_SIGMA).alias("spread_sigma"),
        pl.col("log_median").std(ddof=1).alias("replicate_sigma"),
        pl.col("observed_at").max().alias("last_observed_at"),
    )
    columns = [
        *SERIES_KEYS,
        "liger_version",
        *(c for c in grouped.columns if c not in SERIES_KEYS and c != "liger_version"),
    ]
    return (
        grouped.select(columns)
        .with_columns(
            pl.when(pl.col("median") > 0)
            .then(pl.col("median").log())
            .otherwise(None)
            .alias("log_median"),
            pl.when(pl.col("replicate_sigma") > 0)
            .then(pl.col("replicate_sigma"))
            .otherwise(None)
            .fill_nan(None)
            .alias("replicate_sigma"),
        )
        .sort(*order)
        .with_columns(pl.int_range(pl.len()).over(window).alias("position"))
    )


def series_window(points: pl.DataFrame) -> list[str]:
    """The columns that tell the series of ``points`` apart: the integer
    ``series_id`` of :func:`points` when present, else the series keys."""
    return ["series_id"] if "series_id" in points.columns else list(SERIES_KEYS)


def _series_ids(runs: pl.DataFrame) -> pl.Expr | None:
    """An Int64 per row whose order is the order of its series keys (and equal for
    equal keys), or None when a key or version is null (then callers use the strings)."""
    if (
        runs.height == 0
        or runs.select(
            pl.any_horizontal(pl.col(*SERIES_KEYS, "version_rank").is_null().any())
        ).item()
    ):
        return None
    distincts = [runs.get_column(column).unique().sort() for column in SERIES_KEYS]
    if math.prod(len(d) for d in distincts) >= 2**62:
        return None
    combined: pl.Expr = pl.lit(0, pl.Int64)
    for column, distinct in zip(SERIES_KEYS, distincts, strict=True):
        code = pl.col(column).replace_strict(
            distinct, pl.int_range(len(distinct), eager=True), return_dtype=pl.Int64
        )
        combined = combined * len(distinct) + code
    return combined
