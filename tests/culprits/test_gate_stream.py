"""``kiana gate --max-rows`` stops the read of a work-tree CSV, or of one committed at
``--head``, as the count passes it (issue 40, item 6): the file (the blob) is streamed,
never read whole first."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kiana.cli import main
from kiana.culprits import gaterows, headfiles
from kiana.culprits.gate import gate
from kiana.culprits.gaterows import RowLimitError
from kiana.importers import gitblobs, liger
from tests.importers.test_gitblobs import _children

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,"
    "x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,"
    "timestamp,liger_version\n"
)


def _csv(rows: int) -> str:
    line = 'rms_norm,liger,forward,speed,ms,H,hidden,{},1.0,1.0,1.0,"{{}}",H100,2025-01-01,0.5.0\n'
    return HEADER + "".join(line.format(i) for i in range(rows))


def _repo(path: Path, rows: int) -> Path:
    csv = path / "benchmark" / "data" / "all_benchmark_data.csv"
    csv.parent.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    csv.write_text(_csv(5))
    _commit(path, "base")
    csv.write_text(_csv(rows))
    return path


def _commit(repo: Path, message: str, branch: str | None = None) -> None:
    """Commit the work tree (on a new ``branch``, when given)."""
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    if branch is not None:
        subprocess.run([*git, "checkout", "-qb", branch], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)


def test_max_rows_stops_the_worktree_read_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, 10_000)
    consumed = 0
    real = getattr(gaterows, "stream_lines", None)

    def counting(file: Path, max_chars: int = 1 << 28) -> Iterator[str]:
        nonlocal consumed
        assert real is not None
        for line in real(file, max_chars):
            consumed += 1
            yield line

    whole: list[Path] = []

    def read_whole(file: Path) -> str:
        whole.append(file)
        return real_read(file)

    real_read = liger.read_csv_file
    monkeypatch.setattr(gaterows, "stream_lines", counting, raising=False)
    monkeypatch.setattr(headfiles, "read_csv_file", read_whole)
    with pytest.raises(RowLimitError, match="more than 100 distinct"):
        gate(repo, "main", max_rows=100)
    assert whole == []  # never read whole
    assert 100 < consumed < 1_000


def _whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The blobs read whole from now on (the gate's ``commit_csvs``)."""
    whole: list[str] = []
    real = headfiles.read_blob_bytes

    def recording(repo: Path, blobs: Iterator[str], limit: int) -> dict[str, bytes | None]:
        wanted = list(blobs)
        whole.extend(wanted)
        return real(repo, wanted, limit)

    monkeypatch.setattr(headfiles, "read_blob_bytes", recording)
    return whole


def test_max_rows_stops_the_committed_read_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--head``: the blob is streamed from git and its read stops at the limit."""
    repo = _repo(tmp_path, 10_000)
    _commit(repo, "pr", branch="pr")
    size = (repo / "benchmark" / "data" / "all_benchmark_data.csv").stat().st_size
    streamed = 0
    real_fill = gitblobs.Blobs.fill

    def counting(self: gitblobs.Blobs, serial: int, buffer: memoryview) -> int:
        nonlocal streamed
        got = real_fill(self, serial, buffer)
        streamed += got
        return got

    monkeypatch.setattr(gitblobs.Blobs, "fill", counting)
    whole = _whole_reads(monkeypatch)
    with pytest.raises(RowLimitError, match="more than 100 distinct"):
        gate(repo, "main", "pr", max_rows=100)
    assert whole == []  # never read whole
    assert 0 < streamed < size // 10


def test_head_stops_with_the_work_trees_exit_and_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path, 1_000)
    _commit(repo, "pr", branch="pr")
    whole = _whole_reads(monkeypatch)
    args = ["gate", str(repo), "--base", "main", "--max-rows", "100"]
    assert main(args) == 4
    worktree = capsys.readouterr().err
    assert main([*args, "--head", "pr"]) == 4
    assert capsys.readouterr().err == worktree
    assert whole == []  # stopped by the streamed count, before any blob read whole


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_committed_read_stopped_early_leaves_no_git_process(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 100_000)  # 10 MB: git blocks on the full pipe when stopped
    _commit(repo, "pr", branch="pr")
    before = _children()
    with pytest.raises(RowLimitError):
        gate(repo, "main", "pr", max_rows=100)
    assert _children() == before


def test_a_normal_head_is_judged_as_without_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under the limit, the streamed count changes nothing: the same exit and JSON as a
    gate that skips it."""
    repo = _repo(tmp_path / "repo", 50)
    _commit(repo, "pr", branch="pr")
    args = ["gate", str(repo), "--base", "main", "--head", "pr", "--json", "--max-rows", "100"]
    counted = main(args), capsys.readouterr().out
    monkeypatch.setattr(gaterows, "_precount", lambda *args: None)
    assert (main(args), capsys.readouterr().out) == counted
    assert '"head_rows": 45' in counted[1]


@pytest.mark.parametrize("head", [None, "pr"])
def test_duplicates_do_not_stop_the_gate(tmp_path: Path, head: str | None) -> None:
    """The count is of distinct rows: a file repeating its rows is judged as before."""
    repo = _repo(tmp_path, 50)
    csv = repo / "benchmark" / "data" / "all_benchmark_data.csv"
    csv.write_text(_csv(50) + _csv(50).removeprefix(HEADER) * 20)
    _commit(repo, "pr", branch="pr")
    result = gate(repo, "main", head, max_rows=100)
    assert result.head_rows == 45


@pytest.mark.parametrize("head", [None, "pr"])
def test_invalid_utf8_is_still_refused(tmp_path: Path, head: str | None) -> None:
    """A file that stops decoding gives back the rows counted from it: refused, naming
    its byte (after the BOM, as before), and the other file's rows alone counted."""
    repo = _repo(tmp_path, 60)
    data = repo / "benchmark" / "data"
    body = _csv(60).removeprefix(HEADER) * 20  # 100 KB: many decoded chunks counted first
    bad = ("\ufeff" + HEADER + body).encode()
    (data / "all_benchmark_data.csv").write_bytes(bad + b"\xff\n")
    (data / "all_benchmark_data_cutile.csv").write_text(_csv(60).replace("H100", "B200"))
    _commit(repo, "pr", branch="pr")
    result = gate(repo, "main", head, max_rows=100)
    byte = f"{len(bad) - 3:,}"
    refused = f"benchmark/data/all_benchmark_data.csv: not UTF-8 (byte {byte})"
    assert result.accounting.refused == (refused,)
