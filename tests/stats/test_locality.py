"""Everything is per GPU: judging one GPU's runs gives exactly its part of judging all.

Issue 25 judges shard by shard, one GPU per shard, so no calibration level, floor or
fallback may pool across GPUs."""

from __future__ import annotations

from functools import cache

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from kiana.load import connect, load
from kiana.load.judged import judged_runs
from kiana.stats import Judgement, calibrate, judge
from tests.conftest import ROOT

pytestmark = pytest.mark.heavy  # every test here is over the quick loop's budget


@cache
def bundled() -> tuple[pl.DataFrame, Judgement]:
    con = connect(None)
    load(con, [ROOT / "data" / "generated"])
    runs = judged_runs(con)
    return runs, judge(runs)


def same(left: pl.DataFrame, right: pl.DataFrame) -> None:
    keys = [c for c, t in left.schema.items() if t == pl.String or t == pl.Datetime("us")]
    assert_frame_equal(left.sort(keys, nulls_last=True), right.sort(keys, nulls_last=True),
                       check_exact=False, rel_tol=1e-9, abs_tol=1e-12)  # fmt: skip


def check(gpu: str) -> None:
    runs, whole = bundled()
    alone = judge(runs.filter(pl.col("gpu") == gpu))
    part = pl.col("gpu") == gpu
    for name in ("steps", "findings", "quality", "changepoints", "tradeoffs"):
        same(getattr(whole, name).filter(part), getattr(alone, name))
    assert whole.calibration is not None and alone.calibration is not None
    same(whole.calibration.for_gpus([gpu]).frame, alone.calibration.frame)


def gpus() -> list[str]:
    return sorted(bundled()[0]["gpu"].unique().to_list())


def test_two_gpus_are_judged_alone_as_together() -> None:
    for gpu in gpus()[:2]:
        check(gpu)


def test_every_gpu_is_judged_alone_as_together() -> None:
    for gpu in gpus()[2:]:
        check(gpu)


def test_the_calibration_of_one_gpu_is_its_own() -> None:
    runs, _ = bundled()
    gpu = gpus()[0]
    assert calibrate(runs).for_gpus([gpu]).frame["gpu"].unique().to_list() == [gpu]
