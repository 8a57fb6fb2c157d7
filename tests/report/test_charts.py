"""The page's charts are Vega-Lite dicts built without Altair (``kiana.report.charts``);
the notebooks' Altair charts (``kiana.charts``) are made from the same dicts with
``from_dict``.  Each spec must be valid Vega-Lite (Altair validates it against the
schema) and come back from Altair key for key (``to_spec(chart) == spec``), hostile
strings included."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pytest

import kiana.charts
from kiana.errors import UsageError
from kiana.report import charts, frames
from tests.report_fixtures import (
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
    spec = kiana.charts.to_spec(chart)
    spec.pop("$schema")
    return spec


def _same(spec: dict[str, Any], back: dict[str, Any]) -> None:
    """Equal as JSON values (Altair may write the keys of a layer in another order)."""
    assert spec == back


def _valid(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec through Altair and back: validated against the Vega-Lite schema."""
    import altair as alt

    return _altair(alt.LayerChart.from_dict(spec, validate=True))


def _partition(runs: pl.DataFrame, pass_: str = "backward", workload: int = 2) -> str:
    ids = runs.filter(pl.col("pass") == pass_)["partition_id"].unique().sort().to_list()
    return str(ids[workload])


@pytest.mark.heavy
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
    spec = charts.series_spec(runs, **kwargs)
    _same(spec, _valid(spec))
    _same(spec, _altair(kiana.charts.series(runs, **kwargs)))


@pytest.mark.heavy
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
    spec = charts.sweep_spec(steps, row, threshold=threshold, title=title)
    _same(spec, _valid(spec))
    _same(spec, _altair(kiana.charts.sweep(steps, row, threshold=threshold, title=title)))


@pytest.mark.heavy
@pytest.mark.parametrize("hostile", [False, True])
@pytest.mark.parametrize("max_rows", [1, 150])
def test_speedup_spec_is_the_altair_spec(hostile: bool, max_rows: int) -> None:
    summary = frames.speedup_summary(frames.speedup_frame(sample_runs(hostile)))
    spec = charts.speedup_spec(summary, max_rows=max_rows)
    _same(spec, _valid(spec))
    if max_rows == 150:
        _same(spec, _altair(kiana.charts.speedup(sample_runs(hostile))))


@pytest.mark.parametrize("hostile", [False, True])
@pytest.mark.parametrize("steps", [False, True])
def test_overview_spec_is_valid(hostile: bool, steps: bool) -> None:
    frame = sample_steps(hostile) if steps else sample_findings(hostile)
    spec = charts.overview_spec(frame)
    _same(spec, _valid(spec))
    _same(spec, _altair(kiana.charts.overview(frame)))
    assert "\u202e" not in json.dumps(spec, ensure_ascii=False)


def test_finding_pairs_the_series_and_the_sweep() -> None:
    runs, steps, findings = sample_runs(), sample_steps(), sample_findings()
    spec = kiana.charts.to_spec(
        kiana.charts.finding(runs, steps, findings.row(0, named=True), threshold=0.03)
    )
    left, right = spec["hconcat"]
    assert left["title"].startswith("worst workload: ") and "config" not in left
    assert right["title"] == "change across the sweep"
    assert spec["resolve"] == {"scale": {"color": "independent", "strokeDash": "independent"}}


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


@pytest.mark.heavy
@pytest.mark.parametrize("hostile", [False, True])
def test_every_chart_of_the_page_is_valid_vega_lite(hostile: bool, tmp_path: Path) -> None:
    """The page's JSON blocks, read back, validate and come back from Altair unchanged."""
    con = cast("duckdb.DuckDBPyConnection", sample_database(tmp_path, hostile=hostile))
    blocks = re.findall(r'<script type="application/json" data-chart=[^>]*>(.*?)</script>',
                        build_page(con), re.S)  # fmt: skip
    assert len(blocks) == 3
    for block in blocks:
        spec = json.loads(block)
        _same(spec, _valid(spec))


def test_the_bundled_vega_lite_is_the_version_altair_writes() -> None:
    import altair as alt

    from kiana.report.assets import VEGA_LITE_VERSION

    assert alt.SCHEMA_VERSION.lstrip("v").startswith(VEGA_LITE_VERSION + ".")


def _provider_scale(spec: dict[str, Any], channel: str = "color") -> dict[str, Any]:
    """``{provider: value}`` of the series spec's line layer's ``channel`` scale."""
    line = spec["layer"][-1]
    scale = line["encoding"][channel]["scale"]
    return dict(zip(scale["domain"], scale["range"], strict=True))


def test_a_provider_keeps_its_colour_from_chart_to_chart() -> None:
    """Whatever the chart's providers and which is drawn first, liger is the same blue
    and a baseline the same colour; Liger lines solid, baselines dashed."""
    runs = sample_runs()
    extra = runs.filter(pl.col("provider") == "huggingface").with_columns(
        pl.lit("torch").alias("provider"), pl.col("median") * 0.8
    )
    seen: dict[str, set[str]] = {}
    for frame in (runs, pl.concat([runs, extra])):
        for provider in (None, "liger", "huggingface", "torch"):
            for workload in (0, 3):
                spec = charts.series_spec(
                    frame, partition_id=_partition(frame, workload=workload), provider=provider
                )
                colours = _provider_scale(spec)
                assert len(set(colours.values())) == len(colours)  # distinct in one chart
                for name, colour in colours.items():
                    seen.setdefault(name, set()).add(colour)
                dashes = _provider_scale(spec, "strokeDash")
                assert dashes["liger"] == [1, 0] and dashes["huggingface"] == [5, 3]
    assert {name: len(colours) for name, colours in seen.items()} == {
        "liger": 1, "huggingface": 1, "torch": 1
    }  # fmt: skip
    assert seen["liger"] == {charts.provider_color("liger")} == {"#0969da"}


def test_unknown_providers_keep_a_colour_and_stay_apart_in_a_chart() -> None:
    from kiana.report.charts.colors import provider_colors

    names = [f"liger_variant_{i}" for i in range(6)] + [f"baseline_{i}" for i in range(6)]
    subjects = set(names[:6])  # under test: their own palette
    colours = provider_colors(names, subjects)
    assert len(set(colours)) == len(names)
    assert provider_colors(names[3:5], subjects) == [
        charts.provider_color(n, subject=True) for n in names[3:5]
    ]
    assert charts.provider_color("liger_variant_9", True) == charts.provider_color(
        "liger_variant_9", True
    )


def test_the_legend_shows_lines_and_memory_says_memory() -> None:
    runs = sample_runs()
    spec = charts.series_spec(runs, partition_id=_partition(runs), provider="liger")
    band, line = spec["layer"]
    assert "color" not in band["encoding"] and band["encoding"]["fill"]["scale"] is None
    assert line["encoding"]["color"]["legend"]["symbolType"] == "stroke"
    assert line["encoding"]["strokeDash"]["legend"] == line["encoding"]["color"]["legend"]
    row = sample_findings().row(0, named=True)
    steps = sample_steps()
    latency = charts.sweep_spec(steps, row)["layer"][0]["encoding"]["y"]["title"]
    assert latency == "change (+ = slower)"
    memory_steps = steps.with_columns(pl.lit("memory").alias("metric"))
    memory = charts.sweep_spec(memory_steps, {**row, "metric": "memory"})
    assert memory["layer"][0]["encoding"]["y"]["title"] == "change (+ = more memory)"


def _marks(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The speedup map's two data layers: the slowest-to-fastest lines and the dots."""
    spans, dots = (layer for layer in spec["layer"] if "data" not in layer)
    return spans, dots


def _rows(spec: dict[str, Any]) -> list[str]:
    """The speedup map's rows, top to bottom: its data's rows by their ``order``."""
    spans, dots = _marks(spec)
    assert dots["encoding"]["y"]["sort"] == {"field": "order", "op": "min"}
    assert spans["encoding"]["y"] == dots["encoding"]["y"]
    first = {v["row"]: v["order"] for v in reversed(spec["data"]["values"])}
    return sorted(first, key=first.__getitem__)


def test_speedup_map_rows_are_exactly_the_kernels_passes_and_gpus_with_data() -> None:
    """A row for every kernel · pass · GPU where a Liger provider and a baseline ran at
    one version, none for Liger alone, a baseline alone or two versions that never met."""
    runs = sample_runs()
    liger = pl.col("provider") == "liger"
    forward = pl.col("pass") == "forward"

    def on(gpu: str, frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(pl.lit(gpu).alias("gpu"), pl.col("partition_id") + gpu)

    never_met = on("GPU apart", runs).with_columns(
        pl.when(liger).then(pl.lit("0.1.0")).otherwise(pl.col("version")).alias("version")
    )
    many = pl.concat([
        runs.filter(~(forward & ~liger)),          # forward: Liger alone on the H100
        on("GPU B", runs),                         # both passes compared
        on("GPU baseline only", runs.filter(~liger)),
        on("GPU Liger only", runs.filter(liger)),
        never_met,
    ])  # fmt: skip
    summary = frames.speedup_summary(frames.speedup_frame(many))
    spec = charts.speedup_spec(summary)
    _same(spec, _valid(spec))
    expected = [
        "layer_norm · backward · GPU B",
        "layer_norm · backward · NVIDIA H100 80GB HBM3",
        "layer_norm · forward · GPU B",
    ]
    assert _rows(spec) == expected
    assert all(layer["mark"]["type"] != "text" for layer in spec["layer"])  # no cryptic labels


def test_speedup_map_marks_say_what_they_are() -> None:
    """Dot: the geometric mean; line: slowest to fastest workload; the 1× line and the
    slower side drawn; colour the baseline, shape the Liger provider; numbers on hover."""
    summary = frames.speedup_summary(frames.speedup_frame(sample_runs()))
    spec = charts.speedup_spec(summary)
    spans, dots = _marks(spec)
    assert (spans["encoding"]["x"]["field"], spans["encoding"]["x2"]["field"]) == ("worst", "best")
    assert dots["encoding"]["x"]["field"] == "geomean"
    assert dots["encoding"]["x"]["scale"]["type"] == "log"
    assert "right of 1× Liger is faster" in dots["encoding"]["x"]["title"]
    assert dots["encoding"]["color"]["field"] == "baseline"
    assert dots["encoding"]["shape"]["field"] == "provider"
    band, even = (layer for layer in spec["layer"] if "data" in layer)
    assert band["data"]["values"][0]["to"] == 1.0 and even["data"]["values"] == [{"at": 1.0}]
    hover = {t["field"] for t in dots["encoding"]["tooltip"]}
    assert {"geomean", "worst", "best", "below_1x", "workloads", "pair"} <= hover
    (row,) = summary.filter(pl.col("pass") == "forward").iter_rows(named=True)
    assert (row["below_1x"], row["workloads"]) == (1, 4) and row["worst"] == pytest.approx(1 / 1.2)


@pytest.mark.heavy
@pytest.mark.parametrize("hostile", [False, True])
def test_speedup_map_has_every_row_selects_and_fits(hostile: bool) -> None:
    """Every row (no cap unless asked), a kernel and a GPU select filtering the marks,
    the row labels, the axis and the legends within a 1,400 px window."""
    from kiana.report.charts.speedup import LABEL_WIDTH, WIDTH

    runs = sample_runs(hostile)
    kernel = str(runs["kernel"][0])
    copies = [runs.with_columns(pl.lit(f"{kernel}_{i}").alias("kernel")) for i in range(80)]
    gpus = [
        runs.with_columns(pl.lit(f"GPU {g}").alias("gpu"), pl.col("partition_id") + str(g))
        for g in range(9)
    ]
    many = pl.concat([runs, *copies, *gpus])
    summary = frames.speedup_summary(frames.speedup_frame(many))
    spec = charts.speedup_spec(summary, filter_element="#speedup-filter")
    _same(spec, _valid(spec))
    rows = summary["row"].n_unique()
    spans, dots = _marks(spec)
    assert rows > 150 and len(_rows(spec)) == rows
    assert LABEL_WIDTH + WIDTH <= 1000 and spec["width"] == WIDTH
    assert dots["encoding"]["color"]["legend"]["orient"] == "right"
    kernels, gpu = spec["params"]
    for param, count in ((kernels, 82), (gpu, 11)):
        assert param["bind"]["input"] == "select" and param["bind"]["element"] == "#speedup-filter"
        assert param["bind"]["options"][0] == "" and len(param["bind"]["options"]) == count
    tests = [
        f"{p['name']} == '' || datum.{f} == {p['name']}"
        for p, f in ((kernels, "kernel"), (gpu, "gpu"))
    ]
    assert spans["transform"] == dots["transform"] == [{"filter": t} for t in tests]
    alone = charts.speedup_spec(frames.speedup_summary(frames.speedup_frame(runs)))
    assert "params" not in alone and "transform" not in _marks(alone)[1]  # nothing to pick
