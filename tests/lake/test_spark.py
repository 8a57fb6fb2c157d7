"""The Spark runner (``kiana lake``) on ``local[2]``: a lake exported by two writers
that share documents, judged on Spark and in this process, gives the same findings,
steps, quality and change points, and the same rows as judging the database.

Needs PySpark (``pip install -e '.[spark]'``) and Java 17+: skipped without them,
except in CI (``CI`` set), where ``.ci/run`` installs both and a skip would hide that
the runner is not tested.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana.load
from kiana.export import export_parquet
from kiana.generate import CorpusConfig, generate
from kiana.harness import LIGER
from kiana.lake import judge_lake, read_coverage, read_findings, read_table
from kiana.shards import judge_all
from kiana.stats import JudgeOptions
from tests.conftest import ROOT, run_kiana

pytestmark = pytest.mark.heavy


def _missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ModuleNotFoundError:
        return "PySpark is not installed (pip install -e '.[spark]')"
    if shutil.which("java") is None:
        return "Java is not installed (.ci/install-java)"
    return None


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Spark runner: {reason}")
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("lake")
    files = sorted((ROOT / "data" / "generated").rglob("*.json*"))
    config = CorpusConfig(seed=7, kernels=("rms_norm",), sweep_size=2, histories=1)
    (root / "more").mkdir()
    with (root / "more" / "documents.jsonl").open("w") as sink:
        for doc in generate(config).documents():  # with origins, as Liger's importer labels
            day = doc["run"]["spec"]["observedAt"][:10]
            doc["run"]["metadata"]["labels"] |= {"liger_commit": day, "liger_csv": "x.csv"}
            sink.write(json.dumps(doc) + "\n")
    for part in ([*files, root / "more"], [root / "more"]):  # two writers, shared runs
        con = kiana.load.connect(None)
        kiana.load.load(con, part)
        export_parquet(con, root / "lake", append=True)
        con.close()
    return root / "lake"


@pytest.fixture(scope="module")
def judged(lake: Path) -> tuple[Path, Path]:
    options = JudgeOptions()
    here = judge_lake(lake, lake.parent / "local", options, engine="local").path
    there = judge_lake(lake, lake.parent / "spark", options, engine="spark").path
    return here, there


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(pl.all(), nulls_last=True)


def test_spark_gives_the_local_judges_findings(judged: tuple[Path, Path]) -> None:
    here, there = judged
    findings = read_findings(here)
    assert findings.height > 0 and findings["gpu"].n_unique() > 1
    assert findings["to_origin"].null_count() < findings.height, "origins are judged too"
    assert_frame_equal(read_findings(there), findings)
    for table in ("steps", "quality", "changepoints", "tradeoffs"):
        assert_frame_equal(_sorted(read_table(there, table)), _sorted(read_table(here, table)))
    assert read_coverage(there) == read_coverage(here)


def test_the_lake_judged_is_the_database_judged(lake: Path, judged: tuple[Path, Path]) -> None:
    """The duplicates of two writers are read once: the judgement is the one of a
    database holding every document once (one GPU per shard)."""
    con = kiana.load.connect(None)
    try:
        kiana.load.load(con, [*sorted((ROOT / "data" / "generated").rglob("*.json*"))])
        kiana.load.load(con, [lake.parent / "more"])
        whole = judge_all(con, JudgeOptions(), max_runs=1)
    finally:
        con.close()
    from kiana.lake.tables import conform

    assert_frame_equal(read_findings(judged[1]), conform(whole.findings, "findings"))
    assert read_coverage(judged[1]) == whole.coverage


def test_cli_lake_local(lake: Path, tmp_path: Path) -> None:
    done = run_kiana("lake", str(lake), "--out", str(tmp_path / "o"), "--engine", "local")
    assert done.returncode == 0, done.stderr
    assert "judged" in done.stdout and "compared" in done.stdout
    again = run_kiana("lake", str(lake), "--out", str(tmp_path / "o"), "--engine", "local")
    assert again.returncode == 2 and "not empty" in again.stderr
    nothing = run_kiana("lake", str(tmp_path), "--out", str(tmp_path / "p"))
    assert nothing.returncode == 2 and "not a kiana Parquet export" in nothing.stderr


def test_duckdb_reads_what_spark_wrote(judged: tuple[Path, Path]) -> None:
    con = duckdb.connect()
    try:
        (count,) = con.execute(
            "SELECT count(*) FROM read_parquet(?)", [str(judged[1] / "findings" / "*.parquet")]
        ).fetchall()[0]
    finally:
        con.close()
    assert count == read_findings(judged[0]).height


def test_spark_reads_a_schema_2_lake_as_its_kiana_read_it(lake: Path, tmp_path: Path) -> None:
    """A lake an older kiana wrote (``liger_version``, no ``harness`` nor ``role``): its
    runs are Liger's, ``liger`` and ``liger_*`` under test, as in the lake of today."""
    from kiana.lake.spark import judged_runs, session
    from tests.lake.test_export import schema_2_lake

    old = schema_2_lake(lake, tmp_path / "old")
    spark = session()
    try:
        now = judged_runs(spark, str(lake)).collect()
        then = judged_runs(spark, str(old)).collect()
    finally:
        spark.stop()
    assert sorted(map(tuple, then)) == sorted(map(tuple, now)) and now
    roles = {(r["provider"], r["role"]) for r in then}
    assert ("liger", "subject") in roles and len(roles) > 1, roles
    assert all(role == LIGER.role(provider) for provider, role in roles), roles
