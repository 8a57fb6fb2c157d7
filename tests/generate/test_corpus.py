"""The deterministic corpus generator: determinism, shape, truth, layouts, CLI."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiana.load
from kiana.cli import main
from kiana.errors import UsageError
from kiana.generate import (
    TRUTH_COLUMNS,
    Corpus,
    CorpusConfig,
    generate,
    read_truth,
    write_corpus,
)
from tests.generate.test_sessions import noiseless, runs_of, with_sessions

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "data" / "seeds").glob("*.json"))

#: Small and fast: two kernels (one fast, one slow), two GPUs, four versions.
TINY = CorpusConfig(
    seed=7,
    kernels=("rms_norm", "fused_linear_cpo_loss"),
    gpus=("nvidia-h100-80gb-hbm3", "NVIDIA H100 PCIe"),
    versions=("0.4.0", "0.5.0", "0.5.5", "0.6.0"),
    sweep_size=3,
    replicate_rate=0.2,
    rerun_rate=0.1,
    conflict_rate=0.02,
    outlier_rate=0.01,
)


def _keys(value: Any) -> Any:
    """The key structure of a JSON value (key order included), without the values."""
    if isinstance(value, dict):
        return [(k, _keys(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_keys(v) for v in value[:1]]
    return type(value).__name__


def _medians(corpus: Corpus) -> pl.DataFrame:
    """Every latency run, with the session the contract's rule finds for it."""
    return with_sessions(runs_of(corpus))


def test_same_config_gives_identical_documents_and_truth() -> None:
    first, second = generate(TINY), generate(TINY)
    dump = [json.dumps(d, ensure_ascii=False) for d in first.documents()]
    assert dump == [json.dumps(d, ensure_ascii=False) for d in second.documents()]
    assert dump == [json.dumps(d, ensure_ascii=False) for d in first.documents()]  # re-iterable
    assert first.truth.equals(second.truth)
    assert len(dump) == first.run_count


def test_another_seed_gives_other_numbers() -> None:
    a = next(generate(TINY).documents())
    b = next(generate(replace(TINY, seed=8)).documents())
    assert a["run"]["spec"]["timing"] != b["run"]["spec"]["timing"]


def test_documents_have_the_seeds_key_structure() -> None:
    assert SEEDS, "data/seeds/ holds the two real documents"
    shapes = {json.dumps(_keys(json.loads(p.read_text(encoding="utf-8")))) for p in SEEDS}
    assert len(shapes) == 1
    for doc in generate(TINY).documents():
        assert json.dumps(_keys(doc)) in shapes


def test_truth_rows_name_real_series() -> None:
    corpus = generate(TINY)
    truth = corpus.truth
    assert truth.columns == list(TRUTH_COLUMNS)
    assert set(truth["effect"]) == {"regression", "improvement", "drift", "outlier", "conflict"}
    runs = _medians(corpus)
    for row in truth.iter_rows(named=True):
        match = runs.filter(
            (pl.col("kernel") == row["kernel"])
            & (pl.col("pass") == row["pass"])
            & (pl.col("provider") == row["provider"])
            & (pl.col("gpu") == row["gpu"])
            & pl.col("session").is_in([row["from_session"], row["to_session"]])
        )
        if row["workload"] is not None:
            match = match.filter(pl.col("workload") == row["workload"])
        same = row["effect"] in ("outlier", "conflict")
        assert match["session"].n_unique() == (1 if same else 2), row
        versions = match.group_by("session").agg(pl.col("version").first())
        labels = dict(versions.iter_rows())
        assert labels[row["from_session"]] == row["from_version"], row
        assert labels[row["to_session"]] == row["to_version"], row


def _session_medians(runs: pl.DataFrame, row: dict[str, Any], session: str) -> pl.DataFrame:
    return (
        runs.filter(
            pl.col("kernel") == row["kernel"],
            pl.col("pass") == row["pass"],
            pl.col("gpu") == row["gpu"],
            pl.col("session") == session,
        )
        .group_by("provider", "workload")
        .agg(pl.col("median").median())
    )


def _ratios(runs: pl.DataFrame, row: dict[str, Any]) -> pl.DataFrame:
    """Per provider and workload: median in to_session / median in from_session."""
    before = _session_medians(runs, row, row["from_session"])
    after = _session_medians(runs, row, row["to_session"])
    joined = before.join(after, on=["provider", "workload"], suffix="_to")
    return joined.select(
        "provider", "workload", (pl.col("median_to") / pl.col("median")).alias("r")
    )


def test_injected_effects_move_liger_medians_by_the_stated_factor() -> None:
    corpus = generate(noiseless(TINY))
    runs = _medians(corpus)
    effects = corpus.truth.filter(pl.col("effect").is_in(["regression", "improvement"]))
    assert effects.height > 0
    for row in effects.iter_rows(named=True):
        ratios = _ratios(runs, row)
        moved = ratios.filter(pl.col("provider") == "liger")
        if row["workload"] is not None:
            moved = moved.filter(pl.col("workload") == row["workload"])
        assert moved.height == (1 if row["workload"] else TINY.sweep_size), row
        for r in moved["r"]:
            assert r == pytest.approx(1 + row["change"], rel=0.01), row
        # everything else of the session pair stayed put
        for r in ratios.join(moved, on=["provider", "workload"], how="anti")["r"]:
            assert r == pytest.approx(1.0, rel=0.01), row


def test_drift_moves_every_provider_on_the_gpu() -> None:
    corpus = generate(noiseless(TINY, regression_rate=0.0, improvement_rate=0.0))
    drift = corpus.truth.filter(pl.col("effect") == "drift")
    assert drift.height > 0
    runs = _medians(corpus)
    row = drift.filter(pl.col("kernel") == "rms_norm").row(0, named=True)
    ratios = _ratios(runs, row)
    assert set(ratios["provider"]) == {"liger", "huggingface", "torch_compile"}
    assert all(math.isclose(r, 1 + row["change"], rel_tol=0.01) for r in ratios["r"])


def test_slow_kernels_often_report_zero_spread() -> None:
    slow = fast = 0
    for spec in generate(TINY).specs():
        flat = spec.p20 == spec.median == spec.p80
        if spec.median >= 50e6:
            slow += flat
        else:
            fast += flat
    assert slow > 0
    assert fast == 0


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_quantiles_are_ordered_for_any_seed(seed: int) -> None:
    config = replace(TINY, seed=seed, versions=("0.5.0", "0.6.0"), outlier_rate=0.05)
    for spec in generate(config).specs():
        assert 0 < spec.p20 <= spec.median <= spec.p80


@pytest.mark.parametrize("layout", ["files", "jsonl", "jsonl.gz"])
def test_write_corpus_layouts_round_trip(tmp_path: Path, layout: str) -> None:
    corpus = generate(replace(TINY, kernels=("rms_norm",), versions=("0.5.0", "0.6.0")))
    written = write_corpus(corpus, tmp_path, layout)  # type: ignore[arg-type]
    if layout == "files":
        docs = [json.loads(p.read_text(encoding="utf-8")) for p in tmp_path.rglob("*.json")]
    else:
        path = tmp_path / f"documents.{layout}"
        raw = gzip.decompress(path.read_bytes()) if layout.endswith(".gz") else path.read_bytes()
        docs = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    assert written.documents == len(docs) == corpus.run_count
    ids = {d["run"]["spec"]["sourceNative"]["externalId"] for d in docs}
    assert ids == {d["run"]["spec"]["sourceNative"]["externalId"] for d in corpus.documents()}
    assert read_truth(tmp_path / "truth.csv").equals(corpus.truth)


def test_jsonl_gz_bytes_are_reproducible(tmp_path: Path) -> None:
    corpus = generate(replace(TINY, kernels=("rms_norm",), versions=("0.5.0", "0.6.0")))
    write_corpus(corpus, tmp_path / "a", "jsonl.gz")
    write_corpus(corpus, tmp_path / "b", "jsonl.gz")
    a, b = (tmp_path / d / "documents.jsonl.gz" for d in "ab")
    assert a.read_bytes() == b.read_bytes()


def test_sized_config_lands_near_the_target() -> None:
    for target in (2_000, 10_000):
        corpus = generate(CorpusConfig.sized(target, seed=1))
        assert 0.8 * target <= corpus.run_count <= 1.2 * target


def test_head_label_and_replicates() -> None:
    corpus = generate(replace(TINY, head_label="main", replicate_rate=0.5, conflict_rate=0.0))
    runs = _medians(corpus)
    assert runs.sort("observed_at")["version"].to_list()[-1] == "main"
    counts = runs.group_by("kernel", "pass", "provider", "gpu", "workload", "session").len()
    assert counts["len"].max() == TINY.replicates
    assert counts["len"].min() == 1


def test_bad_config_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown kernels"):
        CorpusConfig(kernels=("no_such_kernel",))
    with pytest.raises(UsageError, match="unknown GPU"):
        CorpusConfig(gpus=("nvidia-b300",))


def test_bundled_corpus_is_what_the_generator_makes(tmp_path: Path) -> None:
    bundled = ROOT / "data" / "generated"
    write_corpus(generate(CorpusConfig.bundled()), tmp_path, "jsonl")
    for name in ("documents.jsonl", "truth.csv"):
        assert (tmp_path / name).read_bytes() == (bundled / name).read_bytes(), name
    truth = read_truth(bundled / "truth.csv")
    assert set(truth["effect"]) >= {"regression", "improvement", "drift"}
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"} <= set(truth["gpu"])


def test_cli_writes_corpus_and_truth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "corpus"
    command = [sys.executable, "-m", "kiana", "generate", str(out), "--seed", "3"]
    command += ["--kernels", "layer_norm", "--versions", "3", "--sweep-size", "2"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "documents" in result.stdout
    lines = (out / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    assert {
        json.loads(line)["run"]["spec"]["sourceNative"]["benchmark"].split("/")[0] for line in lines
    } == {"layer_norm"}
    assert read_truth(out / "truth.csv").columns == list(TRUTH_COLUMNS)
    assert main(command[3:]) == 2  # a second run refuses the non-empty folder
    assert "not empty" in capsys.readouterr().err


def test_generated_corpus_loads_without_rejects(tmp_path: Path) -> None:
    corpus = generate(replace(TINY, memory=True, versions=("0.5.0", "0.6.0")))
    write_corpus(corpus, tmp_path, "jsonl.gz")
    con = kiana.load.connect(None)
    summary = kiana.load.load(con, [str(tmp_path)])
    assert summary.rejected == 0, summary.first_rejects
    assert summary.loaded == corpus.run_count
