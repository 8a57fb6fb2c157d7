"""Streaming JSON for result frames: ``{"name": [row objects], ...}`` written chunk by
chunk, exactly as ``json.dumps`` of the rows would be, without holding every row as
Python objects.  Datetime columns are written as ISO 8601 UTC strings."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any, TextIO

import polars as pl

#: The text of a datetime column: ISO 8601, UTC, whole seconds.
ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def iso_datetimes(frame: pl.DataFrame) -> pl.DataFrame:
    """Datetime columns of ``frame`` as ISO 8601 strings (``2026-06-16T06:43:17Z``)."""
    dates = [c for c, t in frame.schema.items() if isinstance(t, pl.Datetime)]
    return frame.with_columns(pl.col(dates).dt.strftime(ISO_FORMAT)) if dates else frame


#: Rows of a frame encoded per chunk by :func:`_json_rows` (bounds the memory held).
_JSON_CHUNK = 10_000


#: What :func:`write_json` writes under one name: rows (a frame, or frames one after the
#: other, e.g. the steps of one shard at a time), or one object.
Rows = pl.DataFrame | Iterable[pl.DataFrame] | Mapping[str, Any] | None


def write_json(out: TextIO, frames: Mapping[str, Rows]) -> None:
    """Write ``{"name": [row objects], ...}`` and a newline, exactly as
    ``print(json.dumps({name: frame.to_dicts()}, default=str, allow_nan=False))``
    would (a missing frame is ``[]``), but streamed chunk by chunk, with every column
    encoded at once instead of a dict per row: a million steps would otherwise cost
    two copies of the rows as Python objects and the whole text in memory.  A mapping
    instead of a frame is written as one JSON object; an iterable of frames as one
    array of all their rows, read one frame at a time."""
    out.write("{")
    for index, (name, frame) in enumerate(frames.items()):
        out.write(("" if index == 0 else ", ") + _json_key(name) + ": ")
        if isinstance(frame, Mapping):
            out.write(json.dumps(frame, allow_nan=False))
            continue
        out.write("[")
        parts = [frame] if frame is None or isinstance(frame, pl.DataFrame) else frame
        number = 0
        for part in parts:
            for text in _json_rows(part):
                if number:
                    out.write(", ")
                out.write(text)
                number += 1
        out.write("]")
    out.write("}\n")


def _json_key(name: str) -> str:
    return json.dumps(name)


#: A character that ``json.dumps`` (``ensure_ascii``) escapes: all but printable ASCII,
#: and ``"`` and ``\``.  Strings without one are their own JSON text between quotes.
_ESCAPED = r"[^ !#-\[\]-~]"


def _json_rows(frame: pl.DataFrame | None) -> Iterator[str]:
    """Each chunk of rows of ``frame`` as the text of ``json.dumps`` of its dicts,
    joined by ``", "``, without the brackets.

    polars builds the texts of every column and row at once; only what polars writes
    differently from Python goes through Python, one distinct value at a time:
    strings with a character to escape, and floats below 1e-4 (or from 1e16), which
    Python writes as ``1e-05`` and polars as ``0.00001``.  Other column types (none
    in kiana's frames) take ``json.dumps`` itself."""
    if frame is None or frame.height == 0:
        return
    frame = iso_datetimes(frame)
    schema = frame.schema
    simple = all(
        t == pl.String or t == pl.Boolean or t.is_float() or t.is_integer() for t in schema.values()
    )
    if not simple:
        for chunk in frame.iter_slices(_JSON_CHUNK):
            yield json.dumps(chunk.to_dicts(), default=str, allow_nan=False)[1:-1]
        return
    strings = [c for c, t in schema.items() if t == pl.String]
    floats = [c for c, t in schema.items() if t.is_float()]
    for chunk in frame.iter_slices(_JSON_CHUNK):
        chunk = chunk.with_columns(pl.col(floats).cast(pl.Float64))
        odd = chunk.select(
            *(
                pl.col(c).filter(pl.col(c).str.contains(_ESCAPED)).unique().implode()
                for c in strings
            ),
            *(pl.col(c).filter(_odd_float(c)).unique().implode() for c in floats),
            pl.any_horizontal(
                pl.lit(False),
                *((pl.col(c).is_nan() | pl.col(c).is_infinite()).any() for c in floats),
            ).alias("_nonfinite"),
        ).row(0, named=True)
        if odd["_nonfinite"]:
            raise ValueError("Out of range float values are not JSON compliant")
        pieces: list[pl.Expr] = []
        for index, (name, dtype) in enumerate(schema.items()):
            pieces.append(pl.lit(("{" if index == 0 else ", ") + _json_key(name) + ": "))
            pieces.append(_json_text(name, dtype, odd.get(name) or []))
        rows = chunk.select(pl.concat_str([*pieces, pl.lit("}")])).to_series()
        yield ", ".join(rows.to_list())


def _odd_float(name: str) -> pl.Expr:
    size = pl.col(name).abs()
    return ((size < 1e-4) & (size > 0)) | (size >= 1e16)


def _json_text(name: str, dtype: pl.DataType, odd: list[Any]) -> pl.Expr:
    """The JSON text of column ``name`` as ``json.dumps`` writes its values; ``odd``:
    the values polars would write differently (see :func:`_json_rows`)."""
    column = pl.col(name)
    if dtype == pl.Boolean:
        return (
            pl.when(column.is_null())
            .then(pl.lit("null"))
            .when(column)
            .then(pl.lit("true"))
            .otherwise(pl.lit("false"))
        )
    if dtype.is_integer():
        return column.cast(pl.String).fill_null("null")
    if dtype == pl.String:
        text = pl.lit('"') + column + pl.lit('"')
        by_python = [encode_basestring_ascii(v) for v in odd]
    else:
        text = column.cast(pl.String)
        by_python = [float.__repr__(v) for v in odd]
    if odd:
        text = pl.coalesce(
            column.replace_strict(odd, by_python, default=None, return_dtype=pl.String), text
        )
    return text.fill_null("null")
