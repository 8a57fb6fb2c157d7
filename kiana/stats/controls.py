"""Same-sitting controls: did the kernel move, or the machine?

The providers of role ``subject`` are the code under test (Liger's ``liger`` and
``liger_*``: :mod:`kiana.harness`).  The baselines of
the same partition (``huggingface``, ``torch``, ...) ran in the same sittings, on the
same GPU and software stack, so their ratio between the same two sessions measures the
environment (driver, torch, clocks): the control series of a difference-in-
differences design, as Chromium's perf dashboards use to tell bot changes from code
changes.

Choice of control (one per finding, named)
------------------------------------------
For each step of the code under test, every baseline measured in *both* of its sessions (the same
partition and metric: its points at ``from_session`` and ``to_session``, whatever
steps the baseline's own series took) is a candidate.  The finding's control is the
*medoid* over the sweep: the baseline whose median log ratio across the workloads is
closest to the median over all candidates (ties: lower noise, more workloads, the
name).  It is one provider for every workload of the sweep, so ``control_change``
is that provider's own change.  The median keeps one baseline that moved for its own
reasons from being the control when others did not.

Only where the partition has no baseline at all (in any session), a subject latency
step falls back to the GPU-wide control: the median log ratio of every baseline step
on that GPU and metric between the same version labels on the same two days (at least
:data:`MIN_GPU_SERIES` series), named ``gpu:<n> baselines``, its noise the median step
noise times ``1.2533 / sqrt(n)`` (the standard error of a median).

A step whose baseline code changed (:mod:`kiana.stats.codechanges`) has no control:
both are set aside, and the evidence says so.  Memory has controls for the record,
but a baseline's memory does not move with the machine, so they never explain a
subject's memory change (:mod:`kiana.stats.sweeps`).

Adjusted change
---------------
    adjusted log ratio = subject log ratio - control log ratio
    adjusted noise     = sqrt(subject per-workload noise^2 + control per-workload noise^2
                              + subject contrast sigma^2 + control contrast sigma^2)

(the machine cancels, the two providers' own sitting offsets do not: the contrast sigma
is a provider's own part of its sitting offset, measured from differences between
providers of one sitting, :mod:`kiana.stats.calibration`; the sitting sigma, which
also holds the machine's common move, enters the raw change and the control's own
change, ``control_offset_var``, never the adjusted one).
:func:`control_moved` is the one test of "the control moved with it", used by steps,
findings and outliers alike.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from kiana.stats.options import JudgeOptions

#: Adds the calibrated sigmas to a frame (:func:`kiana.stats.calibration.sigmas`, bound).
Sigmas = Callable[[pl.DataFrame], pl.DataFrame]

STEP_KEYS: tuple[str, ...] = ("partition_id", "metric", "from_session", "to_session")
GPU_KEYS: tuple[str, ...] = ("gpu", "metric", "from_version", "to_version", "_from_day", "_to_day")
MIN_GPU_SERIES = 3
_CONTROL = (
    "control_provider",
    "control_log_ratio",
    "control_noise",
    "control_offset_var",
    "control_contrast_var",
    "control_q2",
)


def control_moved(
    control: pl.Expr, noise: pl.Expr, toward: pl.Expr, options: JudgeOptions
) -> pl.Expr:
    """The control moved with a move ``toward`` (log ratios): the same direction, at least
    half as far, and at least ``separation / 2`` of its own noise (when known)."""
    same_way = (control > 0) == (toward > 0)
    far = control.abs() >= toward.abs() / 2.0
    beyond = (control.abs() >= options.separation / 2.0 * noise) | noise.is_null()
    return (same_way & far & beyond & (control != 0)).fill_null(False)


def candidates(steps: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """Every baseline measured in both sessions of a subject step, per workload: the
    subject step's keys, ``control_provider``, ``control_log_ratio`` and the control's
    measured variance ``control_q2`` and ``control_source``."""
    base = points.filter(~pl.col("is_subject")).select(
        "partition_id", "metric", "provider", "session", "log_median", "measured", "noise_source"
    )
    subject = steps.filter(pl.col("is_subject") & ~pl.col("benchmark_changed")).select(
        *STEP_KEYS, "kernel", "pass", "gpu", pl.col("provider").alias("_subject"), "workload",
        *(["_group"] if "_group" in steps.columns else []),
    )  # fmt: skip
    ends = subject.join(
        base.rename({"session": "from_session", "provider": "control_provider"}),
        on=["partition_id", "metric", "from_session"],
        maintain_order="left_right",
    ).join(
        base.rename({"session": "to_session", "provider": "control_provider"}),
        on=["partition_id", "metric", "to_session", "control_provider"],
        suffix="_to",
        maintain_order="left",
    )
    worse = (
        pl.when(pl.col("noise_source") == "single")
        .then(pl.col("noise_source"))
        .otherwise(pl.col("noise_source_to"))
    )
    return ends.select(
        *STEP_KEYS, "kernel", "pass", "gpu", "_subject", "workload", "control_provider",
        *(["_group"] if "_group" in ends.columns else []),
        (pl.col("log_median_to") - pl.col("log_median")).alias("control_log_ratio"),
        (pl.col("measured").pow(2) + pl.col("measured_to").pow(2)).alias("control_q2"),
        worse.alias("control_source"),
    ).filter(pl.col("control_log_ratio").is_not_null())  # fmt: skip


def medoid(cands: pl.DataFrame) -> pl.DataFrame:
    """The one control provider per subject sweep (module docstring)."""
    sweep = medoid_keys()
    per = cands.group_by(*sweep, "control_provider").agg(
        pl.col("control_log_ratio").median().alias("_m"),
        pl.col("control_noise").mean().alias("_noise"),
        pl.len().alias("_n"),
    )
    per = per.with_columns((pl.col("_m") - pl.col("_m").median().over(sweep)).abs().alias("_dist"))
    return (
        per.sort([*sweep, "_dist", "_noise", "_n", "control_provider"],
                 descending=[False] * len(sweep) + [False, False, True, False], nulls_last=True)
        .group_by(sweep, maintain_order=True)
        .agg(pl.col("control_provider").first())
    )  # fmt: skip


def gpu_controls(steps: pl.DataFrame) -> pl.DataFrame:
    """The GPU-wide fallback per GPU, metric, version pair and days."""
    base = steps.filter(
        ~pl.col("is_subject") & pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed")
    )
    return (
        base.group_by(GPU_KEYS)
        .agg(
            pl.len().alias("_n"),
            pl.col("log_ratio").median().alias("gpu_log_ratio"),
            pl.col("noise").median().alias("_noise"),
        )
        .filter(pl.col("_n") >= MIN_GPU_SERIES)
        .with_columns(
            (pl.lit("gpu:") + pl.col("_n").cast(pl.String) + pl.lit(" baselines")).alias("gpu_provider"),
            (pl.col("_noise") * 1.2533 / pl.col("_n").cast(pl.Float64).sqrt()).alias("gpu_noise"),
        )
        .drop("_n", "_noise")
    )  # fmt: skip


def with_days(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (steps) with the days of its sessions, ``_from_day`` and ``_to_day``
    (what :func:`gpu_controls` groups by beside the GPU, metric and versions)."""
    return frame.with_columns(
        pl.col("from_session").str.slice(0, 10).alias("_from_day"),
        pl.col("to_session").str.slice(0, 10).alias("_to_day"),
    )


def attach_controls(
    steps: pl.DataFrame, points: pl.DataFrame, sigmas: Sigmas, options: JudgeOptions,
    gpu: pl.DataFrame | None = None,
) -> pl.DataFrame:  # fmt: skip
    """Add the control columns to subject steps (null elsewhere): ``control_provider``,
    ``control_log_ratio``, ``control_noise`` (its per-workload part),
    ``control_offset_var`` (the variance all its workloads share: its sitting offset,
    or the GPU-wide control's own), ``control_contrast_var`` (its own part of it: its
    contrast sigma squared), ``control_full_noise``, ``control_change``,
    ``control_severity``, ``adjusted_log_ratio``, ``adjusted_wnoise`` (per workload),
    ``adjusted_offset_var`` (shared), ``adjusted_noise``, ``adjusted_change`` and
    ``adjusted_severity`` (module docstring).  ``steps``
    carry ``is_subject``, ``log_ratio``, ``wnoise``, ``noise``, ``sitting_sigma`` and
    ``benchmark_changed``; ``sigmas`` adds the calibrated sigmas to a frame.  ``gpu``:
    the GPU-wide fallback (:func:`gpu_controls`) of every step of the GPUs of ``steps``,
    when ``steps`` are some of their kernels only (the judge's batches,
    :mod:`kiana.stats.batches`); by default measured on ``steps``.  Nothing else reads
    another kernel: a step's candidates are its partition's baselines, the medoid is
    chosen within one kernel's sweep."""
    cands = candidates(steps, points)
    cands = sigmas(
        cands.rename({"control_source": "noise_source"}).with_columns(
            pl.col("control_provider").alias("provider")
        )
    ).with_columns(
        (pl.col("control_q2") + pl.col("workload_sigma").pow(2)).sqrt().alias("control_noise")
    )
    cands = cands.with_columns(
        pl.col("sitting_sigma").pow(2).alias("control_offset_var"),
        pl.col("contrast_sigma").pow(2).alias("control_contrast_var"),
    )
    chosen = cands.join(medoid(cands), on=[*medoid_keys(), "control_provider"], how="semi")
    chosen = chosen.select(*STEP_KEYS, pl.col("_subject").alias("provider"), "workload", *_CONTROL)
    frame = steps.join(
        chosen, on=[*STEP_KEYS, "provider", "workload"], how="left", maintain_order="left"
    )
    frame = _gpu_fallback(frame, points, gpu)
    on = pl.col("is_subject") & pl.col("control_log_ratio").is_not_null()
    frame = (
        frame.with_columns(
            *(pl.when(on).then(pl.col(c)).otherwise(None).alias(c) for c in _CONTROL)
        )
        .with_columns(
            (pl.col("control_noise").pow(2) + pl.col("control_offset_var"))
            .sqrt()
            .alias("control_full_noise"),
            pl.when(on)
            .then(pl.col("log_ratio") - pl.col("control_log_ratio"))
            .alias("adjusted_log_ratio"),
            pl.when(on)
            .then((pl.col("wnoise").pow(2) + pl.col("control_noise").pow(2)).sqrt())
            .alias("adjusted_wnoise"),
            pl.when(on)
            .then(pl.col("contrast_sigma").pow(2) + pl.col("control_contrast_var"))
            .alias("adjusted_offset_var"),
        )
        .with_columns(
            (pl.col("adjusted_wnoise").pow(2) + pl.col("adjusted_offset_var"))
            .sqrt()
            .alias("adjusted_noise")
        )
    )
    return frame.with_columns(
        (pl.col("control_log_ratio").exp() - 1.0).alias("control_change"),
        _ratio("control_log_ratio", "control_full_noise").alias("control_severity"),
        (pl.col("adjusted_log_ratio").exp() - 1.0).alias("adjusted_change"),
        _ratio("adjusted_log_ratio", "adjusted_noise").alias("adjusted_severity"),
    ).drop("_from_day", "_to_day", "_gpu_var")  # fmt: skip


def medoid_keys() -> list[str]:
    return ["kernel", "pass", "gpu", "metric", "_subject", "from_session", "to_session"]


def _ratio(a: str, b: str) -> pl.Expr:
    return pl.when(pl.col(b) > 0).then(pl.col(a) / pl.col(b)).otherwise(None)


def _gpu_fallback(
    frame: pl.DataFrame, points: pl.DataFrame, gpu: pl.DataFrame | None
) -> pl.DataFrame:
    """Fill the control of subject latency steps whose partition has no baseline at all
    (and whose benchmark did not change) with the GPU-wide control (``gpu``, by default
    that of ``frame``)."""
    with_base = points.filter(~pl.col("is_subject")).select("partition_id").unique()
    frame = with_days(frame).with_columns(
        pl.col("partition_id").is_in(with_base["partition_id"].implode()).alias("_has_base"),
    )
    if gpu is None:
        gpu = gpu_controls(frame)
    frame = frame.join(gpu, on=list(GPU_KEYS), how="left", maintain_order="left")
    use = (
        pl.col("is_subject")
        & ~pl.col("_has_base")
        & ~pl.col("benchmark_changed")
        & (pl.col("metric") == "latency")
        & pl.col("gpu_provider").is_not_null()
    )
    return frame.with_columns(
        pl.when(use).then(pl.col("gpu_provider")).otherwise(pl.col("control_provider")).alias("control_provider"),
        pl.when(use).then(pl.col("gpu_log_ratio")).otherwise(pl.col("control_log_ratio")).alias("control_log_ratio"),
        # One GPU-wide value for every workload: no per-workload part (a tiny one keeps
        # the pooling's weights finite), its noise is shared.
        pl.when(use).then(pl.lit(1e-9)).otherwise(pl.col("control_noise")).alias("control_noise"),
        pl.when(use).then(pl.col("gpu_noise").pow(2)).otherwise(pl.col("control_offset_var")).alias("control_offset_var"),
        pl.when(use).then(pl.col("gpu_noise").pow(2)).otherwise(pl.col("control_contrast_var")).alias("control_contrast_var"),
        pl.when(use).then(pl.lit(0.0)).otherwise(pl.col("control_q2")).alias("control_q2"),
        pl.when(use).then(pl.col("gpu_noise").pow(2)).otherwise(0.0).alias("_gpu_var"),
    ).drop("gpu_provider", "gpu_log_ratio", "gpu_noise", "_has_base")  # fmt: skip
