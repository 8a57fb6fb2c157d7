"""``kiana regressions`` through a real subprocess, on documents kiana wrote."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from kiana.documents import Gpu, RunSpec, build_document
from tests.conftest import run_kiana

H100 = Gpu("nvidia", "NVIDIA H100", "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3")
VERSIONS = ["0.5.9", "0.5.10", "0.6.0"]


def spec(provider: str, workload: str, version: str, median: float, day: int) -> RunSpec:
    return RunSpec(
        kernel="layer_norm",
        kernel_title="LayerNorm",
        pass_="forward",
        provider=provider,
        gpu=H100,
        workload=workload,
        # Providers of one session run minutes apart (sessions: kiana.stats.sessions).
        observed_at=datetime(2025, 3, 1) + timedelta(days=day, minutes=len(provider)),
        version=version,
        median=median,
        p20=median * 0.995,
        p80=median * 1.005,
    )


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kiana.load import connect, load

    root = tmp_path_factory.mktemp("regressions")
    docs = root / "docs"
    docs.mkdir()
    count = 0
    for w in range(4):
        workload = f"hidden{1024 * 2**w}-rows4096-fp32"
        for i, version in enumerate(VERSIONS):
            # liger: +12% at 0.6.0 on every workload; huggingface: flat
            liger = 100_000.0 * (w + 1) * (1.12 if version == "0.6.0" else 1.0)
            hf = 170_000.0 * (w + 1)
            for provider, median in (("liger", liger), ("huggingface", hf)):
                doc = build_document(spec(provider, workload, version, median, 10 * i))
                (docs / f"{count}.json").write_text(json.dumps(doc))
                count += 1
    db = root / "kiana.duckdb"
    con = connect(db)
    try:
        load(con, [docs])
    finally:
        con.close()
    return db


def kiana(*args: str) -> subprocess.CompletedProcess[str]:
    return run_kiana("regressions", *args)


@pytest.mark.heavy
def test_json_and_fail_on(database: Path) -> None:
    done = kiana("--db", str(database), "--json", "--fail-on", "regression")
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert set(out) == {"coverage", "findings", "steps", "quality", "changepoints", "tradeoffs"}
    regressions = [s for s in out["steps"] if s["verdict"] == "regression"]
    assert len(regressions) == 4
    step = regressions[0]
    for key in ("kernel", "pass", "provider", "gpu", "workload", "partition_id", "from_version",
                "to_version", "from_session", "to_session", "from_observed_at", "to_observed_at",
                "from_median_ns", "to_median_ns", "change", "verdict",
                "control_provider", "control_change", "adjusted_change"):  # fmt: skip
        assert key in step
    assert (step["from_version"], step["to_version"]) == ("0.5.10", "0.6.0")
    assert step["control_provider"] == "huggingface"
    findings = [f for f in out["findings"] if f["verdict"] == "regression"]
    assert len(findings) == 1
    finding = findings[0]
    assert (finding["workloads_affected"], finding["workloads_total"]) == (4, 4)
    assert finding["from_observed_at"].endswith("Z") and "T" in finding["from_observed_at"]
    assert out["coverage"]["series"] >= out["coverage"]["compared"] > 0
    # --fail-on counts findings, the unit of the summary and the JSON: one, not four steps.
    assert "failing: 1 regression finding(s)" in done.stderr


@pytest.mark.heavy
def test_table_and_filters(database: Path) -> None:
    done = kiana("--db", str(database))
    assert done.returncode == 0, done.stderr
    assert "regression" in done.stdout and "layer_norm/forward" in done.stdout
    assert "0.5.10 (" in done.stdout and "→ 0.6.0 (" in done.stdout
    assert "findings:" in done.stdout.splitlines()[0]
    assert any(line.startswith("compared ") for line in done.stdout.splitlines()[1:6])


@pytest.mark.heavy
def test_filters_in_process(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kiana.cli import main

    # --fail-on looks at the filtered findings only: huggingface has no regression finding.
    assert (
        main(["regressions", "--db", str(database), "--provider", "huggingface", "--fail-on",
              "regression"])
        == 0
    )  # fmt: skip
    assert "0 regression" in capsys.readouterr().out
    assert main(["regressions", "--db", str(database), "--provider", "huggingface", "--all"]) == 0
    out = capsys.readouterr().out
    assert "huggingface" in out and "liger " not in out


@pytest.mark.heavy
def test_baseline_option_and_unknown_baseline(database: Path) -> None:
    done = kiana("--db", str(database), "--json", "--baseline", "0.5.9")
    assert done.returncode == 0
    steps = json.loads(done.stdout)["steps"]
    assert {s["from_version"] for s in steps} == {"0.5.9"}
    bad = kiana("--db", str(database), "--baseline", "0.4.0")
    assert bad.returncode == 2
    assert "0.4.0" in bad.stderr and "0.5.9, 0.5.10, 0.6.0" in bad.stderr


def test_missing_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kiana.cli import main

    assert main(["regressions", "--db", str(tmp_path / "nope.duckdb")]) == 2
    assert "hint" in capsys.readouterr().err


def test_threshold_above_one_is_refused_with_a_hint(database: Path) -> None:
    done = kiana("--db", str(database), "--threshold", "5")
    assert done.returncode == 2
    assert "would be 500%" in done.stderr and "0.05 = 5%" in done.stderr


@pytest.mark.heavy
@pytest.mark.parametrize(
    ("flag", "value", "closest"),
    [
        ("--kernel", "nosuchkernel", "layer_norm"),
        ("--gpu", "H200", "NVIDIA H100 80GB HBM3"),
        ("--provider", "hugginface", "huggingface"),
    ],
)
def test_a_filter_that_matches_nothing_says_so(
    database: Path, flag: str, value: str, closest: str
) -> None:
    done = kiana("--db", str(database), flag, value)
    assert done.returncode == 2
    assert f"{flag} {value!r} matches no run" in done.stderr
    assert closest in done.stderr


@pytest.mark.heavy
def test_filters_ignore_case(database: Path) -> None:
    done = kiana("--db", str(database), "--json", "--provider", "LIGER", "--kernel", "LAYER")
    assert done.returncode == 0, done.stderr
    assert {f["provider"] for f in json.loads(done.stdout)["findings"]} == {"liger"}
