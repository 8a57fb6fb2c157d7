"""How the loader's stages hand Arrow tables to DuckDB, and match rows across tables.

Each stage's result is an Arrow table, and a query reads one such table under the name
its SQL uses:

* on a cursor of its own, outside the load's transaction (stage 1, the checks):
  :func:`registered`, the table registered as a view for one statement, parsed once per
  process (a DuckDB ``Statement`` is reused by every later batch and load: the fast path
  takes ~5 ms to parse, the full check ~9 ms);
* on the load's connection, inside its transaction (the storing): :func:`select` and
  :func:`write`, through a DuckDB relation.  A registered view would be kept by the
  transaction, with its table, until the commit (a 50 MB table per batch kept 50 MB per
  batch); a relation's name lives only for its call.

Rows of two tables are matched in Arrow by their ``(rec, item)`` key (:func:`keys`): the
record of a batch and, for an array, the element.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, TypeAlias

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Rows", "all_true", "keys", "matching", "registered", "select", "write"]

#: What a storing query reads: an Arrow table, or a relation over one (a filter of it).
Rows: TypeAlias = "pa.Table | duckdb.DuckDBPyRelation"

#: :func:`registered` fetches a statement's result as Arrow, which DuckDB warns makes a
#: copy of the rows; it does, and it is still the quickest way here (see there).
warnings.filterwarnings(
    "ignore", message="Arrow output on a DB-API result", category=UserWarning, module=__name__
)

_PARSED: dict[str, duckdb.Statement] = {}
_PARSED_LOCK = threading.Lock()


def _parsed(cursor: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """``sql`` parsed once per process (a parsed statement runs on any connection)."""
    statement = _PARSED.get(sql)
    if statement is None:
        (statement,) = cursor.extract_statements(sql)
        with _PARSED_LOCK:
            if len(_PARSED) > 64:  # the loader has a handful; never grow without bound
                _PARSED.clear()
            _PARSED[sql] = statement
    return statement


def registered(cursor: duckdb.DuckDBPyConnection, sql: str, name: str, table: pa.Table) -> pa.Table:
    """The rows of the query ``sql``, which reads ``table`` as ``name``, on ``cursor``, a
    cursor outside the load's transaction: ``table`` registered as a view for one
    statement.  A relation's query is parsed and bound several times (the fast path: 55
    ms of binding per batch, 35 ms through ``cursor.sql``); one statement, 24 ms, the
    rows copied once more (~10 ms)."""
    cursor.register(name, table)
    try:
        rows: pa.Table = cursor.execute(_parsed(cursor, sql)).to_arrow_table(1 << 20)
    finally:
        cursor.unregister(name)
    return rows


def _relation(con: duckdb.DuckDBPyConnection, rows: Rows) -> duckdb.DuckDBPyRelation:
    return con.from_arrow(rows) if isinstance(rows, pa.Table) else rows


def select(con: duckdb.DuckDBPyConnection, sql: str, name: str, rows: Rows) -> pa.Table:
    """The rows of the query ``sql``, which reads ``rows`` as ``name`` (a relation)."""
    relation = _relation(con, rows).query(name, sql)
    if relation is None:  # pragma: no cover - the queries passed here are SELECTs
        raise ValueError("not a query")
    return relation.to_arrow_table()


def write(con: duckdb.DuckDBPyConnection, sql: str, name: str, rows: Rows) -> list[Any]:
    """Run the statement ``sql``, which reads ``rows`` as ``name``; the rows it returned."""
    relation = _relation(con, rows).query(name, sql)
    return relation.fetchall() if relation is not None else []


def keys(table: pa.Table) -> pa.Array:
    """The ``(rec, item)`` key of every row as one int64 (rec in the high 32 bits)."""
    rec = pc.cast(table.column("rec"), pa.int64())
    item = pc.cast(table.column("item"), pa.int64())
    joined = pc.add(pc.shift_left(rec, 32), item)
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined


def matching(table: pa.Table, column: str, rows: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``column`` of ``table`` for each row of ``rows``, matched by key."""
    return table.column(column).take(pc.index_in(keys(rows), value_set=keys(table)))


def all_true(flags: pa.Array) -> bool:
    """Whether every flag is true (none null)."""
    return bool(flags.null_count == 0 and flags.true_count == len(flags))
