"""A worker that fails says what it is: kiana's own failure (exit 3) with the worker's
traceback under ``KIANA_TRACEBACK=1``, never a usage error (issue 41)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiana.cli import main
from kiana.shards import worker
from kiana.stats import JudgeOptions


def _garbage(tmp_path: Path) -> Path:
    path = tmp_path / "runs-00000.parquet"
    path.write_bytes(b"not a parquet file")
    return path


@pytest.mark.heavy  # starts a worker process
def test_a_failing_worker_is_a_crash_with_its_last_line(tmp_path: Path) -> None:
    with pytest.raises(worker.WorkerCrash, match="judging shard 0 failed in its worker process"):
        worker.run(_garbage(tmp_path), JudgeOptions(), tmp_path, 0, None)


@pytest.mark.heavy  # starts a worker process
def test_kiana_traceback_prints_the_workers_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KIANA_TRACEBACK", "1")
    with pytest.raises(worker.WorkerCrash) as caught:
        worker.run(_garbage(tmp_path), JudgeOptions(), tmp_path, 0, None)
    err = capsys.readouterr().err
    assert "worker 0: Traceback (most recent call last):" in err
    assert "Traceback" in caught.value.stderr


def test_without_kiana_traceback_the_worker_stays_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    crash = worker.WorkerCrash(3, "Traceback (most recent call last):\n  ...\nValueError: boom\n")
    assert str(crash).endswith("failed in its worker process: ValueError: boom")
    assert capsys.readouterr().err == ""


def test_a_worker_crash_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the CLI: a crash in a shard's worker is exit 3, not 2 ("usage or input")."""
    data = Path(__file__).resolve().parents[2] / "data" / "seeds"
    db = tmp_path / "kiana.duckdb"
    assert main(["load", str(data), "--db", str(db), "-q"]) == 0

    def crash(*args: object, **kwargs: object) -> object:
        raise worker.WorkerCrash(0, "OverflowError: (34, 'Numerical result out of range')\n")

    monkeypatch.setattr(worker, "run", crash)
    monkeypatch.setattr("kiana.shards.judge_shard", crash)
    monkeypatch.setattr("kiana.shards.unit.judge_unit", crash)  # the stored judgement's path
    assert main(["regressions", "--db", str(db)]) == 3
    err = capsys.readouterr().err
    assert "internal error: WorkerCrash" in err and "OverflowError" in err


def test_a_kiana_error_in_a_worker_comes_back_as_itself() -> None:
    refused = worker.Refused("runs.parquet: no runs", "load some")
    assert (refused.message, refused.hint) == ("runs.parquet: no runs", "load some")
