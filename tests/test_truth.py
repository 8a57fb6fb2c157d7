"""``kiana regressions --json`` on the bundled data/ reproduces the generator's ground truth.

Findings are matched to truth rows by kernel, pass, provider, GPU, metric and the pair
of sessions (``from_session``, ``to_session``), as in ``bench/detection.py``.
"""

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
KEY = ["kernel", "pass", "provider", "gpu", "metric", "from_session", "to_session"]
FLAGS = ["regression", "improvement"]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
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
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.fixture(scope="module")
def findings(judged: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(judged["findings"], infer_schema_length=None)


@pytest.fixture(scope="module")
def truth() -> pl.DataFrame:
    return read_truth(DATA / "generated" / "truth.csv")


def _matching(findings: pl.DataFrame, row: dict[str, Any]) -> pl.DataFrame:
    return findings.filter(*(pl.col(k) == row[k] for k in KEY))


def test_every_injected_regression_and_improvement_is_found(
    findings: pl.DataFrame, truth: pl.DataFrame
) -> None:
    effects = truth.filter(pl.col("effect").is_in(FLAGS))
    assert effects.height > 0
    assert (effects["from_version"] == effects["to_version"]).any(), "a same-label change"
    for row in effects.iter_rows(named=True):
        found = _matching(findings, row)
        assert found.height == 1, row
        assert found["verdict"][0] == row["effect"], (row, found.row(0, named=True))
        if row["workload"] is not None:
            assert row["workload"] in found["workloads"][0].split(","), (row, found["workloads"])


def test_environment_shifts_are_drift_not_regression(
    findings: pl.DataFrame, truth: pl.DataFrame
) -> None:
    shifts = truth.filter(pl.col("effect") == "drift", pl.col("provider") == "liger")
    assert shifts.height > 0
    for row in shifts.iter_rows(named=True):
        verdicts = set(_matching(findings, row)["verdict"])
        assert verdicts == {"drift"}, (row, verdicts)


def test_conflicts_are_reported_not_judged(judged: dict[str, Any], truth: pl.DataFrame) -> None:
    quality = pl.DataFrame(judged["quality"], infer_schema_length=None)
    conflicts = truth.filter(pl.col("effect") == "conflict")
    assert conflicts.height > 0
    for row in conflicts.iter_rows(named=True):
        hits = quality.filter(
            pl.col("kind") == "conflict",
            *(pl.col(k) == row[k] for k in ("kernel", "pass", "provider", "gpu", "metric")),
            pl.col("session") == row["to_session"],
        )
        assert hits.height > 0, row


def test_no_regression_where_none_was_injected(findings: pl.DataFrame, truth: pl.DataFrame) -> None:
    effects = truth.filter(pl.col("effect").is_in(FLAGS)).select(KEY)
    outliers = truth.filter(pl.col("effect") == "outlier")
    touched = set(zip(outliers["kernel"], outliers["pass"], outliers["gpu"], outliers["to_session"], strict=True))  # fmt: skip
    flagged = findings.filter(pl.col("verdict").is_in(FLAGS)).join(effects, on=KEY, how="anti")
    for row in flagged.iter_rows(named=True):
        ends = {(row["kernel"], row["pass"], row["gpu"], row[s]) for s in ("from_session", "to_session")}  # fmt: skip
        assert ends & touched, f"{row['verdict']} not in truth: {row}"


def test_coverage_counts_every_series(judged: dict[str, Any]) -> None:
    coverage = judged["coverage"]
    assert coverage["series"] >= coverage["compared"] > 0
    assert coverage["series"] - coverage["compared"] == sum(coverage["not_compared"].values())
