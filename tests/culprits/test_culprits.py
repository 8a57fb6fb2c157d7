"""Culprits: provenance of each run, a kernel's files in Liger's layout, and the commits
ranked for a finding, on small Liger-like repositories the tests build."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

import kiana
from kiana.culprits import Finder, annotate, provenance
from kiana.culprits.history import Commit, pr_number
from kiana.culprits.layout import BENCHMARK, IMPORTED, SOURCE, imported_files, kernel_files
from kiana.culprits.rank import origin_commit, rank
from kiana.importers import ci
from kiana.importers.git import import_git
from kiana.importers.liger import convert_rows
from kiana.importers.rows import COLUMNS
from kiana.load.judged import judged_runs
from kiana.stats import Judgement, judge

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CSV = "benchmark/data/all_benchmark_data.csv"
OPS = "src/liger_kernel/ops"
WORKLOADS = (1024, 2048, 4096, 8192)


def rows(
    kernel: str, version: str, stamp: str, liger: float = 1.0, baseline: float = 1.0
) -> list[dict[str, str]]:
    """One session of ``kernel`` (forward, H100): liger and huggingface over four hidden
    sizes, p20/p80 at -/+1%; ``liger`` and ``baseline`` scale each provider."""
    out = []
    for index, x in enumerate(WORKLOADS):
        for provider, base in (("liger", liger), ("huggingface", 2.0 * baseline)):
            median = base * (1 + index * 0.5)
            out.append({
                "kernel_name": kernel, "kernel_provider": provider,
                "kernel_operation_mode": "forward", "metric_name": "speed", "metric_unit": "ms",
                "x_name": "H", "x_label": "hidden size", "x_value": str(x),
                "y_value_50": f"{median:.5f}", "y_value_20": f"{median * 0.99:.5f}",
                "y_value_80": f"{median * 1.01:.5f}",
                "extra_benchmark_config_str": '{"M": 2048, "dtype": "torch.bfloat16"}',
                "gpu_name": "NVIDIA H100 80GB HBM3", "timestamp": stamp, "liger_version": version,
            })  # fmt: skip
    return out


def csv_text(*sessions: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), extrasaction="ignore")
    writer.writeheader()
    for session in sessions:
        writer.writerows(session)
    return out.getvalue()


class LigerRepo:
    """A git repository laid out like Liger-Kernel, built commit by commit.  Commits are
    dated by a clock that starts on 2024-12-01 and moves one hour per commit (before
    every session the tests record, so no culprit is ``late``), or at ``date``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = 1_733_011_200  # 2024-12-01T00:00:00Z
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "t@example.com")
        self.git("config", "user.name", "t")

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.path), *args],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        return done.stdout.strip()

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def commit(self, files: dict[str, str], message: str, *, date: str | None = None) -> str:
        self.write(files)
        self.git("add", *files)
        self.clock += 3600
        when = date or f"@{self.clock} +0000"
        self.git(
            "commit", "-q", "-m", message, env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        )
        return self.git("rev-parse", "HEAD")


def liger_repo(path: Path) -> tuple[LigerRepo, dict[str, str]]:
    """rms_norm recorded at 0.5.0; a utils tweak, an unrelated swiglu change; then a PR
    that refactors rms_norm and re-records its rows 10% slower under the same label."""
    repo = LigerRepo(path)
    shas = {
        "base": repo.commit(
            {
                f"{OPS}/rms_norm.py": "from liger_kernel.ops.utils import calculate_settings\n",
                f"{OPS}/utils.py": "def calculate_settings(): ...\n",
                f"{OPS}/swiglu.py": "from liger_kernel.ops.utils import calculate_settings\n",
                "src/liger_kernel/transformers/rms_norm.py": "class LigerRMSNorm: ...\n",
                "benchmark/scripts/benchmark_rms_norm.py": "# bench\n",
                CSV: csv_text(rows("rms_norm", "0.5.0", "2025-01-01 00:00:00")),
            },
            "Add rms_norm (#1)",
        ),
        "utils": repo.commit({f"{OPS}/utils.py": "def calculate_settings(): 1\n"}, "utils (#2)"),
        "swiglu": repo.commit({f"{OPS}/swiglu.py": "# faster\n"}, "Speed up swiglu (#3)"),
        "docs": repo.commit({"README.md": "docs\n"}, "Docs only"),
    }
    shas["pr"] = repo.commit(
        {
            f"{OPS}/rms_norm.py": "from liger_kernel.ops.utils import calculate_settings\n# v2\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", "2025-02-01 00:00:00", liger=1.10)),
        },
        "Refactor rms_norm (#4)",
    )
    return repo, shas


@dataclass(frozen=True)
class Imported:
    """:func:`liger_repo` imported from its git history into ``con``, judged on demand."""

    repo: LigerRepo
    shas: dict[str, str]
    con: duckdb.DuckDBPyConnection

    @cached_property
    def judgement(self) -> Judgement:
        return judge(judged_runs(self.con))


def liger_row(frame: pl.DataFrame) -> dict[str, Any]:
    """The first row of provider ``liger`` in ``frame``."""
    return frame.filter(pl.col("provider") == "liger").row(0, named=True)


@pytest.fixture
def imported(tmp_path: Path) -> Imported:
    repo, shas = liger_repo(tmp_path / "Liger-Kernel")
    con = kiana.connect()
    kiana.load.load_documents(con, import_git(repo.path).result.documents)
    return Imported(repo, shas, con)


@pytest.mark.heavy
def test_provenance_names_the_commit_and_file_of_every_run(imported: Imported) -> None:
    frame = provenance(imported.con)
    assert frame.columns == ["run_id", "liger_commit", "liger_csv", "source"]
    assert frame.height == kiana.runs(imported.con).height == 16
    assert set(frame["liger_commit"]) == {imported.shas["base"], imported.shas["pr"]}
    assert set(frame["liger_csv"]) == {CSV}
    assert set(frame["source"]) == {"benchmark/data"}


def test_provenance_of_documents_without_labels_is_null(tmp_path: Path) -> None:
    con = kiana.connect()
    kiana.load_paths(con, [str(Path(__file__).parents[2] / "data" / "seeds")])
    frame = provenance(con)
    assert frame.height > 0
    assert frame["liger_commit"].null_count() == frame.height


@pytest.mark.heavy
def test_recording_commit_ranks_first_then_imported_module(imported: Imported) -> None:
    shas = imported.shas
    found = annotate(imported.judgement.findings, imported.repo.path)
    liger = liger_row(found)
    assert liger["verdict"] == "regression"
    culprits = liger["culprits"]
    assert [c["commit"] for c in culprits] == [shas["pr"], shas["utils"]]
    first = culprits[0]
    assert first == {
        "commit": shas["pr"], "subject": "Refactor rms_norm (#4)", "pr": 4,
        "date": first["date"], "files": [f"{OPS}/rms_norm.py"], "role": "recorded",
    }  # fmt: skip
    assert first["date"].endswith("Z") and first["date"][4] == "-"
    assert culprits[1]["role"] == IMPORTED
    assert shas["swiglu"] not in {c["commit"] for c in culprits}
    assert liger["culprits_command"].startswith(
        f"git log --first-parent --name-only {shas['base'][:12]}..{shas['pr'][:12]} -- "
    )
    baseline = found.filter(pl.col("provider") == "huggingface").row(0, named=True)
    assert baseline["culprits"] is None and baseline["culprits_command"] is None


@pytest.mark.heavy
def test_without_a_repository_the_window_and_command(imported: Imported) -> None:
    liger = liger_row(annotate(imported.judgement.findings))
    assert liger["culprits"] is None
    assert (liger["culprits_since"], liger["culprits_until"]) == (
        "2025-01-01T00:00:00Z",
        "2025-02-15T00:00:00Z",
    )
    assert liger["culprits_command"] == (
        "git log --first-parent --name-only --since=2025-01-01T00:00:00Z "
        "--until=2025-02-15T00:00:00Z -- src/liger_kernel/ops/rms_norm.py "
        "'src/liger_kernel/chunked_loss/rms_norm*.py' 'src/liger_kernel/transformers/rms_norm*.py' "
        "benchmark/scripts/benchmark_rms_norm.py"
    )


@pytest.mark.heavy
def test_a_commit_the_repository_lacks_falls_back_to_the_window(
    imported: Imported, tmp_path: Path
) -> None:
    other = LigerRepo(tmp_path / "other")
    other.commit({"README.md": "x\n"}, "unrelated")
    liger = liger_row(annotate(imported.judgement.findings, other.path))
    assert liger["culprits"] is None
    assert "--since=2025-01-01T00:00:00Z" in liger["culprits_command"]


@pytest.mark.heavy
def test_steps_carry_the_same_culprits(imported: Imported) -> None:
    steps = annotate(imported.judgement.steps, imported.repo.path)
    liger = steps.filter(pl.col("provider") == "liger")
    assert liger.height == len(WORKLOADS)
    assert {row[0]["commit"] for row in liger["culprits"].to_list()} == {imported.shas["pr"]}
    hints = annotate(imported.judgement.steps, lists=False)
    assert "culprits" not in hints.columns and hints["culprits_command"].null_count() == 4


def test_kernel_files_follow_liger_layout() -> None:
    files = kernel_files("dpo_loss")
    assert files.kind("src/liger_kernel/chunked_loss/dpo_loss.py") == SOURCE
    assert files.kind("src/liger_kernel/transformers/dpo_loss_fn.py") == SOURCE
    assert files.kind("src/liger_kernel/transformers/sub/dpo_loss.py") is None
    assert files.kind("benchmark/scripts/benchmark_dpo_loss.py") == BENCHMARK
    assert files.kind("src/liger_kernel/ops/orpo_loss.py") is None
    assert kernel_files("../etc").pathspecs() == []


def test_imports_resolve_to_files_of_the_tree() -> None:
    tree = frozenset({
        f"{OPS}/fused_linear_cross_entropy.py", f"{OPS}/cross_entropy.py", f"{OPS}/utils.py",
        "src/liger_kernel/utils.py", "src/liger_kernel/ops/experimental/__init__.py",
        "src/liger_kernel/ops/experimental/mm.py",
    })  # fmt: skip
    text = (
        "import torch\n"
        "from liger_kernel.ops.cross_entropy import (\n    liger_cross_entropy_kernel,\n)\n"
        "from .utils import amp_custom_fwd\n"
        "from ..utils import infer_device\n"
        "import liger_kernel.ops.experimental\n"
        "from liger_kernel.ops.experimental import mm\n"
        "from triton import language\n"
    )
    assert imported_files(f"{OPS}/fused_linear_cross_entropy.py", text, tree) == [
        f"{OPS}/cross_entropy.py",
        "src/liger_kernel/ops/experimental/__init__.py",
        "src/liger_kernel/ops/experimental/mm.py",
        f"{OPS}/utils.py",
        "src/liger_kernel/utils.py",
    ]


def test_rank_orders_by_kind_then_newest() -> None:
    files = kernel_files("rms_norm").__class__(
        "rms_norm", tuple(kernel_files("rms_norm").patterns), (f"{OPS}/utils.py",)
    )
    found = (
        Commit(
            "e" * 40,
            "bench (#9)",
            "2025-01-05T00:00:00Z",
            ("benchmark/scripts/benchmark_rms_norm.py",),
        ),
        Commit("d" * 40, "utils", "2025-01-04T00:00:00Z", (f"{OPS}/utils.py",)),
        Commit("c" * 40, "newer source", "2025-01-03T00:00:00Z", (f"{OPS}/rms_norm.py",)),
        Commit("b" * 40, "other", "2025-01-02T00:00:00Z", (f"{OPS}/swiglu.py",)),
        Commit(
            "a" * 40, "older source", "2025-01-01T00:00:00Z", (f"{OPS}/rms_norm.py", "README.md")
        ),
    )
    ranked = rank(found, files, recorded="e" * 40)
    assert [(c["commit"][0], c["role"]) for c in ranked] == [
        ("e", "recorded"), ("c", SOURCE), ("a", SOURCE), ("d", IMPORTED),
    ]  # fmt: skip
    assert ranked[2]["files"] == [f"{OPS}/rms_norm.py"]
    assert rank(found, files, recorded="b" * 40)[0]["role"] == SOURCE


@pytest.mark.parametrize(
    ("subject", "number"),
    [
        ("Fix rms_norm (#123)", 123),
        ("Revert (#5) then (#7)", 7),
        ("Merge pull request #42 from x/y", 42),
        ("no number #12", None),
    ],
)
def test_pr_number(subject: str, number: int | None) -> None:
    assert pr_number(subject) == number


def test_origin_commit() -> None:
    sha = "a" * 40
    assert origin_commit(f"{sha}:benchmark/data/x.csv") == sha
    assert origin_commit("benchmark/data/x.csv") is None
    assert origin_commit(None) is None


@pytest.mark.heavy
def test_merged_pull_request_ranks_its_recording_commit_then_the_merges(tmp_path: Path) -> None:
    """History with merge commits: the first-parent chain holds merges (their files
    against the branch's previous state); the PR's own commit recorded the rows."""
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    base = repo.commit(
        {
            f"{OPS}/rms_norm.py": "# v1\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", "2025-01-01 00:00:00")),
        },
        "Add rms_norm (#1)",
    )
    repo.git("checkout", "-q", "-b", "feature")
    change = repo.commit(
        {
            f"{OPS}/rms_norm.py": "# v2\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", "2025-02-01 00:00:00", liger=1.1)),
        },
        "rms_norm: new tiling",
    )
    repo.git("checkout", "-q", "main")
    other = repo.commit({"src/liger_kernel/transformers/rms_norm.py": "# wrapper\n"}, "wrapper")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request #12 from x/feature", "feature")
    merge = repo.git("rev-parse", "HEAD")
    con = kiana.connect()
    kiana.load.load_documents(con, import_git(repo.path).result.documents)
    findings = annotate(judge(judged_runs(con)).findings, repo.path)
    liger = findings.filter(pl.col("provider") == "liger").row(0, named=True)
    assert liger["from_origin"].startswith(base) and liger["to_origin"].startswith(change)
    assert [c["commit"] for c in liger["culprits"]] == [change]
    # from the base to the merge, the main branch's first-parent commits
    ranked = Finder(repo.path).lookup("rms_norm", base, merge, None)
    assert ranked is not None
    assert [(c["commit"], c["pr"]) for c in ranked] == [(merge, 12), (other, None)]


def ci_history(repo: LigerRepo, runs: dict[str, str]) -> None:
    """A ``gh-pages`` branch holding ``benchmarks/<folder>/benchmark.csv`` (``runs``:
    folder -> CSV text), as Liger's CI publishes it; back on main after."""
    repo.git("checkout", "-q", "--orphan", "gh-pages")
    repo.git("rm", "-rqf", ".")
    repo.commit({f"benchmarks/{folder}/benchmark.csv": t for folder, t in runs.items()}, "ci")
    repo.git("checkout", "-q", "main")


def ci_repo(path: Path) -> tuple[LigerRepo, dict[str, str]]:
    """Two CI runs measure A and B (rms_norm 30% slower at B); between them on main a
    change to rms_norm, one to swiglu, a merged branch changing rms_norm, its benchmark
    script, and B itself changing its wrapper; rms_norm changes before A and after B."""
    repo = LigerRepo(path)
    shas: dict[str, str] = {}
    repo.commit({f"{OPS}/rms_norm.py": "# v0\n", f"{OPS}/swiglu.py": "# v0\n"}, "before A")
    shas["a"] = repo.commit({"README.md": "a\n"}, "A (#1)")
    shas["c1"] = repo.commit({f"{OPS}/rms_norm.py": "# v1\n"}, "rms_norm tiling (#2)")
    repo.commit({f"{OPS}/swiglu.py": "# v1\n"}, "swiglu (#3)")
    repo.git("checkout", "-q", "-b", "side")
    shas["side"] = repo.commit({f"{OPS}/rms_norm.py": "# v2\n"}, "side: rms_norm")
    repo.git("checkout", "-q", "main")
    repo.clock += 3600
    when = {"GIT_AUTHOR_DATE": f"@{repo.clock} +0000", "GIT_COMMITTER_DATE": f"@{repo.clock} +0000"}
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request #4 from x/side", "side", env=when)
    shas["merge"] = repo.git("rev-parse", "HEAD")
    shas["c3"] = repo.commit({"benchmark/scripts/benchmark_rms_norm.py": "# b\n"}, "bench (#5)")
    shas["b"] = repo.commit({"src/liger_kernel/transformers/rms_norm.py": "# w\n"}, "B (#6)")
    repo.commit({f"{OPS}/rms_norm.py": "# v3\n"}, "after B (#7)")
    ci_history(repo, {
        shas["a"][:7]: csv_text(rows("rms_norm", "0.6.0", "2025-01-01 00:00:00")),
        shas["b"][:7]: csv_text(rows("rms_norm", "0.6.0", "2025-01-08 00:00:00", liger=1.3)),
    })  # fmt: skip
    return repo, shas


def ci_culprits(shas: dict[str, str]) -> list[tuple[str, str]]:
    """What the culprits of :func:`ci_repo`'s step must be: (A, B] on the first-parent
    chain touching rms_norm, by kind then newest; no ``recorded`` role."""
    return [(shas["b"], SOURCE), (shas["merge"], SOURCE), (shas["c1"], SOURCE),
            (shas["c3"], BENCHMARK)]  # fmt: skip


def test_ci_step_culprits_are_the_first_parent_commits_between_its_measured_commits(
    tmp_path: Path,
) -> None:
    """The culprits of a CI step are exactly the first-parent commits of (A, B] that
    touch rms_norm (B itself, a merge but not its branch's own commit, a plain commit,
    a benchmark script): not the commits before A or after B, nor swiglu's, and no
    ``recorded`` role (a CI run measured B, it did not commit its rows with it)."""
    repo, shas = ci_repo(tmp_path / "Liger-Kernel")
    con = kiana.connect()
    kiana.load.load_documents(con, import_git(repo.path).result.documents)
    liger = liger_row(annotate(judge(judged_runs(con)).findings, repo.path))
    assert liger["verdict"] == "regression"
    assert (origin_commit(liger["from_origin"]), origin_commit(liger["to_origin"])) == (
        shas["a"],
        shas["b"],
    )
    assert [(c["commit"], c["role"]) for c in liger["culprits"]] == ci_culprits(shas)
    assert liger["culprits_command"].startswith(
        f"git log --first-parent --name-only {shas['a'][:12]}..{shas['b'][:12]} --"
    )


@pytest.mark.heavy
def test_ci_checkout_culprits_read_the_folders_abbreviations(tmp_path: Path) -> None:
    """A checkout of gh-pages names the commits as its folders do: git reads them."""
    repo, shas = ci_repo(tmp_path / "Liger-Kernel")
    pages = tmp_path / "pages"
    repo.git("worktree", "add", "-q", str(pages), "gh-pages")
    con = kiana.connect()
    kiana.load.load_documents(con, convert_rows(ci.from_dir(pages).rows).documents)
    liger = liger_row(annotate(judge(judged_runs(con)).findings, repo.path))
    assert origin_commit(liger["to_origin"]) == shas["b"][:7]
    assert [(c["commit"], c["role"]) for c in liger["culprits"]] == ci_culprits(shas)


def test_a_ci_variant_name_has_its_kernels_files() -> None:
    """Liger's CI names dyt's two variants ``dyt_beta=True``/``False``: dyt's files."""
    files = kernel_files("dyt_beta=true")
    assert files.kind("src/liger_kernel/ops/dyt.py") == SOURCE
    assert files.kind("benchmark/scripts/benchmark_dyt.py") == BENCHMARK
    assert kernel_files("x_a=b/../c").patterns == ()
