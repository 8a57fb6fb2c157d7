"""Pooling a sweep: one estimate of the common change of many workloads.

For the ``k`` workloads with noise information, ``y_i`` is a step's log ratio and
``s_i`` its noise.  The common change is the DerSimonian-Laird random-effects mean
(DerSimonian & Laird 1986, "Meta-analysis in clinical trials", Controlled Clinical
Trials 7; Borenstein et al. 2009, "Introduction to Meta-Analysis", ch. 12):

    w_i   = 1 / s_i^2,  mu_FE = sum w_i y_i / sum w_i
    Q     = sum w_i (y_i - mu_FE)^2,   C = sum w_i - sum w_i^2 / sum w_i
    tau^2 = max(0, (Q - (k - 1)) / C)          (workload-to-workload scatter)
    mu    = sum y_i / (s_i^2 + tau^2) / sum 1 / (s_i^2 + tau^2)
    se    = sqrt(1 / sum 1 / (s_i^2 + tau^2))

:func:`pool` computes it for every finding at once (two polars aggregations);
:func:`pool_reference` is the slow, obviously correct version the tests compare
against.  :func:`lone_z` is the Bonferroni-corrected separation for one workload of
``k``, :func:`sign_confidence` the exact sign test of a sweep's direction.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import polars as pl

from kiana.vocabulary import FINDING_KEYS

KEYS = list(FINDING_KEYS)


def pool(
    steps: pl.DataFrame, y: pl.Expr, s: pl.Expr, prefix: str, offset_var: pl.Expr | None = None
) -> pl.DataFrame:
    """DerSimonian-Laird pooled estimate per finding: ``{prefix}_mu``, ``_se``
    (with the mean ``offset_var`` of the steps added), ``_tau`` and ``_k`` (workloads
    with a log ratio and a positive noise)."""
    off = pl.lit(0.0) if offset_var is None else offset_var.fill_null(0.0)
    valid = steps.select(*KEYS, y.alias("_y"), s.alias("_s"), off.alias("_o")).filter(
        pl.col("_y").is_not_null() & (pl.col("_s") > 0) & pl.col("_s").is_finite()
    )
    w = 1.0 / pl.col("_s").pow(2)
    sums = valid.group_by(KEYS).agg(
        pl.len().alias("_k"),
        w.sum().alias("_s1"),
        w.pow(2).sum().alias("_s2"),
        (w * pl.col("_y")).sum().alias("_sy"),
        (w * pl.col("_y").pow(2)).sum().alias("_syy"),
    )
    q = pl.col("_syy") - pl.col("_sy").pow(2) / pl.col("_s1")
    c = pl.col("_s1") - pl.col("_s2") / pl.col("_s1")
    tau2 = (
        pl.when((pl.col("_k") > 1) & (c > 0))
        .then(pl.max_horizontal((q - (pl.col("_k") - 1)) / c, pl.lit(0.0)))
        .otherwise(0.0)
    )
    sums = sums.with_columns(tau2.alias("_tau2")).select(*KEYS, "_k", "_tau2")
    wr = 1.0 / (pl.col("_s").pow(2) + pl.col("_tau2"))
    pooled = (
        valid.join(sums, on=KEYS, how="inner", nulls_equal=True, maintain_order="left")
        .group_by(KEYS)
        .agg(
            (wr * pl.col("_y")).sum().alias("_wy"),
            wr.sum().alias("_w"),
            pl.col("_tau2").first(),
            pl.col("_k").first(),
            pl.col("_o").mean(),
        )
    )
    return pooled.select(
        *KEYS,
        (pl.col("_wy") / pl.col("_w")).alias(f"{prefix}_mu"),
        (1.0 / pl.col("_w") + pl.col("_o")).sqrt().alias(f"{prefix}_se"),
        pl.col("_tau2").sqrt().alias(f"{prefix}_tau"),
        pl.col("_k").cast(pl.Int64).alias(f"{prefix}_k"),
    )


def pool_reference(
    ys: list[float], ss: list[float], offset: float = 0.0
) -> tuple[float, float, float]:
    """``(mu, se, tau)`` of one finding by the formulas, with plain loops."""
    pairs = [(y, s) for y, s in zip(ys, ss, strict=True) if s > 0]
    k = len(pairs)
    w = [1 / s**2 for _, s in pairs]
    mu_fe = sum(wi * y for wi, (y, _) in zip(w, pairs, strict=True)) / sum(w)
    q = sum(wi * (y - mu_fe) ** 2 for wi, (y, _) in zip(w, pairs, strict=True))
    c = sum(w) - sum(wi**2 for wi in w) / sum(w)
    tau2 = max(0.0, (q - (k - 1)) / c) if k > 1 and c > 0 else 0.0
    wr = [1 / (s**2 + tau2) for _, s in pairs]
    mu = sum(wi * y for wi, (y, _) in zip(wr, pairs, strict=True)) / sum(wr)
    return mu, math.sqrt(1 / sum(wr) + offset**2), math.sqrt(tau2)


def deviation(y: pl.Expr, s: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """``(dev, se, k)`` of each step: its log ratio minus the fixed-effect mean of the
    other workloads of its finding, that difference's standard error, and the number
    of workloads with noise."""
    valid = y.is_not_null() & (s > 0)
    w = pl.when(valid).then(1.0 / s.pow(2)).otherwise(0.0)
    wy = pl.when(valid).then(w * y).otherwise(0.0)
    rest_w = w.sum().over(KEYS) - w
    rest_mu = (wy.sum().over(KEYS) - wy) / rest_w
    k = valid.cast(pl.Int64).sum().over(KEYS)
    se = pl.when(valid & (rest_w > 0)).then((s.pow(2) + 1.0 / rest_w).sqrt())
    return pl.when(valid & (rest_w > 0)).then(y - rest_mu), se, k


def lone(y: pl.Expr, s: pl.Expr, separation: float, threshold: float) -> pl.Expr:
    """True for a step (``y`` its log ratio, ``s`` its per-workload noise) far beyond the
    rest of its sweep: its :func:`deviation` reaches :func:`lone_z` standard errors (the
    sitting offset, shared by every workload, cancels in it), both the step and its
    deviation reach the threshold, and they point the same way."""
    return lone_beyond(y, *deviation(y, s), separation, threshold)


def lone_beyond(
    y: pl.Expr, dev: pl.Expr, se: pl.Expr, k: pl.Expr, separation: float, threshold: float
) -> pl.Expr:
    """:func:`lone` of a step whose :func:`deviation` (``dev``, ``se``, ``k``) a caller
    has already computed: polars evaluates an expression each time it appears, so a
    caller that also reads the deviation keeps it in columns and passes them here."""
    practical = math.log1p(threshold)
    big = (y.abs() >= practical) & (dev.abs() >= practical)
    beyond = (k > 1) & ((dev / se).abs() >= lone_z(k, separation))
    return (big & beyond & ((dev > 0) == (y > 0))).fill_null(False)


def lone_reference(
    ys: list[float], ss: list[float], separation: float, threshold: float
) -> list[bool]:
    """:func:`lone` for one sweep, with plain loops."""
    k = len(ys)
    cut = NormalDist().inv_cdf(1.0 - (1.0 - NormalDist().cdf(separation)) / k)
    out = []
    for i, (y, s) in enumerate(zip(ys, ss, strict=True)):
        others = [(ys[j], ss[j]) for j in range(k) if j != i]
        if not others:
            out.append(False)
            continue
        rest_w = sum(1 / sj**2 for _, sj in others)
        rest_mu = sum(yj / sj**2 for yj, sj in others) / rest_w
        z = (y - rest_mu) / math.sqrt(s**2 + 1 / rest_w)
        big = abs(y) >= math.log1p(threshold) and abs(y - rest_mu) >= math.log1p(threshold)
        out.append(big and abs(z) >= cut and (y - rest_mu > 0) == (y > 0))
    return out


def lone_cut(k: int, separation: float) -> float:
    """The Bonferroni-corrected separation for one workload of ``k``: the normal
    quantile of ``1 - p / 2k``, ``p`` the two-sided tail of ``separation``."""
    return NormalDist().inv_cdf(1.0 - (1.0 - NormalDist().cdf(separation)) / k)


def lone_z(k: pl.Expr, separation: float) -> pl.Expr:
    """The Bonferroni-corrected separation for ``k`` workloads (see the docstring)."""
    table = {n: lone_cut(n, separation) for n in range(1, 257)}
    return k.clip(1, 256).replace_strict(table, return_dtype=pl.Float64)


#: Sweeps of at most this many signed workloads get the exact tail (integer sums,
#: one correctly rounded division); longer ones scipy's regularized incomplete beta.
EXACT_SIGN_MAX = 1000


def sign_confidence(agree: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``1 - P(Binomial(total, 1/2) >= agree)`` elementwise; 0 where total is 0.

    Computed once per distinct (agree, total) pair.  Up to :data:`EXACT_SIGN_MAX`
    workloads it is exact: ``sum_j C(n, j)`` over ``j >= agree`` divided by ``2**n`` as
    integers (Python's int division rounds correctly and never overflows; ``2.0**n``
    did past 1,023 workloads).  Beyond, it is ``P(Binomial(n, 1/2) <= agree - 1)`` by
    :func:`scipy.special.bdtr` (the regularized incomplete beta ``I_{1/2}(n - k + 1, k)``,
    Abramowitz & Stegun 26.5.24), finite at any ``n``; the tests compare both with
    :class:`fractions.Fraction` sums."""
    agree = np.asarray(agree, dtype=np.int64)
    total = np.asarray(total, dtype=np.int64)
    out = np.zeros(agree.shape, dtype=np.float64)
    if agree.size == 0:
        return out
    pairs, inverse = np.unique(np.stack([agree, total], axis=1), axis=0, return_inverse=True)
    values = np.zeros(len(pairs), dtype=np.float64)
    long = pairs[:, 1] > EXACT_SIGN_MAX
    for i, (k, n) in enumerate(pairs.tolist()):
        if n <= 0 or n > EXACT_SIGN_MAX:
            continue
        k = max(int(k), 0)
        tail = sum(math.comb(n, j) for j in range(k, n + 1)) / (1 << n)
        values[i] = min(1.0, max(0.0, 1.0 - tail))
    if long.any():
        from scipy.special import bdtr

        k, n = np.clip(pairs[long, 0], 0, None), pairs[long, 1]
        below = np.where(k > 0, bdtr(np.maximum(k - 1, 0), n, 0.5), 0.0)
        values[long] = np.clip(below, 0.0, 1.0)
    out[:] = values[np.asarray(inverse).reshape(-1)]
    return out
