"""``kiana.stats.sweeps.findings`` aggregates whole kernels of a GPU at a time
(``FINDING_CHUNK`` steps, for memory): the findings are the same whatever the chunk."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana.stats.batches
import kiana.stats.sweeps
from kiana.generate import CorpusConfig, generate
from kiana.generate.config import DEFAULT_GPUS
from kiana.load import connect, load_documents
from kiana.shards.runs import shard_runs
from kiana.stats import JudgeOptions, judge


@pytest.fixture(scope="module")
def runs() -> pl.DataFrame:
    config = CorpusConfig(
        seed=11, kernels=("rms_norm", "swiglu", "layer_norm"), gpus=DEFAULT_GPUS[:2], sweep_size=3
    )
    con = connect(None)
    load_documents(con, list(generate(config).documents()))
    return shard_runs(con)


def test_findings_are_the_same_in_chunks_of_kernels(
    runs: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = judge(runs, JudgeOptions()).findings
    monkeypatch.setattr(kiana.stats.sweeps, "FINDING_CHUNK", 10)  # about a kernel each
    chunked = judge(runs, JudgeOptions()).findings
    assert whole.height > 20
    assert_frame_equal(chunked, whole)


def test_chunks_hold_whole_kernels_of_a_gpu(runs: pl.DataFrame) -> None:
    steps = judge(runs, JudgeOptions()).steps
    parts = list(kiana.stats.sweeps.kernel_chunks(steps, 10))
    owners = pl.concat(p.select("gpu", "kernel").unique() for p in parts)
    assert len(parts) > 2
    assert owners.height == steps.select("gpu", "kernel").n_unique()
    assert sum(p.height for p in parts) == steps.height


def test_the_judge_is_the_same_in_batches_of_kernels(
    runs: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kiana.stats.batches``: steps decided ``JUDGE_CHUNK`` at a time (whole kernels of
    a GPU) give the same steps, findings and quality as all of them together."""
    whole = judge(runs, JudgeOptions())
    monkeypatch.setattr(kiana.stats, "FINDING_CHUNK", 10)
    monkeypatch.setattr(kiana.stats.batches, "JUDGE_CHUNK", 10)
    assert len(kiana.stats.batches.kernel_batches(whole.steps, 10)) > 2
    batched = judge(runs, JudgeOptions())
    assert whole.findings.height > 20
    assert_frame_equal(batched.steps, whole.steps)
    assert_frame_equal(batched.findings, whole.findings)
    assert_frame_equal(batched.quality, whole.quality)
    assert batched.coverage == whole.coverage


def test_sitting_states_are_the_same_in_batches_of_kernels(
    runs: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sitting groups' factors of a judge with a calibration, computed
    ``JUDGE_CHUNK`` steps of whole kernels at a time: the same numbers, bit for bit, one
    row per group."""
    from kiana.stats import _stage, _state_factors, calibrate
    from kiana.stats.states import group_key

    steps = group_key(_stage(runs, JudgeOptions(), None).steps)
    cal = calibrate(runs).frame
    whole = _state_factors(steps, cal)
    monkeypatch.setattr(kiana.stats, "FINDING_CHUNK", 10)
    monkeypatch.setattr(kiana.stats.batches, "JUDGE_CHUNK", 10)
    assert len(kiana.stats.batches.kernel_batches(steps, 10)) > 2
    batched = _state_factors(steps, cal)
    assert whole.height > 20
    assert batched["_group"].is_unique().all()
    assert_frame_equal(
        batched.select(whole.columns).sort("_group"), whole.sort("_group"), check_exact=True
    )
