"""``kiana.stats.judge`` on degenerate series: sensible verdicts (inconclusive where
honest), never a crash, NaN or infinity in any output column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import kiana.load
import kiana.stats as stats
from tests import reliability as rel


def _runs(tmp_path: Path, docs: list[dict[str, Any]]) -> pl.DataFrame:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [path])
    assert summary.rejected == 0, summary.first_rejects
    return kiana.load.runs(con)


def _judge(runs: pl.DataFrame) -> Any:
    result = stats.judge(runs, stats.JudgeOptions())
    for name in ("steps", "findings", "changepoints"):
        frame: pl.DataFrame = getattr(result, name)
        for column, dtype in frame.schema.items():
            if dtype.is_float():
                bad = frame.filter(pl.col(column).is_nan() | pl.col(column).is_infinite())
                assert bad.height == 0, f"{name}.{column} holds NaN or inf"
        if "verdict" in frame.columns:
            assert set(frame["verdict"].drop_nulls()) <= set(stats.VERDICTS)
    return result


def _series(
    versions: list[str], medians: list[float], *, spread: float = 0.02, provider: str = "liger"
) -> list[dict[str, Any]]:
    return [
        rel.make_document(n, version=v, median=m, spread=spread, provider=provider)
        for n, (v, m) in enumerate(zip(versions, medians, strict=True))
    ]


@pytest.mark.heavy
def test_one_run_series(tmp_path: Path) -> None:
    result = _judge(_runs(tmp_path, _series(["0.5.0"], [100_000])))
    assert result.runs_judged == 1
    # One version has no step: nothing to judge, so nothing is claimed.
    assert (result.steps.height, result.findings.height, result.changepoints.height) == (0, 0, 0)


@pytest.mark.heavy
def test_all_zero_spreads_and_a_small_change_is_not_a_regression(tmp_path: Path) -> None:
    docs = _series(["0.4.0", "0.5.0"], [100_000, 101_000], spread=0.0)
    docs += _series(["0.4.0", "0.5.0"], [200_000, 200_000], spread=0.0, provider="torch")
    steps = _judge(_runs(tmp_path, docs)).steps
    liger = steps.filter(pl.col("provider") == "liger")
    assert liger["verdict"].to_list() in (["inconclusive"], ["unchanged"])


def test_identical_values_are_unchanged_or_inconclusive(tmp_path: Path) -> None:
    docs = _series(["0.3.0", "0.4.0", "0.5.0"], [100_000] * 3, spread=0.0)
    steps = _judge(_runs(tmp_path, docs)).steps
    assert set(steps["verdict"]) <= {"unchanged", "inconclusive"}
    assert steps["change"].to_list() == [0.0, 0.0]


def test_versions_that_do_not_parse(tmp_path: Path) -> None:
    docs = _series(["main", "abc1234", "v-weird!", "0.5.0"], [100_000, 150_000, 90_000, 100_000])
    result = _judge(_runs(tmp_path, docs))
    # Labels that are not PEP 440 are ordered by first observation, not dropped or sorted.
    versions = result.versions.sort("version_rank")
    assert versions["version"].to_list() == ["main", "abc1234", "v-weird!", "0.5.0"]
    assert versions["version_kind"].to_list() == ["label", "label", "label", "pep440"]
    steps = result.steps.select("from_version", "to_version", "change", "verdict").rows()
    # abc1234 (+50%, then back near the level before) is an outlier session, not two
    # changes (kiana.stats.outliers); the last step stands.
    assert [(a, b, v) for a, b, _, v in steps] == [
        ("main", "abc1234", "inconclusive"),
        ("abc1234", "v-weird!", "inconclusive"),
        ("v-weird!", "0.5.0", "regression"),
    ]
    assert [c for _, _, c, _ in steps] == pytest.approx([0.5, -0.4, 1 / 9])


@pytest.mark.heavy
def test_thousands_of_replicates(tmp_path: Path) -> None:
    versions = ["0.4.0"] * 1500 + ["0.5.0"] * 1500
    medians = [100_000 + (n % 50) * 32 for n in range(1500)] * 2
    steps = _judge(_runs(tmp_path, _series(versions, medians))).steps
    assert steps.height == 1
    assert steps["verdict"][0] in ("unchanged", "inconclusive")


@pytest.mark.heavy
def test_partition_without_a_baseline_provider(tmp_path: Path) -> None:
    docs = _series(["0.4.0", "0.5.0"], [100_000, 150_000], spread=0.01)
    steps = _judge(_runs(tmp_path, docs)).steps
    assert steps["verdict"].to_list() == ["regression"]
    assert steps["control_provider"].to_list() == [None]


def test_only_baselines_and_no_liger(tmp_path: Path) -> None:
    docs = _series(["0.4.0", "0.5.0"], [100_000, 100_000], provider="torch")
    result = _judge(_runs(tmp_path, docs))
    # A baseline's own series is judged like any other, without a control of its own.
    step = result.steps.select(
        "provider", "is_subject", "control_provider", "change", "verdict"
    ).row(0, named=True)
    assert result.steps.height == 1
    assert step == {
        "provider": "torch",
        "is_subject": False,
        "control_provider": None,
        "change": 0.0,
        "verdict": "unchanged",
    }
    assert result.findings["verdict"].to_list() == ["unchanged"]


def test_empty_runs_frame(tmp_path: Path) -> None:
    con = kiana.load.connect(None)
    result = _judge(kiana.load.runs(con))
    assert result.steps.height == 0 and result.findings.height == 0
