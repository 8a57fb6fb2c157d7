"""What every chart spec shares: colours, the role labels, and the small builders of
Vega-Lite JSON as plain dicts (no Altair: building through Altair validates every
call against the schema, some 0.15 s a chart, and the page draws dozens).

Keys are written in the order Altair writes them, so ``kiana.charts`` (Altair charts
made with ``from_dict`` on these very specs) gives back the same JSON.  Every string
in a spec is made visible (:func:`visible_strings`): direction overrides and invisible
characters become ``[U+XXXX]`` marks, the same way in data, domains and titles.
"""

from __future__ import annotations

from typing import Any

from kiana.report.frames import visible
from kiana.vocabulary import VERDICTS

_COLORS = {
    "regression": "#cf222e",
    "improvement": "#1a7f37",
    "drift": "#bf8700",
    "inconclusive": "#8c959f",
    "unchanged": "#d0d7de",
}
#: One colour per verdict, in :data:`kiana.vocabulary.VERDICTS` order (the legend's).
VERDICT_COLORS: dict[str, str] = {v: _COLORS[v] for v in VERDICTS}

#: Altair's default ``config`` (its theme), part of every ``to_dict()``.
CONFIG: dict[str, Any] = {"view": {"continuousWidth": 300, "continuousHeight": 300}}


def layered(layer: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    """A layered chart with its top-level properties (``data``, ``height``, ``title``,
    ``width``), made visible (fresh objects: nothing is shared between specs)."""
    spec: dict[str, Any] = {"config": CONFIG, "layer": layer, **top}
    made: dict[str, Any] = visible_strings(spec)
    return made


def channel(name: str, kind: str, **props: Any) -> dict[str, Any]:
    """An encoding channel of field ``name`` (``kind``: nominal, ordinal, quantitative)
    with ``props`` (axis, format, scale, sort, title), keys sorted as Altair sorts them."""
    spec = {"field": name, "type": kind, **props}
    return {k: spec[k] for k in sorted(spec)}


def condition(test: str, then: Any, otherwise: Any) -> dict[str, Any]:
    """A value channel: ``then`` where the Vega expression ``test`` holds."""
    return {"condition": {"test": test, "value": then}, "value": otherwise}


def titled(title: str | None) -> dict[str, str]:
    """``{"title": ...}`` when there is a title, made visible."""
    return {"title": visible(title)} if title else {}


def pick(
    field: str, values: list[str], *, every: str, element: str | None = None
) -> tuple[dict[str, Any], str]:
    """A drop-down that keeps the rows of one ``field`` value (``every``: all of them),
    drawn under the CSS selector ``element`` when given (vega-embed's default place:
    under the chart): its Vega-Lite parameter and the filter expression that applies it."""
    name = f"pick_{field}"
    bind: dict[str, Any] = {
        "input": "select", "labels": [every, *values], "name": f"{field} ",
        "options": ["", *values],
    }  # fmt: skip
    if element:
        bind["element"] = element
    return {"bind": bind, "name": name, "value": ""}, f"{name} == '' || datum.{field} == {name}"


def visible_strings(value: Any) -> Any:
    """A copy of a JSON value whose every string went through ``frames.visible``."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: visible_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [visible_strings(v) for v in value]
    return value
