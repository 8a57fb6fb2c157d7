"""Pooling a sweep and the lone-workload rule, against their slow references."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kiana.stats.pooling import KEYS, lone, lone_reference, pool, pool_reference

PAIRS = st.lists(
    st.tuples(st.floats(-0.5, 0.5, allow_nan=False), st.floats(0.001, 0.3, allow_nan=False)),
    min_size=1,
    max_size=9,
)


def frame_of(pairs: list[tuple[float, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            **{k: ["x"] * len(pairs) for k in KEYS},
            "y": [y for y, _ in pairs],
            "s": [s for _, s in pairs],
        }
    )


@pytest.mark.heavy
@settings(max_examples=200, deadline=None)
@given(PAIRS, st.floats(0.0, 0.1, allow_nan=False))
def test_pool_matches_the_reference(pairs: list[tuple[float, float]], offset: float) -> None:
    steps = frame_of(pairs).with_columns(pl.lit(offset**2).alias("o"))
    got = pool(steps, pl.col("y"), pl.col("s"), "p", pl.col("o")).row(0, named=True)
    mu, se, tau = pool_reference([y for y, _ in pairs], [s for _, s in pairs], offset)
    assert got["p_mu"] == pytest.approx(mu, rel=1e-9, abs=1e-12)
    assert got["p_se"] == pytest.approx(se, rel=1e-9)
    assert got["p_tau"] == pytest.approx(tau, rel=1e-6, abs=1e-9)
    assert got["p_k"] == len(pairs)


@pytest.mark.heavy
@settings(max_examples=200, deadline=None)
@given(PAIRS)
def test_lone_matches_the_reference(pairs: list[tuple[float, float]]) -> None:
    got = frame_of(pairs).select(lone(pl.col("y"), pl.col("s"), 3.0, 0.03))["y"].to_list()
    assert got == lone_reference([y for y, _ in pairs], [s for _, s in pairs], 3.0, 0.03)


def test_the_sitting_offset_does_not_average_away() -> None:
    pairs = [(0.01, 0.001)] * 50  # fifty precise workloads of one sitting
    steps = frame_of(pairs).with_columns(pl.lit(0.02**2).alias("o"))
    got = pool(steps, pl.col("y"), pl.col("s"), "p", pl.col("o")).row(0, named=True)
    assert got["p_se"] == pytest.approx(0.02, rel=0.01)
