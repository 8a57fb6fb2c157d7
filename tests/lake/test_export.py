"""``kiana export --parquet``: the tables as Parquet, and the same answers read back."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import duckdb
import pytest
from polars.testing import assert_frame_equal

import kiana.load
from kiana.errors import InputError
from kiana.export import MANIFEST, TABLES, connect_parquet, export_parquet
from kiana.generate import CorpusConfig, generate, write_corpus
from kiana.group import partitions
from tests.conftest import SEEDS, run_kiana


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A small generated corpus (two GPUs, effects injected) plus the seeds."""
    root = tmp_path_factory.mktemp("corpus")
    config = CorpusConfig(seed=3, kernels=("rms_norm", "layer_norm"), sweep_size=2)
    write_corpus(generate(config), root / "generated", "jsonl")
    con = kiana.load.connect(None)
    kiana.load.load(con, [root / "generated", SEEDS])
    yield con
    con.close()


@pytest.fixture(scope="module")
def exported(database: duckdb.DuckDBPyConnection, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "parquet"
    export_parquet(database, out)
    return out


@pytest.mark.heavy
def test_runs_are_partitioned_by_gpu_then_kernel(
    database: duckdb.DuckDBPyConnection, exported: Path
) -> None:
    gpus = {unquote(p.name) for p in (exported / "runs").iterdir()}
    expected = {f"gpu={g}" for (g,) in database.execute("SELECT DISTINCT gpu FROM runs").fetchall()}
    assert gpus == expected
    some_gpu = next((exported / "runs").iterdir())
    assert all(p.name.startswith("kernel=") for p in some_gpu.iterdir())
    for table in TABLES[1:]:
        (written,) = (exported / table).iterdir()
        assert written.name == f"{record_writer(exported)}_0.parquet"
    (record,) = [json.loads(p.read_text()) for p in (exported / "exports").iterdir()]
    assert record["rows"]["runs"] == database.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    assert json.loads((exported / MANIFEST).read_text())["format"] == "kiana-parquet/2"


def test_round_trip_gives_the_same_tables(
    database: duckdb.DuckDBPyConnection, exported: Path
) -> None:
    back = connect_parquet(exported)
    try:
        assert_frame_equal(kiana.load.runs(database), kiana.load.runs(back))
        assert_frame_equal(partitions(database), partitions(back))
        for table in TABLES:
            ordered = f'SELECT * FROM "{table}" ORDER BY ALL'
            assert_frame_equal(database.sql(ordered).pl(), back.sql(ordered).pl())
    finally:
        back.close()


@pytest.mark.heavy
def test_round_trip_gives_the_same_findings(
    database: duckdb.DuckDBPyConnection, exported: Path
) -> None:
    from kiana import stats

    back = connect_parquet(exported)
    try:
        options = stats.JudgeOptions(threshold=0.03)
        here = stats.judge(kiana.load.runs(database), options)
        there = stats.judge(kiana.load.runs(back), options)
    finally:
        back.close()
    assert here.findings.height > 0
    assert_frame_equal(here.findings, there.findings)
    assert_frame_equal(here.steps, there.steps)


def schema_2_lake(exported: Path, lake: Path) -> Path:
    """A copy of ``exported`` as an older kiana (schema version 2) wrote it: its runs
    with ``liger_version`` for ``version`` and no ``harness`` nor ``role``."""
    shutil.copytree(exported, lake)
    for file in sorted((lake / "runs").rglob("*.parquet")):
        with duckdb.connect() as con:
            old = con.sql(
                "SELECT * EXCLUDE (harness, role, version), version AS liger_version "
                "FROM read_parquet(?)",
                params=[str(file)],
            ).pl()
        old.write_parquet(file)
    manifest = json.loads((lake / MANIFEST).read_text())
    names = manifest["columns"]["runs"]
    manifest["columns"]["runs"] = [
        "liger_version" if n == "version" else n for n in names if n not in ("harness", "role")
    ]
    (lake / MANIFEST).write_text(json.dumps(manifest))
    return lake


def test_a_schema_2_lake_is_read_as_its_kiana_read_it(
    database: duckdb.DuckDBPyConnection, exported: Path, tmp_path: Path
) -> None:
    """Every run of an old lake is Liger's, ``liger`` and ``liger_*`` under test: what
    the database (all Liger's documents) says of the same runs."""
    back = connect_parquet(schema_2_lake(exported, tmp_path / "old"))
    try:
        assert "liger_version" not in back.sql("SELECT * FROM runs LIMIT 0").columns
        assert_frame_equal(kiana.load.runs(database), kiana.load.runs(back))
        roles = back.sql("SELECT DISTINCT provider, role FROM runs ORDER BY ALL").fetchall()
    finally:
        back.close()
    assert ("liger", "subject") in roles and ("huggingface", "baseline") in roles, roles


def test_refuses_a_non_empty_folder_and_a_missing_export(
    database: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    (tmp_path / "other.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        export_parquet(database, tmp_path)
    with pytest.raises(InputError, match="not a kiana Parquet export"):
        connect_parquet(tmp_path)


def record_writer(exported: Path) -> str:
    (record,) = (exported / "exports").iterdir()
    return record.stem


def test_a_file_is_not_a_folder(database: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    (tmp_path / "lake.parquet").write_text("")
    with pytest.raises(InputError, match="is a file, not a folder"):
        export_parquet(database, tmp_path / "lake.parquet")


def test_a_kiana_export_is_refused_without_overwrite_or_append(
    database: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    export_parquet(database, tmp_path / "x")
    with pytest.raises(InputError, match="--append adds"):
        export_parquet(database, tmp_path / "x")


@pytest.mark.heavy
def test_many_writers_one_lake_runs_once_each(tmp_path: Path) -> None:
    """Two CI writers, sharing one document, append to one lake: every file is
    kept, the runs view holds each run once, and a writer exporting again replaces
    its own files."""
    config = CorpusConfig(seed=4, kernels=("rms_norm",), sweep_size=2)
    write_corpus(generate(config), tmp_path / "corpus", "files")
    files = sorted((tmp_path / "corpus").rglob("*.json"))
    half = len(files) // 2
    lake = tmp_path / "lake"
    counts = []
    for part in (files[: half + 1], files[half:]):  # files[half] in both
        con = kiana.load.connect(None)
        kiana.load.load(con, part)
        counts.append(con.execute("SELECT count(*) FROM runs").fetchall()[0][0])
        export_parquet(con, lake, append=True)
        export_parquet(con, lake, append=True)  # again: its own files replaced
        con.close()
    assert len(list((lake / "exports").iterdir())) == 2
    back = connect_parquet(lake)
    try:
        raw = back.sql(
            "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)",
            params=[str(lake / "runs" / "**" / "*.parquet")],
        ).fetchall()[0][0]
        assert raw == sum(counts)
        (runs, distinct) = back.execute(
            "SELECT count(*), count(DISTINCT run_id) FROM runs"
        ).fetchall()[0]
        assert runs == distinct == sum(counts) - 1
        assert (
            runs
            == back.execute(
                "SELECT count(*) FROM runs WHERE gpu IN (SELECT DISTINCT gpu FROM runs)"
            ).fetchall()[0][0]
        )
    finally:
        back.close()


def test_overwrite_replaces_a_previous_export(
    database: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    export_parquet(database, tmp_path / "x")
    again = export_parquet(database, tmp_path / "x", overwrite=True)
    assert again.rows["runs"] > 0


@pytest.mark.heavy
def test_cli_export(tmp_path: Path) -> None:
    def kiana_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_kiana(*args, cwd=tmp_path)

    missing = kiana_cli("export", "--parquet", "out", "--db", "none.duckdb")
    assert missing.returncode == 2
    assert "no such database" in missing.stderr
    assert kiana_cli("load", str(SEEDS), "--db", "k.duckdb", "-q").returncode == 0
    done = kiana_cli("export", "--parquet", "out", "--db", "k.duckdb")
    assert done.returncode == 0, done.stderr
    assert "Parquet files" in done.stdout
    (tmp_path / "file.parquet").write_text("")
    refused = kiana_cli("export", "--parquet", "file.parquet", "--db", "k.duckdb")
    assert refused.returncode == 2
    assert "is a file, not a folder" in refused.stderr and "Traceback" not in refused.stderr
    back = connect_parquet(tmp_path / "out")
    try:
        assert back.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 2
    finally:
        back.close()
