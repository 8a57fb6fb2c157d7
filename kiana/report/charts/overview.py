"""The overview heat map: per kernel · pass · provider and GPU, the change that moved
most (of findings or steps), red for slower and green for faster: a release at a
glance."""

from __future__ import annotations

from typing import Any

import polars as pl

from kiana.report import frames
from kiana.report.charts.spec import channel, layered


def overview_spec(frame: pl.DataFrame, *, value: str = "median_change") -> dict[str, Any]:
    """The heat map of findings (``median_change``) or steps (``change``) as Vega-Lite
    JSON."""
    data = frames.overview_frame(frame, value=value)
    rows = data["row"].unique(maintain_order=True).to_list()
    gpus = max(1, data["gpu"].n_unique())
    x = channel(
        "gpu", "nominal", axis={"labelAngle": 0, "labelLimit": 200, "orient": "top"}, title=None
    )
    y = channel("row", "nominal", axis={"labelLimit": 420}, sort=rows, title=None)
    tooltip = [
        channel("row", "nominal", title="kernel · pass · provider"),
        channel("gpu", "nominal"),
        channel("change", "quantitative", format="+.1%"),
        channel("verdict", "nominal"),
    ]
    scale = {"clamp": True, "domain": [-0.3, 0.3], "reverse": True, "scheme": "redyellowgreen"}
    cells = {
        "mark": {"type": "rect", "stroke": "white"},
        "encoding": {
            "color": channel(
                "change", "quantitative", legend={"format": "+%"}, scale=scale, title="change"
            ),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    text = {
        "mark": {"type": "text", "fontSize": 11},
        "encoding": {"text": channel("label", "nominal"), "tooltip": tooltip, "x": x, "y": y},
    }
    values = frames.chart_values(data)
    return layered(
        [cells, text], data={"values": values}, height={"step": 20}, width=min(900, 160 * gpus)
    )
