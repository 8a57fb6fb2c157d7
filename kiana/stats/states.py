"""Sitting states: how noisy one pair of sittings was.

Sittings are not equally noisy.  In Liger's real CSVs, the cross_entropy sittings of
2026-06-16 and 2026-07-05 agree within a few tenths of a percent on every workload,
while in the jsd pair of 2026-05-27 and 2026-06-16 every pass of torch moved 4-11% and
single workloads 3-10%: a *shifted* sitting.  One noise level for all sittings either
calls the shifted ones changes or hides real changes in the calm ones; the marginal
distribution over sittings is a scale mixture (calm and shifted), whose tails look
like a Cauchy.

So each *sitting group* (one kernel, GPU and metric between the same two sittings: the
same version labels, origins and days, every pass and provider of them) gets a scale
factor ``f`` on the workload component of :mod:`kiana.stats.calibration` and ``f^b`` on
its sitting component.  A shifted sitting shows itself in the scatter of its
workloads, which every sweep of the group measures; its offsets are seen only through
a few baseline sweeps, whose means also move when the *machine* moved (an environment
shift: every provider alike, which a control cancels, with calm workloads).  Tying the
sitting factor to the workload factor keeps a machine drift from passing for a noisy
sitting, while the exponent ``b`` (fitted) lets offsets grow faster than scatter.

The prior of ``f`` is not assumed but learned: a discrete distribution on the grid
:data:`FACTORS`, estimated per GPU and metric by nonparametric maximum likelihood from
the groups' workload samples (the Kiefer-Wolfowitz NPMLE, computed by EM; Koenker &
Mizera 2014, "Convex optimization, shape constraints, compound decisions, and empirical
Bayes rules", JASA 109; Jiang & Zhang 2009, Annals of Statistics 37); :data:`PSEUDO`
groups of mass at ``f = 1`` keep a prior learned from a few groups from collapsing onto
them.  ``b`` and the sitting component's top scale are then chosen by the marginal
likelihood of the baseline sweep means (:func:`fit_link`).  A group's posterior over
``f`` combines its workload samples and its sitting samples; the decisions use, per
component, its root mean square (``sqrt E[f^2]`` and ``sqrt E[f^2b]``, :func:`mean_f2`).
A group without samples gets the prior: not knowing whether a sitting was calm costs
noise.  A posterior torn between calm and shifted gets a factor between the two, whose
normal tail at the separation is lighter than the mixture's; the factor whose tail
matches the mixture's instead was measured and not kept (``bench/README.md``, round 7:
on 40 realistic corpora, 62 unchanged groups called a change instead of 103, but 65 of
445 regressions of 10% or more missed instead of 46).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from kiana.stats.nullfit import log_alt, log_t

#: Scale factors of a sitting group (ratio 1.41 from 1/16 to 64: calm sittings may be
#: far calmer than the cells' scales, which every sitting informs).
FACTORS: np.ndarray = np.exp(np.linspace(np.log(1 / 16), np.log(64.0), 21))
ONE = int(np.argmin(np.abs(np.log(FACTORS))))
PSEUDO = 1.0
EM_ROUNDS = 300
#: The sitting samples' log likelihoods for an exponent (see :func:`fit_link`).
SittingLikelihood = Callable[[float], np.ndarray]
#: The columns of a sitting group.
GROUP: tuple[str, ...] = ("gpu", "metric", "kernel", "from_version", "to_version", "from_origin",
                          "to_origin", "_from_day", "_to_day")  # fmt: skip
#: What joins the parts of a sitting group's key (:func:`group_key`).
GROUP_SEPARATOR = "\x1f"


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
    return frame.with_columns(
        pl.concat_str([*parts, *days], separator=GROUP_SEPARATOR).alias("_group")
    )


def factor_loglik(samples: pl.DataFrame, groups: pl.Series, exponent: float = 1.0) -> np.ndarray:
    """Summed log likelihood per group (rows, in the order of ``groups``) and factor
    ``F`` (columns) of ``samples`` (``_group``, ``x``, ``q2``, ``c``, ``base``: the base
    variance of one copy, ``tail``, ``share``), the base variance scaled by
    ``F^(2 exponent)``."""
    out = np.zeros((groups.len(), FACTORS.size))
    if samples.height == 0:
        return out
    index = pl.DataFrame({"_group": groups}).with_row_index("_g")
    joined = samples.join(index, on="_group", how="inner", maintain_order="left")
    g = joined["_g"].to_numpy().astype(np.int64)
    x, q2 = joined["x"].to_numpy(), joined["q2"].to_numpy()
    var = (joined["c"] * joined["base"]).to_numpy()
    share = joined["share"].to_numpy()
    nu = joined["tail"].fill_null(np.inf).to_numpy()
    scale = np.sqrt(q2[:, None] + var[:, None] * FACTORS[None, :] ** (2.0 * exponent))
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


def npmle(a: np.ndarray) -> np.ndarray:
    """The prior weights on :data:`FACTORS` maximising the marginal likelihood of groups
    with log likelihoods ``a`` (rows: groups, columns: factors), by EM, with
    :data:`PSEUDO` groups at ``f = 1``."""
    n, k = a.shape
    weights = np.full(k, 1.0 / k)
    if n == 0:
        weights[:] = 0.0
        weights[ONE] = 1.0
        return weights
    like = np.exp(a - a.max(axis=1, keepdims=True))
    for _ in range(EM_ROUNDS):
        post = like * weights[None]
        post /= post.sum(axis=1, keepdims=True)
        updated = post.sum(axis=0)
        updated[ONE] += PSEUDO
        updated /= n + PSEUDO
        done = bool(np.abs(updated - weights).max() < 1e-6)
        weights = np.asarray(updated)
        if done:
            break
    return weights


def posterior(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The posterior of ``f`` per group (rows) on :data:`FACTORS` (columns) from the
    log likelihoods ``a`` (workload samples) and ``b`` (sitting samples)."""
    joint = a + b + np.log(np.maximum(weights, 1e-300))[None]
    joint -= joint.max(axis=1, keepdims=True)
    post = np.exp(joint)
    return np.asarray(post / post.sum(axis=1, keepdims=True))


def mean_f2(post: np.ndarray, exponent: float = 1.0) -> np.ndarray:
    """The posterior mean of ``(f^exponent)^2`` per group: each row's products summed by
    numpy, not a matrix product (BLAS sums a row in an order that depends on the number
    of rows: a group's factor had other bits in a window than among all its GPU's
    groups, 2 ulp of ``sitting_noise`` at 10M runs)."""
    return np.asarray((post * (FACTORS ** (2.0 * exponent))[None, :]).sum(axis=1))


#: Exponents ``b`` of the sitting factor ``f^b`` tried by :func:`fit_link`.
EXPONENTS: tuple[float, ...] = (0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)


def fit_link(a: np.ndarray, weights: np.ndarray, sitting: SittingLikelihood) -> float:
    """The exponent ``b`` of :data:`EXPONENTS` that maximises the marginal likelihood of
    the groups' sitting samples, ``sum_g log sum_k p_k(a_g) L_g(F_k^b)``, where
    ``sitting(b)`` gives those log likelihoods ``L`` (rows: groups, columns: factors)
    with the sitting scale refitted for that ``b``; ``p`` is each group's posterior from
    its workload samples alone."""
    post = posterior(a, np.zeros_like(a), weights)
    best, chosen = -np.inf, 1.0
    for exponent in EXPONENTS:
        ll = sitting(exponent)
        top = ll.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):  # a group no factor of this link explains: -inf
            value = float((np.log((post * np.exp(ll - top)).sum(axis=1)) + top[:, 0]).sum())
        if value > best + 1e-9:
            best, chosen = value, exponent
    return chosen


def prior_rows(weights: np.ndarray, exponent: float, gpu: str, metric: str) -> pl.DataFrame:
    """The prior's grid points with mass above 1e-6, as calibration rows."""
    (i,) = np.nonzero(weights > 1e-6)
    return pl.DataFrame(
        {
            "gpu": [gpu] * i.size,
            "metric": [metric] * i.size,
            "workload_factor": FACTORS[i],
            "sitting_factor": FACTORS[i] ** exponent,
            "weight": weights[i],
            "exponent": [exponent] * i.size,
        }
    )


def prior_of(rows: pl.DataFrame) -> tuple[np.ndarray, float]:
    """The weights and exponent of :func:`prior_rows` back on the grid (a point mass at
    ``f = 1`` and exponent 1 when there are none)."""
    weights = np.zeros(FACTORS.size)
    if rows.height == 0:
        weights[ONE] = 1.0
        return weights, 1.0
    grid = np.log(FACTORS)
    i = np.abs(np.log(rows["workload_factor"].to_numpy())[:, None] - grid[None]).argmin(axis=1)
    np.add.at(weights, i, rows["weight"].to_numpy())
    return weights / weights.sum(), float(rows["exponent"][0])
