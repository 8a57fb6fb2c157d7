"""The tables a lake's judgement is written as, and their one schema each.

Every engine writes the frames of :class:`kiana.stats.Judgement` with the columns and
types the judge gives them, so the files of one engine read like the other's:
:func:`conform` puts a frame in that shape.  The types are read off the judgement of a
tiny history (two sessions of a Liger provider and its baseline, with origins and a
change point's worth of sessions): the judgement of no runs leaves some columns
untyped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache

import polars as pl

from kiana.harness import LIGER

#: The frames of a judgement that are written, one folder each.
TABLES: tuple[str, ...] = ("findings", "steps", "quality", "changepoints", "tradeoffs")


def _tiny_runs() -> pl.DataFrame:
    """Eight sessions of liger and torch on two workloads, latency and memory."""
    rows = []
    start = datetime(2025, 1, 1)
    for session in range(8):
        level = 1.0 if session < 4 else 1.5
        for provider in ("liger", "torch"):
            for workload in ("w1", "w2"):
                for metric in ("latency", "memory"):
                    median = 1000.0 * level * (1 + session % 2 * 0.01)
                    rows.append(
                        {
                            "partition_id": f"p-{workload}-{metric}",
                            "provider": provider,
                            "metric": metric,
                            "kernel": "k",
                            "pass": "forward",
                            "gpu": "g",
                            "workload": workload,
                            "harness": LIGER.name,
                            "version": f"0.{session}.0",
                            "role": LIGER.role(provider),
                            "observed_at": start + timedelta(days=session),
                            "status": "passed",
                            "median": median,
                            "p20": median * 0.99,
                            "p80": median * 1.01,
                            "origin": f"c{session}:f.csv",
                        }
                    )
    return pl.DataFrame(rows)


@cache
def schema(table: str) -> pl.Schema:
    """The columns and types of ``table`` as :func:`kiana.stats.judge` makes them."""
    from kiana.stats import judge

    frame: pl.DataFrame | None = getattr(judge(_tiny_runs()), table)
    if frame is None:
        raise ValueError(f"the judge gives no {table}")
    untyped = [name for name, dtype in frame.schema.items() if dtype == pl.Null]
    if untyped:
        raise ValueError(f"the judge leaves {table} columns untyped: {', '.join(untyped)}")
    return frame.schema


def conform(frame: pl.DataFrame | None, table: str) -> pl.DataFrame:
    """``frame`` with exactly the columns and types of ``table`` (empty for None)."""
    wanted = schema(table)
    if frame is None or frame.width == 0:
        return pl.DataFrame(schema=wanted)
    return frame.select(pl.col(name).cast(dtype) for name, dtype in wanted.items())
