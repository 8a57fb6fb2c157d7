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

import duckdb
import polars as pl

from kiana.shards import worker
from kiana.shards.inputs import check_baseline_of, judge_shard, shard_inputs
from kiana.shards.results import Judged, merge_coverage, order_findings
from kiana.shards.runs import (
    Shard,
    budget,
    memory_limit,
    plan,
    selectable,
    shard_runs,
    write_origins,
)
from kiana.stats import CodeChanges, JudgeOptions

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
