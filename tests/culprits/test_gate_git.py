"""Robust git: file names git would quote, integers and dates out of range, shallow
clones, swapped or diverged refs, culprits merged after the session they are blamed
for, and histories with nothing to find.  Each test builds its repository
(``tests/SECURITY.md``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kiana.cli import main
from kiana.culprits.gate import gate as run_gate
from kiana.culprits.history import commits, pr_number
from tests.culprits.hostile import FEB, JAN, LigerRepo, base_repo, gate, pr_rows, rows, slower
from tests.culprits.test_culprits import CSV, OPS, csv_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ODD = 'benchmark/data/all_benchmark_data_"q"é\nx.csv'


@pytest.fixture
def repo(tmp_path: Path) -> LigerRepo:
    return base_repo(tmp_path / "Liger-Kernel")


@pytest.mark.heavy
@pytest.mark.parametrize("head", ["pr", None])
def test_file_names_git_would_quote_are_read(
    repo: LigerRepo, tmp_path: Path, head: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {ODD: csv_text(rows("swiglu", "0.5.0", JAN))}
    repo.git("checkout", "-q", "main")
    repo.commit(files, "an odd name (#2)")
    repo.git("checkout", "-q", "-B", "pr")
    repo.commit({ODD: csv_text(rows("swiglu", "0.5.0", FEB, liger=1.3))}, "slower (#3)")
    result = gate(repo, tmp_path, capsys, head=head)
    assert result.code == 1, result.out + result.err
    assert "git show failed" not in result.err
    assert "regression   swiglu/forward" in result.out


def test_ten_digit_pull_request_numbers_are_data() -> None:
    assert pr_number("x (#99999999999999999999)") is None
    assert pr_number("x (#123456789)") == 123456789


@pytest.mark.heavy
def test_hostile_commits_on_the_pr_do_not_crash_the_gate(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit({f"{OPS}/rms_norm.py": "# a\n"}, "x (#99999999999999999999)")
    repo.commit({f"{OPS}/rms_norm.py": "# b\n"}, "future", date="@253402300799 +0000")
    repo.commit(pr_rows(slower(1.3)), "slower (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 1 and "Traceback" not in result.err
    (finding,) = run_gate(repo.path, "main", "pr").regressions.iter_rows(named=True)
    by_subject = {c["subject"]: c for c in finding["culprits"]}
    assert by_subject["x (#99999999999999999999)"]["pr"] is None
    assert by_subject["future"]["date"] is None


@pytest.mark.heavy
def test_hostile_commits_on_main_do_not_crash_regressions_or_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    repo.commit({CSV: csv_text(rows("rms_norm", "0.5.0", JAN))}, "base (#1)")
    repo.commit({f"{OPS}/rms_norm.py": "# a\n"}, "x (#99999999999999999999)")
    repo.commit({f"{OPS}/rms_norm.py": "# b\n"}, "future", date="@253402300799 +0000")
    repo.commit({CSV: csv_text(rows("rms_norm", "0.5.0", FEB, 1.3))}, "slower (#5)")
    db = tmp_path / "k.duckdb"
    assert main(["import", "liger", "--git", str(repo.path), "--db", str(db)]) == 0
    git = ["--git", str(repo.path)]
    assert main(["regressions", "--db", str(db), "--json", *git]) == 0
    assert main(["report", "--db", str(db), "-o", str(tmp_path / "r.html"), *git]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_out_of_range_rows_are_skipped_on_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stamps = ["9999-12-31 23:59:59", "0001-01-01 00:00:00", "2025-01-01 00:00:00"]
    bad = [{**r, "timestamp": stamps[i % 3]} for i, r in enumerate(rows("rms_norm", "0.5.0", JAN))]
    huge = [{**r, "y_value_50": "1e308"} for r in rows("swiglu", "0.5.0", JAN)[:2]]
    path = tmp_path / "all_benchmark_data.csv"
    path.write_text(csv_text(bad, huge))
    assert main(["import", "liger", str(path)]) == 0
    captured = capsys.readouterr()
    assert "documents: 2" in captured.out and "skipped: 8" in captured.out
    assert "out of range (1970-2099): '9999-12-31 23:59:59'" in captured.err
    assert "out of range (above 1e9): '1e308'" in captured.err


@pytest.mark.heavy
def test_a_history_with_zero_findings_does_not_crash(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit(pr_rows(rows("new_kernel", "0.5.0", FEB)), "a new kernel (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 0, result.err
    assert "8 head row(s) match no history" in result.out


@pytest.mark.heavy
def test_a_shallow_clone_warns_and_never_blames_its_graft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    origin = base_repo(tmp_path / "origin")
    origin.commit({f"{OPS}/swiglu.py": "# unrelated\n"}, "swiglu (#2)")
    tip = origin.commit(pr_rows(slower(1.3)), "slower (#5)")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{origin.path}",
         str(clone)],
        check=True,
    )  # fmt: skip
    graft = set((clone / ".git" / "shallow").read_text().split())
    assert tip in graft
    note = tmp_path / "c.md"
    args = ["gate", str(clone), "--base", "origin/main", "--head", "origin/pr"]
    assert main([*args, "--markdown", str(note)]) in (0, 1, 3)
    out = capsys.readouterr().out
    assert "warning: shallow clone" in out and "fetch-depth: 0" in note.read_text()
    result = run_gate(clone, "origin/main", "origin/pr")
    blamed = {c["commit"] for cs in result.findings["culprits"].to_list() if cs for c in cs}
    assert not blamed & graft
    assert (
        not {c.sha for c in commits(clone, "origin/main", "origin/pr", first_parent=False)} & graft
    )


def test_swapped_refs_are_a_usage_error(
    repo: LigerRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit(pr_rows(slower(1.3)), "slower (#5)")
    assert main(["gate", str(repo.path), "--base", "pr", "--head", "main"]) == 2
    assert "is behind --base" in capsys.readouterr().err


@pytest.mark.heavy
def test_a_diverged_head_warns(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit(pr_rows(slower(1.3)), "slower (#5)")
    repo.git("checkout", "-q", "main")
    repo.commit({"README.md": "newer\n"}, "docs (#6)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 1
    assert "the head does not contain the base" in result.out
    assert "**warning**" in result.comment


@pytest.mark.heavy
def test_commits_merged_after_the_later_session_go_last(
    repo: LigerRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    early = repo.commit({f"{OPS}/utils.py": "def calculate_settings(): 1\n"}, "utils (#2)")
    repo.commit(pr_rows(slower(1.3)), "slower (#5)")
    late = repo.commit(
        {f"{OPS}/rms_norm.py": "from liger_kernel.ops.utils import x\n"},
        "later",
        date="2025-03-01T00:00:00Z",
    )
    (finding,) = run_gate(repo.path, "main", "pr").regressions.iter_rows(named=True)
    ranked = [(c["commit"], c["role"]) for c in finding["culprits"]]
    assert ranked == [(early, "imported"), (late, "late")]


@pytest.mark.heavy
def test_first_culprit_column_is_filled(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change = repo.commit({f"{OPS}/rms_norm.py": "# v2\n"}, "Rewrite rms_norm (#4)")
    repo.commit(pr_rows(slower(1.3)), "rows (#5)")
    text = gate(repo, tmp_path, capsys).comment
    row = next(line for line in text.splitlines() if line.startswith("| regression"))
    assert f"`{change[:10]}` Rewrite rms\\_norm" in row.rsplit("|", 2)[-2]


@pytest.mark.heavy
def test_a_work_tree_on_its_base_names_git_diff_not_an_empty_range(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.git("checkout", "-q", "main")
    repo.write(pr_rows(slower(1.3)))
    (finding,) = run_gate(repo.path, "main").regressions.iter_rows(named=True)
    base = repo.git("rev-parse", "main")[:12]
    assert finding["culprits_command"].startswith(f"git diff {base} -- ")
    assert f"{base}..{base}" not in gate(repo, tmp_path, capsys, head=None).comment
