"""Steps and their verdicts.

A *step* pairs two points (sessions, :mod:`kiana.stats.sessions`) of one series:
consecutive sessions in (version, time) order, also under one version label, or
(with ``JudgeOptions.baseline``) the last session of the chosen baseline version and
every session of another version.

For a step from level ``a`` to level ``b`` (pooled medians) with noise ``sigma_a``,
``sigma_b`` (relative, see :mod:`kiana.stats.noise`):

    change   = b / a - 1                       (+0.10 = 10% slower / more memory)
    noise    = sqrt(sigma_a^2 + sigma_b^2)
    severity = ln(b / a) / noise                (signed z-like score, in noise units)

Raw verdict, both gates must pass to flag (the practical-and-statistical rule of
e.g. Georges et al. 2007, "Statistically rigorous Java performance evaluation",
and of Mytkowicz/Kalibera on meaningful effect sizes):

* ``regression`` / ``improvement``: ``|severity| >= separation`` (default 3, i.e.
  the change exceeds three standard deviations of the difference of two run
  medians) **and** ``|change| >= threshold`` (default 3%).
* ``unchanged``: otherwise, when the step could have separated a change of
  ``resolution * threshold`` (default 9%).
* ``inconclusive``: the noise is too large for that (``separation * noise >
  resolution * threshold``), or there is no noise information at all.  With no noise
  information a change of at least ``gross_change`` (25%) is still called: it is
  beyond any plausible run-to-run variation.

The final verdict applies the same-run control (:mod:`kiana.stats.controls`):
a Liger step flagged raw whose control-adjusted change is not flagged the same way,
while the control itself moved that way, becomes ``drift``; baseline providers' flagged steps are always ``drift``.
"""

from __future__ import annotations

import polars as pl

from kiana.stats.evidence import pct
from kiana.stats.noise import worse_source
from kiana.stats.options import JudgeOptions, series_window
from kiana.vocabulary import SERIES_KEYS, SERIES_LABELS

_SIDE = ("liger_version", "version_rank", "session", "origin", "first_observed_at", "n_runs", "median",
         "log_median", "sigma", "noise_source")  # fmt: skip


def pair_points(points: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """The steps of every series, before verdicts."""
    keys = [*SERIES_KEYS]
    if options.baseline is None:
        window = series_window(points)
        shifted = points.with_columns(
            pl.col(c).shift(1).over(window).alias(f"from_{c}") for c in _SIDE
        ).filter(pl.col("from_liger_version").is_not_null())
        paired = shifted.rename({c: f"to_{c}" for c in _SIDE})
    else:
        base = (
            points.filter(pl.col("liger_version") == options.baseline)
            .group_by(keys, maintain_order=True)
            .agg(pl.all().sort_by("first_observed_at").last())
            .select(*keys, *(pl.col(c).alias(f"from_{c}") for c in _SIDE))
        )
        paired = (
            points.filter(pl.col("liger_version") != options.baseline)
            .join(base, on=keys, how="inner", maintain_order="left")
            .rename({c: f"to_{c}" for c in _SIDE})
        )
    return paired.select(
        *keys,
        *SERIES_LABELS,
        pl.col("from_liger_version").alias("from_version"),
        pl.col("to_liger_version").alias("to_version"),
        pl.col("from_session"),
        pl.col("to_session"),
        pl.col("from_origin"),
        pl.col("to_origin"),
        pl.col("from_first_observed_at").alias("from_observed_at"),
        pl.col("to_first_observed_at").alias("to_observed_at"),
        "from_version_rank",
        "to_version_rank",
        "from_n_runs",
        "to_n_runs",
        "from_median",
        "to_median",
        "from_log_median",
        "to_log_median",
        "from_sigma",
        "to_sigma",
        "from_noise_source",
        "to_noise_source",
    )


def measure(steps: pl.DataFrame) -> pl.DataFrame:
    """Add ``log_ratio``, ``change``, ``noise``, ``severity``, ``noise_source``."""
    log_ratio = pl.col("to_log_median") - pl.col("from_log_median")
    noise = (pl.col("from_sigma").pow(2) + pl.col("to_sigma").pow(2)).sqrt()
    return steps.with_columns(
        log_ratio.alias("log_ratio"),
        (log_ratio.exp() - 1.0).alias("change"),
        noise.alias("noise"),
        worse_source("from_noise_source", "to_noise_source").alias("noise_source"),
    ).with_columns(
        pl.when(pl.col("noise") > 0)
        .then(pl.col("log_ratio") / pl.col("noise"))
        .otherwise(None)
        .alias("severity")
    )


def raw_verdict(log_ratio: str, noise: str, options: JudgeOptions) -> pl.Expr:
    """The two-gate verdict of a log ratio and its noise, as an expression."""
    lr = pl.col(log_ratio)
    sd = pl.col(noise)
    change = lr.exp() - 1.0
    practical = change.abs() >= options.threshold
    known = sd.is_not_null() & (sd > 0)
    separated = known & (lr.abs() >= options.separation * sd)
    gross = (~known) & (change.abs() >= options.gross_change)
    flagged = (practical & separated) | gross
    resolvable = known & (options.separation * sd <= options.resolution * options.threshold)
    return (
        pl.when(lr.is_null())
        .then(pl.lit("inconclusive"))
        .when(flagged & (lr > 0))
        .then(pl.lit("regression"))
        .when(flagged & (lr < 0))
        .then(pl.lit("improvement"))
        .when(resolvable | (known & ~practical & separated))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("inconclusive"))
    )


def decide(steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """Final verdict and evidence, given raw measures and the control columns of
    :func:`kiana.stats.controls.attach_controls`."""
    flagged = pl.col("raw_verdict").is_in(["regression", "improvement"])
    same_way = pl.col("adjusted_verdict") == pl.col("raw_verdict")
    has_control = pl.col("control_provider").is_not_null()
    up = pl.col("raw_verdict") == "regression"
    control_same_sign = (pl.col("control_change") > 0) == up
    control_moved = control_same_sign & (
        (pl.col("control_severity").abs() >= options.separation / 2)
        | (
            pl.col("control_severity").is_null()
            & (pl.col("control_change").abs() >= options.threshold)
        )
    )
    verdict = (
        pl.when(~pl.col("is_liger") & flagged)
        .then(pl.lit("drift"))
        .when(
            pl.col("is_liger") & flagged & has_control & ~same_way & control_moved.fill_null(False)
        )
        .then(pl.lit("drift"))
        .otherwise(pl.col("raw_verdict"))
    )
    sev = pl.col("severity").abs().round(1).cast(pl.String)
    noise_part = (
        pl.when(pl.col("noise_source") == "none")
        .then(pl.lit("no noise information (zero spread, one run, no floor)"))
        .otherwise(
            pl.lit("noise ")
            + pct(pl.col("noise"), signed=False)
            + pl.lit(" from ")
            + pl.col("noise_source")
            + pl.when(pl.col("noise_source") != "spread")
            .then(pl.lit(" (fallback)"))
            .otherwise(pl.lit(""))
            + pl.lit(", |z|=")
            + sev
        )
    )
    control_part = (
        pl.when(has_control)
        .then(
            pl.lit("; control ")
            + pl.col("control_provider")
            + pl.lit(" ")
            + pct(pl.col("control_change"), signed=False)
            + pl.lit(", adjusted ")
            + pct(pl.col("adjusted_change"), signed=False)
            + pl.lit(" (")
            + pl.col("adjusted_verdict")
            + pl.lit(")")
        )
        .when(pl.col("is_liger"))
        .then(pl.lit("; no control"))
        .otherwise(pl.lit("; baseline provider: drift indicator"))
    )
    gross_part = (
        pl.when((pl.col("noise_source") == "none") & flagged)
        .then(pl.lit(f"; called on size alone (>= {options.gross_change:.0%})"))
        .otherwise(pl.lit(""))
    )
    replicate_part = (
        pl.when((pl.col("from_n_runs") > 1) | (pl.col("to_n_runs") > 1))
        .then(
            pl.lit("; replicates ")
            + pl.col("from_n_runs").cast(pl.String)
            + pl.lit("+")
            + pl.col("to_n_runs").cast(pl.String)
        )
        .otherwise(pl.lit(""))
    )
    return steps.with_columns(verdict.alias("verdict")).with_columns(
        pl.concat_str(
            [
                pl.lit("change ") + pct(pl.col("change"), signed=False).fill_null("n/a"),
                pl.lit(", "),
                noise_part.fill_null("noise n/a"),
                control_part.fill_null(""),
                gross_part,
                replicate_part,
            ]
        ).alias("evidence")
    )
