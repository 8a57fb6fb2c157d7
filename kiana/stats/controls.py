"""Same-run controls: did the kernel move, or the machine?

Liger's providers (``liger``, ``liger_*``) are the code under test.  The baselines
of the same partition (``huggingface``, ``torch``, ``torch_compile``, ...) ran in
the same benchmark session, on the same GPU and software stack, so their ratio
between the same two versions measures the environment (driver, torch, clocks).
This is the classic "control series" of difference-in-differences designs; in
benchmarking it is how e.g. Chromium's perf dashboards separate bot changes from
code changes.

Choice of control (deterministic, named)
----------------------------------------
Among the baselines with a step between the same two sessions in the partition and
metric (a session is one sitting of every provider, :mod:`kiana.stats.sessions`), kiana takes the *medoid*: the baseline whose log ratio is closest to the
median log ratio of all of them; ties go to the lower noise, then more runs, then
the name.  The median makes the control robust to one baseline that moved for its
own reasons (a ``huggingface`` code change), and a medoid is a real provider whose
noise we know and can name.

When a partition has no baseline at all, the control falls back to the GPU-wide
median log ratio of every baseline step on that GPU and metric between the same
version labels on the same two days (at least three series), named ``gpu:<n> baselines``; its noise is the median step
noise of those series times ``1.2533 / sqrt(n)`` (standard error of a median).

Adjusted change
---------------
    adjusted ratio  = liger ratio / control ratio,   adjusted_change = ratio - 1
    adjusted noise  = sqrt(noise_liger^2 + noise_control^2)

and the adjusted change gets the same two-gate verdict as the raw one.  A Liger step
flagged raw becomes ``drift`` only when the control explains it: the adjusted change
is not flagged the same way *and* the control itself moved in the same direction by
at least half the separation in its own noise units (or, without noise information,
by at least the threshold).  A control that did not move leaves the raw verdict.
"""

from __future__ import annotations

import polars as pl

from kiana.stats.options import JudgeOptions
from kiana.stats.steps import raw_verdict
from kiana.vocabulary import liger_expr

STEP_KEYS: tuple[str, ...] = ("partition_id", "metric", "from_session", "to_session")
GPU_KEYS: tuple[str, ...] = ("gpu", "metric", "from_version", "to_version", "_from_day", "_to_day")
MIN_GPU_SERIES = 3


def mark_liger(steps: pl.DataFrame) -> pl.DataFrame:
    return steps.with_columns(
        liger_expr().alias("is_liger"),
        pl.col("from_session").str.slice(0, 10).alias("_from_day"),
        pl.col("to_session").str.slice(0, 10).alias("_to_day"),
    )


def choose_controls(steps: pl.DataFrame) -> pl.DataFrame:
    """One control per partition, metric and version pair (the medoid baseline)."""
    base = steps.filter(~pl.col("is_liger") & pl.col("log_ratio").is_not_null())
    return (
        base.with_columns(
            (pl.col("log_ratio") - pl.col("log_ratio").median().over(STEP_KEYS))
            .abs()
            .alias("_dist"),
            (pl.col("from_n_runs") + pl.col("to_n_runs")).alias("_runs"),
        )
        .sort(
            [*STEP_KEYS, "_dist", "noise", "_runs", "provider"],
            descending=[False] * 5 + [False, True, False],
            nulls_last=True,
        )
        .group_by(STEP_KEYS, maintain_order=True)
        .agg(
            pl.col("provider").first().alias("control_provider"),
            pl.col("log_ratio").first().alias("control_log_ratio"),
            pl.col("noise").first().alias("control_noise"),
        )
    )


def gpu_controls(steps: pl.DataFrame) -> pl.DataFrame:
    """The GPU-wide fallback control per GPU, metric and version pair."""
    base = steps.filter(~pl.col("is_liger") & pl.col("log_ratio").is_not_null())
    return (
        base.group_by(GPU_KEYS)
        .agg(
            pl.len().alias("_n"),
            pl.col("log_ratio").median().alias("gpu_log_ratio"),
            pl.col("noise").median().alias("_noise"),
        )
        .filter(pl.col("_n") >= MIN_GPU_SERIES)
        .with_columns(
            (pl.lit("gpu:") + pl.col("_n").cast(pl.String) + pl.lit(" baselines")).alias(
                "gpu_provider"
            ),
            (pl.col("_noise") * 1.2533 / pl.col("_n").cast(pl.Float64).sqrt()).alias("gpu_noise"),
        )
        .drop("_n", "_noise")
    )


def attach_controls(steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """Add ``raw_verdict``, ``control_provider``, ``control_change``,
    ``adjusted_change``, ``adjusted_severity`` and ``adjusted_verdict`` (Liger steps
    only; null for baselines and when no control exists)."""
    steps = mark_liger(steps)
    partition = choose_controls(steps)
    gpu = gpu_controls(steps)
    joined = steps.join(partition, on=list(STEP_KEYS), how="left", maintain_order="left").join(
        gpu, on=list(GPU_KEYS), how="left", maintain_order="left"
    )
    use_gpu = pl.col("control_provider").is_null() & pl.col("gpu_provider").is_not_null()
    joined = joined.with_columns(
        pl.when(use_gpu)
        .then(pl.col("gpu_provider"))
        .otherwise(pl.col("control_provider"))
        .alias("control_provider"),
        pl.when(use_gpu)
        .then(pl.col("gpu_log_ratio"))
        .otherwise(pl.col("control_log_ratio"))
        .alias("control_log_ratio"),
        pl.when(use_gpu)
        .then(pl.col("gpu_noise"))
        .otherwise(pl.col("control_noise"))
        .alias("control_noise"),
    ).drop("gpu_provider", "gpu_log_ratio", "gpu_noise")
    on = pl.col("is_liger") & pl.col("control_log_ratio").is_not_null()
    joined = joined.with_columns(
        pl.when(on).then(pl.col("control_provider")).otherwise(None).alias("control_provider"),
        pl.when(on)
        .then(pl.col("log_ratio") - pl.col("control_log_ratio"))
        .otherwise(None)
        .alias("adjusted_log_ratio"),
        pl.when(on)
        .then((pl.col("noise").pow(2) + pl.col("control_noise").pow(2)).sqrt())
        .otherwise(None)
        .alias("adjusted_noise"),
        pl.when(on)
        .then(pl.col("control_log_ratio").exp() - 1.0)
        .otherwise(None)
        .alias("control_change"),
        pl.when(on & (pl.col("control_noise") > 0))
        .then(pl.col("control_log_ratio") / pl.col("control_noise"))
        .otherwise(None)
        .alias("control_severity"),
    )
    return joined.with_columns(
        raw_verdict("log_ratio", "noise", options).alias("raw_verdict"),
        (pl.col("adjusted_log_ratio").exp() - 1.0).alias("adjusted_change"),
        pl.when(pl.col("adjusted_noise") > 0)
        .then(pl.col("adjusted_log_ratio") / pl.col("adjusted_noise"))
        .otherwise(None)
        .alias("adjusted_severity"),
        pl.when(pl.col("adjusted_log_ratio").is_not_null())
        .then(raw_verdict("adjusted_log_ratio", "adjusted_noise", options))
        .otherwise(None)
        .alias("adjusted_verdict"),
    ).drop("_from_day", "_to_day")
