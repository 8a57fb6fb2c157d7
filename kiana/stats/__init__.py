"""Regression statistics: which kernels got slower between sessions, how sure we are,
and whether the kernel or the machine moved.

``judge(runs, options)`` takes the runs table (a polars frame of ``kiana.load.runs``,
optionally with an ``origin`` column, see :mod:`kiana.stats.sessions`) and returns a
:class:`Judgement`:

* ``findings``: one kernel, pass, provider, GPU and metric between two sessions,
  judged on the pooled evidence of its sweep (:mod:`kiana.stats.sweeps`): the unit
  every count, the CLI, the JSON, the report and ``--fail-on`` use;
* ``steps``: the detail, one row per series and pair of consecutive sessions, with
  its own verdict (:mod:`kiana.stats.steps`, noise model in
  :mod:`kiana.stats.noise`, same-session controls in :mod:`kiana.stats.controls`);
* ``quality``: sessions that were not judged because their replicates disagree far
  beyond their noise (``conflict``), and one-off sessions that left their series'
  level and came back at once (``outlier``, :mod:`kiana.stats.outliers`);
* ``coverage``: how many series could be compared, and why the others could not;
* ``changepoints``: level shifts in long series (:mod:`kiana.stats.changepoints`);
* ``tradeoffs``: latency improvements paid for with a memory regression at the same
  step (:mod:`kiana.stats.tradeoffs`).

Every stage is a vectorised polars transform; nothing loops over runs in Python.
Output never holds NaN: missing numbers are null.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kiana.stats.changepoints import changepoints as _changepoints
from kiana.stats.changepoints import empty_changepoints
from kiana.stats.controls import attach_controls
from kiana.stats.coverage import Coverage, coverage
from kiana.stats.noise import kernel_floor, noise_scale, session_noise
from kiana.stats.options import JudgeOptions, series_window
from kiana.stats.outliers import mark_outliers
from kiana.stats.quality import quality
from kiana.stats.series import judgeable, points
from kiana.stats.sessions import session_label
from kiana.stats.steps import decide, measure, pair_points
from kiana.stats.sweeps import FINDING_COLUMNS
from kiana.stats.sweeps import findings as _findings
from kiana.stats.tradeoffs import tradeoffs as _tradeoffs
from kiana.stats.versions import check_baseline, parse_version, version_table
from kiana.vocabulary import VERDICTS, Verdict, is_liger

__all__ = [
    "FINDING_COLUMNS",
    "STEP_COLUMNS",
    "VERDICTS",
    "Coverage",
    "JudgeOptions",
    "Judgement",
    "Verdict",
    "is_liger",
    "judge",
    "parse_version",
    "session_label",
    "version_table",
]

#: The columns of ``Judgement.steps``, in order.
STEP_COLUMNS: tuple[str, ...] = (
    "kernel",
    "pass",
    "provider",
    "gpu",
    "workload",
    "partition_id",
    "metric",
    "from_version",
    "to_version",
    "from_session",
    "to_session",
    "from_origin",
    "to_origin",
    "from_observed_at",
    "to_observed_at",
    "from_median",
    "to_median",
    "from_median_ns",
    "to_median_ns",
    "from_runs",
    "to_runs",
    "change",
    "verdict",
    "raw_verdict",
    "control_provider",
    "control_change",
    "control_severity",
    "adjusted_change",
    "severity",
    "adjusted_severity",
    "noise",
    "noise_source",
    "is_liger",
    "outlier",
    "evidence",
)


@dataclass(frozen=True)
class Judgement:
    """What :func:`judge` found."""

    steps: pl.DataFrame
    findings: pl.DataFrame
    changepoints: pl.DataFrame
    versions: pl.DataFrame
    runs_judged: int
    #: Series compared and why the others were not (:mod:`kiana.stats.coverage`).
    coverage: Coverage
    #: Data-quality entries: sessions not judged, and why (:mod:`kiana.stats.quality`).
    quality: pl.DataFrame
    #: The empirical-null factor applied to spread-based noise, and its number of steps.
    noise_scale: float = 1.0
    noise_scale_steps: int = 0
    #: Latency improvements paid for with a memory regression (see kiana.stats.tradeoffs).
    tradeoffs: pl.DataFrame | None = None


def _no_nan(frame: pl.DataFrame) -> pl.DataFrame:
    floats = [n for n, t in frame.schema.items() if t in (pl.Float64, pl.Float32)]
    if not floats:
        return frame
    return frame.with_columns(
        pl.when(pl.col(c).is_finite()).then(pl.col(c)).otherwise(None).alias(c) for c in floats
    )


def judge(runs: pl.DataFrame, options: JudgeOptions | None = None) -> Judgement:
    """Judge every series of ``runs`` (see the module docstring)."""
    options = options or JudgeOptions()
    frame = judgeable(runs, options.session_gap)
    versions = version_table(frame)
    check_baseline(versions, options.baseline)
    all_points = points(
        frame, versions, gross_change=options.gross_change, separation=options.separation
    )
    window = series_window(all_points)
    raw_points = all_points.filter(~pl.col("conflict")).with_columns(
        pl.int_range(pl.len()).over(window).alias("position")
    )
    scale, scale_steps = noise_scale(raw_points) if options.calibrate else (1.0, 0)
    pts = session_noise(raw_points, kernel_floor(frame), options, scale)
    steps = attach_controls(measure(pair_points(pts, options)), options)
    steps = decide(steps, options)
    if scale != 1.0:
        note = f"; spread noise x{scale:.2f} (empirical null of {scale_steps} steps)"
        steps = steps.with_columns(
            pl.when(pl.col("noise_source").is_in(["spread", "kernel"]))
            .then(pl.col("evidence") + pl.lit(note))
            .otherwise(pl.col("evidence"))
            .alias("evidence")
        )
    steps, outliers = mark_outliers(steps, options)
    found = _no_nan(_findings(steps, options))
    latency = pl.col("metric") == "latency"
    steps = steps.with_columns(
        pl.when(latency)
        .then(pl.col("from_median").round(0).cast(pl.Int64, strict=False))
        .otherwise(None)
        .alias("from_median_ns"),
        pl.when(latency)
        .then(pl.col("to_median").round(0).cast(pl.Int64, strict=False))
        .otherwise(None)
        .alias("to_median_ns"),
        pl.col("from_n_runs").alias("from_runs"),
        pl.col("to_n_runs").alias("to_runs"),
    ).select(STEP_COLUMNS)
    steps = _no_nan(steps)
    cps = _changepoints(pts, options) if options.changepoints else empty_changepoints()
    return Judgement(
        steps=steps,
        findings=found,
        changepoints=_no_nan(cps),
        versions=versions,
        runs_judged=frame.height,
        coverage=coverage(all_points, steps, options, runs),
        quality=pl.concat([quality(all_points), outliers], how="vertical_relaxed"),
        noise_scale=scale,
        noise_scale_steps=scale_steps,
        tradeoffs=_no_nan(_tradeoffs(found)),
    )
