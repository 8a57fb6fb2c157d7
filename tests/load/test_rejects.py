"""Every kind of bad input becomes a reject row naming the source, the JSON path and
why, and never costs the good documents beside it."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.load
from tests.conftest import write_json, write_jsonl

Doc = dict[str, Any]


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _drop(path: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[key]
        del node[last]

    return mutate


CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    ("missing median", _drop("run.spec.timing"), "$.run.spec.timing.latencyNs.median", "missing"),
    (
        "median as string",
        _set("run.spec.timing.latencyNs.median", "178816"),
        "$.run.spec.timing.latencyNs.median",
        "must be a number",
    ),
    (
        "negative median",
        _set("run.spec.timing.latencyNs.median", -5),
        "$.run.spec.timing.latencyNs.median",
        "positive",
    ),
    (
        "zero median",
        _set("run.spec.timing.latencyNs.median", 0),
        "$.run.spec.timing.latencyNs.median",
        "positive",
    ),
    (
        "huge median",
        _set("run.spec.timing.latencyNs.median", 1e400),
        "$.run.spec.timing.latencyNs.median",
        "finite",
    ),
    (
        "fractional ns",
        _set("run.spec.timing.latencyNs.median", 178816.5),
        "$.run.spec.timing.latencyNs.median",
        "whole number",
    ),
    (
        "p20 above median",
        _set("run.spec.measurements.0.value", 178817),
        "$.run.spec.measurements",
        "p20",
    ),
    (
        "median above p80",
        _set("run.spec.measurements.1.value", 178815),
        "$.run.spec.measurements",
        "above p80",
    ),
    (
        "p20 value a string",
        _set("run.spec.measurements.0.value", "x"),
        "$.run.spec.measurements[0]",
        "finite number",
    ),
    (
        "measurements not a list",
        _set("run.spec.measurements", {"p20": 1}),
        "$.run.spec.measurements",
        "array",
    ),
    (
        "unknown apiVersion",
        _set("run.apiVersion", "kernelindex.dev/v2"),
        "$.run.apiVersion",
        "unknown apiVersion",
    ),
    ("missing apiVersion", _drop("run.apiVersion"), "$.run.apiVersion", "missing"),
    ("wrong kind", _set("run.kind", "Benchmark"), "$.run.kind", "BenchmarkRun"),
    ("status a number", _set("run.spec.status", 1), "$.run.spec.status", "must be a string"),
    (
        "missing version",
        _drop("run.metadata.labels.liger_version"),
        "$.run.metadata.labels.liger_version",
        "Liger release",
    ),
    (
        "bad observedAt",
        _set("run.spec.observedAt", "yesterday"),
        "$.run.spec.observedAt",
        "ISO-8601",
    ),
    (
        "short externalId",
        _set("run.spec.sourceNative.externalId", "layer_norm/backward/x"),
        "$.run.spec.sourceNative.externalId",
        "externalId must be",
    ),
    (
        "externalId disagrees",
        _set("run.spec.sourceNative.benchmark", "rms_norm/backward"),
        "$.run.spec.sourceNative.externalId",
        "but benchmark is",
    ),
    (
        "bad digest",
        _set("run.spec.workloadDigest", "md5:abc"),
        "$.run.spec.workloadDigest",
        "sha256",
    ),
    (
        "missing family",
        _drop("protocol.spec.comparability.family"),
        "$.protocol.spec.comparability.family",
        "family",
    ),
    (
        "missing product",
        _drop("environment.spec.hardware.product"),
        "$.environment.spec.hardware.product",
        "missing",
    ),
    ("run not an object", _set("run", [1, 2]), "$.run", "must be a JSON object"),
    ("spec not an object", _set("run.spec", "x"), "$.run.spec", "must be a JSON object"),
    (
        "hardware missing",
        _drop("environment.spec.hardware"),
        "$.environment.spec.hardware",
        "object",
    ),
]


@pytest.mark.heavy
@pytest.mark.parametrize(("name", "mutate", "path", "reason"), CASES, ids=[c[0] for c in CASES])
def test_bad_field_is_rejected_with_path_and_reason(
    tmp_path: Path,
    con: duckdb.DuckDBPyConnection,
    seed: Callable[[], Doc],
    name: str,
    mutate: Callable[[Doc], None],
    path: str,
    reason: str,
) -> None:
    bad = seed()
    mutate(bad)
    file = write_json(tmp_path / "bad.json", bad)
    summary = kiana.load.load(con, [file])
    assert (summary.read, summary.loaded, summary.rejected) == (1, 0, 1)
    rows = con.execute("SELECT source, json_path, reason FROM rejects").fetchall()
    assert rows[0][0] == str(file)
    assert rows[0][1] == path
    assert reason in rows[0][2]


def _load_file(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, name: str, data: bytes
) -> list[tuple[Any, ...]]:
    file = tmp_path / name
    file.write_bytes(data)
    kiana.load.load(con, [file])
    return con.execute("SELECT source, reason FROM rejects").fetchall()


def test_truncated_json(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    rows = _load_file(tmp_path, con, "t.json", b'{"run": {"kind": "Bench')
    assert "invalid JSON" in rows[0][1] and "line 1" in rows[0][1]


def test_empty_file(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    assert "empty file" in _load_file(tmp_path, con, "e.json", b"  \n")[0][1]


def test_empty_jsonl(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    assert "empty file" in _load_file(tmp_path, con, "e.jsonl", b"")[0][1]


def test_empty_array(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    assert "empty array" in _load_file(tmp_path, con, "e.json", b"[]")[0][1]


def test_not_utf8(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    assert "UTF-8" in _load_file(tmp_path, con, "u.json", b'{"a": "\xff"}')[0][1]


def test_corrupt_gzip(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    assert "gzip" in _load_file(tmp_path, con, "c.json.gz", b"\x1f\x8bnot really")[0][1]


def test_document_not_an_object(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    kiana.load.load(con, [write_json(tmp_path / "n.json", 42)])
    assert con.execute("SELECT json_path, reason FROM rejects").fetchall() == [
        ("$", "a document must be a JSON object (got ubigint)")
    ]


def test_jsonl_bad_line_in_the_middle_keeps_the_rest(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    good = [seed() for _ in range(3)]
    for i, doc in enumerate(good):
        doc["run"]["metadata"]["labels"]["liger_version"] = f"0.{i}.0"
    file = tmp_path / "mix.jsonl"
    lines = [json.dumps(good[0]), json.dumps(good[1]), "{broken", json.dumps(good[2])]
    file.write_text("\n".join(lines) + "\n")
    summary = kiana.load.load(con, [file])
    assert (summary.read, summary.loaded, summary.rejected) == (4, 3, 1)
    assert con.execute("SELECT source FROM rejects").fetchall() == [(f"{file}:3",)]


def test_array_with_garbage_keeps_the_documents(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    file = write_json(tmp_path / "arr.json", [seed(), "garbage", {"x": 1}])
    summary = kiana.load.load(con, [file])
    assert (summary.read, summary.loaded, summary.rejected) == (3, 1, 2)
    sources = sorted(s for (s,) in con.execute("SELECT source FROM rejects").fetchall())
    assert sources == [f"{file}[1]", f"{file}[2]"]


def test_bom_and_crlf_are_accepted(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    (tmp_path / "bom.json").write_bytes(
        b"\xef\xbb\xbf" + json.dumps(seed(), indent=1).replace("\n", "\r\n").encode()
    )
    other = seed()
    other["run"]["metadata"]["labels"]["liger_version"] = "0.7.0"
    (tmp_path / "crlf.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps(other).encode() + b"\r\n")
    summary = kiana.load.load(con, [tmp_path])
    assert (summary.loaded, summary.rejected) == (2, 0)


def test_conflicting_protocol_behind_one_digest(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    first = seed()
    second = seed()
    second["run"]["metadata"]["labels"]["liger_version"] = "0.7.0"
    second["protocol"]["spec"]["measurement"]["timer"] = "wall_clock"
    write_jsonl(tmp_path / "c.jsonl", [first, second])
    summary = kiana.load.load(con, [tmp_path / "c.jsonl"])
    assert (summary.loaded, summary.rejected) == (1, 1)
    ((path, reason),) = con.execute("SELECT json_path, reason FROM rejects").fetchall()
    assert path == "$.run.spec.protocolDigest" and "different protocol" in reason


def test_conflict_with_an_earlier_load(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    kiana.load.load(con, [write_json(tmp_path / "a.json", seed())])
    other = seed()
    other["run"]["metadata"]["labels"]["liger_version"] = "0.7.0"
    other["environment"]["spec"]["hardware"]["formFactor"] = "PCIe"
    summary = kiana.load.load(con, [write_json(tmp_path / "b.json", other)])
    assert summary.rejected == 1
    ((reason,),) = con.execute("SELECT reason FROM rejects").fetchall()
    assert "different environment" in reason and "a.json" in reason


def test_gzip_jsonl_loads(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    with gzip.open(tmp_path / "x.jsonl.gz", "wt") as handle:
        handle.write(json.dumps(seed()) + "\n")
    assert kiana.load.load(con, [tmp_path / "x.jsonl.gz"]).loaded == 1


def test_not_passed_run_is_kept_with_a_warning(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    doc = seed()
    doc["run"]["spec"]["status"] = "failed"
    del doc["run"]["spec"]["timing"]
    summary = kiana.load.load(con, [write_json(tmp_path / "f.json", doc)])
    assert (summary.loaded, summary.warned) == (1, 1)
    assert con.execute("SELECT status, median FROM runs").fetchall() == [("failed", None)]


def test_missing_spread_is_a_warning(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    doc = seed()
    doc["run"]["spec"]["measurements"] = []
    kiana.load.load(con, [write_json(tmp_path / "s.json", doc)])
    assert con.execute("SELECT kind FROM warnings").fetchall() == [("no_spread",)]
