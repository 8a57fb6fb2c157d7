"""The samples of the calibration: what the data say about noise when nothing changed.

:func:`workload_samples` and :func:`sitting_samples` turn steps into the samples the
two-groups fit of :mod:`kiana.stats.nullfit` reads (``x``, ``q2``, ``c``,
``may_change`` and their cell keys), as :mod:`kiana.stats.calibration` describes; each
carries its sitting group (``_group``, :mod:`kiana.stats.states`).
"""

from __future__ import annotations

import polars as pl

from kiana.stats.states import GROUP, GROUP_SEPARATOR

#: Steps a one-workload series needs before its own history is calibration evidence.
MIN_HISTORY = 4


def sampling_expr() -> pl.Expr:
    """``single`` for a step with a one-sample side (noise source ``single``)."""
    return (
        pl.when(pl.col("noise_source") == "single")
        .then(pl.lit("single"))
        .otherwise(pl.lit("median"))
    )


def workload_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Differences of consecutive workloads of one sweep (the offset and any sweep-wide
    change cancel), ``c = 2``, by sampling (``single`` when a side of either step is one
    sample); for a sweep of one workload, the differences of its consecutive steps (the
    series' own history, from :data:`MIN_HISTORY` steps on), ``c = 3``, marked
    ``history`` (they span two sittings, so they inform the scale, not a sitting's
    state).  ``steps`` carry ``_group``."""
    sweep = ["kernel", "pass", "provider", "gpu", "metric", "from_session", "to_session"]
    usable = steps.filter(pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed"))
    ordered = usable.sort([*sweep, "workload"]).with_columns(
        (pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2)).alias("_q2"),
        sampling_expr().alias("_sampling"),
    )
    nxt = [
        pl.col(c).shift(-1).over(sweep).alias(f"_n{c}") for c in ("log_ratio", "_q2", "_sampling")
    ]
    paired = ordered.with_columns(nxt).filter(pl.col("_nlog_ratio").is_not_null())
    single = (pl.col("_sampling") == "single") | (pl.col("_n_sampling") == "single")
    # A sweep of one workload has no neighbour: its series' own history is the evidence,
    # once the series has MIN_HISTORY steps (fewer would judge a step by itself): the
    # difference of consecutive steps (a second difference of its levels, variance 3
    # steps' worth when the sessions are independent; a steady creep cancels, a level
    # shift or an outlier is the alternative).
    series = ["partition_id", "provider", "metric"]
    history = (pl.len().over(sweep) == 1) & (pl.len().over(series) >= MIN_HISTORY)
    lone = (
        ordered.filter(history)
        .sort(*series, "from_session")
        .with_columns(
            pl.col("log_ratio").shift(1).over(series).alias("_prev"),
            pl.col("_q2").shift(1).over(series).alias("_prev_q2"),
        )
    )
    alone = lone.filter(pl.col("_prev").is_not_null()).select(
        "_group", "gpu", "metric", pl.col("_sampling").alias("sampling"), "kernel", "provider",
        (pl.col("log_ratio") - pl.col("_prev")).alias("x"), (pl.col("_q2") + pl.col("_prev_q2")).alias("q2"),
        pl.lit(3.0).alias("c"), pl.lit(True).alias("may_change"), pl.lit(True).alias("history"),
    )  # fmt: skip
    pairs = paired.select(
        "_group", "gpu", "metric",
        pl.when(single).then(pl.lit("single")).otherwise(pl.lit("median")).alias("sampling"),
        "kernel", "provider",
        (pl.col("log_ratio") - pl.col("_nlog_ratio")).alias("x"),
        (pl.col("_q2") + pl.col("_n_q2")).alias("q2"),
        pl.lit(2.0).alias("c"),
        pl.lit(True).alias("may_change"),
        pl.lit(False).alias("history"),
    )  # fmt: skip
    return pl.concat([pairs, alone], how="vertical_relaxed")


#: The keys of one provider's sweep of a step within its sitting group.
SITTING: tuple[str, ...] = (
    "_group",
    "kernel",
    "pass",
    "gpu",
    "metric",
    "from_session",
    "to_session",
)


def _usable(steps: pl.DataFrame) -> pl.DataFrame:
    """The steps a sitting sample may read (a log ratio, the benchmark unchanged), with
    ``_q2``: the known variance of one step (measured sides and workload component)."""
    q2 = pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2) + pl.col("workload_var")
    return steps.filter(pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed")).select(
        *SITTING, "partition_id", "provider", "is_subject", "aa", "log_ratio", q2.alias("_q2")
    )


def _means(frame: pl.DataFrame, *keys: str) -> pl.DataFrame:
    """Each sweep's mean log ratio ``x`` and its known variance ``q2`` (per sweep of
    :data:`SITTING`, ``provider`` and ``keys``)."""
    return frame.group_by(*SITTING, "provider", *keys, maintain_order=True).agg(
        pl.col("log_ratio").mean().alias("x"),
        (pl.col("_q2").sum() / pl.len().pow(2)).alias("q2"),
    )


def sitting_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Baseline sweep means, baseline-pair differences and A/A sweep means, each ``c =
    1`` (see :mod:`kiana.stats.calibration`; A/A never a change): nothing of the subject's.  ``steps`` carry
    ``_group`` and ``workload_var`` (the workload component's variance, which enters
    each mean's known part)."""
    base = _usable(steps)
    baselines = base.filter(~pl.col("is_subject") & ~pl.col("aa"))
    pairs = baselines.join(
        baselines, on=[*SITTING, "partition_id"], suffix="_b", maintain_order="left_right"
    ).filter(pl.col("provider") < pl.col("provider_b"))
    between = pairs.group_by(*SITTING, "provider", "provider_b", maintain_order=True).agg(
        (pl.col("log_ratio") - pl.col("log_ratio_b")).mean().alias("x"),
        ((pl.col("_q2") + pl.col("_q2_b")).sum() / pl.len().pow(2)).alias("q2"),
    )

    columns = ["_group", "gpu", "metric", "kernel", "x", "q2", "c", "may_change"]
    parts = [
        (between, 1.0, True),
        (_means(baselines), 1.0, True),
        (_means(base.filter(pl.col("aa"))), 1.0, False),
    ]
    return pl.concat(
        [
            part.with_columns(pl.lit(c).alias("c"), pl.lit(change).alias("may_change")).select(
                columns
            )
            for part, c, change in parts
        ],
        how="vertical_relaxed",
    )


def contrast_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Contrasts within a sitting: for every pair of providers of one step (two
    baselines; any two providers of an A/A pair, whose code did not change), the mean
    over their common workloads of the difference of their log ratios.  The machine's
    move, shared by every provider of the sitting, cancels in it; what is left is the
    two providers' own offsets, ``c = 2`` (:mod:`kiana.stats.calibration`).  Baseline
    pairs may hold a baseline's own change (the alternative), A/A pairs never.
    ``steps`` carry ``_group`` and ``workload_var``."""
    usable = _usable(steps).filter(~pl.col("is_subject") | pl.col("aa"))
    pairs = usable.join(
        usable, on=[*SITTING, "partition_id", "aa"], suffix="_b", maintain_order="left_right"
    ).filter((pl.col("provider") < pl.col("provider_b")) & (pl.col("aa") | ~pl.col("is_subject_b")))
    between = pairs.group_by(*SITTING, "aa", "provider", "provider_b", maintain_order=True).agg(
        (pl.col("log_ratio") - pl.col("log_ratio_b")).mean().alias("x"),
        ((pl.col("_q2") + pl.col("_q2_b")).sum() / pl.len().pow(2)).alias("q2"),
    )
    return between.select(
        "_group", "gpu", "metric", "kernel", "x", "q2", pl.lit(2.0).alias("c"),
        (~pl.col("aa")).alias("may_change"),
    )  # fmt: skip


#: Where a release step's keys sit among the parts of a sitting group
#: (:data:`kiana.stats.states.GROUP`).
RELEASE_PARTS: tuple[int, ...] = tuple(GROUP.index(c) for c in ("gpu", "metric", "from_version", "to_version"))  # fmt: skip
#: Baseline sweeps of other providers a GPU's release step needs before their median is
#: taken for the machine's move in it (:func:`local_samples`).
MIN_STEP_SWEEPS = 3


def local_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Baseline and A/A sweep means less the machine's move in their GPU's release step,
    ``c = 1``: what a sitting's offset holds besides the move every provider of the GPU
    shares (the sitting component without its common part at the GPU's level).

    The move of a release step (its ``gpu``, ``metric``, ``from_version`` and
    ``to_version``) is taken, for each provider, as the median of the baseline sweep
    means of the *other* providers in that step (every kernel and pass of it), where
    there are at least :data:`MIN_STEP_SWEEPS` of them; a sweep of a step with fewer
    gives no sample.  Other providers, because a provider's own offset may be shared by
    every kernel of a session (one process, one placement): a median that held it would
    take the provider's own part for the machine's.  The median, not the mean: a
    baseline's own change or a shifted sitting among them does not move it (the robust
    location of a contaminated sample; Huber & Ronchetti 2009, "Robust Statistics",
    ch. 3).  What is left holds the provider's own offset, the part its kernel's sitting
    shares and the median's own error (the first two cancel in a control-adjusted
    change, as the common move does; counting the median as exact, ``c = 1``, errs
    towards more noise): it serves the adjusted changes of a GPU with too few contrasts
    to fit the provider's own part (:func:`kiana.stats.calibration.with_contrast`).
    ``steps`` carry ``_group`` and ``workload_var``."""
    means = _means(_usable(steps).filter(~pl.col("is_subject") | pl.col("aa")), "aa")
    # The release step: the sitting group's GPU, metric and versions (its kernel, origins
    # and days left out; :func:`kiana.stats.states.group_key`).
    parts = pl.col("_group").str.split(GROUP_SEPARATOR)
    release = parts.list.gather(list(RELEASE_PARTS)).list.join(GROUP_SEPARATOR)
    keyed = means.with_columns(release.alias("_release"))
    sources = keyed.filter(~pl.col("aa")).select("_release", pl.col("provider").alias("_other"),
                                                 pl.col("x").alias("_x"))  # fmt: skip
    centers = (
        keyed.select("_release", "provider").unique()
        .join(sources, on="_release", how="inner")
        .filter(pl.col("_other") != pl.col("provider"))
        .group_by("_release", "provider")
        .agg(pl.col("_x").median().alias("_center"), pl.len().alias("_n"))
        .filter(pl.col("_n") >= MIN_STEP_SWEEPS)
    )  # fmt: skip
    return (
        keyed.join(centers, on=["_release", "provider"], how="inner", maintain_order="left")
        .select(
            "_group", "gpu", "metric", "kernel", (pl.col("x") - pl.col("_center")).alias("x"),
            "q2", pl.lit(1.0).alias("c"), (~pl.col("aa")).alias("may_change"),
        )
    )  # fmt: skip
