"""Size limits: an oversized document is a clear reject; a large JSONL streams with
bounded memory (the child's peak RSS stays far below the input size)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import kiana.load
from kiana.load.database import restore_memory_limit
from kiana.load.validate import MAX_DOCUMENT_BYTES
from tests import reliability as rel


def _oversized(n: int) -> str:
    doc = rel.make_document(n, prefix="mut")
    doc["run"]["metadata"]["labels"]["padding"] = "x" * (MAX_DOCUMENT_BYTES + 1024)
    return json.dumps(doc)


@pytest.mark.heavy
@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_oversized_jsonl_line_is_rejected_and_its_neighbours_load(
    suffix: str, tmp_path: Path
) -> None:
    lines = [json.dumps(rel.make_document(1)), _oversized(2), json.dumps(rel.make_document(3))]
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path / f"big{suffix}"
    path.write_bytes(gzip.compress(data, compresslevel=1) if suffix.endswith(".gz") else data)
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [path])
    assert (summary.read, summary.loaded, summary.rejected) == (3, 2, 1)
    source, _path, reason = summary.first_rejects[0]
    assert source == f"{path}:2"
    assert "16 MiB" in reason


@pytest.mark.heavy
def test_oversized_json_file_is_rejected_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(_oversized(1))
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [path])
    assert (summary.loaded, summary.rejected) == (0, 1)
    assert "MiB" in summary.first_rejects[0][2]


#: How much junk the streaming test writes (bytes), one line of 1 MiB at a time.
STREAM_BYTES = 200 << 20

#: The load of the streaming test runs in batches of this many bytes of text, so that
#: even the smaller input fills the loader's pipeline (reading, checking, storing).
STREAM_BATCH_BYTES = 16 << 20

#: The child reports its own peak, ``VmHWM`` of ``/proc/self/status`` (KiB): not
#: ``ru_maxrss``, which Linux carries over ``execve`` from the process that started it
#: (the kernel's exec_mmap keeps the larger of the two high-water marks), so that a child
#: of a pytest run grown to 2 GiB reported 2 GiB whatever it held itself.
_RSS_CHILD = f"""
import sys
import kiana.load
limits = kiana.load.LoadLimits(batch_bytes={STREAM_BATCH_BYTES})
kiana.load.load(kiana.load.connect(None), [sys.argv[1]], limits=limits)
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def _peak_rss_loading(path: Path, size: int) -> int:
    """Write ``size`` bytes of JSONL (documents between 1 MiB junk lines that are
    rejected), load it in a child process, return the child's peak RSS in bytes."""
    junk = '{"run": "' + "y" * ((1 << 20) - 20) + '"}\n'
    with path.open("w") as out:
        written = 0
        n = 0
        while written < size:
            out.write(json.dumps(rel.make_document(n)) + "\n")
            out.write(junk)
            written += len(junk)
            n += 1
    done = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    path.unlink()
    return int(done.stdout.split()[-1]) << 10  # VmHWM is in KiB


@pytest.mark.heavy
def test_large_jsonl_streams_with_bounded_memory(tmp_path: Path) -> None:
    """Bounded means flat as the input grows: the loader holds a few batches (at most
    BATCH_BYTES of text each: one read, one checked, one stored) at a time, so three
    times the input must not cost noticeably more memory, and neither size may come near
    holding the input."""
    small = _peak_rss_loading(tmp_path / "small.jsonl", STREAM_BYTES // 2)
    large = _peak_rss_loading(tmp_path / "large.jsonl", STREAM_BYTES * 3 // 2)
    assert large < small * 1.25 + (64 << 20), (
        f"peak RSS grew from {small >> 20} MiB to {large >> 20} MiB when the input tripled"
    )
    assert large < 2 << 30, f"peak RSS {large >> 20} MiB: over 2 GiB"


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def _limits_during_load(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, limits: kiana.load.LoadLimits
) -> set[str]:
    """DuckDB's memory_limit after each stored batch of a load of three documents."""
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(rel.make_document(n)) + "\n" for n in range(3)))
    seen: set[str] = set()
    kiana.load.load(con, [path], limits=limits, progress=lambda *_: seen.add(_limit(con)))
    return seen


def test_a_load_lowers_duckdbs_default_memory_limit_and_resets_it(tmp_path: Path) -> None:
    con = kiana.load.connect(tmp_path / "k.duckdb")
    default = _limit(con)
    limits = kiana.load.LoadLimits(batch_records=1, batch_bytes=32 << 20)
    assert _limits_during_load(con, tmp_path, limits) == {"512.0 MiB"}  # 16 batches
    assert _limit(con) == default


def test_a_load_keeps_a_memory_limit_someone_set(tmp_path: Path) -> None:
    con = kiana.load.connect(tmp_path / "k.duckdb")
    con.execute("SET memory_limit = '2GiB'")
    limits = kiana.load.LoadLimits(batch_records=1)
    assert _limits_during_load(con, tmp_path, limits) == {"2.0 GiB"}
    assert _limit(con) == "2.0 GiB"


@pytest.mark.parametrize("limit", [None, "3GB", "512MiB"])
def test_a_memory_limit_restored_again_and_again_stays_as_it_was(limit: str | None) -> None:
    con = kiana.load.connect()
    try:
        if limit is not None:
            con.execute(f"SET memory_limit = '{limit}'")
        (before,) = con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",)
        for _ in range(5):
            con.execute("SET memory_limit = '100MiB'")
            restore_memory_limit(con, before)
        (after,) = con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",)
        assert after == before
    finally:
        con.close()
