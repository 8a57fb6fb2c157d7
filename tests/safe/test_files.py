"""kiana.safe.files: no output follows a link (issue 40, item 3; tests/SECURITY.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kiana.safe import OutputRefused, open_output, refuse_links, write_text


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("keep")
    return outside


def test_a_link_at_the_name_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = _outside(tmp_path) / "secret"
    (tmp_path / "out.md").symlink_to(target)
    with pytest.raises(OutputRefused, match=r"out\.md is a symbolic link"):
        write_text(tmp_path / "out.md", "new")
    assert target.read_text() == "keep" and (tmp_path / "out.md").is_symlink()


def test_a_linked_parent_is_refused_and_named(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (tmp_path / "reports").symlink_to(outside)
    with pytest.raises(OutputRefused, match=r"reports is a symbolic link"):
        write_text(tmp_path / "reports" / "kiana-gate.md", "x")
    assert sorted(os.listdir(outside)) == ["secret"]


def test_a_link_deeper_in_the_path_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b").symlink_to(outside)
    with pytest.raises(OutputRefused, match="b is a symbolic link"):
        write_text(tmp_path / "a" / "b" / "c" / "x.json", "x", mkdirs=True)
    assert sorted(os.listdir(outside)) == ["secret"]


def test_a_relative_path_is_walked_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = _outside(tmp_path)
    (tmp_path / "o").symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputRefused):
        write_text(Path("o/report.html"), "x")
    write_text(Path("fine/report.html"), "ok", mkdirs=True)
    assert (tmp_path / "fine" / "report.html").read_text() == "ok"


def test_a_planted_fixed_temporary_name_is_never_written(tmp_path: Path) -> None:
    """The old writers used ``.report.html.tmp``: a link there was written through."""
    target = _outside(tmp_path) / "secret"
    (tmp_path / ".report.html.tmp").symlink_to(target)
    write_text(tmp_path / "report.html", "page")
    assert target.read_text() == "keep"
    assert (tmp_path / "report.html").read_text() == "page"


def test_a_failed_write_leaves_no_file_and_no_temporary(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), open_output(tmp_path / "x.jsonl") as out:
        out.write("half")
        raise RuntimeError("stopped")
    assert os.listdir(tmp_path) == []


def test_a_folder_at_the_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputRefused, match="is a folder"):
        write_text(tmp_path / "out", "x")


def test_a_missing_folder_is_an_os_error_without_mkdirs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_text(tmp_path / "missing" / "x.md", "x")
    assert os.listdir(tmp_path) == []


def test_refuse_links_below_finds_a_planted_link_inside_a_folder(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (tmp_path / "lake" / "runs").mkdir(parents=True)
    refuse_links(tmp_path / "lake", below=True)
    (tmp_path / "lake" / "runs" / "gpu=H100").symlink_to(outside)
    with pytest.raises(OutputRefused, match="gpu=H100 is a symbolic link"):
        refuse_links(tmp_path / "lake", below=True)
