"""The load pipeline: the stages of :mod:`kiana.load.batches` on three threads, one
transaction.

::

    reading thread          checking thread                  the caller's thread
    (Python's reader)
    RawBatch ─parse─▶ ParsedBatch ─screen─┐
                                          ├─▶ ScreenedBatch ─check─▶ CheckedBatch ─store─▶ counts
    DuckDB's JSONL reader (its query) ────┘

The reading thread reads (and parses) the batch after next, Python's reader only: its
file system calls and decoding overlap DuckDB's work; DuckDB's own JSONL reader gains
nothing from it (both cores are busy) and would hold a batch more (1M JSONL: 1,459 ->
1,627 MiB peak), so it runs on the checking thread.  The checking thread screens and
checks the next batch on cursors of its own (the checks read no table), while the
caller's thread stores the one before in the load's one transaction; a fourth thread
hashes each batch's ``run_id`` between the two.  At most a few batches are held at once,
so memory stays bounded (:class:`~kiana.load.limits.LoadLimits`).
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import duckdb

from kiana._version import __version__
from kiana.errors import DatabaseError
from kiana.load.batches import BatchCounts, CheckedBatch, ParsedBatch, RawBatch, ScreenedBatch
from kiana.load.check import check
from kiana.load.database import default_memory_limit
from kiana.load.fast import screen
from kiana.load.limits import DEFAULT_LIMITS, LoadLimits
from kiana.load.native import file_batches, longest_line
from kiana.load.parse import parse
from kiana.load.profiling import NO_PROFILER, Profiler
from kiana.load.sources import InputFile, batches, document_batches
from kiana.load.store import Seen, store

__all__ = ["LoadSummary", "Progress", "read_documents", "read_files", "run"]

T = TypeVar("T")

#: What the readers hand the checking thread: parsed (Python's reader) or also screened
#: (DuckDB's reader, whose query runs the fast path).
Readout = ParsedBatch | ScreenedBatch


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


def read_files(
    reader: duckdb.DuckDBPyConnection,
    files: Iterable[InputFile],
    limits: LoadLimits,
    profiler: Profiler = NO_PROFILER,
) -> Generator[Readout, None, None]:
    """Every record of every file, in bounded batches: DuckDB reads (on ``reader``) the
    plain JSONL files that :func:`kiana.load.native.eligible` passes (sized by their
    longest line), parsed and screened as it reads; Python every other file, one batch
    ahead on a second thread (:func:`_ahead`), which also parses them on ``reader``."""
    scanned = ((item, longest_line(item, limits)) for item in files)
    for direct, group in itertools.groupby(scanned, lambda pair: pair[1] is not None):
        if direct:
            for item, longest in group:
                yield from file_batches(reader, item, longest or 0, limits)
        else:
            raw = _timed(batches((item for item, _ in group), limits), profiler, _READ_PYTHON)
            yield from _ahead(_parsed(reader, raw, profiler))


#: The stages of the reading thread (Python's reader).
_READ_PYTHON = "read: Python's reader (reading thread)"
_PARSE = "parse: stage 1 of Python-read batches (reading thread)"


def _parsed(
    reader: duckdb.DuckDBPyConnection, raw: Iterable[RawBatch], profiler: Profiler
) -> Iterator[ParsedBatch]:
    for batch in raw:
        with profiler.stage(_PARSE):
            parsed = parse(reader, batch)
        yield parsed


def read_documents(
    reader: duckdb.DuckDBPyConnection, documents: Iterable[object], source: str, limits: LoadLimits
) -> Generator[Readout, None, None]:
    """Documents in memory, parsed on ``reader`` as the checking thread asks for them:
    the caller's iterable is drawn there (its first batch on the caller's thread)."""
    for batch in document_batches(documents, source, limits):
        yield parse(reader, batch)


def _ahead(stream: Iterable[T]) -> Generator[T, None, None]:
    """The items of ``stream``, each made on a second thread while the caller works on
    the one before: one ahead, so at most two are held.  The first is made on the
    caller's thread (there is nothing to overlap it with yet; a load of one batch starts
    no thread that it would wait for).  An exception of the stream is raised here, in its
    order; closing this generator stops the second thread."""
    items = iter(stream)
    first = next(items, None)
    if first is None:
        return
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

    def make() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((None, None))
        except BaseException as exc:  # handed to the caller, raised there
            put((None, exc))

    thread = threading.Thread(target=make, name="kiana-load-ahead", daemon=True)
    thread.start()
    try:
        yield first
        while True:
            item, error = handoff.get()
            if error is not None:
                raise error
            if item is None:
                return
            yield item
    finally:
        stop.set()
        thread.join()


def _timed(stream: Iterator[T], profiler: Profiler, stage: str) -> Iterator[T]:
    """The items of ``stream``, the wait for each one timed as ``stage``."""
    while True:
        with profiler.stage(stage):
            item = next(stream, None)
        if item is None:
            return
        yield item


def _checked(
    checker: duckdb.DuckDBPyConnection, stream: Iterator[Readout], profiler: Profiler
) -> Iterator[CheckedBatch]:
    """The batches of ``stream`` screened (where the reader did not) and checked on
    ``checker``, a cursor of their own (the checks read no table)."""
    reading = "read: DuckDB's reader, + parse, screen (or waiting for the reading thread)"
    for batch in _timed(stream, profiler, reading):
        if isinstance(batch, ParsedBatch):
            with profiler.stage("screen: the fast path (Python-read batches)"):
                batch = screen(checker, batch)
        with profiler.stage("check: the full check of the rest, arrays expanded"):
            checked = check(checker, batch)
        yield checked


#: DuckDB's ``memory_limit`` during a load, in batches of text (``LoadLimits.batch_bytes``;
#: 768 MiB by default), at least :data:`LOAD_MEMORY_FLOOR`.  A batch's own statements
#: use a few hundred MiB at most (``duckdb_memory()`` during a load of 1M runs); under
#: DuckDB's default limit, 80% of RAM, the rest filled up with the table's blocks the load
#: had written, cached though nothing reads them again (~200 bytes a run: ~2 GiB of a
#: 10M-run load's 4.86 GiB peak; bench/README.md).
LOAD_MEMORY_BATCHES = 16
LOAD_MEMORY_FLOOR = 256 << 20

#: DuckDB's units in ``current_setting('memory_limit')`` (``953.6 MiB``, ``18.8 GiB``).
_UNITS = {"bytes": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40, "PiB": 50}


def load_memory(limits: LoadLimits) -> int:
    """The bytes DuckDB may use during a load in ``limits`` (:data:`LOAD_MEMORY_BATCHES`)::

    >>> load_memory(LoadLimits()) >> 20
    768
    """
    return max(LOAD_MEMORY_BATCHES * limits.batch_bytes, LOAD_MEMORY_FLOOR)


def _bytes(setting: str) -> float | None:
    """``'18.8 GiB'`` -> bytes; None for a text DuckDB does not print."""
    number, _, unit = setting.partition(" ")
    try:
        return float(number) * (1 << _UNITS[unit])
    except (KeyError, ValueError):
        return None


@contextlib.contextmanager
def _memory_limit(con: duckdb.DuckDBPyConnection, limits: LoadLimits) -> Iterator[None]:
    """DuckDB's default ``memory_limit`` lowered to :func:`load_memory` while the load
    runs, and reset after it; a limit someone set (``--memory-limit``) is kept as it is."""
    default = default_memory_limit(con)
    if default is None or (_bytes(default) or 0) <= load_memory(limits):
        yield
        return
    con.execute(f"SET memory_limit = '{load_memory(limits)}B'")
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):  # a closed connection
            con.execute("RESET memory_limit")


def run(
    con: duckdb.DuckDBPyConnection,
    read: Callable[[duckdb.DuckDBPyConnection], Generator[Readout, None, None]],
    *,
    inputs: list[str],
    files: int,
    started: float,
    progress: Progress | None,
    profiler: Profiler,
    limits: LoadLimits = DEFAULT_LIMITS,
) -> LoadSummary:
    """One load in one transaction: the batches of ``read(reader)`` (``reader``: a cursor
    of their own) checked on a second thread and stored on ``con``, then the ``loads``
    row; rolled back whole on any error.  DuckDB's memory is bounded meanwhile
    (:func:`load_memory`, from ``limits``)."""
    with _ONE_LOAD, _memory_limit(con, limits), contextlib.ExitStack() as cursors:
        reader = cursors.enter_context(contextlib.closing(con.cursor()))
        checker = cursors.enter_context(contextlib.closing(con.cursor()))
        stream = read(reader)
        checked = _ahead(_checked(checker, stream, profiler))
        con.execute("BEGIN TRANSACTION")
        try:
            load_id, total, first = _store_all(con, checked, inputs, files, progress, profiler)
            with profiler.stage("COMMIT"):
                con.execute("COMMIT")
        except BaseException as exc:
            checked.close()  # stops the checking thread,
            stream.close()  # then the reading thread
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            error = _database_error(exc)
            if error is None:
                raise
            raise error from exc
    return LoadSummary(load_id, *_counts(total), files, time.monotonic() - started, first)


def _counts(total: BatchCounts) -> tuple[int, int, int, int, int]:
    """read, loaded, already present, rejected, warned."""
    return total.read, total.loaded, total.already_present, total.rejected, total.warned


def _store_all(
    con: duckdb.DuckDBPyConnection,
    checked: Iterator[CheckedBatch],
    inputs: list[str],
    files: int,
    progress: Progress | None,
    profiler: Profiler,
) -> tuple[int, BatchCounts, tuple[tuple[str, str | None, str], ...]]:
    """Every checked batch stored, and the ``loads`` row (inside the transaction): the
    load's id, its counts and its first rejects (source, JSON path, reason)."""
    (load_id,) = con.execute("SELECT nextval('load_ids')").fetchall()[0]
    begun = datetime.now(UTC).replace(tzinfo=None)
    total = BatchCounts()
    done_files: set[str] = set()
    seen = Seen()
    for batch in _timed(checked, profiler, "waiting for the checks"):
        total += store(con, batch, load_id, seen, profiler)
        if progress:
            done_files.update(batch.files())
            progress(len(done_files), files, total.read)
    with profiler.stage("end of load"):
        finished = datetime.now(UTC).replace(tzinfo=None)
        con.execute(
            "INSERT INTO loads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [load_id, begun, finished, __version__, inputs, *_counts(total)],
        )
        first = con.execute(
            "SELECT source, json_path, reason FROM rejects WHERE load_id = ? LIMIT 10",
            [load_id],
        ).fetchall()
    return int(load_id), total, tuple((str(s), p, str(r)) for s, p, r in first)


def _database_error(exc: BaseException) -> DatabaseError | None:
    """For a load rolled back by ``exc``: a :class:`DatabaseError` with a hint when the
    database could not take the load (full disk, file size limit, out of memory), else
    None (``exc`` is raised as it is)."""
    # A COMMIT that cannot write its WAL (full disk, file size limit) surfaces as a
    # TransactionException "Failed to commit: Could not write file ...".
    text = str(exc).lower()
    failed_write = isinstance(exc, duckdb.TransactionException) and (
        "could not write" in text or "failed to commit" in text
    )
    if isinstance(exc, duckdb.IOException | duckdb.OutOfMemoryException) or failed_write:
        return DatabaseError(
            f"the load was rolled back: {exc}",
            hint="free disk space or memory and load again; nothing was written",
        )
    return None
