"""Helpers of the gate's security tests: a Liger-like repository with a pull-request
branch, and one call of ``kiana gate`` that returns its code, output and comment."""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kiana.cli import main
from tests.culprits.test_culprits import CSV, LigerRepo, csv_text, rows
from tests.culprits.test_gate import FEB, JAN, base_repo

__all__ = [
    "CSV",
    "FEB",
    "JAN",
    "Gate",
    "LigerRepo",
    "base_repo",
    "csv_text",
    "disrupt",
    "gate",
    "rows",
]


@dataclass(frozen=True)
class Gate:
    code: int
    out: str
    err: str
    comment: str


def gate(
    repo: LigerRepo,
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
    head: str | None = "pr",
    markdown: Path | None = None,
) -> Gate:
    """``kiana gate REPO --base main [--head HEAD] --markdown FILE EXTRA...``."""
    note = markdown or tmp / "comment.md"
    args = ["gate", str(repo.path), "--base", "main", "--markdown", str(note), *extra]
    if head is not None:
        args += ["--head", head]
    capsys.readouterr()
    code = main(args)
    captured = capsys.readouterr()
    text = note.read_text() if note.is_file() else ""
    return Gate(code, captured.out, captured.err, text)


def pr_rows(*sessions: list[dict[str, str]]) -> dict[str, str]:
    """The main CSV holding ``sessions`` after the base's (rms_norm and swiglu at JAN)."""
    return {CSV: csv_text(rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", JAN), *sessions)}


def slower(liger: float = 1.3) -> list[dict[str, str]]:
    """rms_norm re-measured at FEB, ``liger`` times slower."""
    return rows("rms_norm", "0.5.0", FEB, liger=liger)


def disrupt(
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    *,
    error: Exception | None = None,
    delay: float = 0.0,
) -> None:
    """Make the function at ``target`` (a dotted path: one step of the gate) wait
    ``delay`` seconds, then raise ``error`` (a crash) or run as it would."""
    module, name = target.rsplit(".", 1)
    real = getattr(importlib.import_module(module), name)

    def step(*args: object, **kwargs: object) -> object:
        time.sleep(delay)
        if error is not None:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(target, step)
