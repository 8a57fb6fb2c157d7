"""Ctrl-C that code on the way caught (DuckDB turns it into an error of its own, and a
suppressed DuckDB error, such as the reset of the memory limit after a load, loses it):
the command still exits 130 and says what was done, never 0 as if nobody had asked."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.commands.partitions
import kiana.load
from kiana.cli import main
from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def _ctrl_c_delivered() -> Iterator[None]:
    """SIGINT as a terminal delivers it (Python's default handler): a shell starts
    background jobs with SIGINT ignored, and ``main`` leaves an ignored SIGINT ignored,
    so these tests would see no Ctrl-C under ``.ci/run &``."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _ctrl_c_put_aside() -> None:
    """A real SIGINT through the installed handler, its exception then swallowed."""
    with contextlib.suppress(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


def test_a_load_whose_ctrl_c_was_put_aside_says_it_was_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = kiana.load.load

    def load_then_caught_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        done = real(*args, **kwargs)
        _ctrl_c_put_aside()
        return done

    monkeypatch.setattr(kiana.load, "load", load_then_caught_ctrl_c)
    seed = sorted((ROOT / "data").rglob("*.json"))[0]
    assert main(["load", str(seed), "--db", str(tmp_path / "k.duckdb"), "-q"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("kiana load: interrupted after this load was stored (load 1: 1 ")


def test_a_command_whose_ctrl_c_was_put_aside_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "k.duckdb")
    assert main(["load", str(ROOT / "data"), "--db", db, "-q"]) == 0
    real = kiana.commands.partitions.run

    def run_then_caught_ctrl_c(args: Any) -> int:
        code = real(args)
        _ctrl_c_put_aside()
        return code

    monkeypatch.setattr(kiana.commands.partitions, "run", run_then_caught_ctrl_c)
    assert main(["partitions", "--db", db]) == 130
    assert capsys.readouterr().err.endswith(
        "kiana partitions: interrupted as it finished: what it printed or wrote is complete\n"
    )


def test_main_gives_the_ctrl_c_handler_back(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    assert main(["load", str(ROOT / "data"), "--db", str(tmp_path / "k.duckdb"), "-q"]) == 0
    assert signal.getsignal(signal.SIGINT) is before


def test_a_duckdb_error_wrapping_ctrl_c_is_an_interrupt_not_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "k.duckdb")
    assert main(["load", str(ROOT / "data"), "--db", db, "-q"]) == 0

    def ctrl_c_inside_an_arrow_scan(args: Any) -> int:
        _ctrl_c_put_aside()  # DuckDB called back into Python, which raised; DuckDB wraps it
        raise duckdb.InvalidInputException(
            "Invalid Input Error: reading the schema of the Arrow source failed: KeyboardInterrupt: "
        )

    monkeypatch.setattr(kiana.commands.partitions, "run", ctrl_c_inside_an_arrow_scan)
    assert main(["partitions", "--db", db]) == 130
    assert capsys.readouterr().err == "kiana partitions: interrupted: run it again\n"
