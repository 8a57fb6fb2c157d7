"""``kiana.importers.gitblobs.Blobs``: a blob streamed from ``git cat-file --batch``, and
git ended (no zombie, no deadlock) when the reader stops part way."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kiana.importers.gitblobs import Blobs

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BIG = b"x" * (4 << 20)  # far over a pipe's buffer: git blocks writing it


def _blob(repo: Path, data: bytes) -> str:
    if not (repo / ".git").is_dir():
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
        input=data,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().strip()


def _children() -> list[str]:
    """This process's children (zombies included), from /proc."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                found.append(entry.name)
    return found


def test_a_blob_is_streamed_as_committed(tmp_path: Path) -> None:
    blob = _blob(tmp_path, b"a,b\n" * 10_000)
    with Blobs(tmp_path, 1 << 20) as reader:
        stream = reader.open(blob)
        assert stream is not None
        assert stream.read(4) == b"a,b\n"
        assert stream.read() == b"a,b\n" * 9_999


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_stream_stopped_part_way_ends_git_without_a_zombie(tmp_path: Path) -> None:
    blob = _blob(tmp_path, BIG)
    before = _children()
    with Blobs(tmp_path, 1 << 30) as reader:
        stream = reader.open(blob)
        assert stream is not None and stream.read(10) == b"x" * 10
    assert _children() == before


def test_the_next_read_skips_what_a_stream_left(tmp_path: Path) -> None:
    first, second = _blob(tmp_path, BIG), _blob(tmp_path, b"second\n")
    with Blobs(tmp_path, 1 << 30) as reader:
        stream = reader.open(first)
        assert stream is not None and stream.read(10) == b"x" * 10
        assert reader.read_bytes(second) == b"second\n"
        assert set(stream.read()) <= {ord("x")}  # stale: what it buffered, none of the next


def test_a_blob_over_the_limit_opens_nothing(tmp_path: Path) -> None:
    big, small = _blob(tmp_path, BIG), _blob(tmp_path, b"small\n")
    with Blobs(tmp_path, 1 << 20) as reader:
        assert reader.open(big) is None
        assert reader.read_bytes(small) == b"small\n"
