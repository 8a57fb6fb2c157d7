"""Ctrl-C after a load's transaction was committed (while the connection closes, say):
the one line says the load was stored, not "nothing was stored"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.load
from kiana.cli import main
from tests.conftest import ROOT


def test_ctrl_c_after_the_commit_says_the_load_was_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = kiana.load.load

    def load_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(kiana.load, "load", load_then_ctrl_c)
    db = tmp_path / "k.duckdb"
    seeds = sorted((ROOT / "data").rglob("*.json"))[:1]
    assert main(["load", str(seeds[0]), "--db", str(db), "-q"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("kiana load: interrupted after this load was stored (load 1: 1 ")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM loads").fetchall() == [(1,)]
    con.close()


def test_ctrl_c_before_the_commit_says_nothing_was_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def ctrl_c(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(kiana.load, "load", ctrl_c)
    db = tmp_path / "k.duckdb"
    assert main(["load", str(ROOT / "data"), "--db", str(db), "-q"]) == 130
    assert "nothing of this load was stored" in capsys.readouterr().err
