"""One tiny hand-made sweep per rule of the findings' table (kiana.stats.rules.rules)."""

from __future__ import annotations

from typing import Any

import polars as pl

from kiana.stats import JudgeOptions, judge
from tests.stats_fixtures import frame, run, sweep_rows

OFF = JudgeOptions(calibrate=False)


class Touched:
    """A CodeChanges that says every baseline's code changed."""

    def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        return pairs.with_columns(
            pl.lit(True).alias("baseline_changed"),
            pl.lit("benchmark_layer_norm.py changed in abc123def456").alias("baseline_note"),
        )


def finding(rows: list[dict[str, Any]], provider: str = "liger", **kw: Any) -> dict[str, Any]:
    found = judge(frame(rows), **kw).findings.filter(pl.col("provider") == provider)
    assert found.height == 1
    row: dict[str, Any] = found.row(0, named=True)
    return row


def sweep(change: float, provider: str = "liger", **kw: Any) -> list[dict[str, Any]]:
    base = {"liger": 100.0, "torch": 50.0, "huggingface": 70.0}[provider]
    return sweep_rows([change] * 4, spread=0.005, provider=provider, base=base, **kw)


def test_outlier() -> None:
    rows = []
    for w in range(3):
        for d, m in enumerate([100.0, 100.2, 99.9, 100.1, 60.0, 100.0, 100.1]):
            rows.append(
                run("0.8.0", m * (w + 1), workload=f"w{w}", day=3 * d, minute=w, spread=0.002)
            )
    row = judge(frame(rows)).findings.filter(pl.col("basis") == "outlier")
    assert row.height == 2 and set(row["verdict"]) == {"inconclusive"}


def test_benchmark() -> None:
    row = finding(sweep(0.0) + sweep(0.10, "torch"), "torch", code_changes=Touched())
    assert (row["basis"], row["verdict"]) == ("benchmark", "regression")
    assert "benchmark_layer_norm.py changed in abc123def456" in row["evidence"]


def test_baseline_memory() -> None:
    row = finding(sweep(0.0, metric="memory") + sweep(0.10, "torch", metric="memory"), "torch")
    assert (row["basis"], row["verdict"]) == ("baseline_memory", "regression")  # never drift


def test_baseline() -> None:
    row = finding(sweep(0.0) + sweep(0.10, "torch"), "torch")
    assert (row["basis"], row["verdict"]) == ("baseline", "drift")


def test_memory() -> None:
    row = finding(sweep(0.10, metric="memory") + sweep(0.10, "torch", metric="memory"))
    assert (row["basis"], row["verdict"]) == (
        "memory",
        "regression",
    )  # the control explains nothing
    assert "memory does not move with the machine" in row["evidence"]


def test_unguarded() -> None:
    row = finding(sweep(0.10) + sweep(0.10, "torch"), code_changes=Touched())
    assert (row["basis"], row["verdict"]) == ("unguarded", "regression")
    assert row["control_provider"] is None
    assert "benchmark changed between sessions: benchmark_layer_norm.py" in row["evidence"]


def test_control_alone() -> None:
    row = finding(sweep(0.0) + sweep(-0.10, "torch"))
    assert row["basis"] == "control_alone"
    assert row["verdict"] in {"unchanged", "inconclusive"}
    assert row["evidence"].startswith("its control torch moved alone")


def test_adjusted() -> None:
    row = finding(sweep(0.10) + sweep(0.002, "torch"))
    assert (row["basis"], row["verdict"], row["adjusted"]) == ("adjusted", "regression", True)
    assert row["evidence"].startswith("liger moved +9.")


def test_drift() -> None:
    row = finding(sweep(0.10) + sweep(0.10, "torch"))
    assert (row["basis"], row["verdict"], row["adjusted"]) == ("drift", "drift", False)
    assert row["evidence"].startswith("the machine moved, not the kernel")
    assert row["change"] >= 0.03  # a drift finding shows the move it rests on


def test_raw() -> None:
    row = finding(sweep(0.10))
    assert (row["basis"], row["verdict"], row["adjusted"]) == ("raw", "regression", False)
    assert "no control measured the machine" in row["evidence"]


def test_lone() -> None:
    row = finding(sweep_rows([0.0, 0.001, 0.30, -0.001, 0.002], spread=0.005))
    assert (row["basis"], row["verdict"], row["workloads"]) == ("lone", "regression", "w2")


def noisy_control(control_w2: float) -> list[dict[str, Any]]:
    """Liger's w2 +30% (spreads 0.5%) beside huggingface measured with 30% spreads,
    its w2 moving by ``control_w2`` (the seed-28 miss of bench/README.md, round 10)."""
    liger = sweep_rows([0.0, 0.001, 0.30, -0.001, 0.002], spread=0.005)
    hf = sweep_rows([0.0, -0.001, control_w2, 0.001, 0.0], spread=0.30, provider="huggingface")
    return liger + hf


def test_lone_on_its_own_step_beside_a_noisy_control() -> None:
    # Against huggingface the deviation is 30% at ~25% noise; on its own step 60 times it.
    row = finding(noisy_control(0.0), options=OFF)
    assert (row["basis"], row["verdict"], row["workloads"]) == ("lone", "regression", "w2")
    assert row["adjusted"] is False
    assert "its control huggingface is too noisy in that workload to adjust by" in row["evidence"]


def test_lone_on_its_own_step_not_where_the_noisy_control_moved_with_it() -> None:
    row = finding(noisy_control(0.30), options=OFF)
    assert row["basis"] != "lone" and row["verdict"] != "regression"


def test_lone_on_its_own_step_not_under_the_resolution() -> None:
    # +6% in w2 is 17 own standard errors off the rest, but without its control a lone
    # workload must be off by resolution x threshold (9%).
    liger = sweep_rows([0.0, 0.001, 0.06, -0.001, 0.002], spread=0.005)
    hf = sweep_rows([0.0, -0.001, 0.0, 0.001, 0.0], spread=0.30, provider="huggingface")
    row = finding(liger + hf, options=OFF)
    assert row["basis"] != "lone" and row["verdict"] != "regression"


def test_gross() -> None:
    rows = sweep_rows([0.5, 0.6, 0.55], spread=0.0, kernel="slow")
    row = finding(rows, options=OFF)
    assert (row["basis"], row["verdict"]) == ("gross", "regression")


def test_unchanged() -> None:
    row = finding(sweep(0.001) + sweep(0.0, "torch"))
    assert (row["basis"], row["verdict"]) == ("unchanged", "unchanged")
    assert row["workloads"] is None and row["workloads_affected"] == 0


def test_inconclusive() -> None:
    row = finding(sweep_rows([0.02, 0.03], spread=0.15), options=OFF)
    assert (row["basis"], row["verdict"]) == ("inconclusive", "inconclusive")


def flat_noisy_control(change: float) -> list[dict[str, Any]]:
    """Liger's every workload ``change`` (spreads 0.5%) beside a huggingface that stayed,
    measured with 15% spreads: the adjusted change is not flagged, the raw one is."""
    liger = sweep_rows([change] * 5, spread=0.005)
    return liger + sweep_rows([0.0] * 5, spread=0.15, provider="huggingface")


def test_raw_beside_a_flat_control() -> None:
    row = finding(flat_noisy_control(0.12), options=OFF)
    assert (row["basis"], row["verdict"], row["adjusted"]) == ("raw", "regression", False)
    assert "while its control huggingface did not move with it" in row["evidence"]


def test_raw_beside_a_flat_control_not_under_the_resolution() -> None:
    # +7% is many own standard errors, but beside a control that cannot confirm it the
    # subject's own change must reach resolution x threshold (9%).
    row = finding(flat_noisy_control(0.07), options=OFF)
    assert (row["basis"], row["verdict"]) == ("raw_small", "inconclusive")
    assert "under the 9% a change must reach without its control's support" in row["evidence"]


def test_lone_not_under_the_resolution() -> None:
    # +6% in w2 is many standard errors off the rest of a sweep that did not move, but one
    # workload alone must be off by resolution x threshold (9%).
    row = finding(sweep_rows([0.0, 0.001, 0.06, -0.001, 0.002], spread=0.005))
    assert (row["basis"], row["verdict"]) == ("lone_small", "inconclusive")
    assert row["evidence"].startswith(
        "1 of 5 workload(s) moved far beyond the rest of the sweep: w2"
    )
    assert (
        "under the 9% one workload must reach beside a sweep that did not move" in row["evidence"]
    )


def test_raw_beside_a_control_that_moved_part_of_the_way() -> None:
    # +12% beside a control that moved +5% with a standard error of 5.6%: the control is
    # neither half as far nor within reach of ruling the machine out (raw_apart).
    liger = sweep_rows([0.12] * 5, spread=0.005)
    row = finding(liger + sweep_rows([0.05] * 5, spread=0.15, provider="huggingface"), options=OFF)
    assert (row["basis"], row["verdict"]) == ("raw_small", "inconclusive")
    assert "too near to rule out that the machine moved both" in row["evidence"]


def test_raw_small_promises_no_reruns_of_the_kernel() -> None:
    row = finding(flat_noisy_control(0.07), options=OFF)
    assert row["reruns"] is None
    assert "more runs of the kernel alone will not resolve it" in row["evidence"]


def test_opposed() -> None:
    # +4% on its own beside a control at +12%: -7% adjusted, but the machine moving 12%
    # and the control moving alone tell opposite stories.
    liger = sweep_rows([0.04] * 5, spread=0.005)
    row = finding(liger + sweep_rows([0.12] * 5, spread=0.005, provider="huggingface"), options=OFF)
    assert (row["basis"], row["verdict"]) == ("opposed", "inconclusive")
    assert "the two point opposite ways" in row["evidence"]
    assert row["reruns"] is None and "a second baseline would" in row["evidence"]
