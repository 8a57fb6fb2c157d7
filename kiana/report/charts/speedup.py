"""The speedup heat map: the geometric-mean speedup of each Liger provider over each
same-run baseline (baseline median / Liger median, above 1 = Liger faster) per
kernel, pass and GPU; cells below 1× are red."""

from __future__ import annotations

from typing import Any

import polars as pl

from kiana.report import frames
from kiana.report.charts.heatmap import heat_map
from kiana.report.charts.spec import channel, condition


def speedup_spec(
    summary: pl.DataFrame, *, max_rows: int | None = None, filter_element: str | None = None
) -> dict[str, Any]:
    """The heat map of a ``frames.speedup_summary`` frame (every row, or its first
    ``max_rows`` by name) as Vega-Lite JSON, with a kernel select filtering its rows
    (placed under the CSS selector ``filter_element`` when given)."""
    data = summary.sort("row")
    rows = data["row"].unique(maintain_order=True).to_list()[:max_rows]
    data = data.filter(pl.col("row").is_in(rows))
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
    contrast = condition("datum.geomean < 0.5 || datum.geomean > 2.5", "white", "black")
    kernels = sorted({str(k) for k in data["kernel"].to_list()})
    return heat_map(
        frames.chart_values(data),
        rows,
        color=channel("geomean", "quantitative", legend=legend, scale=scale, title="speedup"),
        text={"color": contrast, "text": channel("label", "nominal")},
        tooltip=tooltip,
        step=22,
        column=150,
        columns=data["gpu"].n_unique(),
        kernels=kernels if len(kernels) > 1 else None,
        filter_element=filter_element,
    )
