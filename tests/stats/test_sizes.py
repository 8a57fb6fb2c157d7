"""Every statistic is finite at any size: sweeps of 1 to 100,000 workloads, sessions
with hundreds of versions (issue 41: ``2.0**n`` overflowed past 1,023 workloads)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kiana.stats import judge
from kiana.stats.pooling import EXACT_SIGN_MAX, KEYS, pool, pool_reference, sign_confidence
from tests.stats_fixtures import assert_no_nan, frame, run, sweep_rows


def sign_reference(agree: int, total: int) -> float:
    """``1 - P(Binomial(total, 1/2) >= agree)`` as an exact fraction, rounded once:
    the binomial coefficients by their recurrence ``C(n, j+1) = C(n, j) (n-j) / (j+1)``."""
    if total <= 0:
        return 0.0
    tail, c = 0, 1
    for j in range(total + 1):
        if j >= agree:
            tail += c
        c = c * (total - j) // (j + 1)
    return float(1 - Fraction(tail, 2**total))


def test_reference_by_hand() -> None:
    assert sign_reference(8, 8) == 1 - 1 / 256
    assert sign_reference(3, 6) == 1 - Fraction(42, 64)
    assert sign_reference(0, 5) == 0.0
    assert sign_reference(0, 0) == 0.0


def test_past_1023_workloads() -> None:
    """The overflow of issue 41: every workload agreeing in a sweep of 1,024 and more."""
    n = np.array([1023, 1024, 1025, 5000, 100_000])
    out = sign_confidence(n, n)
    assert np.isfinite(out).all()
    assert out == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3 * EXACT_SIGN_MAX), st.floats(0.0, 1.0))
def test_sign_matches_the_exact_reference(total: int, share: float) -> None:
    """Both paths against fractions: exact integers up to EXACT_SIGN_MAX (to 1e-12), and
    scipy's regularised incomplete beta beyond, whose float error reaches about 2e-12
    (seen at 2,687 workloads, half agreeing), to 1e-9."""
    agree = round(share * total)
    got = sign_confidence(np.array([agree]), np.array([total]))[0]
    tolerance = 1e-12 if total <= EXACT_SIGN_MAX else 1e-9
    assert got == pytest.approx(sign_reference(agree, total), abs=tolerance)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 100_000), st.data())
def test_sign_is_a_probability_at_any_size(total: int, data: st.DataObject) -> None:
    agree = np.array(sorted(data.draw(st.lists(st.integers(0, total), min_size=2, max_size=6))))
    out = sign_confidence(agree, np.full(agree.shape, total))
    assert np.isfinite(out).all() and ((out >= 0) & (out <= 1)).all()
    assert (np.diff(out) >= -1e-12).all()  # more agreeing workloads, no less confidence


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 100_000), st.integers(0, 2**32 - 1))
def test_pool_is_finite_at_any_size(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ys, ss = rng.normal(0.05, 0.02, k), rng.uniform(0.001, 0.1, k)
    steps = pl.DataFrame({"y": ys, "s": ss}).with_columns(pl.lit("x").alias(c) for c in KEYS)
    out = pool(steps, pl.col("y"), pl.col("s"), "p")
    assert out.height == 1
    row = out.row(0, named=True)
    assert all(math.isfinite(row[f"p_{name}"]) for name in ("mu", "se", "tau"))
    if k <= 2000:  # the plain loops of the reference, where they are quick
        mu, se, tau = pool_reference(list(ys), list(ss))
        assert (row["p_mu"], row["p_se"]) == pytest.approx((mu, se), rel=1e-9)
        assert row["p_tau"] == pytest.approx(tau, rel=1e-6, abs=1e-12)


def _two_providers(k: int) -> pl.DataFrame:
    rng = np.random.default_rng(k)
    rows = sweep_rows(list(0.2 + rng.normal(0, 0.01, k)), spread=0.01)
    rows += sweep_rows(list(rng.normal(0, 0.01, k)), spread=0.01, provider="huggingface")
    return frame(rows)


@pytest.mark.parametrize("k", [1, 2, 1024, 2000])
def test_judge_a_sweep_of_k_workloads(k: int) -> None:
    found = judge(_two_providers(k)).findings
    liger = found.filter(pl.col("provider") == "liger")
    assert liger["verdict"].to_list() == ["regression"]
    assert_no_nan(found.select(pl.col(pl.Float64)))
    assert ((found["confidence"] >= 0) & (found["confidence"] <= 1)).all()


@pytest.mark.heavy
def test_judge_a_sweep_of_100000_workloads() -> None:
    found = judge(_two_providers(100_000)).findings
    assert found.filter(pl.col("provider") == "liger")["verdict"].to_list() == ["regression"]
    assert_no_nan(found.select(pl.col(pl.Float64)))


@pytest.mark.parametrize("same_sitting", [True, False])
def test_hundreds_of_versions(same_sitting: bool) -> None:
    """300 version labels: in one sitting (every run at one time, as clones of a history
    sharing their timestamps make it), or one session each."""
    rows = [
        run(f"0.{v}.0", 100.0 * (1 + 0.001 * v), workload=f"w{w}",
            day=1 if same_sitting else v + 1, minute=w)
        for v in range(300) for w in range(3)
    ]  # fmt: skip
    judged = judge(frame(rows))
    assert_no_nan(judged.findings.select(pl.col(pl.Float64)))
    assert judged.findings.height > 0
