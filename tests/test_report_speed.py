"""The page's charts are built as Vega-Lite dicts without Altair (``charts.*_spec``);
they must be the very JSON the Altair builders give (``to_spec(series(...))`` etc.):
same marks, encodings, data, titles, colours and escaping, key for key.  No timings
here: equivalence only."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pytest

from kiana.errors import UsageError
from kiana.report import charts, frames
from tests.test_report_helpers import (
    PAYLOADS,
    build_page,
    sample_database,
    sample_findings,
    sample_runs,
    sample_steps,
)

if TYPE_CHECKING:
    import duckdb


def _altair(chart: Any) -> dict[str, Any]:
    spec = charts.to_spec(chart)
    spec.pop("$schema")
    return spec


def _same(fast: dict[str, Any], slow: dict[str, Any]) -> None:
    assert fast == slow
    # the same text too (key order), so the page does not change by a byte
    assert json.dumps(fast, ensure_ascii=False) == json.dumps(slow, ensure_ascii=False)


def _partition(runs: pl.DataFrame, pass_: str = "backward", workload: int = 2) -> str:
    ids = runs.filter(pl.col("pass") == pass_)["partition_id"].unique().sort().to_list()
    return str(ids[workload])


@pytest.mark.parametrize("hostile", [False, True])
@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"step": "last", "provider": "liger", "title": "title"},
        {"step": "last", "title": f"a {PAYLOADS[4]} title {PAYLOADS[2]}"},
        {"step": ("0.5.0", "no such version"), "provider": "base"},
        {"metric": "memory"},
        {"scale": 100.0, "step": "last"},  # milliseconds
        {"scale": 1e-3},  # nanoseconds
        {"third_provider": True, "provider": "base", "step": "last"},
    ],
)
def test_series_spec_is_the_altair_spec(hostile: bool, variant: dict[str, Any]) -> None:
    runs = sample_runs(hostile)
    liger, base = runs["provider"].unique().sort().to_list()[:: 1 if hostile else -1][:2]
    if "liger" not in liger:
        liger, base = base, liger
    versions = frames.version_order(frames.series_frame(runs, partition_id=_partition(runs)))
    if "scale" in variant:
        runs = runs.with_columns(pl.col(c) * variant["scale"] for c in ("median", "p20", "p80"))
    if variant.get("metric") == "memory":
        runs = runs.with_columns(pl.lit("memory").alias("metric"))
    if variant.get("third_provider"):
        extra = runs.filter(pl.col("provider") == base).with_columns(
            pl.lit(f"torch_compile{PAYLOADS[1]}").alias("provider"), pl.col("median") * 0.8
        )
        runs = pl.concat([runs, extra])
    step = variant.get("step")
    kwargs: dict[str, Any] = {
        "partition_id": _partition(runs),
        "metric": variant.get("metric", "latency"),
        "step": (versions[-2], versions[-1]) if step == "last" else step,
        "provider": {"liger": liger, "base": base}.get(variant.get("provider", "")),
        "title": variant.get("title"),
    }
    _same(charts.series_spec(runs, **kwargs), _altair(charts.series(runs, **kwargs)))


@pytest.mark.parametrize("hostile", [False, True])
@pytest.mark.parametrize("threshold", [None, 0.0, 0.03])
@pytest.mark.parametrize("title", [None, "change across the workload sweep", PAYLOADS[4]])
def test_sweep_spec_is_the_altair_spec(hostile: bool, threshold: float | None, title: str) -> None:
    steps = sample_steps(hostile).with_columns(  # missing values: null and NaN
        pl.when(pl.col("workload") == "hidden512-fp32")
        .then(None)
        .otherwise(pl.col("control_change"))
        .alias("control_change"),
        pl.when(pl.col("workload") == "hidden2048-fp32")
        .then(math.nan)
        .otherwise(pl.col("adjusted_change"))
        .alias("adjusted_change"),
    )
    row = sample_findings(hostile).row(0, named=True)
    fast = charts.sweep_spec(steps, row, threshold=threshold, title=title)
    _same(fast, _altair(charts.sweep(steps, row, threshold=threshold, title=title)))


@pytest.mark.parametrize("hostile", [False, True])
@pytest.mark.parametrize("max_rows", [1, 150])
def test_speedup_spec_is_the_altair_spec(hostile: bool, max_rows: int) -> None:
    summary = frames.speedup_summary(frames.speedup_frame(sample_runs(hostile)))
    fast = charts.speedup_spec(summary, max_rows=max_rows)
    _same(fast, _altair(charts.speedup_from_summary(summary, max_rows=max_rows)))


def test_spec_builders_refuse_what_the_chart_builders_refuse() -> None:
    runs, steps = sample_runs(), sample_steps()
    with pytest.raises(UsageError, match="partitions"):
        charts.series_spec(runs)
    with pytest.raises(UsageError, match="no passed"):
        charts.series_spec(runs, partition_id="no such partition")
    row = {**sample_findings().row(0, named=True), "gpu": "no such gpu"}
    with pytest.raises(UsageError, match="no steps"):
        charts.sweep_spec(steps, row)


def test_specs_share_no_objects() -> None:
    """Each spec is fresh: the page may edit one without touching another."""
    runs = sample_runs()
    spec = charts.series_spec(runs, partition_id=_partition(runs), step=("0.5.10", "0.6.0"))
    seen: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict | list):
            assert id(value) not in seen
            seen.add(id(value))
            for v in value.values() if isinstance(value, dict) else value:
                walk(v)

    walk(spec)


@pytest.mark.parametrize("hostile", [False, True])
def test_page_is_the_page_altair_would_build(
    hostile: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole page, byte for byte, against one whose charts come from Altair."""
    con = cast("duckdb.DuckDBPyConnection", sample_database(tmp_path, hostile=hostile))
    fast = build_page(con)
    assert fast.count('<script type="application/json" data-chart=') == 3
    monkeypatch.setattr(
        charts, "series_spec", lambda runs, **kw: _altair(charts.series(runs, **kw))
    )
    monkeypatch.setattr(
        charts, "sweep_spec", lambda steps, row, **kw: _altair(charts.sweep(steps, row, **kw))
    )
    monkeypatch.setattr(
        charts,
        "speedup_spec",
        lambda summary, **kw: _altair(charts.speedup_from_summary(summary, **kw)),
    )
    assert build_page(con) == fast


def test_the_bundled_vega_lite_is_the_version_altair_writes() -> None:
    import altair as alt

    from kiana.report.assets import VEGA_LITE_VERSION

    assert alt.SCHEMA_VERSION.lstrip("v").startswith(VEGA_LITE_VERSION + ".")
