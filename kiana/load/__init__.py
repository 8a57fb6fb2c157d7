"""Loading kernelindex documents into DuckDB: ``connect``, ``load``, ``runs``.

One call of :func:`load` is one transaction: it lands whole or not at all.  Inputs
stream through in bounded batches (see :mod:`kiana.load.sources`); each batch is
checked in SQL (:mod:`kiana.load.validate`) and written without duplicates
(:mod:`kiana.load.store`).  Bad documents become ``rejects`` rows and never stop
the load; only unreadable paths (a missing file) raise before anything is written.

Three threads share the work: the reader reads (and minifies) the batch after next
(Python's reader only), the checker checks the next batch on a cursor of its own
(:func:`_checked`; DuckDB's JSONL reader runs there, and checks as it reads), and the
caller's thread stores the current one in the load's transaction; a fourth hashes each
batch's documents (``run_id``) between the two.  At most a few batches are held at
once, so memory stays bounded.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import duckdb
import polars as pl

from kiana._version import __version__
from kiana.errors import DatabaseError, UsageError
from kiana.load import native, sources
from kiana.load.database import connect
from kiana.load.schema import RUN_COLUMNS
from kiana.load.sources import Batch, InputFile, expand
from kiana.load.store import BatchCounts, Checked, Seen, check_batch, laps, stage1, store_batch

__all__ = ["RUNS_COLUMNS", "LoadSummary", "Progress", "connect", "load", "load_documents", "runs"]

PathLike = str | os.PathLike[str]
T = TypeVar("T")


@dataclass(frozen=True)
class LoadSummary:
    """What one load did.  ``read = loaded + already_present + rejected``."""

    load_id: int
    read: int
    loaded: int
    already_present: int
    rejected: int
    warned: int
    files: int
    seconds: float
    first_rejects: tuple[tuple[str, str | None, str], ...] = field(default=())


#: Called after each batch with the files done, the files in all and the documents
#: read so far (``kiana load`` draws its progress bar with it).
Progress = Callable[[int, int, int], None]

#: One load at a time in this process.  Another process cannot open the database file
#: while a load holds it (DuckDB's file lock); two connections of one process can, and
#: their concurrent transactions would each miss the other's new runs (``run_id`` is
#: kept unique by the loader, not by an index: see :mod:`kiana.load.schema`).
_ONE_LOAD = threading.Lock()


def load(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[PathLike],
    *,
    progress: Progress | None = None,
) -> LoadSummary:
    """Load every document under ``paths`` (files, folders, globs) in one transaction;
    ``progress`` is called after each batch (see :data:`Progress`)."""
    started = time.monotonic()
    files = expand(paths)
    reader = con.cursor()  # DuckDB's JSONL reader runs on its own session (and thread)
    try:
        return _load_batches(
            con, _read(reader, files), [os.fspath(p) for p in paths], len(files), started, progress
        )
    finally:
        reader.close()


def _read(
    reader: duckdb.DuckDBPyConnection, files: Iterable[InputFile]
) -> Generator[Batch, None, None]:
    """Every record of every file, in bounded batches after stage 1 (each record
    minified): DuckDB reads (on ``reader``) the plain JSONL files that
    :func:`kiana.load.native.eligible` passes (sized by their longest line), Python
    every other file, one batch ahead on a second thread (:func:`_ahead`), which also
    minifies them on ``reader``."""
    scanned = ((item, native.longest_line(item)) for item in files)
    for direct, group in itertools.groupby(scanned, lambda pair: pair[1] is not None):
        if direct:
            for item, longest in group:
                yield from native.file_batches(reader, item, longest or 0)
        else:
            items = (item for item, _ in group)
            yield from _ahead(stage1(reader, batch) for batch in sources.batches(items))


def _ahead(stream: Iterable[T]) -> Generator[T, None, None]:
    """The batches of ``stream``, each read on a second thread while the caller writes
    the one before: one batch ahead, so at most two batches are held.  An exception of
    the reading is raised here, in its order; closing this generator stops the reading.
    For Python's reader (``.json`` files, gzip): its file system calls and decoding
    overlap DuckDB's work.  DuckDB's own JSONL reader gains nothing from it (both cores
    are busy) and would hold a batch more (1M JSONL: 1,459 -> 1,627 MiB peak)."""
    handoff: queue.Queue[tuple[T | None, BaseException | None]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: tuple[T | None, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for batch in stream:
                if not put((batch, None)):
                    return
            put((None, None))
        except BaseException as exc:  # handed to the caller, raised there
            put((None, exc))

    thread = threading.Thread(target=read, name="kiana-load-reader", daemon=True)
    thread.start()
    try:
        while True:
            batch, error = handoff.get()
            if error is not None:
                raise error
            if batch is None:
                return
            yield batch
    finally:
        stop.set()
        thread.join()


def load_documents(
    con: duckdb.DuckDBPyConnection,
    documents: Iterable[Any],
    *,
    source: str = "<documents>",
) -> LoadSummary:
    """Load documents already in memory (dicts), e.g. from an importer, in one
    transaction; each is named ``source:N`` (N counting from 1) in runs and rejects."""
    started = time.monotonic()

    def records() -> Generator[Batch, None, None]:
        batch = Batch()
        for number, document in enumerate(documents, start=1):
            try:
                text: str | None = json.dumps(document, ensure_ascii=False, allow_nan=True)
                problem = None
            except (TypeError, ValueError) as exc:
                text, problem = None, f"not serialisable as JSON: {exc}"
            batch.add(source, number, text, problem)
            if len(batch) >= sources.BATCH_RECORDS:
                yield batch
                batch = Batch()
        if len(batch):
            yield batch

    return _load_batches(con, records(), [source], 1, started, None)


def _checked(
    checker: duckdb.DuckDBPyConnection, stream: Iterable[Batch]
) -> Generator[Checked, None, None]:
    """The batches of ``stream`` read and checked on ``checker``, a cursor of their own
    (the checks read no table), so that :func:`_ahead` runs them on a second thread while
    the load's connection stores the batch before."""
    lap = laps()
    for batch in stream:
        lap("reading (DuckDB's JSONL reader: + stage 1, the fast path)")
        checked = check_batch(checker, batch)
        lap(None)  # check_batch timed its own stages
        yield checked


def _load_batches(
    con: duckdb.DuckDBPyConnection,
    stream: Generator[Batch, None, None],
    inputs: list[str],
    files: int,
    started: float,
    report: Progress | None,
) -> LoadSummary:
    with _ONE_LOAD, contextlib.closing(con.cursor()) as checker:
        total = BatchCounts()
        con.execute("BEGIN TRANSACTION")
        try:
            (load_id,) = con.execute("SELECT nextval('load_ids')").fetchall()[0]
            begun = datetime.now(UTC).replace(tzinfo=None)
            done_files: set[str] = set()
            seen = Seen()
            lap = laps()
            for checked in _ahead(_checked(checker, stream)):
                lap("waiting for the checks")
                counts = store_batch(con, checked, load_id, seen)
                lap(None)  # store_batch timed its own stages
                batch = checked.batch
                for name in ("read", "loaded", "already_present", "rejected", "warned"):
                    setattr(total, name, getattr(total, name) + getattr(counts, name))
                if report:
                    done_files.update(batch.sources())
                    report(len(done_files), files, total.read)
            con.execute(
                "INSERT INTO loads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    load_id,
                    begun,
                    datetime.now(UTC).replace(tzinfo=None),
                    __version__,
                    inputs,
                    total.read,
                    total.loaded,
                    total.already_present,
                    total.rejected,
                    total.warned,
                ],
            )
            first = con.execute(
                "SELECT source, json_path, reason FROM rejects WHERE load_id = ? LIMIT 10",
                [load_id],
            ).fetchall()
            lap("end of load")
            con.execute("COMMIT")
            lap("COMMIT")
        except BaseException as exc:
            stream.close()  # stops a reading thread
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            # A COMMIT that cannot write its WAL (full disk, file size limit) surfaces as a
            # TransactionException "Failed to commit: Could not write file ...".
            failed_write = isinstance(exc, duckdb.TransactionException) and (
                "could not write" in str(exc).lower() or "failed to commit" in str(exc).lower()
            )
            if isinstance(exc, duckdb.IOException | duckdb.OutOfMemoryException) or failed_write:
                raise DatabaseError(
                    f"the load was rolled back: {exc}",
                    hint="free disk space or memory and load again; nothing was written",
                ) from exc
            raise
        return LoadSummary(
            load_id=int(load_id),
            read=total.read,
            loaded=total.loaded,
            already_present=total.already_present,
            rejected=total.rejected,
            warned=total.warned,
            files=files,
            seconds=time.monotonic() - started,
            first_rejects=tuple((str(s), p, str(r)) for s, p, r in first),
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
