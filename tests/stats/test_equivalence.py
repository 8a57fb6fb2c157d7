"""``unchanged`` means the data rule out the threshold (Schuirmann's two one-sided tests,
:mod:`kiana.stats.sweeps`); an ``inconclusive`` finding says which way it leans."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest

from kiana.stats import JudgeOptions, judge
from kiana.stats.rules import leaning
from tests.stats_fixtures import frame, run, sweep_rows

OFF = JudgeOptions(calibrate=False)


def _finding(changes: list[float], spread: float) -> dict[str, Any]:
    found = judge(frame(sweep_rows(changes, spread=spread)), OFF).findings
    row: dict[str, Any] = found.row(0, named=True)
    return row


def test_an_estimate_beyond_the_threshold_is_never_unchanged() -> None:
    # jsd/full liger, H100 PCIe, 0.3.0 -> 0.3.1 was "unchanged: +5.8% ± 2.3%" (3 x 2.3%
    # resolves 9%): it cannot rule out a 3% change, and it leans regression.
    row = _finding([0.058] * 4, spread=0.055)
    assert 0.018 < row["change_se"] < 0.028
    assert row["verdict"] == "inconclusive"
    assert "+5.8% ± 2.3%" in row["evidence"] or "+5.8% ±" in row["evidence"]
    assert "leans regression" in row["evidence"]
    assert row["reruns"] is not None and row["reruns"] > 1


def test_an_improvement_leans_its_way() -> None:
    row = _finding([-0.058] * 4, spread=0.055)
    assert row["verdict"] == "inconclusive" and "leans improvement" in row["evidence"]


def test_a_flat_precise_sweep_is_unchanged() -> None:
    row = _finding([0.001, -0.002, 0.0, 0.001], spread=0.01)
    assert row["verdict"] == "unchanged"


def test_an_interval_reaching_the_threshold_is_not_unchanged() -> None:
    # +2.5%: the estimate is below 3%, its one-standard-error interval is not.
    row = _finding([0.025] * 4, spread=0.02)
    assert math.log1p(row["change"]) + row["change_se"] >= math.log1p(0.03)
    assert row["verdict"] == "inconclusive"


def test_leaning() -> None:
    frame_ = pl.DataFrame({
        "verdict": ["inconclusive", "inconclusive", "inconclusive", "unchanged"],
        "change": [0.058, -0.04, 0.01, 0.058], "change_se": [0.023, 0.02, 0.02, 0.023],
    })  # fmt: skip
    got = frame_.select(leaning(pl.col("verdict"), pl.col("change"), pl.col("change_se")))
    assert got.to_series().to_list() == ["regression", "improvement", None, None]


@pytest.mark.heavy
def test_random_sweeps_never_call_a_reaching_estimate_unchanged() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        changes = list(rng.normal(rng.uniform(-0.06, 0.06), 0.01, size=4))
        row = _finding(changes, spread=float(rng.uniform(0.005, 0.06)))
        if row["verdict"] == "unchanged":
            assert abs(math.log1p(row["change"])) + row["change_se"] < math.log1p(0.03)


def _split_finding() -> dict[str, Any]:
    """Three precise workloads that stayed and four noisy ones that moved +40% together
    (llama4_rope backward on the H100, CI 2025-10-17 -> 10-24: "-0.2% ± 1.7%", the
    median workload +46%)."""
    rows: list[dict[str, Any]] = []
    for w, (change, spread) in enumerate([(0.0, 0.001)] * 3 + [(0.40, 0.2)] * 4):
        common = {"workload": f"w{w}", "spread": spread, "provider": "liger", "minute": w}
        rows.append(run("0.7.0", 100.0 * (w + 1), day=1, **common))
        rows.append(run("0.8.0", 100.0 * (w + 1) * (1 + change), day=9, **common))
    found = judge(frame(rows), OFF).findings
    row: dict[str, Any] = found.row(0, named=True)
    return row


def test_a_sweep_whose_median_workload_moved_is_never_unchanged() -> None:
    row = _split_finding()
    assert abs(row["change"]) < 0.03 and row["median_change"] > 0.3
    assert row["verdict"] == "inconclusive"


def test_a_split_sweep_says_its_workloads_disagree_and_promises_no_reruns() -> None:
    row = _split_finding()
    assert "its median workload moved +40.0%: the workloads disagree" in row["evidence"]
    assert row["reruns"] is None
