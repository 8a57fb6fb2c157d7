"""Judging a Parquet lake (``kiana export --parquet``): locally, or on Apache Spark.

A lake holds ``runs/gpu=<gpu>/kernel=<kernel>/<writer>_<i>.parquet`` from any number of
writers (:mod:`kiana.export`).  :func:`judge_lake` judges it one GPU at a time, each
GPU through kiana's own judge (:func:`kiana.shards.judge_shard`), after keeping one row
per ``run_id`` (writers may export the same document), and writes the judgement back
as Parquet under ``out``::

    out/findings/*.parquet  out/steps/*.parquet  out/quality/*.parquet
    out/changepoints/*.parquet  out/tradeoffs/*.parquet  out/coverage.json

``engine="spark"`` (``pip install 'kiana[spark]'``, Java 17+) runs it on a Spark
session: ``groupBy("gpu").applyInArrow(...)``, one GPU per group, so a cluster judges
many GPUs at once (:mod:`kiana.lake.spark`); ``engine="local"`` runs the same shards in
this process through DuckDB (:func:`kiana.export.connect_parquet`).  Both give the same
rows: :func:`read_findings` reads them back in the judge's order.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from kiana.errors import InputError
from kiana.export import Written
from kiana.lake.tables import TABLES, conform
from kiana.safe import open_folder, open_output, refuse_links, write_text
from kiana.shards import merge_coverage, order_findings
from kiana.stats import Coverage, JudgeOptions

__all__ = ["TABLES", "Engine", "LakeJudged", "judge_lake", "read_coverage", "read_findings"]

Engine = Literal["local", "spark"]
COVERAGE = "coverage.json"


@dataclass(frozen=True)
class LakeJudged(Written):
    """What :func:`judge_lake` wrote: the folder, rows per table, GPUs judged, coverage."""

    gpus: int
    coverage: Coverage


def judge_lake(
    lake: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: JudgeOptions | None = None,
    *,
    engine: Engine = "spark",
    master: str = "local[2]",
    overwrite: bool = False,
) -> LakeJudged:
    """Judge the lake at ``lake`` one GPU at a time and write the judgement under
    ``out`` (a new or empty folder; ``overwrite`` replaces a previous one)."""
    options = options or JudgeOptions()
    target = _prepare(Path(out), overwrite=overwrite)
    if engine == "spark":
        from kiana.lake.spark import judge_on_spark

        rows, gpus, parts = judge_on_spark(os.fspath(lake), target, options, master=master)
    else:
        rows, gpus, parts = _judge_locally(os.fspath(lake), target, options)
    coverage = merge_coverage(parts)
    write_text(target / COVERAGE, json.dumps(coverage.to_dict(), indent=1) + "\n")
    return LakeJudged(target, rows, gpus, coverage)


def _prepare(out: Path, *, overwrite: bool) -> Path:
    refuse_links(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: is a file, not a folder", hint="--out names a folder to write")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise InputError(
                f"{out}: the folder exists and is not empty",
                hint="give a new folder, or --overwrite to replace a previous judgement",
            )
        shutil.rmtree(out)
    os.close(open_folder(out, mkdirs=True))
    return out


def _judge_locally(
    lake: str, out: Path, options: JudgeOptions
) -> tuple[dict[str, int], int, list[Coverage]]:
    """The same shards as Spark's (one GPU each), in this process."""
    from kiana.export import connect_parquet
    from kiana.shards import judge_shard, plan, shard_runs

    con = connect_parquet(lake)
    rows = dict.fromkeys(TABLES, 0)
    parts: list[Coverage] = []
    try:
        shards = plan(con, max_runs=1)
        for number, shard in enumerate(shards):
            judgement = judge_shard(shard_runs(con, shard), options)
            for table in TABLES:
                frame = conform(getattr(judgement, table), table)
                rows[table] += frame.height
                with open_output(
                    out / table / f"part-{number:05d}.parquet", "wb", mkdirs=True
                ) as f:
                    frame.write_parquet(f)
            parts.append(judgement.coverage)
    finally:
        con.close()
    return rows, len(parts), parts


def read_findings(out: str | os.PathLike[str]) -> pl.DataFrame:
    """The findings :func:`judge_lake` wrote under ``out``, in the judge's order."""
    return order_findings(read_table(out, "findings"))


def read_table(out: str | os.PathLike[str], table: str) -> pl.DataFrame:
    """One table :func:`judge_lake` wrote (``findings``, ``steps``, ...), as written."""
    folder = Path(out) / table
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return conform(pl.DataFrame(), table)
    return conform(pl.concat([pl.read_parquet(f) for f in files], how="vertical_relaxed"), table)


def read_coverage(out: str | os.PathLike[str]) -> Coverage:
    """The coverage :func:`judge_lake` wrote under ``out``."""
    found = json.loads((Path(out) / COVERAGE).read_text())
    return Coverage(**found)
