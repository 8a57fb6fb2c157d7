from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.load

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "data" / "seeds"
LAYER_NORM = SEEDS / "layer_norm-backward-huggingface-h100.json"
CPO = SEEDS / "fused_linear_cpo_loss-full-huggingface-a100.json"


@pytest.fixture
def seed() -> Callable[[], dict[str, Any]]:
    """A fresh, mutable copy of the layer_norm seed document."""
    base = json.loads(LAYER_NORM.read_text())
    return lambda: copy.deepcopy(base)


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = kiana.load.connect(None)
    yield connection
    connection.close()


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def write_jsonl(path: Path, values: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(v) + "\n" for v in values))
    return path


def run_kiana(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m kiana ARGS`` in a real subprocess, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "kiana", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


pytest_plugins = ["tests.quickloop"]  # the quick loop's 3 s rule


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    """``data/`` loaded into an in-memory database, one per test module."""
    con = kiana.load.connect(None)
    kiana.load.load(con, [ROOT / "data"])
    yield con
    con.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium (``tests/browser.py``) for every browser test of the run:
    Playwright's sync API allows one running instance per thread."""
    from tests.browser import chromium

    with chromium() as launched:
        yield launched
