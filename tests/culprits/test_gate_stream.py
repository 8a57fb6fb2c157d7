"""``kiana gate --max-rows`` stops the read of a work-tree CSV as the count passes it
(issue 40, item 6): the file is streamed, never read whole first."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kiana.culprits import gaterows, headfiles
from kiana.culprits.gate import gate
from kiana.culprits.gaterows import RowLimitError
from kiana.importers import liger

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
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    csv.write_text(_csv(5))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    csv.write_text(_csv(rows))
    return path


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


def test_duplicates_do_not_stop_the_gate(tmp_path: Path) -> None:
    """The count is of distinct rows: a file repeating its rows is judged as before."""
    repo = _repo(tmp_path, 50)
    csv = repo / "benchmark" / "data" / "all_benchmark_data.csv"
    csv.write_text(_csv(50) + _csv(50).removeprefix(HEADER) * 20)
    result = gate(repo, "main", max_rows=100)
    assert result.head_rows == 45


def test_invalid_utf8_is_still_refused(tmp_path: Path) -> None:
    """A file that stops decoding gives back the rows counted from it: refused, as before."""
    repo = _repo(tmp_path, 50)
    csv = repo / "benchmark" / "data" / "all_benchmark_data.csv"
    csv.write_bytes(_csv(50).encode() + b"\xff\n")
    result = gate(repo, "main", max_rows=100)
    assert any("not UTF-8" in r for r in result.accounting.refused)
