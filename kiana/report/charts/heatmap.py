"""What the two heat maps share (speedup and overview): a row label per line, a GPU
per column, a coloured cell and its text label per pair.  They fit a 1,400 px window:
the legend sits on top, the columns share at most ``MAX_WIDTH`` pixels (GPU names cut
to the column without the vendor, whole in the tooltip); a ``filter`` (a kernel select) hides rows."""

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
    kernels: list[str] | None = None,
    filter_element: str | None = None,
) -> dict[str, Any]:
    """Cells coloured by ``color`` with ``text`` (the text layer's encoding) on top;
    ``rows`` in the order given, ``step`` pixels each; ``columns`` GPUs of ``column``
    pixels (less when they would pass :data:`MAX_WIDTH`).  With ``kernels``, a select
    ("every kernel" or one) filters the rows, drawn under the CSS selector
    ``filter_element`` when given (vega-embed's default place: under the chart)."""
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
    top: dict[str, Any] = {"data": {"values": values}, "height": {"step": step}, "width": width}
    if kernels:
        bind: dict[str, Any] = {
            "input": "select", "labels": ["every kernel", *kernels], "name": "kernel ",
            "options": ["", *kernels],
        }  # fmt: skip
        if filter_element:
            bind["element"] = filter_element
        top["params"] = [{"bind": bind, "name": "pick_kernel", "value": ""}]
        top["transform"] = [{"filter": "pick_kernel == '' || datum.kernel == pick_kernel"}]
    return layered([cells, labels], **top)
