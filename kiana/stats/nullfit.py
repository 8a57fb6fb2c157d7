"""Fitting a null distribution: the scale of noise, its tails, and what was a real change.

Each sample is a log difference ``x`` that is pure noise when nothing changed, with a
known part of its variance ``q2`` (measured inside sessions) and an unknown part
``c * s^2`` (``s`` is what is fitted; ``c`` counts how many independent copies of the
component ``x`` carries).  The model is the *two-groups model* of large-scale
testing (Efron 2008, "Microarrays, empirical Bayes and the two-groups model",
Statistical Science 23): most samples are null, a share ``pi`` are real changes, and
the null has heavy tails (a Student-t, the standard heavy-tailed model of measurement
noise; Lange, Little & Taylor 1989, "Robust statistical modeling using the t
distribution", JASA 84):

    f(x) = pi * g(x) + (1 - pi) * t_nu(x; 0, sqrt(c s^2 + q2))
    g    = Cauchy(0, ALT_SCALE)    (a broad density: changes of a few to tens of %)

Samples that cannot be a change (two sessions of the same code) have ``pi = 0``.

``s`` is found on a fixed log grid (:data:`GRID`, ratio :data:`GRID_RATIO`) by
maximising the log likelihood plus a normal prior on ``ln s`` around a parent value
(penalised likelihood, i.e. the posterior mode of a hierarchical model with a known
spread of the children around their parent; Gelman et al., "Bayesian Data Analysis",
3rd ed., ch. 5).  A cell with little data stays near its parent, a cell with much
data follows it.  On the grid, a little new data usually leaves the answer on the same
grid point, which keeps re-judging cheap.  ``nu`` (from :data:`TAILS`) and ``pi``
(from :data:`SHARES`) are chosen by the same penalised likelihood (profile over the
grid) where a cell has at least :data:`MIN_TAIL_SAMPLES` samples; with fewer, ``nu`` is
the caller's prior (heavy for latency: real sittings have heavy tails until the data
shows otherwise) and only ``pi`` is chosen.

:func:`fit_cells` is the vectorised version (numpy, one pass over the samples per
(nu, pi) pair); ``tests/stats/test_calibration.py`` checks it against a slow,
obviously correct loop over the formula.  :func:`equivalent_factor` turns a t scale
into the normal sigma with the same tail at a two-sided level ``p``: the decisions
elsewhere stay "z >= separation", and heavy tails raise the sigma instead.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

#: The log grid of scales (relative, log units): 1e-5 .. 1.0, ratio 1.05.
GRID_RATIO = 1.05
GRID: np.ndarray = np.exp(
    np.arange(math.log(1e-5), math.log(1.0) + 1e-9, math.log(GRID_RATIO)), dtype=np.float64
)
#: Student-t degrees of freedom tried for the tails (``inf``: normal).
TAILS: tuple[float, ...] = (1.0, 2.0, 3.0, 5.0, 10.0, math.inf)
#: Shares of real changes tried.
SHARES: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4)
#: The tails and share are chosen on every COARSE-th scale of the grid (ratio 1.22).
COARSE = 4
#: Fewer samples than this: tails are not fitted (normal null, DEFAULT_SHARE).
MIN_TAIL_SAMPLES = 40
DEFAULT_SHARE = 0.1
#: Scale of the broad alternative (Cauchy), log units.
ALT_SCALE = 0.1
#: Tail fits look at no more than this many samples per cell (an even stride).
TAIL_FIT_CAP = 1000
_CHUNK = 8192


def log_t(x: np.ndarray, scale: np.ndarray, nu: float) -> np.ndarray:
    """Log density of a Student-t (``nu``; ``inf`` = normal) at ``x`` with ``scale``."""
    z2 = (x / scale) ** 2
    if math.isinf(nu):
        return np.asarray(-0.5 * math.log(2 * math.pi) - np.log(scale) - 0.5 * z2)
    const = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    return np.asarray(const - np.log(scale) - (nu + 1) / 2 * np.log1p(z2 / nu))


def log_alt(x: np.ndarray) -> np.ndarray:
    """Log density of the broad alternative at ``x``."""
    return np.asarray(-math.log(math.pi * ALT_SCALE) - np.log1p((x / ALT_SCALE) ** 2))


def loglik(
    x: np.ndarray, q2: np.ndarray, c: np.ndarray, share: np.ndarray, nu: float,
    grid: np.ndarray = GRID,
) -> np.ndarray:  # fmt: skip
    """Log likelihood of every sample (rows) at every scale of ``grid`` (columns; a 2-D
    ``grid`` gives each sample its own row of scales)."""
    scales = grid if grid.ndim == 2 else grid[None, :]
    scale = np.sqrt(c[:, None] * scales**2 + q2[:, None])
    null = log_t(x[:, None], scale, nu)
    if not share.any():
        return null
    mix = share[:, None]
    alt = log_alt(x)[:, None]
    with np.errstate(divide="ignore"):
        a = np.log(mix) + alt
        b = np.log1p(-mix) + null
    return np.asarray(np.logaddexp(a, b))


def cell_sums(
    cells: np.ndarray, n_cells: int, x: np.ndarray, q2: np.ndarray, c: np.ndarray,
    share: np.ndarray, nu: np.ndarray, grid: np.ndarray = GRID,
) -> np.ndarray:  # fmt: skip
    """Summed log likelihood per cell (rows) and scale of ``grid`` (columns; a 2-D
    ``grid``: one row of scales per cell); ``nu`` per sample."""
    width = grid.shape[-1]
    out = np.zeros((n_cells, width), dtype=np.float64)
    for tail in np.unique(nu):
        rows = np.flatnonzero(nu == tail)
        rows = rows[np.argsort(cells[rows], kind="stable")]
        for start in range(0, rows.size, _CHUNK):
            part = rows[start : start + _CHUNK]
            own = grid[cells[part]] if grid.ndim == 2 else grid
            ll = loglik(x[part], q2[part], c[part], share[part], float(tail), own)
            owner = cells[part]
            first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            out[owner[first]] += np.add.reduceat(ll, first, axis=0)
    return out


def fine_mode(
    cells: np.ndarray,
    n_cells: int,
    x: np.ndarray,
    q2: np.ndarray,
    c: np.ndarray,
    share: np.ndarray,
    nu: np.ndarray,
    center: np.ndarray,
    sd: np.ndarray,
) -> np.ndarray:
    """The penalised mode on :data:`GRID`, found coarse to fine: on every
    :data:`COARSE`-th scale first, then on the fine scales around each cell's coarse
    mode.  A unimodal profile has its fine mode there; a cell whose coarse profile has
    more than one peak (a few precise null samples and a few large ones that may be
    changes pull two ways) is searched on the whole grid.  The tests compare it with the
    whole grid."""
    coarse_grid = GRID[::COARSE]
    sums = cell_sums(cells, n_cells, x, q2, c, share, nu, coarse_grid)
    profile = (
        sums - 0.5 * ((np.log(coarse_grid)[None, :] - np.log(center)[:, None]) / sd[:, None]) ** 2
    )
    coarse = np.argmax(profile, axis=1) * COARSE
    offsets = np.arange(-COARSE, COARSE + 1)
    index = np.clip(coarse[:, None] + offsets[None, :], 0, GRID.size - 1)
    windows = GRID[index]
    sums = cell_sums(cells, n_cells, x, q2, c, share, nu, windows)
    prior = -0.5 * ((np.log(windows) - np.log(center)[:, None]) / sd[:, None]) ** 2
    found = index[np.arange(n_cells), np.argmax(sums + prior, axis=1)]
    multi = np.flatnonzero(_peaks(profile) > 1)
    if multi.size:
        keep = np.isin(cells, multi)
        local = np.full(n_cells, -1, dtype=np.int64)
        local[multi] = np.arange(multi.size)
        whole = cell_sums(local[cells[keep]], multi.size, x[keep], q2[keep], c[keep],
                          share[keep], nu[keep], GRID)  # fmt: skip
        found[multi] = penalised_mode(whole, center[multi], sd[multi], GRID)
    return np.asarray(found)


def _peaks(profile: np.ndarray) -> np.ndarray:
    """Local maxima per row of ``profile`` (a plateau counts once, at its left end).

    >>> _peaks(np.array([[0.0, 1.0, 0.0, 2.0, 1.0], [0.0, 1.0, 2.0, 3.0, 4.0]])).tolist()
    [2, 1]
    """
    left = np.concatenate([np.full((profile.shape[0], 1), -np.inf), profile[:, :-1]], axis=1)
    right = np.concatenate([profile[:, 1:], np.full((profile.shape[0], 1), -np.inf)], axis=1)
    return np.asarray(((profile > left) & (profile >= right)).sum(axis=1))


def penalised_mode(
    sums: np.ndarray, center: np.ndarray, sd: np.ndarray, grid: np.ndarray = GRID
) -> np.ndarray:
    """Index in ``grid`` of the scale maximising ``sums + log prior`` for every cell."""
    log_grid = np.log(grid)[None, :]
    prior = -0.5 * ((log_grid - np.log(center)[:, None]) / sd[:, None]) ** 2
    return np.asarray(np.argmax(sums + prior, axis=1))


def fit_cells(
    cells: np.ndarray, n_cells: int, x: np.ndarray, q2: np.ndarray, c: np.ndarray,
    may_change: np.ndarray, center: np.ndarray, sd: np.ndarray, *, tails: bool,
    nu: np.ndarray, share: np.ndarray, candidates: tuple[float, ...] = TAILS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """``(scale, nu, share)`` per cell.  ``cells`` gives each sample's cell (0-based),
    ``center``/``sd`` the prior per cell.  With ``tails``, ``nu`` and ``share`` are
    fitted per cell with enough samples (profile likelihood on every
    ``2 COARSE``-th scale, module docstring; ``nu`` among ``candidates``, the given
    ``nu`` the prior of the others); otherwise they are given per cell."""
    if n_cells == 0:
        return np.zeros(0), nu, share
    best_nu, best_share = nu.copy(), share.copy()
    if tails:
        best_share = np.full(n_cells, DEFAULT_SHARE)
        counts = np.bincount(cells, minlength=n_cells)
        tailed = counts >= MIN_TAIL_SAMPLES
        rows = _tail_sample(cells, n_cells)
        coarse = GRID[:: 2 * COARSE]
        best = np.full(n_cells, -np.inf)
        prior_nu = nu.copy()
        for tail in sorted({*candidates, *np.unique(prior_nu).tolist()}):
            # Few samples: the share is fitted, the tails stay the prior's.
            fitted = (tailed & (tail in candidates)) | (~tailed & (prior_nu == tail))
            for pi in SHARES:
                per_share = np.where(may_change[rows], pi, 0.0)
                sums = cell_sums(cells[rows], n_cells, x[rows], q2[rows], c[rows], per_share,
                                 np.full(rows.size, tail), coarse)  # fmt: skip
                mode = penalised_mode(sums, center, sd, coarse)
                prior = -0.5 * ((np.log(coarse[mode]) - np.log(center)) / sd) ** 2
                value = sums[np.arange(n_cells), mode] + prior
                take = fitted & (value > best)
                best = np.where(take, value, best)
                best_nu = np.where(take, tail, best_nu)
                best_share = np.where(take, pi, best_share)
    per_share = np.where(may_change, best_share[cells], 0.0)
    mode = fine_mode(cells, n_cells, x, q2, c, per_share, best_nu[cells], center, sd)
    return GRID[mode], best_nu, best_share


def _tail_sample(cells: np.ndarray, n_cells: int) -> np.ndarray:
    """At most :data:`TAIL_FIT_CAP` samples per cell, an even stride over each cell's
    samples in their order (deterministic)."""
    order = np.argsort(cells, kind="stable")
    counts = np.bincount(cells, minlength=n_cells)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.arange(cells.size) - np.repeat(starts, counts)
    stride = np.maximum(1, np.ceil(counts / TAIL_FIT_CAP)).astype(np.int64)
    keep = position % np.repeat(stride, counts) == 0
    return np.asarray(np.sort(order[keep]))


def equivalent_factor(nu: float | None, separation: float) -> float:
    """``t_nu^-1(1 - p/2) / Phi^-1(1 - p/2)`` where ``p`` is the two-sided normal tail of
    ``separation``: a t scale times this is the normal sigma with the same tail there
    (1 for a normal null)."""
    if nu is None or math.isinf(nu):
        return 1.0
    # scipy.special's inverse of the t distribution, which scipy.stats' t.ppf calls: the
    # same numbers, without importing scipy.stats (0.6 s of every judge's start).
    from scipy.special import stdtrit

    tail = 1.0 - NormalDist().cdf(separation)
    return float(stdtrit(nu, 1.0 - tail)) / separation
