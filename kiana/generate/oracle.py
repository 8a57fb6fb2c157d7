"""A likelihood-ratio judge that knows the noise model: the ceiling a judge can reach.

**For testing only**, beside :mod:`kiana.generate.family`: it reads the generator's own
runs frame (:attr:`kiana.generate.family.FamilyCorpus.drawn`) and the model's true
parameters; nothing of kiana's calibration uses it.

One finding is ``liger`` between two sessions of one kernel, pass and GPU.  With
``d[p, w]`` the change of provider ``p``'s mean log median on workload ``w`` (rounds
pooled), the model (:mod:`kiana.generate.realistic`, :mod:`kiana.generate.family`) is

    d[p, w] = m + delta * x[p, w] + u[p] + e[p, w] + r[p, w]

* ``m``: what every provider shares (an environment shift, the sittings' common parts),
  a nuisance with a diffuse normal prior (sd :data:`COMMON_SD`): it cancels, as in a
  control adjustment;
* ``u[p]``: the provider's own offsets, normal, of the variance the two sittings'
  states give (calm or shifted, each with probability ``shifted_share``);
* ``e[p, w]``: the difference of two workload draws, each the state's scale times a
  Student t (a normal with the model's ``tail_df = inf``);
* ``r[p, w]``: run noise, normal, of the variance the series' true spread gives (one
  sample or many, as observed), over the rounds pooled;
* ``x``: the design of a move: every ``liger`` workload (sweep-wide), or one.

The likelihood of ``delta`` mixes the four pairs of states; the t's are Gaussian scale
mixtures (``t = z / sqrt(g)``, ``g ~ Gamma(df/2, 2/df)``) and are integrated by Monte
Carlo over ``g`` (:data:`DRAWS` draws from their prior, common to every ``delta``,
so ratios carry less of its error; the error grows with the 2n scales of a wide sweep,
where the oracle falls below the true ceiling), the normal parts in closed form (a multivariate normal with
``Sigma = COMMON_SD^2 11' + var(u) ZZ' + diag(var e + var r)``).  With normal tails it
is exact.  The statistic of a direction is the log Bayes factor of "liger moved that
way" against "no move", the move's prior the generator's: log-uniform 3-40% over the
sweep, a share :data:`ONE_SHARE` of regressions +20-40% on one workload (Kass and
Raftery 1995, "Bayes Factors", JASA 90: 773-795).  A threshold on it, set where its
false findings equal another judge's, makes the Neyman-Pearson most powerful test
against that prior at that rate: no judge of one finding's data finds more.
``unchanged`` is the likelihood's claim that every move of at least the threshold is
ruled out: ``L(delta) / L(0) <= exp(-EQUIVALENCE)`` for each sweep-wide ``|delta|`` of
3% or more (Royall 1997, "Statistical Evidence: A Likelihood Paradigm", ch. 1: a
likelihood ratio of 8 as fairly strong evidence).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import polars as pl

    from kiana.generate.family import NoiseModel

#: The sd of what every provider shares, log (diffuse next to any drift of the family).
COMMON_SD = 0.5
#: Monte Carlo draws of the t's scales (per pair of states), twice as many for a
#: finding of more than :data:`WIDE` workloads and providers.
DRAWS = 96
WIDE = 12
#: The share of regressions on one workload (CorpusConfig.single_workload_share).
ONE_SHARE = 0.15
#: ``unchanged`` when every move of at least the threshold is this much less likely (log).
EQUIVALENCE = 2.0
SPREAD_SIGMAS = 1.683
SWEEP = np.log1p(np.exp(np.linspace(math.log(0.03), math.log(0.40), 12)))
ONE = np.log1p(np.linspace(0.20, 0.40, 5))
DOWN = np.log1p(-np.exp(np.linspace(math.log(0.03), math.log(0.40), 12)))
UNIT = ["kernel", "pass", "gpu", "from_session", "to_session"]


def points(drawn: pl.DataFrame, model: NoiseModel) -> pl.DataFrame:
    """Each provider's sessions per workload: mean log median and run-noise variance."""
    import polars as pl

    noise = model.noise
    sd = pl.col("spread") / SPREAD_SIGMAS
    var = (noise.spread_share * sd) ** 2 + pl.col("single").cast(pl.Float64) * sd**2 * math.exp(
        2 * noise.run_spread_sigma**2
    )
    keys = ["kernel", "pass", "gpu", "provider", "workload", "session"]
    return drawn.group_by(keys).agg(
        pl.col("median").log().mean().alias("y"), (var.mean() / pl.len()).alias("v")
    )


def judge(
    units: pl.DataFrame, drawn: pl.DataFrame, model: NoiseModel, seed: int = 0
) -> pl.DataFrame:
    """``units`` (kernel, pass, gpu, from_session, to_session) with the oracle's
    ``up`` and ``down`` (log Bayes factors) and ``unchanged``."""
    import polars as pl

    pts = points(drawn, model)
    a = pts.rename({"session": "from_session", "y": "ya", "v": "va"})
    b = pts.rename({"session": "to_session", "y": "yb", "v": "vb"})
    pairs = (
        units.select(UNIT)
        .join(a, on=["kernel", "pass", "gpu", "from_session"])
        .join(b, on=["kernel", "pass", "gpu", "provider", "workload", "to_session"])
        .sort(*UNIT, "provider", "workload")
    )
    rng = np.random.default_rng(seed)
    out: dict[tuple[str, ...], tuple[float, float, bool]] = {}
    for key, frame in pairs.group_by(UNIT, maintain_order=True):
        d = (frame["yb"] - frame["ya"]).to_numpy()
        v = (frame["va"] + frame["vb"]).to_numpy()
        providers = frame["provider"].to_list()
        out[tuple(str(k) for k in key)] = statistics(d, v, providers, model, rng)
    rows = [(*k, *s) for k, s in out.items()]
    schema = {c: pl.String for c in UNIT} | {
        "up": pl.Float64, "down": pl.Float64, "unchanged": pl.Boolean
    }  # fmt: skip
    found = pl.DataFrame(rows, schema=schema, orient="row")
    return units.join(found, on=UNIT, how="left").with_columns(
        pl.col("up", "down").fill_null(0.0), pl.col("unchanged").fill_null(False)
    )


def statistics(
    d: np.ndarray, v: np.ndarray, providers: list[str], model: NoiseModel,
    rng: np.random.Generator,
) -> tuple[float, float, bool]:  # fmt: skip
    """One finding's ``up``, ``down`` and ``unchanged`` (module docstring)."""
    liger = np.array([p == "liger" for p in providers])
    if not liger.any() or liger.all():
        return 0.0, 0.0, False
    names = list(dict.fromkeys(providers))
    z = np.array([[p == q for q in names] for p in providers], dtype=float)
    designs = np.vstack([liger.astype(float), np.diag(liger.astype(float))[liger]])
    quad_a, quad_b, quad_c, logw = _moments(d, v, z, designs, model, rng)

    def log_l(delta: np.ndarray, row: int) -> np.ndarray:
        """log L(delta) - log L(0) per delta, for design ``row``."""
        terms = logw[None, :] + delta[:, None] * quad_b[None, :, row]
        terms -= 0.5 * delta[:, None] ** 2 * quad_c[None, :, row]
        out: np.ndarray = _lse(terms, axis=1) - _lse(logw, axis=0)
        return out

    sweep_up = _lse(log_l(SWEEP, 0), 0) - math.log(len(SWEEP))
    one = [_lse(log_l(ONE, j), 0) - math.log(len(ONE)) for j in range(1, designs.shape[0])]
    one_up = _lse(np.array(one), 0) - math.log(len(one))
    up = float(np.logaddexp(math.log(1 - ONE_SHARE) + sweep_up, math.log(ONE_SHARE) + one_up))
    down = float(_lse(log_l(DOWN, 0), 0) - math.log(len(DOWN)))
    ruled = max(log_l(SWEEP, 0).max(), log_l(DOWN, 0).max()) <= -EQUIVALENCE
    del quad_a
    return up, down, bool(ruled)


def _moments(
    d: np.ndarray, v: np.ndarray, z: np.ndarray, designs: np.ndarray, model: NoiseModel,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Per (state pair, draw): y'S^-1 y, x'S^-1 y, x'S^-1 x (per design) and the log
    weight (the state pair's prior times the zero-move likelihood)."""
    noise, n = model.noise, d.size
    share = model.shifted_share
    draws = 1 if math.isinf(model.tail_df) else DRAWS * (2 if n > WIDE else 1)
    gammas = np.ones((draws, 2, n))
    if draws > 1:
        gammas = rng.gamma(model.tail_df / 2, 2 / model.tail_df, size=(draws, 2, n))
    covs, weights = [], []
    for sa in (False, True):
        for sb in (False, True):
            own = [noise.shifted_provider if s else noise.calm_provider for s in (sa, sb)]
            work = [noise.shifted_workload if s else noise.calm_workload for s in (sa, sb)]
            var_u = own[0] ** 2 + own[1] ** 2
            diag = work[0] ** 2 / gammas[:, 0] + work[1] ** 2 / gammas[:, 1] + v[None, :]
            base = COMMON_SD**2 + var_u * (z @ z.T)
            covs.append(base[None] + np.einsum("kn,nm->knm", diag, np.eye(n)))
            prior = (share if sa else 1 - share) * (share if sb else 1 - share)
            weights.append(np.full(draws, math.log(max(prior, 1e-300)) - math.log(draws)))
    cov = np.concatenate(covs)
    chol = np.linalg.cholesky(cov)
    rhs = np.concatenate([d[:, None], designs.T], axis=1)
    solved = np.linalg.solve(cov, np.broadcast_to(rhs, (cov.shape[0], *rhs.shape)))
    quad_a = np.einsum("n,kn->k", d, solved[:, :, 0])
    quad_b = np.einsum("kn,jn->kj", solved[:, :, 0], designs)
    quad_c = np.einsum("jn,knj->kj", designs, solved[:, :, 1:])
    logdet = 2 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
    logw = np.concatenate(weights) - 0.5 * (logdet + quad_a)
    return quad_a, quad_b, quad_c, logw


def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(x, axis=axis, keepdims=True)
    out: np.ndarray = np.squeeze(top, axis=axis) + np.log(np.exp(x - top).sum(axis=axis))
    return out
