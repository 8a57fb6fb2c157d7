"""The checks of one screened batch: the full check for what the fast path did not pass.

The fast path (:mod:`kiana.load.fast`) has answered for every candidate document: the
clean ones are checked rows as they are.  The others (rare) are

* no document (no JSON, an empty array, a reading problem): their problem becomes a
  reject (with Python's reason for invalid JSON, and the start of the text);
* an array in a line DuckDB read: replaced by its elements;
* a document the full check (:data:`kiana.load.columns.FLAT_SQL`) must see: its first
  failing check, or its columns when none fails (a backslash, a missing measurements
  array).

:func:`check` reads no table, so it runs on a cursor of its own while the batch before
is stored (:mod:`kiana.load.pipeline`).  It hashes each document's ``run_id`` on a
thread of its own (hashlib lets go of the GIL), which the storing waits for: the hashing
hides behind the checks and the storing of the batch before.  A small batch is hashed
at once: starting a thread would cost more than the hashing.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from kiana.load.arrow import all_true, keys, registered
from kiana.load.batches import CANDIDATE_COLUMNS, CheckedBatch, ScreenedBatch
from kiana.load.columns import FLAT_SQL
from kiana.load.hashing import sha256_hex
from kiana.load.parse import expanded, json_error

__all__ = ["check"]

#: The candidates' columns that are not checked columns, and the fast path's answer.
_NOT_CHECKED = {*CANDIDATE_COLUMNS, "clean"}

#: Documents of up to this many bytes in all are hashed at once, not on a thread of
#: their own (hashlib: ~1 ms per MB).
_HASH_AT_ONCE_BYTES = 1 << 20


def check(cursor: duckdb.DuckDBPyConnection, screened: ScreenedBatch) -> CheckedBatch:
    """The checks of one screened batch, on ``cursor``, outside the load's transaction
    (its statements register views, :func:`kiana.load.arrow.registered`)."""
    rows = screened.rows
    clean = pc.fill_null(rows.column("clean"), False).combine_chunks()
    passed = _passed(rows, clean)
    items = rows.select(CANDIDATE_COLUMNS)
    rest = items.slice(0, 0)
    if not all_true(clean):
        rest = expanded(cursor, items.filter(pc.invert(clean)))
        items = pa.concat_tables([items.filter(clean), rest])
    unreadable = tuple(_unreadable(rest))
    run_ids = _hashed(items.column("doc"))
    flat = passed
    documents = rest.filter(pc.is_null(rest.column("problem")))
    if documents.num_rows:
        full = registered(cursor, FLAT_SQL, "documents", documents)
        flat = pa.concat_tables([passed, full.select(passed.column_names)])
    return CheckedBatch(items, flat.append_column("key", keys(flat)), unreadable, run_ids)


def _hashed(documents: pa.ChunkedArray) -> Future[pa.Array]:
    """The ``run_id`` of each document, being hashed (on a thread, for a large batch)."""
    if documents.nbytes <= _HASH_AT_ONCE_BYTES:
        done: Future[pa.Array] = Future()
        done.set_result(sha256_hex(documents))
        return done
    hashing = ThreadPoolExecutor(1, thread_name_prefix="kiana-load-hash")
    run_ids = hashing.submit(sha256_hex, documents)
    hashing.shutdown(wait=False)
    return run_ids


def _shown_source(rows: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``source`` as :data:`kiana.load.columns.SOURCE` shows it: ``file:line`` for a
    JSONL line, ``file`` for a file, ``[i]`` after either for an element of an array."""
    source = rows.column("source")
    line = pc.cast(rows.column("line"), pa.string())
    shown = pc.coalesce(pc.binary_join_element_wise(source, line, ":"), source)
    index = rows.column("item_index")
    if index.null_count == rows.num_rows:
        return shown
    bracketed = pc.binary_join_element_wise("[", pc.cast(index, pa.string()), "]", "")
    return pc.coalesce(pc.binary_join_element_wise(shown, bracketed, ""), shown)


def _passed(rows: pa.Table, clean: pa.Array) -> pa.Table:
    """The checked rows (no reject) of the ``clean`` rows of a screened batch."""
    fields = [name for name in rows.column_names if name not in _NOT_CHECKED]
    passed = rows.select(["rec", "item", "item_index", "source", "line", *fields])
    if not all_true(clean):
        passed = passed.filter(clean)  # a filter copies: not the documents, left out above
    none = pa.nulls(passed.num_rows, pa.string())
    return pa.table(
        {
            "rec": passed.column("rec"),
            "item": passed.column("item"),
            "source": _shown_source(passed),
            **{name: passed.column(name) for name in fields},
            "reject_path": none,
            "reject_reason": none,
        }
    )


def _first(row: tuple[int, str, int | None, str, str | None]) -> int:
    return row[0]


def _unreadable(rest: pa.Table) -> list[tuple[str, str, str | None]]:
    """The records that are no document: where (``file:line``), why, their text's
    start; in record order."""
    problem = rest.column("problem")
    if problem.null_count == rest.num_rows:
        return []
    columns = ["rec", "source", "line", "problem", "text"]
    bad = rest.select(columns).filter(pc.is_valid(problem)).to_pydict()
    found = []
    for _, source, line, why, text in sorted(zip(*bad.values(), strict=True), key=_first):
        if why == "invalid JSON" and text is not None:
            why = json_error(text)
        where = source if line is None else f"{source}:{line}"
        found.append((where, why, text[:200] if text else None))
    return found
