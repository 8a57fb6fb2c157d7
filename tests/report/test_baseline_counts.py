"""Headlines count the code under test: a baseline's findings are said to be theirs
(issue 39)."""

from __future__ import annotations

import polars as pl

from kiana.findings.counts import count_findings


def _findings() -> pl.DataFrame:
    return pl.DataFrame({
        "verdict": ["regression", "inconclusive", "inconclusive", "inconclusive", "drift"],
        "is_subject": [True, True, False, False, False],
        "folded": [False] * 5,
    })  # fmt: skip


def test_a_baselines_inconclusive_finding_is_said_to_be_theirs() -> None:
    counts = count_findings(_findings())
    assert counts.baselines == {"inconclusive": 2, "drift": 1}
    assert counts.verdict_text("inconclusive") == "3 inconclusive (2 of them baselines')"
    assert counts.verdict_text("regression") == "1 regression"
    assert counts.verdict_text("drift") == "1 drift"  # a baseline's drift is its verdict
    assert "3 inconclusive (2 of them baselines')" in counts.tally()


def test_all_of_them_baselines() -> None:
    theirs = _findings().filter((pl.col("verdict") == "inconclusive") & ~pl.col("is_subject"))
    counts = count_findings(theirs)
    assert counts.verdict_text("inconclusive") == "2 inconclusive (all baselines')"
