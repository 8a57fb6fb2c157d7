"""Findings: the pooled evidence of a sweep, and the fields every door shows."""

from __future__ import annotations

import math

import polars as pl
import pytest

from kiana.stats import JudgeOptions, judge
from tests.stats_fixtures import frame, run, sitting, sweep_rows

MEASURED = JudgeOptions(calibrate=False)


def test_a_consistent_small_shift_is_found_on_the_pooled_sweep() -> None:
    # Six workloads -3.5% .. -4.6%, each |z| 2.0-2.6: no step passes its own gate.
    changes = [-0.035, -0.038, -0.04, -0.042, -0.044, -0.046]
    sigma = 0.046 / 2.6 / math.sqrt(2)
    result = judge(frame(sweep_rows(changes, spread=sigma * 1.6832)), MEASURED)
    assert not result.steps["verdict"].is_in(["improvement"]).any()
    row = result.findings.row(0, named=True)
    assert row["verdict"] == "improvement"
    assert row["change"] == pytest.approx(-0.041, abs=0.003)
    assert row["workloads"] == "w0, w1, w2, w3, w4, w5"
    # The workloads that carry the finding (was: per-step votes, 0 here, beside "6/6 down").
    assert row["workloads_affected"] == 6


def test_one_workload_far_beyond_the_noise_is_named() -> None:
    changes = [0.0, 0.002, -0.002, 0.30, 0.001, -0.001]
    result = judge(frame(sweep_rows(changes, spread=0.01)))
    row = result.findings.row(0, named=True)
    assert (row["verdict"], row["basis"]) == ("regression", "lone")
    assert row["workloads"] == "w3"
    assert row["change"] == pytest.approx(0.30, abs=0.002)  # against the rest of the sweep


def test_of_two_workloads_neither_is_lone() -> None:
    # Two workloads 27% apart, -12% and +15%: either may be the one that left the other,
    # so no lone finding names one of them (a lone workload is a minority of three or
    # more); with a third that held still, the +15% one is lone.
    # (Their spreads as the noise: calibrated on two workloads, the noise would be their
    # own difference.)
    two = judge(frame(sweep_rows([-0.12, 0.15], spread=0.01)), MEASURED)
    assert two.findings.row(0, named=True)["basis"] != "lone"
    three = judge(frame(sweep_rows([-0.002, 0.001, 0.15], spread=0.01)), MEASURED)
    assert three.findings.row(0, named=True)["basis"] == "lone"


def test_flat_sweep_is_unchanged() -> None:
    result = judge(frame(sweep_rows([0.001, -0.002, 0.0, 0.002], spread=0.01)))
    assert result.findings["verdict"].to_list() == ["unchanged"]


def test_unchanged_says_the_smallest_change_it_would_have_flagged() -> None:
    # The threshold (3%) on a precise sweep; separation x its standard error on a noisy
    # one (was: "a 9% change would have shown" on every unchanged finding).
    sweep = [0.001, -0.002, 0.0, 0.002]
    precise = judge(frame(sweep_rows(sweep, spread=0.02)), MEASURED).findings.row(0, named=True)
    assert precise["verdict"] == "unchanged"
    assert "; a change of 3.0% would have shown" in precise["evidence"]
    noisy = judge(frame(sweep_rows(sweep, spread=0.05)), MEASURED).findings.row(0, named=True)
    smallest = math.expm1(MEASURED.separation * noisy["change_se"])
    assert noisy["verdict"] == "unchanged" and 0.03 < smallest < 0.09
    assert f"; a change of {smallest:.1%} would have shown" in noisy["evidence"]


def test_inconclusive_says_how_many_reruns() -> None:
    result = judge(frame(sweep_rows([0.02, 0.03], spread=0.15)), MEASURED)
    row = result.findings.row(0, named=True)
    assert row["verdict"] == "inconclusive"
    assert row["reruns"] is not None and row["reruns"] > 1
    assert f"about {row['reruns']} run(s) per session" in row["evidence"]


def test_a_single_sample_kernel_is_judged_on_its_own_history() -> None:
    # Zero spread everywhere (one do_bench sample each); the series' own scatter between
    # its sessions is ~1%: a 30% move is a change, not "called on size alone".
    levels = [100.0, 101.0, 99.5, 100.5, 99.0, 100.0, 100.8, 99.6, 130.0]
    rows = [run("0.8.0", m, day=d * 3, p20=m, p80=m, kernel="slow") for d, m in enumerate(levels)]
    result = judge(frame(rows))
    assert set(result.steps["noise_source"]) == {"single"}
    last = result.steps.row(-1, named=True)
    assert last["verdict"] == "regression"
    assert "called on size alone" not in last["evidence"]
    finding = result.findings.filter(pl.col("to_session") == last["to_session"]).row(0, named=True)
    assert finding["single_samples"] == 1
    assert "rest on single samples" in finding["evidence"]


def test_baseline_drift_is_folded_into_the_liger_finding_it_explains() -> None:
    rows = sitting("0.7.0", 1, {"liger": 100.0, "torch": 200.0, "huggingface": 300.0})
    rows += sitting("0.8.0", 9, {"liger": 110.0, "torch": 220.0, "huggingface": 333.0})
    found = judge(frame(rows)).findings
    torch = found.filter(pl.col("provider") == "torch").row(0, named=True)
    liger = found.filter(pl.col("provider") == "liger").row(0, named=True)
    assert (torch["verdict"], torch["folded"]) == ("drift", True)
    assert (liger["verdict"], liger["folded"]) == ("drift", False)
    control = liger["control_provider"]
    other = ({"torch", "huggingface"} - {control}).pop()
    # The control is named once, with its own change; the other baseline is folded in.
    assert f"other baselines moved: {other} +1" in liger["evidence"]
    assert f"other baselines moved: {control}" not in liger["evidence"]


def test_a_finding_on_one_run_says_so() -> None:
    rows = sitting("0.7.0", 1, {"liger": 100.0}) + sitting("0.8.0", 9, {"liger": 120.0})
    row = judge(frame(rows)).findings.row(0, named=True)
    assert row["verdict"] == "regression" and row["single_run"]
    assert "rests on a single run on each side" in row["evidence"]


def test_votes_and_names_agree() -> None:
    # "1/4" beside "4/4 down" again: the count is the number of workloads named.
    result = judge(frame(sweep_rows([-0.10, -0.11, -0.09, -0.12], spread=0.005)))
    row = result.findings.row(0, named=True)
    assert row["verdict"] == "improvement"
    assert row["workloads_affected"] == len(row["workloads"].split(", ")) == 4


def test_worst_change_is_on_the_basis_of_the_change() -> None:
    # The control explains w0's +7.6%: the worst *adjusted* workload is far smaller.
    rows = sweep_rows([0.076, 0.0, 0.001, -0.001], spread=0.005)
    rows += sweep_rows([0.075, 0.0, 0.0, 0.0], spread=0.005, provider="torch", base=50.0)
    row = judge(frame(rows)).findings.filter(pl.col("provider") == "liger").row(0, named=True)
    assert row["adjusted"]
    assert abs(row["worst_change"]) < 0.01
    # An unchanged finding's worst is the step farthest from zero, whichever way.
    assert row["verdict"] in {"unchanged", "inconclusive"}


def test_the_shown_change_and_its_error_support_the_verdict() -> None:
    result = judge(frame(sweep_rows([0.05, 0.06, 0.055, 0.052, 0.058], spread=0.004)))
    for row in result.findings.filter(
        pl.col("verdict").is_in(["regression", "improvement"])
    ).iter_rows(named=True):
        z = math.log1p(row["change"]) / row["change_se"]
        assert abs(z) >= 3.0
        assert abs(row["change"]) + row["change_se"] >= 0.03
        assert row["change"] == pytest.approx(row["worst_change"], abs=0.02)
