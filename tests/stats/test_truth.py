"""``kiana regressions --json`` on the bundled data/ reproduces the generator's ground truth.

Findings are matched to truth rows by kernel, pass, provider, GPU, metric and the pair
of sessions (``from_session``, ``to_session``), as in ``bench/detection.py``; change
points by kernel, pass, GPU and provider, the session after the shift within one session
of the truth's ``to_session``; outlier sessions of the long history by their
``Judgement.quality`` entry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import polars as pl
import pytest

from kiana.generate import CorpusConfig, generate, read_truth
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


@pytest.mark.heavy
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


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
def test_environment_shifts_are_drift_not_regression(
    findings: pl.DataFrame, truth: pl.DataFrame
) -> None:
    shifts = truth.filter(pl.col("effect") == "drift", pl.col("provider") == "liger")
    assert shifts.height > 0
    for row in shifts.iter_rows(named=True):
        verdicts = set(_matching(findings, row)["verdict"])
        assert verdicts == {"drift"}, (row, verdicts)


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
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


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
def test_no_regression_where_none_was_injected(findings: pl.DataFrame, truth: pl.DataFrame) -> None:
    effects = truth.filter(pl.col("effect").is_in([*FLAGS, "changepoint"])).select(KEY)
    outliers = truth.filter(pl.col("effect") == "outlier")
    touched = set(zip(outliers["kernel"], outliers["pass"], outliers["gpu"], outliers["to_session"], strict=True))  # fmt: skip
    flagged = findings.filter(pl.col("verdict").is_in(FLAGS)).join(effects, on=KEY, how="anti")
    for row in flagged.iter_rows(named=True):
        ends = {(row["kernel"], row["pass"], row["gpu"], row[s]) for s in ("from_session", "to_session")}  # fmt: skip
        assert ends & touched, f"{row['verdict']} not in truth: {row}"


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
def test_coverage_counts_every_series(judged: dict[str, Any]) -> None:
    coverage = judged["coverage"]
    assert coverage["series"] >= coverage["compared"] > 0
    assert coverage["series"] - coverage["compared"] == sum(coverage["not_compared"].values())


GROUP = ["kernel", "pass", "gpu"]


@pytest.fixture(scope="module")
def positions() -> pl.DataFrame:
    """Each bundled session's position in its kernel, pass and GPU (planned, not read)."""
    sessions = generate(CorpusConfig.bundled()).sessions
    return sessions.select(*GROUP, "liger_version", "session", "position")


def test_bundled_corpus_holds_a_long_history(truth: pl.DataFrame, positions: pl.DataFrame) -> None:
    shifts = truth.filter(pl.col("effect") == "changepoint")
    sessions = truth.filter(pl.col("effect") == "outlier", pl.col("workload").is_null())
    assert shifts.height >= 2 and sessions.height >= 1
    history = positions.join(shifts.select(GROUP).unique(), on=GROUP, how="semi")
    assert history.height >= 30
    for row in shifts.iter_rows(named=True):  # from_session is the session just before
        at = history.filter(pl.col("session").is_in([row["from_session"], row["to_session"]]))
        assert at.sort("position")["position"].diff().drop_nulls().to_list() == [1], row
    for row in sessions.iter_rows(named=True):
        assert row["from_session"] == row["to_session"], row


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
def test_level_shifts_of_the_long_history_are_change_points(
    judged: dict[str, Any], truth: pl.DataFrame, positions: pl.DataFrame
) -> None:
    found = pl.DataFrame(judged["changepoints"], infer_schema_length=None)
    found = found.filter(pl.col("provider") == "liger", pl.col("metric") == "latency").join(
        positions.rename({"liger_version": "to_version"}), on=[*GROUP, "to_version"]
    )
    shifts = truth.filter(pl.col("effect") == "changepoint").join(
        positions.rename({"session": "to_session"}), on=[*GROUP, "to_session"]
    )
    assert shifts.height > 0
    for row in shifts.iter_rows(named=True):
        near = found.filter(
            *(pl.col(k) == row[k] for k in GROUP),
            (pl.col("position") - row["position"]).abs() <= 1,
        )
        assert near.height > 0, row
        assert (near["change"] * row["change"] > 0).all(), (row, near["change"])


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
def test_outlier_sessions_are_reported(judged: dict[str, Any], truth: pl.DataFrame) -> None:
    quality = pl.DataFrame(judged["quality"], infer_schema_length=None)
    steps = pl.DataFrame(judged["steps"], infer_schema_length=None)
    sessions = truth.filter(pl.col("effect") == "outlier", pl.col("workload").is_null())
    assert sessions.height > 0
    for row in sessions.iter_rows(named=True):
        same = [pl.col(k) == row[k] for k in ("kernel", "pass", "provider", "gpu", "metric")]
        at = pl.col("session") == row["to_session"]
        assert quality.filter(pl.col("kind") == "outlier", *same, at).height > 0, row
        into = steps.filter(*same, pl.col("to_session") == row["to_session"])
        marked = into.filter(pl.col("evidence").str.starts_with("outlier at"))
        assert marked.height > 0 and (marked["verdict"] == "inconclusive").all(), row


@pytest.mark.heavy  # the bundled corpus loaded and judged by the CLI
def test_nothing_is_called_a_change_at_an_outlier_session(
    judged: dict[str, Any], findings: pl.DataFrame, truth: pl.DataFrame
) -> None:
    steps = pl.DataFrame(judged["steps"], infer_schema_length=None)
    sessions = truth.filter(pl.col("effect") == "outlier", pl.col("workload").is_null())
    assert sessions.height > 0
    for row in sessions.iter_rows(named=True):
        same = [pl.col(k) == row[k] for k in ("kernel", "pass", "provider", "gpu", "metric")]
        s = row["to_session"]
        at = (pl.col("from_session") == s) | (pl.col("to_session") == s)
        for frame in (findings, steps):
            called = frame.filter(*same, at, pl.col("verdict").is_in(FLAGS))
            assert called.height == 0, called.select("from_session", "to_session", "verdict").rows()
