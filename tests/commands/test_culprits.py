"""``kiana regressions --git`` and ``kiana report --git``: culprits in the table, the JSON
and the page; the ``git log`` hint without a repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kiana.cli import main
from tests.culprits.test_culprits import CSV, OPS, LigerRepo, csv_text, liger_repo, rows

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.heavy,  # every test here imports a git history
]


@pytest.fixture
def loaded(tmp_path: Path) -> tuple[LigerRepo, dict[str, str], Path]:
    repo, shas = liger_repo(tmp_path / "Liger-Kernel")
    db = tmp_path / "k.duckdb"
    assert main(["import", "liger", "--git", str(repo.path), "--db", str(db)]) == 0
    return repo, shas, db


def test_table_shows_the_top_culprits(
    loaded: tuple[LigerRepo, dict[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, shas, db = loaded
    capsys.readouterr()
    args = ["regressions", "--db", str(db), "--git", str(repo.path), "--no-changepoints"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"culprit 1: {shas['pr'][:12]} Refactor rms_norm (#4)" in out
    assert f"culprit 2: {shas['utils'][:12]} utils (#2)" in out
    assert shas["swiglu"][:12] not in out


def test_json_lists_every_culprit_or_the_git_log_hint(
    loaded: tuple[LigerRepo, dict[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, shas, db = loaded
    capsys.readouterr()
    assert main(["regressions", "--db", str(db), "--json", "--git", str(repo.path)]) == 0
    found = json.loads(capsys.readouterr().out)
    liger = next(f for f in found["findings"] if f["provider"] == "liger")
    assert [c["commit"] for c in liger["culprits"]] == [shas["pr"], shas["utils"]]
    assert liger["culprits"][0]["pr"] == 4
    step = next(s for s in found["steps"] if s["provider"] == "liger")
    assert step["culprits"][0]["commit"] == shas["pr"]
    repo.path.rename(repo.path.with_name("moved"))  # else the imported checkout is used
    assert main(["regressions", "--db", str(db), "--json"]) == 0
    hinted = json.loads(capsys.readouterr().out)
    liger = next(f for f in hinted["findings"] if f["provider"] == "liger")
    assert liger["culprits"] is None
    assert liger["culprits_command"].startswith("git log --first-parent --name-only --since=")
    assert liger["culprits_since"] == "2025-01-01T00:00:00Z"
    assert "culprits" not in hinted["steps"][0]


def test_git_that_is_not_a_repository_is_a_usage_error(
    loaded: tuple[LigerRepo, dict[str, str], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, db = loaded
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["regressions", "--db", str(db), "--git", str(plain)]) == 2
    assert "not a git repository" in capsys.readouterr().err


def test_report_links_each_pull_request_and_escapes_subjects(tmp_path: Path) -> None:
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    repo.commit(
        {
            f"{OPS}/rms_norm.py": "# v1\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", "2025-01-01 00:00:00")),
        },
        "Add rms_norm (#1)",
    )
    sha = repo.commit(
        {
            f"{OPS}/rms_norm.py": "# v2\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", "2025-02-01 00:00:00", liger=1.2)),
        },
        '<img src=x onerror="alert(1)"> rms_norm (#77)',
    )
    db, out = tmp_path / "k.duckdb", tmp_path / "r.html"
    assert main(["import", "liger", "--git", str(repo.path), "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--git", str(repo.path), "-o", str(out), "-q"]) == 0
    page = out.read_text()
    assert (
        '<a href="https://github.com/linkedin/Liger-Kernel/pull/77" rel="noreferrer">#77</a>'
        in page
    )
    assert (
        f"<code>{sha[:10]}</code> &lt;img src=x onerror=&quot;alert(1)&quot;&gt; rms_norm" in page
    )
    assert "<img src=x" not in page
    plain = tmp_path / "plain.html"
    repo.path.rename(repo.path.with_name("moved"))  # else the imported checkout is used
    assert main(["report", "--db", str(db), "-o", str(plain), "-q"]) == 0
    assert "<details><summary>git log</summary><code>git log --first-parent" in plain.read_text()
