"""The tables a lake's judgement is written as, and their one schema each.

Every engine writes the frames of :class:`kiana.stats.Judgement` with the columns and
types the judge gives them (read off the judgement of no runs), so the files of one
engine read like the other's: :func:`conform` puts a frame in that shape.
"""

from __future__ import annotations

from functools import cache

import polars as pl

#: The frames of a judgement that are written, one folder each.
TABLES: tuple[str, ...] = ("findings", "steps", "quality", "changepoints", "tradeoffs")


@cache
def schema(table: str) -> pl.Schema:
    """The columns and types of ``table`` as :func:`kiana.stats.judge` makes them."""
    from kiana.stats import judge
    from kiana.vocabulary import JUDGED_COLUMNS

    empty = pl.DataFrame(
        schema={
            c: pl.Datetime("us")
            if c == "observed_at"
            else pl.Float64
            if c in ("median", "p20", "p80")
            else pl.String
            for c in (*JUDGED_COLUMNS, "origin")
        }
    )
    frame: pl.DataFrame | None = getattr(judge(empty), table)
    if frame is None:
        raise ValueError(f"the judge gives no {table}")
    return frame.schema


def conform(frame: pl.DataFrame | None, table: str) -> pl.DataFrame:
    """``frame`` with exactly the columns and types of ``table`` (empty for None)."""
    wanted = schema(table)
    if frame is None or frame.width == 0:
        return pl.DataFrame(schema=wanted)
    return frame.select(pl.col(name).cast(dtype) for name, dtype in wanted.items())
