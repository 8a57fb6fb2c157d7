"""Tables that fit the terminal, for ``kiana regressions`` and ``kiana partitions``.

The width is the terminal's (``COLUMNS`` first, then the terminal itself, through
:func:`shutil.get_terminal_size`; :data:`FALLBACK` columns when output goes to a pipe or
a file).  The rules, in order, so what identifies a row is never cut:

1. every cell is whole: a name, a session's date or a number is never shortened;
2. the row that fits on one line is printed on one line, its columns aligned;
3. otherwise its cells are packed onto as few lines as fit, whole cells each, the
   later lines indented (a cell wider than the terminal stands alone on its line);
4. free text (evidence, notes) is wrapped at spaces, never inside a word;
5. only text that identifies nothing (a commit subject) may be clipped, with ``…``.

``--wide`` (``width=None``) prints every row on one line, whatever its length.  Every
data string goes through :func:`kiana.safe.terminal` before it is measured: a name
with a newline or a workflow command is one inert line.

>>> fit(["verdict", "kernel/pass"], [["regression", "rms_norm/forward"]], width=40)
['verdict    kernel/pass', 'regression rms_norm/forward']
>>> pack(["regression", "fused_linear_cross_entropy/forward", "+3.1%"], width=30)
['regression', '  fused_linear_cross_entropy/forward', '  +3.1%']
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

from kiana.safe import terminal

#: Columns assumed when the output is not a terminal and ``COLUMNS`` is not set.
FALLBACK = 120
INDENT = "  "


def terminal_width(wide: bool = False) -> int | None:
    """The columns to fit (None with ``--wide``: no limit)."""
    if wide:
        return None
    return max(20, shutil.get_terminal_size((FALLBACK, 24)).columns)


def cells(values: Sequence[object]) -> list[str]:
    """Data values as inert one-line strings (:func:`kiana.safe.terminal`)."""
    return [terminal("" if v is None else v) for v in values]


def widths(rows: Sequence[Sequence[str]]) -> list[int]:
    """The widest cell of each column."""
    return [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []


def line(row: Sequence[str], sizes: Sequence[int], right: Sequence[bool] = ()) -> str:
    """One row, each cell padded to its column (right-aligned where ``right`` says)."""
    padded = [
        cell.rjust(size) if i < len(right) and right[i] else cell.ljust(size)
        for i, (cell, size) in enumerate(zip(row, sizes, strict=True))
    ]
    return " ".join(padded).rstrip()


def fits(sizes: Sequence[int], width: int | None) -> bool:
    """Whether columns of ``sizes`` (one space apart) fit ``width``."""
    return width is None or sum(sizes) + max(0, len(sizes) - 1) <= width


def fit(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    width: int | None,
    right: Sequence[bool] = (),
) -> list[str] | None:
    """The header and rows as aligned one-line rows, or None when they do not fit."""
    sizes = widths([list(header), *rows])
    if not fits(sizes, width):
        return None
    return [line(header, sizes, right), *(line(row, sizes, right) for row in rows)]


def pack(
    row: Sequence[str], *, width: int | None, indent: str = INDENT, first: str = ""
) -> list[str]:
    """Whole cells, one space apart, onto as few lines as fit ``width``: the first line
    starts with ``first``, the others with ``indent``.  A cell wider than the line
    stands alone."""
    if width is None:
        return [first + " ".join(c for c in row if c)]
    lines: list[str] = []
    current = ""
    for cell in (c for c in row if c):
        candidate = f"{current} {cell}" if current else first + cell
        if current and len(candidate) > width:
            lines.append(current)
            current = f"{indent}{cell}"
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


def wrap(
    text: str, *, width: int | None, indent: str = INDENT, first: str | None = None
) -> list[str]:
    """Free text wrapped at spaces (never inside a word): the first line starts with
    ``first`` (default ``indent``), the others with ``indent``."""
    first = indent if first is None else first
    if width is None:
        return [f"{first}{text}"]
    return textwrap.wrap(
        text,
        width=max(len(indent) + 10, width),
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def clip(text: str, width: int | None) -> str:
    """``text`` cut to ``width`` with ``…`` (only for text that identifies nothing)."""
    if width is None or len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…"
