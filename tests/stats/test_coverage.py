"""Coverage: what was compared, and why the rest was not."""

from __future__ import annotations

import polars as pl

from kiana.stats import judge
from tests.stats_fixtures import frame, run, sitting


def test_coverage_counts_series_and_reasons() -> None:
    rows = sitting("0.7.0", 1, {"liger": 100.0, "torch": 100.0})
    rows += sitting("0.8.0", 9, {"liger": 100.0})
    cov = judge(frame(rows)).coverage
    assert (cov.series, cov.compared) == (2, 1)
    assert cov.not_compared == {"one session only": 1}
    assert cov.sentence().startswith("compared 1 of 2 series (1 of 1 partitions)")


def test_a_series_measured_twice_at_once_only_is_said_so() -> None:
    rows = [run("0.8.0", 100.0, day=1), run("0.8.0", 101.0, day=1, minute=2)]
    data = frame(rows).with_columns(pl.Series("origin", ["a.csv", "b.csv"]))
    cov = judge(data).coverage
    assert cov.compared == 0
    assert cov.not_compared == {"same code measured twice only": 1}
