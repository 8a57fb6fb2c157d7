"""Database safety (``kiana/load/database.py``, ``kiana.commands.common``): no
extension reaches for the network, foreign, SQLite and corrupt files are clear errors,
a failed command removes only a file it created that holds nobody's data, and failures
under a command (disk full, a corrupt block, an interrupt) are messages, not tracebacks."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

import kiana.load
from kiana.commands.common import database_errors, discard_new_database
from kiana.errors import DatabaseError
from kiana.load import database

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "data" / "seeds"


def _loaded(path: Path) -> None:
    con = kiana.load.connect(path)
    try:
        kiana.load.load(con, [str(SEEDS)])
    finally:
        con.close()


def test_extension_autoinstall_and_autoload_are_off() -> None:
    con = kiana.load.connect(None)
    settings = con.execute(
        "SELECT current_setting('autoinstall_known_extensions'), "
        "current_setting('autoload_known_extensions')"
    ).fetchone()
    assert settings == (False, False)


def test_a_sqlite_file_is_refused_without_an_extension(tmp_path: Path) -> None:
    path = tmp_path / "kiana.duckdb"
    sqlite = sqlite3.connect(path)
    sqlite.execute("CREATE TABLE runs (x)")
    sqlite.commit()
    sqlite.close()
    with pytest.raises(DatabaseError, match="a SQLite database, not a DuckDB one"):
        kiana.load.connect(path)
    extensions = Path.home() / ".duckdb" / "extensions"
    assert not list(extensions.rglob("sqlite_scanner*")) if extensions.exists() else True


def test_a_foreign_duckdb_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    other = duckdb.connect(str(path))
    other.execute("CREATE TABLE runs (x INTEGER)")
    other.close()
    with pytest.raises(
        DatabaseError, match=r"a DuckDB database that is not kiana's \(it holds runs\)"
    ):
        kiana.load.connect(path)
    check = duckdb.connect(str(path))
    tables = check.execute("SELECT table_name FROM information_schema.tables").fetchall()
    check.close()
    assert tables == [("runs",)]


def test_a_corrupt_file_header_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    _loaded(path)
    with path.open("r+b") as handle:
        handle.write(os.urandom(8192))
    with pytest.raises(DatabaseError, match="not a DuckDB database file, or a corrupt one"):
        kiana.load.connect(path)


def test_a_corrupt_block_read_under_a_command_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT range AS x, md5(range::VARCHAR) AS y FROM range(300000)")
    con.close()
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(size // 2)
        handle.write(os.urandom(4096))
    reader = duckdb.connect(":memory:", config=database.CONFIG)
    reader.execute(f"ATTACH '{path}' AS c")
    with pytest.raises(DatabaseError, match="the database file is corrupt"), database_errors(path):
        reader.execute("SELECT sum(x), count(DISTINCT y) FROM c.t").fetchall()


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            duckdb.IOException("IO Error: Could not write file: No space left on device"),
            "disk is full",
        ),
        (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), "interrupted"),
        (
            duckdb.OutOfMemoryException(
                "Out of Memory Error: failed to allocate data of size 16.0 MiB"
            ),
            "DuckDB ran out of memory",
        ),
        (duckdb.Error("Something else\nline two"), "the database failed: Something else"),
    ],
)
def test_failures_under_a_command_are_messages(error: Exception, message: str) -> None:
    with pytest.raises(DatabaseError, match=message), database_errors("k.duckdb"):
        raise error


def test_other_errors_pass_through() -> None:
    with pytest.raises(ZeroDivisionError), database_errors():
        raise ZeroDivisionError


def test_a_failed_command_removes_a_new_empty_file_it_created(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    kiana.load.connect(path).close()
    assert database.created(path)
    assert discard_new_database(path) is True
    assert not path.exists()


def test_a_file_with_data_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    _loaded(path)
    assert database.created(path) and discard_new_database(path) is False
    assert kiana.load.connect(path, read_only=True).execute("SELECT count(*) FROM runs").fetchone()


@pytest.mark.heavy
def test_a_file_this_process_did_not_create_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "theirs.duckdb"
    subprocess.run(
        [sys.executable, "-c", f"import kiana.load; kiana.load.connect({str(path)!r}).close()"],
        check=True,
    )
    assert not database.created(path) and discard_new_database(path) is False
    assert path.exists()


@pytest.mark.heavy
def test_two_loads_into_one_new_file_keep_the_first_loads_data(tmp_path: Path) -> None:
    """A holds the new file and loads; B (this process) fails on the lock and discards:
    A's data survives."""
    path = tmp_path / "shared.duckdb"
    holder = textwrap.dedent(
        f"""
        import sys, kiana.load
        con = kiana.load.connect({str(path)!r})
        kiana.load.load(con, [{str(SEEDS)!r}])
        print("loaded", flush=True)
        sys.stdin.read()
        con.close()
        """
    )
    first = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "loaded"
        with pytest.raises(DatabaseError, match="in use by another process"):
            kiana.load.connect(path)
        assert discard_new_database(path) is False
    finally:
        assert first.stdin is not None
        first.stdin.close()
        first.wait(timeout=60)
    con = kiana.load.connect(path, read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    con.close()


@pytest.mark.heavy
def test_a_file_another_process_wrote_after_us_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    kiana.load.connect(path).close()
    subprocess.run(
        [sys.executable, "-c",
         f"import kiana.load as l; c = l.connect({str(path)!r}); l.load(c, [{str(SEEDS)!r}]); c.close()"],
        check=True,
    )  # fmt: skip
    assert database.created(path) and discard_new_database(path) is False
    assert path.exists()
