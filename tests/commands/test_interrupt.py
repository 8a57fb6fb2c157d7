"""Ctrl-C (SIGINT) during a long ``kiana load``, ``kiana regressions`` and ``kiana
report``: exit status 130, one line of what to do, and the database and the output as
they were (a real subprocess, interrupted while it works)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import ROOT
from tests.reliability import has_open

pytestmark = pytest.mark.heavy  # a 40,000-run corpus, generated and loaded: ~30 s


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kiana.generate import CorpusConfig, generate, write_corpus

    out = tmp_path_factory.mktemp("interrupt") / "big"
    write_corpus(generate(CorpusConfig.sized(40_000)), out, layout="jsonl")
    return out


@pytest.fixture(scope="module")
def full(corpus: Path) -> Path:
    db = corpus.parent / "full.duckdb"
    done = _kiana("load", str(corpus), "--db", str(db), "-q")
    assert done.returncode == 0, done.stderr
    return db


def _kiana(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kiana", *args], capture_output=True, text=True, check=False
    )


def _interrupted(*args: str, after: float = 0.5) -> tuple[int, str]:
    """Run ``kiana ARGS``, send SIGINT ``after`` seconds after it opened its ``--db``
    (so the command is at work, whatever the machine's speed); (status, stderr)."""
    db = Path(args[args.index("--db") + 1]).resolve()
    process = subprocess.Popen(
        [sys.executable, "-m", "kiana", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not has_open(process.pid, db) and process.poll() is None:
        assert time.monotonic() < deadline, "the command never opened its database"
        time.sleep(0.02)
    time.sleep(after)
    assert process.poll() is None, "the command ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def _counts(db: Path) -> tuple[int, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
        loads = con.execute("SELECT count(*) FROM loads").fetchall()[0][0]
    finally:
        con.close()
    return int(runs), int(loads)


def test_ctrl_c_during_load_leaves_the_database_as_it_was(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    assert _kiana("load", str(ROOT / "data"), "--db", str(db), "-q").returncode == 0
    before = _counts(db)
    code, err = _interrupted("load", str(corpus), "--db", str(db))
    if code == -signal.SIGINT:  # killed while Python shut down, the load done: 130 to a shell
        assert _counts(db) == (before[0] + 41_536, before[1] + 1)
        return
    assert code == 130
    if _counts(db) == before:  # interrupted while it loaded
        assert err == "kiana load: interrupted: nothing of this load was stored; run it again " + (
            "to load the files\n"
        )
    else:  # a quick machine: the load was committed when Ctrl-C came; it says so
        assert _counts(db) == (before[0] + 41_536, before[1] + 1)
        assert err.startswith("kiana load: interrupted after this load was stored (load 2: ")


def test_ctrl_c_during_regressions_exits_130(full: Path) -> None:
    code, err = _interrupted("regressions", "--db", str(full))
    assert code == 130
    assert err.startswith("kiana regressions: interrupted: nothing was judged; run it again")
    assert "Traceback" not in err and err.count("\n") == 1


def test_ctrl_c_during_report_writes_nothing(full: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, err = _interrupted("report", "--db", str(full), "-o", str(out))
    assert code == 130
    assert err.startswith("kiana report: interrupted: no report was written; run it again")
    assert not out.exists() and list(tmp_path.iterdir()) == []
