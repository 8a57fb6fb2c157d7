"""A report a maintainer can scan: plain words first and the statistics one click away,
one culprit per table row with "+N", anchors clear of the sticky nav, whole workload
labels, and every cap named with the option that sets it."""

from __future__ import annotations

import re

import polars as pl

from kiana.findings.wording import plain_sentence
from kiana.report import ReportData, assets, components, page
from kiana.report.charts import sweep_spec
from kiana.report.culprits import culprits_html
from kiana.report.data import gather
from kiana.report.listing import listing
from kiana.stats import Judgement
from tests.report_fixtures import sample_findings, sample_runs, sample_steps


def _judgement(findings: pl.DataFrame) -> Judgement:
    return Judgement(steps=sample_steps(), findings=findings, changepoints=pl.DataFrame(),
                     versions=pl.DataFrame(), runs_judged=0, coverage=None,  # type: ignore[arg-type]
                     quality=pl.DataFrame())  # fmt: skip


ROW = {
    "verdict": "regression", "provider": "liger", "change": 0.154, "change_se": 0.01,
    "workloads_total": 4, "workloads_affected": 4, "worst_change": 0.162,
    "control_provider": "huggingface", "control_change": -0.003,
}  # fmt: skip


def test_the_plain_sentence_carries_the_tables_numbers() -> None:
    text = plain_sentence(ROW)
    assert text == (
        "liger got 15.4% slower (± 1.0%) over its 4 workloads, 4 of them moved that way; "
        "worst +16.2%; the same-session control huggingface moved -0.3%."
    )


def test_the_plain_sentence_agrees_with_the_sweep_chart() -> None:
    # "5 of them on their own" where the chart showed 3 regressions (issue 39): the
    # workloads that moved the finding's way and those whose own step is a regression
    # (what the sweep chart colours) are told apart.
    row = {**ROW, "workloads_total": 5, "workloads_affected": 5}
    text = plain_sentence(row, own=3)
    assert "5 of them moved that way, 3 regressions on their own" in text
    assert "1 regression on its own" in plain_sentence(row, own=1)
    assert "on their own" not in plain_sentence({**row, "verdict": "inconclusive"}, own=0)
    assert "no same-session control" in plain_sentence({**ROW, "control_provider": None})


def test_a_table_row_shows_one_culprit_and_how_many_more() -> None:
    culprits = [{"commit": f"{i:040x}", "subject": f"change {i}", "pr": i} for i in range(5)]
    cell = str(culprits_html({"culprits": culprits}, top=1))
    assert cell.count("<li") == 2 and "+4 more" in cell


def test_anchors_clear_the_sticky_nav() -> None:
    assert "scroll-margin-top" in assets.STYLE and "position: sticky" in assets.STYLE


def test_workload_labels_are_never_cut() -> None:
    spec = sweep_spec(sample_steps(), sample_findings().row(0, named=True))
    assert spec["layer"][0]["encoding"]["x"]["axis"]["labelLimit"] == 0


def test_a_capped_table_names_the_cap_and_the_option() -> None:
    frame = pl.DataFrame({"x": list(range(30))})
    shown, cap = components.capped(frame, 10, "findings")
    assert shown.height == 10
    assert "first 10 of 30 findings" in str(cap) and "--rows" in str(cap)


def test_the_findings_counter_says_what_it_counts() -> None:
    found = listing(sample_findings(), top=30, rows=1).latency
    html = str(page.findings_table(found, set(), table_id="findings-table", limit=1))
    assert 'data-of=" rows of this table (the first 1 of 2 latency findings)"' in html


def test_the_table_marks_the_rows_kiana_regressions_lists() -> None:
    drift = {
        "verdict": pl.lit("drift"),
        "worst_change": pl.lit(0.04),
        "median_change": pl.lit(0.04),
    }
    findings = pl.concat([
        sample_findings(),
        sample_findings().head(1).with_columns(
            provider=pl.lit("torch"), is_subject=pl.lit(False), **drift
        ),
        sample_findings().head(1).with_columns(provider=pl.lit("liger_cutile"), **drift),
    ], how="diagonal_relaxed")  # fmt: skip
    found = listing(findings, top=30, rows=10).latency
    html = str(page.findings_table(found, set(), table_id="findings-table", limit=10))
    marks = re.findall(r'<tr data-verdict="(\w+)" data-kernel="[^"]*" data-provider="(\w+)"'
                       r'[^>]*data-listed="(yes|no)"', html)  # fmt: skip
    assert sorted(marks) == [
        ("drift", "liger_cutile", "yes"), ("drift", "torch", "no"),
        ("regression", "liger", "yes"), ("unchanged", "liger", "no"),
    ]  # fmt: skip
    assert "not listed: 1 unchanged, 1 baseline drift (verdict" in html
    assert '<option value="@listed" selected>listed (as kiana regressions)</option>' in html


def test_charts_are_drawn_for_listed_findings_only() -> None:
    findings = pl.concat([
        sample_findings(),
        sample_findings().head(1).with_columns(
            provider=pl.lit("torch"), verdict=pl.lit("drift"), is_subject=pl.lit(False)
        ),
    ], how="diagonal_relaxed")  # fmt: skip
    data = ReportData(sample_runs(), _judgement(findings))
    charted = gather(data).charted
    assert charted.select("verdict", "provider").rows() == [("regression", "liger")]
