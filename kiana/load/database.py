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

Safety (``tests/SECURITY.md``): DuckDB's extension autoinstall and autoload are off
(:data:`CONFIG`: a SQLite file given as ``--db`` would otherwise make DuckDB download
its SQLite extension); a file that is not DuckDB's, or a DuckDB file holding tables that
are not kiana's, is a :class:`~kiana.errors.DatabaseError` before anything is written
to it.  :func:`discard` removes a file only when this process created it and it holds
no data (decided under DuckDB's lock on it): a failed command never deletes what
another command wrote.
"""

from __future__ import annotations

import os
import threading
import weakref

import duckdb

from kiana.errors import DatabaseError
from kiana.load.schema import check_schema, ensure_schema, needs_migration

__all__ = [
    "CONFIG",
    "ROW_GROUP_ROWS",
    "connect",
    "created",
    "default_memory_limit",
    "discard",
    "restore_memory_limit",
]

PathLike = str | os.PathLike[str]

#: Rows per row group of a database file kiana opens (DuckDB's default: 122,880).  At
#: 32,768 a load of 100k documents leaves its COMMIT almost nothing (the file grows by
#: ~10%: 24 -> 27 MB for 100k runs).
ROW_GROUP_ROWS = 32_768

#: The catalog name of the attached file.
_NAME = "kiana"

#: Every DuckDB instance kiana opens: no extension is installed or loaded behind its back
#: (no network, and no code kiana did not ask for).
CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}

#: DuckDB's own ``memory_limit`` as ``current_setting`` prints it (``18.8 GiB``), read
#: from the first instance this process opened, before anything could set it.
_DEFAULT_MEMORY_LIMIT: list[str] = []

#: Resolved paths of the database files this process created (attached while absent).
_CREATED: set[str] = set()

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
        con = _fresh() if db is None else _file(target, read_only)
    except duckdb.Error as exc:
        raise open_error(target, exc) from None
    con.execute("SET preserve_insertion_order = false")
    # A load appends in one transaction: DuckDB writes each full row group to the file at
    # once instead of buffering five first (1M JSONL: 1,744 -> 1,284 MiB peak, 21.8 ->
    # 19.0 s; bench/README.md).
    con.execute("SET write_buffer_row_group_count = 1")
    try:
        if db is not None:
            _refuse_foreign(con, target)
        if read_only and needs_migration(con):
            con.close()  # an older kiana's file: upgraded once, then opened as asked
            connect(db).close()
            return connect(db, read_only=True)
        (check_schema if read_only else ensure_schema)(con)
    except duckdb.Error as exc:
        con.close()
        raise open_error(target, exc) from None
    except BaseException:
        con.close()
        raise
    return con


def _fresh() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB instance (the first one tells DuckDB's default limit)."""
    con = duckdb.connect(":memory:", config=CONFIG)
    if not _DEFAULT_MEMORY_LIMIT:
        _DEFAULT_MEMORY_LIMIT.append(_memory_limit(con))
    return con


def _memory_limit(con: duckdb.DuckDBPyConnection) -> str:
    ((limit,),) = con.execute("SELECT current_setting('memory_limit')").fetchall()
    return str(limit)


def default_memory_limit(con: duckdb.DuckDBPyConnection) -> str | None:
    """DuckDB's ``memory_limit`` on ``con`` when it is DuckDB's default (nobody set it,
    e.g. with ``--memory-limit``), else None."""
    limit = _memory_limit(con)
    return limit if limit in _DEFAULT_MEMORY_LIMIT else None


def restore_memory_limit(con: duckdb.DuckDBPyConnection, before: str) -> None:
    """``memory_limit`` back to ``before``, the text ``current_setting`` printed.  DuckDB
    prints the limit cut to a tenth of its unit, so setting that text again lowers it by
    up to a tenth each round (``18.8 GiB`` reads back as ``18.7 GiB``): DuckDB's default
    is reset instead, and any other limit set half a tenth above its text, which reads
    back as that text (``2.75 GiB`` as ``2.7 GiB``)."""
    if before in _DEFAULT_MEMORY_LIMIT:
        con.execute("RESET memory_limit")
        return
    number, _, unit = before.partition(" ")
    con.execute(
        f"SET memory_limit = '{number}5 {unit}'"
        if "." in number
        else f"SET memory_limit = '{before}'"
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def open_error(target: str, exc: BaseException) -> DatabaseError:
    """A clear :class:`DatabaseError` for DuckDB's error opening ``target``."""
    from kiana.safe import terminal

    text = _first_line(exc)
    name = terminal(target)
    if "lock" in text.lower():
        return DatabaseError(
            f"{name}: the database is in use by another process",
            hint="wait for the other kiana command to finish, or use another --db file",
        )
    if _is_sqlite(target):
        return DatabaseError(
            f"{name}: a SQLite database, not a DuckDB one", hint="give a kiana (DuckDB) --db file"
        )
    if "not a valid DuckDB database" in text or "Corrupt" in text:
        return DatabaseError(
            f"{name}: not a DuckDB database file, or a corrupt one",
            hint="give a new --db file name (kiana load PATH --db NEW.duckdb)",
        )
    if isinstance(exc, duckdb.IOException):
        return DatabaseError(
            f"{name}: cannot open the database ({terminal(text)})",
            hint="check the path, its permissions and the free disk space",
        )
    return DatabaseError(
        f"{name}: not a usable DuckDB database ({terminal(text)})", hint="give a new --db file name"
    )


def _is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _refuse_foreign(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """A :class:`DatabaseError` for a DuckDB file whose tables are not kiana's (kiana
    would add its own beside them, or fail on a table of the same name)."""
    tables = _table_names(con, "table_catalog = current_database()")
    if tables and "kiana_meta" not in tables:
        from kiana.safe import terminal

        shown = ", ".join(terminal(t)[:40] for t in sorted(tables)[:5])
        raise DatabaseError(
            f"{terminal(target)}: a DuckDB database that is not kiana's (it holds {shown})",
            hint="give a new --db file name: kiana never writes into another program's database",
        )


def _table_names(con: duckdb.DuckDBPyConnection, where: str) -> set[str]:
    """The names of the tables ``where`` (a condition on information_schema.tables)."""
    sql = f"SELECT table_name FROM information_schema.tables WHERE {where}"
    return {str(name) for (name,) in con.execute(sql).fetchall()}


def created(db: PathLike) -> bool:
    """Whether this process created the database file ``db``."""
    return os.path.realpath(os.fspath(db)) in _CREATED


def discard(db: PathLike) -> bool:
    """Remove ``db`` (and its ``.wal``) when this process created it and it holds no
    data: no run, no reject, no remembered repository, no load that read anything.
    Decided while holding DuckDB's lock on it, so no other process writes to it
    meanwhile; a file another process has open, or one with anyone's data, is left
    alone.  Whether it was removed."""
    path = os.fspath(db)
    key = os.path.realpath(path)
    if key not in _CREATED:
        return False
    con = duckdb.connect(":memory:", config=CONFIG)
    try:
        try:
            con.execute(f"ATTACH {_quoted(path)} AS doomed")
        except duckdb.Error as exc:
            if "lock" in str(exc).lower() or "already attached" in str(exc):
                return False
            # Not a database (a load that failed writing its first block): nobody's data.
            return _unlink(path, key)
        if _holds_data(con):
            return False
        return _unlink(path, key)
    finally:
        con.close()


def _kiana_tables() -> list[str]:
    """The tables kiana's schema creates (:data:`kiana.load.schema.DDL`)."""
    import re

    from kiana.load.schema import DDL

    return re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", DDL)


def _holds_data(con: duckdb.DuckDBPyConnection) -> bool:
    tables = _table_names(con, "table_catalog = 'doomed' AND table_type = 'BASE TABLE'")
    if tables - set(_kiana_tables()):
        return True
    # A load that read nothing (an empty folder) leaves a loads row but no one's data.
    checks = {"runs": "true", "rejects": "true", "repositories": "true", "loads": "read > 0"}
    for table, where in checks.items():
        if table in tables:
            query = f"SELECT count(*) FROM doomed.{table} WHERE {where}"
            (count,) = con.execute(query).fetchone() or (0,)
            if count:
                return True
    return False


def _unlink(path: str, key: str) -> bool:
    _CREATED.discard(key)
    removed = False
    for leftover in (path, path + ".wal"):
        try:
            os.unlink(leftover)
            removed = True
        except FileNotFoundError:
            continue
        except OSError:
            return False
    return removed


def _quoted(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


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
    con = _fresh()
    mode = ", READ_ONLY" if read_only else ""
    existed = os.path.lexists(path)
    try:
        con.execute(f"ATTACH {_quoted(path)} AS {_NAME} (ROW_GROUP_SIZE {ROW_GROUP_ROWS}{mode})")
        con.execute(f"USE {_NAME}")
        if not existed:
            _CREATED.add(os.path.realpath(path))
    except duckdb.Error as exc:
        con.close()
        if "already attached" not in str(exc):
            raise
        # Opened by other code of this process through duckdb.connect: share it as that does.
        plain = duckdb.connect(path, read_only=read_only)
        (catalog,) = plain.execute("SELECT current_database()").fetchall()[0]
        return plain, str(catalog)
    return con, _NAME
