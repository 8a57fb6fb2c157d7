"""Every head row of a Liger provider is accounted for: judged in a step that ends at
its session, rejected, or not judged with its reason, and anything but judged fails the
gate closed (exit 3).  The fail-open cases of issue 40: a slow Liger session passed
with exit 0, "every head row of a Liger provider judged" (``tests/SECURITY.md``)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from kiana.culprits.headsessions import REASONS, unjudged
from tests.culprits.hostile import FEB, JAN, LigerRepo, base_repo, gate, pr_rows, rows, slower
from tests.culprits.test_culprits import CSV, OPS, csv_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

MAR = "2025-03-01 00:00:00"


def _two_sessions(path: Path) -> LigerRepo:
    """main: rms_norm and swiglu recorded at JAN and again at MAR."""
    repo = LigerRepo(path)
    jan = (rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", JAN))
    repo.commit(
        {f"{OPS}/rms_norm.py": "#\n", f"{OPS}/swiglu.py": "#\n", CSV: csv_text(*jan)}, "add (#1)"
    )
    mar = (rows("rms_norm", "0.5.0", MAR), rows("swiglu", "0.5.0", MAR))
    repo.commit({CSV: csv_text(*jan, *mar)}, "re-run (#2)")
    repo.git("checkout", "-q", "-b", "pr")
    return repo


def _inside() -> dict[str, str]:
    history = [rows(k, "0.5.0", when) for when in (JAN, MAR) for k in ("rms_norm", "swiglu")]
    return {CSV: csv_text(*history, slower(1.3))}


@dataclass(frozen=True)
class Case:
    """A slow Liger session placed where no step ends at it: the PR's CSV, the
    repository it goes on, and the reasons (:data:`REASONS` keys) its rows get."""

    files: dict[str, str]
    reasons: tuple[str, ...]
    two_base_sessions: bool = False


def _later(stamp: str) -> dict[str, str]:
    return pr_rows(slower(1.3), rows("rms_norm", "0.5.0", stamp))


CASES = {
    "dated-before": Case(pr_rows(rows("rms_norm", "0.5.0", "2024-12-15 00:00:00", 1.3)),
                         ("before",)),
    "dated-inside": Case(_inside(), ("inside",), two_base_sessions=True),
    "base-timestamp": Case(pr_rows(rows("rms_norm", "0.5.0", JAN, 1.3)), ("same session",)),
    "older-version": Case(pr_rows(rows("rms_norm", "0.4.0", FEB, 1.3)), ("older version",)),
    "old-speed-1-day-later": Case(_later("2025-02-02 00:00:00"), ("hidden", "no step")),
    "old-speed-7-days-later": Case(_later("2025-02-08 00:00:00"), ("hidden", "no step")),
}  # fmt: skip


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(CASES))
def test_a_slow_liger_session_no_step_ends_at_fails_closed_with_its_reason(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[name]
    path = tmp_path / "Liger-Kernel"
    repo = _two_sessions(path) if case.two_base_sessions else base_repo(path)
    repo.commit(case.files, "slower rms_norm (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3, result.out
    assert "every head row of a Liger provider judged" not in result.out + result.comment
    rows_each = 4  # one session of four workloads per reason
    total = rows_each * len(case.reasons)
    assert f"not judged: {total:,} head row(s) of a Liger provider" in result.out
    for reason in case.reasons:
        assert f"{rows_each:6,}  {REASONS[reason]}" in result.out, result.out  # type: ignore[index]
        assert REASONS[reason] in result.comment  # type: ignore[index]
    assert f"COULD NOT JUDGE: {total:,} head row(s) of a Liger provider not judged" in result.out


@pytest.mark.heavy
def test_two_head_sessions_at_one_speed_are_both_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = base_repo(tmp_path / "Liger-Kernel")
    later = rows("rms_norm", "0.5.0", "2025-02-08 00:00:00")
    repo.commit(pr_rows(rows("rms_norm", "0.5.0", FEB), later), "re-run twice (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 0 and "not judged" not in result.out, result.out


@pytest.mark.heavy
def test_rows_of_a_new_kernel_pass_and_are_named_as_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = base_repo(tmp_path / "Liger-Kernel")
    repo.commit(pr_rows(rows("geglu", "0.5.0", FEB)), "add geglu (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 0, result.out
    assert "4  a new kernel: nothing to compare with" in result.out
    assert "judged or new (4 row(s) of a kernel, GPU or workload" in result.out


@pytest.mark.heavy
def test_a_liger_series_matching_no_history_of_a_known_workload_fails_closed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Liger rows alone under a new pass name: kernel, GPU and workload are known,
    so nothing is new but the series: not judged."""
    repo = base_repo(tmp_path / "Liger-Kernel")
    renamed = [
        {**r, "kernel_operation_mode": "fwd"} if r["kernel_provider"] == "liger" else r
        for r in slower(1.3)
    ]
    repo.commit(pr_rows(renamed), "slower (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3, result.out
    assert f"{4:6,}  {REASONS['no history']}" in result.out


# --------------------------------------------------------------- the rule, on frames


def _runs(*sessions: tuple[str, str, str, str]) -> pl.DataFrame:
    """Runs of one liger series (one workload): (origin, version, time, role) each."""
    return pl.DataFrame(
        [
            {"partition_id": "p", "provider": "liger", "metric": "latency", "kernel": "k",
             "pass": "forward", "gpu": "H100", "workload": "w", "harness": "liger-kernel-bench",
             "version": version, "role": role, "observed_at": datetime.fromisoformat(when),
             "status": "passed", "median": 1.0, "p20": 0.99, "p80": 1.01, "origin": origin}
            for origin, version, when, role in sessions
        ]
    )  # fmt: skip


def _steps() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"partition_id": pl.String, "provider": pl.String, "metric": pl.String,
                "to_session": pl.String, "to_origin": pl.String, "outlier": pl.Boolean}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (("h", "0.5.0", "2024-12-01 00:00:00", "subject"), "before"),
        (("h", "0.5.0", "2025-02-01 00:00:00", "subject"), "inside"),
        (("h", "0.5.0", "2025-01-01 01:00:00", "subject"), "same session"),
        (("h", "0.4.0", "2025-06-01 00:00:00", "subject"), "older version"),
        (("h", "0.5.0", "2025-06-01 00:00:00", "subject"), "no step"),
    ],
)
def test_the_first_reason_that_holds_names_a_head_point(
    head: tuple[str, str, str, str], reason: str
) -> None:
    runs = _runs(
        ("b1", "0.5.0", "2025-01-01 00:00:00", "subject"),
        ("b2", "0.5.0", "2025-03-01 00:00:00", "subject"),
        head,
    )
    (found,) = unjudged(runs, _steps(), {"h"})
    assert (found.reason, found.rows, found.failing) == (reason, 1, True)


def test_a_head_point_a_judged_step_ends_at_is_judged() -> None:
    runs = _runs(("b", "0.5.0", "2025-01-01 00:00:00", "subject"),
                 ("h", "0.5.0", "2025-02-01 00:00:00", "subject"))  # fmt: skip
    step = {"partition_id": "p", "provider": "liger", "metric": "latency",
            "to_session": "2025-02-01T00:00:00Z", "to_origin": "h"}  # fmt: skip
    judged = _steps().vstack(pl.DataFrame([{**step, "outlier": False}], schema=_steps().schema))
    assert unjudged(runs, judged, {"h"}) == ()
    outlier = _steps().vstack(pl.DataFrame([{**step, "outlier": True}], schema=_steps().schema))
    (found,) = unjudged(runs, outlier, {"h"})
    assert found.reason == "no step"


def test_a_later_head_point_hides_an_earlier_one_and_baselines_do_not_fail() -> None:
    runs = _runs(("b", "0.5.0", "2025-01-01 00:00:00", "baseline"),
                 ("h", "0.5.0", "2025-02-01 00:00:00", "baseline"),
                 ("h", "0.5.0", "2025-02-08 00:00:00", "baseline"))  # fmt: skip
    first, last = unjudged(runs, _steps(), {"h"})
    assert (first.reason, last.reason) == ("hidden", "no step")
    assert not first.failing and not last.failing
