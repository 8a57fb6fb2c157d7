"""The gate fails closed, visibly: head rows it could not judge are counted with their
reasons and fail it (exit 3), a crash or a limit is never a verdict, identity fields
are normalised or their near-miss is named, and a re-run is compared with the rows it
replaces.  Each test builds its hostile repository (``tests/SECURITY.md``)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from kiana.culprits.gate import EXIT_CODES, MAX_ROWS
from kiana.culprits.gate import gate as run_gate
from tests.culprits.hostile import (
    FEB,
    JAN,
    LigerRepo,
    base_repo,
    disrupt,
    gate,
    pr_rows,
    rows,
    slower,
)
from tests.culprits.test_culprits import CSV, csv_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

LIGER_ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "liger"


@pytest.fixture
def repo(tmp_path: Path) -> LigerRepo:
    return base_repo(tmp_path / "Liger-Kernel")


def _spoil(session: list[dict[str, str]]) -> list[dict[str, str]]:
    """Every liger row of ``session`` broken a different way; baselines kept."""
    breakers = [
        {"y_value_50": "nan"},
        {"y_value_20": "-1"},
        {"y_value_20": "9", "y_value_80": "1"},  # p20 above p80: the loader's check
        {"timestamp": "yesterday"},
        {"gpu_name": ""},
        {"y_value_50": "1e308"},
        {"timestamp": "9999-12-31 23:59:59"},
        {"extra_benchmark_config_str": "[" * 60_000 + "]" * 60_000},
    ]
    out, index = [], 0
    for row in session:
        if row["kernel_provider"] == "liger":
            row = {**row, **breakers[index % len(breakers)]}
            index += 1
        out.append(row)
    return out


@pytest.mark.heavy
def test_rejected_liger_rows_fail_closed_with_their_reasons(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _spoil(slower(1.3) + rows("rms_norm", "0.5.0", "2025-02-01 00:00:01", 1.3))
    repo.commit(pr_rows(session), "slower rms_norm, broken rows (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3
    assert "COULD NOT JUDGE" in result.out and "passed" not in result.out
    for reason in ("not a finite number", "negative value", "not a timestamp", "empty value",
                   "out of range (above 1e9)", "out of range (1970-2099)", "nested"):  # fmt: skip
        assert reason in result.out, reason
    assert "p20" in result.out.lower() or "p80" in result.out.lower()
    assert "**could not judge**" in result.comment and "head row(s) rejected" in result.comment


@pytest.mark.heavy
def test_rejected_baseline_rows_are_counted_but_do_not_fail(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = [
        {**r, "y_value_50": "nan"} if r["kernel_provider"] == "huggingface" else r
        for r in rows("rms_norm", "0.5.0", FEB)
    ]
    repo.commit(pr_rows(session), "re-run (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 0
    assert "4 head row(s) rejected (0 of Liger)" in result.out


@pytest.mark.heavy
def test_a_conflicting_copy_of_the_old_rows_fails_closed(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = rows("rms_norm", "0.5.0", "2025-02-01 00:00:01")
    repo.commit(pr_rows(slower(1.3), copy), "slower, plus the old rows (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 3
    assert "conflicting head session point(s)" in result.out
    assert "conflict" in result.comment and "**passed**" not in result.comment


@pytest.mark.heavy
def test_a_conflicting_baseline_is_counted_but_does_not_fail(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A head session whose baseline's replicates disagree: counted, not judged, and the
    gate passes on the provider under test (its runs' role, not its name, decides)."""
    copy = rows("rms_norm", "0.5.0", "2025-02-01 00:00:01")
    repo.commit(pr_rows(rows("rms_norm", "0.5.0", FEB, baseline=1.3), copy), "re-run (#5)")
    result = gate(repo, tmp_path, capsys)
    assert "conflicting head session point(s) (0 of Liger)" in result.out, result.out
    assert result.code == 0, result.out


@pytest.mark.heavy
@pytest.mark.parametrize(
    "change",
    [
        {"kernel_operation_mode": "Forward"},
        {"kernel_provider": "Liger "},
        {"x_value": "{x}.0"},
        {"metric_unit": "MS", "kernel_name": "RMS_Norm"},
    ],
)
def test_identity_fields_are_normalised(
    repo: LigerRepo,
    tmp_path: Path,
    change: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = [
        {**r, **{k: v.format(x=r["x_value"]) for k, v in change.items()}}
        if r["kernel_provider"] == "liger" or "kernel_provider" not in change
        else r
        for r in slower(1.3)
    ]
    repo.commit(pr_rows(session), "slower (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 1 and "regression   rms_norm/forward liger" in result.out


@pytest.mark.heavy
def test_rows_matching_no_history_are_counted_with_the_closest_series(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    renamed = [{**r, "gpu_name": "nvidia h100 80gb hbm3"} for r in slower(1.3)]
    extra = [
        {**r, "extra_benchmark_config_str": '{"M": 2048, "dtype": "torch.bfloat16", "z": 1}'}
        for r in rows("swiglu", "0.5.0", FEB)
    ]
    repo.commit(pr_rows(renamed, extra), "re-run (#5)")
    result = gate(repo, tmp_path, capsys)
    assert result.code == 0
    assert "16 head row(s) match no history" in result.out
    assert "(gpu)" in result.out and "(workload)" in result.out
    assert "16 head row(s) match no history** (nothing to compare them with); closest" in (
        result.comment
    )
    assert "differs in: gpu" in result.comment


@dataclass(frozen=True)
class Stop:
    """A way the gate stops before it has judged: its exit code, the step disrupted
    (crashing with ``error`` or waiting ``delay`` seconds), the options, and what the
    gate says on stderr."""

    code: int
    step: str | None
    extra: tuple[str, ...]
    said: str
    error: Exception | None = None
    delay: float = 0.0


STOPS = [
    pytest.param(
        Stop(6, "kiana.culprits.accounting.unmatched", (),
             "internal error: could not judge (ZeroDivisionError)", error=ZeroDivisionError()),
        id="crash", marks=pytest.mark.heavy,
    ),
    pytest.param(
        Stop(4, None, ("--max-rows", "20"), "more than 20 distinct benchmark rows (--max-rows)"),
        id="max-rows",
    ),
    pytest.param(
        Stop(5, "kiana.culprits.gate.replaced_first", ("--timeout", "0.5"),
             "--timeout 0.5 s reached", delay=5.0),
        id="timeout", marks=pytest.mark.heavy,
    ),
]  # fmt: skip


@pytest.mark.parametrize("stop", STOPS)
def test_a_stopped_gate_says_it_could_not_judge_and_is_never_exit_1(
    repo: LigerRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stop: Stop,
) -> None:
    if stop.step is not None:
        disrupt(monkeypatch, stop.step, error=stop.error, delay=stop.delay)
    repo.commit(pr_rows(slower(1.3)), "slower (#5)")
    result = gate(repo, tmp_path, capsys, *stop.extra)
    assert result.code == stop.code and stop.code in EXIT_CODES
    assert stop.said in result.err
    assert result.comment.startswith("### kiana gate **could not judge** this pull request")
    assert "not a verdict" in result.comment


@pytest.mark.heavy
def test_a_rerun_is_compared_with_the_rows_it_replaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cutile = "benchmark/data/all_benchmark_data_cutile.csv"
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    triton = [{**r, "kernel_provider": "liger_triton"} if r["kernel_provider"] == "liger" else r
              for r in rows("rms_norm", "0.5.0", "2025-01-15 00:00:00", liger=1.3)]  # fmt: skip
    repo.commit({CSV: csv_text(rows("rms_norm", "0.5.0", JAN)), cutile: csv_text(triton)}, "base")
    repo.git("checkout", "-q", "-b", "pr")
    repo.commit({CSV: csv_text(rows("rms_norm", "0.5.0", FEB, liger=1.3))}, "re-run (#5)")
    result = run_gate(repo.path, "main", "pr")
    liger = result.findings.filter(result.findings["provider"] == "liger").row(0, named=True)
    assert str(liger["from_session"]).startswith("2025-01-01")
    assert liger["verdict"] == "regression"
    assert result.accounting.replaced_series == 2 and result.accounting.dropped_rows == 8
    assert gate(repo, tmp_path, capsys).code == 1


@pytest.mark.heavy
@pytest.mark.skipif(not LIGER_ROOT.is_dir(), reason="Liger's real CSVs (../shared/liger) absent")
def test_the_real_liger_history_stays_well_within_the_limits(tmp_path: Path) -> None:
    repo = LigerRepo(tmp_path / "Liger-Kernel")
    files = {f"benchmark/data/{p.name}": p.read_text() for p in sorted(LIGER_ROOT.glob("*.csv"))}
    repo.commit(files, "the real CSVs (#1)")
    repo.git("checkout", "-q", "-b", "pr")
    text = files[CSV].replace(",2024-", ",2026-", 40)  # a re-run of some rows
    repo.commit({CSV: text}, "re-run (#2)")
    result = run_gate(repo.path, "main", "pr")
    assert result.history_rows * 10 < MAX_ROWS
    assert result.head_rows > 0 and result.exit_code in (0, 1, 3)


def test_help_documents_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    from kiana.cli import main

    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    out = capsys.readouterr().out
    for code_ in EXIT_CODES:
        assert f"\n  {code_}  " in out
