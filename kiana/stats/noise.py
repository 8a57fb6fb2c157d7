"""The noise model: how much a run's median moves when nothing changed.

Per-run spread
--------------
``triton.testing.do_bench`` reports the 0.2, 0.5 and 0.8 quantiles of repeated
timings.  For a normal distribution the 20th and 80th percentiles lie at
``mu -/+ 0.8416 sigma``, so ``p80 - p20 = 1.683 sigma`` and

    sigma_run = (p80 - p20) / (1.683 * median)        (relative, i.e. in log units)

Quantile-based scale estimates of this kind are robust to the long right tail of
GPU timings (Rousseeuw & Croux 1993, "Alternatives to the median absolute
deviation", JASA 88; the same idea as the IQR/1.349 estimator).  We compare *medians
of runs taken in different sessions*, and session-to-session variation (clocks,
thermal state, placement) dominates the sampling error of a median of many
repetitions, which is far smaller (``1.25 sigma / sqrt(reps)``).  kiana therefore
uses ``sigma_run`` itself, not ``sigma_run / sqrt(reps)``, as the noise of one run's
median: conservative, and it keeps a step of the size of the spread from being
called (cf. Kalibera & Jones 2013, "Rigorous benchmarking in reasonable time").

Replicates
----------
Several passed runs of one series in one session (:mod:`kiana.stats.sessions`) are
pooled: the session's level is the median of their medians, and the standard
deviation of their log medians measures run-to-run noise directly.  A session's run
noise is the larger of the two estimates (spread, replicates), and the pooled level's
noise is ``sigma_run / sqrt(n_runs)``.

Fallbacks (``noise_source``)
----------------------------
Zero spread (p20 = median = p80, common for slow kernels with few repetitions) means
*no noise information*, not no noise.  Such a session falls back to

1. ``replicates``: the dispersion of its own replicates, when there are two or more
   distinct values;
2. ``history``: the series' own scatter between its sessions, when it has at least
   ``MIN_HISTORY_STEPS`` steps: ``1.4826 * median |d| / sqrt(2)`` over the
   differences ``d`` of consecutive log levels (the MAD of a difference of two
   independent sessions, around zero; robust to the minority of steps that really
   moved, and, being a between-session measure, already the noise of one session);
3. ``kernel``: the median relative spread of every other run of the same kernel,
   pass, GPU and metric (all providers and workloads), as a noise floor;
4. ``memory``: for memory only, a small fixed floor (peak allocations are
   deterministic up to allocator rounding);
5. ``none``: no information.  Such a step is ``inconclusive`` unless the change
   exceeds ``gross_change`` (default 25%, beyond the run-to-run variation of
   practically every GPU timing), and the evidence says so.

A step's noise is ``sqrt(sigma_from^2 + sigma_to^2)`` (independent sessions) and its
``noise_source`` is the worse of its two sides.

Calibration (the empirical null)
--------------------------------
How much a session's median really moves, relative to the within-run spread, depends
on the harness and the machine (the median of many repetitions is steadier than one
repetition; clocks and placement between sessions add noise).  Rather than assume
the ratio, kiana measures it, as in Efron's empirical null (Efron 2004, "Large-scale
simultaneous hypothesis testing: the choice of a null hypothesis", JASA 99): most
consecutive steps change nothing, so the robust scale of their z-scores
(``1.4826 * MAD`` of ``ln(b/a) / sqrt(sigma_a^2 + sigma_b^2)`` over every step with
spreads on both sides) is the factor ``noise_scale`` by which the spread model over-
or understates the real noise.  The MAD ignores the minority of steps that really
moved (it breaks down only at 50% contamination).  It needs at least
``MIN_CALIBRATION_STEPS`` steps, else the factor is 1, and it is clamped to
[0.25, 4].  Spread-based sigmas (and the kernel floor) are multiplied by it;
replicate dispersion, a direct measurement, is not.
"""

from __future__ import annotations

import polars as pl

from kiana.stats.options import JudgeOptions, series_window
from kiana.vocabulary import source_rank

#: p80 - p20 of a standard normal distribution: 2 * Phi^-1(0.8).
SPREAD_TO_SIGMA = 1.6832424671458286


def run_noise(runs: pl.DataFrame) -> pl.DataFrame:
    """Add ``rel_spread`` (``(p80 - p20) / median``, null when not positive or
    unknown) and ``log_median`` (null when the median is not positive)."""
    spread = (pl.col("p80") - pl.col("p20")) / pl.col("median")
    return runs.with_columns(
        pl.when((pl.col("median") > 0) & pl.col("p20").is_not_null() & pl.col("p80").is_not_null())
        .then(spread)
        .otherwise(None)
        .alias("rel_spread"),
        pl.when(pl.col("median") > 0)
        .then(pl.col("median").log())
        .otherwise(None)
        .alias("log_median"),
    ).with_columns(
        pl.when(pl.col("rel_spread") > 0)
        .then(pl.col("rel_spread"))
        .otherwise(None)
        .fill_nan(None)
        .alias("rel_spread")
    )


MIN_CALIBRATION_STEPS = 30
SCALE_BOUNDS = (0.25, 4.0)


def noise_scale(points: pl.DataFrame) -> tuple[float, int]:
    """The empirical-null factor (see the module docstring) and the number of steps
    it rests on, from the per-version points of :func:`kiana.stats.series.points`
    (sorted by series and session, as that function returns them)."""
    keys = series_window(points)
    sigma = pl.col("spread_sigma") / pl.col("n_runs").cast(pl.Float64).sqrt()
    z = (
        points.with_columns(sigma.alias("_s"))
        .with_columns(
            (
                (pl.col("log_median") - pl.col("log_median").shift(1).over(keys))
                / (pl.col("_s").pow(2) + pl.col("_s").shift(1).over(keys).pow(2)).sqrt()
            ).alias("_z")
        )
        .filter(pl.col("_z").is_finite())["_z"]
    )
    if z.len() < MIN_CALIBRATION_STEPS:
        return 1.0, int(z.len())
    center = z.median()
    assert isinstance(center, float)
    mad = (z - center).abs().median()
    assert isinstance(mad, float)
    scale = min(max(1.4826 * mad, SCALE_BOUNDS[0]), SCALE_BOUNDS[1])
    return scale, int(z.len())


def kernel_floor(runs: pl.DataFrame) -> pl.DataFrame:
    """Noise floor per kernel, pass, GPU and metric: the median positive relative
    spread of all its runs, as a sigma (``floor_sigma``), and how many runs it rests on."""
    return runs.group_by("kernel", "pass", "gpu", "metric").agg(
        (pl.col("rel_spread").median() / SPREAD_TO_SIGMA).alias("floor_sigma"),
        pl.col("rel_spread").count().alias("floor_runs"),
    )


MIN_HISTORY_STEPS = 3


def history_noise(points: pl.DataFrame) -> pl.DataFrame:
    """Add ``history_sigma``: the series' own between-session scatter (see the module
    docstring), null with fewer than ``MIN_HISTORY_STEPS`` steps or no scatter."""
    window = series_window(points)
    diff = (pl.col("log_median") - pl.col("log_median").shift(1).over(window)).abs()
    with_diff = points.with_columns(diff.alias("_d"))
    sigma = (pl.col("_d").median() * 1.4826 / 2.0**0.5).over(window)
    count = pl.col("_d").count().over(window)
    return with_diff.with_columns(
        pl.when((count >= MIN_HISTORY_STEPS) & (sigma > 0))
        .then(sigma)
        .otherwise(None)
        .alias("history_sigma")
    ).drop("_d")


def session_noise(
    points: pl.DataFrame, floors: pl.DataFrame, options: JudgeOptions, scale: float = 1.0
) -> pl.DataFrame:
    """Add ``sigma`` (noise of the pooled level, relative) and ``noise_source`` to the
    per-session points of :func:`kiana.stats.series.points`; spread-based sigmas are
    multiplied by ``scale`` (:func:`noise_scale`)."""
    points = history_noise(points).with_columns(pl.col("spread_sigma") * scale)
    floors = floors.with_columns(pl.col("floor_sigma") * scale)
    own = pl.max_horizontal("spread_sigma", "replicate_sigma")
    n = pl.col("n_runs").cast(pl.Float64).sqrt()
    joined = points.join(
        floors, on=["kernel", "pass", "gpu", "metric"], how="left", maintain_order="left"
    )
    return joined.with_columns(
        pl.when(own.is_not_null())
        .then(own / n)
        .when(pl.col("history_sigma").is_not_null())
        .then(pl.col("history_sigma"))
        .when(pl.col("floor_sigma").is_not_null())
        .then(pl.col("floor_sigma") / n)
        .when(pl.col("metric") == "memory")
        .then(pl.lit(options.memory_noise_floor) / n)
        .otherwise(None)
        .alias("sigma"),
        pl.when(pl.col("spread_sigma").is_not_null() & (own == pl.col("spread_sigma")))
        .then(pl.lit("spread"))
        .when(pl.col("replicate_sigma").is_not_null())
        .then(pl.lit("replicates"))
        .when(pl.col("history_sigma").is_not_null())
        .then(pl.lit("history"))
        .when(pl.col("floor_sigma").is_not_null())
        .then(pl.lit("kernel"))
        .when(pl.col("metric") == "memory")
        .then(pl.lit("memory"))
        .otherwise(pl.lit("none"))
        .alias("noise_source"),
    ).drop("floor_sigma", "floor_runs", "history_sigma")


def worse_source(a: str, b: str) -> pl.Expr:
    """The worse of two noise-source columns."""
    return pl.when(source_rank(a) >= source_rank(b)).then(pl.col(a)).otherwise(pl.col(b))
