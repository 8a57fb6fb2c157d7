"""The report of a database judged in several shards (only the charted findings' steps
and the runs they chart in memory, the totals gathered one shard at a time:
:mod:`kiana.report.totals`) says what the report of one shard says."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import kiana
import kiana.load
import kiana.shards.runs
from kiana import report
from kiana.commands.report import collect
from kiana.generate import CorpusConfig, generate, write_corpus
from kiana.report import ReportData, frames
from kiana.report.data import gather, spread_frame, versions_frame
from kiana.report.totals import totals
from tests.conftest import ROOT
from tests.report.scan_fixtures import report_rows

T0 = datetime(2026, 1, 1)


def _runs() -> pl.DataFrame:
    """Two GPUs; on A, ``main`` is first seen before ``0.2.0`` is, on B ``0.2.0`` long
    before: ranked by A's runs alone, ``main`` comes before ``0.2.0``, by every run after
    it, so the newest version A's speed-up is taken at depends on what ranks it."""
    rows = []
    plan = {"A": [("0.1.0", 1), ("main", 2), ("0.2.0", 3)], "B": [("0.2.0", 0), ("0.1.0", -1)]}
    for gpu, sessions in plan.items():
        for version, day in sessions:
            for provider, median in (("liger", 100.0 + day), ("torch", 150.0 - day)):
                for workload in ("N=1", "N=2"):
                    rows.append(
                        {"partition_id": f"{gpu}/{workload}", "kernel": "rms_norm",
                         "pass": "forward", "gpu": gpu, "workload": workload,
                         "version": version, "provider": provider, "status": "passed",
                         "harness": "liger-kernel-bench",
                         "role": "subject" if provider == "liger" else "baseline",
                         "metric": "latency", "median": median, "p20": median - 1,
                         "p80": median if gpu == "B" else median + 1,
                         "observed_at": T0 + timedelta(days=day)}
                    )  # fmt: skip
    rows.append({**rows[0], "status": "failed", "median": None})
    rows.append({**rows[1], "metric": "memory", "median": 5.0, "p20": 5.0, "p80": 5.0})
    return pl.DataFrame(rows)


def test_totals_of_shards_are_the_totals_of_every_run() -> None:
    runs = _runs()
    known = totals(lambda: [runs.filter(pl.col("gpu") == gpu) for gpu in "AB"], steps=7)
    passed = runs.filter(pl.col("status") == "passed")
    assert known.counts == {
        "runs": runs.height, "partitions": 4, "latency runs": 20, "memory runs": 1,
        "not passed": 1, "kernels": 1, "GPUs": 2, "versions": 3, "steps": 7,
    }  # fmt: skip
    assert (known.kernels, known.gpus) == (("rms_norm",), ("A", "B"))
    assert known.harnesses == ("liger-kernel-bench",)
    assert_frame_equal(known.versions, versions_frame(runs))
    assert_frame_equal(known.spread, spread_frame(passed))
    assert_frame_equal(known.speedups, frames.speedup_frame(runs))


def test_speedups_of_a_shard_are_ranked_by_every_shard() -> None:
    runs = _runs()
    alone = frames.speedup_frame(runs.filter(pl.col("gpu") == "A"))
    every = totals(lambda: [runs.filter(pl.col("gpu") == "A")], steps=0).speedups
    ranked = totals(lambda: [runs.filter(pl.col("gpu") == g) for g in "AB"], steps=0).speedups
    assert set(alone["version"]) == {"0.2.0"}  # A's own ranks: main before 0.2.0
    assert_frame_equal(every, alone)
    assert set(ranked.filter(pl.col("gpu") == "A")["version"]) == {"main"}


# ---------------------------------------------------------------- through collect


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A generated corpus on several GPUs, with memory rows and a long history."""
    root: Path = tmp_path_factory.mktemp("generated")
    config = CorpusConfig(seed=3, kernels=("rms_norm", "swiglu", "geglu"), sweep_size=3,
                          histories=1, memory=True)  # fmt: skip
    write_corpus(generate(config), root, "jsonl")
    con = kiana.load.connect(None)
    kiana.load.load(con, [root])
    yield con
    con.close()


def _pages(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> tuple[ReportData, ReportData]:
    whole = collect(con, generated_at=T0)
    monkeypatch.setattr(kiana.shards.runs, "SHARD_RUNS", 1)  # one GPU per shard
    sharded = collect(con, generated_at=T0)
    assert whole.totals is None and sharded.totals is not None
    assert sharded.runs.height < whole.runs.height  # the charts' runs only
    assert sharded.judgement.steps.height < whole.judgement.steps.height
    return whole, sharded


def _quality(html: str) -> tuple[str, list[str]]:
    """The page without its data-quality section, and that section's table rows
    sorted (sessions not judged come in each shard's order)."""
    found = re.search(r'<section id="quality">.*?</section>', html, flags=re.S)
    assert found is not None
    rows = sorted(re.findall(r"<tr>.*?</tr>", found.group(0), flags=re.S))
    return html[: found.start()] + html[found.end() :], rows


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["data", "generated"])
def test_the_page_of_several_shards_is_the_page_of_one(
    name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, sharded = _pages(request.getfixturevalue(name), monkeypatch)
    a, b = gather(whole), gather(sharded)
    assert a.counts == b.counts
    for frame in ("versions", "speedups", "flips", "spread", "charted", "findings"):
        assert_frame_equal(getattr(a, frame), getattr(b, frame))
    assert_frame_equal(a.memory_findings, b.memory_findings)
    assert a.latency_counts == b.latency_counts and a.memory_counts == b.memory_counts
    assert report.headline(whole) == report.headline(sharded)
    assert report.coverage_line(whole) == report.coverage_line(sharded)
    html_a, html_b = report.render(whole), report.render(sharded)
    assert report_rows(html_a) == report_rows(html_b)  # the findings tables, row by row
    assert _quality(html_a) == _quality(html_b)  # and everything else


@pytest.mark.heavy
def test_the_page_of_a_stored_judgement_is_the_page_of_one_shard(tmp_path: Path) -> None:
    """A database file keeps its judgement (:mod:`kiana.shards.store`), read back one
    GPU at a time: its report takes the bounded path and shows the same page."""
    memory = kiana.load.connect(None)
    kiana.load.load(memory, [ROOT / "data"])
    whole = collect(memory, generated_at=T0)
    memory.close()
    db = kiana.load.connect(tmp_path / "data.duckdb")
    kiana.load.load(db, [ROOT / "data"])
    kiana.analyze(db)  # judges and stores
    stored = collect(db, generated_at=T0)
    db.close()
    assert whole.totals is None and stored.totals is not None
    # two loads: the database and the loads' times differ, nothing else may
    stored = dataclasses.replace(stored, database=whole.database, quality=whole.quality)
    assert gather(whole).counts == gather(stored).counts
    assert report.headline(whole) == report.headline(stored)
    html_a, html_b = report.render(whole), report.render(stored)
    assert report_rows(html_a) == report_rows(html_b)
    assert _quality(html_a) == _quality(html_b)
