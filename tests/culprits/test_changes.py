"""``GitCodeChanges``: did the baseline's code (the benchmark script and the modules it
imports) change between two recordings?  On Liger-like repositories the tests build."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from kiana.culprits.changes import GitCodeChanges, imported_modules
from tests.culprits.test_culprits import CSV, OPS, LigerRepo, csv_text, rows

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SCRIPT = "benchmark/scripts/benchmark_jsd.py"
IMPORTS = "from utils import run\nfrom test.transformers.test_jsd import TorchJSD\n"
IMPORTS += "from liger_kernel.transformers.jsd import LigerJSD\nimport torch\n"


@pytest.fixture
def repo(tmp_path: Path) -> tuple[LigerRepo, dict[str, str]]:
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    shas = {
        "a": repo.commit(
            {
                SCRIPT: IMPORTS,
                "benchmark/scripts/utils.py": "def run(): ...\n",
                "test/transformers/test_jsd.py": "class TorchJSD: ...\n",
                f"{OPS}/jsd.py": "# kernel\n",
                CSV: csv_text(rows("jsd", "0.5.0", "2025-01-01 00:00:00")),
            },
            "jsd (#1)",
        )
    }
    shas["kernel"] = repo.commit({f"{OPS}/jsd.py": "# faster\n"}, "faster jsd (#2)")
    shas["b"] = repo.commit({CSV: csv_text(rows("jsd", "0.5.0", "2025-02-01 00:00:00"))}, "rows")
    shas["ref"] = repo.commit({"test/transformers/test_jsd.py": "class TorchJSD: 2\n"}, "ref (#3)")
    shas["c"] = repo.commit({CSV: csv_text(rows("jsd", "0.5.0", "2025-03-01 00:00:00"))}, "rows")
    shas["d"] = repo.commit(
        {SCRIPT: IMPORTS + "# v2\n", CSV: csv_text(rows("jsd", "0.5.0", "2025-04-01 00:00:00"))},
        "script and rows (#4)",
    )
    return repo, shas


def _ask(repo: LigerRepo, pairs: list[tuple[str, str | None, str | None]]) -> pl.DataFrame:
    frame = pl.DataFrame(pairs, schema=["kernel", "from_origin", "to_origin"], orient="row")
    return GitCodeChanges(repo.path).baseline_changed(frame)


def origin(sha: str) -> str:
    return f"{sha}:{CSV}"


def test_a_change_to_the_kernel_alone_is_not_a_baseline_change(
    repo: tuple[LigerRepo, dict[str, str]],
) -> None:
    git_repo, shas = repo
    answer = _ask(git_repo, [("jsd", origin(shas["a"]), origin(shas["b"]))])
    assert answer["baseline_changed"].to_list() == [False]
    assert answer["baseline_note"].to_list() == [None]


def test_an_imported_reference_module_changing_is_a_baseline_change(
    repo: tuple[LigerRepo, dict[str, str]],
) -> None:
    git_repo, shas = repo
    answer = _ask(git_repo, [("jsd", origin(shas["b"]), origin(shas["c"]))])
    assert answer.row(0, named=True) == {
        "kernel": "jsd", "from_origin": origin(shas["b"]), "to_origin": origin(shas["c"]),
        "baseline_changed": True,
        "baseline_note": f"test_jsd.py changed in {shas['ref'][:12]} (test_jsd.py @@ -1,1 +1,1 @@)",
    }  # fmt: skip


def test_the_recording_commit_itself_counts(repo: tuple[LigerRepo, dict[str, str]]) -> None:
    git_repo, shas = repo
    (note,) = _ask(git_repo, [("jsd", origin(shas["c"]), origin(shas["d"]))])["baseline_note"]
    assert note == f"benchmark_jsd.py changed in {shas['d'][:12]}"


def test_unknown_origins_and_kernels_are_unchanged(repo: tuple[LigerRepo, dict[str, str]]) -> None:
    git_repo, shas = repo
    answer = _ask(
        git_repo,
        [
            ("jsd", None, origin(shas["b"])),
            ("jsd", "all_benchmark_data.csv", origin(shas["b"])),
            ("../evil", origin(shas["a"]), origin(shas["d"])),
            ("jsd", origin("0" * 40), origin(shas["d"])),
        ],
    )
    assert answer["baseline_changed"].to_list() == [False] * 4
    assert answer.columns == [
        "kernel",
        "from_origin",
        "to_origin",
        "baseline_changed",
        "baseline_note",
    ]


def test_imports_resolve_to_the_scripts_folder_then_the_root() -> None:
    tree = frozenset(
        {"benchmark/scripts/utils.py", "test/utils.py", "test/chunked_loss/__init__.py"}
    )
    assert imported_modules("from .utils import a\nimport test.utils, os\n", tree) == [
        "benchmark/scripts/utils.py",
        "test/utils.py",
    ]
    assert imported_modules("from test.chunked_loss import x\n", tree) == [
        "test/chunked_loss/__init__.py"
    ]
