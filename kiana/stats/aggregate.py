"""The numbers of a sweep that the rules of :mod:`kiana.stats.sweeps` read.

:func:`aggregate` turns the steps of one finding (a kernel, pass, provider, GPU and
metric between two sessions) into one row: the pooled estimates ``raw_*``, ``adj_*``
and ``ctl_*`` (:mod:`kiana.stats.pooling`), the counts and names of the workloads that
moved up or down on each basis, the farthest steps, the lone workloads, the noise the
finding rests on, and what it knows about its benchmark.  Steps into or out of an
outlier session are no evidence: their log ratios are left out of every estimate.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.controls import control_moved
from kiana.stats.nullfit import GRID, equivalent_factor
from kiana.stats.options import JudgeOptions
from kiana.stats.pooling import KEYS, deviation, lone_beyond, lone_cut, pool
from kiana.vocabulary import source_rank


def lone_basis() -> tuple[pl.Expr, pl.Expr]:
    """The log ratio and per-workload noise a workload is judged on against the rest of
    its sweep (the lone rule here, one-workload outliers in :mod:`kiana.stats.outliers`):
    its change against its control where it has one, else its own change."""
    has_adj = pl.col("adjusted_log_ratio").is_not_null()
    return (
        pl.when(has_adj).then(pl.col("adjusted_log_ratio")).otherwise(pl.col("log_ratio")),
        pl.when(has_adj).then(pl.col("adjusted_wnoise")).otherwise(pl.col("wnoise")),
    )


def _basis_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Outliers out; ``_adj_y`` and the lone marks."""
    if "outlier" not in frame.columns:
        frame = frame.with_columns(pl.lit(False).alias("outlier"))
    cleared = ("log_ratio", "adjusted_log_ratio", "control_log_ratio")
    frame = frame.with_columns(
        pl.when(pl.col("outlier")).then(None).otherwise(pl.col(c)).alias(c) for c in cleared
    )
    has_adj = pl.col("adjusted_log_ratio").is_not_null()
    y, s = lone_basis()
    return frame.with_columns(
        y.alias("_y"),
        s.alias("_s"),
        pl.when(has_adj).then(pl.col("adjusted_noise")).otherwise(pl.col("noise")).alias("_full"),
        has_adj.alias("_has_adj"),
    )  # fmt: skip


def _moves(basis: str, y: pl.Expr, q2: pl.Expr) -> list[pl.Expr]:
    """Counts, names and extremes of the workloads' log ratios ``y`` on one basis."""
    valid = y.is_not_null()
    absmax = y.filter(valid).sort_by(y.filter(valid).abs()).last()
    return [
        (y > 0).sum().cast(pl.Int64).alias(f"_{basis}_up"),
        (y < 0).sum().cast(pl.Int64).alias(f"_{basis}_down"),
        pl.col("workload").filter(y > 0).sort().str.join(", ").alias(f"_{basis}_up_names"),
        pl.col("workload").filter(y < 0).sort().str.join(", ").alias(f"_{basis}_down_names"),
        y.max().alias(f"_{basis}_max"),
        y.min().alias(f"_{basis}_min"),
        absmax.alias(f"_{basis}_absmax"),
        (q2.filter(valid).mean() / valid.sum()).alias(f"_{basis}_measured2"),
    ]


def _lone_columns() -> list[pl.Expr]:
    """The lone workloads of the direction of the one farthest off the rest of its sweep
    (its deviation's z)."""
    marked = pl.col("_lone")
    y = pl.when(pl.col("_noisy_control")).then(pl.col("log_ratio")).otherwise(pl.col("_y"))
    # The workload farthest off the rest of its sweep, in its deviation's standard errors:
    # the rest's mean holds every other lone workload, so one far workload drags each of
    # its siblings the other way, and the largest change can be such a sibling's.
    z = (pl.col("_dev") / pl.col("_dev_se")).abs()
    top = z.filter(marked).max()
    pick = marked & (z == top)
    direction = y.filter(pick).first() > 0
    same = marked & ((y > 0) == direction)
    # A lone workload is a minority of its sweep: at most max(1, (k - 1) // 2) of the k
    # workloads it was measured against (a log ratio and a noise), and k is at least
    # three: of two, either may be the one that left the other.
    k = (pl.col("_y").is_not_null() & (pl.col("_s_lone") > 0)).sum()
    few = (k >= 3) & (same.sum() <= pl.max_horizontal(pl.lit(1), (k - 1) // 2))
    return [
        pl.when(few).then(same.sum()).otherwise(0).cast(pl.Int64).alias("_lone_n"),
        pl.col("workload").filter(same).sort().str.join(", ").alias("_lone_names"),
        pl.col("_dev").filter(pick).first().alias("_lone_mu"),
        pl.col("_dev_se").filter(pick).first().alias("_lone_se"),
        y.filter(pick).first().alias("_lone_own"),
        (pl.col("_has_adj") & ~pl.col("_noisy_control"))
        .filter(pick)
        .first()
        .alias("_lone_adjusted"),
        pl.col("_noisy_control").filter(pick).first().alias("_lone_noisy_control"),
    ]


def _noise_columns() -> list[pl.Expr]:
    return [
        pl.col("noise_source").sort_by(source_rank("noise_source")).last().alias("noise_source"),
        pl.col("workload_sigma").median().alias("workload_noise"),
        pl.col("workload_samples").min().alias("workload_noise_samples"),
        pl.col("workload_tail").min().alias("workload_noise_tail"),
        pl.col("sitting_sigma").median().alias("sitting_noise"),
        pl.col("sitting_samples").min().alias("sitting_noise_samples"),
        pl.col("sitting_tail").min().alias("sitting_noise_tail"),
        ((pl.max_horizontal("workload_scale", "sitting_scale") >= GRID[-1])
         | pl.col("sitting_link_top")).any().alias("noise_bounded"),
        pl.col("sitting_link_top").any().alias("_link_top"),
        (pl.col("noise_source") == "single").sum().cast(pl.Int64).alias("single_samples"),
        ((pl.col("from_n_runs") + pl.col("to_n_runs")) / 2.0).median().alias("_runs"),
    ]  # fmt: skip


def _lone_noise(frame: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """``_s_lone``: the per-workload noise at the lone rule's deeper tail.  The
    calibrated sigmas match a heavy tail at ``separation``; the lone rule tests one
    workload of ``k`` at the Bonferroni-corrected :func:`kiana.stats.pooling.lone_z`,
    where a Student t is heavier still, so the noise is scaled by ``equivalent_factor(nu,
    z_k) / equivalent_factor(nu, separation)``."""
    k = pl.col("_y").is_not_null().sum().over(KEYS).clip(1, 256)
    pairs = (
        frame.select(pl.col("workload_tail").alias("tail"), k.alias("k"))
        .unique()
        .drop_nulls("tail")
    )
    ratios = {
        (float(t), int(n)): equivalent_factor(float(t), lone_cut(int(n), options.separation))
        / equivalent_factor(float(t), options.separation)
        for t, n in pairs.iter_rows()
    }
    table = pl.DataFrame(
        {
            "tail": [t for t, _ in ratios],
            "k": [n for _, n in ratios],
            "_ratio": list(ratios.values()),
        },
        schema={"tail": pl.Float64, "k": pl.Int64, "_ratio": pl.Float64},
    )
    framed = frame.with_columns(pl.col("workload_tail").alias("tail"), k.cast(pl.Int64).alias("k"))
    joined = framed.join(table, on=["tail", "k"], how="left", maintain_order="left")
    return joined.with_columns((pl.col("_s") * pl.col("_ratio").fill_null(1.0)).alias("_s_lone")).drop(
        "tail", "k", "_ratio"
    )  # fmt: skip


#: A control is too noisy to adjust one workload by when its per-workload noise there is
#: over this many times the subject's own.
NOISY_CONTROL = 2.0


def _deep(noise: pl.Expr) -> pl.Expr:
    """A per-workload noise at the lone rule's deeper tail (as ``_s_lone`` is ``_s``'s)."""
    return noise * pl.col("_s_lone") / pl.col("_s")


def _noisy_control(own: pl.Expr, own_dev: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """A workload lone on the subject's own step, where its control is too noisy to
    adjust by.

    A workload's deviation from the rest of its sweep cancels the sitting's offset that
    every workload shares, so there the control removes nothing and adds its own
    per-workload noise: a +38% workload whose own noise is 1% is 28 standard errors off
    its siblings, but 2.8 against a control measured at 11% (seed 28 of the realistic
    corpora, ``bench/README.md`` round 10).  Where the control's per-workload noise is
    over :data:`NOISY_CONTROL` times the subject's, the own step decides when:

    * it is lone (``own``: the lone rule on the own step, ``own_dev`` its deviation
      from the rest of the sweep);
    * it is off the rest of its sweep by at least ``resolution * threshold`` (9%), what
      the judge promises to resolve: without its control, a finding's size is part of
      its evidence, as the ``gross`` rule's is (on 60 realistic corpora, the two
      unchanged groups this rule flagged without the floor were off by 3.8% and 6.4%,
      the two regressions it found by 24% and 39%);
    * the sitting was calm: its sitting noise, ``separation`` times over, stays under the
      threshold (in shifted sittings one provider's per-workload noise runs heavier than
      its calibrated sigma: round 8);
    * the control's own deviation in that workload did not move with it
      (:func:`kiana.stats.controls.control_moved` of the point estimates, the same way
      and at least half as far): a machine that moved one workload moves every
      provider's, and a control this noisy cannot show that it moved, only how far.
    """
    ctl_dev, _, _ = deviation(pl.col("control_log_ratio"), _deep(pl.col("control_noise")))
    calm = options.separation * pl.col("sitting_sigma") < math.log1p(options.threshold)
    noisy = pl.col("control_noise") > NOISY_CONTROL * pl.col("wnoise")
    large = own_dev.abs() >= math.log1p(options.resolution * options.threshold)
    # The point estimate: a control this noisy cannot show that it moved, only how far.
    moved = control_moved(ctl_dev, pl.lit(None, pl.Float64), own_dev, options)
    return (pl.col("_has_adj") & own & calm & noisy & large & ~moved).fill_null(False)


def _lone_marks(frame: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """Each workload's deviation from the rest of its sweep, and whether it is lone
    (``_lone``) against its control or, where the control is too noisy to adjust by,
    on its own step (``_noisy_control``), with the deviation it is judged by."""
    # Each deviation once, in columns: polars evaluates an expression wherever it appears.
    deviations = {"_adj": (pl.col("_y"), pl.col("_s_lone")),
                  "_own": (pl.col("log_ratio"), _deep(pl.col("wnoise")))}  # fmt: skip
    frame = frame.with_columns(
        expr.alias(f"{basis}_{part}")
        for basis, (y, s) in deviations.items()
        for expr, part in zip(deviation(y, s), ("dev", "se", "k"), strict=True)
    )
    sep, threshold = options.separation, options.threshold
    own_dev, own_se = pl.col("_own_dev"), pl.col("_own_se")
    # Against a control, a workload is lone only when the provider's own step is too: a
    # control that moved alone in one workload is not a change of the subject's.
    own = lone_beyond(pl.col("log_ratio"), own_dev, own_se, pl.col("_own_k"), sep, threshold)
    adjusted = lone_beyond(pl.col("_y"), pl.col("_adj_dev"), pl.col("_adj_se"),
                           pl.col("_adj_k"), sep, threshold)  # fmt: skip
    # And it left the rest: it moved against its control at least as far as the rest of
    # its sweep did (|y| >= |y - dev|).  A workload that stayed while the rest moved is
    # far off the rest too, and the other way.  Tested on the adjusted basis only: on
    # the own step the machine's common move is in the rest's mean.
    adjusted = adjusted & (pl.col("_y").abs() >= (pl.col("_y") - pl.col("_adj_dev")).abs())
    against_control = adjusted & (~pl.col("_has_adj") | own)
    frame = frame.with_columns(
        against_control.alias("_against_control"),
        # Lone on its own step alone: the control was too noisy to adjust by.
        (~against_control & _noisy_control(own, own_dev, options)).alias("_noisy_control"),
    )
    on_own = pl.col("_noisy_control")
    frame = frame.with_columns(
        (pl.col("_against_control") | on_own).alias("_lone"),
        pl.when(on_own).then(own_dev).otherwise(pl.col("_adj_dev")).alias("_dev"),
        pl.when(on_own).then(own_se).otherwise(pl.col("_adj_se")).alias("_dev_se"),
        pl.col("sitting_sigma").pow(2).alias("_raw_offset"),
    ).drop("_against_control", *(f"{b}_{p}" for b in deviations for p in ("dev", "se", "k")))
    return frame


def aggregate(steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """One row per finding (module docstring).

    The control's pooled change ``ctl_mu`` (what ``control_change`` shows and the
    ``drift`` and ``control_alone`` rules test) is the *median* of its workloads' log
    ratios, not their random-effects mean: a baseline's workload that moved for its own
    reasons must not speak for the machine (FLCE forward, A100, 0.2.1 -> 0.4.2: one
    huggingface workload at +9.9% set the mean to +3.1% while the other three moved at
    most 0.5%).  The median's breakdown point is one half, so a minority of workloads
    cannot carry it beyond the range of the others; a Huber M-estimate would need a scale
    of the workloads' scatter, which three to five workloads hardly give (Huber &
    Ronchetti 2009, "Robust Statistics", ch. 3; the median is its limit as the tuning
    constant goes to 0).  Its standard error stays the random-effects one
    (:func:`kiana.stats.pooling.pool`), which the outlier widens through the scatter
    ``tau``: conservative for the median."""
    frame = _lone_marks(_lone_noise(_basis_columns(steps), options), options)
    grouped = frame.group_by(KEYS).agg(
        pl.len().cast(pl.Int64).alias("workloads_total"),
        pl.col("from_origin").first(),
        pl.col("to_origin").first(),
        pl.col("from_observed_at").min(),
        pl.col("to_observed_at").min(),
        pl.col("change").median().alias("median_change"),
        pl.col("log_ratio").median().alias("_median_log"),
        pl.col("adjusted_log_ratio").median().alias("_adj_median_log"),
        pl.col("change").abs().min().alias("_min_abs"),
        pl.col("is_subject").first(),
        pl.col("control_provider").drop_nulls().first().alias("control_provider"),
        pl.col("benchmark_changed").any(),
        pl.col("benchmark_note").drop_nulls().first(),
        pl.col("outlier").sum().cast(pl.Int64).alias("_outliers"),
        pl.col("control_log_ratio").median().alias("_ctl_median"),
        *_moves("raw", pl.col("log_ratio"), pl.col("q2")),
        *_moves("adj", pl.col("adjusted_log_ratio"), pl.col("q2") + pl.col("control_q2")),
        *_lone_columns(),
        *_noise_columns(),
    )
    raw = pool(frame, pl.col("log_ratio"), pl.col("wnoise"), "raw", pl.col("_raw_offset"))
    adj = pool(frame, pl.col("adjusted_log_ratio"), pl.col("adjusted_wnoise"), "adj",
               pl.col("adjusted_offset_var"))  # fmt: skip
    ctl = pool(frame.filter(pl.col("is_subject")), pl.col("control_log_ratio"),
               pl.col("control_noise"), "ctl", pl.col("control_offset_var"))  # fmt: skip
    g = (
        grouped.join(raw, on=KEYS, how="left", nulls_equal=True)
        .join(adj, on=KEYS, how="left", nulls_equal=True)
        .join(ctl, on=KEYS, how="left", nulls_equal=True)
    )
    # The pooled control is the median of its workloads' log ratios (robust_control).
    g = g.with_columns(
        pl.when(pl.col("ctl_mu").is_not_null()).then(pl.col("_ctl_median")).alias("ctl_mu")
    ).drop("_ctl_median")
    all_one_way = (pl.col("_raw_up") == pl.col("workloads_total")) | (
        pl.col("_raw_down") == pl.col("workloads_total")
    )
    return g.with_columns(
        pl.col("raw_k").fill_null(0).cast(pl.Int64).alias("workloads_with_noise"),
        (pl.col("raw_k").is_null() & all_one_way & (pl.col("_min_abs") >= options.gross_change))
        .fill_null(False)
        .alias("_gross"),
        (pl.col("raw_se").pow(2) - pl.col("_raw_measured2")).alias("raw_fixed2"),
        (pl.col("adj_se").pow(2) - pl.col("_adj_measured2")).alias("adj_fixed2"),
        pl.col("_lone_n").fill_null(0),
    )
