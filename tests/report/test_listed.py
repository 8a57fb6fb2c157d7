"""The report lists what ``kiana regressions`` lists, by the one rule of
:func:`kiana.findings.counts.listed_expr`, and says what it does not list and what it folds
with the CLI's numbers: on ``data/`` and on Liger's real CSVs."""

from __future__ import annotations

import re

import pytest

from tests.report.conftest import Made
from tests.report.scan_fixtures import cli_lines, report_rows, row_key

#: Reports and listings of data/ and of Liger's CSVs, made by the CLI: ~50 s.
pytestmark = pytest.mark.heavy

SURFACES = ["data_report", "real_report"]


@pytest.fixture(params=SURFACES)
def made(request: pytest.FixtureRequest) -> Made:
    """The report and listing of ``data/``, then of Liger's real CSVs."""
    made: Made = request.getfixturevalue(request.param)
    return made


def test_the_report_lists_what_kiana_regressions_lists(made: Made) -> None:
    rows = report_rows(made.html)
    listed = sorted(row_key(metric, cells) for metric, attrs, cells in rows
                    if attrs["data-listed"] == "yes")  # fmt: skip
    lines = cli_lines(made.listing)
    assert lines, "kiana regressions listed nothing: the comparison would be empty"
    matched = sorted(next((k for k in listed if line.startswith(k + " ")), line) for line in lines)
    assert matched == listed
    assert {attrs["data-listed"] for _, attrs, _ in rows} == {"yes", "no"}


def _clause(text: str, pattern: str) -> dict[str, int]:
    """``293 unchanged, 2 baseline drift`` -> {"unchanged": 293, "baseline drift": 2},
    summed over every match of ``pattern`` (its group 1) in ``text``."""
    counted: dict[str, int] = {}
    for found in re.findall(pattern, text):
        for part in found.split(", "):
            number, why = part.split(" ", 1)
            counted[why] = counted.get(why, 0) + int(number.replace(",", ""))
    return counted


def test_the_report_says_what_it_does_not_list_and_folds_as_the_cli(made: Made) -> None:
    cli = " ".join(made.listing.split())
    page = " ".join(made.html.split())
    hidden = _clause(page, r"not listed: ([^(]+?) \(verdict &#x27;all&#x27; shows them\)")
    assert hidden == _clause(cli, r"\(([^()]+?) findings not listed: --all lists them\)")
    assert hidden.get("unchanged", 0) > 0
    folded = _clause(page, r"; ([\d,]+ baseline drift) folded into the Liger findings")
    assert folded == _clause(cli, r"; ([\d,]+ baseline drift) folded into the Liger findings")


def test_the_verdict_filter_starts_on_the_listed_rows(data_report: Made) -> None:
    assert data_report.html.count('<option value="@listed" selected>') == 1  # no memory rows
    assert "all but unchanged" not in data_report.html


def test_the_chart_cap_counts_the_listed_findings(data_report: Made) -> None:
    listed = len(cli_lines(data_report.listing))
    assert listed > 30  # more than the default --top: the cap must be named
    assert f"Charts for the 30 most important of the {listed} listed findings" in data_report.html
    assert "(kiana report --top N charts more)" in data_report.html
