"""One pipeline: ``kiana.analyze`` (the API, the notebooks) and ``kiana regressions
--json`` (the CLI) give identical findings, on the bundled data/, on Liger's real CSVs
and on a git-imported Liger history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import kiana
from kiana.cli import main
from kiana.stats import FINDING_COLUMNS
from tests.conftest import ROOT
from tests.culprits.test_culprits import liger_repo

LIGER = ROOT.parent / "shared" / "liger"

#: What identifies a finding and what it says.
COMPARED = ("verdict", "change", "change_se", "workloads", "evidence", "folded", "culprits")


def _cli_findings(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["regressions", "--json", *args]) == 0
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["findings"]
    return found


def _api_findings(db: Path, git: Path | None = None) -> list[dict[str, Any]]:
    con = kiana.connect(db)
    try:
        findings = kiana.analyze(con, git=git).findings
    finally:
        con.close()
    # through the same JSON writer, so both sides have the same types
    from io import StringIO

    from kiana.jsonstream import write_json

    text = StringIO()
    write_json(text, {"findings": findings})
    rows: list[dict[str, Any]] = json.loads(text.getvalue())["findings"]
    return rows


def _same(api: list[dict[str, Any]], cli: list[dict[str, Any]]) -> None:
    assert len(api) == len(cli)
    keys = [*FINDING_COLUMNS[:9]]
    for a, c in zip(api, cli, strict=True):
        assert [a[k] for k in keys] == [c[k] for k in keys]
        assert {k: a.get(k) for k in COMPARED} == {k: c.get(k) for k in COMPARED}


@pytest.mark.heavy
def test_api_and_cli_agree_on_the_bundled_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.duckdb"
    assert main(["load", str(ROOT / "data"), "--db", str(db), "--quiet"]) == 0
    api = _api_findings(db)
    assert api, "the bundled corpus has findings"
    _same(api, _cli_findings(capsys, "--db", str(db)))


@pytest.mark.heavy
@pytest.mark.skipif(not LIGER.is_dir(), reason=f"Liger's real CSVs are not at {LIGER}")
def test_api_and_cli_agree_on_liger_csvs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.duckdb"
    csvs = sorted(str(p) for p in LIGER.glob("*.csv"))
    assert main(["import", "liger", *csvs, "--db", str(db)]) == 0
    api = _api_findings(db)
    assert api
    _same(api, _cli_findings(capsys, "--db", str(db)))


@pytest.mark.heavy
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_api_and_cli_agree_on_git_imported_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = liger_repo(tmp_path / "Liger-Kernel")
    db = tmp_path / "k.duckdb"
    assert main(["import", "liger", "--git", str(repo.path), "--db", str(db)]) == 0
    api = _api_findings(db, git=repo.path)
    assert any(f["culprits"] for f in api), "the culprits are part of what must agree"
    _same(api, _cli_findings(capsys, "--db", str(db), "--git", str(repo.path)))


@pytest.mark.heavy
def test_a_selection_narrows_what_is_shown_not_what_is_judged(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    assert main(["load", str(ROOT / "data"), "--db", str(db), "--quiet"]) == 0
    con = kiana.connect(db)
    try:
        everything = kiana.analyze(con)
        kernel = str(everything.findings["kernel"][0])
        narrowed = kiana.analyze(con, selection=kiana.Selection(kernel=(kernel,)))
    finally:
        con.close()
    assert set(narrowed.findings["kernel"].unique()) == {kernel}
    expected = everything.findings.filter(pl.col("kernel") == kernel)
    assert narrowed.findings.equals(expected)


def test_a_filter_that_matches_nothing_is_a_usage_error(tmp_path: Path) -> None:
    con = kiana.connect()
    kiana.load_paths(con, [str(ROOT / "data" / "seeds")])
    with pytest.raises(kiana.UsageError, match="--kernel 'nope' matches no run"):
        kiana.analyze(con, selection=kiana.Selection(kernel=("nope",)))
