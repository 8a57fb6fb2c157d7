"""A/A pairs: the same code measured twice is a noise measurement, never a finding."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from kiana.stats import judge
from tests.stats_fixtures import frame, run

#: The issue's pair: torch's jsd on a B200 in two CSVs, 107 s apart, at one commit.
CHANGES = [-0.036, -0.075, 0.004, -0.064]
GPU = "NVIDIA B200"


def aa_pair(first: str, second: str) -> pl.DataFrame:
    rows, origins = [], []
    for w, change in enumerate(CHANGES):
        base = 5.0e6 * 2**w
        for provider, factor in (("torch", 1.0 + change), ("liger", 1.0)):
            level = base * (0.5 if provider == "liger" else 1.0)
            a = run("0.8.0", level, provider=provider, kernel="jsd", workload=f"w{w}", gpu=GPU,
                    day=10, spread=0.0076)  # fmt: skip
            b = dict(
                a, observed_at=a["observed_at"] + timedelta(seconds=107), median=level * factor
            )
            b["p20"], b["p80"] = b["median"] * (1 - 0.0038), b["median"] * (1 + 0.0038)
            rows += [a, b]
            origins += [first, second]
    return frame(rows).with_columns(pl.Series("origin", origins))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("abc1234def:all_benchmark_data.csv", "abc1234def:all_benchmark_data_cutile.csv"),
        ("all_benchmark_data.csv", "all_benchmark_data_cutile.csv"),  # imported without git
    ],
)
def test_the_issues_pair_is_no_finding_but_a_measurement(first: str, second: str) -> None:
    result = judge(aa_pair(first, second))
    assert result.findings.height == 0
    assert result.steps.height == 0
    reruns = result.quality.filter(pl.col("kind") == "rerun")
    torch = reruns.filter(pl.col("provider") == "torch").row(0, named=True)
    assert "-3.6%, -7.5%, +0.4%, -6.4%" in torch["message"]
    assert torch["ratio"] == pytest.approx(0.957, abs=0.002)
    assert "not a finding" in torch["message"]


def _days_later(data: pl.DataFrame, origin: str, *, days: int) -> pl.DataFrame:
    """``data`` with the runs of ``origin`` observed ``days`` later."""
    later = pl.col("observed_at") + timedelta(days=days)
    moved = pl.when(pl.col("origin") == origin).then(later).otherwise(pl.col("observed_at"))
    return data.with_columns(moved.alias("observed_at"))


def test_one_commit_two_files_days_apart_is_still_the_same_code() -> None:
    data = _days_later(aa_pair("abc1234def:a.csv", "abc1234def:b.csv"), "abc1234def:b.csv", days=3)
    assert judge(data).findings.height == 0


def test_two_commits_days_apart_are_a_step() -> None:
    data = _days_later(aa_pair("abc1234def:a.csv", "fed4321cba:a.csv"), "fed4321cba:a.csv", days=3)
    assert judge(data).findings.height == 2  # liger and torch


def test_aa_pairs_calibrate_the_sitting_noise() -> None:
    from kiana.stats import calibrate

    calm = calibrate(aa_pair("x:a.csv", "x:b.csv").with_columns(pl.col("median")))
    rows = calm.frame.filter((pl.col("component") == "sitting") & (pl.col("level") == "gpu"))
    assert rows["samples"][0] >= 2  # the pair's two sweep means
