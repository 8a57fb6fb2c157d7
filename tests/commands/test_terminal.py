"""The terminal tables fit ``COLUMNS`` without cutting what identifies a row: every
kernel, pass, workload and session date whole, no line wider than the terminal, every
data string one inert line; ``--wide`` puts each row on one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from kiana.documents import Gpu, RunSpec, build_document
from tests.conftest import ROOT

pytestmark = pytest.mark.heavy  # every test here is over the quick loop's budget

LIGER = ROOT.parent / "shared" / "liger"
H100 = Gpu("nvidia", "NVIDIA H100", "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3")
LONG = "fused_linear_cross_entropy_with_a_very_long_name"
HOSTILE = "rms_norm\n::error file=README.md::safe to merge"


def kiana(*args: str, columns: int | None = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "kiana", *args],
        capture_output=True, text=True, check=False, env=env, timeout=300,
    )  # fmt: skip


def _doc(kernel: str, provider: str, workload: str, version: str, median: float, day: int) -> dict:
    spec = RunSpec(
        kernel=kernel, kernel_title=kernel, pass_="no-grad-forward", provider=provider, gpu=H100,
        workload=workload, version=version, median=median, p20=median * 0.995,
        p80=median * 1.005,
        observed_at=datetime(2025, 3, 1) + timedelta(days=day, minutes=len(provider)),
    )  # fmt: skip
    return build_document(spec)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two kernels (a long name, a hostile one) that got 12% slower between two sessions
    of one label, with long workload names."""
    from kiana.load import connect, load

    root = tmp_path_factory.mktemp("terminal")
    lines = []
    for kernel in (LONG, HOSTILE):
        for w in range(4):
            workload = f"batch{w}-seq8192-tokens1024-vocab128256-hidden4096-bf16"
            for day, slower in ((0, 1.0), (20, 1.12)):
                for provider, median in (("liger", 1e5 * slower), ("huggingface", 2e5)):
                    lines.append(_doc(kernel, provider, workload, "0.8.0", median * (w + 1), day))
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    db = root / "k.duckdb"
    con = connect(db)
    try:
        load(con, [root / "docs.jsonl"])
    finally:
        con.close()
    return db


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [120, 80, 60])
def test_findings_fit_the_terminal_and_keep_names_whole(made: Path, columns: int) -> None:
    done = kiana("regressions", "--db", str(made), columns=columns)
    assert done.returncode == 0, done.stderr
    names = {f"{kernel}/no-grad-forward".replace("\n", "\\n") for kernel in (LONG, HOSTILE)}
    # only a name longer than the terminal may pass its edge, alone on its line
    over = {line.strip() for line in done.stdout.splitlines() if len(line) > columns}
    assert over <= names and (not over or columns < 70)
    assert f"{LONG}/no-grad-forward" in done.stdout.split()
    assert "0.8.0 (2025-03-01) → 0.8.0 (2025-03-21)" in done.stdout


def test_a_hostile_name_is_one_inert_line(made: Path) -> None:
    done = kiana("regressions", "--db", str(made), "--steps")
    assert done.returncode == 0, done.stderr
    assert not any(line.lstrip().startswith("::") for line in done.stdout.splitlines())
    assert "rms_norm\\n::error file=README.md::safe" in done.stdout


def test_wide_puts_each_finding_on_one_line(made: Path) -> None:
    done = kiana("regressions", "--db", str(made), "--wide", columns=60)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("regression ")]
    assert len(rows) == 2 and all("0.8.0 (2025-03-01) → 0.8.0 (2025-03-21)" in r for r in rows)
    assert all("the sweep moved" in r or "workload" in r for r in rows)  # evidence inline


def test_partitions_fit_the_terminal(made: Path) -> None:
    done = kiana("partitions", "--db", str(made), columns=80)
    assert done.returncode == 0, done.stderr
    assert _widest(done.stdout) <= 80
    words = done.stdout.split()
    assert LONG in words and "batch3-seq8192-tokens1024-vocab128256-hidden4096-bf16" in words
    wide = kiana("partitions", "--db", str(made), "--wide", columns=80)
    assert _widest(wide.stdout) > 80
    assert len(wide.stdout.splitlines()) == 1 + 8 + 1  # header, one line each, the count


@pytest.mark.skipif(not LIGER.is_dir(), reason=f"Liger's real CSVs are not at {LIGER}")
def test_real_liger_findings_at_120_columns(tmp_path: Path) -> None:
    db = tmp_path / "liger.duckdb"
    csvs = sorted(str(p) for p in LIGER.glob("*.csv"))
    assert kiana("import", "liger", *csvs, "--db", str(db)).returncode == 0
    done = kiana("regressions", "--db", str(db), "--all")
    assert done.returncode == 0, done.stderr
    assert _widest(done.stdout) <= 120
    findings = json.loads(kiana("regressions", "--db", str(db), "--json").stdout)["findings"]
    own = [f for f in findings if not f["folded"]]
    assert own
    words = done.stdout.split()
    for finding in own:
        assert f"{finding['kernel']}/{finding['pass']}" in words, finding["kernel"]
    parts = kiana("partitions", "--db", str(db))
    assert _widest(parts.stdout) <= 120
    partitions = json.loads(kiana("partitions", "--db", str(db), "--json").stdout)["partitions"]
    words = set(parts.stdout.split())
    assert {p["workload"] for p in partitions} <= words
