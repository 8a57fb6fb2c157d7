"""After a load: re-judge only what the new sessions can change, and splice it into
the stored judgement (:mod:`kiana.shards.store`).

What a step's verdict rests on, given its GPU's calibration: its two session points;
its sweep (the other workloads between the same sessions) and its controls (the
baselines of its partition in the same sessions); its *sitting group* (kernel, GPU and
metric between the same two sittings: versions, origins and **days**), whose
posterior sets its noise; the GPU-wide control of partitions without a baseline (the
same versions and days); and the steps before and after it in its series (an outlier
is a session off and back).  Everything but the neighbours is keyed by the days of its
two sessions, so a *day* is the unit of the cut.  Per kernel with new runs (given its
GPU's calibration, nothing else crosses kernels; one cut for every kernel of a GPU
with a partition without baselines, whose GPU-wide control does), with ``t`` the
first new run (or the start of the stored session it joins):

* ``D``: midnight of the earliest of ``t`` and, in every series with new runs, the
  last point before ``t``.  Every step whose value can change starts at or after
  ``D`` (a new session, or a step of the same sitting group or day); every step whose
  verdict can change *ends* at or after ``D`` (the step before a changed one too).
  These steps, their findings (a sweep shares its sessions), outlier and A/A rows are
  re-judged and replace the stored ones.
* ``D2``: midnight of the day two points before the first point at or after ``D``, in
  every series with a point at or after ``D``: the re-judged steps' neighbours and
  their sitting groups need the sessions from there on.  The runs of the kernel's
  sessions starting at or after ``D2`` are judged (:func:`kiana.stats.judge`, with the
  GPU's stored calibration) and spliced in (:func:`kiana.shards.splice.splice_gpu`,
  which checks the window against what is stored where both overlap).

Change points are resumed (or searched again) on the partitions whose points changed.  What is
judged again in full instead (exact anyway, only slower): a GPU new to the store; a
GPU whose calibration would change (:func:`kiana.stats.calfit.prefix_size`: its steps
reach the next rung, or ``D`` is at or before the calibration's cut); a GPU whose
version labels would be ordered otherwise in the window (labels that are not releases
are placed by time, across kernels), or whose stored series are not in time order (a
later label measured earlier: the window cannot tell where new points go); and every
GPU judged with ``--baseline`` (every session against one: a whole series).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from kiana.stats.sessions import assign_sessions
from kiana.vocabulary import SERIES_KEYS, SESSION_SCOPE

if TYPE_CHECKING:
    import duckdb

    from kiana.shards.stored import StoredJudged
    from kiana.stats import CodeChanges, JudgeOptions


def midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def fresh_runs(con: duckdb.DuckDBPyConnection, new: list[int]) -> pl.DataFrame:
    """Per GPU, kernel and series, the first run of the loads ``new``."""
    from kiana.shards.unit import query

    return query(
        con,
        "SELECT gpu, kernel, partition_id, provider, metric, min(observed_at) AS first FROM runs "
        "WHERE load_id IN (SELECT unnest($loads)) GROUP BY ALL ORDER BY ALL",
        {"loads": new},
    )


#: One row per kernel re-judged: ``kernel``, ``own`` (``D``) and ``since`` (``D2``).
CUT_SCHEMA: dict[str, pl.DataType] = {
    "kernel": pl.String(), "own": pl.Datetime("us"), "since": pl.Datetime("us"),
}  # fmt: skip


def cuts(
    points: pl.DataFrame, fresh: pl.DataFrame, options: JudgeOptions, *, together: bool
) -> pl.DataFrame | None:
    """``(D, D2)`` of the module docstring per kernel with new runs, for a GPU's stored
    ``points`` and its new runs' series (``fresh``: :func:`fresh_runs` of the GPU);
    ``together``: one cut for every kernel of the GPU (a partition without baselines
    takes the GPU-wide control, which crosses kernels).  None: the whole GPU."""
    if options.baseline is not None or points.height == 0 or fresh.height == 0:
        return None
    ordered = points.sort(*SERIES_KEYS, "position")
    if not _monotone(ordered):
        return None
    if together:
        groups = [sorted({*ordered["kernel"].to_list(), *fresh["kernel"].to_list()})]
    else:
        groups = [[k] for k in fresh["kernel"].unique().sort().to_list()]
    rows = []
    for group in groups:
        mine = ordered.filter(pl.col("kernel").is_in(group))
        found = _cut(mine, fresh.filter(pl.col("kernel").is_in(group)), options)
        rows += [(k, *found) for k in group]
    return pl.DataFrame(rows, schema=CUT_SCHEMA, orient="row")


def _cut(
    ordered: pl.DataFrame, fresh: pl.DataFrame, options: JudgeOptions
) -> tuple[datetime, datetime]:
    """``(D, D2)`` of one group of kernels: ``ordered`` their stored points (in series
    order), ``fresh`` their new runs' series and first times."""
    t: datetime = fresh["first"].min()  # type: ignore[assignment]
    joined = ordered.filter(pl.col("last_observed_at") >= t - options.session_gap)
    if joined.height:
        earliest: datetime = joined["session_start"].min()  # type: ignore[assignment]
        t = min(t, earliest)
    keys = list(SERIES_KEYS)
    touched = ordered.join(fresh.select(keys).unique(), on=keys, how="semi")
    last = (
        touched.filter(pl.col("session_start") < t)
        .group_by(keys)
        .agg(pl.col("session_start").last())
    )
    d = midnight(min([t, *last["session_start"].to_list()]))
    live = ordered.filter(pl.col("session_start") >= d).select(keys).unique()
    ahead = (
        ordered.join(live, on=keys, how="semi")
        .filter(pl.col("session_start") < d)
        .group_by(keys)
        .agg(pl.col("session_start").tail(2).first())
    )
    return d, midnight(min([d, *ahead["session_start"].to_list()]))


def _monotone(ordered: pl.DataFrame) -> bool:
    """Whether every series' sessions start in the order of its points."""
    if ordered.height == 0:
        return True
    steps = ordered.select(
        (pl.col("session_start").diff().over(SERIES_KEYS) < timedelta(0)).any()
    ).item()
    return not bool(steps)


def window_runs(
    con: duckdb.DuckDBPyConnection, gpu: str, cut: pl.DataFrame, options: JudgeOptions
) -> pl.DataFrame:
    """The judgeable runs of ``gpu``'s sessions starting at or after each kernel's
    ``since`` (:func:`cuts`; read from ``since`` less twice the session gap, so that
    those sessions come out whole)."""
    from kiana.shards.runs import shard_runs

    margin = 2 * options.session_gap
    start: datetime = cut["since"].min()  # type: ignore[assignment]
    runs = shard_runs(
        con,
        where="gpu = $gpu AND observed_at >= $start AND kernel IN (SELECT unnest($kernels))",
        params={"gpu": gpu, "start": start - margin, "kernels": cut["kernel"].to_list()},
    )
    runs = runs.with_columns(pl.col("median").cast(pl.Float64).fill_nan(None)).filter(
        (pl.col("status") == "passed") & pl.col("median").is_not_null()
    )
    runs = runs.join(cut.select("kernel", "since"), on="kernel", how="left", maintain_order="left")
    runs = runs.filter(pl.col("observed_at") >= pl.col("since") - margin)
    indexed = runs.with_row_index("_i")
    sessions = assign_sessions(
        indexed.select("_i", *SESSION_SCOPE, "origin", "observed_at", "since"), options.session_gap
    )
    keep = sessions.filter(pl.col("session_start") >= pl.col("since"))["_i"].sort()
    return indexed.filter(pl.col("_i").is_in(keep.implode())).drop("_i", "since")


#: Splice new sessions into a GPU's stored judgement (False: re-judge touched GPUs whole).
SPLICE = True


def update(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
    *,
    max_runs: int | None = None,
) -> str:
    """Bring the stored judgement up to the runs of ``con`` (module docstring), in one
    transaction; what was re-judged, in words."""
    from kiana.shards import store
    from kiana.shards.splice import has_baselines, splice_gpu, stored
    from kiana.shards.unit import GPU_SCHEMA

    new = sorted(set(store.loads(con)) - set(store.stored_loads(con)))
    fresh = fresh_runs(con, new)
    gpus = sorted(set(fresh["gpu"].to_list()))
    known = {str(g) for (g,) in con.execute("SELECT gpu FROM judged_gpus").fetchall()}
    spliced: list[str] = []
    con.execute("BEGIN TRANSACTION")
    try:
        for gpu in (g for g in gpus if g in known and SPLICE):
            points = stored(con, "judged_points", gpu)
            together = not has_baselines(con, gpu)
            found = cuts(points, fresh.filter(pl.col("gpu") == gpu), options, together=together)
            if found is None:
                continue
            window = window_runs(con, gpu, found, options)
            if splice_gpu(con, gpu, window, found, points, options, code_changes):
                spliced.append(gpu)
        whole = [g for g in gpus if g not in spliced]
        store.rejudge(con, options, code_changes, whole, max_runs=max_runs)
        if not whole:  # every GPU spliced: the loads still need recording
            store.finish(con, options, pl.DataFrame(schema=GPU_SCHEMA), [])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return (
        f"stored judgement updated: {len(spliced)} GPU(s) from their newest sessions, "
        f"{len(whole)} judged again in full"
    )


def judge_stored(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
    *,
    full: bool = False,
    write: bool = True,
    max_runs: int | None = None,
) -> StoredJudged | None:
    """The stored judgement of ``con``, brought up to date when it may be written
    (``write`` and a database file opened for writing): read as it is when current,
    updated after new loads (:func:`update`), judged again in full and stored when
    missing, made with other options or code changes, resting on runs no longer there,
    or when ``full``.  None when the judgement must be made in memory instead: a
    read-only (or in-memory) database whose stored judgement is not current, ``full``
    without writing, or code changes kiana cannot name (:func:`kiana.shards.store.key`)."""
    from kiana.shards import store
    from kiana.shards.stored import StoredJudged

    can_write = write and store.writable(con)
    if not can_write:
        if full or not store.exists(con):
            return None
        current = store.status(con, options, code_changes) == "current"
        return StoredJudged(con, options, "the stored judgement, read") if current else None
    status = store.status(con, options, code_changes)
    if status == "unstorable":
        return None
    if full or status in ("missing", "other", "invalid"):
        store.rebuild(con, options, code_changes, max_runs=max_runs)
        note = "judged in full and stored"
    elif status == "stale":
        note = update(con, options, code_changes, max_runs=max_runs)
    else:
        note = "the stored judgement, read"
    return StoredJudged(con, options, note)
