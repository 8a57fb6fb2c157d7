"""The steps of a sharded judgement reach ``kiana regressions --json`` one shard at a
time: ``write_json`` of an iterable of frames writes what it writes for their concat."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana.shards.runs
import kiana.shards.stored
from kiana.cli import main
from kiana.generate import CorpusConfig, generate
from kiana.generate.config import DEFAULT_GPUS
from kiana.jsonstream import write_json
from kiana.load import connect, load_documents
from kiana.shards import judge_all
from kiana.shards.stored import StoredJudged
from kiana.stats import JudgeOptions
from tests.conftest import ROOT


def test_frames_one_after_another_are_one_array() -> None:
    parts = [pl.DataFrame({"a": [1, 2], "b": ["x", "é"]}), pl.DataFrame({"a": [], "b": []})]
    parts.append(pl.DataFrame({"a": [3], "b": [None]}))
    whole, pieces = StringIO(), StringIO()
    write_json(whole, {"rows": pl.concat(parts, how="vertical_relaxed")})
    write_json(pieces, {"rows": iter(parts)})
    assert pieces.getvalue() == whole.getvalue()
    assert json.loads(pieces.getvalue())["rows"][2] == {"a": 3, "b": None}


@pytest.mark.heavy  # worker interpreters: 30 s on the shared machine
def test_regressions_json_of_shards_holds_every_step(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = f"{tmp_path}/k.duckdb"
    assert main(["load", str(ROOT / "data"), "--db", db, "--quiet"]) == 0
    monkeypatch.setattr(kiana.shards.runs, "SHARD_RUNS", 1)  # one GPU per shard
    capsys.readouterr()
    assert main(["regressions", "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    con = connect(db, read_only=True)
    try:
        judged = judge_all(con, JudgeOptions(), full=True, store=False)  # judged again here
    finally:
        con.close()
    assert judged.shards > 1
    assert len(out["steps"]) == sum(s.height for s in judged.steps())
    assert len(out["findings"]) == judged.findings.height
    assert out["coverage"] == judged.coverage.to_dict()


def test_stored_steps_come_in_frames_of_whole_series_in_the_judges_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = CorpusConfig(seed=7, kernels=("rms_norm",), gpus=DEFAULT_GPUS[:2], sweep_size=3)
    monkeypatch.setattr(kiana.shards.stored, "STEP_SLICE", 5)
    con = connect(tmp_path / "k.duckdb")
    try:
        load_documents(con, list(generate(config).documents()))
        stored = judge_all(con, JudgeOptions())
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()
        assert isinstance(stored, StoredJudged)
        slices = list(stored.steps())
        series = ["partition_id", "provider", "metric"]
        # frames of whole series, at most 5 steps unless one series alone has more
        assert len(slices) > 2
        assert all(s.height <= 5 or s.select(series).n_unique() == 1 for s in slices)
        owners = pl.concat(
            [
                s.select(series).unique().with_columns(pl.lit(i).alias("frame"))
                for i, s in enumerate(slices)
            ]
        )
        assert owners.select(series).is_duplicated().sum() == 0
        # one GPU after another (by name), each in the judge's order of its series
        in_order = stored.every_step().sort("gpu", maintain_order=True)
        assert in_order["gpu"].n_unique() == 2
        assert_frame_equal(pl.concat(slices), in_order)
        assert con.execute("SELECT current_setting('memory_limit')").fetchall() == limit
    finally:
        con.close()
