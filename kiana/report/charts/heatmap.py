"""The heat map of the overview chart: a row label per line, a GPU per column, a
coloured cell and its text label per pair.  It fits a 1,400 px window: the legend sits
on top, the columns share at most ``MAX_WIDTH`` pixels (GPU names cut to the column
without the vendor, whole in the tooltip)."""

from __future__ import annotations

from typing import Any

from kiana.report.charts.spec import channel, layered

#: Pixels the cells may take together, and a row label at most.
MAX_WIDTH = 900
LABEL_WIDTH = 340
#: A GPU column's label without its vendor ("NVIDIA A100 SXM4-80GB" -> "A100 SXM4-80GB").
_SHORT_GPU = "replace(datum.label, regexp('^(NVIDIA|AMD) '), '')"


def heat_map(
    values: list[dict[str, Any]],
    rows: list[str],
    *,
    color: dict[str, Any],
    text: dict[str, Any],
    tooltip: list[dict[str, Any]],
    step: int,
    column: int,
    columns: int,
) -> dict[str, Any]:
    """Cells coloured by ``color`` with ``text`` (the text layer's encoding) on top;
    ``rows`` in the order given, ``step`` pixels each; ``columns`` GPUs of ``column``
    pixels (less when they would pass :data:`MAX_WIDTH`)."""
    width = min(MAX_WIDTH, column * max(1, columns))
    axis = {
        "labelAngle": 0,
        "labelExpr": _SHORT_GPU,
        "labelLimit": max(60, width // max(1, columns) - 8),
        "orient": "top",
    }
    x = channel("gpu", "nominal", axis=axis, title=None)
    y = channel("row", "nominal", axis={"labelLimit": LABEL_WIDTH}, sort=rows, title=None)
    color = {**color, "legend": {**color.get("legend", {}), "orient": "top"}}
    cells = {
        "mark": {"type": "rect", "stroke": "white"},
        "encoding": {"color": color, "tooltip": tooltip, "x": x, "y": y},
    }
    labels = {
        "mark": {"type": "text", "fontSize": 11},
        "encoding": {**text, "tooltip": tooltip, "x": x, "y": y},
    }
    top = {"data": {"values": values}, "height": {"step": step}, "width": width}
    return layered([cells, labels], **top)
