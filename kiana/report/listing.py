"""The findings a page lists, in bounded memory: :class:`Listing`.

The page shows every finding only as counts (per verdict, listed, folded, per metric)
and as the values its tables' filters offer; it shows rows only of the first
``table_rows`` latency and memory findings, most important first, and of the ``top``
listed ones it charts.  :func:`listing` reads every finding once, through a projection
of the columns that order, count and filter them (:data:`KEYS`), and keeps whole rows
of those it shows only, so a database of a million findings (10M runs) gives a page
made of a few thousand rows, and each row is copied once.

The order is :func:`kiana.report.data.sort_findings`' (verdict, impact, size of the
median change, then kernel, pass, provider, GPU, ties in the judge's order), ``rank``
the position among the findings of their own (folded baseline drift left out), and
``listed`` :func:`kiana.findings.counts.listed_expr`: a row of a :class:`Table` is the row of
``sort_findings(findings)`` of the same rank (``tests/report/test_listing.py``).

>>> import polars as pl
>>> found = pl.DataFrame({
...     "verdict": ["unchanged", "regression", "improvement"], "impact": [0.0, 0.4, 0.2],
...     "median_change": [0.0, 0.3, -0.1], "kernel": ["a", "b", "c"], "pass": ["fwd"] * 3,
...     "provider": ["liger"] * 3, "gpu": ["H100"] * 3, "metric": ["latency"] * 3,
...     "is_subject": [True] * 3,
... })
>>> shown = listing(found, top=1, rows=2)
>>> shown.latency.rows.select("rank", "kernel", "listed").rows()
[(1, 'b', True), (2, 'c', True)]
>>> shown.latency.height, shown.charted["kernel"].to_list(), shown.counts.listed
(3, ['b'], 2)
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kiana.findings.counts import Counts, count_findings, folded_expr, listed_expr
from kiana.vocabulary import verdict_rank

#: The columns of a finding that order, count and filter it (those the frame has).
KEYS: tuple[str, ...] = ("verdict", "impact", "median_change", "kernel", "pass", "provider")
KEYS += ("gpu", "metric", "is_subject", "folded")
#: The columns a findings table offers filters of (every value among its findings).
FILTERS: tuple[str, ...] = ("verdict", "kernel", "provider", "gpu")
#: The order of the page: (column or expression, descending) pairs, nulls last.
ORDER: tuple[tuple[str, bool], ...] = (
    ("_v", False), ("impact", True), ("_m", True), ("kernel", False), ("pass", False),
    ("provider", False), ("gpu", False),
)  # fmt: skip


def ordered(findings: pl.DataFrame, *extra: str) -> pl.DataFrame:
    """``findings`` most important first (:data:`ORDER`; ties keep their order):
    ``extra`` names further columns to break ties by."""
    keyed = findings.with_columns(
        verdict_rank().alias("_v"), pl.col("median_change").abs().alias("_m")
    )
    columns = [c for c, _ in ORDER] + list(extra)
    descending = [d for _, d in ORDER] + [False] * len(extra)
    return keyed.sort(columns, descending=descending, nulls_last=True, maintain_order=True).drop(
        "_v", "_m"
    )


@dataclass(frozen=True)
class Table:
    """One metric's findings table."""

    rows: pl.DataFrame  #: its first findings, most important first, with ``rank``, ``listed``
    height: int  #: every finding of its own of the metric (the table's total)
    options: dict[str, list[str]]  #: every value of :data:`FILTERS` among them, sorted
    counts: Counts  #: :func:`kiana.findings.counts.count_findings` of the metric's findings


@dataclass(frozen=True)
class Listing:
    """What a page says about every finding, and the rows it shows (see the module
    docstring): the latency and memory tables, the findings that get charts and the
    counts of every finding."""

    latency: Table
    memory: Table
    charted: pl.DataFrame  #: the first ``top`` listed findings, with ``rank``, ``listed``
    counts: Counts  #: of every finding, folded ones in

    def rows(self) -> pl.DataFrame:
        """Every finding row this listing holds, once, in rank order (``rank`` and
        ``listed`` dropped: the findings as the judge gave them)."""
        held = [self.latency.rows, self.memory.rows, self.charted]
        frames = [frame for frame in held if frame.height] or [self.latency.rows]
        merged = pl.concat(frames, how="vertical_relaxed").unique("rank", maintain_order=True)
        return merged.sort("rank").drop("rank", "listed")


def listing(findings: pl.DataFrame, *, top: int, rows: int) -> Listing:
    """The :class:`Listing` of ``findings``: tables of their first ``rows`` latency and
    memory findings, and the ``top`` listed ones to chart (see the module docstring)."""
    keys = findings.select([c for c in KEYS if c in findings.columns]).with_row_index("_row")
    own = keys.filter(~folded_expr(keys))
    order = ordered(own, "_row").with_columns(listed_expr().alias("listed"))
    order = order.with_row_index("rank", offset=1)
    is_latency = pl.col("metric") == "latency"
    charted = order.filter(pl.col("listed")).head(top)
    return Listing(
        latency=_table(findings, keys.filter(is_latency), order.filter(is_latency), rows),
        memory=_table(findings, keys.filter(~is_latency), order.filter(~is_latency), rows),
        charted=_rows(findings, charted),
        counts=count_findings(keys),
    )


def _table(findings: pl.DataFrame, keys: pl.DataFrame, order: pl.DataFrame, rows: int) -> Table:
    """The table of one metric: ``keys``, the projection of its findings (folded ones
    in), ``order``, its own findings in the page's order (with ``rank`` and ``_row``)."""
    options = {
        key: sorted({str(v) for v in order.get_column(key).drop_nulls().unique().to_list()})
        for key in FILTERS
    }
    return Table(_rows(findings, order.head(rows)), order.height, options, count_findings(keys))


def _rows(findings: pl.DataFrame, picked: pl.DataFrame) -> pl.DataFrame:
    """The whole rows of ``findings`` at ``picked``'s ``_row``, in its order, as
    :func:`kiana.report.data.sort_findings` gives them (``rank`` first, ``listed`` last)."""
    if findings.height == 0 or picked.height == 0:
        empty = findings.clear().with_columns(pl.lit(False).alias("listed"))
        return empty.with_row_index("rank", offset=1)
    taken = findings.select(pl.all().gather(picked.get_column("_row")))
    return taken.with_columns(picked.get_column("listed")).insert_column(
        0, picked.get_column("rank")
    )
