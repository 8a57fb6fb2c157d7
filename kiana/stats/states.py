"""Sitting states: how noisy one pair of sittings was.

Sittings are not equally noisy.  In Liger's real CSVs, the cross_entropy sittings of
2026-06-16 and 2026-07-05 agree within a few tenths of a percent on every workload,
while in the jsd pair of 2026-05-27 and 2026-06-16 every pass of torch moved 4-11%
and single workloads 3-10%: a *shifted* sitting.  One noise level for all sittings
either calls the shifted ones changes or hides real changes in the calm ones; the
marginal distribution over sittings is a scale mixture (calm and shifted), whose tails
look like a Cauchy.

So each *sitting group* (one kernel, GPU and metric between the same two sittings:
the same version labels, origins and days, every pass and provider of them) gets two
scale factors, ``f_w`` on the workload component and ``f_s`` on the sitting component
of :mod:`kiana.stats.calibration`.  Their prior is not assumed but learned: a discrete
distribution on the grid :data:`FACTORS` x :data:`FACTORS`, estimated per GPU and
metric by nonparametric maximum likelihood (the Kiefer-Wolfowitz NPMLE, computed by EM;
Koenker & Mizera 2014, "Convex optimization, shape constraints, compound decisions,
and empirical Bayes rules", JASA 109; Jiang & Zhang 2009, Annals of Statistics 37).
It learns, for instance, that sittings whose workloads scatter also carry large
offsets: the offsets of a group are seen only through its few baseline sweeps, its
workload scatter through every sweep.  A group's own samples (the calibration's
samples, :func:`kiana.stats.calibration.workload_samples` and ``sitting_samples``)
give its posterior; the decisions use, per component, the factor whose normal tail at
the separation matches the posterior mixture's (:func:`equivalent`).  A group without
samples gets the prior: not knowing whether a sitting was calm costs noise.  :data:`PSEUDO` groups of mass at ``(1, 1)`` keep a prior learned from a few
groups from collapsing onto them.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy.special import erfc

from kiana.stats.nullfit import log_alt, log_t

#: Scale factors of a sitting group (ratio 1.41 from 1/16 to 64: calm sittings may be
#: far calmer than the cells' scales, which every sitting informs).
FACTORS: np.ndarray = np.exp(np.linspace(np.log(1 / 16), np.log(64.0), 21))
ONE = int(np.argmin(np.abs(np.log(FACTORS))))
PSEUDO = 1.0
EM_ROUNDS = 300
#: The columns of a sitting group.
GROUP: tuple[str, ...] = ("gpu", "metric", "kernel", "from_version", "to_version", "from_origin",
                          "to_origin", "_from_day", "_to_day")  # fmt: skip


def group_key(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``_group``: the sitting group of each step (module docstring)."""
    parts = [
        pl.col(c).cast(pl.String).fill_null("")
        for c in (
            "gpu",
            "metric",
            "kernel",
            "from_version",
            "to_version",
            "from_origin",
            "to_origin",
        )
    ]
    days = [pl.col("from_session").str.slice(0, 10), pl.col("to_session").str.slice(0, 10)]
    return frame.with_columns(pl.concat_str([*parts, *days], separator="\x1f").alias("_group"))


def factor_loglik(samples: pl.DataFrame, groups: pl.Series) -> np.ndarray:
    """Summed log likelihood per group (rows, in the order of ``groups``) and factor
    (columns) of ``samples`` (``_group``, ``x``, ``q2``, ``c``, ``base``: the base
    variance of one copy, ``tail``, ``share``)."""
    out = np.zeros((groups.len(), FACTORS.size))
    if samples.height == 0:
        return out
    index = pl.DataFrame({"_group": groups}).with_row_index("_g")
    joined = samples.join(index, on="_group", how="inner")
    g = joined["_g"].to_numpy().astype(np.int64)
    x, q2 = joined["x"].to_numpy(), joined["q2"].to_numpy()
    var = (joined["c"] * joined["base"]).to_numpy()
    share = joined["share"].to_numpy()
    nu = joined["tail"].fill_null(np.inf).to_numpy()
    scale = np.sqrt(q2[:, None] + var[:, None] * FACTORS[None, :] ** 2)
    null = np.empty_like(scale)
    for tail in np.unique(nu):
        rows = nu == tail
        null[rows] = log_t(x[rows, None], scale[rows], float(tail))
    with np.errstate(divide="ignore"):
        ll = np.logaddexp(
            np.log(share)[:, None] + log_alt(x)[:, None], np.log1p(-share)[:, None] + null
        )
    np.add.at(out, g, ll)
    return out


def npmle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The prior weights on ``FACTORS x FACTORS`` maximising the marginal likelihood of
    groups with log likelihoods ``a`` (workload factor) and ``b`` (sitting factor), by
    EM, with :data:`PSEUDO` groups at ``(1, 1)``."""
    n = a.shape[0]
    k = FACTORS.size
    weights = np.full((k, k), 1.0 / (k * k))
    if n == 0:
        weights[:] = 0.0
        weights[ONE, ONE] = 1.0
        return weights
    joint = a[:, :, None] + b[:, None, :]
    joint -= joint.max(axis=(1, 2), keepdims=True)
    like = np.exp(joint)
    for _ in range(EM_ROUNDS):
        post = like * weights[None]
        post /= post.sum(axis=(1, 2), keepdims=True)
        updated = post.sum(axis=0)
        updated[ONE, ONE] += PSEUDO
        updated /= n + PSEUDO
        if np.abs(updated - weights).max() < 1e-7:
            weights = updated
            break
        weights = updated
    return weights


def posterior(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The posterior marginals of ``f_w`` and ``f_s`` per group (rows) on
    :data:`FACTORS` (columns)."""
    joint = a[:, :, None] + b[:, None, :] + np.log(np.maximum(weights, 1e-300))[None]
    joint -= joint.max(axis=(1, 2), keepdims=True)
    post = np.exp(joint)
    post /= post.sum(axis=(1, 2), keepdims=True)
    return post.sum(axis=2), post.sum(axis=1)


def mean_f2(marginal: np.ndarray) -> np.ndarray:
    """The posterior mean of ``f^2`` per group."""
    return np.asarray(marginal @ FACTORS**2)


def equivalent(marginal: np.ndarray, separation: float) -> np.ndarray:
    """Per group, the factor ``f`` whose normal tail at ``separation`` equals the
    posterior mixture's: ``sum_k p_k T(separation f / F_k) = T(separation)`` with ``T``
    the two-sided normal tail (bisection in ``ln f``).  A group likely calm but
    possibly shifted gets the noise its possible shift demands at the tail the
    decisions test, not the posterior mean of ``f``."""
    target = erfc(separation / math.sqrt(2.0))
    lo = np.full(marginal.shape[0], math.log(FACTORS[0]) - 1.0)
    hi = np.full(marginal.shape[0], math.log(FACTORS[-1]) + 1.0)
    scaled = separation / FACTORS[None, :] / math.sqrt(2.0)
    for _ in range(48):
        mid = (lo + hi) / 2.0
        tail = (marginal * erfc(np.exp(mid)[:, None] * scaled)).sum(axis=1)
        lo = np.where(tail > target, mid, lo)
        hi = np.where(tail > target, hi, mid)
    return np.asarray(np.exp((lo + hi) / 2.0))


def prior_rows(weights: np.ndarray, gpu: str, metric: str) -> pl.DataFrame:
    """The prior's grid points with mass above 1e-6, as calibration rows."""
    i, j = np.nonzero(weights > 1e-6)
    return pl.DataFrame(
        {
            "gpu": [gpu] * i.size,
            "metric": [metric] * i.size,
            "workload_factor": FACTORS[i],
            "sitting_factor": FACTORS[j],
            "weight": weights[i, j],
        }
    )


def prior_of(rows: pl.DataFrame) -> np.ndarray:
    """The weights of :func:`prior_rows` back on the grid (a point mass at (1, 1)
    when there are none)."""
    weights = np.zeros((FACTORS.size, FACTORS.size))
    if rows.height == 0:
        weights[ONE, ONE] = 1.0
        return weights
    grid = np.log(FACTORS)
    i = np.abs(np.log(rows["workload_factor"].to_numpy())[:, None] - grid[None]).argmin(axis=1)
    j = np.abs(np.log(rows["sitting_factor"].to_numpy())[:, None] - grid[None]).argmin(axis=1)
    np.add.at(weights, (i, j), rows["weight"].to_numpy())
    return weights / weights.sum()
