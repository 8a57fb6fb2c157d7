"""The series chart: one partition across its benchmark sessions, every provider's median
as a line with its p20–p80 band; providers under test thick and solid, same-run baselines
thin and dashed, each provider in its own colour in every chart (:mod:`.colors`); the
legend shows each provider's line; the flagged step shaded.

The x axis is the sessions (:func:`kiana.report.frames.series_frame`), in (version,
time) order, labelled with their version: two sessions under one label (a
re-benchmark of a development tree) are two points, the tooltip dates each."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NamedTuple

import polars as pl

from kiana.errors import UsageError
from kiana.report import frames
from kiana.report.charts.colors import provider_colors, provider_dashes
from kiana.report.charts.spec import channel, condition, layered, titled
from kiana.stats.sessions import SESSION_GAP

#: The axis label of a point (``<session> <version>``): its version.
_VERSION_LABEL = "slice(datum.label, indexof(datum.label, ' ') + 1)"


class SeriesData(NamedTuple):
    values: list[dict[str, Any]]
    order: list[str]  # the points (sessions), oldest first
    providers: list[str]  # ``provider`` first
    unit: str


def series_data(
    runs: pl.DataFrame,
    partition_id: str | None,
    metric: str,
    provider: str | None,
    gap: timedelta = SESSION_GAP,
) -> SeriesData:
    """The chart's rows (values scaled to a readable unit), points and providers."""
    data = frames.series_frame(runs, partition_id=partition_id, metric=metric, gap=gap)
    if data.height == 0:
        raise UsageError(
            f"no passed {metric} runs for partition {partition_id!r}",
            hint="pick a partition_id from the runs frame (runs['partition_id'].unique())",
        )
    order = frames.point_order(data)
    unit, scale = frames.display_unit(metric, data["median"].max())
    data = data.with_columns((pl.col(c) / scale) for c in ("median", "p20", "p80")).drop(
        "session_start", "version_rank"
    )
    providers = sorted(data["provider"].unique().to_list(), key=lambda p: (p != provider, p))
    return SeriesData(frames.chart_values(data), order, providers, unit)


def _tooltip(unit: str) -> list[dict[str, Any]]:
    """A point's tooltip: provider, version, the session's first run, the numbers."""
    return [
        channel("provider", "nominal"),
        channel("version", "nominal", title="version"),
        channel("session", "nominal", title="session (first run, UTC)"),
        channel("median", "quantitative", format=",.4g", title=f"median ({unit})"),
        channel("p20", "quantitative", format=",.4g"),
        channel("p80", "quantitative", format=",.4g"),
        channel("runs", "quantitative"),
    ]


def _if_subject(then: Any, otherwise: Any) -> dict[str, Any]:
    return condition("datum.role == 'subject'", then, otherwise)


def series_spec(
    runs: pl.DataFrame,
    *,
    partition_id: str | None = None,
    metric: str = "latency",
    step: tuple[str, str] | None = None,
    provider: str | None = None,
    title: str | None = None,
    gap: timedelta = SESSION_GAP,
) -> dict[str, Any]:
    """One partition across its sessions (see the module docstring) as Vega-Lite JSON.
    ``step=(from, to)`` shades the flagged step: session ids (a finding's
    ``from_session``, ``to_session``) or versions (:func:`kiana.report.frames.step_points`);
    ``provider`` is drawn first; ``gap`` is the judgement's session gap."""
    values, order, providers, unit = series_data(runs, partition_id, metric, provider, gap)
    x = channel(
        "point", "ordinal", axis={"labelAngle": -40, "labelExpr": _VERSION_LABEL},
        scale={"domain": order}, title="version (one point per session)",
    )  # fmt: skip
    subjects = {row["provider"] for row in values if row["role"] == "subject"}
    colors = provider_colors(providers, subjects)
    palette = {"domain": providers, "range": colors}
    shade = dict(zip(providers, colors, strict=True))
    values = [{**row, "shade": shade[row["provider"]]} for row in values]
    dashes = {"domain": providers, "range": provider_dashes(providers, subjects)}
    legend = {"symbolStrokeWidth": 2.5, "symbolType": "stroke"}
    color = channel("provider", "nominal", legend=legend, scale=palette, title="provider")
    dash = channel("provider", "nominal", legend=legend, scale=dashes, title="provider")
    data = {"values": values}
    band = {  # coloured from the data (no scale): the legend shows the lines alone
        "data": data,
        "mark": {"type": "area", "opacity": 0.15},
        "encoding": {
            "detail": channel("provider", "nominal"),
            "fill": channel("shade", "nominal", legend=None, scale=None),
            "x": x,
            "y": channel("p20", "quantitative"),
            "y2": {"field": "p80"},
        },
    }
    tooltip = _tooltip(unit)
    y = channel("median", "quantitative", scale={"zero": False}, title=f"median {metric} ({unit})")
    line = {
        "data": data,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "color": color,
            "strokeDash": dash,
            "strokeWidth": _if_subject(3, 1.5),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    layers: list[dict[str, Any]] = []
    points = frames.step_points(order, step) if step is not None else None
    if points is not None:
        marked = {"values": [{"from": points[0], "to": points[1]}]}
        layers.append({
            "data": marked,
            "mark": {"type": "rect", "color": "#cf222e", "opacity": 0.1},
            "encoding": {
                "x": channel("from", "ordinal", scale={"domain": order}),
                "x2": {"field": "to"},
            },
        })  # fmt: skip
        layers.append({
            "data": marked,
            "mark": {"type": "rule", "color": "#cf222e", "strokeDash": [4, 3]},
            "encoding": {"x": channel("to", "ordinal", scale={"domain": order})},
        })  # fmt: skip
    if not layers:  # data that every layer shares goes to the top, as Altair puts it
        del band["data"], line["data"]
        return layered([band, line], data=data, height=230, **titled(title), width=440)
    return layered([*layers, band, line], height=230, **titled(title), width=440)
