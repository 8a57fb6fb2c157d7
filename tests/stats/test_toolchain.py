"""The toolchain control: a change every untouched kernel of its provider made is drift."""

from __future__ import annotations

import statistics
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from kiana.stats import judge
from kiana.stats.toolchain import MIN_KERNELS, common_moves, finding_changes
from tests.stats.test_unstable import Commits
from tests.stats_fixtures import frame, run

DAYS = (0, 7, 14, 21)
KERNELS = tuple(f"k{i}" for i in range(7))


def sittings(moved: dict[str, float], default: float = 1.05) -> pl.DataFrame:
    """Every kernel's ``liger`` and a steady ``torch``, three workloads, one sitting a
    week recorded at commit ``c<day>``; from day 14 each kernel's ``liger`` runs at
    ``moved.get(kernel, default)`` times its speed."""
    rows: list[dict[str, Any]] = []
    for d in DAYS:
        for k in KERNELS:
            factor = moved.get(k, default) if d >= 14 else 1.0
            for w in range(3):
                jitter = 1 + 0.001 * ((d + w + len(k)) % 3 - 1)
                common = {"kernel": k, "workload": f"w{w}", "day": d}
                rows.append(run("0.8.0", 10.0 * (w + 1) * factor * jitter, minute=w, **common))
                rows.append(run("0.8.0", 11.0 * (w + 1) * jitter, provider="torch", minute=9 + w, **common))  # fmt: skip
    runs = frame(rows)
    day = (pl.col("observed_at") - pl.col("observed_at").min()).dt.total_days().cast(pl.String)
    return runs.with_columns((pl.lit("c") + day + pl.lit(":benchmarks/c") + day).alias("origin"))


def liger_at_the_move(runs: pl.DataFrame, code_changes: Any = None) -> pl.DataFrame:
    found = judge(runs, code_changes=code_changes).findings
    return found.filter(pl.col("provider") == "liger", pl.col("to_origin").str.starts_with("c14:"))


def test_every_untouched_kernel_moving_together_is_drift() -> None:
    found = liger_at_the_move(sittings({}), Commits())
    assert found.height == len(KERNELS)
    assert set(found["verdict"]) == {"drift"} and set(found["basis"]) == {"toolchain"}
    assert (
        found["evidence"]
        .str.starts_with(
            "liger's other 6 kernels no commit touched moved +5.0% between the same sittings"
        )
        .all()
    )


def test_a_kernel_far_beyond_the_common_move_is_still_its_own_change() -> None:
    found = liger_at_the_move(sittings({"k0": 1.30}), Commits())
    verdicts = dict(zip(found["kernel"], found["verdict"], strict=True))
    assert verdicts.pop("k0") == "regression"
    assert set(verdicts.values()) == {"drift"}


def test_without_code_changes_known_each_kernel_is_judged_alone() -> None:
    found = liger_at_the_move(sittings({}))
    assert set(found["verdict"]) == {"regression"}


def test_a_commit_touching_every_kernel_leaves_no_control() -> None:
    touched = {k: {14} for k in KERNELS}
    found = liger_at_the_move(sittings({}), Commits(touched))
    assert set(found["verdict"]) == {"regression"}


def test_the_common_move_needs_enough_untouched_kernels() -> None:
    # Two of seven untouched: each of them has one other, under MIN_KERNELS.
    touched = {k: {14} for k in KERNELS[2:]}
    found = liger_at_the_move(sittings({}), Commits(touched))
    assert MIN_KERNELS > 1 and set(found["verdict"]) == {"regression"}


def test_the_kernels_own_move_never_sets_its_control() -> None:
    # k0 alone is untouched and moved; the others (touched) did not move.
    touched = {k: {14} for k in KERNELS[1:]}
    found = liger_at_the_move(sittings({"k0": 1.05}, default=1.0), Commits(touched))
    assert found.filter(pl.col("kernel") == "k0")["verdict"].to_list() == ["regression"]


def slow_common_moves(
    findings: pl.DataFrame, changes: pl.DataFrame
) -> dict[tuple[Any, ...], float]:
    """The module docstring's common move, one finding at a time: the median over the
    other untouched kernels of the same provider, GPU, metric and origins of each
    kernel's median log change."""
    touched = {
        tuple(r[k] for k in ("kernel", "pass", "provider", "from_session", "to_session")): r["kernel_changed"]
        for r in changes.iter_rows(named=True)
    }  # fmt: skip
    rows = [r for r in findings.iter_rows(named=True) if r["is_subject"] and r["from_origin"]]
    out = {}
    for r in rows:
        if r["verdict"] not in ("regression", "improvement"):
            continue
        per_kernel: dict[str, list[float]] = {}
        for o in rows:
            same = all(
                o[c] == r[c] for c in ("gpu", "provider", "metric", "from_origin", "to_origin")
            )
            key = tuple(o[k] for k in ("kernel", "pass", "provider", "from_session", "to_session"))
            if same and o["kernel"] != r["kernel"] and touched.get(key) is False:
                per_kernel.setdefault(o["kernel"], []).append(
                    float(pl.Series([o["change"]]).log1p()[0])
                )
        if len(per_kernel) >= MIN_KERNELS:
            out[(r["kernel"], r["pass"], r["to_session"])] = statistics.median(
                statistics.median(v) for v in per_kernel.values()
            )
    return out


@pytest.mark.parametrize("moved", [{}, {"k0": 1.30, "k3": 0.9}, {"k1": 1.02, "k2": 1.09}])
def test_common_moves_match_a_slow_reference(moved: dict[str, float]) -> None:
    from kiana.stats import _stage
    from kiana.stats.options import JudgeOptions

    runs = sittings(moved)
    stage = _stage(runs, JudgeOptions(), Commits())
    judged = judge(runs, code_changes=None)  # the rule table's verdicts, before the control
    changes = finding_changes(stage.steps)
    fast = {
        (r["kernel"], r["pass"], r["to_session"]): r["_c"]
        for r in common_moves(judged.findings, changes).iter_rows(named=True)
    }
    slow = slow_common_moves(judged.findings, changes)
    assert fast.keys() == slow.keys() and fast
    for key, value in slow.items():
        assert fast[key] == pytest.approx(value, abs=1e-12)


def test_what_is_left_beyond_the_common_move_may_still_lean() -> None:
    from kiana.stats.options import JudgeOptions

    # +7.6% against the others' +5.0%: +2.5% left, neither flagged (6 standard errors)
    # nor ruled out to 3% within one standard error.
    options = JudgeOptions(separation=6.0)
    found = judge(sittings({"k0": 1.076}), options, code_changes=Commits()).findings
    k0 = found.filter(pl.col("kernel") == "k0", pl.col("provider") == "liger",
                      pl.col("to_origin").str.starts_with("c14:"))  # fmt: skip
    assert (k0["verdict"].item(), k0["basis"].item()) == ("inconclusive", "toolchain")
    assert ": leans regression; " in k0["evidence"].item()


def ci_sitting(
    folder: Path, commit: str, day: int, kernels: tuple[str, ...], factor: float
) -> None:
    """``benchmarks/<commit>/benchmark.csv`` of one CI sitting: ``liger`` at ``factor``
    and a steady ``torch`` for each of ``kernels`` on three workloads (appended)."""
    header = (
        "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,"
        "x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,"
        "gpu_name,timestamp,liger_version\n"
    )
    target = folder / "benchmarks" / commit[:7] / "benchmark.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = [] if target.exists() else [header]
    for k in kernels:
        for w, x in enumerate((1024, 2048, 4096)):
            for provider, base in (("liger", 1.0 * factor), ("torch", 1.1)):
                jitter = 1 + 0.001 * ((day + w + len(k)) % 3 - 1)
                y = base * (w + 1) * jitter
                lines.append(
                    f"{k},{provider},forward,speed,ms,N,size,{x},{y:.6f},{y * 0.999:.6f},"
                    f'{y * 1.001:.6f},"{{}}",NVIDIA H100 80GB HBM3,'
                    f"{date(2025, 1, 1) + timedelta(days=day)} 00:{len(k) % 50:02d}:00,0.8.0\n"
                )
    with target.open("a") as out:
        out.write("".join(lines))


@pytest.mark.heavy
def test_an_update_that_brings_a_sittings_kernels_in_two_loads_equals_a_full_judgement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The toolchain control crosses kernels: the last sitting's kernels arrive in two
    loads (3, then 4 more, every one 5% slower), and after each the stored judgement
    equals judging every run again (the first three: regressions, then drift)."""
    import kiana.load
    from kiana.commands.import_ import import_paths
    from kiana.culprits.changes import GitCodeChanges
    from kiana.shards import judge_all
    from kiana.shards.stored import StoredJudged
    from kiana.stats import calfit
    from tests.culprits.test_culprits import LigerRepo
    from tests.shards.test_incremental import OPTIONS, assert_same

    repo = LigerRepo(tmp_path / "Liger-Kernel")  # four commits, none touching a kernel
    days = tuple(range(0, 49, 7))  # six sittings, then the seventh in two loads
    commits = {day: repo.commit({"README.md": f"day {day}\n"}, f"day {day}") for day in days}
    changes = GitCodeChanges(repo.path)
    kernels = tuple(f"kernel{i}" for i in range(7))
    monkeypatch.setattr(calfit, "FULL_STEPS", 100)  # the update may splice
    con = kiana.load.connect(tmp_path / "kiana.duckdb")
    verdicts = []
    try:
        for n, (part, chosen, factor) in enumerate(
            [
                (days[:-1], kernels, 1.0),
                (days[-1:], kernels[:3], 1.05),
                (days[-1:], kernels[3:], 1.05),
            ]
        ):
            folder = tmp_path / f"part{n}"
            for day in part:
                ci_sitting(folder, commits[day], day, chosen, factor)
            kiana.load.load_documents(con, import_paths([folder])[0].documents)
            stored = judge_all(con, OPTIONS, code_changes=changes)
            whole = judge_all(con, OPTIONS, code_changes=changes, full=True, store=False)
            assert_same(stored, whole)
            last = stored.findings.filter(
                pl.col("provider") == "liger", pl.col("to_session").str.starts_with("2025-02-12")
            )
            verdicts.append(sorted(set(last["verdict"])))
            if n:
                assert isinstance(stored, StoredJudged)
                assert "1 GPU(s) from their newest sessions" in stored.note, stored.note
    finally:
        con.close()
    assert verdicts == [[], ["regression"], ["drift"]]
