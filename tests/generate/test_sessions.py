"""The generator's sessions and injected cases mean what kiana's session contract says.

The sessions here are found from the runs alone, by the contract's rule (runs of one
kernel, pass, GPU, metric and label sorted by time; a gap of more than an hour starts a
new session; the id is the first run's time), never read from the planner.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from kiana.cli import main
from kiana.generate import Corpus, CorpusConfig, generate, read_truth

ROOT = Path(__file__).resolve().parents[2]
SESSION_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
GROUP = ["kernel", "pass", "gpu"]

#: Every case, often: re-benchmarks, replicates and conflicts on a small corpus.
BUSY = CorpusConfig(
    seed=11,
    kernels=("rms_norm", "cross_entropy", "fused_linear_cpo_loss"),
    versions=("0.4.0", "0.5.0", "0.5.5", "0.6.0", "0.6.2"),
    sweep_size=4,
    replicate_rate=0.3,
    rerun_rate=0.2,
    conflict_rate=0.05,
    regression_rate=0.1,
    improvement_rate=0.1,
)


def noiseless(config: CorpusConfig, **changes: Any) -> CorpusConfig:
    """``config`` (with ``changes``) without run-to-run noise or outliers: medians
    follow the truth up to 32 ns ticks."""
    return replace(config, session_noise=0.0, machine_noise=0.0, outlier_rate=0.0, **changes)


def runs_of(corpus: Corpus) -> pl.DataFrame:
    """The latency runs of a corpus: keys, label, time, median (whole ns)."""
    rows = [
        (s.kernel, s.pass_, s.provider, s.gpu.label, s.workload, s.version,
         s.observed_at, round(s.median))
        for s in corpus.specs()
        if s.metric == "latency"
    ]  # fmt: skip
    columns = ["kernel", "pass", "provider", "gpu", "workload", "version", "observed_at"]
    return pl.DataFrame(rows, schema=[*columns, "median"], orient="row")


def with_sessions(runs: pl.DataFrame, gap: timedelta = timedelta(hours=1)) -> pl.DataFrame:
    """``runs`` with ``session``: the contract's rule, applied to the runs alone."""
    scope = [*GROUP, "version"]
    ordered = runs.sort(*scope, "observed_at")
    new = (pl.col("observed_at").diff().over(scope) > gap).fill_null(True)
    numbered = ordered.with_columns(new.cum_sum().over(scope).alias("_n"))
    first = pl.col("observed_at").min().over(*scope, "_n")
    return numbered.with_columns(first.dt.strftime(SESSION_FORMAT).alias("session")).drop("_n")


def _spans(runs: pl.DataFrame) -> pl.DataFrame:
    return runs.group_by(*GROUP, "version", "session").agg(
        pl.col("observed_at").min().alias("start"), pl.col("observed_at").max().alias("end")
    )


@pytest.fixture(scope="module")
def busy() -> Corpus:
    return generate(BUSY)


@pytest.fixture(scope="module")
def runs(busy: Corpus) -> pl.DataFrame:
    return with_sessions(runs_of(busy))


def test_sessions_found_from_the_runs_are_the_planned_ones(
    busy: Corpus, runs: pl.DataFrame
) -> None:
    found = _spans(runs).select(*GROUP, pl.col("version").alias("liger_version"), "session")
    planned = busy.sessions.select(*GROUP, "liger_version", "session")
    assert found.sort(pl.all()).equals(planned.sort(pl.all()))
    # a two-hour gap (or anything from 1 to 24 hours) finds the same sessions
    wider = _spans(with_sessions(runs_of(busy), timedelta(hours=20)))
    assert wider.height == found.height


def test_replicates_are_minutes_apart_and_sessions_days_apart(runs: pl.DataFrame) -> None:
    spans = _spans(runs)
    longest = spans.select((pl.col("end") - pl.col("start")).max()).item()
    assert longest <= timedelta(minutes=45)
    rounds = runs.group_by(*GROUP, "session").agg(pl.col("observed_at").n_unique().alias("n"))
    assert rounds.select(pl.col("n").max()).item() >= BUSY.replicates  # some were re-run
    gaps = spans.sort(*GROUP, "start").select(
        (pl.col("start") - pl.col("end").shift(1).over(GROUP)).alias("gap")
    )
    assert gaps.select(pl.col("gap").min()).item() >= timedelta(days=1)


def test_truth_names_consecutive_sessions(busy: Corpus) -> None:
    sessions = busy.sessions
    for row in busy.truth.iter_rows(named=True):
        group = sessions.filter(*(pl.col(k) == row[k] for k in GROUP)).sort("position")
        ids = group["session"].to_list()
        labels = dict(zip(ids, group["liger_version"], strict=True))
        assert labels[row["from_session"]] == row["from_version"], row
        assert labels[row["to_session"]] == row["to_version"], row
        if row["effect"] in ("conflict", "outlier"):
            assert row["from_session"] == row["to_session"], row
        else:
            assert ids.index(row["to_session"]) == ids.index(row["from_session"]) + 1, row


def _liger(runs: pl.DataFrame, row: dict[str, object], session: object) -> pl.DataFrame:
    return runs.filter(
        *(pl.col(k) == row[k] for k in GROUP),
        pl.col("provider") == "liger",
        pl.col("session") == session,
    )


def test_same_label_sessions_with_and_without_a_change() -> None:
    corpus = generate(noiseless(BUSY))
    runs = with_sessions(runs_of(corpus))
    truth = corpus.truth
    same = truth.filter(
        pl.col("from_version") == pl.col("to_version"),
        pl.col("effect").is_in(["regression", "improvement"]),
    )
    assert same.height > 0
    for row in same.iter_rows(named=True):
        before = (
            _liger(runs, row, row["from_session"]).group_by("workload").agg(pl.median("median"))
        )
        after = _liger(runs, row, row["to_session"]).group_by("workload").agg(pl.median("median"))
        ratio = before.join(after, on="workload", suffix="_to").select(
            pl.col("median_to") / pl.col("median")
        )
        assert ratio.height == BUSY.sweep_size
        assert ratio.to_series().to_list() == pytest.approx(
            [1 + row["change"]] * ratio.height, rel=0.01
        )
    reruns = corpus.sessions.filter(pl.col("rerun") == 1)
    unchanged = reruns.join(
        truth, left_on=[*GROUP, "session"], right_on=[*GROUP, "to_session"], how="anti"
    )
    assert unchanged.height > 0, "some same-label re-benchmarks change nothing"


def test_conflicts_are_another_implementation_minutes_apart() -> None:
    corpus = generate(noiseless(BUSY))
    runs = with_sessions(runs_of(corpus))
    conflicts = corpus.truth.filter(pl.col("effect") == "conflict")
    assert conflicts.height > 0
    for row in conflicts.iter_rows(named=True):
        assert row["provider"] == "liger" and row["workload"] is None
        factor = max(1 + row["change"], 1 / (1 + row["change"]))
        assert 2 <= factor <= 6, row
        liger = _liger(runs, row, row["to_session"])
        per_workload = liger.group_by("workload").agg(
            (pl.col("median").max() / pl.col("median").min()).alias("ratio"),
            pl.col("median").n_unique().alias("values"),
        )
        assert per_workload.height == BUSY.sweep_size
        assert per_workload["values"].max() == 2
        assert per_workload["ratio"].to_list() == pytest.approx(
            [factor] * BUSY.sweep_size, rel=0.01
        )


def _cases(truth: pl.DataFrame) -> dict[str, int]:
    sweep = pl.col("workload").is_null()
    steps = pl.col("from_version") != pl.col("to_version")
    reg, imp = pl.col("effect") == "regression", pl.col("effect") == "improvement"
    change = pl.col("change")
    cases = {
        "sweep-wide 3% regression": sweep & steps & reg & ((change - 0.03).abs() < 1e-9),
        "sweep-wide 4-5% regression": sweep & steps & reg & change.is_between(0.04, 0.05),
        "sweep-wide >=5% regression": sweep & steps & reg & (change > 0.05),
        "one-workload regression": ~sweep & reg & change.is_between(0.2, 0.4),
        "improvement": imp,
        "same-label change": ~steps & (reg | imp),
        "conflict": pl.col("effect") == "conflict",
        "drift": pl.col("effect") == "drift",
        "outlier": pl.col("effect") == "outlier",
    }
    return {name: truth.filter(expr).height for name, expr in cases.items()}


@pytest.mark.parametrize("config", [BUSY, CorpusConfig.bundled()], ids=["busy", "bundled"])
def test_every_case_is_planted(config: CorpusConfig) -> None:
    corpus = generate(config)
    missing = [name for name, count in _cases(corpus.truth).items() if count == 0]
    assert missing == []
    reruns = corpus.sessions.filter(pl.col("rerun") == 1)
    changed = corpus.truth.filter(pl.col("from_version") == pl.col("to_version"))
    assert reruns.height > changed.filter(pl.col("effect") != "outlier")["to_session"].n_unique()


def test_bundled_truth_file_holds_every_case() -> None:
    truth = read_truth(ROOT / "data" / "generated" / "truth.csv")
    assert truth.equals(generate(CorpusConfig.bundled()).truth)
    assert min(_cases(truth).values()) > 0
    documents = (ROOT / "data" / "generated" / "documents.jsonl").read_bytes()
    assert documents.count(b"\n") < 3000


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--versions", "0"], "cannot pick 0 Liger versions"),
        (["--sweep-size", "0"], "sweep_size"),
        (["--runs", "0"], "cannot size"),
        (["--runs", "10000000000"], "cannot size"),
        (["--versions", "99999999"], "cannot pick"),
        (["--gpus", "nvidia-b300"], "unknown GPU"),
        (["--kernels", "rms_norm", "rms_norm"], "kernels must be distinct"),
        (["--rerun-rate", "2"], "rerun_rate"),
        (["--min-noise-multiple", "nan"], "finite"),
    ],
)
def test_user_errors_are_kiana_errors_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(["generate", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "hint:" in err.lower(), err


def test_versions_zero_through_the_command_line_has_no_traceback(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "kiana", "generate", str(tmp_path / "o"), "--versions", "0"]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "hint" in result.stderr.lower()


def test_unwritable_output_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["generate", str(tmp_path / "file" / "sub"), "--versions", "2"]) == 2
    assert "cannot write" in capsys.readouterr().err


def _imports(path: Path) -> set[str]:
    """Modules of kiana.generate that ``path`` imports, at any depth of its code."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n.rsplit(".", 1)[-1] for n in names if n.startswith("kiana.generate.")}


def test_generate_package_has_no_import_circles_and_small_files() -> None:
    package = ROOT / "kiana" / "generate"
    graph = {p.stem: _imports(p) for p in package.glob("*.py") if p.stem != "__init__"}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, set()):
            if nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt})):
                return True
        return False

    circles = [m for m in graph if reaches(m, m, {m})]
    assert circles == []
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in package.glob("*.py")}
    assert max(sizes.values()) <= 400, sizes
