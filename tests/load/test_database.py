"""kiana.load.database: a file attached with kiana's row groups, one instance per file."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import kiana.errors
import kiana.load
from kiana.load.database import ROW_GROUP_ROWS
from tests.conftest import SEEDS


def _runs(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("SELECT count(*) FROM runs").fetchall()[0][0])


def test_a_file_is_the_default_database(tmp_path: Path) -> None:
    con = kiana.load.connect(tmp_path / "k.duckdb")
    (database,) = con.execute("SELECT current_database()").fetchall()[0]
    (path,) = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()[0]
    con.close()
    assert database == "kiana" and Path(path) == tmp_path / "k.duckdb"


def test_rows_are_grouped_by_kianas_row_group_size(tmp_path: Path) -> None:
    con = kiana.load.connect(tmp_path / "k.duckdb")
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(?)", [2 * ROW_GROUP_ROWS + 1])
    (groups,) = con.execute(
        "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('t')"
    ).fetchall()[0]
    con.close()
    assert groups == 3


def test_two_connections_to_one_file_share_it(tmp_path: Path) -> None:
    first = kiana.load.connect(tmp_path / "k.duckdb")
    second = kiana.load.connect(tmp_path / "k.duckdb")
    kiana.load.load(first, [SEEDS])
    assert _runs(second) == _runs(first) > 0
    second.close()
    assert _runs(first) > 0
    first.close()


def test_the_second_connection_is_a_cursor_of_the_first(tmp_path: Path) -> None:
    """As with DuckDB's ``con.cursor()``: closing the first closes the second."""
    first = kiana.load.connect(tmp_path / "k.duckdb")
    second = kiana.load.connect(tmp_path / "k.duckdb")
    first.close()
    with pytest.raises(duckdb.ConnectionException):
        _runs(second)
    third = kiana.load.connect(tmp_path / "k.duckdb")
    assert _runs(third) == 0
    third.close()


def test_a_closed_file_opens_again_and_keeps_its_runs(tmp_path: Path) -> None:
    con = kiana.load.connect(tmp_path / "k.duckdb")
    loaded = kiana.load.load(con, [SEEDS]).loaded
    con.close()
    again = kiana.load.connect(tmp_path / "k.duckdb", read_only=True)
    assert _runs(again) == loaded
    again.close()


def test_a_file_other_code_opened_is_shared(tmp_path: Path) -> None:
    plain = duckdb.connect(str(tmp_path / "k.duckdb"))
    con = kiana.load.connect(tmp_path / "k.duckdb")
    kiana.load.load(con, [SEEDS])
    assert _runs(plain) == _runs(con) > 0
    con.close()
    plain.close()


def test_a_file_that_is_no_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("not a database\n" * 100)
    with pytest.raises(kiana.errors.DatabaseError, match=r"notes\.duckdb"):
        kiana.load.connect(path)
