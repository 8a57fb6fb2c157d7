"""The whole page: self-contained, the bundle inlined once, JSON blocks safe, hostile
strings escaped; the chart API on hand-made frames; ``kiana report`` as a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kiana import charts
from tests.report_fixtures import (
    build_page,
    sample_database,
    sample_findings,
    sample_runs,
    sample_steps,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_page(sample_database(tmp_path_factory.mktemp("page")))


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_page(sample_database(tmp_path_factory.mktemp("hostile"), hostile=True))


def _json_blocks(html: str) -> list[str]:
    return re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)


@pytest.mark.heavy
def test_page_is_self_contained(page: str) -> None:
    assert page.count("window.vegaEmbed=") == 1  # the bundle, once
    assert not re.search(
        r"<(script|link|img|iframe)[^>]+(src|href)\s*=\s*[\"']?(https?:)?//", page, re.I
    )
    assert "Content-Security-Policy" in page and "default-src &#x27;none&#x27;" in page
    for section in ("summary", "findings", "charts", "speedup", "memory", "quality", "provenance"):
        assert f'<section id="{section}">' in page


def test_page_holds_findings_and_charts(page: str) -> None:
    blocks = _json_blocks(page)
    assert len(blocks) == 3  # series + sweep of the one regression, and the speedup map
    for block in blocks:
        spec = json.loads(block)
        assert "$schema" not in spec  # no URL the browser could be tempted to fetch
    assert 'data-verdict="regression"' in page
    assert "kiana report test" in page and "2025-01-02" in page
    assert "0.50×" in page  # the flip below 1x in the speedup table


@pytest.mark.heavy
def test_hostile_page_escapes_everything(hostile_page: str) -> None:
    body = hostile_page.split("<body>", 1)[1]
    body = body.rsplit("<script>", 2)[0]  # drop the bundle and kiana's script
    assert "<img" not in body and "<svg" not in body
    assert body.count("<script") == len(_json_blocks(hostile_page))
    for block in _json_blocks(hostile_page):
        assert "<" not in block and "\u2028" not in block
        json.loads(block)
    assert "\u202e" not in hostile_page
    assert "&lt;/script&gt;&lt;script&gt;alert(4)" in hostile_page


@pytest.mark.heavy
def test_chart_api_on_hand_made_frames() -> None:
    runs, steps, findings = sample_runs(), sample_steps(), sample_findings()
    row = findings.row(0, named=True)
    spec = charts.to_spec(charts.finding(runs, steps, row, threshold=0.03))
    assert len(spec["hconcat"]) == 2
    assert charts.to_spec(charts.speedup(runs))["layer"]
    assert charts.to_spec(charts.overview(findings))["layer"]
    hostile = sample_runs(hostile=True)
    partition = hostile["partition_id"][0]
    text = json.dumps(charts.to_spec(charts.series(hostile, partition_id=partition)))
    assert "\u202e" not in text


def test_series_needs_one_partition() -> None:
    from kiana.errors import UsageError

    with pytest.raises(UsageError, match="partitions"):
        charts.series(sample_runs())


def _kiana(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kiana", *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )  # fmt: skip


@pytest.mark.heavy
def test_cli_report_loads_paths_and_writes_file(tmp_path: Path) -> None:
    result = _kiana("report", str(ROOT / "data"), "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "kiana report" in html
    assert "wrote" in result.stdout
    assert "regressions" in result.stdout and "among" in result.stdout  # the headline


@pytest.mark.heavy
def test_cli_report_without_database_is_a_clear_error(tmp_path: Path) -> None:
    result = _kiana("report", "--db", "missing.duckdb", "-o", "r.html", cwd=tmp_path)
    assert result.returncode == 2
    assert "no such database" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r.html").exists()
    empty = _kiana("report", "--db", ":memory:", "-o", "r.html", cwd=tmp_path)
    assert empty.returncode == 2 and "nothing to read" in empty.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.heavy
def test_importing_kiana_does_not_import_altair() -> None:
    code = "import sys, kiana, kiana.charts, kiana.report, kiana.cli; kiana.cli.build_parser();"
    code += "print('altair' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.heavy
def test_cli_report_of_no_documents_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("not a document")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.json").write_text('{"not": "a kernelindex document"}')
    for folder, said in (("notes", "no document files under"), ("bad", "nothing to report")):
        out = tmp_path / f"{folder}.html"
        result = _kiana("report", str(tmp_path / folder), "-o", str(out), cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert said in result.stderr
        assert not out.exists()
