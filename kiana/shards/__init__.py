"""Judging in bounded memory: shard by shard, one GPU (or a few small ones) at a time.

Every series, session, control, noise floor and drift check of
:func:`kiana.stats.judge` lives inside one GPU, so judging each GPU's runs alone
gives, for that GPU, exactly the rows that judging everything gives: the findings,
steps, quality, change points and trade-offs of the shards concatenate, and their
coverage counts add up (the calibration too is fitted per GPU: :mod:`kiana.stats.calibration`).

:func:`judge_all` is what :func:`kiana.analyze` runs: it plans the shards
(:mod:`kiana.shards.runs`), reads each shard's runs from DuckDB with ``WHERE gpu IN
(...)``, judges it, and keeps the results in a :class:`Judged`
(:mod:`kiana.shards.results`), where each shard's runs and steps go to disk.  Each
shard is judged in a fresh interpreter (:mod:`kiana.shards.worker`: its memory goes
back with it), so peak memory is set by the largest shard, not the database.

>>> import kiana
>>> con = kiana.connect()
>>> _ = kiana.load_paths(con, ["data/generated"])
>>> whole = judge_all(con)                 # one shard: small enough
>>> sharded = judge_all(con, max_runs=1)   # one GPU per shard
>>> (whole.shards, sharded.shards)
(1, 4)
>>> sharded.findings.equals(whole.findings)
True
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl

from kiana.shards import worker
from kiana.shards.results import Judged, merge_coverage, order_findings
from kiana.shards.runs import (
    DUCKDB_SHARE,
    Shard,
    budget,
    memory_limit,
    plan,
    selectable,
    shard_runs,
    write_origins,
)
from kiana.stats import CodeChanges, Judgement, JudgeOptions, judge
from kiana.stats.versions import check_baseline, version_table

__all__ = [
    "Judged",
    "Shard",
    "budget",
    "judge_all",
    "judge_shard",
    "memory_limit",
    "merge_coverage",
    "order_findings",
    "plan",
    "selectable",
    "shard_runs",
    "write_origins",
]


def judge_all(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions | None = None,
    *,
    max_runs: int | None = None,
    spill: bool = True,
    code_changes: CodeChanges | None = None,
) -> Judged:
    """Judge every run behind ``con``, shard by shard (see the module docstring).
    ``max_runs``: runs per shard (default :func:`kiana.shards.runs.budget`);
    ``code_changes``: as :func:`kiana.stats.judge` takes it (it goes to each shard's
    worker process, so it must pickle)."""
    options = options or JudgeOptions()
    shards = plan(con, max_runs=max_runs)
    judged = Judged(spill=spill)
    if options.baseline is not None:  # some GPU has it (each shard's judge cannot tell)
        check_baseline(_versions(con), options.baseline)
    if len(shards) <= 1:  # everything at once, as the judge always did
        runs = shard_runs(con)
        judged.add(runs, judge_shard(runs, options, code_changes))
        return judged
    with _duckdb_share(con), tempfile.TemporaryDirectory(prefix="kiana-origins-") as folder:
        origins = write_origins(con, Path(folder))
        with _duckdb_share(con, READ_SHARE):
            for index, shard in enumerate(shards):
                path = judged.folder() / f"runs-{index:05d}.parquet"
                runs = shard_runs(con, shard, origins=origins)
                runs.write_parquet(path, compression="lz4", statistics=False)
                del runs
                written = worker.run(path, options, judged.folder(), index, code_changes)
                judged.add_written(path, path.with_name(f"steps-{index:05d}.parquet"), written)
    return judged


#: DuckDB's memory while the shards' runs are read, after every origin was written
#: (a shard's rows stream out of DuckDB: its filter, the join with its origins).
READ_SHARE = 384 << 20


@contextlib.contextmanager
def _duckdb_share(con: duckdb.DuckDBPyConnection, share: int = DUCKDB_SHARE) -> Iterator[None]:
    """DuckDB's ``memory_limit`` at most ``share`` while the shards are read (unless
    set lower, e.g. by ``--memory-limit``), restored after.  DuckDB keeps what it
    buffered up to its limit (80% of RAM by default, the database file's blocks too):
    beside the judge of a shard, that would otherwise stay resident."""
    limit = memory_limit(con)
    if limit is not None and limit <= share:
        yield
        return
    (before,) = con.execute("SELECT current_setting('memory_limit')").fetchall()[0]
    con.execute(f"SET memory_limit = '{share // 2**20}MiB'")
    try:
        yield
    finally:
        con.execute(f"SET memory_limit = '{before}'")


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
