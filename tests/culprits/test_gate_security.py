"""The gate leaks nothing and prints nothing live: links are never followed, errors
never quote a file, data strings are inert in the terminal and in the comment, and the
comment stays under GitHub's limit.  Each test builds its hostile repository
(``tests/SECURITY.md`` lists them)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kiana.cli import main
from kiana.culprits.markdown import LIMIT
from tests.culprits.hostile import (
    FEB,
    JAN,
    LigerRepo,
    base_repo,
    csv_text,
    disrupt,
    gate,
    pr_rows,
    rows,
)
from tests.culprits.test_culprits import CSV, OPS

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SECRET = "GH_TOKEN=ghp_s3cr3tvalue0123456789"


@pytest.fixture
def repo(tmp_path: Path) -> LigerRepo:
    return base_repo(tmp_path / "Liger-Kernel")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


@pytest.mark.heavy
def test_a_link_at_the_markdown_name_is_refused_and_its_target_untouched(
    repo: LigerRepo, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = repo.path / "kiana-gate.md"
    planted.symlink_to(secret)
    repo.commit(pr_rows(rows("rms_norm", "0.5.0", FEB, 1.3)), "slower (#5)")
    result = gate(repo, tmp_path, capsys, markdown=planted)
    assert result.code == 2
    assert secret.read_text() == SECRET + "\n" and planted.is_symlink()
    assert "kiana-gate.md is a symbolic link: kiana writes no file through a link" in result.err
    assert SECRET not in result.out + result.err


def test_a_crash_never_writes_through_the_planted_link(
    repo: LigerRepo,
    tmp_path: Path,
    secret: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    disrupt(monkeypatch, "kiana.culprits.gate.gate", error=RuntimeError("boom"))
    planted = repo.path / "kiana-gate.md"
    planted.symlink_to(secret)
    result = gate(repo, tmp_path, capsys, markdown=planted)
    assert result.code == 2  # refused before judging: the link, not the crash
    assert secret.read_text() == SECRET + "\n" and planted.is_symlink()
    assert "is a symbolic link" in result.err and SECRET not in result.out + result.err


def test_a_linked_reports_folder_is_refused_and_named(
    repo: LigerRepo, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40: ``--markdown reports/kiana-gate.md`` where the PR made ``reports/`` a
    link to a folder outside wrote a temporary file there and renamed it over a file."""
    (repo.path / "reports").symlink_to(secret.parent)
    result = gate(repo, tmp_path, capsys, markdown=repo.path / "reports" / "secret.txt")
    assert result.code == 2 and "reports is a symbolic link" in result.err
    assert sorted(os.listdir(secret.parent)) == ["secret.txt"]
    assert secret.read_text() == SECRET + "\n"


def test_work_tree_data_folder_linked_outside_is_refused_and_named(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "all_benchmark_data.csv").write_text(csv_text(rows("evil_kernel", "0.5.0", FEB)))
    shutil.rmtree(repo.path / "benchmark" / "data")
    (repo.path / "benchmark" / "data").symlink_to(outside)
    result = gate(repo, tmp_path, capsys, head=None)
    assert result.code == 3
    assert "benchmark/data: a symbolic link (outside the repository): not followed" in result.out
    assert "evil_kernel" not in result.out + result.comment
    assert "head file(s) refused" in result.comment


@pytest.mark.parametrize("target", ["secret", "/proc/self/environ"])
def test_work_tree_csv_link_is_refused_never_read(
    repo: LigerRepo,
    tmp_path: Path,
    secret: Path,
    target: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    link = repo.path / "benchmark" / "data" / "all_benchmark_data_x.csv"
    link.symlink_to(secret if target == "secret" else target)
    result = gate(repo, tmp_path, capsys, head=None)
    assert result.code == 3
    assert "benchmark/data/all_benchmark_data_x.csv: a symbolic link: not followed" in result.out
    assert SECRET not in result.out + result.err + result.comment
    assert "GH_TOKEN" not in result.out + result.err + result.comment


def test_committed_csv_link_is_refused(
    repo: LigerRepo, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo.path / "benchmark" / "data" / "leak.csv").symlink_to(secret)
    repo.git("add", "benchmark/data/leak.csv")
    repo.git("commit", "-q", "-m", "add a link")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3
    assert "benchmark/data/leak.csv: a symbolic link in git (mode 120000): not read" in result.out
    assert SECRET not in result.out + result.comment


def test_a_fifo_in_the_work_tree_is_refused_without_blocking(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(repo.path / "benchmark" / "data" / "pipe.csv")
    result = gate(repo, tmp_path, capsys, head=None)
    assert result.code == 3 and "pipe.csv: not a regular file: not read" in result.out


@pytest.mark.heavy
def test_a_newline_in_a_name_cannot_start_a_workflow_command(
    repo: LigerRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    evil = "0.5.0\n::error file=README.md,line=1::safe to merge\u202e"
    repo.commit(pr_rows(rows("rms_norm", evil, FEB, 1.3)), "slower\n::warning::x (#5)")
    result = gate(repo, tmp_path, capsys)
    lines = result.out.splitlines()
    assert lines[0].startswith("::stop-commands::")
    assert lines[-1] == f"::{lines[0].removeprefix('::stop-commands::')}::"
    assert not [line for line in lines[1:-1] if line.lstrip().startswith("::")]
    assert not [line for line in lines[1:-1] if "::" in line or "##[" in line]
    assert "\\n:\\:error file=README.md" in result.out and "\u202e" not in result.out
    assert "\u202e" not in result.comment and "\n::error" not in result.comment


@pytest.mark.heavy
def test_mentions_links_and_html_in_subjects_are_inert(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subject = (
        "@octocat @org/team see https://evil.example www.evil.example ![x](http://i/x.png) "
        "<img src=x> `code` | pipe &#64;entity (#5)"
    )
    repo.commit(
        {f"{OPS}/rms_norm.py": "# v2\n", **pr_rows(rows("rms_norm", "0.5.0", FEB, 1.3))}, subject
    )
    text = gate(repo, tmp_path, capsys).comment
    assert "@octocat" not in text and "@org/team" not in text
    assert "@&#8203;octocat" in text and "@&#8203;org/team" in text
    assert "https://evil" not in text and "http://i" not in text and "www.evil" not in text
    assert "<img" not in text and "![x](" not in text and "\\| pipe" in text
    assert "&#64;entity" not in text and "&amp;\\#64;entity" in text


@pytest.mark.heavy
def test_comment_stays_under_githubs_limit_and_names_the_artifact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    kernels = [f"kernel_{i:03d}_with_a_rather_long_name_for_the_table" for i in range(240)]
    repo.commit({CSV: csv_text(*(rows(k, "0.5.0", JAN) for k in kernels))}, "base (#1)")
    repo.git("checkout", "-q", "-b", "pr")
    slow = [rows(k, "0.5.0", FEB, liger=1.2 + (i % 7) / 100) for i, k in enumerate(kernels)]
    # Every kernel's code changes (untouched, every kernel moving together would be the
    # machine's move: kiana.stats.toolchain, could not judge).
    code = {f"{OPS}/{k}.py": "# v2\n" for k in kernels}
    repo.commit({CSV: csv_text(*slow), **code}, "re-run everything " + "x" * 150 + " (#2)")
    result = gate(repo, tmp_path, capsys, "--json-file", str(tmp_path / "kiana-gate.json"))
    assert result.code == 1
    assert len(result.comment) <= LIMIT < 65_536
    assert "more finding(s)" in result.comment and "`kiana-gate.json`" in result.comment
    assert (tmp_path / "kiana-gate.json").stat().st_size > len(result.comment)


def test_every_untouched_kernel_slower_together_could_not_be_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pull request that changes no kernel's code and whose rows are all 20% slower
    says the head's machine or toolchain moved (exit 3), never "passed"."""
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    kernels = [f"kernel_{i}" for i in range(7)]
    repo.commit({CSV: csv_text(*(rows(k, "0.5.0", JAN) for k in kernels))}, "base (#1)")
    repo.git("checkout", "-q", "-b", "pr")
    slow = [rows(k, "0.5.0", FEB, liger=1.2 + i / 1000) for i, k in enumerate(kernels)]
    repo.commit({CSV: csv_text(*slow)}, "re-run (#2)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3
    assert "moved with every other Liger kernel no commit touched" in result.comment


def test_unwritable_markdown_path_exits_2_not_1(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit(pr_rows(rows("rms_norm", "0.5.0", FEB, 1.3)), "slower (#5)")
    result = gate(repo, tmp_path, capsys, markdown=tmp_path / "missing" / "c.md")
    assert result.code == 2
    assert "cannot write" in result.err and "Traceback" not in result.err


def test_import_of_a_link_to_proc_environ_is_refused_and_quotes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "x.csv"
    link.symlink_to("/proc/self/environ")
    assert main(["import", "liger", str(link)]) == 2
    err = capsys.readouterr().err
    assert "a symbolic link: not followed" in err
    assert "PATH=" not in err and "HOME=" not in err


def test_a_foreign_file_is_described_never_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "environ.csv"
    copy.write_bytes(SECRET.encode() + b"\0HOME=/root\0")
    assert main(["import", "liger", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "not a Liger benchmark CSV" in err and "ghp_" not in err and "GH_TOKEN" not in err
