"""Sessions: which runs were measured together, and what a step between them is."""

from __future__ import annotations

import polars as pl
import pytest

from kiana.stats import JudgeOptions, judge
from tests.stats_fixtures import frame, run, sitting


def test_same_label_sessions_are_a_step() -> None:
    rows = sitting("0.8.0", 1, {"liger": 100.0, "torch": 200.0})
    rows += sitting("0.8.0", 20, {"liger": 110.0, "torch": 200.0})
    steps = judge(frame(rows)).steps.filter(pl.col("provider") == "liger")
    assert steps.height == 1
    row = steps.row(0, named=True)
    assert (row["from_version"], row["to_version"]) == ("0.8.0", "0.8.0")
    assert row["from_session"] < row["to_session"]
    assert row["verdict"] == "regression"
    assert row["control_provider"] == "torch"


def test_runs_within_the_gap_are_one_session_beyond_it_two() -> None:
    close = [run("0.8.0", 100.0, day=1, minute=m) for m in (0, 50, 100)]  # 50 min gaps
    assert judge(frame(close)).steps.height == 0
    far = [run("0.8.0", 100.0, day=1), run("0.8.0", 100.0, day=1, minute=180)]
    assert judge(frame(far)).steps.height == 1


@pytest.mark.heavy
def test_origins_split_sessions() -> None:
    # Two files a minute apart are two sessions, and the same code measured twice: an
    # A/A pair (kiana.stats.reruns), a noise measurement rather than a step.
    rows = [run("0.8.0", 100.0, day=1), run("0.8.0", 100.0, day=1, minute=1)]
    data = frame(rows).with_columns(pl.Series("origin", ["a.csv", "b.csv"]))
    result = judge(data)
    assert result.steps.height == 0
    assert result.quality["kind"].to_list() == ["rerun"]
    assert judge(frame(rows)).quality.height == 0  # one origin: one session
    apart = [run("0.8.0", 100.0, day=1), run("0.8.0", 100.0, day=9)]
    data = frame(apart).with_columns(pl.Series("origin", ["a.csv", "b.csv"]))
    assert judge(data).steps.height == 1


def test_versions_order_before_time() -> None:
    rows = [run("0.8.0", 100.0, day=1), run("0.7.0", 100.0, day=5), run("0.8.0", 100.0, day=9)]
    steps = judge(frame(rows)).steps
    assert list(zip(steps["from_version"], steps["to_version"], strict=True)) == [
        ("0.7.0", "0.8.0"),
        ("0.8.0", "0.8.0"),
    ]


def test_baseline_is_the_versions_last_session() -> None:
    rows = [run("0.7.0", 100.0, day=1), run("0.7.0", 120.0, day=3), run("0.8.0", 120.0, day=9)]
    steps = judge(frame(rows), JudgeOptions(baseline="0.7.0")).steps
    assert steps.height == 1
    assert steps["from_median"][0] == 120.0
    assert steps["verdict"][0] == "unchanged"


def test_replicates_far_apart_are_a_conflict_not_a_median() -> None:
    rows = [run("0.8.0", 100.0, day=1), run("0.8.0", 600.0, day=1, minute=3)]
    rows += [run("0.8.0", 100.0, day=9)]
    result = judge(frame(rows))
    assert result.quality.height == 1
    entry = result.quality.row(0, named=True)
    assert entry["kind"] == "conflict" and entry["ratio"] == pytest.approx(6.0)
    assert result.steps.height == 0
    assert result.coverage.not_compared == {"conflicting sessions": 1}


def test_releases_measured_in_one_sitting_are_sessions_of_their_own() -> None:
    # Three releases timed at the same seconds, on day 1 and day 9 (liger and torch).
    rows = [
        r
        for version in ("0.7.0", "0.8.0", "0.9.0")
        for day in (1, 9)
        for r in sitting(version, day, {"liger": 100.0, "torch": 200.0})
    ]
    steps = judge(frame(rows)).steps.filter(pl.col("provider") == "liger")
    assert steps.height == 5
    assert steps["from_session"].n_unique() == 5
    assert steps["from_session"].str.contains("~0.8.0").any()
