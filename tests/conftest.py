from __future__ import annotations

import copy
import json
import os
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


# --------------------------------------------------------------------------- the quick loop

#: A test that takes longer than this (setup and call, wall clock) fails unless it is
#: marked ``heavy``: the quick loop (``-m "not heavy and not browser"``) stays quick.
#: ``KIANA_TEST_SECONDS`` changes the limit (0 turns the rule off), e.g. on a machine
#: much slower than CI's.
SLOW_TEST_SECONDS = float(os.environ.get("KIANA_TEST_SECONDS", "3"))
_SETUP_SECONDS = pytest.StashKey[float]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if call.when == "setup":
        item.stash[_SETUP_SECONDS] = call.duration
        return
    if call.when != "call" or not report.passed or SLOW_TEST_SECONDS <= 0:
        return
    if item.get_closest_marker("heavy") is not None:
        return
    seconds = item.stash.get(_SETUP_SECONDS, 0.0) + call.duration
    if seconds > SLOW_TEST_SECONDS:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {seconds:.1f} s (setup and call), over the quick loop's "
            f"{SLOW_TEST_SECONDS:g} s: make it quicker or mark it @pytest.mark.heavy "
            "(KIANA_TEST_SECONDS sets the limit)"
        )
