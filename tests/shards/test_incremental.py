"""The stored judgement after new loads equals judging every run again: on data/ and on
a generated history, loaded in 1-3 parts (newest last, an older part last, a part that
moves a GPU's calibration), with ``full``, and on a database opened read-only."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana.load
from kiana.generate import CorpusConfig, generate
from kiana.generate.config import DEFAULT_GPUS
from kiana.shards import Judged, judge_all, store, tables
from kiana.shards.stored import StoredJudged
from kiana.stats import JudgeOptions, calfit
from tests.conftest import ROOT
from tests.stats_fixtures import realistic_config

pytestmark = pytest.mark.heavy  # every test here is over the quick loop's budget

OPTIONS = JudgeOptions()


def _by_time(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs, key=lambda d: (d["run"]["spec"]["observedAt"], json.dumps(d)))


@pytest.fixture(scope="module")
def data_docs() -> list[dict[str, Any]]:
    lines = (ROOT / "data" / "generated" / "documents.jsonl").read_text().splitlines()
    return _by_time([json.loads(line) for line in lines])


@pytest.fixture(scope="module")
def history_docs() -> list[dict[str, Any]]:
    """A generated corpus with a long history (30-100 sessions, outliers, shifts)."""
    config = CorpusConfig(seed=7, kernels=("rms_norm",), sweep_size=3, histories=1)
    return _by_time(list(generate(config).documents()))


@pytest.fixture(scope="module")
def tiny_docs() -> list[dict[str, Any]]:
    """One kernel on one GPU (the quick tests)."""
    config = CorpusConfig(seed=7, kernels=("rms_norm",), gpus=DEFAULT_GPUS[:1], sweep_size=3)
    return _by_time(list(generate(config).documents()))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = kiana.load.connect(tmp_path / "kiana.duckdb")
    yield con
    con.close()


def assert_same(stored: Judged, whole: Judged) -> None:
    """Every output of the two judgements is the same, in the same order."""
    assert isinstance(stored, StoredJudged) and not isinstance(whole, StoredJudged)
    assert_frame_equal(stored.findings, whole.findings)
    a, b = stored.judgement(), whole.judgement()
    assert_frame_equal(a.steps, b.steps)
    for name in ("quality", "changepoints", "versions"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_dtypes=False)
    if b.tradeoffs is not None and b.tradeoffs.height:
        assert a.tradeoffs is not None
        assert_frame_equal(a.tradeoffs, b.tradeoffs, check_dtypes=False)
    assert a.coverage == b.coverage
    assert (stored.runs_total, stored.runs_judged) == (whole.runs_total, whole.runs_judged)
    assert a.calibration is not None and b.calibration is not None
    order = [c for c, t in b.calibration.frame.schema.items() if t.is_numeric() or t == pl.String]
    assert_frame_equal(
        a.calibration.frame.sort(order, nulls_last=True),
        b.calibration.frame.sort(order, nulls_last=True),
    )


def load_and_check(
    con: duckdb.DuckDBPyConnection, parts: list[list[dict[str, Any]]], notes: list[str]
) -> None:
    """Load ``parts`` one load each; after each, the stored judgement (updated) equals
    the judgement of every run, and says how it was made (``notes``, a prefix each)."""
    for part, note in zip(parts, notes, strict=True):
        kiana.load.load_documents(con, part)
        stored = judge_all(con, OPTIONS)
        assert isinstance(stored, StoredJudged) and stored.note.startswith(note), stored.note
        assert store.status(con, OPTIONS, None) == "current"
        assert_same(stored, judge_all(con, OPTIONS, full=True, store=False))


def _split(docs: list[dict[str, Any]], *shares: float) -> list[list[dict[str, Any]]]:
    cuts = [0, *(int(len(docs) * s) for s in shares), len(docs)]
    return [docs[a:b] for a, b in itertools.pairwise(cuts)]


def test_data_newest_last(db: duckdb.DuckDBPyConnection, data_docs: list[Any]) -> None:
    parts = _split(data_docs, 0.8, 0.95)
    load_and_check(db, parts, ["judged in full", "stored judgement updated", "stored"])


def test_data_an_older_part_last(db: duckdb.DuckDBPyConnection, data_docs: list[Any]) -> None:
    older, newer = _split(data_docs, 0.3)
    load_and_check(db, [newer, older], ["judged in full", "stored judgement updated"])


def test_history_in_three_loads(db: duckdb.DuckDBPyConnection, history_docs: list[Any]) -> None:
    parts = _split(history_docs, 0.6, 0.8, 0.97)
    notes = ["judged in full", *["stored judgement updated"] * 3]
    load_and_check(db, parts, notes)


def test_history_one_load_added(db: duckdb.DuckDBPyConnection, history_docs: list[Any]) -> None:
    load_and_check(db, _split(history_docs, 0.9), ["judged in full", "stored judgement updated"])


def test_a_current_judgement_is_read(db: duckdb.DuckDBPyConnection, tiny_docs: list[Any]) -> None:
    kiana.load.load_documents(db, tiny_docs)
    first = judge_all(db, OPTIONS)
    again = judge_all(db, OPTIONS)
    assert isinstance(again, StoredJudged) and again.note == "the stored judgement, read"
    assert_frame_equal(again.findings, first.findings)


def test_full_judges_everything_again(
    db: duckdb.DuckDBPyConnection, history_docs: list[Any]
) -> None:
    old, new = _split(history_docs, 0.9)
    kiana.load.load_documents(db, old)
    judge_all(db, OPTIONS)
    kiana.load.load_documents(db, new)
    full = judge_all(db, OPTIONS, full=True)
    assert isinstance(full, StoredJudged) and full.note == "judged in full and stored"
    assert_same(full, judge_all(db, OPTIONS, full=True, store=False))


def test_other_options_are_judged_again(
    db: duckdb.DuckDBPyConnection, history_docs: list[Any]
) -> None:
    kiana.load.load_documents(db, history_docs)
    judge_all(db, OPTIONS)
    other = JudgeOptions(threshold=0.1)
    assert store.status(db, other, None) == "other"
    judged = judge_all(db, other)
    assert isinstance(judged, StoredJudged) and judged.note == "judged in full and stored"
    assert_frame_equal(judged.findings, judge_all(db, other, full=True, store=False).findings)


@pytest.fixture
def small_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calibrations fitted on a prefix of each GPU's steps from 100 steps on (8,192 in
    use), so that the generated history's loads take the paths a large database takes."""
    monkeypatch.setattr(calfit, "FULL_STEPS", 100)


@pytest.mark.usefixtures("small_prefix")
def test_newest_sessions_are_spliced(
    db: duckdb.DuckDBPyConnection, history_docs: list[Any]
) -> None:
    """The last 3% of a history: its GPU's calibration is unchanged (same rung, its cut
    before the new sessions), so only its newest sessions are judged again."""
    spliced = "stored judgement updated: 1 GPU(s) from their newest sessions, 0 judged"
    load_and_check(db, _split(history_docs, 0.97), ["judged in full", spliced])


@pytest.mark.usefixtures("small_prefix")
def test_a_calibration_change_then_spliced_then_older(
    db: duckdb.DuckDBPyConnection, history_docs: list[Any]
) -> None:
    """Four loads: the history's GPU goes from 54 to 150 steps (its calibration moves
    to the next rung: judged again in full), then to 198 (same rung, cut before the new
    sessions: spliced), then the oldest 5% arrive last (judged again in full)."""
    n = len(history_docs)
    spans = [(0.05, 0.85), (0.85, 0.95), (0.95, 1.0), (0.0, 0.05)]
    parts = [history_docs[int(n * a) : int(n * b)] for a, b in spans]
    again = "stored judgement updated: 0 GPU(s) from their newest sessions"
    spliced = "stored judgement updated: 1 GPU(s) from their newest sessions"
    load_and_check(db, parts, ["judged in full", again, spliced, again])


def test_a_gpu_judged_again_whole_resumes_the_change_points(
    db: duckdb.DuckDBPyConnection, history_docs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GPUs judged again whole (here every GPU: splicing switched off; their calibrations
    stay, rungs from 50 steps on: 100 of their 134-180 steps) resume their series'
    change points from the stored search states where their values and noise begin the
    new ones, instead of searching them again from their first value."""
    from kiana.shards import creep, incremental

    monkeypatch.setattr(calfit, "FULL_STEPS", 50)
    monkeypatch.setattr(incremental, "SPLICE", False)
    n = len(history_docs)
    kiana.load.load_documents(db, history_docs[int(n * 0.05) : int(n * 0.65)])
    judge_all(db, OPTIONS)
    resumed: list[int] = []
    resume_all = creep.resume_all

    def spy(olds: dict[int, Any], *args: Any) -> dict[int, creep.Found]:
        resumed.append(len(olds))
        return resume_all(olds, *args)

    monkeypatch.setattr(creep, "resume_all", spy)
    again = "stored judgement updated: 0 GPU(s) from their newest sessions, 3 judged again"
    load_and_check(db, [history_docs[int(n * 0.65) : int(n * 0.75)]], [again])
    assert sum(resumed) > 0


def _tables(path: Path) -> dict[str, int]:
    check = duckdb.connect(str(path), read_only=True)
    try:
        rows = check.execute(
            "SELECT table_name, estimated_size FROM duckdb_tables() WHERE table_name LIKE 'judged%'"
        ).fetchall()
        meta = check.execute("SELECT * FROM judged_meta").fetchall() if rows else []
    finally:
        check.close()
    return {str(name): int(size) for name, size in rows} | {str(k): len(str(v)) for k, v in meta}


def test_a_read_only_database_is_never_written(tmp_path: Path, history_docs: list[Any]) -> None:
    """Read-only: the stored judgement is read when current; when a load came since, the
    runs are judged in memory (equal to the full judgement) and nothing is written."""
    path = tmp_path / "kiana.duckdb"
    old, new = _split(history_docs, 0.9)
    con = kiana.load.connect(path)
    kiana.load.load_documents(con, old)
    judge_all(con, OPTIONS)
    con.close()
    con = kiana.load.connect(path, read_only=True)
    current = judge_all(con, OPTIONS)
    assert isinstance(current, StoredJudged) and current.note == "the stored judgement, read"
    con.close()
    con = kiana.load.connect(path)
    kiana.load.load_documents(con, new)
    con.close()
    before = _tables(path)
    con = kiana.load.connect(path, read_only=True)
    stale = judge_all(con, OPTIONS)
    assert not isinstance(stale, StoredJudged)
    full = judge_all(con, OPTIONS, full=True)
    assert not isinstance(full, StoredJudged)
    assert_frame_equal(stale.findings, full.findings)
    con.close()
    assert _tables(path) == before


def test_an_in_memory_database_stores_nothing(tiny_docs: list[Any]) -> None:
    con = kiana.load.connect(None)
    kiana.load.load_documents(con, tiny_docs)
    judged = judge_all(con, OPTIONS)
    assert not isinstance(judged, StoredJudged)
    assert not store.exists(con)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_gate_never_writes_a_judgement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate judges in a database of its own, in memory: nothing of the store is
    ever called to write (each writer raises here), and its verdict stands."""
    from kiana.culprits.gate import gate
    from tests.culprits.test_gate import base_repo, slower_pr

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the gate wrote a stored judgement")

    for name in ("create", "rebuild", "rejudge"):
        monkeypatch.setattr(store, name, refuse)
    for name in ("insert", "insert_unit", "finish"):
        monkeypatch.setattr(tables, name, refuse)
    repo = base_repo(tmp_path / "Liger-Kernel")
    slower_pr(repo)
    result = gate(repo.path, "main", "pr")
    assert result.exit_code == 1 and result.regressions.height == 1


def test_regressions_stores_and_reads_while_another_process_reads(
    tmp_path: Path, history_docs: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """``kiana regressions`` keeps the judgement in ``--db``; while another process holds
    the file read-only, it opens it read-only too, and reads the stored judgement."""
    import subprocess
    import sys

    from kiana.cli import main

    path = tmp_path / "kiana.duckdb"
    con = kiana.load.connect(path)
    kiana.load.load_documents(con, history_docs)
    con.close()
    assert main(["regressions", "--db", str(path), "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)["findings"]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], "
         "read_only=True); print('ready', flush=True); time.sleep(60)", str(path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        assert main(["regressions", "--db", str(path), "--json"]) == 0
    finally:
        holder.kill()
        holder.wait()
    assert json.loads(capsys.readouterr().out)["findings"] == stored
    con = kiana.load.connect(path, read_only=True)
    try:
        assert store.status(con, OPTIONS, None) == "current"
    finally:
        con.close()


def test_gpus_judged_again_whole_in_several_shards(
    db: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update that judges GPUs again whole (every touched GPU: splicing off), one
    shard each, on runs with origins: the origins of those GPUs alone are read
    (:func:`kiana.shards.write_origins`), inside the update's transaction, and the
    result is the judgement of every run."""
    from kiana.shards import incremental

    monkeypatch.setattr(incremental, "SPLICE", False)
    config = CorpusConfig(seed=6, kernels=("rms_norm", "layer_norm"), sweep_size=2)
    docs = []
    for doc in generate(config).documents():
        day, gpu = (
            doc["run"]["spec"]["observedAt"][:10],
            doc["environment"]["spec"]["hardware"]["product"],
        )
        doc["run"]["metadata"]["labels"] |= {"liger_commit": f"{day}-{gpu}", "liger_csv": "x.csv"}
        docs.append(doc)
    old, new = _split(_by_time(docs), 0.9)
    kiana.load.load_documents(db, old)
    judge_all(db, OPTIONS, max_runs=1)
    kiana.load.load_documents(db, new)
    stored = judge_all(db, OPTIONS, max_runs=1)
    assert isinstance(stored, StoredJudged)
    prefix = "stored judgement updated: 0 GPU(s) from their newest sessions, "
    assert stored.note.startswith(prefix) and int(stored.note[len(prefix) :].split()[0]) >= 2
    assert_same(stored, judge_all(db, OPTIONS, full=True, store=False))


@pytest.mark.usefixtures("small_prefix")
def test_spliced_when_the_day_cut_is_before_the_calibration_cut(
    db: duckdb.DuckDBPyConnection, history_docs: list[Any]
) -> None:
    """The re-judged steps start at ``D`` (midnight, or the last point before the new
    runs), before the GPU's calibration cut here; but every step whose value can change
    has a session at or after ``t`` (the first new run), after the cut: its calibration
    stands and the GPU is spliced, not judged again whole."""
    from kiana.shards import incremental

    n = len(history_docs)
    old, new = history_docs[: int(n * 0.9)], history_docs[int(n * 0.9) : int(n * 0.91)]
    kiana.load.load_documents(db, old)
    judge_all(db, OPTIONS)
    cal = dict(db.execute("SELECT gpu, cut FROM judged_gpus").fetchall())
    kiana.load.load_documents(db, new)
    fresh = incremental.fresh_runs(db, sorted(set(tables.loads(db)) - set(store.stored_loads(db))))
    found = incremental.cuts(db, fresh, sorted(set(fresh["gpu"].to_list())), OPTIONS)
    rows = found.group_by("gpu").agg(pl.col("own").min(), pl.col("first").min()).rows()
    assert [(own <= cal[g] < first) for g, own, first in rows] == [True]
    stored = judge_all(db, OPTIONS)
    assert isinstance(stored, StoredJudged)
    assert stored.note.startswith(
        "stored judgement updated: 1 GPU(s) from their newest sessions, 0"
    )
    assert_same(stored, judge_all(db, OPTIONS, full=True, store=False))


def test_a_large_gpu_judged_again_whole_in_a_worker(
    db: duckdb.DuckDBPyConnection, tiny_docs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update's one GPU judged again whole goes to a worker process when it is large
    (:data:`kiana.shards.store.SPILL_RUNS`, lowered here): the same judgement."""
    from kiana.shards import incremental, worker

    monkeypatch.setattr(incremental, "SPLICE", False)
    monkeypatch.setattr(store, "SPILL_RUNS", 1)
    calls: list[object] = []
    run_unit = worker.run_unit
    monkeypatch.setattr(worker, "run_unit", lambda *a: calls.append(a) or run_unit(*a))
    old, new = _split(tiny_docs, 0.9)
    kiana.load.load_documents(db, old)
    judge_all(db, OPTIONS)
    kiana.load.load_documents(db, new)
    stored = judge_all(db, OPTIONS)
    assert isinstance(stored, StoredJudged)
    assert stored.note.endswith("0 GPU(s) from their newest sessions, 1 judged again in full")
    assert len(calls) == 1
    assert_same(stored, judge_all(db, OPTIONS, full=True, store=False))


@pytest.fixture(scope="module")
def realistic_docs() -> list[dict[str, Any]]:
    """A realistic corpus (shifted sittings: the judge makes bridges on it,
    :mod:`kiana.stats.bridges`), as bench/detection.py makes seed 3."""
    return _by_time(list(generate(realistic_config(3)).documents()))


@pytest.mark.usefixtures("small_prefix")
def test_bridges_are_spliced_as_judged(
    db: duckdb.DuckDBPyConnection, realistic_docs: list[Any]
) -> None:
    """Bridges span three sessions: after each load the stored judgement, updated from
    the newest sessions, still equals the judgement of every run, bridges included."""
    parts = _split(realistic_docs, 0.7, 0.85, 0.97)
    load_and_check(db, parts, ["judged in full", *["stored judgement updated"] * 3])
    found = judge_all(db, OPTIONS).findings
    assert found.filter(pl.col("basis") == "bridge").height >= 3
