"""The sweep chart: the change of one finding's step at each workload of its sweep, a
bar per workload coloured by verdict, the same-run control's change as a black tick,
and the threshold as dashed rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from kiana.errors import UsageError
from kiana.report import frames
from kiana.report.charts.spec import VERDICT_COLORS, channel, layered, titled


def sweep_data(
    steps: pl.DataFrame, finding: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The finding's steps as chart rows, and its workloads in natural order."""
    data = frames.sweep_frame(steps, finding)
    if data.height == 0:
        raise UsageError(
            "no steps match this finding",
            hint="pass a row of judge(...).findings (row(i, named=True)) and the same result's steps",
        )
    return frames.chart_values(data), frames.natural_order(data["workload"].to_list())


def _rules(threshold: float | None) -> list[dict[str, float]]:
    rules: list[dict[str, float]] = [{"y": 0.0}]
    if threshold:
        rules += [{"y": threshold}, {"y": -threshold}]
    return rules


def sweep_spec(
    steps: pl.DataFrame,
    finding: Mapping[str, Any],
    *,
    threshold: float | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """One finding across its sweep (see the module docstring) as Vega-Lite JSON."""
    values, order = sweep_data(steps, finding)
    x = channel(
        "workload",
        "nominal",
        axis={"labelAngle": -40, "labelLimit": 0},
        sort=order,
        title="workload",
    )
    tooltip = [
        channel("workload", "nominal"),
        channel("change", "quantitative", format="+.1%"),
        channel("control_change", "quantitative", format="+.1%", title="control change"),
        channel("adjusted_change", "quantitative", format="+.1%", title="adjusted change"),
        channel("control_provider", "nominal", title="control"),
        channel("verdict", "nominal"),
        channel("noise_source", "nominal", title="noise from"),
    ]
    data = {"values": values}
    verdicts = {"domain": list(VERDICT_COLORS), "range": list(VERDICT_COLORS.values())}
    bars = {
        "data": data,
        "mark": {"type": "bar"},
        "encoding": {
            "color": channel("verdict", "nominal", scale=verdicts, title="verdict"),
            "tooltip": tooltip,
            "x": x,
            "y": channel(
                "change", "quantitative", axis={"format": "+%"}, title=_change_title(finding)
            ),
        },
    }
    ticks = {
        "data": data,
        "mark": {"type": "tick", "color": "black", "size": 14, "thickness": 2},
        "encoding": {"tooltip": tooltip, "x": x, "y": channel("control_change", "quantitative")},
    }
    rule = {
        "data": {"values": _rules(threshold)},
        "mark": {"type": "rule", "color": "#59636e", "strokeDash": [3, 3]},
        "encoding": {"y": channel("y", "quantitative")},
    }
    return layered(
        [bars, ticks, rule], height=230, **titled(title), width=max(220, 34 * len(order))
    )


def _change_title(finding: Mapping[str, Any]) -> str:
    """The y axis: what a positive change means for the finding's metric."""
    worse = "more memory" if finding.get("metric") == "memory" else "slower"
    return f"change (+ = {worse})"
