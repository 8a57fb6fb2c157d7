"""Small HTML components of the report, each escaping what it is given.

Every string that comes from a document (kernel, provider, GPU, version, title, a
reject's reason...) is untrusted.  The rule here is simple: a component escapes every
value it receives, unless the value is an :class:`Html` (markup this module or the
page built itself).  :class:`Html` is not a ``str``: a plain string can never pass for
markup, and ``Html + str`` is an error (:func:`join` escapes the str).
Bidirectional-override and other invisible control characters are shown as visible
``[U+202E]`` marks, so a name cannot reorder the text around it.

JSON for ``<script type="application/json">`` blocks goes through :func:`json_script`,
which escapes ``<``, ``>``, ``&`` and U+2028/U+2029 so no string can end the block.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kiana.vocabulary import VERDICTS

if TYPE_CHECKING:
    import polars as pl

Align = Literal["left", "right"]

#: Characters shown as visible marks: bidi controls, zero-width joiners, C0/C1 controls.
_INVISIBLE = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"
    "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
)
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_JSON_UNSAFE = re.compile("[<>&\u2028\u2029]")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class Html:
    """Markup built by kiana itself: components insert it without escaping.

    A wrapper, not a ``str`` subclass, so that only what is wrapped on purpose is
    trusted; ``str(html)`` (or an f-string) gives the markup back."""

    markup: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.markup, str) or isinstance(self.markup, Html):
            raise TypeError(f"Html wraps a str, not {type(self.markup).__name__}")

    def __str__(self) -> str:
        return self.markup

    def __add__(self, other: Html) -> Html:
        if not isinstance(other, Html):
            return NotImplemented
        return Html(self.markup + other.markup)

    def __bool__(self) -> bool:
        return bool(self.markup)

    def __contains__(self, text: str) -> bool:
        return text in self.markup


def join(*parts: object) -> Html:
    """The parts one after another: :class:`Html` as it is, anything else escaped."""
    return Html("".join(esc(p).markup for p in parts))


def visible(text: str) -> str:
    """Replace invisible and direction-changing characters by ``[U+XXXX]`` marks."""
    return _INVISIBLE.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def esc(value: object) -> Html:
    """HTML-escape any value for text or a quoted attribute (``None`` -> empty)."""
    if isinstance(value, Html):
        return value
    if value is None:
        return Html("")
    return Html(html.escape(visible(str(value)), quote=True))


def safe_id(text: str) -> str:
    """An element id made only of ``[A-Za-z0-9_-]`` (callers pass kiana's own names)."""
    return _ID_UNSAFE.sub("-", text)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """JSON safe to place inside any ``<script>`` element (NaN/inf become null)."""
    text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _JSON_UNSAFE.sub(lambda m: _JSON_ESCAPES[m.group()], text)


def json_script(value: Any, **attributes: str) -> Html:
    """``<script type="application/json" ...>`` holding ``value``; attribute names use
    ``_`` for ``-`` (``data_chart="c1"`` -> ``data-chart="c1"``)."""
    attrs = "".join(f' {k.replace("_", "-")}="{esc(v)}"' for k, v in attributes.items())
    return Html(f'<script type="application/json"{attrs}>{json_text(value)}</script>')


def fmt_number(value: float | int | None, digits: int = 3) -> str:
    """Compact number: ``12345`` -> ``12,345``, ``0.01234`` -> ``0.0123``."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int) or (float(value).is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    return f"{value:,.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"


def fmt_change(value: float | None) -> str:
    """Relative change as a signed percentage: ``0.123`` -> ``+12.3%``."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:+.1f}%"


def fmt_ratio(value: float | None) -> str:
    """A speedup factor: ``1.834`` -> ``1.83×``."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.2f}×"


def badge(verdict: str | None) -> Html:
    """A coloured verdict label; unknown verdicts get the neutral style."""
    cls = verdict if verdict in VERDICTS else "other"
    return Html(f'<span class="badge {cls}">{esc(verdict)}</span>')


def stat_cards(items: Iterable[tuple[str, object]]) -> Html:
    """The summary's row of ``label: number`` cards."""
    cards = "".join(
        f'<div class="card"><div class="num">'
        f"{esc(fmt_number(v) if isinstance(v, int | float) else v)}</div>"
        f'<div class="label">{esc(k)}</div></div>'
        for k, v in items
    )
    return Html(f'<div class="cards">{cards}</div>')


@dataclass(frozen=True)
class Cell:
    """A table cell: shown ``text`` (escaped unless Html), an optional sort key, and
    the value its column's filter sees (``key``, when the text is markup)."""

    text: object
    sort: float | str | None = None
    key: str | None = None


@dataclass(frozen=True)
class Column:
    title: str
    align: Align = "left"
    key: str | None = None  # row attribute data-<key> used by the filters


@dataclass(frozen=True)
class Row:
    """A table row whose ``<tr>`` carries ``data`` as ``data-<name>`` attributes besides
    its columns' keys (what a filter reads without a column of its own)."""

    cells: Sequence[object]
    data: Mapping[str, str]


def table(
    columns: Sequence[Column],
    rows: Iterable[Sequence[object] | Row],
    *,
    id: str | None = None,
    sortable: bool = False,
    empty: str = "nothing to show",
    none: str | None = None,
) -> Html:
    """A table; cells are values or :class:`Cell`; filter keys (and a :class:`Row`'s
    ``data``) become ``data-*``; ``none``: what the table says when its filters hide
    every row (a footer row the page's script shows then)."""
    head = "".join(
        f'<th class="{c.align}"' + (' tabindex="0"' if sortable else "") + f">{esc(c.title)}</th>"
        for c in columns
    )
    body: list[str] = []
    for row in rows:
        extra = row.data if isinstance(row, Row) else {}
        cells_of = row.cells if isinstance(row, Row) else row
        attrs = "".join(
            f' data-{c.key}="{esc(_text(v))}"'
            for c, v in zip(columns, cells_of, strict=True)
            if c.key
        ) + "".join(f' data-{safe_id(k)}="{esc(v)}"' for k, v in extra.items())
        cells = "".join(_td(c, v) for c, v in zip(columns, cells_of, strict=True))
        body.append(f"<tr{attrs}>{cells}</tr>")
    if not body:
        body.append(f'<tr class="empty"><td colspan="{len(columns)}">{esc(empty)}</td></tr>')
    id_attr = f' id="{safe_id(id)}"' if id else ""
    cls = "data sortable" if sortable else "data"
    foot = (
        f'<tfoot><tr class="empty none" hidden><td colspan="{len(columns)}">{esc(none)}'
        "</td></tr></tfoot>"
        if none
        else ""
    )
    return Html(
        f'<table{id_attr} class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody>{foot}</table>"
    )


def _text(value: object) -> object:
    if isinstance(value, Cell):
        return value.key if value.key is not None else value.text
    return value


def _td(column: Column, value: object) -> str:
    sort = ""
    if isinstance(value, Cell):
        if value.sort is not None:
            sort = f' data-sort="{esc(value.sort)}"'
        value = value.text
    shown = value if isinstance(value, Html) else esc(_plain(value))
    return f'<td class="{column.align}"{sort}>{shown}</td>'


def _plain(value: object) -> object:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return fmt_number(value)
    return value


def filter_bar(
    table_id: str,
    filters: Mapping[str, Sequence[str]],
    *,
    preset: Mapping[str, tuple[str, str]] | None = None,
    of: str | None = "",
) -> Html:
    """Drop-down filters (``data-<key>`` of the rows) and a text box for one table;
    ``preset={"verdict": ("listed", "as kiana regressions")}`` adds a first option to
    that filter, selected, that shows the rows whose ``data-listed`` is ``yes``;
    ``of`` follows the "showing N of M" count (what the M rows are; None: no count
    here, the page places :func:`counter` itself)."""
    tid = safe_id(table_id)
    parts = []
    for key, values in filters.items():
        options = ""
        if preset and key in preset:
            attribute, label = preset[key]
            options += f'<option value="@{safe_id(attribute)}" selected>{esc(label)}</option>'
        options += '<option value="">all</option>'
        options += "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
        parts.append(
            f'<label>{esc(key)} <select data-filter="{safe_id(key)}" data-table="{tid}">'
            f"{options}</select></label>"
        )
    parts.append(
        f'<label>search <input type="search" data-search="{tid}" placeholder="any text"></label>'
    )
    if of is not None:
        parts.append(counter(table_id, of).markup)
    return Html(f'<div class="filters">{"".join(parts)}</div>')


def counter(table_id: str, of: str = "") -> Html:
    """The "showing N of M" of a table, filled in by the page's script; ``of`` follows
    it (what the M rows are)."""
    return Html(f'<span class="count" data-count="{safe_id(table_id)}" data-of="{esc(of)}"></span>')


def section(id: str, title: str, body: object, intro: str | None = None) -> Html:
    """A titled section; ``body`` is :class:`Html` or escaped, ``intro`` is plain text
    explaining how to read it."""
    lead = f'<p class="intro">{esc(intro)}</p>' if intro else ""
    return Html(f'<section id="{safe_id(id)}"><h2>{esc(title)}</h2>{lead}{esc(body)}</section>')


def note(text: str) -> Html:
    """A short remark, escaped."""
    return Html(f'<p class="note">{esc(text)}</p>')


def definition_list(items: Iterable[tuple[str, object]]) -> Html:
    """``<dl>`` of escaped terms and values."""
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    return Html(f"<dl>{rows}</dl>")


def capped(
    frame: pl.DataFrame, limit: int, what: str, *, total: int | None = None
) -> tuple[pl.DataFrame, Html]:
    """The first ``limit`` rows of ``frame``, and a note saying how many more there are
    (of ``total``: the rows of which ``frame`` holds the first, by default its own)."""
    total = frame.height if total is None else total
    if total <= limit:
        return frame.head(limit), Html("")
    return frame.head(limit), note(
        f"This table holds the first {limit:,} of {total:,} {what}, most important "
        f"first: kiana report --rows {limit} caps every table (--rows N for more); "
        "kiana regressions --json lists them all."
    )


def number(value: Any) -> float | None:
    """A finite float, or None."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def change_cell(value: Any, verdict: Any = None) -> Cell:
    """A relative change, red for a regression and green for an improvement."""
    found = number(value)
    cls = {"regression": "bad", "improvement": "good"}.get(str(verdict), "")
    text = Html(f'<span class="{cls}">{esc(fmt_change(found))}</span>')
    return Cell(text, sort=found if found is not None else "")


def percent_cell(value: Any) -> Cell:
    """A share (0.25) as ``25.0%``, sorted by its value."""
    found = number(value)
    return Cell("–" if found is None else f"{found * 100:.1f}%", sort=found or 0.0)
