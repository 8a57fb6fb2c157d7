"""Verdicts of steps on small hand-made series.

The two-gate rule itself is tested with the calibration off (``calibrate=False``: the
noise is what the spreads and replicates measured); the calibrated session noise of
hand-made series is tested at the end and in ``test_calibration.py``."""

from __future__ import annotations

import polars as pl
import pytest

from kiana.errors import UsageError
from kiana.stats import JudgeOptions, judge
from kiana.stats.noise import SPREAD_TO_SIGMA
from kiana.stats.versions import version_table
from tests.stats_fixtures import assert_no_nan, frame, run, series

V = ["0.5.0", "0.5.1"]
MEASURED = JudgeOptions(calibrate=False)


def one_step(
    a: float, b: float, *, spread: float = 0.01, options: JudgeOptions = MEASURED, **kw: object
) -> dict[str, object]:
    steps = judge(frame(series(V, [a, b], spread=spread, **kw)), options).steps  # type: ignore[arg-type]
    assert steps.height == 1
    assert_no_nan(steps)
    return steps.row(0, named=True)


def test_separated_spreads_are_a_regression() -> None:
    row = one_step(100.0, 110.0)
    assert row["verdict"] == "regression"
    assert row["change"] == pytest.approx(0.10)
    assert row["noise_source"] == "spread"
    assert row["severity"] > 3
    expected_noise = (0.01 / SPREAD_TO_SIGMA) * 2**0.5
    assert row["noise"] == pytest.approx(expected_noise, rel=1e-6)
    assert row["from_median_ns"] == 100 and row["to_median_ns"] == 110


def test_improvement() -> None:
    assert one_step(100.0, 90.0)["verdict"] == "improvement"


def test_overlapping_spreads_are_unchanged() -> None:
    # 4% change, 3% spread: practical, but only ~1.6 noise units: within noise.
    row = one_step(100.0, 104.0, spread=0.03)
    assert row["verdict"] == "unchanged"
    assert "|z|=1.6" in row["evidence"]


def test_separated_but_small_is_unchanged() -> None:
    row = one_step(100.0, 101.0, spread=0.001)
    assert abs(row["severity"]) > 3
    assert row["verdict"] == "unchanged"


def test_too_noisy_to_resolve_is_inconclusive() -> None:
    assert one_step(100.0, 101.0, spread=0.2)["verdict"] == "inconclusive"


def test_threshold_option() -> None:
    rows = frame(series(V, [100.0, 104.0], spread=0.001))
    assert judge(rows, MEASURED).steps["verdict"][0] == "regression"
    options = JudgeOptions(threshold=0.05, calibrate=False)
    assert judge(rows, options).steps["verdict"][0] == "unchanged"


def test_zero_spread_is_a_single_sample_not_the_spread_of_other_runs() -> None:
    # Earlier kiana lent w0 the 1% spread of w1: a 3% move between two single samples
    # became |z| 3.  One do_bench sample says nothing about its noise.
    rows = series(V, [100.0, 103.0], spread=0.0)
    rows += series(V, [50.0, 50.2], spread=0.01, workload="w1")
    row = judge(frame(rows)).steps.filter(pl.col("workload") == "w0").row(0, named=True)
    assert row["noise_source"] == "single"
    assert row["verdict"] != "regression"
    assert "nothing measured (single)" in str(row["evidence"])


def test_no_noise_information_is_inconclusive_unless_gross() -> None:
    assert one_step(100.0, 110.0, spread=0.0)["verdict"] == "inconclusive"
    row = one_step(100.0, 150.0, spread=0.0)
    assert row["verdict"] == "regression"
    assert row["noise_source"] == "none"
    assert "size alone" in row["evidence"]
    assert row["severity"] is None and row["noise"] is None


def test_identical_values_and_all_zero_spreads() -> None:
    row = one_step(100.0, 100.0, spread=0.0)
    assert row["verdict"] == "inconclusive"
    assert row["change"] == 0.0


def test_replicates_are_pooled_never_compared() -> None:
    # Replicates: runs of one session, minutes apart.
    rows = [run("0.5.0", m, day=1, minute=t) for t, m in ((0, 100.0), (5, 102.0), (10, 98.0))]
    rows += [run("0.5.1", 111.0, day=10), run("0.5.1", 109.0, day=10, minute=5)]
    result = judge(frame(rows))
    assert result.steps.height == 1
    row = result.steps.row(0, named=True)
    assert (row["from_runs"], row["to_runs"]) == (3, 2)
    assert row["from_median"] == 100.0 and row["to_median"] == 110.0
    assert row["noise_source"] == "replicates"  # replicate dispersion > 1% spread
    assert "replicates 3+2" in row["evidence"]


def test_replicates_alone_make_no_step() -> None:
    rows = [run("0.5.0", m, day=1, minute=t) for t, m in ((0, 100.0), (5, 104.0))]
    result = judge(frame(rows))
    assert result.steps.height == 0
    assert result.findings.height == 0
    assert "verdict" in result.steps.columns


def test_one_run_and_empty_frames() -> None:
    assert judge(frame([run("0.5.0", 100.0)])).steps.height == 0
    empty = judge(frame([]))
    assert empty.steps.height == 0 and empty.findings.height == 0
    assert empty.changepoints.height == 0


def test_failed_runs_and_missing_medians_are_not_judged() -> None:
    rows = series(V, [100.0, 100.5])
    rows.append(run("0.5.2", 500.0, status="failed"))
    bad = run("0.5.2", 100.0)
    bad["median"] = None
    rows.append(bad)
    result = judge(frame(rows))
    assert result.steps["to_version"].to_list() == ["0.5.1"]
    assert result.runs_judged == 2


def test_memory_without_spread_is_exact_and_calibrated() -> None:
    row = one_step(1000.0, 1100.0, spread=0.0, metric="memory", options=JudgeOptions())
    assert row["verdict"] == "regression"
    assert row["noise_source"] == "exact"
    assert row["from_median_ns"] is None


def test_baseline_version_compares_every_version_to_it() -> None:
    rows = series(["0.5.0", "0.5.1", "0.5.2", "0.6.0"], [100.0, 101.0, 102.0, 120.0])
    steps = judge(frame(rows), JudgeOptions(baseline="0.5.1", calibrate=False)).steps
    assert steps["from_version"].unique().to_list() == ["0.5.1"]
    assert steps["to_version"].to_list() == ["0.5.0", "0.5.2", "0.6.0"]
    assert steps["verdict"].to_list()[-1] == "regression"


def test_unknown_baseline_is_a_usage_error_with_hint() -> None:
    with pytest.raises(UsageError) as info:
        judge(frame(series(V, [1.0, 1.0])), JudgeOptions(baseline="9.9"))
    assert info.value.hint is not None and "0.5.0, 0.5.1" in info.value.hint


def test_invalid_options() -> None:
    with pytest.raises(UsageError):
        JudgeOptions(threshold=-1)
    with pytest.raises(UsageError):
        JudgeOptions(separation=float("nan"))


def test_version_order_pep440_and_labels_by_time() -> None:
    rows = [
        run("0.5.10", 1.0, day=30),
        run("0.5.9", 1.0, day=20),
        run("main", 1.0, day=25),
        run("0.6.0rc1", 1.0, day=40),
        run("0.6.0", 1.0, day=50),
        run("abc123f", 1.0, day=60),
    ]
    table = version_table(frame(rows))
    assert table["version"].to_list() == [
        "0.5.9", "main", "0.5.10", "0.6.0rc1", "0.6.0", "abc123f"
    ]  # fmt: skip
    assert table.filter(pl.col("version") == "main")["version_kind"][0] == "label"


def test_non_numeric_inputs_never_produce_nan() -> None:
    rows = series(V, [0.0, 5.0]) + series(V, [5.0, 0.0], workload="w1")
    rows += series(V, [1.0, 2.0], workload="w2", p20=float("nan"), p80=float("nan"))
    result = judge(frame(rows))
    assert result.steps.height == 3
    assert_no_nan(result.steps)
    assert_no_nan(result.findings)
    assert set(result.steps["verdict"]) <= {"inconclusive", "regression", "improvement"}


def test_calibrated_noise_is_added_to_the_measured_noise() -> None:
    measured = one_step(100.0, 110.0)
    calibrated = one_step(100.0, 110.0, options=JudgeOptions())
    assert calibrated["noise"] > measured["noise"]
    assert calibrated["workload_noise"] > 0 and calibrated["sitting_noise"] > 0
    assert "session per workload" in str(calibrated["evidence"])


def test_a_calm_history_makes_small_changes_visible_and_a_noisy_one_hides_them() -> None:
    def last_step(scatter: float) -> dict[str, object]:
        rows = []
        for w in range(6):  # six workloads that scatter by +-scatter between sittings
            levels = [100.0 * (1 + scatter * ((w + d) % 3 - 1)) for d in range(8)] + [104.0]
            versions = [f"0.{d + 1}.0" for d in range(9)]
            rows += series(versions, levels, spread=0.002, workload=f"w{w}")
        steps = judge(frame(rows)).steps
        return steps.filter(pl.col("to_version") == "0.9.0").row(0, named=True)

    assert last_step(0.0005)["verdict"] == "regression"
    assert last_step(0.03)["verdict"] != "regression"
