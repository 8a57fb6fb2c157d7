"""Property-based fuzzing of the loader: mutated documents, broken files, odd layouts.

Invariants for every batch: read = loaded + already present + rejected; every reject
names one of the input files and gives a reason; every valid document of the batch is
loaded; every document that must be rejected is; nothing raises.  A sample goes
through the real CLI, which must answer with exit codes and messages, never a
traceback.  The cases come from :mod:`tests.reliability` (also the figures script).
The property tests share one DuckDB connection (a new one costs ~40 ms of CPU, more
than a small load), emptied before each example, so each loads into an empty database as
with a connection of its own.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiana.load
from tests import reliability as rel
from tests.conftest import run_kiana

COUNTER = itertools.count()
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def shared() -> Iterator[duckdb.DuckDBPyConnection]:
    """One connection for every example of a property test (see the module docstring)."""
    con = kiana.load.connect(None)
    yield con
    con.close()


#: What a load writes (the views read ``runs`` and ``run_details``).
_TABLES = ("runs", "run_details", "protocols", "environments", "rejects", "warnings", "loads")


def _emptied(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute("; ".join(f"DELETE FROM {table}" for table in _TABLES))
    return con


def _assert_clean(checked: rel.Checked) -> None:
    assert checked.problems == []
    assert checked.lost == [], "valid documents were not loaded"
    assert checked.wrongly_loaded == [], "documents that must be rejected were loaded"


@pytest.mark.heavy
@FUZZ
@given(st.data())
def test_random_batches_keep_every_invariant(
    shared: duckdb.DuckDBPyConnection, data: st.DataObject
) -> None:
    counter, rng = itertools.count(), rel.Drawn(data)  # as rel.fuzz_batch, on `shared`
    cases = [rel.make_case(counter, rng) for _ in range(rng.randint(1, 6))]
    with tempfile.TemporaryDirectory() as tmp:
        checked = rel.check_load(_emptied(shared), rel.write_cases(Path(tmp), cases), cases)
    _assert_clean(checked)


@pytest.mark.heavy
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_loading_a_batch_twice_finds_it_already_present(
    shared: duckdb.DuckDBPyConnection, data: st.DataObject
) -> None:
    counter = itertools.count()
    con = _emptied(shared)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [rel.make_case(counter, rel.Drawn(data)) for _ in range(3)]
        paths = rel.write_cases(Path(tmp), cases)
        first = kiana.load.load(con, paths)
        second = kiana.load.load(con, paths)
    assert second.loaded == 0
    assert second.already_present == first.loaded + first.already_present
    assert second.rejected == first.rejected


@pytest.mark.heavy
@pytest.mark.parametrize("kinds", [("drop",), ("key",), ("number",)])
def test_sweep_of_every_path(kinds: tuple[str, ...], tmp_path: Path) -> None:
    """Each mutation of each path of the seed, between two valid documents."""
    cases = rel.sweep_cases(COUNTER, kinds)
    paths = rel.write_cases(tmp_path, cases)
    con = kiana.load.connect(None)
    try:
        checked = rel.check_load(con, paths, cases)
    finally:
        con.close()
    _assert_clean(checked)
    assert checked.read == sum(c.data.count(b"\n") for c in cases)


@pytest.mark.heavy
def test_full_sweep_of_every_mutation(tmp_path: Path) -> None:
    cases = rel.sweep_cases(COUNTER)
    paths = rel.write_cases(tmp_path, cases)
    con = kiana.load.connect(None)
    try:
        _assert_clean(rel.check_load(con, paths, cases))
    finally:
        con.close()


def _label_doc(key: str) -> dict[str, object]:
    doc = rel.make_document(next(COUNTER))
    doc["run"]["metadata"]["labels"][key] = "v"
    doc["run"]["spec"]["sourceNative"]["metrics"][key] = 1.0
    return doc


@pytest.mark.parametrize("key", ['a"b', "", "$.*", "\\"])
def test_label_and_metric_keys_with_json_path_syntax_load(key: str, tmp_path: Path) -> None:
    """Regression: a key holding a quote (or empty) used to break a JSON path in SQL
    and abort the whole load."""
    path = tmp_path / "k.json"
    path.write_text(json.dumps(_label_doc(key)))
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [path])
    labels = con.execute("SELECT key, value FROM labels").fetchall()
    assert summary.loaded == 1
    assert (key, "v") in labels


@pytest.mark.parametrize("where", ["median", "p20", "p80"])
def test_latency_over_bigint_is_a_reject_not_a_crash(where: str, tmp_path: Path) -> None:
    """Regression: 1e19 ns does not fit the BIGINT *_ns columns; it aborted the load."""
    doc = rel.make_document(next(COUNTER))
    big = 10**19
    if where == "median":
        doc["run"]["spec"]["timing"]["latencyNs"]["median"] = big
        for m in doc["run"]["spec"]["measurements"]:
            m["value"] = big
    else:
        doc["run"]["spec"]["measurements"][0 if where == "p20" else 1]["value"] = big
    good = rel.make_document(next(COUNTER))
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(doc) + "\n" + json.dumps(good) + "\n")
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [path])
    assert (summary.loaded, summary.rejected) == (1, 1)
    assert "too large" in summary.first_rejects[0][2]


@pytest.mark.parametrize("entry", [None, "x", 3, []])
def test_measurement_that_is_not_an_object_is_rejected(entry: object, tmp_path: Path) -> None:
    """Regression: a null or string entry in measurements[] loaded as a NULL row."""
    doc = rel.make_document(next(COUNTER))
    doc["run"]["spec"]["measurements"].append(entry)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [path])
    assert summary.rejected == 1
    assert summary.first_rejects[0][1] == "$.run.spec.measurements[2]"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_kiana("load", *args, timeout=300)


@pytest.mark.heavy
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_cli_answers_with_exit_codes_never_tracebacks(data: st.DataObject) -> None:
    counter = itertools.count()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [rel.make_case(counter, rel.Drawn(data)) for _ in range(4)]
        paths = rel.write_cases(Path(tmp) / "in", cases)
        out = _cli(*map(str, paths), "--db", str(Path(tmp) / "k.duckdb"), "--strict")
    assert "Traceback" not in out.stderr + out.stdout
    rejected = sum(c.min_rejects for c in cases)
    assert out.returncode in ((0, 2) if not rejected else (2,))
    if out.returncode == 2:
        assert "error:" in out.stderr and "hint:" in out.stderr


@pytest.mark.heavy
def test_cli_on_a_database_that_is_not_duckdb(tmp_path: Path) -> None:
    db = tmp_path / "junk.duckdb"
    db.write_bytes(b"this is not a database" * 100)
    out = _cli(str(rel.SEED), "--db", str(db))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "database" in out.stderr


@pytest.mark.heavy
def test_cli_on_a_file_kiana_does_not_read(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    out = _cli(str(path), "--db", str(tmp_path / "k.duckdb"))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and ".jsonl" in out.stderr


_ODD_OBJECT = st.dictionaries(
    st.sampled_from(['a"b', "", "$.*", "\\", "é", "ms_50", "k.k", "[0]"]),
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(2**70), 2**70),
        st.text(max_size=6),
        st.none(),
        st.booleans(),
        st.lists(st.integers(), max_size=2),
    ),
    max_size=5,
)


@pytest.mark.heavy
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labels=_ODD_OBJECT, metrics=_ODD_OBJECT)
def test_label_and_metric_rows_are_json_each_of_the_objects(
    shared: duckdb.DuckDBPyConnection, labels: dict[str, object], metrics: dict[str, object]
) -> None:
    """The labels and sourceNative rows are exactly DuckDB's ``json_each`` of the two
    objects (the loader unnests keys and values instead, which is faster)."""
    doc = rel.make_document(next(COUNTER))
    doc["run"]["metadata"]["labels"] = {**labels, "liger_version": "0.5.0"}
    doc["run"]["spec"]["sourceNative"]["metrics"] = metrics
    text = json.dumps(doc)
    con = shared

    def rows(sql: str, *params: object) -> list[str]:
        # by repr: a value NaN (the string "nan" cast to DOUBLE) is not equal to itself
        return sorted(repr(row) for row in con.execute(sql, list(params)).fetchall())

    summary = kiana.load.load_documents(con, [doc])
    assert summary.loaded == 1
    run = "run_id IN (SELECT run_id FROM runs WHERE load_id = ?)"
    got_labels = rows(f"SELECT key, value FROM labels WHERE {run}", summary.load_id)
    got_metrics = rows(
        f"SELECT metric, value FROM measurements WHERE origin = 'sourceNative' AND {run}",
        summary.load_id,
    )
    want_labels = rows(
        "SELECT key, CASE WHEN type = 'VARCHAR' THEN json_extract_string(value, '$') "
        "ELSE value::VARCHAR END FROM json_each(json_extract(?, '$.run.metadata.labels'))",
        text,
    )
    want_metrics = rows(
        "SELECT key, try_cast(value AS DOUBLE) FROM "
        "json_each(json_extract(?, '$.run.spec.sourceNative.metrics'))",
        text,
    )
    assert got_labels == want_labels
    assert got_metrics == want_metrics
