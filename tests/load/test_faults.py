"""Faults: ``kiana load`` killed mid-load, two loads at once, a full disk.

After a SIGKILL the database opens and holds the whole load or none of it, and loading
again gives exactly the tables of an uninterrupted load.  A second concurrent load
waits or fails with a clear message.  A full disk is a clear error with the database
intact.
"""

from __future__ import annotations

import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import reliability as rel

pytestmark = pytest.mark.heavy  # every test here is over the quick loop's budget

SEEDS = rel.ROOT / "data" / "seeds"


def _load(corpus: Path, db: Path, batch: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", rel.CHILD, str(batch), str(corpus), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _prepare(tmp: Path, count: int, batch: int) -> tuple[Path, Path, dict[str, Any], float]:
    """A corpus, a base database holding the seeds, and the reference snapshot of the
    base plus one uninterrupted load of the corpus (and how long that load took)."""
    corpus = rel.write_corpus(tmp / "corpus.jsonl", count)
    base = tmp / "base.duckdb"
    assert rel.kiana("load", str(SEEDS), "--db", str(base), "-q").returncode == 0
    # Two uninterrupted loads, the quicker one timed: a first load (cold caches) or one
    # slowed by a busy machine would put most random kills after the end of a load.
    times = []
    for name in ("warm.duckdb", "reference.duckdb"):
        reference_db = tmp / name
        shutil.copy(base, reference_db)
        started = time.monotonic()
        out = _load(corpus, reference_db, batch)
        times.append(time.monotonic() - started)
        assert out.returncode == 0, out.stderr
    return corpus, base, rel.snapshot(reference_db), min(times)


def _kill_many(tmp: Path, count: int, batch: int, kills: int, seed: int) -> list[rel.KillResult]:
    corpus, base, reference, full = _prepare(tmp, count, batch)
    rng = random.Random(seed)
    results = []
    for i in range(kills):
        db = tmp / f"kill{i}.duckdb"
        shutil.copy(base, db)
        # spread the kills over the whole load: startup, batches, commit, after
        delay = rng.uniform(0.3, full * 1.1)
        results.append(rel.kill_once(db, corpus, reference, 2, delay, batch))
    return results


def test_killed_load_leaves_all_or_nothing_and_reruns_to_the_same_tables(
    tmp_path: Path,
) -> None:
    results = _kill_many(tmp_path, 300, 25, kills=1, seed=1)
    assert [r.state for r in results if r.state == "broken"] == []
    assert all(r.rerun_matches for r in results)


def test_many_kills_at_random_points(tmp_path: Path) -> None:
    results = _kill_many(tmp_path, 1500, 100, kills=10, seed=2)
    assert [r for r in results if r.state == "broken" or not r.rerun_matches] == []
    assert sum(r.killed for r in results) >= 5  # most kills landed mid-load


def test_two_loads_at_once_one_waits_or_fails_clearly(tmp_path: Path) -> None:
    corpus = rel.write_corpus(tmp_path / "corpus.jsonl", 400)
    db = tmp_path / "k.duckdb"
    args = [sys.executable, "-c", rel.CHILD, "50", str(corpus), "--db", str(db)]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # the first holds the database now
    second = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    _out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert "Traceback" not in second.stderr
    if second.returncode != 0:
        assert second.returncode == 2
        assert "in use by another process" in second.stderr
    snap = rel.snapshot(db)
    assert snap["runs"] == 400
    again = _load(corpus, db, 50)
    assert again.returncode == 0 and rel.snapshot(db)["runs"] == 400


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("no mount command here")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): not root?")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_is_a_clear_error_and_the_database_survives(
    small_tmpfs: Path, tmp_path: Path
) -> None:
    db = small_tmpfs / "k.duckdb"
    assert rel.kiana("load", str(SEEDS), "--db", str(db), "-q").returncode == 0
    before = rel.snapshot(db)
    corpus = rel.write_corpus(tmp_path / "big.jsonl", 3000)
    out = _load(corpus, db, 1000)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert "error:" in out.stderr and "hint:" in out.stderr
    (small_tmpfs / "filler").unlink(missing_ok=True)
    assert rel.snapshot(db) == before


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, 2 << 20))


def test_file_size_limit_is_a_clear_error_and_the_database_survives(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    assert rel.kiana("load", str(SEEDS), "--db", str(db), "-q").returncode == 0
    before = rel.snapshot(db)
    corpus = rel.write_corpus(tmp_path / "big.jsonl", 3000)
    out = subprocess.run(
        [sys.executable, "-c", rel.CHILD, "1000", str(corpus), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=_limit_file_size,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and "error:" in out.stderr
    assert rel.snapshot(db) == before
