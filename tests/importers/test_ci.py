"""Liger's CI history (``benchmarks/<commit>[-v<release>]/benchmark.csv``): from a
``gh-pages`` ref with ``--git``, from a checkout of it, and from the real history in
``../shared/liger-ci`` and the fetched Liger-Kernel repository."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import kiana
from kiana.culprits import provenance
from kiana.errors import InputError
from kiana.importers import ci
from kiana.importers.git import import_git
from kiana.importers.rows import Row, Skipped
from kiana.load.judged import judged_runs
from kiana.stats.sessions import assign_sessions
from tests.conftest import run_kiana
from tests.importers.test_git import CSV_PATH, commit, empty_repo, git, v
from tests.importers.test_liger import csv_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SHARED = Path(__file__).parents[2].parent / "shared" / "liger-ci" / "benchmarks"
#: The fetched Liger-Kernel repository (bare, with gh-pages): KIANA_LIGER_REPO or the mirror.
LIGER_REPO = Path(os.environ.get("KIANA_LIGER_REPO", "/work/.mirror/linkedin+Liger-Kernel/repo"))


def ci_csv(median: str, stamp: str, version: str = "0.6.0") -> str:
    return csv_text(
        v(version, median, stamp, gpu_name="NVIDIA H100 80GB HBM3"),
        v(version, median, stamp, x_value="2048"),
    )


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, str]:
    """main: two measured commits (and a benchmark/data CSV at the first); gh-pages:
    their CI runs, a release run of the second, deleted and restored once, a folder that
    names no commit and one whose commit the repository lacks."""
    path = empty_repo(tmp_path / "Liger-Kernel")
    shas = {"path": str(path)}
    shas["a"] = commit(path, {CSV_PATH: ci_csv("0.50", "2025-06-01 00:00:00")}, "a")
    shas["b"] = commit(path, {"src/x.py": "1\n"}, "b")
    git(path, "checkout", "-q", "--orphan", "gh-pages")
    git(path, "rm", "-rqf", ".")
    a, b = shas["a"][:7], shas["b"][:7]
    pages = {
        f"benchmarks/{a}/benchmark.csv": ci_csv("0.50", "2025-06-01 00:00:00"),
        f"benchmarks/{b}/benchmark.csv": ci_csv("0.60", "2025-06-08 00:00:00"),
        f"benchmarks/{b}-v0.6.1/benchmark.csv": ci_csv("0.61", "2025-06-09 00:00:00", "0.6.1"),
        "benchmarks/abcdef0/benchmark.csv": ci_csv("0.70", "2025-06-10 00:00:00"),
        "benchmarks/commits.txt": f"{a}\n{b}\n",
    }
    shas["pages"] = commit(path, pages, "benchmarks")
    git(path, "rm", "-rq", "benchmarks")
    git(path, "commit", "-qm", "gh-deploy")
    commit(path, pages, "restore benchmarks after gh-deploy")
    commit(path, {"benchmarks/notes/benchmark.csv": ci_csv("9", "2025-06-11 00:00:00")}, "n")
    git(path, "checkout", "-q", "main")
    return shas


def labels(result: kiana.importers.liger.ImportResult) -> set[tuple[str, str]]:
    return {
        (
            d["run"]["metadata"]["labels"]["liger_csv"],
            d["run"]["metadata"]["labels"]["liger_commit"],
        )
        for d in result.documents
    }


def test_measured_folder_names_the_commit_and_release() -> None:
    assert ci.measured("benchmarks/0a62700/benchmark.csv") == ci.Measured(
        "0a62700", "0a62700", None
    )
    assert ci.measured("benchmarks/0a62700-v0.6.4/benchmark.csv").release == "0.6.4"  # type: ignore[union-attr]
    for path in ("benchmarks/a/b/benchmark.csv", "benchmarks/0A62700/benchmark.csv",
                 "benchmark/data/x.csv", "benchmarks/0a627/benchmark.csv"):  # fmt: skip
        assert ci.measured(path) is None


def test_git_import_reads_gh_pages_with_the_measured_commit(repo: dict[str, str]) -> None:
    history = import_git(Path(repo["path"]))
    assert history.ci is not None
    assert (history.ci.refs, history.ci.folders, history.ci.commits) == (("gh-pages",), 4, 3)
    a, b = repo["a"], repo["b"]
    assert labels(history.result) == {
        (CSV_PATH, a),
        (f"benchmarks/{a[:7]}/benchmark.csv", a),
        (f"benchmarks/{b[:7]}/benchmark.csv", b),
        (f"benchmarks/{b[:7]}-v0.6.1/benchmark.csv", b),
        ("benchmarks/abcdef0/benchmark.csv", "abcdef0"),  # not in the repository: as named
    }


def test_deleted_and_restored_files_are_read_once(repo: dict[str, str]) -> None:
    history = import_git(Path(repo["path"]))
    assert history.ci is not None
    assert (history.ci.files, history.ci.unique_rows) == (5, 8)
    assert len(history.result.documents) == 2 + 8


def test_a_file_outside_a_measured_folder_is_one_skipped_row(repo: dict[str, str]) -> None:
    skipped = [str(s) for s in import_git(Path(repo["path"])).result.skipped]
    assert len(skipped) == 1
    assert "benchmarks/notes/benchmark.csv:1: not in a folder named <commit>" in skipped[0]


def test_ref_names_another_branch_and_an_unknown_ref_is_an_error(repo: dict[str, str]) -> None:
    path = Path(repo["path"])
    git(path, "branch", "-m", "gh-pages", "ci-history")
    assert import_git(path).ci is None
    history = import_git(path, refs=["ci-history"])
    assert history.ci is not None and history.ci.folders == 4
    with pytest.raises(InputError, match=r"--ref 'nope': .* holds no such ref"):
        import_git(path, refs=["nope"])


def test_ci_and_benchmark_data_of_one_commit_are_two_sittings(repo: dict[str, str]) -> None:
    """The same cells in benchmark/data and in the CI run of that commit: two documents,
    two run ids, two sessions (one origin each), not a duplicate dropped."""
    con = kiana.connect()
    kiana.load.load_documents(con, import_git(Path(repo["path"])).result.documents)
    a = repo["a"]
    at_a = provenance(con).filter(provenance(con)["liger_commit"] == a)
    assert at_a.height == 4 and at_a["run_id"].n_unique() == 4
    assert sorted(at_a["source"].unique()) == ["benchmark/data", "liger-ci"]
    runs = judged_runs(con)
    same = runs.filter(runs["origin"].str.starts_with(f"{a}:"))
    assert assign_sessions(same).select("origin", "session").unique().height == 2
    sources = provenance(con).group_by("source").len().sort("source").rows()
    assert sources == [("benchmark/data", 2), ("liger-ci", 8)]


def test_checkout_of_gh_pages_reads_the_same_files(repo: dict[str, str], tmp_path: Path) -> None:
    path = Path(repo["path"])
    out = tmp_path / "pages"
    git(path, "worktree", "add", "-q", str(out), "gh-pages")
    for where in (out, out / "benchmarks"):
        history = ci.from_dir(where)
        assert (history.files, history.folders, history.unique_rows) == (5, 4, 8)
        rows = [r for r in history.rows if isinstance(r, Row)]
        assert {r.commit for r in rows} == {repo["a"][:7], repo["b"][:7], "abcdef0"}
        assert [s.reason for s in history.rows if isinstance(s, Skipped)] == [
            "not in a folder named <commit>[-v<release>]: not read"
        ]
    resolved = ci.from_dir(out, repo=path)
    assert {r.commit for r in resolved.rows if isinstance(r, Row)} == {
        repo["a"],
        repo["b"],
        "abcdef0",
    }


def test_checkout_refuses_a_linked_csv(tmp_path: Path) -> None:
    folder = tmp_path / "benchmarks" / "0a62700"
    folder.mkdir(parents=True)
    secret = tmp_path / "secret.csv"
    secret.write_text(ci_csv("1", "2025-06-01 00:00:00"))
    (folder / "benchmark.csv").symlink_to(secret)
    history = ci.from_dir(tmp_path)
    assert [r.reason for r in history.rows if isinstance(r, Skipped)] == [
        "a symbolic link: not followed"
    ]


@pytest.mark.heavy
def test_cli_imports_a_checkout_and_says_so(repo: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "pages"
    git(Path(repo["path"]), "worktree", "add", "-q", str(out), "gh-pages")
    db = tmp_path / "k.duckdb"
    done = run_kiana("import", "liger", str(out), "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "CI history: 5 file versions, 4 measured folders, 3 measured commits" in done.stdout
    assert "(loaded 8, already present 0, rejected 0)" in done.stdout


# --------------------------------------------------------------------- real history


def _shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (Liger's gh-pages benchmarks, ../shared/liger-ci)")
    return SHARED


def test_shared_ci_history_has_a_file_per_measured_commit() -> None:
    """Every folder of ../shared/liger-ci is read, none refused: the 34 folders
    commits.txt lists (four of them release runs) and 53a37a5, which it does not."""
    files = list(ci.dir_files(_shared()))
    assert len(files) == 35 and not [f for f in files if f.refused]
    found = [ci.measured(f.path) for f in files]
    listed = set((_shared() / "commits.txt").read_text().split())
    assert {m.folder for m in found if m} == listed | {"53a37a5"}
    assert len({m.commit for m in found if m}) == 33
    assert sorted(m.release for m in found if m and m.release) == [
        "0.6.3",
        "0.6.4",
        "0.6.5",
        "0.7.0",
    ]
    assert sum(f.text.count("\n") - 1 for f in files) == 77_648


@pytest.mark.heavy
def test_shared_ci_history_reads_every_row() -> None:
    history = ci.from_dir(_shared())
    assert (history.files, history.folders, history.commits) == (35, 35, 33)
    assert history.unique_rows == history.rows_seen == 77_648
    assert not [r for r in history.rows if isinstance(r, Skipped)]


@pytest.mark.heavy
def test_shared_ci_history_converts_without_a_skipped_row() -> None:
    from kiana.importers.liger import convert_rows

    result = convert_rows(ci.from_dir(_shared()).rows)
    assert (len(result.documents), len(result.skipped)) == (77_648, 0)


@pytest.mark.heavy
def test_fetched_liger_repository_names_the_measured_commit_of_every_ci_run() -> None:
    if not (LIGER_REPO / "HEAD").exists():
        pytest.skip(
            f"{LIGER_REPO} is absent (fetch github:linkedin/Liger-Kernel, or set KIANA_LIGER_REPO)"
        )
    history = ci.from_git(LIGER_REPO)
    assert history is not None and history.folders >= 35
    rows = [r for r in history.rows if isinstance(r, Row)]
    assert rows and all(
        r.commit is not None and len(r.commit) == 40 and r.csv is not None
        and r.commit.startswith(r.csv.split("/")[1].split("-")[0])
        for r in rows
    )  # fmt: skip


def test_report_and_cli_name_each_session_source() -> None:
    import polars as pl

    from kiana.culprits.recorded import with_sources
    from kiana.findings.wording import step_label
    from kiana.report.appendix import sources_table

    sha = "7644a0fc696d9d191e37e71d093fc24bf6af861b"
    findings = with_sources(pl.DataFrame({
        "from_origin": [f"{sha}:benchmark/data/all_benchmark_data.csv", "x.csv"],
        "to_origin": [f"{sha}:benchmarks/7644a0f-v0.7.0/benchmark.csv", None],
        "from_session": ["2026-01-23T00:00:00Z", "2026-01-01T00:00:00Z"],
        "to_session": ["2026-01-30T00:00:00Z", "2026-01-02T00:00:00Z"],
        "from_version": ["0.6.5", "0.6.5"], "to_version": ["0.7.0", "0.7.0"],
    }))  # fmt: skip
    assert findings.select("from_source", "to_source").rows() == [
        ("benchmark/data", "liger-ci"),
        ("file", None),
    ]
    first = findings.row(0, named=True)
    assert step_label(first) == "0.6.5 (2026-01-23) → 0.7.0 (2026-01-30, CI 7644a0f-v0.7.0)"
    html = sources_table(findings).markup
    for text in ("liger-ci", "benchmark/data", "file", "7644a0f-v0.7.0", "no Liger labels"):
        assert text in html
