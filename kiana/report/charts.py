"""Altair charts of runs, steps and findings; the report and notebooks share them.

Every function takes the polars frames kiana's API returns (``kiana.load.runs(con)``,
``judge(...).steps`` / ``.findings``), aggregates them to a few hundred rows at most,
and returns an Altair chart.  Altair is imported inside the functions so that
``import kiana`` stays light.

The report draws dozens of charts per page, and Altair validates every ``encode`` and
``properties`` call against the Vega-Lite schema (some 0.15 s a chart).  So the charts
of the page also exist as ``*_spec`` functions that build the same Vega-Lite JSON as
plain dicts, without Altair: ``series_spec(...)`` equals ``to_spec(series(...))`` less
the ``$schema`` URL, and the same for ``sweep_spec`` and ``speedup_spec``
(tests/test_report_speed.py holds them equal).  A change to one builder needs the same
change to its twin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import polars as pl

from kiana.errors import UsageError
from kiana.report import frames
from kiana.vocabulary import VERDICTS

if TYPE_CHECKING:
    import altair as alt

_COLORS = {
    "regression": "#cf222e",
    "improvement": "#1a7f37",
    "drift": "#bf8700",
    "inconclusive": "#8c959f",
    "unchanged": "#d0d7de",
}
#: One colour per verdict, in :data:`kiana.vocabulary.VERDICTS` order (the legend's).
VERDICT_COLORS: dict[str, str] = {v: _COLORS[v] for v in VERDICTS}
#: Provider lines: no red (red marks the flagged step and regressions).
PROVIDER_COLORS: list[str] = [
    "#0969da", "#8250df", "#bf8700", "#1b7c83", "#57606a", "#e16f24", "#4d2d00", "#bf3989",
    "#0550ae", "#116329",
] * 4  # fmt: skip
LIGER = "Liger"
BASELINE = "baseline"


def _inline(values: list[dict[str, Any]]) -> Any:
    import altair as alt

    return alt.Data(values=values)  # type: ignore[no-untyped-call]


def _verdict_scale() -> alt.Scale:
    import altair as alt

    return alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values()))


class _Series(NamedTuple):
    values: list[dict[str, Any]]
    order: list[str]  # the versions, oldest first
    providers: list[str]  # ``provider`` first
    unit: str


def _series_data(
    runs: pl.DataFrame, partition_id: str | None, metric: str, provider: str | None
) -> _Series:
    data = frames.series_frame(runs, partition_id=partition_id, metric=metric)
    if data.height == 0:
        raise UsageError(
            f"no passed {metric} runs for partition {partition_id!r}",
            hint="pick a partition_id from the runs frame (runs['partition_id'].unique())",
        )
    order = frames.version_order(data)
    unit, scale = frames.display_unit(metric, data["median"].max())
    data = data.with_columns((pl.col(c) / scale) for c in ("median", "p20", "p80"))
    providers = sorted(data["provider"].unique().to_list(), key=lambda p: (p != provider, p))
    return _Series(frames.chart_values(data), order, providers, unit)


def series(
    runs: pl.DataFrame,
    *,
    partition_id: str | None = None,
    metric: str = "latency",
    step: tuple[str, str] | None = None,
    provider: str | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """One partition across Liger versions: each provider's median as a line with its
    p20–p80 band; Liger providers drawn thick, same-run baselines thin and dashed.
    ``step=(from, to)`` shades the flagged step; ``provider`` is drawn first."""
    import altair as alt

    values, order, providers, unit = _series_data(runs, partition_id, metric, provider)
    domain = alt.Scale(domain=order)
    x = alt.X("liger_version:O", scale=domain, title="Liger version", axis=alt.Axis(labelAngle=-40))
    palette = alt.Scale(domain=providers, range=PROVIDER_COLORS[: max(1, len(providers))])
    color = alt.Color("provider:N", scale=palette, title="provider")
    is_liger = f"datum.role == '{LIGER}'"
    role_dash = alt.condition(is_liger, alt.value([1, 0]), alt.value([5, 3]))
    role_width = alt.condition(is_liger, alt.value(3), alt.value(1.5))
    base = alt.Chart(_inline(values)).encode(x=x, color=color)
    band = base.mark_area(opacity=0.15).encode(y="p20:Q", y2="p80:Q")
    tooltip = [
        alt.Tooltip("provider:N"),
        alt.Tooltip("liger_version:N", title="version"),
        alt.Tooltip("median:Q", format=",.4g", title=f"median ({unit})"),
        alt.Tooltip("p20:Q", format=",.4g"),
        alt.Tooltip("p80:Q", format=",.4g"),
        alt.Tooltip("runs:Q"),
    ]
    line = base.mark_line(point=True).encode(
        y=alt.Y("median:Q", scale=alt.Scale(zero=False), title=f"median {metric} ({unit})"),
        strokeDash=role_dash,
        strokeWidth=role_width,
        tooltip=tooltip,
    )
    layers: list[Any] = []
    if step is not None and step[0] in order and step[1] in order:
        mark = alt.Chart(_inline([{"from": step[0], "to": step[1]}]))
        layers.append(
            mark.mark_rect(color="#cf222e", opacity=0.1).encode(
                x=alt.X("from:O", scale=domain), x2="to:O"
            )
        )
        layers.append(
            mark.mark_rule(color="#cf222e", strokeDash=[4, 3]).encode(x=alt.X("to:O", scale=domain))
        )
    layers += [band, line]
    chart = alt.layer(*layers).properties(width=440, height=230)
    return cast("alt.LayerChart", chart.properties(title=frames.visible(title)) if title else chart)


def _sweep_data(
    steps: pl.DataFrame, finding: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    data = frames.sweep_frame(steps, finding)
    if data.height == 0:
        raise UsageError(
            "no steps match this finding",
            hint="pass a row of judge(...).findings (row(i, named=True)) and the same result's steps",
        )
    return frames.chart_values(data), frames.natural_order(data["workload"].to_list())


def _sweep_rules(threshold: float | None) -> list[dict[str, float]]:
    rules: list[dict[str, float]] = [{"y": 0.0}]
    if threshold:
        rules += [{"y": threshold}, {"y": -threshold}]
    return rules


def sweep(
    steps: pl.DataFrame,
    finding: Mapping[str, Any],
    *,
    threshold: float | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """The change of one finding's step across its workload sweep: a bar per workload
    coloured by verdict, the control (same-run baseline) change as a black tick."""
    import altair as alt

    values, order = _sweep_data(steps, finding)
    x = alt.X("workload:N", sort=order, title="workload", axis=alt.Axis(labelAngle=-40))
    base = alt.Chart(_inline(values)).encode(x=x)
    tooltip = [
        alt.Tooltip("workload:N"),
        alt.Tooltip("change:Q", format="+.1%"),
        alt.Tooltip("control_change:Q", format="+.1%", title="control change"),
        alt.Tooltip("adjusted_change:Q", format="+.1%", title="adjusted change"),
        alt.Tooltip("control_provider:N", title="control"),
        alt.Tooltip("verdict:N"),
        alt.Tooltip("noise_source:N", title="noise from"),
    ]
    bars = base.mark_bar().encode(
        y=alt.Y("change:Q", axis=alt.Axis(format="+%"), title="change (+ = slower)"),
        color=alt.Color("verdict:N", scale=_verdict_scale(), title="verdict"),
        tooltip=tooltip,
    )
    ticks = base.mark_tick(color="black", thickness=2, size=14).encode(
        y="control_change:Q", tooltip=tooltip
    )
    rules = _sweep_rules(threshold)
    rule = alt.Chart(_inline(rules)).mark_rule(color="#59636e", strokeDash=[3, 3]).encode(y="y:Q")
    chart = alt.layer(bars, ticks, rule).properties(width=max(220, 34 * len(order)), height=230)
    return cast("alt.LayerChart", chart.properties(title=frames.visible(title)) if title else chart)


def finding(
    runs: pl.DataFrame,
    steps: pl.DataFrame,
    row: Mapping[str, Any],
    *,
    threshold: float | None = None,
) -> alt.HConcatChart:
    """Both charts of one finding side by side (series of its worst workload, sweep)."""
    import altair as alt

    worst = frames.worst_step(steps, row)
    step = (str(row["from_version"]), str(row["to_version"]))
    left = series(
        runs,
        partition_id=worst["partition_id"],
        metric=str(row["metric"]),
        step=step,
        provider=str(row["provider"]),
        title=f"worst workload: {worst['workload']}",
    )
    right = sweep(steps, row, threshold=threshold, title="change across the sweep")
    pair = alt.hconcat(left, right).resolve_scale(color="independent", strokeDash="independent")
    return cast("alt.HConcatChart", pair)


def speedup(
    runs: pl.DataFrame, *, version: str | None = None, max_rows: int = 150
) -> alt.LayerChart:
    """Geometric-mean speedup of each Liger provider over each same-run baseline
    (baseline median / Liger median, >1 = Liger faster) per kernel, pass and GPU at
    the newest version measured (or ``version``).  Cells below 1× are red."""
    return speedup_from_summary(
        frames.speedup_summary(frames.speedup_frame(runs, version=version)), max_rows=max_rows
    )


def _speedup_data(
    summary: pl.DataFrame, max_rows: int
) -> tuple[list[dict[str, Any]], list[str], int]:
    data = summary.sort("row")
    rows = data["row"].unique(maintain_order=True).to_list()[:max_rows]
    data = data.filter(pl.col("row").is_in(rows))
    return frames.chart_values(data), rows, max(1, data["gpu"].n_unique())


def speedup_from_summary(summary: pl.DataFrame, *, max_rows: int = 150) -> alt.LayerChart:
    """:func:`speedup` from an already computed ``frames.speedup_summary`` frame."""
    import altair as alt

    values, rows, gpus = _speedup_data(summary, max_rows)
    base = alt.Chart(_inline(values)).encode(
        y=alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(labelLimit=420)),
        x=alt.X("gpu:N", title=None, axis=alt.Axis(orient="top", labelAngle=0, labelLimit=200)),
    )
    tooltip = [
        alt.Tooltip("row:N", title="kernel · pass · Liger vs baseline"),
        alt.Tooltip("gpu:N"),
        alt.Tooltip("geomean:Q", format=".2f", title="geomean speedup"),
        alt.Tooltip("worst:Q", format=".2f", title="worst workload"),
        alt.Tooltip("below_1x:Q", title="workloads below 1x"),
        alt.Tooltip("workloads:Q"),
        alt.Tooltip("liger_version:N", title="version"),
    ]
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "geomean:Q",
            title="speedup",
            scale=alt.Scale(type="log", domain=[0.5, 2], domainMid=1, scheme="redblue", clamp=True),
            legend=alt.Legend(values=[0.5, 0.75, 1, 1.5, 2], format=".2~f"),
        ),
        tooltip=tooltip,
    )
    text = base.mark_text(fontSize=11).encode(
        text="label:N",
        color=alt.condition(
            "datum.geomean < 0.5 || datum.geomean > 2.5", alt.value("white"), alt.value("black")
        ),
        tooltip=tooltip,
    )
    chart = (cells + text).properties(width=min(1000, 190 * gpus), height={"step": 22})
    return cast("alt.LayerChart", chart)


def overview(frame: pl.DataFrame, *, value: str = "median_change") -> alt.LayerChart:
    """A kernel · pass × GPU heat map of findings (or steps): the median change,
    coloured red for slower and green for faster, for a release-wide look."""
    import altair as alt

    data = frames.overview_frame(frame, value=value)
    values = frames.chart_values(data)
    rows = data["row"].unique(maintain_order=True).to_list()
    base = alt.Chart(_inline(values)).encode(
        y=alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(labelLimit=420)),
        x=alt.X("gpu:N", title=None, axis=alt.Axis(orient="top", labelAngle=0, labelLimit=200)),
    )
    tooltip = [
        alt.Tooltip("row:N", title="kernel · pass · provider"),
        alt.Tooltip("gpu:N"),
        alt.Tooltip("change:Q", format="+.1%"),
        alt.Tooltip("verdict:N"),
    ]
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "change:Q",
            title="change",
            scale=alt.Scale(domain=[-0.3, 0.3], scheme="redyellowgreen", reverse=True, clamp=True),
            legend=alt.Legend(format="+%"),
        ),
        tooltip=tooltip,
    )
    text = base.mark_text(fontSize=11).encode(text="label:N", tooltip=tooltip)
    gpus = max(1, data["gpu"].n_unique())
    chart = (cells + text).properties(width=min(900, 160 * gpus), height={"step": 20})
    return cast("alt.LayerChart", chart)


def to_spec(chart: Any) -> dict[str, Any]:
    """The Vega-Lite JSON of a chart, without re-validating it against the schema;
    every string (data, domains, titles) has direction overrides and invisible
    characters shown as ``[U+XXXX]``, the same way in data and in sort orders."""
    spec: dict[str, Any] = _visible_strings(chart.to_dict(validate=False))
    return spec


# The page's charts as Vega-Lite dicts, without Altair (see the module docstring).  Keys
# are in the order Altair writes them, so the page's JSON is the same text either way.

#: Altair's default ``config`` (its theme), part of every ``to_dict()``.
_CONFIG: dict[str, Any] = {"view": {"continuousWidth": 300, "continuousHeight": 300}}


def _spec(layer: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    """A layered chart with its top-level properties (``data``, ``height``, ``title``,
    ``width``), made visible like :func:`to_spec` (fresh objects: nothing is shared)."""
    spec: dict[str, Any] = {"config": _CONFIG, "layer": layer, **top}
    visible: dict[str, Any] = _visible_strings(spec)
    return visible


def _field(name: str, kind: str, **props: Any) -> dict[str, Any]:
    """An encoding channel of ``name`` (``kind``: nominal, ordinal, quantitative) with
    ``props`` (axis, format, scale, sort, title), keys sorted the way Altair sorts them."""
    channel = {"field": name, "type": kind, **props}
    return {k: channel[k] for k in sorted(channel)}


def _if_liger(then: Any, otherwise: Any) -> dict[str, Any]:
    return {"condition": {"test": f"datum.role == '{LIGER}'", "value": then}, "value": otherwise}


def series_spec(
    runs: pl.DataFrame,
    *,
    partition_id: str | None = None,
    metric: str = "latency",
    step: tuple[str, str] | None = None,
    provider: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """``to_spec(series(...))`` without ``$schema``, built without Altair."""
    values, order, providers, unit = _series_data(runs, partition_id, metric, provider)
    x = _field(
        "liger_version", "ordinal", axis={"labelAngle": -40}, scale={"domain": order},
        title="Liger version",
    )  # fmt: skip
    palette = {"domain": providers, "range": PROVIDER_COLORS[: max(1, len(providers))]}
    color = _field("provider", "nominal", scale=palette, title="provider")
    data = {"values": values}
    band = {
        "data": data,
        "mark": {"type": "area", "opacity": 0.15},
        "encoding": {
            "color": color,
            "x": x,
            "y": _field("p20", "quantitative"),
            "y2": {"field": "p80"},
        },
    }
    tooltip = [
        _field("provider", "nominal"),
        _field("liger_version", "nominal", title="version"),
        _field("median", "quantitative", format=",.4g", title=f"median ({unit})"),
        _field("p20", "quantitative", format=",.4g"),
        _field("p80", "quantitative", format=",.4g"),
        _field("runs", "quantitative"),
    ]
    y = _field("median", "quantitative", scale={"zero": False}, title=f"median {metric} ({unit})")
    line = {
        "data": data,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "color": color,
            "strokeDash": _if_liger([1, 0], [5, 3]),
            "strokeWidth": _if_liger(3, 1.5),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    layers: list[dict[str, Any]] = []
    if step is not None and step[0] in order and step[1] in order:
        marked = {"values": [{"from": step[0], "to": step[1]}]}
        layers.append({
            "data": marked,
            "mark": {"type": "rect", "color": "#cf222e", "opacity": 0.1},
            "encoding": {
                "x": _field("from", "ordinal", scale={"domain": order}),
                "x2": {"field": "to"},
            },
        })  # fmt: skip
        layers.append({
            "data": marked,
            "mark": {"type": "rule", "color": "#cf222e", "strokeDash": [4, 3]},
            "encoding": {"x": _field("to", "ordinal", scale={"domain": order})},
        })  # fmt: skip
    titled = {"title": frames.visible(title)} if title else {}
    if not layers:  # Altair lifts data that every layer shares to the top
        del band["data"], line["data"]
        return _spec([band, line], data=data, height=230, **titled, width=440)
    return _spec([*layers, band, line], height=230, **titled, width=440)


def sweep_spec(
    steps: pl.DataFrame,
    finding: Mapping[str, Any],
    *,
    threshold: float | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """``to_spec(sweep(...))`` without ``$schema``, built without Altair."""
    values, order = _sweep_data(steps, finding)
    x = _field("workload", "nominal", axis={"labelAngle": -40}, sort=order, title="workload")
    tooltip = [
        _field("workload", "nominal"),
        _field("change", "quantitative", format="+.1%"),
        _field("control_change", "quantitative", format="+.1%", title="control change"),
        _field("adjusted_change", "quantitative", format="+.1%", title="adjusted change"),
        _field("control_provider", "nominal", title="control"),
        _field("verdict", "nominal"),
        _field("noise_source", "nominal", title="noise from"),
    ]
    data = {"values": values}
    verdicts = {"domain": list(VERDICT_COLORS), "range": list(VERDICT_COLORS.values())}
    bars = {
        "data": data,
        "mark": {"type": "bar"},
        "encoding": {
            "color": _field("verdict", "nominal", scale=verdicts, title="verdict"),
            "tooltip": tooltip,
            "x": x,
            "y": _field(
                "change", "quantitative", axis={"format": "+%"}, title="change (+ = slower)"
            ),
        },
    }
    ticks = {
        "data": data,
        "mark": {"type": "tick", "color": "black", "size": 14, "thickness": 2},
        "encoding": {"tooltip": tooltip, "x": x, "y": _field("control_change", "quantitative")},
    }
    rule = {
        "data": {"values": _sweep_rules(threshold)},
        "mark": {"type": "rule", "color": "#59636e", "strokeDash": [3, 3]},
        "encoding": {"y": _field("y", "quantitative")},
    }
    titled = {"title": frames.visible(title)} if title else {}
    return _spec([bars, ticks, rule], height=230, **titled, width=max(220, 34 * len(order)))


def speedup_spec(summary: pl.DataFrame, *, max_rows: int = 150) -> dict[str, Any]:
    """``to_spec(speedup_from_summary(...))`` without ``$schema``, built without Altair."""
    values, rows, gpus = _speedup_data(summary, max_rows)
    x = _field(
        "gpu", "nominal", axis={"labelAngle": 0, "labelLimit": 200, "orient": "top"}, title=None
    )
    y = _field("row", "nominal", axis={"labelLimit": 420}, sort=rows, title=None)
    tooltip = [
        _field("row", "nominal", title="kernel · pass · Liger vs baseline"),
        _field("gpu", "nominal"),
        _field("geomean", "quantitative", format=".2f", title="geomean speedup"),
        _field("worst", "quantitative", format=".2f", title="worst workload"),
        _field("below_1x", "quantitative", title="workloads below 1x"),
        _field("workloads", "quantitative"),
        _field("liger_version", "nominal", title="version"),
    ]
    scale = {"clamp": True, "domain": [0.5, 2], "domainMid": 1, "scheme": "redblue", "type": "log"}
    legend = {"format": ".2~f", "values": [0.5, 0.75, 1, 1.5, 2]}
    cells = {
        "mark": {"type": "rect", "stroke": "white"},
        "encoding": {
            "color": _field("geomean", "quantitative", legend=legend, scale=scale, title="speedup"),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    contrast = "datum.geomean < 0.5 || datum.geomean > 2.5"
    text = {
        "mark": {"type": "text", "fontSize": 11},
        "encoding": {
            "color": {"condition": {"test": contrast, "value": "white"}, "value": "black"},
            "text": _field("label", "nominal"),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    return _spec(
        [cells, text], data={"values": values}, height={"step": 22}, width=min(1000, 190 * gpus)
    )


def _visible_strings(value: Any) -> Any:
    if isinstance(value, str):
        return frames.visible(value)
    if isinstance(value, dict):
        return {k: _visible_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible_strings(v) for v in value]
    return value


__all__: Sequence[str] = (
    "finding", "overview", "series", "series_spec", "speedup", "speedup_from_summary",
    "speedup_spec", "sweep", "sweep_spec", "to_spec",
)  # fmt: skip
