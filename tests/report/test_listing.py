"""The page's findings in bounded memory (:mod:`kiana.report.listing`) are the rows,
counts and filter values of every finding sorted whole (the reference below: what the
report computed before it kept only the rows it shows)."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana
from kiana.findings.counts import count_findings, listed_expr
from kiana.report.data import sort_findings
from kiana.report.listing import FILTERS, Listing, listing


def _reference(findings: pl.DataFrame, *, top: int, rows: int) -> dict[str, object]:
    """Every finding sorted whole (:func:`sort_findings`), split by metric, counted and
    filtered whole: slow and obviously what the page shows."""
    ordered = sort_findings(findings)
    latency = ordered.filter(pl.col("metric") == "latency")
    memory = ordered.filter(pl.col("metric") != "latency")
    found = {}
    for name, frame in (("latency", latency), ("memory", memory)):
        whole = findings.filter((pl.col("metric") == "latency") == (name == "latency"))
        found[name] = {
            "rows": frame.head(rows),
            "height": frame.height,
            "options": {
                k: sorted({str(v) for v in frame[k].to_list() if v is not None}) for k in FILTERS
            },
            "counts": count_findings(whole),
        }
    found["charted"] = ordered.filter(pl.col("listed")).head(top)
    found["counts"] = count_findings(findings)
    return found


def _assert_same(shown: Listing, reference: dict[str, object]) -> None:
    for name in ("latency", "memory"):
        table, expected = getattr(shown, name), reference[name]
        assert isinstance(expected, dict)
        assert_frame_equal(table.rows, expected["rows"])
        assert (table.height, table.options) == (expected["height"], expected["options"])
        assert table.counts == expected["counts"]
    assert isinstance(reference["charted"], pl.DataFrame)
    assert_frame_equal(shown.charted, reference["charted"])
    assert shown.counts == reference["counts"]


@pytest.fixture(scope="module")
def findings(data: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every finding of ``data/`` (latency and memory, folded drift among them)."""
    return kiana.analyze(data).findings


@pytest.mark.parametrize(("top", "rows"), [(30, 2000), (5, 7), (0, 1), (1000, 0)])
def test_the_listing_is_every_finding_sorted_whole(
    findings: pl.DataFrame, top: int, rows: int
) -> None:
    _assert_same(listing(findings, top=top, rows=rows), _reference(findings, top=top, rows=rows))


def test_ties_keep_the_judges_order(findings: pl.DataFrame) -> None:
    """Findings equal in every key of the order stay in the order the judge gave them."""
    same = findings.with_columns(
        verdict=pl.lit("regression"), impact=pl.lit(1.0), median_change=pl.lit(0.1),
        kernel=pl.lit("k"), provider=pl.lit("p"), gpu=pl.lit("g"),
    ).with_columns(pl.col("pass").first())  # fmt: skip
    shown = listing(same, top=3, rows=5)
    _assert_same(shown, _reference(same, top=3, rows=5))
    own = same.filter(~pl.col("folded").fill_null(False)).filter(pl.col("metric") == "latency")
    assert_frame_equal(shown.latency.rows.drop("rank", "listed"), own.head(5))


def test_the_rows_held_are_the_shown_ones_once(findings: pl.DataFrame) -> None:
    shown = listing(findings, top=30, rows=3)
    held = shown.rows()
    ranks = {*shown.latency.rows["rank"], *shown.memory.rows["rank"], *shown.charted["rank"]}
    assert held.height == len(ranks) < findings.height
    assert held.columns == findings.columns
    whole = sort_findings(findings).filter(pl.col("rank").is_in(sorted(ranks)))
    assert_frame_equal(held, whole.drop("rank", "listed"))


def test_no_findings_list_nothing(findings: pl.DataFrame) -> None:
    shown = listing(findings.clear(), top=30, rows=2000)
    assert (shown.latency.height, shown.memory.height, shown.charted.height) == (0, 0, 0)
    assert shown.counts.findings == 0 and shown.rows().height == 0
    assert "listed" in shown.latency.rows.columns


def test_folded_findings_are_counted_not_listed(findings: pl.DataFrame) -> None:
    folded = findings.filter(pl.col("folded").fill_null(False))
    assert folded.height  # data/ has baseline drift folded into a finding it explains
    shown = listing(findings, top=30, rows=100_000)
    assert shown.counts.folded == folded.height
    held = shown.latency.rows.height + shown.memory.rows.height
    assert held == findings.height - folded.height
    assert shown.charted.filter(~listed_expr()).height == 0


@pytest.fixture
def many() -> Iterator[pl.DataFrame]:
    """Findings repeated 200 times (distinct impacts): more than any table shows."""
    base = pl.DataFrame({
        "verdict": ["regression", "unchanged", "improvement", "drift"] * 50,
        "impact": [float(i % 17) for i in range(200)],
        "median_change": [0.01 * (i % 13) for i in range(200)],
        "kernel": [f"k{i % 7}" for i in range(200)], "pass": ["forward"] * 200,
        "provider": ["liger", "torch"] * 100, "gpu": [f"g{i % 3}" for i in range(200)],
        "metric": ["latency", "latency", "memory", "latency"] * 50,
        "is_subject": [True, False] * 100, "evidence": [f"row {i}" for i in range(200)],
    })  # fmt: skip
    yield base


def test_a_table_holds_its_first_rows_and_counts_every_one(many: pl.DataFrame) -> None:
    shown = listing(many, top=4, rows=10)
    _assert_same(shown, _reference(many, top=4, rows=10))
    assert (shown.latency.rows.height, shown.latency.height) == (10, 150)
    assert shown.latency.options["gpu"] == ["g0", "g1", "g2"]
