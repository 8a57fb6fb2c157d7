"""Loading kernelindex documents into DuckDB: ``connect``, ``load``, ``runs``.

One call of :func:`load` is one transaction: it lands whole or not at all.  Inputs
stream through in bounded batches (:class:`LoadLimits`), each through the stages of
:mod:`kiana.load.batches`: read (:mod:`~kiana.load.sources`, :mod:`~kiana.load.native`),
parsed (:mod:`~kiana.load.parse`), screened by the fast path (:mod:`~kiana.load.fast`),
checked (:mod:`~kiana.load.check`, :mod:`~kiana.load.validate`) and stored without
duplicates (:mod:`~kiana.load.store`), on the threads of :mod:`kiana.load.pipeline`.
Bad documents become ``rejects`` rows and never stop the load; only unreadable paths
(a missing file) raise before anything is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from kiana.errors import UsageError
from kiana.load.database import connect
from kiana.load.limits import DEFAULT_LIMITS, LoadLimits
from kiana.load.profiling import NO_PROFILER, Profiler, StageTimes
from kiana.load.schema import RUN_COLUMNS

if TYPE_CHECKING:
    from kiana.load.pipeline import LoadSummary, Progress

__all__ = [
    "RUNS_COLUMNS",
    "LoadLimits",
    "LoadSummary",
    "Profiler",
    "Progress",
    "StageTimes",
    "connect",
    "load",
    "load_documents",
    "runs",
]

PathLike = str | os.PathLike[str]


def __getattr__(name: str) -> Any:
    """``LoadSummary`` and ``Progress``, from :mod:`kiana.load.pipeline` when first
    asked for: the loader's threads, checks and stores (pyarrow's compute functions,
    pandas with them: 0.35 s) are imported by a load, not by every command that opens
    a database (``kiana regressions`` on a stored judgement takes ~3 s in all)."""
    if name in ("LoadSummary", "Progress"):
        from kiana.load import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[PathLike],
    *,
    progress: Progress | None = None,
    limits: LoadLimits = DEFAULT_LIMITS,
    profiler: Profiler = NO_PROFILER,
) -> LoadSummary:
    """Load every document under ``paths`` (files, folders, globs) in one transaction;
    ``progress`` is called after each batch (see :data:`Progress`), ``limits`` sizes the
    batches, ``profiler`` times the stages (e.g. a :class:`StageTimes`)."""
    from kiana.load import pipeline
    from kiana.load.sources import expand

    started = time.monotonic()
    files = expand(paths)
    return pipeline.run(
        con,
        lambda reader: pipeline.read_files(reader, files, limits, profiler),
        inputs=[os.fspath(p) for p in paths],
        files=len(files),
        started=started,
        progress=progress,
        profiler=profiler,
        limits=limits,
    )


def load_documents(
    con: duckdb.DuckDBPyConnection,
    documents: Iterable[Any],
    *,
    source: str = "<documents>",
    limits: LoadLimits = DEFAULT_LIMITS,
    profiler: Profiler = NO_PROFILER,
) -> LoadSummary:
    """Load documents already in memory (dicts), e.g. from an importer, in one
    transaction; each is named ``source:N`` (N counting from 1) in runs and rejects."""
    from kiana.load import pipeline

    started = time.monotonic()
    return pipeline.run(
        con,
        lambda reader: pipeline.read_documents(reader, documents, source, limits),
        inputs=[source],
        files=1,
        started=started,
        progress=None,
        profiler=profiler,
        limits=limits,
    )


#: The columns of the ``runs`` table, in its order.
RUNS_COLUMNS: tuple[str, ...] = tuple(name for name, _ in RUN_COLUMNS)


def runs(
    con: duckdb.DuckDBPyConnection,
    columns: Sequence[str] | None = None,
    where: str | None = None,
) -> pl.DataFrame:
    """The ``runs`` table as a polars DataFrame, one row per run in series order
    (partition, provider, time): every column, or only ``columns`` (names of
    :data:`RUNS_COLUMNS`, in the order given), optionally filtered by ``where``
    (a SQL condition over the runs columns)."""
    if isinstance(columns, str):
        raise UsageError(
            f"runs(columns={columns!r}): columns is a list of column names",
            hint="give a list, e.g. columns=['kernel', 'median']; a condition goes in where=",
        )
    if columns is None:
        select = "*"
    else:
        unknown = [c for c in columns if c not in RUNS_COLUMNS]
        if unknown:
            raise UsageError(
                f"no runs column {', '.join(map(repr, unknown))}",
                hint=f"the runs columns are: {', '.join(RUNS_COLUMNS)}",
            )
        if not columns or len(set(columns)) < len(columns):
            raise UsageError(
                f"runs(columns={list(columns)!r}): name each column once, at least one",
                hint=f"the runs columns are: {', '.join(RUNS_COLUMNS)}",
            )
        select = ", ".join(f'"{c}"' for c in columns)
    query = f"SELECT {select} FROM runs" + (f" WHERE {where}" if where else "")
    frame: pl.DataFrame = con.sql(
        query + " ORDER BY partition_id, provider, observed_at, run_id"
    ).pl()
    return frame
