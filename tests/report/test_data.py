"""The report as a function of its data: ``render(ReportData)`` on hand-made frames (no
database), the data-quality frames of ``kiana.load.quality``, the headline counted in
findings, the judge's coverage and the sessions of a step when the judgement has them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import duckdb
import polars as pl
import pytest

from kiana.errors import DatabaseError
from kiana.findings.wording import step_label
from kiana.load import quality
from kiana.report import ReportData, coverage_line, headline, render
from kiana.report.data import coverage, gather, not_judged
from kiana.report.text import coverage_text
from kiana.stats import Judgement
from kiana.stats.coverage import Coverage
from tests.report_fixtures import (
    NOW,
    sample_database,
    sample_findings,
    sample_runs,
    sample_steps,
)

COVERAGE = Coverage(series=1112, compared=30, partitions=400, partitions_compared=12,
                    subject_series=600, subject_compared=20,
                    not_compared={"one session only": 1050, "no_passed_run": 32,
                                  "conflicting sessions": 0})  # fmt: skip
NO_COVERAGE = Coverage(0, 0, 0, 0, 0, 0)


def _judgement(
    steps: pl.DataFrame, findings: pl.DataFrame, coverage: Coverage = NO_COVERAGE
) -> Judgement:
    return Judgement(steps=steps, findings=findings, changepoints=pl.DataFrame(),
                     versions=pl.DataFrame(), runs_judged=0, coverage=coverage,
                     quality=pl.DataFrame())  # fmt: skip


def _data(covered: bool = False, sessions: bool = False) -> ReportData:
    steps, findings = sample_steps(), sample_findings()
    if sessions:
        days = {"from_session": "0.5.10@2026-06-16T09:30:00", "to_session": "2026-07-05 s2"}
        steps = steps.with_columns(pl.lit(v).alias(k) for k, v in days.items())
        findings = findings.with_columns(pl.lit(v).alias(k) for k, v in days.items())
    coverage = COVERAGE if covered else NO_COVERAGE
    return ReportData(sample_runs(), _judgement(steps, findings, coverage), generated_at=NOW)


def test_render_needs_no_database() -> None:
    page = render(_data())
    assert page.startswith("<!DOCTYPE html>")
    assert "no document was rejected" in page and "in memory" in page
    assert page.count('<script type="application/json" data-chart=') == 3


def test_headline_counts_findings_by_verdict() -> None:
    data = _data()
    assert headline(data).startswith("1 regression among 2 findings: 1 kernel on 1 GPU")
    gathered = gather(data)
    assert [gathered.counts[v] for v in ("regression", "unchanged", "drift")] == [1, 1, 0]
    assert gathered.counts["steps"] == 4 and gathered.counts["findings"] == 2


def test_coverage_is_shown_when_the_judgement_has_it() -> None:
    line = coverage_line(_data(covered=True))
    assert line == (
        "compared 30 of 1,112 series (12 of 400 partitions); not compared: "
        "1,050 with one session only, 32 with no passed run"
    )
    page = render(_data(covered=True))
    assert f'<div class="coverage">{line}</div>' in page
    assert "Coverage: compared 30 of 1,112 series" in page


def test_coverage_read_defensively() -> None:
    """A dict or an object with to_dict(); nothing (or no counts) gives no line."""
    plain = {"series": 3, "compared": 1, "not_compared": {"with one session only": 2}}
    assert coverage(cast("Judgement", SimpleNamespace(coverage=plain))) == plain
    assert coverage(cast("Judgement", SimpleNamespace(coverage=COVERAGE))) == COVERAGE.to_dict()
    assert coverage(cast("Judgement", SimpleNamespace())) is None
    assert coverage(cast("Judgement", SimpleNamespace(coverage={"series": 3}))) is None
    assert not_judged(cast("Judgement", SimpleNamespace())).height == 0


def test_steps_between_sessions_show_their_dates() -> None:
    assert step_label({"from_version": "0.5.0", "to_version": "0.6.0"}) == "0.5.0 → 0.6.0"
    row = {"from_version": "0.8.0", "to_version": "0.8.0", "from_session": None,
           "from_observed_at": "2026-06-16T10:00:00", "to_session": "s-2026-07-05-a"}  # fmt: skip
    assert step_label(row) == "0.8.0 (2026-06-16) → 0.8.0 (2026-07-05)"
    page = render(_data(sessions=True))
    assert "0.5.10 (2026-06-16) → 0.6.0 (2026-07-05)" in page
    assert page.count('<script type="application/json" data-chart=') == 3  # steps still found


def test_a_finding_without_steps_is_listed_without_a_chart() -> None:
    data = ReportData(sample_runs(), _judgement(sample_steps().head(0), sample_findings()))
    page = render(data)
    assert "no chart: no steps match this finding" in page
    assert 'data-verdict="regression"' in page


def test_quality_frames_of_a_database(tmp_path: Path) -> None:
    con = cast("duckdb.DuckDBPyConnection", sample_database(tmp_path, hostile=True))
    found = quality.collect(con)
    assert found.rejected == 1 and found.rejects["documents"].to_list() == [1]
    assert found.documents_read == found.loads["read"].sum() > 1
    assert found.conflicts.columns == ["kind", "detail", "source"]
    assert found.warnings.columns == ["kind", "runs", "example", "source"]
    empty = quality.DataQuality()
    assert (empty.rejected, empty.documents_read) == (0, 0)
    assert empty.rejects.columns == found.rejects.columns
    assert empty.loads.columns == found.loads.columns


def test_quality_of_a_database_that_is_not_kianas() -> None:
    with pytest.raises(DatabaseError, match="cannot read the rejects") as caught:
        quality.rejects(duckdb.connect())
    assert caught.value.hint and "kiana load" in caught.value.hint


def test_folded_baseline_drift_is_neither_listed_nor_counted() -> None:
    from kiana.report.data import own_findings, sort_findings

    findings = sample_findings()
    folded = findings.with_columns(pl.Series("folded", [True] + [False] * (findings.height - 1)))
    assert own_findings(folded).height == findings.height - 1
    assert sort_findings(folded).height == findings.height - 1
    assert own_findings(findings).height == findings.height  # no column: nothing folded


def test_coverage_names_a_renamed_workload() -> None:
    found = {"series": 12, "compared": 12, "renamed": {"megatron_cross_entropy +tp1": 12}}
    assert coverage_text(found) == (
        "compared 12 of 12 series; workload renamed: 12 series continued "
        "(megatron_cross_entropy +tp1)"
    )
