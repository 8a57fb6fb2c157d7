"""A renamed workload in the stored judgement (kiana.stats.renames): the update that
brings the new slug, and the coverage read back, equal judging every run again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import kiana.load
from kiana.importers.liger import import_csvs
from kiana.shards import judge_all
from kiana.shards.stored import StoredJudged
from kiana.stats import JudgeOptions
from tests.importers.test_liger import BASE, csv_text
from tests.shards.test_incremental import assert_same

KERNEL = "megatron_cross_entropy"
VOCABS = (4096, 8192, 16384, 32768)


def sitting(tmp_path: Path, day: int, config: dict[str, Any], change: float = 0.0) -> Path:
    """One CSV of one sitting: liger and a baseline over a V sweep."""
    rows = [
        {**BASE, "kernel_name": KERNEL, "kernel_provider": provider,
         "kernel_operation_mode": "forward", "x_name": "V", "x_value": str(v),
         "y_value_50": str(m), "y_value_20": str(m * 0.995), "y_value_80": str(m * 1.005),
         "extra_benchmark_config_str": json.dumps(config),
         "timestamp": f"2026-06-{day:02d} 07:4{i}:00", "liger_version": "0.8.0"}
        for i, v in enumerate(VOCABS)
        for provider, base in (("liger", 1.0), ("megatron-unfused", 3.0))
        if (m := base * (i + 1) * (1 + (change if provider == "liger" else 0.0)))
    ]  # fmt: skip
    path = tmp_path / f"sitting-{day:02d}.csv"
    path.write_text(csv_text(*rows))
    return path


@pytest.fixture
def db(tmp_path: Path) -> Any:
    con = kiana.load.connect(tmp_path / "kiana.duckdb")
    yield con
    con.close()


def test_an_update_bringing_the_new_slug_joins_as_a_full_judge(
    db: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    old = {"S": 2048, "B": 4}
    for day in (1, 3, 5):
        kiana.load.load_documents(db, import_csvs([sitting(tmp_path, day, old)]).documents)
    judge_all(db, JudgeOptions())
    new = sitting(tmp_path, 8, {**old, "TP": 1}, change=0.40)
    kiana.load.load_documents(db, import_csvs([new]).documents)
    stored = judge_all(db, JudgeOptions())
    assert isinstance(stored, StoredJudged)
    assert stored.coverage.renamed == {f"{KERNEL} +tp1": 8}
    assert_same(stored, judge_all(db, JudgeOptions(), full=True, store=False))
    verdicts = stored.findings.filter(stored.findings["to_session"].str.starts_with("2026-06-08"))
    assert sorted(verdicts["verdict"]) == ["regression", "unchanged"]
