"""Unstable series: a kernel that alternates between two levels is data quality."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from kiana.stats import judge
from kiana.stats.unstable import detect, session_levels
from tests.stats_fixtures import frame, run

LOW, HIGH = 8.7, 52.0
BIMODAL = [LOW] * 6 + [HIGH] + [LOW] * 3 + [HIGH] * 3 + [LOW] * 3
LIGER_CI = Path(__file__).resolve().parents[2].parent / "shared" / "liger-ci" / "benchmarks"


def sweep(
    levels: list[float], workloads: int = 3, torch: list[float] | None = None
) -> list[dict[str, Any]]:
    """``liger`` at ``levels`` (times the workload's size) and ``torch`` at ``torch``
    (default: steady at 11), one session every three days, each run jittered by at most
    0.2%."""
    rows = []
    for d, level in enumerate(levels):
        base = 11.0 if torch is None else torch[d]
        for w in range(workloads):
            jitter = 1 + 0.002 * ((d * 7 + w) % 3 - 1)
            common = {"workload": f"w{w}", "day": 3 * d}
            rows.append(run("0.8.0", level * (w + 1) * jitter, minute=w, **common))
            rows.append(run("0.8.0", base * (w + 1) * jitter, provider="torch", minute=9 + w, **common))  # fmt: skip
    return rows


def with_origins(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The runs, each session recorded at commit ``c<day>``."""
    runs = frame(rows)
    day = (pl.col("observed_at") - pl.col("observed_at").min()).dt.total_days()
    return runs.with_columns(
        (pl.lit("c") + day.cast(pl.String) + pl.lit(":benchmark/data/all.csv")).alias("origin")
    )


class Commits:
    """Code changes: a commit touches the kernel on each day of ``touched`` (a set: every
    kernel; a mapping: the days of each kernel named)."""

    def __init__(self, touched: set[int] | dict[str, set[int]] | None = None) -> None:
        self.touched = touched if touched is not None else {}

    def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        return pairs.with_columns(
            pl.lit(False).alias("baseline_changed"), pl.lit(None, pl.String).alias("baseline_note")
        )

    def kernel_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        def day(column: str) -> pl.Expr:
            return pl.col(column).str.extract(r"^c(\d+):").cast(pl.Int64)

        per = self.touched if isinstance(self.touched, dict) else {None: self.touched}
        hit = pl.lit(False)
        for kernel, days in per.items():
            on = pl.lit(True) if kernel is None else pl.col("kernel") == kernel
            for t in days:
                hit = hit | (on & (day("from_origin") < t) & (day("to_origin") >= t))
        return pairs.with_columns(hit.alias("kernel_changed"))


def unstable_rows(result: Any) -> pl.DataFrame:
    return unstable_rows_of(result.quality)


def test_a_bimodal_series_is_unstable_not_a_regression() -> None:
    result = judge(frame(sweep(BIMODAL)))
    rows = unstable_rows(result)
    assert rows.height == 1
    row = rows.row(0, named=True)
    assert (row["provider"], row["switches"]) == ("liger", 4)
    assert row["levels"] == "17 ns (12 sessions) and 104 ns (4 sessions)"
    assert row["ratio"] == pytest.approx(HIGH / LOW, rel=0.01)
    liger = result.findings.filter(pl.col("provider") == "liger")
    assert set(liger["verdict"]) == {"inconclusive"}
    assert set(liger["basis"]) == {"unstable"}
    assert liger["evidence"].str.starts_with("unstable series: alternates between 17 ns").all()
    steps = result.steps.filter(pl.col("provider") == "liger")
    assert steps["unstable"].all() and set(steps["verdict"]) == {"inconclusive"}
    assert result.coverage.not_compared == {"in an unstable sweep": 3}


def test_a_series_that_steps_once_and_stays_is_a_regression() -> None:
    result = judge(frame(sweep([LOW] * 8 + [HIGH] * 8)))
    assert unstable_rows(result).height == 0
    assert result.findings.filter(pl.col("verdict") == "regression")["provider"].to_list() == [
        "liger"
    ]


def test_a_regression_then_its_revert_is_two_changes_without_commits_known() -> None:
    result = judge(frame(sweep([LOW] * 6 + [HIGH] * 4 + [LOW] * 6)))
    assert unstable_rows(result).height == 0
    flagged = result.findings.filter(pl.col("verdict").is_in(["regression", "improvement"]))
    assert sorted(flagged["verdict"]) == ["improvement", "regression"]


def test_a_regression_its_revert_and_its_reland_are_three_changes_without_commits_known() -> None:
    # low high low high: each level visited twice, three switches (the spread corpora's
    # five misses of 767 >= 5% regressions, bench/README.md).
    result = judge(frame(sweep([LOW] * 5 + [HIGH] * 4 + [LOW] * 4 + [HIGH] * 4)))
    assert unstable_rows(result).height == 0
    flagged = result.findings.filter(pl.col("verdict").is_in(["regression", "improvement"]))
    assert sorted(flagged["verdict"]) == ["improvement", "regression", "regression"]


def test_a_series_that_climbs_twice_across_a_machine_move_is_two_regressions() -> None:
    """+18%, then the machine 12% faster for every provider, then +22%: the raw levels
    read low high low high (the grid's ``3 workloads``: layer_norm forward, H100), the
    levels less torch's climb twice."""
    drop = 0.88
    liger = [100.0] * 4 + [118.0] * 3 + [118.0 * drop] * 3 + [118.0 * drop * 1.22] * 3
    torch = [11.0] * 7 + [11.0 * drop] * 6
    result = judge(frame(sweep(liger, torch=torch)))
    assert unstable_rows(result).height == 0
    found = result.findings.filter(pl.col("provider") == "liger", pl.col("verdict") == "regression")
    assert found.height == 2


def test_a_steady_kernel_beside_an_unstable_baseline_is_not_unstable() -> None:
    """Less the baselines' levels a steady liger would alternate: both readings must."""
    result = judge(frame(sweep([LOW] * len(BIMODAL), torch=[v * 11.0 / LOW for v in BIMODAL])))
    assert unstable_rows(result)["provider"].to_list() == ["torch"]


def test_with_commits_a_switch_at_a_kernel_commit_is_a_change() -> None:
    levels = [LOW] * 4 + [HIGH] * 4 + [LOW] * 4 + [HIGH] * 4
    runs = with_origins(sweep(levels))
    # Commits on days 12, 24 and 36 (the sessions of each switch) touch the kernel.
    assert unstable_rows(judge(runs, code_changes=Commits({12, 24, 36}))).height == 0
    # None does: the same series alternates at the same code.
    assert unstable_rows(judge(runs, code_changes=Commits(set()))).height == 1


def test_with_commits_two_switches_at_the_same_code_are_enough() -> None:
    runs = with_origins(sweep([LOW] * 6 + [HIGH] * 3 + [LOW] * 6))
    assert unstable_rows(judge(runs)).height == 0  # without commits: a revert, maybe
    assert unstable_rows(judge(runs, code_changes=Commits(set()))).height == 1
    assert unstable_rows(judge(runs, code_changes=Commits({18, 27}))).height == 0


def test_levels_close_within_their_noise_are_not_unstable() -> None:
    noisy = [100.0, 104.0, 99.0, 103.0, 100.5, 104.5, 99.5, 103.5, 100.0, 104.0]
    assert unstable_rows(judge(frame(sweep(noisy)))).height == 0


def test_a_sweep_level_is_the_median_of_its_workloads() -> None:
    rows = [run("0.8.0", m, workload=w, day=d, minute=i)
            for d, ms in enumerate([(10.0, 20.0, 30.0), (10.0, 40.0, 30.0)])
            for i, (w, m) in enumerate(zip(("a", "b", "c"), ms, strict=True))]  # fmt: skip
    points = frame(rows)
    from kiana.stats import _stage
    from kiana.stats.options import JudgeOptions

    stage = _stage(points, JudgeOptions(), None)
    levels = session_levels(stage.points)
    assert levels["k"].to_list() == [3, 3]
    assert levels["z"].to_list() == pytest.approx([0.0, 0.0])  # one workload of three moved
    assert detect(stage.points, stage.steps, JudgeOptions()).height == 0


def ci_softmax(tmp: Path) -> list[Path]:
    """The ``softmax`` forward rows on the H100 of every CI benchmark file, one file per
    measured commit."""
    paths = []
    for source in sorted(LIGER_CI.glob("*/benchmark.csv")):
        rows = pl.read_csv(source, infer_schema_length=0).filter(
            pl.col("kernel_name") == "softmax",
            pl.col("kernel_operation_mode") == "forward",
            pl.col("gpu_name") == "NVIDIA H100 80GB HBM3",
        )
        if rows.height:
            target = tmp / source.parent.name / "benchmark.csv"
            target.parent.mkdir()
            rows.write_csv(target)
            paths.append(target)
    return paths


@pytest.mark.skipif(
    not LIGER_CI.is_dir(), reason="../shared/liger-ci (Liger's CI history) is absent"
)
def test_liger_ci_softmax_forward_h100_is_unstable(tmp_path: Path) -> None:
    import kiana
    from kiana.importers.liger import import_csvs
    from kiana.load.judged import judged_runs

    con = kiana.connect()
    kiana.load_documents(con, import_csvs(ci_softmax(tmp_path)).documents)
    result = judge(judged_runs(con))
    on_h100 = (pl.col("gpu") == "NVIDIA H100 80GB HBM3") & (pl.col("pass") == "forward")
    rows = unstable_rows(result).filter(on_h100, pl.col("provider") == "liger")
    assert rows.height == 1
    row = rows.row(0, named=True)
    assert row["switches"] >= 4 and row["ratio"] > 5
    assert row["levels"].startswith("8.7 µs")
    liger = result.findings.filter(on_h100, pl.col("provider") == "liger")
    assert liger.height > 0 and set(liger["verdict"]) == {"inconclusive"}
    # torch in the same sittings stays at one level
    assert unstable_rows(result).filter(on_h100, pl.col("provider") == "torch").height == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_code_changes_say_whether_a_commit_touched_the_kernel(tmp_path: Path) -> None:
    from kiana.culprits.changes import GitCodeChanges
    from tests.culprits.test_culprits import CSV, OPS, LigerRepo

    repo = LigerRepo(tmp_path / "Liger-Kernel")
    a = repo.commit({f"{OPS}/softmax.py": "# kernel\n", CSV: "a\n"}, "softmax (#1)")
    b = repo.commit({CSV: "b\n"}, "rows")
    c = repo.commit({f"{OPS}/softmax.py": "# revert\n"}, "revert softmax (#2)")
    d = repo.commit({CSV: "d\n"}, "rows")
    pairs = pl.DataFrame(
        [("softmax", f"{a}:{CSV}", f"{b}:{CSV}"), ("softmax", f"{b}:{CSV}", f"{d}:{CSV}"),
         ("softmax", None, f"{d}:{CSV}"), ("softmax", f"{c}:{CSV}", f"{c}:{CSV}")],
        schema=["kernel", "from_origin", "to_origin"], orient="row",
    )  # fmt: skip
    answer = GitCodeChanges(repo.path).kernel_changed(pairs)["kernel_changed"].to_list()
    assert answer == [False, True, None, False]


@pytest.mark.skipif(
    not LIGER_CI.is_dir(), reason="../shared/liger-ci (Liger's CI history) is absent"
)
@pytest.mark.heavy
def test_the_stored_judgement_keeps_an_unstable_series_through_an_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unstable series is a verdict on its whole history: its GPU is judged again whole
    after a load (a window of its newest sessions would not see it alternate)."""
    import kiana.load
    from kiana.importers.liger import import_csvs
    from kiana.shards import judge_all
    from kiana.stats import calfit
    from tests.shards.test_incremental import OPTIONS, load_and_check

    docs = sorted(
        import_csvs(ci_softmax(tmp_path)).documents, key=lambda d: d["run"]["spec"]["observedAt"]
    )
    monkeypatch.setattr(
        calfit, "FULL_STEPS", 100
    )  # the update could splice (the paths of a large database)
    cut = int(len(docs) * 0.97)
    con = kiana.load.connect(tmp_path / "kiana.duckdb")
    try:
        load_and_check(
            con, [docs[:cut], docs[cut:]], ["judged in full", "stored judgement updated"]
        )
        quality = judge_all(con, OPTIONS).judgement().quality
        assert quality.filter(pl.col("kind") == "unstable")["provider"].to_list() == ["liger"]
    finally:
        con.close()


@pytest.mark.heavy
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_gate_could_not_judge_a_head_row_of_an_unstable_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """main records rms_norm at 1x, 6x, 1x, 6x, 1x of its speed at the same code (commits
    in between touch only the README); the pull request re-records it at 6x."""
    from kiana.cli import main
    from tests.culprits.test_culprits import CSV, OPS, LigerRepo, csv_text, rows

    repo = LigerRepo(tmp_path / "Liger-Kernel")
    sessions: list[list[dict[str, str]]] = []
    files = {f"{OPS}/rms_norm.py": "# kernel\n", "README.md": "Liger\n"}
    for month, scale in enumerate([1.0, 6.0, 1.0, 6.0, 1.0], start=1):
        sessions.append(rows("rms_norm", "0.5.0", f"2025-{month:02d}-01 00:00:00", liger=scale))
        repo.commit({**files, CSV: csv_text(*sessions)}, f"rows {month}")
        files = {"README.md": f"Liger {month}\n"}
    repo.git("checkout", "-q", "-b", "pr")
    head = [*sessions, rows("rms_norm", "0.5.0", "2025-06-01 00:00:00", liger=6.0)]
    repo.commit({CSV: csv_text(*head)}, "re-record rms_norm (#9)")
    code = main(["gate", str(repo.path), "--base", "main", "--head", "pr"])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "unstable, could not judge" in out and "FAILED" not in out


def test_the_report_and_the_cli_list_the_levels_and_switches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kiana.commands.regressions import _print_unstable
    from kiana.report.appendix import _unstable_table

    quality = judge(frame(sweep(BIMODAL))).quality
    html = str(_unstable_table(unstable_rows_of(quality), 10))
    assert "17 ns (12 sessions) and 104 ns (4 sessions)" in html and ">4<" in html
    _print_unstable(quality, None, 10)
    out = capsys.readouterr().out
    assert "1 unstable series" in out
    assert "layer_norm/forward liger NVIDIA H100 80GB HBM3 latency: 17 ns (12 sessions)" in out
    assert "4 switches" in out


def unstable_rows_of(quality: pl.DataFrame) -> pl.DataFrame:
    return quality.filter(pl.col("kind") == "unstable")
