"""Liger's real CSVs (``../shared/liger``): the verdicts a maintainer checked by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest

from kiana.stats import Judgement, judge
from tests.stats_fixtures import LIGER_CSVS, real_runs

pytestmark = pytest.mark.skipif(
    not LIGER_CSVS.is_dir(), reason="../shared/liger (Liger-Kernel's real CSVs) is absent"
)


@pytest.fixture(scope="module")
def judged() -> Judgement:
    """The judgement of the real CSVs, once per module (a shared fixture: the quick
    loop's 3 s rule charges it to no single test)."""
    return judge(real_runs())


def liger(judged: Judgement, kernel: str, pass_: str, start: str) -> dict[str, object]:
    found = judged.findings.filter(
        (pl.col("kernel") == kernel)
        & (pl.col("pass") == pass_)
        & (pl.col("provider") == "liger")
        & (pl.col("gpu") == "NVIDIA B200")
        & (pl.col("metric") == "latency")
        & pl.col("from_session").str.starts_with(start)
    )
    assert found.height == 1
    row: dict[str, object] = found.row(0, named=True)
    return row


@pytest.mark.heavy
def test_jsd_forward_is_neither_an_improvement_nor_a_regression(judged: Judgement) -> None:
    # No commit touched jsd between 2026-05-27 and 2026-06-16; torch of the same sitting
    # moved -1% to -11%, Liger's four workloads -10%..-2%: a shifted sitting, not a change.
    row = liger(judged, "jsd", "forward", "2026-05-27")
    assert str(row["to_session"]).startswith("2026-06-16")
    assert row["verdict"] not in {"improvement", "regression"}
    assert "rest on single samples" in str(row["evidence"])


@pytest.mark.heavy
@pytest.mark.parametrize("pass_", ["forward", "full", "no-grad-forward"])
def test_cross_entropy_stays_an_improvement(judged: Judgement, pass_: str) -> None:
    # The cutile CSV (2026-06-16) and the cutedsl CSV (2026-07-05) measured Triton's code
    # (their liger_triton, imported as liger): a same-label step, -9..-11% on every
    # workload while torch stayed within +0.6%.
    row = liger(judged, "cross_entropy", pass_, "2026-06-16")
    assert (row["from_version"], row["to_version"]) == ("0.8.0", "0.8.0")
    assert str(row["to_session"]).startswith("2026-07-05")
    assert row["verdict"] == "improvement"
    assert row["control_provider"] == "torch"
    assert row["workloads_affected"] == row["workloads_total"] == 4


@pytest.mark.heavy
def test_nothing_on_the_real_csvs_is_drift_below_the_threshold(judged: Judgement) -> None:
    drift = judged.findings.filter(pl.col("verdict") == "drift")
    assert (drift["change"].abs() >= 0.03).all()


def test_memory_never_drifts_and_coverage_is_said(judged: Judgement) -> None:
    result = judged
    assert (
        result.findings.filter(
            (pl.col("metric") == "memory") & (pl.col("verdict") == "drift")
        ).height
        == 0
    )
    assert result.coverage.compared < result.coverage.series


def test_no_unchanged_finding_reaches_the_threshold(judged: Judgement) -> None:
    # `unchanged` means the data rule out the threshold (issue 39): no such finding's own
    # estimate, nor its one-standard-error interval, reaches 3%.
    unchanged = judged.findings.filter(pl.col("verdict") == "unchanged")
    assert unchanged.height > 0
    reach = unchanged.filter(pl.col("change").abs() >= 0.03)
    assert reach.height == 0, reach.select("kernel", "pass", "provider", "change").rows()
    upper = unchanged.filter(
        pl.col("change").log1p().abs() + pl.col("change_se") >= math.log1p(0.03)
    )
    assert upper.height == 0
