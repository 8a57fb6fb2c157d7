"""Schema version 2 -> 3: a database an older kiana wrote is upgraded in place and read
as that kiana read it (every run Liger's, ``liger`` and ``liger_*`` under test), never
misread; a database of a newer schema is refused with a hint, untouched.

The version-2 database is ``data/`` as the loader at fb16d5a (the last of schema 2)
wrote it: loaded by this loader, then its ``runs`` put back into the version-2 table
(``SCHEMA_2_DDL``, as fb16d5a's ``EXPORT DATABASE`` gives it), whose rows are checked
against the digest of the ``runs`` fb16d5a wrote for ``data/`` (``git archive fb16d5a
kiana`` into a folder, ``kiana.load.load(con, ["data"])`` with it first on
``sys.path``, from the repository root; the digest of ``tests.load.test_same_tables``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest

import kiana.load
from kiana.errors import DatabaseError
from kiana.load.schema import RUN_COLUMNS, SCHEMA_VERSION
from tests.conftest import ROOT
from tests.load.test_same_tables import SCHEMA_2_RUNS, _digest

#: ``runs`` of schema version 2 (fb16d5a's ``EXPORT DATABASE``).
SCHEMA_2_DDL = (
    "CREATE TABLE runs(run_id VARCHAR NOT NULL, partition_id VARCHAR NOT NULL, "
    '"family" VARCHAR NOT NULL, kernel VARCHAR NOT NULL, pass VARCHAR NOT NULL, provider '
    "VARCHAR NOT NULL, workload VARCHAR NOT NULL, gpu VARCHAR NOT NULL, vendor VARCHAR NOT "
    "NULL, product VARCHAR NOT NULL, form_factor VARCHAR, architecture VARCHAR, "
    "liger_version VARCHAR NOT NULL, observed_at TIMESTAMP NOT NULL, status VARCHAR NOT NULL, "
    "metric VARCHAR NOT NULL, unit VARCHAR NOT NULL, median DOUBLE, p20 DOUBLE, p80 DOUBLE, "
    "median_ns BIGINT, p20_ns BIGINT, p80_ns BIGINT, protocol_digest VARCHAR NOT NULL, "
    "workload_digest VARCHAR NOT NULL, environment_digest VARCHAR NOT NULL, "
    "implementation_digest VARCHAR NOT NULL, benchmark VARCHAR NOT NULL, external_id VARCHAR "
    'NOT NULL, "name" VARCHAR, title VARCHAR, "source" VARCHAR NOT NULL, load_id INTEGER NOT '
    "NULL)"
)
#: The rows of ``runs`` that the loader at fb16d5a wrote for ``data/`` (sorted, hashed).
SCHEMA_2_RUNS_DIGEST = (1758, "3886990c69b1e5d995506442393b0c947b177b0257bfa7a54bac764b82240fe7")


def _load_data(con: duckdb.DuckDBPyConnection) -> None:
    here = os.getcwd()
    try:
        os.chdir(ROOT)  # relative paths: the runs' source columns name data/...
        kiana.load.load(con, ["data"])
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def schema_2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("schema2") / "v2.duckdb"
    con = kiana.load.connect(path)
    _load_data(con)
    con.execute("ALTER TABLE runs RENAME TO runs_3")
    con.execute(SCHEMA_2_DDL)
    con.execute(f"INSERT INTO runs SELECT {SCHEMA_2_RUNS} FROM runs_3 ORDER BY load_id")
    con.execute("DROP TABLE runs_3")
    con.execute("UPDATE kiana_meta SET value = '2' WHERE key = 'schema_version'")
    assert _digest(con, "runs", "*") == SCHEMA_2_RUNS_DIGEST
    con.close()
    return path


@pytest.fixture
def old(schema_2: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "old.duckdb"
    shutil.copy(schema_2, copy)
    return copy


def _fresh() -> duckdb.DuckDBPyConnection:
    con = kiana.load.connect(None)
    _load_data(con)
    return con


def _meta(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as con:
        return str(con.execute("SELECT value FROM kiana_meta").fetchall()[0][0])


@pytest.mark.heavy
def test_a_schema_2_database_is_migrated_to_what_a_fresh_load_writes(old: Path) -> None:
    con = kiana.load.connect(old)
    try:
        assert con.execute("SELECT value FROM kiana_meta").fetchall() == [(str(SCHEMA_VERSION),)]
        columns = [c for (c,) in con.execute("SELECT column_name FROM (DESCRIBE runs)").fetchall()]
        assert columns == [name for name, _ in RUN_COLUMNS]
        fresh = _fresh()
        for table in ("runs", "run_details", "measurements", "labels"):
            assert _digest(con, table, "*") == _digest(fresh, table, "*"), table
        fresh.close()
    finally:
        con.close()


def test_migrated_runs_are_liger_s_with_liger_under_test(old: Path) -> None:
    con = kiana.load.connect(old)
    try:
        roles = con.execute(
            "SELECT DISTINCT harness, provider, role FROM runs ORDER BY provider"
        ).fetchall()
    finally:
        con.close()
    assert {h for h, _, _ in roles} == {"liger-kernel-bench"}
    assert {p: r for _, p, r in roles} == {
        "huggingface": "baseline",
        "liger": "subject",
        "torch_compile": "baseline",
    }


def test_a_read_only_open_migrates_then_reads(old: Path) -> None:
    con = kiana.load.connect(old, read_only=True)
    try:
        assert con.execute("SELECT count(*), count(version) FROM runs").fetchall() == [(1758, 1758)]
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("DELETE FROM runs")
    finally:
        con.close()
    assert _meta(old) == str(SCHEMA_VERSION)


def test_a_database_of_a_newer_schema_is_refused_untouched(old: Path) -> None:
    with duckdb.connect(str(old)) as con:
        con.execute("UPDATE kiana_meta SET value = '4' WHERE key = 'schema_version'")
    before = old.read_bytes()
    for read_only in (False, True):
        with pytest.raises(DatabaseError, match="schema version 4") as caught:
            kiana.load.connect(old, read_only=read_only)
        assert "newer kiana" in (caught.value.hint or "")
    assert old.read_bytes() == before


def test_a_database_of_an_older_unknown_schema_is_refused(old: Path) -> None:
    with duckdb.connect(str(old)) as con:
        con.execute("UPDATE kiana_meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(DatabaseError, match="schema version 1") as caught:
        kiana.load.connect(old)
    assert "new database file" in (caught.value.hint or "")
    assert _meta(old) == "1"


def test_the_migration_keeps_the_stored_order_of_the_runs(old: Path) -> None:
    with duckdb.connect(str(old)) as con:
        before = [r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()]
    con = kiana.load.connect(old)
    try:
        after = [r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()]
    finally:
        con.close()
    assert after == before
