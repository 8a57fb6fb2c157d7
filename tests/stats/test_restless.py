"""Restless series: findings at the same code that go both ways are unstable."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from kiana.stats import judge
from tests.stats.test_unstable import LIGER_CI, Commits, sweep, unstable_rows, with_origins
from tests.stats_fixtures import run

LIGER_REPO = Path(os.environ.get("KIANA_LIGER_REPO", "/work/.mirror/linkedin+Liger-Kernel/repo"))

#: Two levels 6% apart (under the two-level rule's 9%), visited back and forth.
WANDERING = [10.0 * x for x in (1, 1, 1.06, 1, 1, 1.06, 1.06, 1, 1)]


def test_a_series_that_moves_both_ways_at_the_same_code_is_unstable() -> None:
    runs = with_origins(sweep(WANDERING))
    rows = unstable_rows(judge(runs, code_changes=Commits(set())))
    assert rows["message"].to_list() == [
        "unstable series: moved 4 times with no commit touching the kernel (2 up, 2 down,"
        " by up to 6%): not a change of the kernel's, could not judge"
    ]


def test_moves_both_ways_need_the_code_changes_known() -> None:
    result = judge(with_origins(sweep(WANDERING)))
    assert unstable_rows(result).height == 0
    assert "regression" in result.findings.filter(pl.col("provider") == "liger")["verdict"]


def test_moves_both_ways_at_kernel_commits_are_changes() -> None:
    runs = with_origins(sweep(WANDERING))
    # Commits touch the kernel at every move (days 6, 9, 15 and 21).
    assert unstable_rows(judge(runs, code_changes=Commits({6, 9, 15, 21}))).height == 0


def test_two_moves_the_same_way_at_the_same_code_are_not_unstable() -> None:
    runs = with_origins(sweep([10.0 * x for x in (1, 1, 1.05, 1.05, 1.10, 1.10, 1.10)]))
    result = judge(runs, code_changes=Commits(set()))
    assert unstable_rows(result).height == 0
    assert result.findings.filter(pl.col("provider") == "liger")["verdict"].to_list()[:2] == [
        "regression", "regression"
    ]  # fmt: skip


def floor_sweep(floor: list[float]) -> list[dict[str, Any]]:
    """``liger`` with one large, precise workload that stays at 500 and three small ones
    at a floor of launch overhead that sits at ``floor`` (noisier), beside a steady
    ``torch``, one session every three days (layer_norm backward on Liger's H100 CI)."""
    rows = []
    for d, level in enumerate(floor):
        for w, (size, spread) in enumerate([(500.0, 0.001)] + [(level, 0.2)] * 3):
            jitter = 1 + 0.002 * ((d * 7 + w) % 3 - 1)
            common = {"workload": f"w{w}", "day": 3 * d}
            rows.append(
                run("0.8.0", size * jitter * (1 + 0.01 * w), spread=spread, minute=w, **common)
            )
            rows.append(run("0.8.0", 60.0 * (w + 1) * jitter, provider="torch", minute=9 + w, **common))  # fmt: skip
    return rows


#: The floor's level wandering over three levels at the same code (no two of Ashman's).
FLOOR = [160.0 * x for x in (1, 1, 1.3, 1.3, 1, 0.75, 0.75, 1, 1.3)]


def test_a_floor_that_moves_both_ways_at_the_same_code_is_unstable() -> None:
    # No step is flagged (the floor is noisy, the large workload stays): the sweep's
    # median moves +30%, -23%, -25%, +33% and +30%.
    result = judge(with_origins(floor_sweep(FLOOR)), code_changes=Commits(set()))
    rows = unstable_rows(result)
    assert rows["provider"].to_list() == ["liger"]
    assert rows["message"].item().startswith("unstable series: moved 5 times")


def test_a_floor_that_moves_at_kernel_commits_is_not_unstable() -> None:
    runs = with_origins(floor_sweep(FLOOR))
    assert unstable_rows(judge(runs, code_changes=Commits({6, 12, 15, 21, 24}))).height == 0


@pytest.mark.skipif(
    not LIGER_CI.is_dir() or not (LIGER_REPO / "HEAD").is_file(),
    reason="needs ../shared/liger-ci and Liger-Kernel's git history (fetch "
    "github:linkedin/Liger-Kernel; KIANA_LIGER_REPO names another clone)",
)
def test_liger_ci_dpo_loss_backward_h100_moves_both_ways_at_the_same_code(tmp_path: Path) -> None:
    """+7.6%, -7.2%, +5.7%, -6.3% between sittings no commit touched dpo_loss (2026)."""
    import kiana
    from kiana.commands.import_ import import_paths
    from kiana.culprits.changes import GitCodeChanges
    from kiana.load.judged import judged_runs

    for source in sorted(LIGER_CI.glob("*/benchmark.csv")):
        rows = pl.read_csv(source, infer_schema_length=0).filter(
            pl.col("kernel_name") == "dpo_loss", pl.col("gpu_name") == "NVIDIA H100 80GB HBM3"
        )
        if rows.height:
            target = tmp_path / "benchmarks" / source.parent.name / "benchmark.csv"
            target.parent.mkdir(parents=True)
            rows.write_csv(target)
    con = kiana.connect()
    kiana.load_documents(con, import_paths([tmp_path])[0].documents)
    result = judge(judged_runs(con), code_changes=GitCodeChanges(LIGER_REPO))
    rows = unstable_rows(result).filter(pl.col("pass") == "backward")
    assert rows["provider"].to_list() == ["liger"]
    assert rows["message"].item().startswith("unstable series: moved 4 times")
    backward = result.findings.filter(pl.col("pass") == "backward", pl.col("provider") == "liger")
    assert set(backward["verdict"]) == {"inconclusive"}
