"""``kiana import liger --git``: the union of every row in a CSV's git history."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kiana.errors import InputError
from kiana.importers.git import import_git
from kiana.importers.rows import COLUMNS
from tests.conftest import run_kiana
from tests.importers.test_liger import csv_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BASE = {
    "kernel_name": "rms_norm",
    "kernel_provider": "liger",
    "kernel_operation_mode": "forward",
    "metric_name": "speed",
    "metric_unit": "ms",
    "x_name": "H",
    "x_label": "hidden size",
    "x_value": "1024",
    "y_value_50": "0.5",
    "y_value_20": "0.3",
    "y_value_80": "1.0",
    "extra_benchmark_config_str": '{"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-06}',
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "timestamp": "2025-01-01 00:00:00",
    "liger_version": "0.5.0",
}
CSV_PATH = "benchmark/data/all_benchmark_data.csv"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def v(version: str, median: str, stamp: str, **changes: str) -> dict[str, str]:
    return {**BASE, "liger_version": version, "y_value_50": median, "timestamp": stamp, **changes}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Three releases of one CSV, each overwriting the last, plus noise commits."""
    repo = tmp_path / "Liger-Kernel"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    a1 = v("0.5.0", "0.50", "2025-01-01 00:00:00")
    b1 = v("0.5.0", "0.90", "2025-01-01 00:00:00", x_value="2048")
    commit(repo, {CSV_PATH: csv_text(a1, b1)}, "0.5.0")
    commit(repo, {"README.md": "hello\n"}, "docs only")
    a2 = v("0.6.0", "0.55", "2025-03-01 00:00:00")
    commit(repo, {CSV_PATH: csv_text(a2, b1)}, "0.6.0 rms_norm 1024")
    a3 = v("0.7.0", "0.52", "2025-05-01 00:00:00")
    b3 = v("0.7.0", "0.95", "2025-05-01 00:00:00", x_value="2048")
    commit(repo, {CSV_PATH: csv_text(a3, b3)}, "0.7.0")
    return repo


def test_union_of_every_row_ever_recorded(repo: Path) -> None:
    history = import_git(repo)
    assert (history.commits, history.file_versions) == (3, 3)
    assert (history.rows_seen, history.unique_rows) == (6, 5)
    assert len(history.result.documents) == 5
    assert history.liger_versions == ("0.5.0", "0.6.0", "0.7.0")


def test_overwritten_row_keeps_each_release_value(repo: Path) -> None:
    docs = import_git(repo).result.documents
    medians = sorted(
        (
            d["run"]["metadata"]["labels"]["liger_version"],
            d["run"]["spec"]["timing"]["latencyNs"]["median"],
        )
        for d in docs
        if d["run"]["spec"]["sourceNative"]["externalId"].split("/")[4].startswith("hidden1024")
    )
    assert medians == [("0.5.0", 500000), ("0.6.0", 550000), ("0.7.0", 520000)]


def test_rev_range_limits_the_walk(repo: Path) -> None:
    first = git(repo, "rev-list", "--max-parents=0", "HEAD")
    history = import_git(repo, f"{first}..HEAD")
    assert (history.commits, history.unique_rows) == (2, 4)


def test_csv_in_a_new_file_is_walked(repo: Path) -> None:
    other = v("0.7.0", "1.0", "2025-05-02 00:00:00", kernel_name="swiglu")
    commit(repo, {"benchmark/data/all_benchmark_data_cutile.csv": csv_text(other)}, "cutile")
    assert len(import_git(repo).result.documents) == 6


def test_csv_without_version_column_takes_the_release_of_its_commit(tmp_path: Path) -> None:
    repo = tmp_path / "old"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    columns = tuple(c for c in COLUMNS if c != "liger_version")
    files = {
        CSV_PATH: csv_text(BASE, columns=columns),
        "pyproject.toml": '[project]\nname = "liger_kernel"\nversion = "0.2.1"\n',
    }
    commit(repo, files, "old format")
    history = import_git(repo)
    assert history.liger_versions == ("0.2.1",)


def test_bad_row_in_history_is_reported_with_commit_and_line(repo: Path) -> None:
    sha = commit(repo, {CSV_PATH: csv_text(v("0.8.0", "bad", "2025-06-01 00:00:00"))}, "bad")
    skipped = import_git(repo).result.skipped
    assert [str(s) for s in skipped] == [
        f"{sha[:12]}:{CSV_PATH}:2, column 9 (y_value_50): not a number: 'bad'"
    ]


def test_not_a_repository_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="git log failed"):
        import_git(tmp_path)


def test_cli_reports_commits_rows_and_versions(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    done = run_kiana("import", "liger", "--git", str(repo), "--jsonl", str(out))
    assert done.returncode == 0, done.stderr
    assert "git: 3 commits, 3 CSV versions, 6 rows seen, 5 distinct rows" in done.stdout
    assert "liger versions recovered: 3 (0.5.0, 0.6.0, 0.7.0)" in done.stdout
    assert len([json.loads(line) for line in out.read_text().splitlines()]) == 5


CUTILE_PATH = "benchmark/data/all_benchmark_data_cutile.csv"


def providers(docs: tuple[dict[str, Any], ...]) -> list[str]:
    return sorted(d["run"]["spec"]["sourceNative"]["externalId"].split("/")[2] for d in docs)


def test_plain_liger_of_a_backend_file_in_history_becomes_liger_backend(repo: Path) -> None:
    # the cutile file's own rows say plain "liger", with the very content of a Triton row
    same_as_triton = v("0.7.0", "0.52", "2025-05-01 00:00:00")
    triton_there = v("0.7.0", "0.40", "2025-05-01 00:00:00", kernel_provider="liger_triton")
    commit(repo, {CUTILE_PATH: csv_text(same_as_triton, triton_there)}, "cutile 1")
    later = v("0.8.0", "0.45", "2025-06-01 00:00:00")
    commit(repo, {CUTILE_PATH: csv_text(later, triton_there)}, "cutile 2")
    result = import_git(repo).result
    assert providers(result.documents) == ["liger"] * 6 + ["liger_cutile"] * 2
    assert [w for w in result.warnings if "imported as" in w] == [
        f"{CUTILE_PATH}: 2 row(s) of provider 'liger' imported as 'liger_cutile' (one name "
        "per implementation: Triton's is 'liger', as in all_benchmark_data.csv)",
        f"{CUTILE_PATH}: 1 row(s) of provider 'liger_triton' imported as 'liger' (one name "
        "per implementation: Triton's is 'liger', as in all_benchmark_data.csv)",
    ]


def test_labels_name_the_csv_path_and_the_first_commit_holding_the_row(repo: Path) -> None:
    c1, _docs, c2, c3 = git(repo, "rev-list", "--reverse", "HEAD").split()
    found = {
        (
            d["run"]["metadata"]["labels"]["liger_version"],
            d["run"]["spec"]["sourceNative"]["externalId"].split("/")[4][:10],
        ): d["run"]["metadata"]["labels"]
        for d in import_git(repo).result.documents
    }
    commits = {key: labels.pop("liger_commit") for key, labels in found.items()}
    assert commits == {
        ("0.5.0", "hidden1024"): c1,
        ("0.5.0", "hidden2048"): c1,  # unchanged in c2: the oldest commit holding it
        ("0.6.0", "hidden1024"): c2,
        ("0.7.0", "hidden1024"): c3,
        ("0.7.0", "hidden2048"): c3,
    }
    assert all(len(sha) == 40 for sha in commits.values())
    assert {labels["liger_csv"] for labels in found.values()} == {CSV_PATH}


def test_cli_git_labels_reach_the_labels_table(repo: Path, tmp_path: Path) -> None:
    from kiana import load

    db = tmp_path / "k.duckdb"
    done = run_kiana("import", "liger", "--git", str(repo), "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "(loaded 5, already present 0, rejected 0)" in done.stdout
    con = load.connect(db)
    rows = con.execute(
        "select key, value, count(*) from labels where key like 'liger\\_c%' escape '\\' "
        "group by all order by key, value"
    ).fetchall()
    c1, _docs, c2, c3 = git(repo, "rev-list", "--reverse", "HEAD").split()
    assert rows == sorted(
        [
            ("liger_commit", c1, 2),
            ("liger_commit", c2, 1),
            ("liger_commit", c3, 2),
            ("liger_csv", CSV_PATH, 5),
        ]
    )


def empty_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    return path


def import_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_kiana("import", "liger", *map(str, args))


def test_cli_repository_without_liger_csvs_is_an_input_error(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path / "other")
    commit(repo, {"README.md": "not Liger\n", "data/x.csv": "a,b\n1,2\n"}, "other project")
    done = import_cli("--git", repo)
    assert done.returncode == 2
    assert (
        f"{repo}: no Liger CSVs: no commit of HEAD adds or changes benchmark/data/*.csv"
        in done.stderr
    )
    assert "hint: pass a Liger-Kernel checkout" in done.stderr


def test_cli_repository_whose_csvs_are_not_liger_is_an_input_error(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path / "other")
    commit(repo, {"benchmark/data/people.csv": "name,age\nada,36\n"}, "people")
    done = import_cli("--git", repo)
    assert done.returncode == 2
    expected = "none of the 1 version(s) of benchmark/data/*.csv read has Liger's columns"
    assert f"{repo}: no Liger CSVs: {expected}" in done.stderr
    assert "not a Liger benchmark CSV" in done.stderr


def test_foreign_csv_beside_liger_csvs_in_history_is_one_skipped_row(repo: Path) -> None:
    sha = commit(repo, {"benchmark/data/notes.csv": "note\nhello\n"}, "notes")
    result = import_git(repo).result
    assert len(result.documents) == 5
    assert [str(s) for s in result.skipped] == [
        f"{sha[:12]}:benchmark/data/notes.csv:1: not a Liger benchmark CSV: none of Liger's "
        "columns in its header (found: note)"
    ]


def test_rev_range_without_csv_changes_in_a_liger_checkout_imports_nothing(repo: Path) -> None:
    commit(repo, {"README.md": "later\n"}, "docs again")
    done = import_cli("--git", repo, "--rev", "HEAD~1..HEAD")
    assert done.returncode == 0, done.stderr
    assert "documents: 0" in done.stdout
