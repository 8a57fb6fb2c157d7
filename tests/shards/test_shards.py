"""Sharded judging gives what judging everything gives: on data/, on a generated corpus
with long histories, with a baseline some GPUs lack, and through ``kiana.analyze``.  The judge's calibration is fitted per GPU, so the comparison runs with the default
options, calibration included.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana
import kiana.load
from kiana.generate import CorpusConfig, generate, write_corpus
from kiana.load.judged import judged_runs
from kiana.shards import Judged, budget, judge_all, plan, shard_runs
from kiana.stats import JudgeOptions, judge
from tests.conftest import ROOT

EXACT = JudgeOptions()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A generated corpus with two long histories (30-100 sessions, outliers, shifts)."""
    root = tmp_path_factory.mktemp("history")
    config = CorpusConfig(seed=5, kernels=("rms_norm", "swiglu"), sweep_size=3, histories=2)
    write_corpus(generate(config), root, "jsonl")
    con = kiana.load.connect(None)
    kiana.load.load(con, [root])
    yield con
    con.close()


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(pl.all(), nulls_last=True)


def assert_same(sharded: Judged, whole: Judged) -> None:
    """Every output of the two judgements is the same (findings in the same order)."""
    assert sharded.shards > 1 and whole.shards == 1
    assert_frame_equal(sharded.findings, whole.findings)
    assert_frame_equal(_sorted(sharded.judgement().steps), _sorted(whole.judgement().steps))
    for name in ("quality", "changepoints", "tradeoffs", "versions"):
        a, b = getattr(sharded, name), getattr(whole, name)
        assert_frame_equal(_sorted(a), _sorted(b), check_dtypes=False)
    assert sharded.coverage == whole.coverage
    assert (sharded.runs_total, sharded.runs_judged) == (whole.runs_total, whole.runs_judged)


@pytest.mark.heavy  # worker interpreters: 9-27 s on the shared machine
@pytest.mark.parametrize("name", ["data", "history"])
def test_sharded_equals_unsharded(name: str, request: pytest.FixtureRequest) -> None:
    con = request.getfixturevalue(name)
    assert_same(judge_all(con, EXACT, max_runs=1), judge_all(con, EXACT))


@pytest.mark.heavy
def test_one_shard_is_the_judge_of_every_run(data: duckdb.DuckDBPyConnection) -> None:
    whole = judge_all(data, EXACT)
    direct = judge(judged_runs(data), EXACT)
    assert_frame_equal(whole.findings, direct.findings)
    assert_frame_equal(whole.judgement().steps, direct.steps)


@pytest.mark.heavy  # worker interpreters: 9-27 s on the shared machine
def test_a_baseline_that_some_gpus_lack(history: duckdb.DuckDBPyConnection) -> None:
    (version,) = history.execute(
        "SELECT version FROM runs GROUP BY 1 ORDER BY count(DISTINCT gpu), 1 LIMIT 1"
    ).fetchall()[0]
    gpus = history.execute("SELECT count(DISTINCT gpu) FROM runs").fetchall()[0][0]
    having = history.execute(
        "SELECT count(DISTINCT gpu) FROM runs WHERE version = ?", [version]
    ).fetchall()[0][0]
    assert having < gpus, "the test needs a version some GPUs lack"
    options = JudgeOptions(baseline=version)
    assert_same(judge_all(history, options, max_runs=1), judge_all(history, options))


@pytest.mark.heavy
def test_a_baseline_no_gpu_has_is_a_usage_error(history: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(kiana.UsageError, match="not a version in the data"):
        judge_all(history, JudgeOptions(baseline="9.9.9"), max_runs=1)


def test_shard_runs_are_the_judged_runs(history: duckdb.DuckDBPyConnection) -> None:
    whole = judged_runs(history)
    assert_frame_equal(shard_runs(history), whole)
    parts = pl.concat([shard_runs(history, shard) for shard in plan(history, max_runs=1)])
    assert_frame_equal(_sorted(parts), _sorted(whole))


def test_small_gpus_are_packed_and_a_large_one_is_alone(
    history: duckdb.DuckDBPyConnection,
) -> None:
    sizes = dict(history.execute("SELECT gpu, count(*) FROM runs GROUP BY gpu").fetchall())
    shards = plan(history, max_runs=max(sizes.values()))
    assert sorted(g for s in shards for g in s.gpus) == sorted(sizes)
    assert all(s.runs == sum(sizes[g] for g in s.gpus) for s in shards)
    assert all(s.runs <= max(sizes.values()) for s in shards)
    assert len(plan(history, max_runs=sum(sizes.values()))) == 1


def test_the_memory_limit_sets_the_shard_budget() -> None:
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit = '20MiB'")
        assert budget(con) == 20 * 2**20 // 2_000
        con.execute("SET memory_limit = '100GB'")
        assert budget(con) == 500_000
    finally:
        con.close()


@pytest.mark.heavy  # worker interpreters: 9-27 s on the shared machine
def test_spilled_steps_are_read_back_shard_by_shard(data: duckdb.DuckDBPyConnection) -> None:
    sharded = judge_all(data, EXACT, max_runs=1)
    chunks = list(sharded.steps())
    assert len(chunks) == sharded.shards
    assert sum(c.height for c in chunks) == sharded.judgement().steps.height
    wanted = sharded.findings.head(3)
    behind = sharded.steps_of(wanted)
    assert behind.height > 0
    keys = ["kernel", "pass", "provider", "gpu", "metric", "from_session", "to_session"]
    assert behind.select(keys).unique().join(wanted.select(keys), on=keys, how="anti").is_empty()


@pytest.mark.heavy  # worker interpreters: 9-27 s on the shared machine
def test_the_spill_folder_goes_with_the_judgement(data: duckdb.DuckDBPyConnection) -> None:
    sharded = judge_all(data, EXACT, max_runs=1)
    folder: Path | None = sharded._folder
    assert folder is not None and any(folder.iterdir())
    del sharded
    import gc

    gc.collect()
    assert not folder.exists()


@pytest.mark.heavy
def test_analyze_shows_the_same_through_every_door(data: duckdb.DuckDBPyConnection) -> None:
    analysis = kiana.analyze(data, EXACT)
    whole = judge(judged_runs(data), EXACT)
    assert_frame_equal(analysis.judgement.findings, whole.findings)
    assert analysis.runs_total == analysis.runs.height == judged_runs(data).height
    assert sum(s.height for s in analysis.iter_steps()) == whole.steps.height


@pytest.fixture(scope="module")
def commits() -> Iterator[duckdb.DuckDBPyConnection]:
    """Runs with origins: the generated corpus, each sitting labelled with a commit and
    a CSV as the Liger importer labels rows (a commit per day and GPU)."""
    config = CorpusConfig(seed=6, kernels=("rms_norm", "layer_norm"), sweep_size=2)
    docs = []
    for doc in generate(config).documents():
        spec = doc["run"]["spec"]
        day = spec["observedAt"][:10]
        gpu = doc["environment"]["spec"]["hardware"]["product"]
        doc["run"]["metadata"]["labels"] |= {"liger_commit": f"{day}-{gpu}", "liger_csv": "x.csv"}
        docs.append(doc)
    con = kiana.load.connect(None)
    kiana.load.load_documents(con, docs, source="test")
    yield con
    con.close()


@pytest.mark.heavy  # worker interpreters: 9-27 s on the shared machine
def test_origins_are_read_once_and_match(commits: duckdb.DuckDBPyConnection) -> None:
    whole = judged_runs(commits)
    assert whole["origin"].null_count() == 0
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        from kiana.shards import write_origins

        origins = write_origins(commits, Path(folder))
        parts = [shard_runs(commits, s, origins=origins) for s in plan(commits, max_runs=1)]
    assert_frame_equal(_sorted(pl.concat(parts)), _sorted(whole))
    assert_same(judge_all(commits, EXACT, max_runs=1), judge_all(commits, EXACT))


def test_origins_of_the_gpus_named_only(commits: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    from kiana.shards import write_origins

    gpus = sorted(str(g) for (g,) in commits.execute("SELECT DISTINCT gpu FROM runs").fetchall())
    origins = write_origins(commits, tmp_path, gpus[:1])
    written = pl.read_parquet(origins / "**" / "*.parquet", hive_partitioning=True)
    expected = commits.execute("SELECT count(*) FROM runs WHERE gpu = ?", [gpus[0]]).fetchall()
    assert len(gpus) > 1 and written["gpu"].unique().to_list() == gpus[:1]
    assert written.height == expected[0][0]


def test_the_origins_of_some_runs_are_those_the_labels_view_gives() -> None:
    """Runs chosen by a condition or a join take their origins from their own
    ``run_details`` (not the ``labels`` view): the same as every run's, a label that is
    not a string and a run with one label or none included."""
    config = CorpusConfig(seed=6, kernels=("rms_norm",), sweep_size=2)
    docs = []
    for i, doc in enumerate(generate(config).documents()):
        labels = doc["run"]["metadata"]["labels"]
        kinds = [{"liger_commit": f"c{i % 7}", "liger_csv": "x.csv"}, {"liger_commit": i % 5},
                 {"liger_csv": "y.csv"}, {}, {"liger_commit": True, "liger_csv": None}]  # fmt: skip
        labels |= kinds[i % len(kinds)]
        docs.append(doc)
    con = kiana.load.connect(None)
    kiana.load.load_documents(con, docs, source="test")
    whole = judged_runs(con)
    parts = whole["partition_id"].unique().sort().to_list()[::2]
    assert whole["origin"].n_unique() > 5 and whole["origin"].null_count() > 0
    chosen = shard_runs(
        con, where="partition_id IN (SELECT unnest($parts))", params={"parts": parts}
    )
    assert_frame_equal(_sorted(chosen), _sorted(whole.filter(pl.col("partition_id").is_in(parts))))
    con.register("kiana_some", pl.DataFrame({"partition_id": parts}).to_arrow())
    joined = shard_runs(con, join="JOIN kiana_some s ON s.partition_id = runs.partition_id")
    assert_frame_equal(_sorted(joined), _sorted(chosen))


def test_an_error_in_a_transaction_is_not_masked_by_the_memory_share() -> None:
    from kiana.shards.share import duckdb_share

    con = duckdb.connect()
    con.execute("BEGIN TRANSACTION")
    with pytest.raises(duckdb.InvalidInputException, match="boom"), duckdb_share(con, 64 << 20):
        con.execute("SELECT error('boom')")


@pytest.mark.heavy
def test_a_script_without_a_main_guard_judges_several_shards(tmp_path: Path) -> None:
    """Shards are judged in fresh interpreters, not multiprocessing's ``spawn`` (which
    imports the caller's ``__main__`` again and fails on a script's top-level call)."""
    import subprocess
    import sys

    script = tmp_path / "top_level.py"
    script.write_text(
        "import kiana.load\n"
        "from kiana.shards import judge_all\n"
        "con = kiana.load.connect(None)\n"
        f"kiana.load.load(con, [{str(ROOT / 'data' / 'generated')!r}])\n"
        "judged = judge_all(con, max_runs=1)\n"
        "print(judged.shards, judged.findings.height)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    shards, findings = map(int, done.stdout.split())
    assert shards > 1 and findings > 0


@pytest.mark.heavy
def test_a_worker_that_fails_is_a_clear_error(tmp_path: Path) -> None:
    """A missing runs file is kiana's own failure (the shards' files are kiana's), exit 3."""
    from kiana.shards import worker

    with pytest.raises(worker.WorkerCrash, match="judging shard 3 failed in its worker process"):
        worker.run(tmp_path / "missing.parquet", JudgeOptions(), tmp_path, 3, None)
