"""Loads are incremental, idempotent and all-or-nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.errors
import kiana.load
from kiana.load import LoadLimits
from tests.conftest import SEEDS, write_json, write_jsonl

Doc = dict[str, Any]


def _versions(seed: Callable[[], Doc], n: int) -> list[Doc]:
    docs = []
    for i in range(n):
        doc = seed()
        doc["run"]["metadata"]["labels"]["liger_version"] = f"0.{i}.0"
        docs.append(doc)
    return docs


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


def test_second_load_adds_only_new_documents(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    docs = _versions(seed, 3)
    write_jsonl(tmp_path / "a.jsonl", docs[:2])
    kiana.load.load(con, [tmp_path / "a.jsonl"])
    write_jsonl(tmp_path / "b.jsonl", docs)
    summary = kiana.load.load(con, [tmp_path / "b.jsonl"])
    assert (summary.read, summary.loaded, summary.already_present) == (3, 1, 2)
    assert _count(con, "runs") == 3


def test_same_document_under_another_name_and_layout_is_stored_once(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    doc = seed()
    (tmp_path / "pretty.json").write_text(json.dumps(doc, indent=4))
    write_jsonl(tmp_path / "copy.jsonl", [doc])
    write_json(tmp_path / "array.json", [doc])
    summary = kiana.load.load(con, [tmp_path])
    assert (summary.read, summary.loaded, summary.already_present) == (3, 1, 2)
    assert _count(con, "measurements") == 6 and _count(con, "labels") == 1


def test_a_run_repeated_in_a_later_batch_of_one_load_is_stored_once(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    """Runs this load stored are not scanned again (kiana.load.store.Seen keeps them)."""
    docs = _versions(seed, 5)
    write_jsonl(tmp_path / "a.jsonl", [*docs, docs[0], docs[4], docs[2]])
    summary = kiana.load.load(con, [tmp_path / "a.jsonl"], limits=LoadLimits(batch_records=2))
    assert (summary.read, summary.loaded, summary.already_present) == (8, 5, 3)
    assert con.execute("SELECT count(DISTINCT run_id), count(*) FROM runs").fetchall() == [(5, 5)]


def test_reloading_changes_nothing(con: duckdb.DuckDBPyConnection) -> None:
    kiana.load.load(con, [SEEDS])
    before = {
        t: _count(con, t) for t in ("runs", "measurements", "labels", "protocols", "environments")
    }
    summary = kiana.load.load(con, [SEEDS])
    assert summary.loaded == 0 and summary.already_present == 2
    assert before == {t: _count(con, t) for t in before}


def test_read_equals_loaded_plus_present_plus_rejected(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    docs = _versions(seed, 4)
    write_jsonl(tmp_path / "x.jsonl", [*docs, docs[0], {"bad": 1}])
    s = kiana.load.load(con, [tmp_path / "x.jsonl"])
    assert s.read == s.loaded + s.already_present + s.rejected == 6


@pytest.mark.heavy
def test_interrupted_load_leaves_nothing(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    """Interrupted after its second batch is stored: nothing of it stays."""
    write_jsonl(tmp_path / "x.jsonl", _versions(seed, 5))
    limits = LoadLimits(batch_records=2, first_batch_records=2)
    stored: list[int] = []

    def interrupting(files: int, total: int, documents: int) -> None:
        stored.append(documents)
        if len(stored) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kiana.load.load(con, [tmp_path / "x.jsonl"], limits=limits, progress=interrupting)
    assert stored == [2, 4]
    assert _count(con, "runs") == 0 and _count(con, "loads") == 0
    assert kiana.load.load(con, [tmp_path / "x.jsonl"], limits=limits).loaded == 5


def test_file_database_persists_between_connections(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    first = kiana.load.connect(db)
    kiana.load.load(first, [SEEDS])
    first.close()
    second = kiana.load.connect(db)
    assert _count(second, "runs") == 2
    second.close()


def test_folders_are_read_recursively_and_other_files_ignored(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    docs = _versions(seed, 2)
    write_json(tmp_path / "a" / "b" / "deep.json", docs[0])
    write_jsonl(tmp_path / "a" / "top.ndjson", [docs[1]])
    (tmp_path / "a" / "README.md").write_text("not a document")
    assert kiana.load.load(con, [tmp_path]).loaded == 2


def test_globs(tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]) -> None:
    docs = _versions(seed, 3)
    for i, doc in enumerate(docs):
        write_json(tmp_path / "d" / f"run{i}.json", doc)
    assert kiana.load.load(con, [str(tmp_path / "**" / "run[01].json")]).loaded == 2


def test_missing_path_is_an_error_before_anything_is_written(
    tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    from kiana.errors import InputError

    with pytest.raises(InputError, match="no such file"):
        kiana.load.load(con, [SEEDS, tmp_path / "nope"])
    assert _count(con, "runs") == 0


def test_documents_in_memory_load_with_numbered_sources(
    con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    docs: list[Any] = [*_versions(seed, 2), {"not": "a document"}]
    summary = kiana.load.load_documents(con, docs, source="importer")
    assert (summary.loaded, summary.rejected) == (2, 1)
    assert con.execute("SELECT source FROM rejects").fetchall() == [("importer:3",)]


def test_two_loads_at_once_in_one_process_store_each_run_once(
    tmp_path: Path, seed: Callable[[], Doc]
) -> None:
    # Two connections of one process share the database file; their loads take turns,
    # so the second sees the first's runs as already present.
    import threading

    write_jsonl(tmp_path / "a.jsonl", _versions(seed, 40))
    db = tmp_path / "k.duckdb"
    first, second = kiana.load.connect(db), kiana.load.connect(db)
    summaries: list[kiana.load.LoadSummary] = []

    def run(con: duckdb.DuckDBPyConnection) -> None:
        summaries.append(kiana.load.load(con, [tmp_path / "a.jsonl"]))

    threads = [threading.Thread(target=run, args=(c,)) for c in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(s.loaded for s in summaries) == [0, 40]
    assert _count(first, "runs") == 40
    assert first.execute("SELECT count(DISTINCT run_id) FROM runs").fetchall()[0][0] == 40


def test_a_database_of_another_schema_version_is_refused_untouched(tmp_path: Path) -> None:
    """Schema 2 keeps the details in ``run_details`` (``measurements`` and ``labels`` are
    views): a database of schema 1 is refused, and nothing is created in it."""
    path = tmp_path / "old.duckdb"
    old = duckdb.connect(str(path))
    old.execute("CREATE TABLE kiana_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    old.execute("INSERT INTO kiana_meta VALUES ('schema_version', '1')")
    old.execute("CREATE TABLE measurements (run_id VARCHAR)")
    old.close()
    with pytest.raises(kiana.errors.DatabaseError, match="schema version 1"):
        kiana.load.connect(path)
    old = duckdb.connect(str(path), read_only=True)
    tables = {
        r[0] for r in old.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    old.close()
    assert tables == {"kiana_meta", "measurements"}


def test_details_read_in_long_form(con: duckdb.DuckDBPyConnection) -> None:
    """One ``run_details`` row per run; the views give every number and label."""
    kiana.load.load(con, [SEEDS])
    assert _count(con, "run_details") == _count(con, "runs") == 2
    rows = con.execute(
        "SELECT origin, metric, statistic, unit FROM measurements WHERE origin <> 'sourceNative' "
        "ORDER BY ALL"
    ).fetchall()
    assert ("timing", "latency", "median", "ns") in rows
    assert con.execute("SELECT DISTINCT key FROM labels").fetchall() == [("liger_version",)]
