"""Sessions, pooled sweeps, coverage and data quality (issue: judge what was measured)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kiana.stats import JudgeOptions, judge
from kiana.stats.pooling import KEYS, pool, pool_reference
from tests.stats_fixtures import frame, run

LIGER_CSVS = Path(__file__).resolve().parents[2].parent / "shared" / "liger"


def sitting(version: str, day: int, medians: dict[str, float], **kw: object) -> list[dict]:
    """One session: one run per provider, minutes apart."""
    return [
        run(version, m, provider=p, day=day, minute=i, **kw)  # type: ignore[arg-type]
        for i, (p, m) in enumerate(medians.items())
    ]


def test_same_label_sessions_are_a_step() -> None:
    rows = sitting("0.8.0", 1, {"liger": 100.0, "torch": 200.0})
    rows += sitting("0.8.0", 20, {"liger": 110.0, "torch": 200.0})
    steps = judge(frame(rows)).steps.filter(pl.col("provider") == "liger")
    assert steps.height == 1
    row = steps.row(0, named=True)
    assert (row["from_version"], row["to_version"]) == ("0.8.0", "0.8.0")
    assert row["from_session"] < row["to_session"]
    assert row["verdict"] == "regression"
    assert row["control_provider"] == "torch"


def test_runs_within_the_gap_are_one_session_beyond_it_two() -> None:
    close = [run("0.8.0", 100.0, day=1, minute=m) for m in (0, 50, 100)]  # 50 min gaps
    assert judge(frame(close)).steps.height == 0
    far = [run("0.8.0", 100.0, day=1), run("0.8.0", 100.0, day=1, minute=180)]
    assert judge(frame(far)).steps.height == 1


def test_origins_split_sessions() -> None:
    rows = [run("0.8.0", 100.0, day=1), run("0.8.0", 100.0, day=1, minute=1)]
    data = frame(rows).with_columns(pl.Series("origin", ["a.csv", "b.csv"]))
    assert judge(data).steps.height == 1
    assert judge(frame(rows)).steps.height == 0


def test_versions_order_before_time() -> None:
    rows = [run("0.8.0", 100.0, day=1), run("0.7.0", 100.0, day=5), run("0.8.0", 100.0, day=9)]
    steps = judge(frame(rows)).steps
    assert list(zip(steps["from_version"], steps["to_version"], strict=True)) == [
        ("0.7.0", "0.8.0"),
        ("0.8.0", "0.8.0"),
    ]


def test_baseline_is_the_versions_last_session() -> None:
    rows = [run("0.7.0", 100.0, day=1), run("0.7.0", 120.0, day=3), run("0.8.0", 120.0, day=9)]
    steps = judge(frame(rows), JudgeOptions(baseline="0.7.0")).steps
    assert steps.height == 1
    assert steps["from_median"][0] == 120.0
    assert steps["verdict"][0] == "unchanged"


def test_replicates_far_apart_are_a_conflict_not_a_median() -> None:
    rows = [run("0.8.0", 100.0, day=1), run("0.8.0", 600.0, day=1, minute=3)]
    rows += [run("0.8.0", 100.0, day=9)]
    result = judge(frame(rows))
    assert result.quality.height == 1
    entry = result.quality.row(0, named=True)
    assert entry["kind"] == "conflict" and entry["ratio"] == pytest.approx(6.0)
    assert result.steps.height == 0
    assert result.coverage.not_compared == {"conflicting sessions": 1}


def sweep_rows(changes: list[float], *, spread: float) -> list[dict]:
    rows: list[dict] = []
    for w, change in enumerate(changes):
        base = 100.0 * (w + 1)
        rows.append(run("0.7.0", base, workload=f"w{w}", spread=spread, day=1, minute=w))
        after = base * (1 + change)
        rows.append(run("0.8.0", after, workload=f"w{w}", spread=spread, day=9, minute=w))
    return rows


def test_a_consistent_small_shift_is_found_on_the_pooled_sweep() -> None:
    # Six workloads -3.5% .. -4.6%, each |z| 2.0-2.6: no step passes its own gate.
    changes = [-0.035, -0.038, -0.04, -0.042, -0.044, -0.046]
    sigma = 0.046 / 2.6 / math.sqrt(2)
    result = judge(frame(sweep_rows(changes, spread=sigma * 1.6832)), JudgeOptions(calibrate=False))
    assert not result.steps["verdict"].is_in(["improvement"]).any()
    row = result.findings.row(0, named=True)
    assert row["verdict"] == "improvement"
    assert row["change"] == pytest.approx(-0.041, abs=0.003)
    assert row["workloads"] == "w0, w1, w2, w3, w4, w5"
    assert row["workloads_affected"] == 0  # votes are for display only


def test_one_workload_far_beyond_the_noise_is_named() -> None:
    changes = [0.0, 0.002, -0.002, 0.30, 0.001, -0.001]
    result = judge(frame(sweep_rows(changes, spread=0.01)))
    row = result.findings.row(0, named=True)
    assert row["verdict"] == "regression"
    assert row["workloads"] == "w3"
    assert row["change"] == pytest.approx(0.30)


def test_flat_sweep_is_unchanged() -> None:
    result = judge(frame(sweep_rows([0.001, -0.002, 0.0, 0.002], spread=0.01)))
    assert result.findings["verdict"].to_list() == ["unchanged"]


def test_inconclusive_says_how_many_reruns() -> None:
    result = judge(frame(sweep_rows([0.02, 0.03], spread=0.15)), JudgeOptions(calibrate=False))
    row = result.findings.row(0, named=True)
    assert row["verdict"] == "inconclusive"
    assert row["reruns"] is not None and row["reruns"] > 1
    assert f"about {row['reruns']} run(s) per session" in row["evidence"]


def test_history_before_size_alone() -> None:
    # Zero spread everywhere; the series' own scatter between sessions is ~1%.
    levels = [100.0, 101.0, 99.5, 100.5, 99.0, 100.0, 130.0]
    rows = [run("0.8.0", m, day=d * 3, p20=m, p80=m, kernel="slow") for d, m in enumerate(levels)]
    steps = judge(frame(rows)).steps
    assert set(steps["noise_source"]) == {"history"}
    last = steps.row(-1, named=True)
    assert last["verdict"] == "regression"
    assert "called on size alone" not in last["evidence"]


def test_coverage_counts_series_and_reasons() -> None:
    rows = sitting("0.7.0", 1, {"liger": 100.0, "torch": 100.0})
    rows += sitting("0.8.0", 9, {"liger": 100.0})
    cov = judge(frame(rows)).coverage
    assert (cov.series, cov.compared) == (2, 1)
    assert cov.not_compared == {"one session only": 1}
    assert cov.sentence().startswith("compared 1 of 2 series (1 of 1 partitions)")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-0.5, 0.5, allow_nan=False), st.floats(0.001, 0.3, allow_nan=False)),
        min_size=1,
        max_size=9,
    )
)
def test_pool_matches_the_reference(pairs: list[tuple[float, float]]) -> None:
    steps = pl.DataFrame(
        {
            **{k: ["x"] * len(pairs) for k in KEYS},
            "y": [y for y, _ in pairs],
            "s": [s for _, s in pairs],
        }
    )
    got = pool(steps, pl.col("y"), pl.col("s"), "p").row(0, named=True)
    mu, se, tau = pool_reference([y for y, _ in pairs], [s for _, s in pairs])
    assert got["p_mu"] == pytest.approx(mu, rel=1e-9, abs=1e-12)
    assert got["p_se"] == pytest.approx(se, rel=1e-9)
    assert got["p_tau"] == pytest.approx(tau, rel=1e-6, abs=1e-9)
    assert got["p_k"] == len(pairs)


@pytest.mark.skipif(not LIGER_CSVS.is_dir(), reason="../shared/liger (Liger's CSVs) is absent")
def test_the_real_same_label_case(tmp_path: Path) -> None:
    """cross_entropy on B200 under 0.8.0: the cutile CSV (2026-06-16) and the cutedsl CSV
    (2026-07-05) measured Triton's code (their liger_triton, imported as liger) weeks
    apart: two sessions, one step."""
    import kiana
    from kiana.importers.liger import import_csvs
    from kiana.load.judged import judged_runs

    con = kiana.connect()
    kiana.load_documents(con, import_csvs(sorted(LIGER_CSVS.glob("*.csv"))).documents)
    result = judge(judged_runs(con))
    found = result.findings.filter(
        (pl.col("kernel") == "cross_entropy")
        & (pl.col("provider") == "liger")
        & (pl.col("pass") == "forward")
    )
    assert found.height == 1
    row = found.row(0, named=True)
    assert (row["from_version"], row["to_version"]) == ("0.8.0", "0.8.0")
    assert row["from_session"].startswith("2026-06-16")
    assert row["to_session"].startswith("2026-07-05")
    assert row["verdict"] == "improvement"
    assert result.coverage.compared < result.coverage.series


def test_one_session_off_and_back_is_an_outlier_not_two_changes() -> None:
    levels = [100.0, 100.5, 99.5, 100.0, 59.0, 100.2, 99.8, 100.1]
    rows = [run("0.8.0", m, day=3 * d, p20=m, p80=m) for d, m in enumerate(levels)]
    result = judge(frame(rows))
    around = result.steps.filter(pl.col("evidence").str.starts_with("outlier at "))
    assert around.height == 2
    assert set(around["verdict"]) == {"inconclusive"}
    assert not result.steps["verdict"].is_in(["regression", "improvement"]).any()
    entry = result.quality.filter(pl.col("kind") == "outlier").row(0, named=True)
    assert entry["ratio"] == pytest.approx(0.59, rel=0.01)
    assert entry["session"] == result.steps["to_session"][3]


def test_a_last_session_off_keeps_its_verdict_and_says_so() -> None:
    levels = [100.0, 100.5, 99.5, 100.0, 100.3, 59.0]
    rows = [run("0.8.0", m, day=3 * d, p20=m, p80=m) for d, m in enumerate(levels)]
    last = judge(frame(rows)).steps.row(-1, named=True)
    assert last["verdict"] == "improvement"
    assert "latest session: whether it comes back is not known yet" in last["evidence"]


def test_a_level_shift_after_an_outlier_is_still_a_change() -> None:
    levels = [100.0, 100.5, 99.5, 59.0, 100.2, 87.5, 87.4, 87.6]
    rows = [run("0.8.0", m, day=3 * d, p20=m, p80=m) for d, m in enumerate(levels)]
    steps = judge(frame(rows)).steps
    assert steps["verdict"].to_list()[2:5] == ["inconclusive", "inconclusive", "improvement"]


def test_baseline_drift_is_folded_into_the_liger_finding_it_explains() -> None:
    rows = sitting("0.7.0", 1, {"liger": 100.0, "torch": 200.0})
    rows += sitting("0.8.0", 9, {"liger": 110.0, "torch": 220.0})
    found = judge(frame(rows)).findings
    torch = found.filter(pl.col("provider") == "torch").row(0, named=True)
    liger = found.filter(pl.col("provider") == "liger").row(0, named=True)
    assert (torch["verdict"], torch["folded"]) == ("drift", True)
    assert (liger["verdict"], liger["folded"]) == ("drift", False)
    assert "baselines moved too: torch +10.0%" in liger["evidence"]


def test_a_finding_on_one_run_says_so() -> None:
    rows = sitting("0.7.0", 1, {"liger": 100.0}) + sitting("0.8.0", 9, {"liger": 120.0})
    row = judge(frame(rows)).findings.row(0, named=True)
    assert row["verdict"] == "regression" and row["single_run"]
    assert "rests on a single run on each side" in row["evidence"]


def test_a_small_dip_and_return_is_two_changes_not_an_outlier() -> None:
    levels = [100.0, 100.2, 99.8, 100.0, 92.3, 100.8, 100.6]
    rows = [run("0.8.0", m, day=3 * d, p20=m, p80=m) for d, m in enumerate(levels)]
    verdicts = judge(frame(rows)).steps["verdict"].to_list()
    assert verdicts[3:5] == ["improvement", "regression"]


def test_one_workload_off_then_the_whole_sweep_moving_back_is_two_changes() -> None:
    # w3 regresses alone (+33%) at 0.8.0; then every workload improves 30% at 0.9.0.
    rows: list[dict] = []
    for w in range(5):
        base = 100.0 * (w + 1)
        levels = [base, base * (1.33 if w == 3 else 1.0), base * (1.33 if w == 3 else 1) * 0.7]
        for d, (v, m) in enumerate(zip(["0.7.0", "0.8.0", "0.9.0"], levels, strict=True)):
            rows.append(run(v, m, workload=f"w{w}", day=9 * d, minute=w, spread=0.005))
    found = judge(frame(rows)).findings
    assert found.filter(pl.col("to_version") == "0.8.0")["workloads"].to_list() == ["w3"]
    assert set(found["verdict"]) == {"regression", "improvement"}
