"""What a shard is judged on and how: its runs (:func:`shard_inputs`, in memory or in a
Parquet file for a worker), the ``--baseline`` check (:func:`check_baseline_of`) and the
judge of one shard (:func:`judge_shard`)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import duckdb
import polars as pl

from kiana.shards.runs import plan, shard_runs, write_origins
from kiana.shards.share import READ_SHARE, duckdb_share
from kiana.stats import CodeChanges, Judgement, JudgeOptions, judge
from kiana.stats.versions import check_baseline, version_table


def shard_inputs(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    *,
    max_runs: int | None = None,
    folder: Callable[[], Path],
    only: Collection[str] | None = None,
    spill: int | None = None,
) -> Iterator[pl.DataFrame | Path]:
    """Each shard's runs (:func:`plan`; ``only``: of the GPUs named): in memory when
    there is one shard (of fewer than ``spill`` runs, when given), else written to a
    Parquet file under ``folder()`` for a worker process, one shard at a time (every
    run's origin read once first, DuckDB's memory held low meanwhile)."""
    check_baseline_of(con, options)
    shards = plan(con, max_runs=max_runs, only=only)
    if only is not None and not shards:
        return
    large = spill is not None and bool(shards) and shards[0].runs >= spill
    if len(shards) <= 1 and not large:
        yield shard_runs(con, shards[0] if only is not None and shards else None)
        return
    with duckdb_share(con), tempfile.TemporaryDirectory(prefix="kiana-origins-") as scratch:
        named = None if only is None else sorted({g for shard in shards for g in shard.gpus})
        origins = write_origins(con, Path(scratch), named)
        with duckdb_share(con, READ_SHARE):
            for index, shard in enumerate(shards):
                path = folder() / f"runs-{index:05d}.parquet"
                runs = shard_runs(con, shard, origins=origins)
                runs.write_parquet(path, compression="lz4", statistics=False)
                del runs
                yield path


def check_baseline_of(con: duckdb.DuckDBPyConnection, options: JudgeOptions) -> None:
    """A ``--baseline`` no judged run has is a usage error (a shard lacking it is not)."""
    if options.baseline is not None:
        check_baseline(_versions(con), options.baseline)


def _versions(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The version table of the judgeable runs (passed, with a median), oldest first,
    for the baseline check (:func:`kiana.stats.versions.version_table`)."""
    firsts: pl.DataFrame = con.sql(
        "SELECT version, min(observed_at) AS observed_at FROM runs "
        "WHERE status = 'passed' AND median IS NOT NULL AND NOT isnan(median) GROUP BY 1"
    ).pl()
    return version_table(firsts)


def judge_shard(
    runs: pl.DataFrame, options: JudgeOptions, code_changes: CodeChanges | None = None
) -> Judgement:
    """:func:`kiana.stats.judge` of one shard's runs.  A ``baseline`` the shard has no
    session of is no error here (:func:`judge_all` checks that some GPU has it): the
    shard's series then have no step, as judging every run gives for these GPUs."""
    return judge(runs, options, code_changes=code_changes, require_baseline=False)
