"""A latency gain paid for with a memory regression is a finding of its own."""

from __future__ import annotations

from typing import Any

from kiana.stats import judge
from tests.test_stats_support import frame, run


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


def test_faster_but_more_memory_is_a_tradeoff() -> None:
    runs = frame(_sweep("latency", 1e6, 0.80) + _sweep("memory", 1000.0, 1.30))
    result = judge(runs)
    assert result.tradeoffs is not None
    (row,) = result.tradeoffs.to_dicts()
    assert (row["kernel"], row["provider"], row["from_version"], row["to_version"]) == (
        "layer_norm",
        "liger",
        "0.5.0",
        "0.6.0",
    )
    assert round(row["latency_change"], 2) == -0.20 and round(row["memory_change"], 2) == 0.30


def test_faster_with_the_same_memory_is_no_tradeoff() -> None:
    runs = frame(_sweep("latency", 1e6, 0.80) + _sweep("memory", 1000.0, 1.0))
    result = judge(runs)
    assert result.tradeoffs is not None and result.tradeoffs.height == 0


def test_no_memory_rows_gives_an_empty_tradeoffs_frame() -> None:
    result = judge(frame(_sweep("latency", 1e6, 0.80)))
    assert result.tradeoffs is not None and result.tradeoffs.height == 0
    assert "memory_change" in result.tradeoffs.columns


def test_the_report_lists_tradeoffs() -> None:
    from kiana.report.page import tradeoff_table

    result = judge(frame(_sweep("latency", 1e6, 0.80) + _sweep("memory", 1000.0, 1.30)))
    assert result.tradeoffs is not None
    html = tradeoff_table(result.tradeoffs, limit=10)
    assert "Trade-offs: faster, but more memory at the same step (1)" in html
    assert "+30.0%" in html and "-20.0%" in html
