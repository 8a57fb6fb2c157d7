"""A second harness, end to end: documents of a made-up harness (``tritonbench``: its own
``run.spec.sourceNative.source``, its version in ``run.metadata.labels.version``, its
providers under test marked ``run.metadata.labels.role: subject``) are loaded, judged
and reported through the same code as Liger's.  Its subject's regression is a
``regression`` (judged against its baseline as a control), not the ``drift`` of a
baseline; its baseline is named ``liger`` on purpose: no name rule outside Liger's
profile makes it the code under test."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import kiana
from kiana.cli import main
from kiana.documents import Gpu, RunSpec, build_document
from kiana.harness import plain
from tests.conftest import SEEDS, write_jsonl

HARNESS = plain("tritonbench")
H100 = Gpu("nvidia", "NVIDIA H100", "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3")
VERSIONS = ("1.0", "1.1", "1.2")
#: (provider, role): the subject got 20% slower at 1.2 on every workload.
PROVIDERS = (("fused_attn", "subject"), ("liger", "baseline"))


def documents() -> list[dict[str, object]]:
    docs = []
    for v, version in enumerate(VERSIONS):
        for w in range(5):
            for p, (provider, role) in enumerate(PROVIDERS):
                median = (
                    50_000.0 * (w + 1) * (1 + p) * (1.2 if role == "subject" and v == 2 else 1.0)
                )
                median *= 1 + 0.002 * ((v + w + p) % 3 - 1)  # a little noise
                spec = RunSpec(
                    kernel="attention", kernel_title="Attention", pass_="forward",
                    provider=provider, gpu=H100, workload=f"seq{512 * 2**w}",
                    observed_at=datetime(2025, 5, 1) + timedelta(days=7 * v, minutes=w + 5 * p),
                    version=version, median=median, p20=median * 0.995, p80=median * 1.005,
                    harness=HARNESS, role=role,  # type: ignore[arg-type]
                )  # fmt: skip
                docs.append(build_document(spec))
    return docs


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tritonbench")
    data = write_jsonl(folder / "tritonbench.jsonl", documents())
    db = folder / "kiana.duckdb"
    assert main(["load", str(data), "--db", str(db), "-q", "--strict"]) == 0
    return db


def test_the_documents_say_their_harness_and_load_as_its(database: Path) -> None:
    doc = documents()[1]
    run = doc["run"]
    assert isinstance(run, dict)
    assert run["spec"]["sourceNative"]["source"] == "tritonbench"
    assert run["metadata"]["labels"] == {"version": "1.0", "role": "baseline"}
    con = kiana.connect(database)
    try:
        rows = con.execute(
            "SELECT DISTINCT harness, provider, role, version FROM runs ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()
    assert rows == [("tritonbench", p, r, v) for p, r in sorted(PROVIDERS) for v in VERSIONS]


@pytest.mark.heavy
def test_the_subject_s_regression_is_a_regression(database: Path) -> None:
    con = kiana.connect(database)
    try:
        findings = kiana.analyze(con).findings
    finally:
        con.close()
    moved = findings.filter(findings["verdict"] != "unchanged")
    rows = moved.select("provider", "is_subject", "from_version", "to_version", "verdict").rows()
    assert rows == [("fused_attn", True, "1.1", "1.2", "regression")]
    (finding,) = moved.iter_rows(named=True)
    assert finding["control_provider"] == "liger" and finding["adjusted"]
    assert finding["change"] == pytest.approx(0.2, abs=0.01)


def test_kiana_regressions_json_fails_on_it(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["regressions", "--db", str(database), "--json", "--fail-on", "regression"]) == 1
    out = json.loads(capsys.readouterr().out)
    regressions = [f for f in out["findings"] if f["verdict"] == "regression"]
    assert [(f["provider"], f["is_subject"]) for f in regressions] == [("fused_attn", True)]
    assert (out["coverage"]["subject_series"], out["coverage"]["subject_compared"]) == (5, 5)


def test_kiana_report_names_the_harness(database: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "--db", str(database), "-o", str(out), "-q"]) == 0
    html = out.read_text()
    assert "did a tritonbench kernel get slower?" in html
    assert "tritonbench 1.0 → 1.2" in html  # the headline's span
    assert 'data-verdict="regression" data-kernel="attention" data-provider="fused_attn"' in html
    assert "Liger" not in html.replace("Liger-Kernel", "")


@pytest.mark.heavy
def test_a_report_of_two_harnesses_names_neither(database: Path, tmp_path: Path) -> None:
    db = tmp_path / "both.duckdb"
    db.write_bytes(database.read_bytes())
    assert main(["load", str(SEEDS), "--db", str(db), "-q"]) == 0
    out = tmp_path / "report.html"
    assert main(["report", "--db", str(db), "-o", str(out), "-q"]) == 0
    html = out.read_text()
    assert "did a kernel get slower?" in html
    assert "versions 0.4.1 → 1.2 (5 versions" in html
