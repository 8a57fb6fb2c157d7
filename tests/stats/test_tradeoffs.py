"""A latency change paid for with the opposite memory change is a finding of its own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl
import pytest

from kiana.stats import Judgement, judge
from tests.stats_fixtures import frame, run


def _sweep(metric: str, before: float, after: float) -> list[dict[str, Any]]:
    rows = []
    for w in range(4):
        for provider, factor in (("liger", after), ("huggingface", 1.0)):
            base = before * (1 + w)
            rows.append(run("0.5.0", base, provider=provider, workload=f"w{w}", metric=metric))
            rows.append(
                run("0.6.0", base * factor, provider=provider, workload=f"w{w}", metric=metric)
            )
    return rows


def _tradeoffs(result: Judgement) -> pl.DataFrame:
    assert result.tradeoffs is not None, "judge always returns a tradeoffs frame"
    return result.tradeoffs


def _liger_verdict(result: Judgement, metric: str) -> str:
    (verdict,) = result.findings.filter(
        (pl.col("provider") == "liger") & (pl.col("metric") == metric)
    )["verdict"]
    return str(verdict)


TRADEOFF = frame(_sweep("latency", 1e6, 0.80) + _sweep("memory", 1000.0, 1.30))


def test_faster_but_more_memory_is_a_tradeoff() -> None:
    (row,) = _tradeoffs(judge(TRADEOFF)).to_dicts()
    assert (row["kernel"], row["provider"], row["from_version"], row["to_version"]) == (
        "layer_norm",
        "liger",
        "0.5.0",
        "0.6.0",
    )
    assert round(row["latency_change"], 2) == -0.20 and round(row["memory_change"], 2) == 0.30


def test_faster_with_the_same_memory_is_no_tradeoff() -> None:
    result = judge(frame(_sweep("latency", 1e6, 0.80) + _sweep("memory", 1000.0, 1.0)))
    # The gain is found; only the price is missing.
    assert _liger_verdict(result, "latency") == "improvement"
    assert _liger_verdict(result, "memory") == "unchanged"
    assert _tradeoffs(result).height == 0


@pytest.mark.heavy
def test_no_memory_rows_gives_an_empty_tradeoffs_frame() -> None:
    result = judge(frame(_sweep("latency", 1e6, 0.80)))
    assert _liger_verdict(result, "latency") == "improvement"
    empty = _tradeoffs(result)
    assert empty.height == 0
    # Empty, with the columns and types of a frame that holds a trade-off.
    assert empty.schema == _tradeoffs(judge(TRADEOFF)).schema


@pytest.mark.heavy
def test_the_report_lists_tradeoffs() -> None:
    from kiana.report.page import tradeoff_table

    html = tradeoff_table(_tradeoffs(judge(TRADEOFF)), limit=10)
    assert "Trade-offs: latency against memory in the same sittings (1)" in html
    assert "faster, more memory" in html
    assert "+30.0%" in html and "-20.0%" in html


def test_slower_with_less_memory_is_a_tradeoff_too() -> None:
    (row,) = _tradeoffs(
        judge(frame(_sweep("latency", 1e6, 1.25) + _sweep("memory", 1000.0, 0.7)))
    ).to_dicts()
    assert row["kind"] == "slower, less memory"


@pytest.mark.heavy
def test_a_tradeoff_needs_the_same_sittings() -> None:
    # KTO in Liger's history: 61% faster at +4% memory in one sitting.  The same memory
    # move measured in another sitting (days later) is no trade-off of that PR.
    latency = _sweep("latency", 1e6, 0.39)
    memory = [
        dict(r, observed_at=r["observed_at"] + timedelta(days=2))
        for r in _sweep("memory", 1000.0, 1.04)
    ]
    assert _tradeoffs(judge(frame(latency + memory))).height == 0
    (row,) = _tradeoffs(judge(frame(latency + _sweep("memory", 1000.0, 1.04)))).to_dicts()
    assert row["kind"] == "faster, more memory"
    assert round(row["latency_change"], 2) == -0.61 and round(row["memory_change"], 2) == 0.04
