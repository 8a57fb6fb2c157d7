"""``kiana regressions`` on the bundled data/ reproduces the generator's ground truth."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import polars as pl
import pytest

from kiana.generate import read_truth
from tests.conftest import ROOT

DATA = ROOT / "data"


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    db = tmp_path_factory.mktemp("truth") / "k.duckdb"
    load = subprocess.run(
        [sys.executable, "-m", "kiana", "load", str(DATA), "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "rejected 0" in load.stdout
    out = subprocess.run(
        [sys.executable, "-m", "kiana", "regressions", "--db", str(db), "--json", "--all"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return pl.DataFrame(json.loads(out.stdout)["steps"], infer_schema_length=None)


@pytest.fixture(scope="module")
def truth() -> pl.DataFrame:
    return read_truth(DATA / "generated" / "truth.csv")


KEY = ["kernel", "pass", "provider", "gpu", "from_version", "to_version"]


def _matching(steps: pl.DataFrame, row: dict[str, Any]) -> pl.DataFrame:
    out = steps.filter(*(pl.col(k) == row[k] for k in KEY), pl.col("metric") == row["metric"])
    if row["workload"]:
        out = out.filter(pl.col("workload") == row["workload"])
    return out


def test_every_injected_regression_and_improvement_is_found(
    steps: pl.DataFrame, truth: pl.DataFrame
) -> None:
    effects = truth.filter(pl.col("effect").is_in(["regression", "improvement"]))
    assert effects.height > 0
    for row in effects.iter_rows(named=True):
        found = _matching(steps, row)
        assert found.height > 0, row
        assert set(found["verdict"]) == {row["effect"]}, (row, found["verdict"].to_list())


def test_environment_shifts_are_drift_not_regression(
    steps: pl.DataFrame, truth: pl.DataFrame
) -> None:
    shifts = truth.filter(pl.col("effect") == "drift", pl.col("provider").str.starts_with("liger"))
    assert shifts.height > 0
    for row in shifts.iter_rows(named=True):
        verdicts = set(_matching(steps, row)["verdict"])
        assert "regression" not in verdicts and "improvement" not in verdicts, (row, verdicts)
        assert "drift" in verdicts, (row, verdicts)


def test_no_regression_where_none_was_injected(steps: pl.DataFrame, truth: pl.DataFrame) -> None:
    injected = truth.filter(pl.col("effect") != "drift")
    flagged = steps.filter(
        pl.col("verdict") == "regression", pl.col("provider").str.starts_with("liger")
    )
    for row in flagged.iter_rows(named=True):
        near = injected.filter(
            pl.col("kernel") == row["kernel"],
            pl.col("pass") == row["pass"],
            pl.col("gpu") == row["gpu"],
            pl.col("from_version").is_in([row["from_version"], row["to_version"]])
            | pl.col("to_version").is_in([row["from_version"], row["to_version"]]),
        )
        assert near.height > 0, f"regression not in truth: {row}"
