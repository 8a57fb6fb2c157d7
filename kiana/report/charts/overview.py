"""The overview heat map: per kernel · pass · provider and GPU, the change that moved
most (of findings or steps), red for slower and green for faster: a release at a
glance."""

from __future__ import annotations

from typing import Any

import polars as pl

from kiana.report import frames
from kiana.report.charts.heatmap import heat_map
from kiana.report.charts.spec import channel


def overview_spec(frame: pl.DataFrame, *, value: str = "change") -> dict[str, Any]:
    """The heat map of findings or steps (``change``: control-adjusted, as the verdict) as Vega-Lite
    JSON."""
    data = frames.overview_frame(frame, value=value)
    tooltip = [
        channel("row", "nominal", title="kernel · pass · provider"),
        channel("gpu", "nominal"),
        channel("change", "quantitative", format="+.1%"),
        channel("verdict", "nominal"),
    ]
    scale = {"clamp": True, "domain": [-0.3, 0.3], "reverse": True, "scheme": "redyellowgreen"}
    return heat_map(
        frames.chart_values(data),
        data["row"].unique(maintain_order=True).to_list(),
        color=channel(
            "change", "quantitative", legend={"format": "+%"}, scale=scale, title="change"
        ),
        text={"text": channel("label", "nominal")},
        tooltip=tooltip,
        step=20,
        column=160,
        columns=data["gpu"].n_unique(),
    )
