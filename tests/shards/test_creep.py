"""A change-point search resumed on appended values finds what a search of the whole
series finds (the same points, p-values and right chain), shifts before, at and after
the values appended; ``search`` itself is held to the judge's change points by the
stored judgement's tests (``test_incremental.py``: change points compared)."""

from __future__ import annotations

import numpy as np
import pytest

from kiana.shards import creep
from kiana.stats import JudgeOptions

OPTIONS = JudgeOptions()


def _series(seed: int, length: int, shifts: list[tuple[int, float]]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(0.0, 0.01, length)
    for at, size in shifts:
        values[at:] += size
    return values


def _same(a: creep.Found, b: creep.Found) -> None:
    assert a.points == b.points
    assert [(x.start, x.split, x.p) for x in a.chain] == [(y.start, y.split, y.p) for y in b.chain]
    for x, y in zip(a.chain, b.chain, strict=True):
        for name in ("diag", "last", "rows"):
            u, v = getattr(x, name), getattr(y, name)
            assert (u is None) == (v is None)
            if u is not None:
                assert np.array_equal(u, v)


@pytest.mark.parametrize(
    ("length", "before", "shifts"),
    [
        (60, 50, []),  # no change point
        (60, 50, [(20, 0.2)]),  # one, left of the values appended
        (80, 60, [(20, 0.2), (45, -0.15)]),  # two, both before
        (70, 55, [(58, 0.25)]),  # one among the values appended
        (90, 40, [(15, 0.1), (70, 0.3)]),  # one before, one after
        (30, 8, [(20, 0.2)]),  # too short to be tested before
    ],
)
def test_resume_equals_a_search_of_the_whole_series(
    length: int, before: int, shifts: list[tuple[int, float]]
) -> None:
    values = _series(length + before, length, shifts)
    noise = np.full(length, 0.005)
    old = creep.search([values[:before]], [noise[:before]], [(0, 0)], OPTIONS)[0]
    resumed = creep.resume(old, values, noise, before, OPTIONS)
    whole = creep.search([values], [noise], [(0, 0)], OPTIONS)[0]
    assert bool(whole.points) == bool(shifts)  # the shifts are found
    _same(resumed, whole)


@pytest.mark.parametrize("seed", range(40))
def test_resume_equals_a_search_of_random_series(seed: int) -> None:
    """Random lengths, shifts and appended counts (a split that moves, a test that
    turns, a chain that grows): resumed = searched whole, state bits included."""
    rng = np.random.default_rng(seed)
    length = int(rng.integers(20, 160))
    before = int(rng.integers(8, length))
    shifts = [(int(rng.integers(1, length)), float(rng.normal(0, 0.2))) for _ in range(3)]
    values = _series(seed, length, shifts[: int(rng.integers(0, 4))])
    noise = np.full(length, float(rng.choice([0.0, 0.002, 0.005])))
    old = creep.search([values[:before]], [noise[:before]], [(0, 0)], OPTIONS)[0]
    resumed = creep.resume(old, values, noise, before, OPTIONS)
    _same(resumed, creep.search([values], [noise], [(0, 0)], OPTIONS)[0])


@pytest.mark.parametrize(("length", "added", "start"), [(12, 1, 0), (40, 7, 3), (150, 25, 9)])
def test_extend_is_append_value_by_value(length: int, added: int, start: int) -> None:
    """Extending a link's state by several values at once gives the bits of appending
    them one at a time, and of the state computed from scratch."""
    values = np.round(_series(length, start + length + added, [(length // 2, 0.1)]), 3)
    diag, last, rows = creep.q_state(values[None, start : start + length])
    one = creep.Link(start, None, None, diag[0], last[0], rows[0])
    many = creep.Link(start, None, None, diag[0].copy(), last[0].copy(), rows[0].copy())
    for j in range(start + length, values.size):
        creep.append(one, values[start:j], float(values[j]))
    creep.extend(many, values, start + length)
    whole = creep.q_state(values[None, start:])
    for n, name in enumerate(("diag", "last", "rows")):
        assert np.array_equal(getattr(many, name), getattr(one, name))
        assert np.array_equal(getattr(many, name), whole[n][0])


def test_resume_all_equals_a_search_of_each_series() -> None:
    """Many series resumed at once (links of one rank tested together, several of one
    length in a batch) find what a search of each whole series finds."""
    olds: dict[int, tuple[creep.Found, int]] = {}
    values: list[np.ndarray] = []
    noise: list[np.ndarray] = []
    for seed in range(60):
        rng = np.random.default_rng(seed)
        length = 100 if seed % 3 == 0 else int(rng.integers(20, 160))
        before = int(rng.integers(8, length))
        shifts = [(int(rng.integers(1, length)), float(rng.normal(0, 0.2))) for _ in range(3)]
        values.append(_series(seed, length, shifts[: int(rng.integers(0, 4))]))
        noise.append(np.full(length, float(rng.choice([0.0, 0.002, 0.005]))))
        old = creep.search([values[-1][:before]], [noise[-1][:before]], [(0, 0)], OPTIONS)[0]
        olds[seed] = (old, before)
    resumed = creep.resume_all(olds, values, noise, OPTIONS)
    for s in olds:
        _same(resumed[s], creep.search([values[s]], [noise[s]], [(0, 0)], OPTIONS)[0])


def test_links_extended_in_one_batch_are_each_extended_alone() -> None:
    """:func:`creep.extend_batch` of links of one length and one count of new values
    gives each link the bits :func:`creep.extend` gives it alone."""
    series = [np.round(_series(seed, 60, [(30, 0.1 * seed)]), 3) for seed in range(5)]
    alone, batched = [], []
    for values in series:
        diag, last, rows = creep.q_state(values[None, 4:57])
        alone.append(creep.Link(4, None, None, diag[0], last[0], rows[0]))
        batched.append(creep.Link(4, None, None, diag[0].copy(), last[0].copy(), rows[0].copy()))
        creep.extend(alone[-1], values, 57)
    creep.extend_batch(batched, np.stack([values[4:] for values in series]), 53)
    for one, many in zip(alone, batched, strict=True):
        for name in ("diag", "last", "rows"):
            assert np.array_equal(getattr(many, name), getattr(one, name))
