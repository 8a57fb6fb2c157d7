"""E-divisive change points: the fast batch against the slow reference, and the
behaviour that matters (a creep is caught, an outlier is not)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kiana.stats import JudgeOptions, judge
from kiana.stats.changepoints import (
    best_split_reference,
    detect,
    empty_changepoints,
    prefix_rows,
    q_statistics,
)
from tests.stats_fixtures import assert_no_nan, frame, series

VERSIONS = [f"0.{i // 10}.{i % 10}" for i in range(16)]

value = st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False).map(
    lambda x: round(x, 3)
)
values = st.lists(value, min_size=4, max_size=18)
#: A series long enough for two segments of its minimum segment size, and that size.
sized = st.integers(min_value=2, max_value=4).flatmap(
    lambda m: st.tuples(st.lists(value, min_size=2 * m, max_size=18), st.just(m))
)


@settings(max_examples=150, deadline=None)
@given(sized)
def test_fast_q_matches_the_reference(case: tuple[list[float], int]) -> None:
    xs, min_size = case
    q = q_statistics(np.array([xs]), min_size)[0]
    tau_ref, q_ref = best_split_reference(xs, min_size)
    assert math.isclose(float(q.max()), q_ref, rel_tol=1e-9, abs_tol=1e-9)
    # The fast argmax is a maximiser too (ties may pick another split of equal Q).
    assert math.isclose(float(q[tau_ref - min_size]), q_ref, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(values, min_size=1, max_size=4).filter(lambda m: len({len(xs) for xs in m}) == 1))
def test_prefix_rows_are_the_whole_block_of_distances(many: list[list[float]]) -> None:
    # the G x L x L block the running rows replace (issue 41: 8 L^2 bytes a series),
    # summed down the rows, then along them: the same bits
    x = np.array(many)
    block = np.abs(x[:, :, None] - x[:, None, :])
    for i in range(1, x.shape[1]):
        block[:, i, :] = block[:, i - 1, :] + block[:, i, :]
    rows = block[:, -1, :].copy()
    block = np.cumsum(block, axis=2)
    index = np.arange(x.shape[1])
    diag, last, running = prefix_rows(x)
    assert np.array_equal(diag, block[:, index, index])
    assert np.array_equal(last, block[:, :, -1])
    assert np.array_equal(running, rows)


@settings(max_examples=40, deadline=None)
@given(st.lists(values, min_size=1, max_size=5))
def test_batching_does_not_change_the_answer(many: list[list[float]]) -> None:
    opts = JudgeOptions(changepoint_min_points=4, changepoint_min_size=2)
    arrays = [np.array(xs) for xs in many]
    noise = [np.full(len(xs), 0.01) for xs in many]
    together = detect(arrays, noise, opts)
    alone = [detect([a], [n], opts)[0] for a, n in zip(arrays, noise, strict=True)]
    assert together == alone


def creep(n: int = 14, per_step: float = 0.012, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return [100.0 * (1 + per_step) ** i * (1 + rng.normal(0, 0.002)) for i in range(n)]


def test_a_slow_creep_of_sub_threshold_steps_is_caught() -> None:
    medians = creep()
    result = judge(frame(series(VERSIONS[: len(medians)], medians, spread=0.01)))
    assert set(result.steps["verdict"]) == {"unchanged"}  # no single step says it
    cps = result.changepoints
    assert cps.height >= 1
    assert_no_nan(cps)
    assert set(cps["verdict"]) == {"regression"}
    assert (cps["change"] > 0.03).all()


@pytest.mark.heavy
def test_a_one_off_outlier_is_not_a_change_point() -> None:
    rng = np.random.default_rng(1)
    medians = [100.0 * (1 + rng.normal(0, 0.002)) for _ in range(14)]
    medians[7] *= 1.5
    result = judge(frame(series(VERSIONS[:14], medians, spread=0.01)))
    assert result.changepoints.height == 0
    medians[-1] *= 1.5  # nor at the end
    assert judge(frame(series(VERSIONS[:14], medians))).changepoints.height == 0


def test_a_level_shift_is_found_where_it_is() -> None:
    medians = [100.0] * 7 + [110.0] * 7
    medians = [m * (1 + 0.001 * ((i * 7) % 5 - 2)) for i, m in enumerate(medians)]
    cps = judge(frame(series(VERSIONS[:14], medians))).changepoints
    assert cps.height == 1
    row = cps.row(0, named=True)
    assert (row["from_version"], row["to_version"]) == (VERSIONS[6], VERSIONS[7])
    assert row["change"] == pytest.approx(0.10, abs=0.01)


def test_identical_values_and_short_series() -> None:
    flat = judge(frame(series(VERSIONS[:10], [100.0] * 10, spread=0.0)))
    assert flat.changepoints.height == 0
    short = judge(frame(series(VERSIONS[:3], [100.0, 150.0, 200.0])))
    assert short.changepoints.height == 0
    # Empty, but of the same columns and types as a frame with change points in it.
    assert short.changepoints.schema == empty_changepoints().schema


def test_a_baseline_shift_is_drift_and_explains_liger() -> None:
    shift = [100.0] * 7 + [112.0] * 7
    shift = [m * (1 + 0.001 * ((i * 3) % 5 - 2)) for i, m in enumerate(shift)]
    rows = series(VERSIONS[:14], shift) + series(
        VERSIONS[:14], [2 * m for m in shift], provider="huggingface"
    )
    cps = judge(frame(rows)).changepoints
    assert cps.height == 2
    assert set(cps["verdict"]) == {"drift"}
    assert cps.filter(pl.col("provider") == "liger")["control_provider"][0] == "huggingface"


@pytest.mark.heavy
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
@settings(max_examples=150, deadline=None)
@given(
    st.lists(value, min_size=4, max_size=18).flatmap(
        lambda xs: st.tuples(st.just(xs), st.integers(min_value=2, max_value=len(xs) - 2))
    )
)
def test_yuen_matches_scipy(case: tuple[list[float], int]) -> None:
    from scipy.stats import ttest_ind

    from kiana.stats.changepoints import yuen_p

    xs, tau = case
    got = float(yuen_p(np.array([xs]), np.array([0.0]), np.array([tau]))[0])
    with np.errstate(all="ignore"):
        want = float(ttest_ind(xs[tau:], xs[:tau], equal_var=False, trim=0.2).pvalue)
    if math.isnan(want):  # scipy: no variance on either side
        assert got in (0.0, 1.0)
    else:
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12)


def test_one_wild_session_does_not_hide_a_level_shift() -> None:
    """The shape of a real history: zero-spread sessions, one run 41% off at point 10
    that returns at once, the level 12.5% lower from point 15 on, +19% at point 71."""
    rng = np.random.default_rng(3)
    levels = [100.0] * 15 + [87.5] * 56 + [87.5 * 1.19] * 30
    medians = [m * (1 + rng.normal(0, 0.004)) for m in levels]
    medians[10] *= 0.59
    versions = [f"{i // 100}.{(i // 10) % 10}.{i % 10}" for i in range(len(medians))]
    found = judge(frame(series(versions, medians, spread=0.0))).changepoints
    at = sorted(found["to_version"].to_list())
    assert at == [versions[15], versions[71]], found
