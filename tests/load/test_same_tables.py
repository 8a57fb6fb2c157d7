"""The loader writes the same tables, row for row and byte for byte, as the loader before
issue 23's split into stages (commit 4e1259e).

The inputs cover every path through the loader: ``data/`` (the seeds, the generated
corpus: DuckDB's JSONL reader), the reliability suite's deterministic sweep of every
mutation of every field (rejects of every check), random files of every layout drawn
with a fixed seed (arrays, garbage arrays, gzip, BOM, CRLF, invalid UTF-8, truncated and
empty files: Python's reader), the same files again in batches of five records (every
document already present, a run repeated across batches), and documents handed over in
memory (one not serialisable, one whose protocol content differs behind a stored
digest).  Each table's rows, sorted, are hashed; the digests below were taken with the
loader at 4e1259e (``python -m tests.load.test_same_tables`` prints them for any
loader on ``PYTHONPATH``), but for ``runs``: schema version 3 (issue 23's harness
profiles) renamed ``liger_version`` to ``version`` and added ``harness`` and ``role``,
so ``runs`` was pinned again at that change; ``runs (schema 2)``, its columns of
schema version 2 in their order, is still the digest of 4e1259e, and ``runs (harness,
role)`` pins the new columns.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.load
from tests import reliability as rel
from tests.conftest import LAYER_NORM, ROOT

#: The columns of ``runs`` in schema version 2, in their order (``version`` was
#: ``liger_version``).
pytestmark = pytest.mark.heavy  # every test here is over the quick loop's budget

SCHEMA_2_RUNS = (
    'run_id, partition_id, family, kernel, "pass", provider, workload, gpu, vendor, product, '
    "form_factor, architecture, version AS liger_version, observed_at, status, metric, unit, "
    "median, p20, p80, median_ns, p20_ns, p80_ns, protocol_digest, workload_digest, "
    "environment_digest, implementation_digest, benchmark, external_id, name, title, source, "
    "load_id"
)

#: Every table and view a load writes, with the columns compared (``loads`` without its
#: clock and kiana version); ``table (what)``: some of its columns.
TABLES = {
    "runs": "*",
    "runs (schema 2)": SCHEMA_2_RUNS,
    "runs (harness, role)": "run_id, harness, role",
    "run_details": "*",
    "measurements": "*",
    "labels": "*",
    "protocols": "*",
    "environments": "*",
    "rejects": "*",
    "warnings": "*",
    "loads": "* EXCLUDE (started_at, finished_at, kiana_version)",
}

#: ``{table: (rows, sha256 of the sorted rows)}`` from the loader at 4e1259e (``runs``:
#: module docstring).
EXPECTED: dict[str, tuple[int, str]] = {
    "runs": (2237, "e09d525db7d29c4fd58adc503af69b7247cab47a31cfbf1e17647b6e02dec82b"),
    "runs (schema 2)": (
        2237,
        "89eb8cc3dc2c6510a4e02e6c9530d6439833e01e74ac434a8e4eebd296a06379",
    ),
    "runs (harness, role)": (
        2237,
        "f54bd81a5723ee18c635ce0074ddd5a6e5aa8d114f6cab41bebfe42e241ec845",
    ),
    "run_details": (2237, "8a941547a94d94142e9e2a4473a8fcfe8f3b8171e8bbfbbb9ee2ea3ad98772f4"),
    "measurements": (13410, "efe8c7210fe7a3c8fcdb7e791f3cde49b2c52abcf9168ce2289d8f212f0a732e"),
    "labels": (2238, "bcb2db6e09e2f8ce20d208cdae76674a8a775c21d2c6372e1d2b939b517c0f82"),
    "protocols": (5, "b444cfc59f6eb638d5e5f24a44b74862348f3dce5b7964e0e8c28b004f86766e"),
    "environments": (8, "081933c906cb09aa98648fe5da7e7f07de7bf67b9bc96e176a3e9cd11249daff"),
    "rejects": (200, "1f4feee7a4eb6e84f10a96cb096d06ad95f30ff3109d319c40cbd465d858bfab"),
    "warnings": (17, "d15694b7b7c079eb2524f207c62e48815d6741420c997029d6ae2dcf9f206cda"),
    "loads": (4, "3856d4348a1235218cf0f1e6fa452edec35c1c7c941c98d4e201e6cac2245877"),
}


def _cases(directory: Path) -> None:
    counter = itertools.count()
    rng = random.Random(23)
    rel.write_cases(directory / "random", [rel.make_case(counter, rng) for _ in range(40)])
    rel.write_cases(directory / "sweep", rel.sweep_cases(counter, ("drop", "number", "deep")))
    # the same documents three times in one file: runs repeated across small batches
    docs = [json.dumps(rel.make_document(n)) for n in range(10_000, 10_012)]
    (directory / "small").mkdir()
    (directory / "small" / "repeated.jsonl").write_text("\n".join(docs * 3) + "\n")
    rel.write_cases(directory / "small", [rel.make_case(counter, rng) for _ in range(6)])
    # JSONL lines DuckDB reads that its reading query cannot pass: arrays (of documents,
    # empty, of garbage), escapes, a failing check; and a .json array of documents
    docs = [json.dumps(rel.make_document(n)) for n in range(20_000, 20_008)]
    lines = [
        docs[0],
        f"[{docs[1]}, {docs[2]}]",
        "[]",
        f"[1, {docs[3]}, {{}}]",
        docs[4].replace('"layer_norm"', '"layer\\u005fnorm"', 1),
        docs[5].replace('"passed"', '"failed"', 1),
        docs[6].replace("kernelindex.dev/v1alpha1", "v0", 1),
    ]
    (directory / "lines.jsonl").write_text("\n".join(lines) + "\n")
    (directory / "array.json").write_text(f"[{', '.join(docs[:7])}, {docs[7]}]")


def _documents() -> list[Any]:
    seed = json.loads(LAYER_NORM.read_text())
    moved = copy.deepcopy(seed)
    moved["run"]["metadata"]["labels"]["liger_version"] = "9.9.9"
    conflicting = copy.deepcopy(moved)
    conflicting["protocol"]["metadata"]["title"] = "another protocol behind the same digest"
    return [moved, {"not": {"serialisable"}}, conflicting, seed, [1, 2]]


def _load(con: duckdb.DuckDBPyConnection, path: str, batch_records: int | None = None) -> None:
    if batch_records is None:
        kiana.load.load(con, [path])
    else:
        limits = kiana.load.LoadLimits(batch_records=batch_records, first_batch_records=3)
        kiana.load.load(con, [path], limits=limits)


def _digest(con: duckdb.DuckDBPyConnection, table: str, columns: str) -> tuple[int, str]:
    rows = con.execute(f"SELECT {columns} FROM {table} ORDER BY ALL").fetchall()
    sha = hashlib.sha256()
    for row in rows:
        sha.update(repr(row).encode() + b"\n")
    return len(rows), sha.hexdigest()


def digests(work: Path) -> dict[str, tuple[int, str]]:
    """Load the inputs (module docstring) into a new database; each table's digest.
    Paths are relative (``source`` columns name them), so the digests do not depend on
    where the files are."""
    _cases(work / "cases")
    con = kiana.load.connect(None)
    here = os.getcwd()
    try:
        os.chdir(ROOT)
        _load(con, "data")
        os.chdir(work)
        _load(con, "cases")
        _load(con, "cases/small", batch_records=5)
        kiana.load.load_documents(con, _documents(), source="memory")
        return {name: _digest(con, name.split(" ")[0], columns) for name, columns in TABLES.items()}
    finally:
        os.chdir(here)
        con.close()


def test_every_table_is_what_the_loader_before_the_split_wrote(tmp_path: Path) -> None:
    assert digests(tmp_path) == EXPECTED


def _main() -> Iterator[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for table, (count, digest) in digests(Path(tmp)).items():
            yield f'    "{table}": ({count}, "{digest}"),'


if __name__ == "__main__":
    sys.stdout.write("\n".join(_main()) + "\n")
