"""The stored judgement: the judge's frames kept in the database, with the loads they
rest on, so that ``kiana regressions`` after a load re-judges only what the new
sessions touch (:mod:`kiana.shards.incremental`) and reads the rest back.

Tables (created here, beside the loader's, all named ``judged_*``):

``judged_meta``         ``key`` (the :class:`~kiana.stats.JudgeOptions`, kiana's version
                        and the code changes it was judged with: :func:`key`) and
                        ``loads`` (every load id with its runs, as JSON)
``judged_gpus``         per GPU: runs, judged runs, steps, how many of them its
                        calibration rests on and their cut, its coverage (JSON)
``judged_calibration``  every GPU's :class:`~kiana.stats.Calibration` rows
``judged_versions``     per GPU and version label, its first judged run
``judged_findings``     the findings; ``judged_steps`` the steps; ``judged_outliers``
                        the ``outlier`` quality rows; ``judged_aa`` the A/A steps;
                        ``judged_changepoints`` the change points
``judged_points``       every session point of every series (level, noise, position)
``judged_segments``     each series' change-point search state (:mod:`kiana.shards.creep`)
``judged_renames``      the workloads joined to a later form (:mod:`kiana.stats.renames`)

A stored judgement is *current* when its key is the one asked for and the database
holds exactly the loads it rests on (:func:`status`); then it is the judgement of
:func:`kiana.shards.judge_all` (one shard: the same rows in the same order;
``tests/shards/test_incremental.py``).  Anything else is ``stale`` (loads were added:
:func:`kiana.shards.incremental.update`) or must be judged again in full
(:func:`rebuild`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import duckdb
import polars as pl

from kiana.shards.tables import (
    TABLES,
    finish,
    insert_unit,
    loads,
    schemas,
)
from kiana.shards.unit import GPU_SCHEMA

if TYPE_CHECKING:
    from kiana.stats import CodeChanges, JudgeOptions

#: Bumped whenever what is stored changes meaning, or the statistics judge differently
#: (the package version does not change between development commits): older stored
#: judgements are rebuilt.  4: a sweep off and back must come back within its noise
#: (:mod:`kiana.stats.outliers`), and the sitting link's bound is said.  5: bridges
#: across a session too noisy to place a change in (:mod:`kiana.stats.bridges`).  6: the
#: sitting factors and the calibration take the steps in one order
#: (:func:`kiana.stats.calfit.canonical`: the same bits whatever order they came in).
#: 7: a group's posterior mean factor summed row by row (:func:`kiana.stats.states.mean_f2`).
#: 8: one workload off the rest of its sweep and back is an outlier session
#: (:mod:`kiana.stats.outliers`).
#: 9: that workload measured against the rest weighted by their noise
#: (:func:`kiana.stats.pooling.deviation`); 10: a lone workload needs three or more
#: workloads with noise information (:mod:`kiana.stats.aggregate`).  11: a GPU's
#: calibration rests on a ladder of octaves of its steps (:func:`kiana.stats.calfit.prefix_size`).
#: 12: an ``unchanged`` finding says the smallest change it would have flagged.  13: a
#: workload lone on its own step where its control is too noisy to adjust by
#: (:func:`kiana.stats.aggregate._noisy_control`).  14: unstable sweep series
#: (:mod:`kiana.stats.unstable`): steps carry ``unstable``, ``judged_outliers`` holds the
#: ``unstable`` quality rows too, quality rows carry ``levels`` and ``switches``.  15: the
#: noise priors fitted on Liger's CI history (:data:`kiana.stats.calibration.PRIOR`).
#: 16: a series that moves both ways at the same code is unstable
#: (:mod:`kiana.stats.restless`); a change that every untouched kernel of its provider
#: made is ``drift`` (:mod:`kiana.stats.toolchain`).  17: a workload whose config gained
#: (or lost) one key at one value keeps its series (:mod:`kiana.stats.renames`):
#: ``judged_renames``, coverage's ``renamed``.  18: ``unchanged`` needs the sweep's median
#: workload inside the margin too (:func:`kiana.stats.rules.settled`); a restless series
#: counts the moves of its sweep's median (:func:`kiana.stats.restless.median_move`); a
#: two-peaked calibration profile is searched on the whole grid (``nullfit.fine_mode``);
#: sessions of two releases that started at the same second have ids of their own.
#: 19: a GPU's contrast component replaces its sitting component in adjusted noise only
#: from :data:`kiana.stats.calibration.MIN_CONTRASTS` contrasts.  20: an unstable series
#: of the code under test must alternate against its baselines too
#: (:mod:`kiana.stats.unstable`); the ``raw`` rule beside a control needs a change of
#: ``resolution * threshold`` (:func:`kiana.stats.floors.raw_floor`).  21: a lone workload
#: must be 9% off the rest of its sweep (:func:`kiana.stats.floors.lone_floor`), the
#: ``raw`` rule's control two of its standard errors short of the move
#: (:func:`kiana.stats.floors.raw_apart`); ``raw_small`` promises no reruns.  22: without
#: code changes known, an unstable series switches level at least four times
#: (:data:`kiana.stats.unstable.MIN_UNKNOWN_SWITCHES`).  23: an adjusted change whose
#: subject moved the other way on its own is ``inconclusive`` (:data:`kiana.stats.floors.OPPOSED`).
STORE_VERSION = 23


Status = Literal["current", "stale", "missing", "other", "unstorable", "invalid"]


def key(options: JudgeOptions, code_changes: CodeChanges | None) -> str | None:
    """What a stored judgement is valid for: the options, kiana's version and the code
    changes (None for code changes kiana cannot name: such a judgement is not stored)."""
    from kiana._version import __version__
    from kiana.culprits.changes import GitCodeChanges

    if code_changes is None:
        changes = "none"
    elif isinstance(code_changes, GitCodeChanges):
        changes = f"git:{Path(code_changes.repo).resolve()}"
    else:
        return None
    text = f"{STORE_VERSION}|{__version__}|{options!r}|{changes}"
    return hashlib.sha256(text.encode()).hexdigest()


def exists(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` holds a stored judgement."""
    from kiana.load.schema import has_table

    return has_table(con, "judged_meta")


def meta(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return {str(k): str(v) for k, v in con.execute("SELECT * FROM judged_meta").fetchall()}


def stored_loads(con: duckdb.DuckDBPyConnection) -> dict[int, int]:
    return {int(k): int(v) for k, v in json.loads(meta(con).get("loads", "{}")).items()}


def status(
    con: duckdb.DuckDBPyConnection, options: JudgeOptions, code_changes: CodeChanges | None
) -> Status:
    """Whether the stored judgement answers ``options`` on the runs as they are now:
    ``current``; ``stale`` (runs were loaded since: an update re-judges what they
    touch); ``missing``, ``other`` (judged with other options, another kiana or other
    code changes), ``invalid`` (runs it rests on are gone) or ``unstorable`` (code
    changes kiana cannot name): judged again in full."""
    wanted = key(options, code_changes)
    if wanted is None:
        return "unstorable"
    if not exists(con):
        return "missing"
    if meta(con).get("key") != wanted:
        return "other"
    before, now = stored_loads(con), loads(con)
    if before == now:
        return "current"
    if all(now.get(load) == runs for load, runs in before.items()):
        return "stale"
    return "invalid"


def writable(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` is a database file opened for writing (an in-memory database is
    never worth storing a judgement in)."""
    rows = con.execute(
        "SELECT path, readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return bool(rows) and bool(rows[0][0]) and not bool(rows[0][1])


def create(con: duckdb.DuckDBPyConnection, the_key: str) -> None:
    """(Re)create every table, empty, with ``the_key`` and no loads."""
    drop(con)
    con.execute("CREATE TABLE judged_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO judged_meta VALUES ('key', ?), ('loads', '{}')", [the_key])
    con.execute(
        "CREATE TABLE judged_gpus (gpu VARCHAR, runs BIGINT, runs_judged BIGINT, "
        "steps BIGINT, prefix BIGINT, cut TIMESTAMP, coverage VARCHAR)"
    )
    con.execute(
        "CREATE TABLE judged_versions (gpu VARCHAR, version VARCHAR, first_observed_at TIMESTAMP)"
    )
    for table, schema in schemas().items():
        empty = pl.DataFrame(schema=schema)  # noqa: F841 (read by DuckDB)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM empty")


def drop(con: duckdb.DuckDBPyConnection) -> None:
    for table in (*TABLES, "judged_meta", "judged_gpus", "judged_versions"):
        con.execute(f"DROP TABLE IF EXISTS {table}")


def rebuild(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    code_changes: CodeChanges | None = None,
    *,
    max_runs: int | None = None,
) -> None:
    """Judge every run again and store it (one transaction), shard by shard as
    :func:`kiana.shards.judge_all` does; small databases in this process, larger ones
    one shard per fresh interpreter (:mod:`kiana.shards.worker`)."""
    the_key = key(options, code_changes)
    assert the_key is not None
    con.execute("BEGIN TRANSACTION")
    try:
        create(con, the_key)
        rows = list(_judge_units(con, options, code_changes, max_runs))
        gpus = pl.concat(rows) if rows else pl.DataFrame(schema=GPU_SCHEMA)
        every = [str(g) for (g,) in con.execute("SELECT DISTINCT gpu FROM runs").fetchall()]
        finish(con, options, gpus, every)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


#: An update judges the GPUs it re-judges whole in a worker process from this many
#: runs on (a 0.5M-run GPU at 10M runs: 2.4 GiB more in the command otherwise); fewer
#: are judged in the command, which a worker's start would cost more than it saves.
SPILL_RUNS = 100_000


def rejudge(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
    gpus: list[str],
    *,
    max_runs: int | None = None,
) -> None:
    """Judge the runs of ``gpus`` again in full and replace their stored rows (inside
    the caller's transaction): exact, since nothing the judge computes crosses GPUs.
    Their change points are not searched with the judge but after it, from the stored
    search states (:func:`kiana.shards.resumed.search_again`): a series whose stored
    values and noise begin its new ones resumes its search, any other is searched
    again.  A GPU whose calibration moved to its next rung keeps its points' values,
    and their noise while the workload component did not move (it seldom does: its
    cells' scales lie on a grid), so most of its series resume."""
    if not gpus:
        return
    from kiana.shards import resumed

    before = resumed.stored_whole(con, gpus) if options.changepoints else {}
    for table in TABLES:
        con.execute(f"DELETE FROM {table} WHERE gpu IN (SELECT unnest($g))", {"g": gpus})
    plain = dataclasses.replace(options, changepoints=False)
    rows = list(_judge_units(con, plain, code_changes, max_runs, gpus, spill=SPILL_RUNS))
    judged = pl.concat(rows) if rows else pl.DataFrame(schema=GPU_SCHEMA)
    parts = con.execute(
        "SELECT DISTINCT partition_id FROM judged_points WHERE gpu IN (SELECT unnest($g)) "
        "ORDER BY 1",
        {"g": gpus},
    ).fetchall()
    resumed.search_again(con, [str(p) for (p,) in parts], before, options)
    finish(con, options, judged, gpus)


def _judge_units(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
    max_runs: int | None,
    only: list[str] | None = None,
    *,
    spill: int | None = None,
) -> Iterator[pl.DataFrame]:
    """Judge and insert every shard (of the GPUs ``only`` names); yield each one's
    :attr:`Unit.gpus`.  ``spill``: one shard of at least that many runs in a worker
    process too (an update's GPUs judged again whole: the command keeps its memory for
    the rest of the update)."""
    import shutil
    import tempfile

    from kiana.shards import worker
    from kiana.shards.inputs import shard_inputs
    from kiana.shards.unit import judge_unit

    folder = Path(tempfile.mkdtemp(prefix="kiana-store-"))
    try:
        for index, runs in enumerate(
            shard_inputs(
                con, options, max_runs=max_runs, folder=lambda: folder, only=only, spill=spill
            )
        ):
            if isinstance(runs, pl.DataFrame):
                unit = judge_unit(runs, options, code_changes)[1]
                insert_unit(con, unit)
                yield unit.gpus
                continue
            paths = worker.run_unit(runs, options, folder, index, code_changes)
            insert_unit(con, paths)
            yield pl.read_parquet(paths["gpus"])
            for path in (runs, *paths.values()):
                path.unlink(missing_ok=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
