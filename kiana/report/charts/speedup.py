"""The speedup map: how much faster each provider under test (role ``subject``: Liger's
``liger``, ``liger_*``) is than each same-run baseline, as a dot chart with one row per
kernel · pass · GPU where both were measured (nothing else: no empty rows or columns,
however sparse the history).

Each mark is one provider under test against one baseline (``frames.speedup_summary``):
a dot at the geometric mean over the workload sweep of baseline median / its median,
and a line from the slowest to the fastest workload, on a log axis with the 1× line
drawn and the side where it is slower shaded red.  A line that reaches into the red
band is a kernel that loses on some workloads (the page lists them).  Colour is the
baseline (its colour in every chart, :mod:`.colors`), shape the provider under test.
The texts name the harness ("Liger provider") when the data is one harness's.
The marks of one row sit one above the other, so none hides another."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from kiana.harness import display_name
from kiana.report import frames
from kiana.report.charts.colors import provider_colors
from kiana.report.charts.spec import channel, layered, pick

#: Pixels per row, per mark of a row at most, and of the speedup axis.
STEP = 20
SPACING = 5
WIDTH = 560
LABEL_WIDTH = 420
#: Shapes of the providers under test, the first by name (``liger``) a circle; then a hexagon and
#: a pentagon (SVG paths), every one of them solid and as large as a circle.
SHAPES = ("circle", "square", "diamond", "triangle-up", "cross", "triangle-down",
          "triangle-right", "triangle-left",
          "M0,-1L0.87,-0.5L0.87,0.5L0,1L-0.87,0.5L-0.87,-0.5Z",
          "M0,-1L0.95,-0.31L0.59,0.81L-0.59,0.81L-0.95,-0.31Z")  # fmt: skip
#: The speedup axis never spans more than 1/128× .. 512× (beyond: drawn at the edge).
_LOWEST, _HIGHEST = -7, 9
_RED = "#cf222e"


def _domain(data: pl.DataFrame) -> list[float]:
    """Powers of two around every mark, 1/2× .. 2× at least."""
    low = min(0.5, float(data["worst"].min() or 1))  # type: ignore[arg-type]
    high = max(2.0, float(data["best"].max() or 1))  # type: ignore[arg-type]
    low_exp = max(_LOWEST, math.floor(math.log2(low)))
    high_exp = min(_HIGHEST, math.ceil(math.log2(high)))
    return [2.0**low_exp, 2.0**high_exp]


def _ticks(domain: list[float]) -> list[float]:
    exps = range(round(math.log2(domain[0])), round(math.log2(domain[1])) + 1)
    every = 1 if len(exps) <= 9 else 2
    return [2.0**e for e in exps if e % every == 0]


def _offsets(data: pl.DataFrame) -> pl.DataFrame:
    """Each mark's vertical place in its row (pixels from the row's top): the row's
    marks centred, ``SPACING`` apart (closer when a row has many)."""
    most = int(data["slots"].max() or 1)  # type: ignore[arg-type]
    spacing = min(SPACING, (STEP - 6) / max(1, most - 1))
    middle = (pl.col("slots") - 1) / 2
    return data.with_columns((STEP / 2 + (pl.col("slot") - middle) * spacing).alias("offset"))


def _tooltip(who: str) -> list[dict[str, Any]]:
    return [
        channel("kernel", "nominal"),
        channel("pass", "nominal"),
        channel("gpu", "nominal", title="GPU"),
        channel("pair", "nominal", title=f"{who} provider vs baseline"),
        channel("geomean", "quantitative", format=".2f", title="speedup (geometric mean)"),
        channel("worst", "quantitative", format=".2f", title="slowest workload"),
        channel("best", "quantitative", format=".2f", title="fastest workload"),
        channel("below_1x", "quantitative", title=f"workloads where {who} is slower"),
        channel("workloads", "quantitative"),
        channel("version", "nominal", title="version"),
    ]


def _keys(data: pl.DataFrame, who: str) -> dict[str, dict[str, Any]]:
    """The marks' row, place in the row, colour (the baseline) and shape (the provider
    under test) channels."""
    guide = {"grid": True, "gridColor": "#d0d7de", "gridDash": [1, 3], "labelLimit": LABEL_WIDTH}
    baselines = sorted({str(b) for b in data["baseline"].to_list()})
    subjects = sorted({str(p) for p in data["provider"].to_list()})
    legend = {"labelLimit": 0, "orient": "right", "symbolOpacity": 1}
    return {
        "y": channel(
            "row", "nominal", axis=guide, scale={"padding": 0},
            sort={"field": "order", "op": "min"}, title=None,
        ),
        "yOffset": channel("offset", "quantitative", scale=None),
        "color": channel(
            "baseline", "nominal", legend=legend, title="baseline (colour)",
            scale={"domain": baselines, "range": provider_colors(baselines)},
        ),
        "shape": channel(
            "provider", "nominal", legend=legend, title=f"{who} provider (shape)",
            scale={"domain": subjects, "range": [SHAPES[i % len(SHAPES)] for i in range(len(subjects))]},
        ),
    }  # fmt: skip


def _guides(domain: list[float]) -> list[dict[str, Any]]:
    """The red band where the code under test is slower (below 1×) and the dashed 1× line."""
    scale = {"clamp": True, "domain": domain, "nice": False, "type": "log"}
    slower = {
        "data": {"values": [{"from": domain[0], "to": 1.0}]},
        "mark": {"type": "rect", "color": _RED, "opacity": 0.07},
        "encoding": {"x": channel("from", "quantitative", scale=scale), "x2": {"field": "to"}},
    }
    even = {
        "data": {"values": [{"at": 1.0}]},
        "mark": {"type": "rule", "color": _RED, "strokeDash": [4, 3]},
        "encoding": {"x": channel("at", "quantitative", scale=scale)},
    }
    return [slower, even]


def speedup_spec(
    summary: pl.DataFrame,
    *,
    max_rows: int | None = None,
    filter_element: str | None = None,
) -> dict[str, Any]:
    """The dot chart of a ``frames.speedup_summary`` frame (see the module docstring) as
    Vega-Lite JSON: every row with data (or the first ``max_rows``), with a kernel and a
    GPU select filtering them when there is more than one of either (placed under the
    CSS selector ``filter_element`` when given).  Its texts name the harness of the
    marks (:func:`kiana.harness.display_name`: "Liger provider") when they are one
    harness's, the neutral "subject" otherwise."""
    harnesses = summary["harness"].unique().to_list() if "harness" in summary.columns else []
    who = display_name(harnesses) or "subject"
    rows = frames.speedup_rows(summary)[:max_rows]
    # the rows' order as a field (a sort list of thousands of rows overflows Vega's parser)
    order = pl.DataFrame(
        {"row": rows, "order": list(range(len(rows)))}, schema_overrides={"row": pl.String}
    )
    data = _offsets(summary.join(order, on="row").sort("order", "slot"))
    domain = _domain(data) if data.height else [0.5, 2.0]
    axis = {
        "grid": True, "labelExpr": "format(datum.value, '~g') + '×'", "orient": "top",
        "values": _ticks(domain),
    }  # fmt: skip
    x_title = f"baseline median / {who} median (log scale): right of 1× {who} is faster"
    x_scale = {"clamp": True, "domain": domain, "nice": False, "type": "log"}
    keys, tooltip = _keys(data, who), _tooltip(who)
    picks = [
        pick(field, values, every=f"every {field}", element=filter_element)
        for field, values in (
            ("kernel", sorted({str(k) for k in data["kernel"].to_list()})),
            ("gpu", sorted({str(g) for g in data["gpu"].to_list()})),
        )
        if len(values) > 1
    ]
    filters = {"transform": [{"filter": test} for _, test in picks]} if picks else {}
    spans = {
        "mark": {"type": "rule", "opacity": 0.6, "strokeWidth": 2},
        "encoding": {
            "color": keys["color"], "tooltip": tooltip, "x": channel("worst", "quantitative"),
            "x2": {"field": "best"}, "y": keys["y"], "yOffset": keys["yOffset"],
        },
        **filters,
    }  # fmt: skip
    dots = {
        "mark": {"type": "point", "filled": True, "opacity": 1, "size": 60},
        "encoding": {
            **keys, "tooltip": tooltip,
            "x": channel("geomean", "quantitative", axis=axis, scale=x_scale, title=x_title),
        },
        **filters,
    }  # fmt: skip
    top: dict[str, Any] = {
        "data": {"values": frames.chart_values(data)}, "height": {"step": STEP}, "width": WIDTH,
    }  # fmt: skip
    if picks:
        top["params"] = [param for param, _ in picks]
    return layered([*_guides(domain), spans, dots], **top)
