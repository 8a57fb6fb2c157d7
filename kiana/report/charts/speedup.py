"""The speedup heat map: the geometric-mean speedup of each Liger provider over each
same-run baseline (baseline median / Liger median, above 1 = Liger faster) per
kernel, pass and GPU; cells below 1× are red."""

from __future__ import annotations

from typing import Any

import polars as pl

from kiana.report import frames
from kiana.report.charts.spec import channel, condition, layered


def speedup_spec(summary: pl.DataFrame, *, max_rows: int = 150) -> dict[str, Any]:
    """The heat map of a ``frames.speedup_summary`` frame (its first ``max_rows`` rows,
    by name) as Vega-Lite JSON."""
    data = summary.sort("row")
    rows = data["row"].unique(maintain_order=True).to_list()[:max_rows]
    data = data.filter(pl.col("row").is_in(rows))
    gpus = max(1, data["gpu"].n_unique())
    x = channel(
        "gpu", "nominal", axis={"labelAngle": 0, "labelLimit": 200, "orient": "top"}, title=None
    )
    y = channel("row", "nominal", axis={"labelLimit": 420}, sort=rows, title=None)
    tooltip = [
        channel("row", "nominal", title="kernel · pass · Liger vs baseline"),
        channel("gpu", "nominal"),
        channel("geomean", "quantitative", format=".2f", title="geomean speedup"),
        channel("worst", "quantitative", format=".2f", title="worst workload"),
        channel("below_1x", "quantitative", title="workloads below 1x"),
        channel("workloads", "quantitative"),
        channel("liger_version", "nominal", title="version"),
    ]
    scale = {"clamp": True, "domain": [0.5, 2], "domainMid": 1, "scheme": "redblue", "type": "log"}
    legend = {"format": ".2~f", "values": [0.5, 0.75, 1, 1.5, 2]}
    cells = {
        "mark": {"type": "rect", "stroke": "white"},
        "encoding": {
            "color": channel(
                "geomean", "quantitative", legend=legend, scale=scale, title="speedup"
            ),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    text = {
        "mark": {"type": "text", "fontSize": 11},
        "encoding": {
            "color": condition("datum.geomean < 0.5 || datum.geomean > 2.5", "white", "black"),
            "text": channel("label", "nominal"),
            "tooltip": tooltip,
            "x": x,
            "y": y,
        },
    }
    values = frames.chart_values(data)
    return layered(
        [cells, text], data={"values": values}, height={"step": 22}, width=min(1000, 190 * gpus)
    )
