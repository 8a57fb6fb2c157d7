"""A bridge (a change between two sessions across one too noisy to place it in) on the
page: its card charts the series with both sessions shaded and says what it is."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl
import pytest

import kiana
import kiana.charts
from kiana.commands.report import collect
from kiana.findings.wording import plain_sentence
from kiana.report import ReportOptions, render
from kiana.stats import JudgeOptions
from tests.stats_fixtures import realistic_corpus


def test_the_plain_sentence_of_a_bridge_says_the_step_is_not_known() -> None:
    row = {"verdict": "regression", "provider": "liger", "change": 0.1, "change_se": 0.01,
           "workloads_total": 5, "workloads_affected": 5, "basis": "bridge"}  # fmt: skip
    assert "in one of the two steps between these sessions" in plain_sentence(row)
    assert "two steps" not in plain_sentence({**row, "basis": "adjusted"})


@pytest.fixture(scope="module")
def con() -> Any:
    """A realistic corpus's database (seed 3: the judge makes bridges on it)."""
    return realistic_corpus(3)[1]


@pytest.mark.heavy
def test_a_bridge_card_charts_its_series(con: Any) -> None:
    options = ReportOptions(command_line="kiana report test", top=500)
    page = render(collect(con, JudgeOptions(), options, generated_at=datetime(2026, 1, 1)))
    cards = page.split('<div class="finding" id="f-')[1:]
    bridges = [c for c in cards if "<p>across " in c]
    assert bridges, "no bridge card on the page"
    for card in bridges:
        assert 'class="chart pending"' in card
        assert "no chart" not in card
        assert "a bridge has no step of its own" in card


@pytest.mark.heavy
def test_a_notebooks_finding_chart_of_a_bridge_is_its_series(con: Any) -> None:
    analysis = kiana.analyze(con)
    row = analysis.judgement.findings.filter(pl.col("basis") == "bridge").row(0, named=True)
    chart = kiana.charts.finding(analysis.runs, analysis.steps, row)
    spec = kiana.charts.to_spec(chart)
    assert len(spec["hconcat"]) == 1
    assert "first workload" in str(spec["hconcat"][0])
