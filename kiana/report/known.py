"""What the page knows of every shard when it holds only the rows it shows
(:class:`Totals`, gathered by :func:`kiana.report.totals.totals`)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from kiana.report.listing import Listing


@dataclass(frozen=True)
class Totals:
    """What the page says about every run and step when ``ReportData.runs`` and
    ``judgement.steps`` hold only what the charts draw (see the module docstring)."""

    counts: dict[str, int]  #: ``data.RUN_COUNTS``: runs, partitions, ..., steps
    versions: pl.DataFrame  #: as ``data.versions_frame`` of every run
    speedups: pl.DataFrame  #: as ``frames.speedup_frame`` of every run
    spread: pl.DataFrame  #: as ``data.spread_frame`` of every passed run
    kernels: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    harnesses: tuple[str | None, ...] = ()  #: every run's harness (None: none named)
    #: What the page shows of every finding, when ``judgement.findings`` holds the
    #: rows shown only (:func:`bounded`).
    listing: Listing | None = None
