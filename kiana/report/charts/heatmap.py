"""What the two heat maps share (speedup and overview): a row label per line, a GPU
per column, a coloured cell and its text label per pair."""

from __future__ import annotations

from typing import Any

from kiana.report.charts.spec import channel, layered


def heat_map(
    values: list[dict[str, Any]],
    rows: list[str],
    *,
    color: dict[str, Any],
    text: dict[str, Any],
    tooltip: list[dict[str, Any]],
    step: int,
    width: int,
) -> dict[str, Any]:
    """Cells coloured by ``color`` with ``text`` (the text layer's encoding) on top;
    ``rows`` in the order given, ``step`` pixels each."""
    x = channel(
        "gpu", "nominal", axis={"labelAngle": 0, "labelLimit": 200, "orient": "top"}, title=None
    )
    y = channel("row", "nominal", axis={"labelLimit": 420}, sort=rows, title=None)
    cells = {
        "mark": {"type": "rect", "stroke": "white"},
        "encoding": {"color": color, "tooltip": tooltip, "x": x, "y": y},
    }
    labels = {
        "mark": {"type": "text", "fontSize": 11},
        "encoding": {**text, "tooltip": tooltip, "x": x, "y": y},
    }
    return layered([cells, labels], data={"values": values}, height={"step": step}, width=width)
