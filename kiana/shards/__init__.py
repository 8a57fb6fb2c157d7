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
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import duckdb
import polars as pl

from kiana.load.database import restore_memory_limit
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
    "check_baseline_of",
    "judge_all",
    "judge_shard",
    "memory_limit",
    "merge_coverage",
    "order_findings",
    "plan",
    "selectable",
    "shard_inputs",
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
    full: bool = False,
    store: bool = True,
) -> Judged:
    """Judge every run behind ``con``, shard by shard (see the module docstring).
    ``max_runs``: runs per shard (default :func:`kiana.shards.runs.budget`);
    ``code_changes``: as :func:`kiana.stats.judge` takes it (it goes to each shard's
    worker process, so it must pickle).  On a database file, the judgement is stored
    in it and, after a load, only what the new sessions touch is judged again
    (:func:`kiana.shards.incremental.judge_stored`; ``store=False`` never writes,
    ``full`` judges everything again); a read-only database reads its stored
    judgement when it is current, and is judged here otherwise."""
    from kiana.shards.incremental import judge_stored

    options = options or JudgeOptions()
    stored = judge_stored(con, options, code_changes, full=full, write=store, max_runs=max_runs)
    if stored is not None:
        return stored
    judged = Judged(spill=spill)
    for index, runs in enumerate(
        shard_inputs(con, options, max_runs=max_runs, folder=judged.folder)
    ):
        if isinstance(runs, pl.DataFrame):  # one shard: everything at once, in this process
            judged.add(runs, judge_shard(runs, options, code_changes))
            continue
        written = worker.run(runs, options, judged.folder(), index, code_changes)
        judged.add_written(runs, runs.with_name(f"steps-{index:05d}.parquet"), written)
    return judged


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
    with _duckdb_share(con), tempfile.TemporaryDirectory(prefix="kiana-origins-") as scratch:
        named = None if only is None else sorted({g for shard in shards for g in shard.gpus})
        origins = write_origins(con, Path(scratch), named)
        with _duckdb_share(con, READ_SHARE):
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
    con.execute(f"SET memory_limit = '{(share + held(con)) // 2**20}MiB'")
    try:
        yield
    except BaseException:
        # In a transaction the error aborted (an update's), the SET fails too: the
        # error that aborted it is the one to report, not "the transaction is aborted".
        with contextlib.suppress(duckdb.Error):
            restore_memory_limit(con, before)
        raise
    restore_memory_limit(con, before)


def held(con: duckdb.DuckDBPyConnection) -> int:
    """Bytes DuckDB holds beyond the database file's cached blocks: what a transaction
    wrote and has not committed (an update's spliced rows, before it reads the GPUs it
    judges again whole: 0.3-0.5 GiB at 10M runs), which the share comes on top of."""
    (n,) = con.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
        "WHERE tag NOT IN ('BASE_TABLE', 'ALLOCATOR')"
    ).fetchall()[0]
    return int(n)


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
