"""Reports of ``data/`` and of Liger's real CSVs (``../shared/liger``), made once per
session with the CLI, with what ``kiana regressions`` lists of the same database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIGER = ROOT.parent / "shared" / "liger"


class Made(NamedTuple):
    db: Path
    html: str
    page: Path
    listing: str  # kiana regressions --wide, every listed finding


def _kiana(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kiana", *args], capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _made(folder: Path, db: Path) -> Made:
    page = folder / "report.html"
    _kiana("report", "--db", str(db), "-o", str(page), "--quiet")
    listing = _kiana("regressions", "--db", str(db), "--wide", "--limit", "100000")
    return Made(db, page.read_text(encoding="utf-8"), page, listing)


@pytest.fixture(scope="session")
def data_report(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """``kiana load data/`` into a file, its report and its listing."""
    folder = tmp_path_factory.mktemp("data-report")
    db = folder / "data.duckdb"
    _kiana("load", str(ROOT / "data"), "--db", str(db))
    return _made(folder, db)


@pytest.fixture(scope="session")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """``kiana import liger ../shared/liger/*.csv``, its report and its listing."""
    csvs = sorted(LIGER.glob("*.csv"))
    if not csvs:
        pytest.skip(f"{LIGER} (Liger-Kernel's benchmark CSVs) is absent")
    folder = tmp_path_factory.mktemp("real-report")
    db = folder / "real.duckdb"
    _kiana("import", "liger", *map(str, csvs), "--db", str(db))
    return _made(folder, db)
