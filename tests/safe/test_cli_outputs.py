"""Every command's outputs: no file written through a link, nothing a runner acts on,
nothing unbounded (issue 40, items 3 and 4; tests/SECURITY.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kiana.cli import main
from tests.culprits.hostile import FEB, JAN, csv_text, rows

SECRET = "GH_TOKEN=ghp_s3cr3tvalue0123456789\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _csv(tmp_path: Path, kernel: str = "rms_norm") -> Path:
    path = tmp_path / "all_benchmark_data.csv"
    path.write_text(csv_text(rows(kernel, "0.5.0", JAN), rows(kernel, "0.5.1", FEB, 1.3)))
    return path


def test_import_refuses_a_link_at_a_predictable_document_name(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _csv(tmp_path)
    out = tmp_path / "docs"
    out.mkdir()
    assert main(["import", "liger", str(source), "-o", str(out)]) == 0
    name = sorted(os.listdir(out))[0]
    for path in out.iterdir():
        path.unlink()
    (out / name).symlink_to(secret)
    assert main(["import", "liger", str(source), "-o", str(out)]) == 2
    assert secret.read_text() == SECRET
    assert f"{name} is a symbolic link" in capsys.readouterr().err


def test_import_refuses_a_jsonl_file_that_is_a_link(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "runs.jsonl"
    link.symlink_to(secret)
    assert main(["import", "liger", str(_csv(tmp_path)), "--jsonl", str(link)]) == 2
    assert (
        secret.read_text() == SECRET and "runs.jsonl is a symbolic link" in capsys.readouterr().err
    )


def test_report_never_writes_through_a_link_at_its_old_temporary_name(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.duckdb"
    assert main(["import", "liger", str(_csv(tmp_path)), "--db", str(db)]) == 0
    out = tmp_path / "o"
    out.mkdir()
    (out / ".report.html.tmp").symlink_to(secret)
    assert main(["report", "--db", str(db), "-o", str(out / "report.html")]) == 0
    assert secret.read_text() == SECRET
    assert (out / "report.html").read_text(encoding="utf-8").startswith("<!")


def test_report_refuses_a_linked_output_folder(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.duckdb"
    assert main(["import", "liger", str(_csv(tmp_path)), "--db", str(db)]) == 0
    (tmp_path / "o").symlink_to(secret.parent)
    assert main(["report", "--db", str(db), "-o", str(tmp_path / "o" / "secret.txt")]) == 2
    assert secret.read_text() == SECRET and "o is a symbolic link" in capsys.readouterr().err


def test_the_legacy_runner_syntax_never_reaches_json_or_import_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    source = _csv(tmp_path, kernel="k ##[error]safe to merge")
    db = tmp_path / "k.duckdb"
    assert main(["import", "liger", str(source), "--db", str(db)]) == 0
    imported = capsys.readouterr()
    assert "##[" not in imported.out + imported.err
    assert main(["regressions", "--db", str(db), "--all", "--json"]) in (0, 1)
    captured = capsys.readouterr()
    assert "##[" not in captured.out + captured.err
    decoded = json.loads(captured.out)  # the same strings, escaped: JSON keeps its meaning
    assert "k ##[error]safe to merge" in json.dumps(decoded, ensure_ascii=False)


def test_a_100_kb_kernel_name_prints_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _csv(tmp_path, kernel="k" * 100_000)
    assert main(["import", "liger", str(source), "--jsonl", str(tmp_path / "x.jsonl")]) in (0, 2)
    captured = capsys.readouterr()
    assert "k" * 301 not in captured.out + captured.err
    assert len(captured.out + captured.err) < 20_000
