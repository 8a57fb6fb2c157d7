"""Series: one provider's sessions in one partition, one metric, in (version, time) order.

Only runs with ``status == "passed"`` and a median are judged; the rest stay in the
database and are counted, never read as timings.  Runs are grouped into sessions
(:mod:`kiana.stats.sessions`); one provider's runs of one partition inside one
session are replicates: they are pooled into one *point* (median of medians), and
their dispersion feeds the noise model (:mod:`kiana.stats.noise`).  Consecutive
points of a series are steps, also when they share a version label.

Everything here is a vectorised polars transform, ``f(frame) -> frame``.
"""

from __future__ import annotations

import math
from datetime import timedelta

import polars as pl

from kiana.errors import UsageError
from kiana.stats.noise import SPREAD_TO_SIGMA, run_noise
from kiana.stats.sessions import SESSION_GAP, assign_sessions, conflicting
from kiana.vocabulary import JUDGED_COLUMNS, SERIES_KEYS, SERIES_LABELS, subject_expr

#: Runs-table columns the statistics read.
REQUIRED_COLUMNS: tuple[str, ...] = JUDGED_COLUMNS

#: Optional: where a run was recorded (``liger_commit:liger_csv`` for imported rows);
#: sessions never span two origins.  Null when unknown.
ORIGIN = "origin"


def judgeable(runs: pl.DataFrame, gap: timedelta = SESSION_GAP) -> pl.DataFrame:
    """Passed runs with a median, with ``rel_spread``, ``log_median`` and their
    session (``session``, ``session_start``, ``session_end``) added."""
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise UsageError(
            f"the runs frame lacks column(s) {', '.join(missing)}",
            hint="pass the frame of kiana.load.runs(con)",
        )
    origin = pl.col(ORIGIN) if ORIGIN in runs.columns else pl.lit(None, pl.String)
    frame = runs.select(*REQUIRED_COLUMNS, origin.cast(pl.String).alias(ORIGIN)).with_columns(
        pl.col("median", "p20", "p80").cast(pl.Float64).fill_nan(None)
    )
    frame = frame.filter((pl.col("status") == "passed") & pl.col("median").is_not_null())
    return assign_sessions(run_noise(frame), gap)


def points(
    runs: pl.DataFrame, versions: pl.DataFrame, *, gross_change: float, separation: float
) -> pl.DataFrame:
    """One row per series and session: the pooled level and its raw noise estimates.

    ``versions`` gives each label's ``version_rank`` (per GPU when it has a ``gpu``
    column, :func:`kiana.stats.versions.gpu_version_ranks`).

    Columns: the series keys and labels, ``version``, ``harness``, ``version_rank``,
    ``session`` (id), ``first_observed_at``, ``last_observed_at``, ``n_runs``,
    ``median`` (median of the runs' medians), ``log_median``, ``p20``, ``p80``
    (medians), ``spread_sigma`` (median positive relative spread / 1.683, null when
    every run has zero spread), ``replicate_sigma`` (sample standard deviation of the
    log medians, null for one run or identical values), ``log_range`` (max - min log
    median), ``conflict`` (replicates disagree far beyond their noise, see
    :func:`kiana.stats.sessions.conflicting`), ``is_subject`` (the series is the code
    under test: a run of it has the role ``subject``), ``position`` (0-based within the
    series) and ``series_id`` (an integer per series in the order of its keys; absent when a
    key is null), sorted by series, version and session time.
    """
    on = [c for c in ("gpu", "harness") if c in versions.columns] + ["version"]
    ranked = runs.join(versions.select(*on, "version_rank"), on=on, how="left")
    series = _series_ids(ranked)
    point = ["version_rank", ORIGIN, "session_start"]
    if series is None:  # a null key: group by the strings themselves (slower, same result)
        keys: list[str] = [*SERIES_KEYS, *point]
        order: list[str] = [*SERIES_KEYS, "version_rank", "session_start", ORIGIN]
        window: list[str] = list(SERIES_KEYS)
        labels: list[pl.Expr] = []
    else:
        # One integer per series, in the order of its keys: grouping, sorting and
        # windows on integers instead of strings; the strings are carried along as
        # first values of their group.
        ranked = ranked.with_columns(series.alias("series_id"))
        keys = ["series_id", *point]
        order = ["series_id", "version_rank", "session_start", ORIGIN]
        window = ["series_id"]
        labels = [pl.col(c).first() for c in SERIES_KEYS]
    grouped = ranked.group_by(*keys).agg(
        *labels,
        pl.col("version").first(),
        pl.col("harness").first(),
        pl.col("session").first(),
        subject_expr().any().alias("is_subject"),
        *(pl.col(c).first() for c in SERIES_LABELS),
        pl.len().cast(pl.Int64).alias("n_runs"),
        pl.col("median").median(),
        pl.col("p20").median(),
        pl.col("p80").median(),
        (pl.col("rel_spread").median() / SPREAD_TO_SIGMA).alias("spread_sigma"),
        pl.col("log_median").std(ddof=1).alias("replicate_sigma"),
        (pl.col("log_median").max() - pl.col("log_median").min()).alias("log_range"),
        pl.col("observed_at").min().alias("first_observed_at"),
        pl.col("observed_at").max().alias("last_observed_at"),
    )
    front = [*SERIES_KEYS, "version", "session"]
    columns = [*front, *(c for c in grouped.columns if c not in front)]
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
        .with_columns(
            conflicting(gross_change=gross_change, separation=separation).alias("conflict")
        )
        .sort(*order)
        .with_columns(
            pl.int_range(pl.len()).over(window).alias("position"),
            pl.col("is_subject").any().over(window),
        )
    )


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
