"""A first per-sitting state inference, by belief propagation over the sittings: measured
against kiana's per-pair states and against kiana told the states.

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py --write DIR        # once: the corpora
    .venv/bin/python bench/sitting_states.py --read DIR [detection.py's options]

kiana infers how noisy a pair of sittings was from that pair's samples alone
(:mod:`kiana.stats.states`: a posterior over the scale factor ``F`` of each sitting
group).  ``bench/known_states.py`` measured what knowing every sitting's state would
give (62 false findings instead of 159 on the 60 realistic corpora).  This is a first
inference of those states from the data, as a prototype beside the judge, not in it:

* each sitting (one kernel, GPU, metric, label, origin and day: the two ends of a sitting
  group) has its own factor ``g`` on the grid :data:`kiana.stats.states.FACTORS`, and a
  pair's factor is their root mean square, ``F = sqrt((g_A^2 + g_B^2) / 2)`` (a step's
  variance is the sum of its two sittings');
* a pair's samples give a log likelihood over ``F`` (kiana's own, workload and sitting
  samples: the ``a + b`` of :func:`kiana.stats.states.posterior`), read at each ``(g_A,
  g_B)`` by linear interpolation in ``log F``;
* the sittings of a GPU and metric form a graph (a sitting group is an edge); each
  sitting's marginal is found by loopy sum-product belief propagation (exact on a chain;
  Pearl 1988, "Probabilistic Reasoning in Intelligent Systems", ch. 4), damped by a
  half, the prior over ``g`` re-estimated by EM from the sittings' marginals (starting
  from kiana's prior);
* each pair's joint posterior (its likelihood times both ends' cavity beliefs) gives its
  ``F``, binned back onto the grid, as the posterior the decisions use.

A new session would move its predecessor's state, so judging incrementally would have to
judge the step before it again: one reason this stays a prototype.  Wired in
with ``bench/known_states.py``'s :func:`known_states.replace_posterior`, for latency.
"""

from __future__ import annotations

import sys

import detection
import numpy as np
from known_states import replace_posterior

from kiana.stats import states

#: Belief-propagation sweeps per EM round, and EM rounds.
SWEEPS, EM_ROUNDS = 15, 10
LOG_F = np.log(states.FACTORS)
#: A pair's factor for each pair of its sittings' factors (rows: from, columns: to).
PAIR_LOG_F = 0.5 * np.log((states.FACTORS[:, None] ** 2 + states.FACTORS[None, :] ** 2) / 2.0)


def _ends(groups: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """The two sittings of each sitting group (``states.GROUP``'s fields), numbered."""
    numbers: dict[tuple[str, ...], int] = {}
    pairs = []
    for group in groups:
        gpu, metric, kernel, fv, tv, fo, to, fd, td = group.split("\x1f")
        ends = ((gpu, metric, kernel, fv, fo, fd), (gpu, metric, kernel, tv, to, td))
        pairs.append(tuple(numbers.setdefault(e, len(numbers)) for e in ends))
    index = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return index[:, 0], index[:, 1], len(numbers)


def _normalised(log_values: np.ndarray) -> np.ndarray:
    values = np.exp(log_values - log_values.max(axis=1, keepdims=True))
    return np.asarray(values / values.sum(axis=1, keepdims=True))


def infer(groups: list[str], loglik: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each group's posterior over the grid of ``F`` (module docstring)."""
    a, b, n = _ends(groups)
    k = states.FACTORS.size
    pair = np.stack([np.interp(PAIR_LOG_F.ravel(), LOG_F, row).reshape(k, k) for row in loglik])
    like = np.exp(pair - pair.max(axis=(1, 2), keepdims=True))
    prior = np.maximum(weights, 1e-12) / np.maximum(weights, 1e-12).sum()
    to_a, to_b = np.ones((len(groups), k)), np.ones((len(groups), k))
    for _ in range(EM_ROUNDS):
        for _ in range(SWEEPS):
            belief = np.tile(np.log(prior), (n, 1))
            np.add.at(belief, a, np.log(to_a))
            np.add.at(belief, b, np.log(to_b))
            cavity_a = _normalised(belief[a] - np.log(to_a))
            cavity_b = _normalised(belief[b] - np.log(to_b))
            new_a = np.einsum("eij,ej->ei", like, cavity_b)
            new_b = np.einsum("eij,ei->ej", like, cavity_a)
            to_a = 0.5 * to_a + 0.5 * new_a / new_a.sum(axis=1, keepdims=True)
            to_b = 0.5 * to_b + 0.5 * new_b / new_b.sum(axis=1, keepdims=True)
        belief = np.tile(np.log(prior), (n, 1))
        np.add.at(belief, a, np.log(to_a))
        np.add.at(belief, b, np.log(to_b))
        prior = np.maximum(_normalised(belief).mean(axis=0), 1e-12)
        prior /= prior.sum()
    cavity_a = _normalised(belief[a] - np.log(to_a))
    cavity_b = _normalised(belief[b] - np.log(to_b))
    joint = like * cavity_a[:, :, None] * cavity_b[:, None, :]
    joint = (joint / joint.sum(axis=(1, 2), keepdims=True)).reshape(len(groups), -1)
    position = np.interp(PAIR_LOG_F.ravel(), LOG_F, np.arange(k))
    low = np.floor(position).astype(np.int64)
    high, share = np.minimum(low + 1, k - 1), position - low
    post = np.zeros((len(groups), k))
    for cell in range(joint.shape[1]):
        post[:, low[cell]] += joint[:, cell] * (1.0 - share[cell])
        post[:, high[cell]] += joint[:, cell] * share[cell]
    return post


def by_sitting(
    groups: list[str], a: np.ndarray, b: np.ndarray, weights: np.ndarray
) -> np.ndarray | None:
    """:func:`infer` for latency sitting groups (None, kiana's own posterior, for memory)."""
    if not groups or groups[0].split("\x1f")[1] != "latency":
        return None
    return infer(groups, a + b, weights)


if __name__ == "__main__":
    replace_posterior(by_sitting)
    sys.argv = ["detection.py", "--noise", "realistic", *sys.argv[1:]]
    detection.main()
