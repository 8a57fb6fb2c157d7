"""Steps and their verdicts.

A *step* pairs two points (sessions, :mod:`kiana.stats.sessions`) of one series:
consecutive sessions in (version, time) order, also under one version label, or
(with ``JudgeOptions.baseline``) the last session of the chosen baseline version and
every session of another version.

For a step from level ``a`` to level ``b`` (pooled medians):

    change   = b / a - 1                       (+0.10 = 10% slower / more memory)
    wnoise   = sqrt(measured_a^2 + measured_b^2 + workload_sigma^2)
    noise    = sqrt(wnoise^2 + sitting_sigma^2)
    severity = ln(b / a) / noise                (signed z-like score, in noise units)

``measured`` comes from the spreads and replicates (:mod:`kiana.stats.noise`), the
two sigmas from the calibration (:mod:`kiana.stats.calibration`: the workload's
session-to-session noise and the offset its provider's sitting shares).

Two gates must pass to flag (the practical-and-statistical rule of e.g. Georges et
al. 2007, "Statistically rigorous Java performance evaluation"):

* ``regression`` / ``improvement``: ``|severity| >= separation`` (default 3) **and**
  ``|change| >= threshold`` (3%);
* ``unchanged``: otherwise, when the step could have separated a change of
  ``resolution * threshold`` (9%);
* ``inconclusive``: the noise is too large for that, or there is none at all (then a
  change of ``gross_change``, 25%, is still called: beyond any run-to-run variation).

The final verdict applies the same-sitting control (:mod:`kiana.stats.controls`) with
the rules of the findings (:mod:`kiana.stats.sweeps`), one workload at a time.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.controls import control_moved
from kiana.stats.evidence import noise_clause, pct
from kiana.stats.noise import worse_source
from kiana.stats.options import JudgeOptions, series_window
from kiana.vocabulary import SERIES_KEYS, SERIES_LABELS

_SIDE = ("version", "version_rank", "session", "origin", "first_observed_at",
         "last_observed_at", "n_runs", "median", "log_median", "measured", "noise_source")  # fmt: skip


def pair_points(points: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """The steps of every series, before verdicts."""
    keys = [*SERIES_KEYS]
    if options.baseline is None:
        window = series_window(points)
        shifted = points.with_columns(
            pl.col(c).shift(1).over(window).alias(f"from_{c}") for c in _SIDE
        ).filter(pl.col("from_version").is_not_null())
        paired = shifted.rename({c: f"to_{c}" for c in _SIDE})
    else:
        base = (
            points.filter(pl.col("version") == options.baseline)
            .group_by(keys, maintain_order=True)
            .agg(pl.all().sort_by("first_observed_at").last())
            .select(*keys, *(pl.col(c).alias(f"from_{c}") for c in _SIDE))
        )
        paired = (
            points.filter(pl.col("version") != options.baseline)
            .join(base, on=keys, how="inner", maintain_order="left")
            .rename({c: f"to_{c}" for c in _SIDE})
        )
    log_ratio = pl.col("to_log_median") - pl.col("from_log_median")
    return paired.select(
        *keys,
        *SERIES_LABELS,
        "is_subject", "from_version", "to_version", "from_session", "to_session", "from_origin", "to_origin",
        pl.col("from_first_observed_at").alias("from_observed_at"),
        pl.col("to_first_observed_at").alias("to_observed_at"),
        pl.col("from_last_observed_at"),
        "from_version_rank", "to_version_rank", "from_n_runs", "to_n_runs",
        "from_median", "to_median", "from_measured", "to_measured",
        log_ratio.alias("log_ratio"),
        (log_ratio.exp() - 1.0).alias("change"),
        worse_source("from_noise_source", "to_noise_source").alias("noise_source"),
    )  # fmt: skip


def measure(steps: pl.DataFrame) -> pl.DataFrame:
    """Add ``q2`` (measured variance), ``wnoise``, ``noise`` and ``severity``; ``steps``
    carry ``workload_sigma`` and ``sitting_sigma`` (0 without calibration)."""
    q2 = pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2)
    return (
        steps.with_columns(q2.alias("q2"))
        .with_columns((pl.col("q2") + pl.col("workload_sigma").pow(2)).sqrt().alias("wnoise"))
        .with_columns(
            (pl.col("wnoise").pow(2) + pl.col("sitting_sigma").pow(2)).sqrt().alias("noise")
        )
        .with_columns(
            pl.when(pl.col("noise") > 0).then(pl.col("noise")).otherwise(None).alias("noise")
        )
        .with_columns((pl.col("log_ratio") / pl.col("noise")).alias("severity"))
    )


def practical(mu: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """The change reaches the threshold (a step shows the change it rests on)."""
    return (mu.exp() - 1.0).abs() >= options.threshold


def raw_verdict(log_ratio: str, noise: str, options: JudgeOptions) -> pl.Expr:
    """The two-gate verdict of a log ratio and its noise, as an expression."""
    lr = pl.col(log_ratio)
    sd = pl.col(noise)
    known = sd.is_not_null() & (sd > 0)
    separated = known & (lr.abs() >= options.separation * sd)
    gross = (~known) & ((lr.exp() - 1.0).abs() >= options.gross_change)
    flagged = (practical(lr, options) & separated) | gross
    resolvable = known & (
        options.separation * sd <= math.log1p(options.resolution * options.threshold)
    )
    return (
        pl.when(lr.is_null())
        .then(pl.lit("inconclusive"))
        .when(flagged & (lr > 0))
        .then(pl.lit("regression"))
        .when(flagged & (lr < 0))
        .then(pl.lit("improvement"))
        .when(resolvable | (known & separated))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("inconclusive"))
    )  # fmt: skip


def _flagged(column: str) -> pl.Expr:
    return pl.col(column).is_in(["regression", "improvement"]).fill_null(False)


def decide(steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """``raw_verdict``, ``adjusted_verdict``, the final ``verdict`` (the rules of the
    findings, per workload) and ``evidence``."""
    steps = steps.with_columns(
        raw_verdict("log_ratio", "noise", options).alias("raw_verdict"),
        pl.when(pl.col("adjusted_log_ratio").is_not_null())
        .then(raw_verdict("adjusted_log_ratio", "adjusted_noise", options))
        .alias("adjusted_verdict"),
    )
    raw, adj = _flagged("raw_verdict"), _flagged("adjusted_verdict")
    has_control = pl.col("adjusted_log_ratio").is_not_null()
    ctl, ctl_noise = pl.col("control_log_ratio"), pl.col("control_full_noise")
    moved_with = control_moved(ctl, ctl_noise, pl.col("log_ratio"), options)
    alone = control_moved(ctl, ctl_noise, -pl.col("adjusted_log_ratio"), options)
    big = pl.col("change").abs() >= options.threshold
    latency = pl.col("metric") == "latency"
    verdict = (
        pl.when(~pl.col("is_subject") & raw & latency & ~pl.col("benchmark_changed"))
        .then(pl.lit("drift"))
        .when(~pl.col("is_subject") | ~latency | ~has_control)
        .then(pl.col("raw_verdict"))
        .when(adj & ~raw & alone)
        .then(pl.col("raw_verdict"))
        .when(adj)
        .then(pl.col("adjusted_verdict"))
        .when(raw & big & moved_with)
        .then(pl.lit("drift"))
        .when(raw & ~moved_with)
        .then(pl.col("raw_verdict"))
        .otherwise(pl.col("adjusted_verdict"))
    )
    return steps.with_columns(verdict.alias("verdict")).with_columns(
        _evidence(options).alias("evidence")
    )


def _evidence(options: JudgeOptions) -> pl.Expr:
    control = (
        pl.when(pl.col("control_provider").is_not_null())
        .then(
            pl.lit("; control ") + pl.col("control_provider") + pl.lit(" ")
            + pct(pl.col("control_change")) + pl.lit(", adjusted ")
            + pct(pl.col("adjusted_change")) + pl.lit(" (") + pl.col("adjusted_verdict") + pl.lit(")")
        )
        .when(pl.col("benchmark_changed"))
        .then(pl.lit("; benchmark changed between sessions: ") + pl.col("benchmark_note").fill_null("")
              + pl.lit(" (controls set aside)"))
        .when(pl.col("is_subject"))
        .then(pl.lit("; no control"))
        .when(pl.col("metric") == "memory")
        .then(pl.lit("; baseline provider: its memory moves only when its benchmark changes"))
        .otherwise(pl.lit("; baseline provider: drift indicator"))
    )  # fmt: skip
    gross = (
        pl.when(pl.col("noise").is_null() & pl.col("raw_verdict").is_in(["regression", "improvement"]))
        .then(pl.lit(f"; called on size alone (>= {options.gross_change:.0%})"))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    replicates = (
        pl.when((pl.col("from_n_runs") > 1) | (pl.col("to_n_runs") > 1))
        .then(pl.lit("; replicates ") + pl.col("from_n_runs").cast(pl.String) + pl.lit("+")
              + pl.col("to_n_runs").cast(pl.String))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    return pl.concat_str(
        [
            pl.lit("change ") + pct(pl.col("change")).fill_null("n/a"),
            pl.lit(", "),
            noise_clause().fill_null("noise n/a"),
            control.fill_null(""),
            gross,
            replicates,
        ]
    )
