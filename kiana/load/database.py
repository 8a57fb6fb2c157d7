"""Opening a kiana database: :func:`connect`.

A database file is attached to a fresh in-memory DuckDB, as the connection's default
database, with :data:`ROW_GROUP_ROWS` rows per row group (an option of ``ATTACH``
only).  DuckDB writes a load's full row groups to the file while the load goes on, so
the COMMIT after the last batch has little left to compress and write (100k JSONL:
0.50 -> 0.03 s; bench/README.md).

DuckDB lets one process attach a file once.  Every connection :func:`connect` hands out
for a file therefore shares one DuckDB instance, as ``duckdb.connect(path)`` would: a
second :func:`connect` of an open file is a new cursor of the first (see
:func:`_shared`), and, as with DuckDB's ``con.cursor()``, closing the first closes it
too.  A file that other code of the process opened with ``duckdb.connect`` is opened
the same way, with DuckDB's row groups.
"""

from __future__ import annotations

import os
import threading
import weakref

import duckdb

from kiana.errors import DatabaseError
from kiana.load.schema import check_schema, ensure_schema

__all__ = ["ROW_GROUP_ROWS", "connect"]

PathLike = str | os.PathLike[str]

#: Rows per row group of a database file kiana opens (DuckDB's default: 122,880).  At
#: 32,768 a load of 100k documents leaves its COMMIT almost nothing (the file grows by
#: ~10%: 24 -> 27 MB for 100k runs).
ROW_GROUP_ROWS = 32_768

#: The catalog name of the attached file.
_NAME = "kiana"

#: The connections handed out, by resolved file path (weakly: a connection that is
#: closed or collected no longer keeps its instance reachable from here).
_OPEN: dict[str, list[tuple[weakref.ref[duckdb.DuckDBPyConnection], str]]] = {}
_OPEN_LOCK = threading.Lock()


def connect(db: PathLike | None = None, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (or create) a kiana database; ``None`` is a new in-memory database (never
    read-only).  A database opened ``read_only`` must be one kiana wrote.  A file that
    is open in this process already gives a cursor of its first connection (closed
    with it)."""
    target = ":memory:" if db is None else os.fspath(db)
    read_only = read_only and db is not None
    try:
        con = duckdb.connect(target) if db is None else _file(target, read_only)
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise DatabaseError(
                f"{target}: the database is in use by another process",
                hint="wait for the other kiana command to finish, or use another --db file",
            ) from exc
        raise DatabaseError(
            f"{target}: cannot open the database ({text})",
            hint="check the path, its permissions and the free disk space",
        ) from exc
    except duckdb.Error as exc:
        raise DatabaseError(
            f"{target}: not a usable DuckDB database ({exc})", hint="give a new --db file name"
        ) from exc
    con.execute("SET preserve_insertion_order = false")
    # A load appends in one transaction: DuckDB writes each full row group to the file at
    # once instead of buffering five first (1M JSONL: 1,744 -> 1,284 MiB peak, 21.8 ->
    # 19.0 s; bench/README.md).
    con.execute("SET write_buffer_row_group_count = 1")
    try:
        (check_schema if read_only else ensure_schema)(con)
    except BaseException:
        con.close()
        raise
    return con


def _file(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    key = os.path.realpath(path)
    with _OPEN_LOCK:
        shared = _shared(key)
        con, catalog = shared if shared is not None else _attach(path, read_only)
        _OPEN.setdefault(key, []).append((weakref.ref(con), catalog))
        return con


def _shared(key: str) -> tuple[duckdb.DuckDBPyConnection, str] | None:
    """A new cursor (and its catalog) on the instance of a connection to ``key`` that
    is still open, if any; forgets the connections closed since."""
    live = []
    found = None
    for ref, catalog in _OPEN.pop(key, []):
        con = ref()
        if con is None:
            continue
        try:
            cursor = con.cursor() if found is None else None
        except duckdb.Error:  # closed
            continue
        live.append((ref, catalog))
        if cursor is not None:
            cursor.execute(f"USE {catalog}")
            found = (cursor, catalog)
    if live:
        _OPEN[key] = live
    return found


def _attach(path: str, read_only: bool) -> tuple[duckdb.DuckDBPyConnection, str]:
    con = duckdb.connect(":memory:")
    quoted = "'" + path.replace("'", "''") + "'"
    mode = ", READ_ONLY" if read_only else ""
    try:
        con.execute(f"ATTACH {quoted} AS {_NAME} (ROW_GROUP_SIZE {ROW_GROUP_ROWS}{mode})")
        con.execute(f"USE {_NAME}")
    except duckdb.Error as exc:
        con.close()
        if "already attached" not in str(exc):
            raise
        # Opened by other code of this process through duckdb.connect: share it as that does.
        plain = duckdb.connect(path, read_only=read_only)
        (catalog,) = plain.execute("SELECT current_database()").fetchall()[0]
        return plain, str(catalog)
    return con, _NAME
