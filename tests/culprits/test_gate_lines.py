"""One reader of lines: the gate's line numbers, skips and counts come from the csv
module's reader position, and ``--head`` (git's objects) reads bytes as the work tree
does (``tests/SECURITY.md``, issue 40)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kiana.culprits.gaterows import raw_records
from tests.culprits.hostile import FEB, JAN, LigerRepo, base_repo, gate, rows
from tests.culprits.test_culprits import CSV, csv_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def repo(tmp_path: Path) -> LigerRepo:
    return base_repo(tmp_path / "Liger-Kernel")


def _malformed(text: str) -> str:
    """``text`` with every Liger row at FEB one field too long (a record the csv reader
    skips: ``expected 15 fields, found 16``)."""
    return "\r\n".join(
        line + ",x" if ",liger," in line and FEB in line else line for line in text.split("\r\n")
    )


def _base_sessions() -> tuple[list[dict[str, str]], ...]:
    return rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", JAN)


def test_records_are_found_by_the_csv_readers_position() -> None:
    text = "a,b\n\f\n1,\u2028x\n\x85,2\n"
    assert raw_records(text) == {1: "a,b", 2: "\f", 3: "1,\u2028x", 4: "\x85,2"}
    assert raw_records('a,b\n"x\ny",1\n2,3') == {1: "a,b", 2: '"x\ny",1', 4: "2,3"}


@pytest.mark.heavy
@pytest.mark.parametrize(
    "layout",
    [
        pytest.param("form-feeds", id="form-feeds-after-the-header"),
        pytest.param("u2028", id="u2028-in-a-baseline-row-placed-first"),
    ],
)
def test_malformed_liger_rows_are_counted_whatever_splits_lines(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    body = _malformed(csv_text(*_base_sessions(), rows("rms_norm", "0.5.0", FEB, liger=1.3)))
    header, rest = body.split("\r\n", 1)
    if layout == "form-feeds":
        text = header + "\r\n" + "\f\r\n" * 16 + rest
    else:
        first = {**rows("rms_norm", "0.5.0", JAN)[1], "x_label": "hidden\u2028size" * 4}
        text = header + "\r\n" + csv_text([first]).split("\r\n", 1)[1] + rest
    repo.commit({CSV: text}, "slower rms_norm, unreadable medians (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3, result.out
    assert "4 head row(s) rejected (4 of Liger)" in result.out, result.out


def _commit_bytes(repo: LigerRepo, data: bytes) -> None:
    (repo.path / CSV).write_bytes(data)
    repo.git("add", CSV)
    repo.git("commit", "-q", "-m", "slower, one byte not UTF-8 (#5)")


@pytest.mark.heavy
def test_invalid_utf8_is_refused_under_head_as_in_the_work_tree(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = csv_text(*_base_sessions(), rows("rms_norm", "0.5.0", FEB, liger=1.3))
    data = slow.encode().replace(b"NVIDIA H100", b"NVIDIA H\xff100")
    _commit_bytes(repo, data)
    for head in ("pr", None):
        result = gate(repo, tmp_path, capsys, head=head)
        assert result.code == 3, (head, result.out)
        assert "refused: benchmark/data/all_benchmark_data.csv: not UTF-8 (byte" in result.out
        assert "\ufffd" not in result.out + result.comment


@pytest.mark.heavy
def test_a_committed_benchmark_folder_link_is_refused_under_head(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmark -> bench2`` committed, the slow rows in ``bench2/data``: refused as
    the work tree refuses it (before: nothing read, exit 0)."""
    slow = csv_text(*_base_sessions(), rows("rms_norm", "0.5.0", FEB, liger=1.3))
    repo.git("mv", "benchmark", "bench2")
    repo.write({"bench2/data/all_benchmark_data.csv": slow})
    (repo.path / "benchmark").symlink_to("bench2")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "move the benchmarks (#5)")
    for head in ("pr", None):
        result = gate(repo, tmp_path, capsys, head=head)
        assert result.code == 3, (head, result.out)
        assert "refused: benchmark: a symbolic link" in result.out, result.out
