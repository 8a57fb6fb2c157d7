"""The measured noise of a session: what its own runs say about the noise of its level.

A step's noise has two parts.  The part measured *inside* each session is here; the
part *between* sessions (the session-to-session noise of one workload, and the offset
one provider's whole sitting shares) is not in any run's numbers and is calibrated on
the data being judged (:mod:`kiana.stats.calibration`).

Per-run spread
--------------
``triton.testing.do_bench`` reports the 0.2, 0.5 and 0.8 quantiles of repeated
timings.  For a normal distribution the 20th and 80th percentiles lie at
``mu -/+ 0.8416 sigma``, so ``p80 - p20 = 1.683 sigma`` and

    sigma_run = (p80 - p20) / (1.683 * median)        (relative, i.e. in log units)

Quantile-based scale estimates of this kind are robust to the long right tail of GPU
timings (Rousseeuw & Croux 1993, "Alternatives to the median absolute deviation",
JASA 88; the same idea as the IQR/1.349 estimator).  kiana uses ``sigma_run`` itself,
not ``sigma_run / sqrt(reps)``, as the measured noise of one run's median:
conservative, and a step of the size of the spread is never called on it
(cf. Kalibera & Jones 2013, "Rigorous benchmarking in reasonable time").

Replicates
----------
Several passed runs of one series in one session (:mod:`kiana.stats.sessions`) are
pooled: the session's level is the median of their medians, and the standard deviation
of their log medians measures run-to-run noise directly.  A session's run noise is the
larger of the two estimates, and the pooled level's measured noise is
``sigma_run / sqrt(n_runs)``.

Sources (``noise_source``)
--------------------------
``spread`` or ``replicates`` when measured; ``exact`` for memory with p20 = p80 (peak
allocations are deterministic up to allocator rounding: nothing to measure);
``single`` for a latency session whose runs all have p20 = median = p80: ``do_bench``
took **one sample**, and its zero spread says nothing about the noise.  Such a session
has no measured part at all (the calibration keeps single-sample steps apart, because
one sample moves far more between sittings than a median of many); earlier kiana lent
it the spread of faster runs of the kernel, which made a 3% move between two single
samples look like seven noise units.  A step's source is the worse of its two sides
(:data:`kiana.vocabulary.NOISE_SOURCES`).
"""

from __future__ import annotations

import polars as pl

from kiana.stats.options import JudgeOptions
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


def measured_noise(points: pl.DataFrame, options: JudgeOptions | None = None) -> pl.DataFrame:
    """Add ``measured`` (the measured noise of the pooled level, relative; 0 when
    nothing was measured) and ``noise_source`` (module docstring) to the points of
    :func:`kiana.stats.series.points`.  With the calibration off
    (``options.calibrate``), nothing else will be added: a single sample is ``none``
    and an exact memory point gets ``options.memory_noise_floor`` (allocator rounding)."""
    calibrated = options is None or options.calibrate
    own = pl.max_horizontal("spread_sigma", "replicate_sigma")
    n = pl.col("n_runs").cast(pl.Float64).sqrt()
    memory = pl.col("metric") == "memory"
    floor = 0.0 if calibrated or options is None else options.memory_noise_floor
    return points.with_columns(
        pl.when(own.is_not_null())
        .then(own / n)
        .when(memory)
        .then(pl.lit(floor) / n)
        .otherwise(0.0)
        .alias("measured"),
        pl.when(pl.col("spread_sigma").is_not_null() & (own == pl.col("spread_sigma")))
        .then(pl.lit("spread"))
        .when(pl.col("replicate_sigma").is_not_null())
        .then(pl.lit("replicates"))
        .when(memory)
        .then(pl.lit("exact"))
        .otherwise(pl.lit("single" if calibrated else "none"))
        .alias("noise_source"),
    )


def worse_source(a: str, b: str) -> pl.Expr:
    """The worse of two noise-source columns."""
    return pl.when(source_rank(a) >= source_rank(b)).then(pl.col(a)).otherwise(pl.col(b))
