"""The cuts of an update (``D`` and ``D2`` per GPU and kernel), computed in SQL over the
stored points, equal a slow, obviously correct reference that reads every stored
point of each GPU into polars (the cuts as first written), on ``data/`` (GPUs with and
without baselines in every partition) and on a generated history."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana.load
from kiana.generate import CorpusConfig, generate
from kiana.shards import incremental, judge_all, store, tables
from kiana.stats import JudgeOptions
from kiana.vocabulary import SERIES_KEYS
from tests.conftest import ROOT

pytestmark = pytest.mark.heavy  # each case judges a corpus first

OPTIONS = JudgeOptions()


def _reference_group(
    ordered: pl.DataFrame, fresh: pl.DataFrame
) -> tuple[datetime, datetime, datetime]:
    """``(D, D2, t)`` of one group of kernels, by the module docstring's words."""
    t: datetime = fresh["first"].min()  # type: ignore[assignment]
    joined = ordered.filter(pl.col("last_observed_at") >= t - OPTIONS.session_gap)
    if joined.height:
        t = min(t, joined["session_start"].min())  # type: ignore[type-var]
    keys = list(SERIES_KEYS)
    touched = ordered.join(fresh.select(keys).unique(), on=keys, how="semi")
    last = (
        touched.filter(pl.col("session_start") < t)
        .group_by(keys)
        .agg(pl.col("session_start").last())
    )
    d = incremental.midnight(min([t, *last["session_start"].to_list()]))
    live = ordered.filter(pl.col("session_start") >= d).select(keys).unique()
    ahead = (
        ordered.join(live, on=keys, how="semi")
        .filter(pl.col("session_start") < d)
        .group_by(keys)
        .agg(pl.col("session_start").tail(2).first())
    )
    return d, incremental.midnight(min([d, *ahead["session_start"].to_list()])), t


def reference_cuts(con: Any, fresh: pl.DataFrame, gpus: list[str]) -> pl.DataFrame:
    """Every GPU's points read whole, sorted in polars, grouped kernel by kernel."""
    rows = []
    for gpu in gpus:
        points = con.sql("SELECT * FROM judged_points WHERE gpu = $g", params={"g": gpu}).pl()
        mine = fresh.filter(pl.col("gpu") == gpu)
        if points.height == 0:
            continue
        ordered = points.sort(*SERIES_KEYS, "position")
        back = ordered.select(
            (pl.col("session_start").diff().over(SERIES_KEYS) < timedelta(0)).any()
        )
        if back.item():
            continue
        runs = con.sql(
            "SELECT partition_id, role FROM runs WHERE gpu = $g AND status = 'passed' "
            "AND median IS NOT NULL AND NOT isnan(median)",
            params={"g": gpu},
        ).pl()
        base = runs.group_by("partition_id").agg((pl.col("role") != "subject").any().alias("b"))
        if base["b"].all():
            groups = [[k] for k in mine["kernel"].unique().sort().to_list()]
        else:
            groups = [sorted({*ordered["kernel"].to_list(), *mine["kernel"].to_list()})]
        for group in groups:
            found = _reference_group(
                ordered.filter(pl.col("kernel").is_in(group)),
                mine.filter(pl.col("kernel").is_in(group)),
            )
            rows += [(gpu, k, *found) for k in group]
    return pl.DataFrame(rows, schema=incremental.CUT_SCHEMA, orient="row").sort("gpu", "kernel")


def _docs(path: Path | None, config: CorpusConfig | None, bare: bool) -> list[dict[str, Any]]:
    """The documents in time order; ``bare``: without the baselines' runs of
    layer_norm on the A100 SXM4 80GB (that GPU then takes one cut for every kernel:
    its partitions without a baseline take the GPU-wide control)."""
    if path is not None:
        docs = [json.loads(line) for line in path.read_text().splitlines()]
    else:
        assert config is not None
        docs = list(generate(config).documents())
    if bare:
        docs = [d for d in docs if not _a_baseline_there(d)]
    return sorted(docs, key=lambda d: (d["run"]["spec"]["observedAt"], json.dumps(d)))


def _a_baseline_there(doc: dict[str, Any]) -> bool:
    kernel, _, provider, gpu = doc["run"]["spec"]["sourceNative"]["externalId"].split("/")[:4]
    bare = (kernel, gpu) == ("layer_norm", "nvidia-a100-sxm4-80gb")
    return bare and not provider.startswith("liger")


DATA = ROOT / "data" / "generated" / "documents.jsonl"


@pytest.mark.parametrize(
    ("path", "config", "share", "bare"),
    [
        (DATA, None, 0.9, False),
        (DATA, None, 0.6, False),
        (DATA, None, 0.6, True),
        (None, CorpusConfig(seed=7, kernels=("rms_norm",), sweep_size=3, histories=1), 0.95, False),
    ],
)
def test_cuts_equal_the_reference(
    tmp_path: Path, path: Path | None, config: CorpusConfig | None, share: float, bare: bool
) -> None:
    docs = _docs(path, config, bare)
    con = kiana.load.connect(tmp_path / "kiana.duckdb")
    try:
        kiana.load.load_documents(con, docs[: int(len(docs) * share)])
        judge_all(con, OPTIONS)
        kiana.load.load_documents(con, docs[int(len(docs) * share) :])
        new = sorted(set(tables.loads(con)) - set(store.stored_loads(con)))
        fresh = incremental.fresh_runs(con, new)
        gpus = sorted(set(fresh["gpu"].to_list()))
        found = incremental.cuts(con, fresh, gpus, OPTIONS)
        assert found.height  # something to compare
        if bare:  # every kernel of that GPU cut together
            a100 = found.filter(pl.col("gpu").str.contains("A100 SXM4-80GB"))
            assert a100["kernel"].n_unique() > 1 and a100["own"].n_unique() == 1
        assert_frame_equal(found.sort("gpu", "kernel"), reference_cuts(con, fresh, gpus))
    finally:
        con.close()


def test_a_gpu_with_a_series_out_of_time_order_is_left_out(tmp_path: Path) -> None:
    """A GPU with a stored series whose sessions do not start in the order of its points
    (a later label measured earlier) has no cut: it is judged again whole."""
    docs = _docs(DATA, None, False)
    con = kiana.load.connect(tmp_path / "kiana.duckdb")
    try:
        kiana.load.load_documents(con, docs[: int(len(docs) * 0.6)])
        judge_all(con, OPTIONS)
        kiana.load.load_documents(con, docs[int(len(docs) * 0.6) :])
        new = sorted(set(tables.loads(con)) - set(store.stored_loads(con)))
        fresh = incremental.fresh_runs(con, new)
        gpus = sorted(set(fresh["gpu"].to_list()))
        gpu = incremental.cuts(con, fresh, gpus, OPTIONS)["gpu"][0]
        (series,) = con.execute(
            "SELECT partition_id, provider, metric FROM judged_points WHERE gpu = $g "
            "AND position = 1 ORDER BY ALL LIMIT 1",
            {"g": gpu},
        ).fetchall()
        con.execute(
            "UPDATE judged_points SET session_start = session_start + INTERVAL 1000 DAY "
            "WHERE position = 0 AND partition_id = ? AND provider = ? AND metric = ?",
            list(series),
        )
        found = incremental.cuts(con, fresh, gpus, OPTIONS)
        assert gpu not in found["gpu"].to_list() and found.height
        assert_frame_equal(found.sort("gpu", "kernel"), reference_cuts(con, fresh, gpus))
    finally:
        con.close()
