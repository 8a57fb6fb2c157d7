"""Outlier sessions: one session off, then back, is not two changes."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

from kiana.stats import judge
from tests.stats_fixtures import frame, run

CALM = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0, 100.2, 99.9, 100.1, 100.0]


def single_samples(levels: list[float]) -> list[dict[str, object]]:
    """One slow single-sample workload (p20 = median = p80), a session every 3 days."""
    return [run("0.8.0", m, day=3 * d, p20=m, p80=m) for d, m in enumerate(levels)]


def test_one_session_off_and_back_is_an_outlier_not_two_changes() -> None:
    levels = [*CALM, 59.0, 100.2, 99.8, 100.1]
    result = judge(frame(single_samples(levels)))
    around = result.steps.filter(pl.col("evidence").str.starts_with("outlier at "))
    assert around.height == 2
    assert set(around["verdict"]) == {"inconclusive"}
    assert not result.steps["verdict"].is_in(["regression", "improvement"]).any()
    entry = result.quality.filter(pl.col("kind") == "outlier").row(0, named=True)
    assert entry["ratio"] == pytest.approx(0.59, rel=0.01)
    assert entry["session"] == result.steps["to_session"][len(CALM) - 1]


def test_a_last_session_off_keeps_its_verdict_and_says_so() -> None:
    last = judge(frame(single_samples([*CALM, 59.0]))).steps.row(-1, named=True)
    assert last["verdict"] == "improvement"
    assert "latest session: whether it comes back is not known yet" in last["evidence"]


def test_a_level_shift_after_an_outlier_is_still_a_change() -> None:
    levels = [*CALM, 59.0, 100.2, 87.5, 87.4, 87.6]
    verdicts = judge(frame(single_samples(levels))).steps["verdict"].to_list()
    n = len(CALM)
    assert verdicts[n - 1 : n + 2] == ["inconclusive", "inconclusive", "improvement"]


def test_a_small_dip_and_return_is_two_changes_not_an_outlier() -> None:
    levels = [*CALM, 92.3, 100.8, 100.6]
    verdicts = judge(frame(single_samples(levels))).steps["verdict"].to_list()
    n = len(CALM)
    assert verdicts[n - 1 : n + 1] == ["improvement", "regression"]


def test_one_workload_off_then_the_whole_sweep_moving_back_is_two_changes() -> None:
    # w3 regresses alone (+33%) at 0.8.0; then every workload improves 30% at 0.9.0.
    rows: list[dict] = []
    for w in range(5):
        base = 100.0 * (w + 1)
        levels = [base, base * (1.33 if w == 3 else 1.0), base * (1.33 if w == 3 else 1) * 0.7]
        for d, (v, m) in enumerate(zip(["0.7.0", "0.8.0", "0.9.0"], levels, strict=True)):
            rows.append(run(v, m, workload=f"w{w}", day=9 * d, minute=w, spread=0.005))
    found = judge(frame(rows)).findings
    assert found.filter(pl.col("to_version") == "0.8.0")["workloads"].to_list() == ["w3"]
    assert set(found["verdict"]) == {"regression", "improvement"}


VERSIONS = ["0.5.0", "0.6.0", "0.7.0", "0.8.0", "0.9.0", "0.9.0", "0.9.1"]


def _sweep(levels: list[float]) -> pl.DataFrame:
    """Five workloads at the relative ``levels`` of :data:`VERSIONS`' sessions (9 days
    apart), a small deterministic jitter per workload and session."""
    assert len(levels) == len(VERSIONS)
    return _sweep_of(lambda w, d: levels[d])


def _sweep_of(
    level: Callable[[int, int], float], spread: Callable[[int], float] = lambda w: 0.005
) -> pl.DataFrame:
    """:func:`_sweep` with workload ``w``'s relative level at session ``d`` given by
    ``level(w, d)``, and its runs' p20-p80 spread by ``spread(w)``."""
    rows: list[dict] = []
    for w in range(5):
        for d, v in enumerate(VERSIONS):
            jitter = 1.0 + 0.0007 * (((w * 7 + d * 3) % 5) - 2)
            rows.append(run(v, 100.0 * (w + 1) * level(w, d) * jitter, workload=f"w{w}",
                            day=9 * d, minute=w, spread=spread(w)))  # fmt: skip
    return frame(rows)


def test_a_change_and_a_revert_that_leaves_a_residual_are_two_changes() -> None:
    # -11% at 0.9.0, then +16% under the same label: the sweep ends 3.2% above where
    # it was, far beyond its noise, so not one session off and back.
    result = judge(_sweep([1.0, 1.0, 1.0, 1.0, 0.89, 0.89 * 1.16, 0.89 * 1.16]))
    verdicts = result.findings.sort("from_session")["verdict"].to_list()
    assert verdicts[3:5] == ["improvement", "regression"]
    assert result.quality.filter(pl.col("kind") == "outlier").height == 0


def test_a_whole_sweep_off_and_exactly_back_is_an_outlier() -> None:
    result = judge(_sweep([1.0, 1.0, 1.0, 1.0, 0.89, 1.0, 1.0]))
    verdicts = result.findings.sort("from_session")["verdict"].to_list()
    assert verdicts[3:5] == ["inconclusive", "inconclusive"]
    assert result.quality.filter(pl.col("kind") == "outlier").height == 5  # every workload


def test_one_workload_off_its_sweep_and_back_is_an_outlier_when_its_sitting_moved() -> None:
    # Session 4 sat 5% slow for every workload, and w3 another -12% against the rest of
    # its sweep: its own change, -7.9% and +8.6%, is under the 9% bar, yet against its
    # sweep it left by 12.8% and came back at the next session: one session off.
    result = judge(_sweep_of(lambda w, d: (1.05 * (0.88 if w == 3 else 1.0)) if d == 4 else 1.0))
    w3 = result.steps.filter(pl.col("workload") == "w3").sort("from_session")
    assert w3["outlier"].to_list()[3:5] == [True, True]
    assert "(against the rest of its sweep) and back at the next session" in w3["evidence"][3]
    entry = result.quality.filter(pl.col("kind") == "outlier").row(0, named=True)
    assert entry["ratio"] == pytest.approx(0.88, rel=0.01)
    assert "off its neighbours (against the rest of its sweep) and back" in entry["message"]
    lone = result.findings.filter(pl.col("basis") == "lone")
    assert lone.height == 0


def test_one_workload_off_and_back_is_measured_against_its_sweep_weighted_by_noise() -> None:
    # As above, and w4, measured with a 30% spread, sat 20% low in session 4: the plain
    # mean of w3's other workloads falls to -0.7%, and w3's -7.9% would be 7.2% off it,
    # under the 9% bar; weighted by their noise, w4 barely counts and w3 is 12.8% off.
    def level(w: int, d: int) -> float:
        if d != 4:
            return 1.0
        return 1.05 * {3: 0.88, 4: 0.80}.get(w, 1.0)

    result = judge(_sweep_of(level, spread=lambda w: 0.30 if w == 4 else 0.005))
    w3 = result.steps.filter(pl.col("workload") == "w3").sort("from_session")
    assert w3["outlier"].to_list()[3:5] == [True, True]


def test_one_workload_that_leaves_its_sweep_and_stays_is_a_change() -> None:
    result = judge(_sweep_of(lambda w, d: 0.85 if (w == 3 and d >= 4) else 1.0))
    assert result.quality.filter(pl.col("kind") == "outlier").height == 0
    lone = result.findings.filter(pl.col("basis") == "lone")
    assert lone["verdict"].to_list() == ["improvement"] and lone["workloads"].to_list() == ["w3"]
