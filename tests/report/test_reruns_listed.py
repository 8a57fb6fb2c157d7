"""Leaning findings are shown as worth a rerun, with the reruns each would need (issue 39)."""

from __future__ import annotations

import polars as pl

from kiana.findings.wording import rerun_line, worth_rerun


def _findings() -> pl.DataFrame:
    return pl.DataFrame({
        "kernel": ["jsd", "jsd", "rms_norm", "geglu"], "pass": ["full"] * 4,
        "provider": ["liger", "torch", "liger", "liger"], "gpu": ["NVIDIA H100 PCIe"] * 4,
        "from_version": ["0.3.0"] * 4, "to_version": ["0.3.1"] * 4,
        "verdict": ["inconclusive", "inconclusive", "inconclusive", "regression"],
        "change": [0.058, -0.05, 0.004, 0.2], "change_se": [0.023, 0.02, 0.02, 0.01],
        "reruns": [5, None, 3, None], "is_subject": [True, False, True, True],
    })  # fmt: skip


def test_only_leaning_inconclusive_findings_are_worth_a_rerun() -> None:
    shown = worth_rerun(_findings())
    assert shown.select("kernel", "provider", "lean").rows() == [
        ("jsd", "liger", "regression"), ("jsd", "torch", "improvement"),
    ]  # fmt: skip


def test_a_rerun_line_says_the_lean_and_the_runs() -> None:
    first, second = worth_rerun(_findings()).iter_rows(named=True)
    assert rerun_line(first) == (
        "jsd/full liger NVIDIA H100 PCIe 0.3.0 → 0.3.1: +5.8% ± 2.3%, leans regression; "
        "about 5 run(s) per session on each side would settle it"
    )
    assert "(a baseline's)" in rerun_line(second) and "will not settle it" in rerun_line(second)
