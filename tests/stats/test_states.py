"""Sitting states: the NPMLE of the factor prior and the tail-matched factors, against
slow references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from kiana.stats.states import FACTORS, ONE, PSEUDO, mean_f2, npmle, posterior


def npmle_reference(a: np.ndarray, rounds: int = 300) -> np.ndarray:
    """The EM of the Kiefer-Wolfowitz NPMLE with plain loops (stopping as the fast one
    does, when no weight moves by 1e-6)."""
    n, k = a.shape
    w = [1.0 / k] * k
    for _ in range(rounds):
        total = [0.0] * k
        for g in range(n):
            top = max(a[g])
            like = [w[j] * math.exp(a[g][j] - top) for j in range(k)]
            s = sum(like)
            for j in range(k):
                total[j] += like[j] / s
        total[ONE] += PSEUDO
        updated = [t / (n + PSEUDO) for t in total]
        done = max(abs(u - v) for u, v in zip(updated, w, strict=True)) < 1e-6
        w = updated
        if done:
            break
    return np.array(w)


def test_npmle_matches_the_reference() -> None:
    rng = np.random.default_rng(0)
    truth = np.where(rng.random(40) < 0.3, 8.0, 1.0)  # a calm and a shifted state
    x = rng.normal(0.0, 0.003 * truth[:, None], (40, 6))
    scale = 0.003 * FACTORS
    a = (norm.logpdf(x[:, :, None], scale=scale[None, None, :])).sum(axis=1)
    got = npmle(a)
    assert got == pytest.approx(npmle_reference(a), abs=1e-6)
    big = FACTORS >= 4.0
    assert got[big].sum() == pytest.approx(0.3, abs=0.15)  # it finds the shifted share


def test_a_group_without_samples_gets_the_prior() -> None:
    weights = np.zeros(FACTORS.size)
    weights[ONE], weights[-4] = 0.7, 0.3
    post = posterior(np.zeros((1, FACTORS.size)), np.zeros((1, FACTORS.size)), weights)
    assert post[0] == pytest.approx(weights)


def test_a_groups_mean_factor_does_not_depend_on_the_other_groups() -> None:
    """A group's posterior mean factor has the same bits alone as among thousands of
    groups (a window of a GPU's newest sessions against all of its groups)."""
    rng = np.random.default_rng(0)
    post = rng.dirichlet(np.ones(FACTORS.size), size=5000)
    together = mean_f2(post, 1.5)
    alone = np.array([mean_f2(post[i : i + 1], 1.5)[0] for i in range(300)])
    assert np.array_equal(alone, together[:300])
