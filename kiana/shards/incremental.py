"""After a load: re-judge only what the new sessions can change, and splice it into
the stored judgement (:mod:`kiana.shards.store`).

What a step's verdict rests on, given its GPU's calibration: its two session points;
its sweep (the other workloads between the same sessions) and its controls (the
baselines of its partition in the same sessions); its *sitting group* (kernel, GPU and
metric between the same two sittings: versions, origins and **days**), whose
posterior sets its noise; the GPU-wide control of partitions without a baseline (the
same versions and days); and the steps before and after it in its series (an outlier
is a session off and back).  Everything but the neighbours is keyed by the days of its
two sessions, so a *day* is the unit of the cut.  Per (GPU, kernel), with ``t`` the
first new run (or the session it joins):

* ``D``: midnight of the day of the last point before ``t`` of any of the kernel's
  series.  Every step whose value can change starts at or after ``D`` (a new session,
  a step it replaces, or a step of the same sitting group); every step whose verdict
  can change *ends* at or after ``D`` (the step before a changed one too).  These
  steps, their findings (a sweep shares its sessions), outlier and A/A rows are
  re-judged and replace the stored ones.
* ``D2``: midnight of the day two points before the first point at or after ``D``, in
  every series: the re-judged steps' neighbours and their sitting groups need the
  sessions from there on.  The runs of sessions starting at or after ``D2`` are judged
  (:func:`kiana.stats.judge`, with the GPU's stored calibration); session points from
  ``D2`` on replace the stored ones.

Change points resume (:mod:`kiana.shards.creep`) on series whose stored points are a
prefix of the new ones, and are searched again on the others.

What is judged again in full instead (exact anyway, only slower): a GPU new to the
store; a GPU whose calibration changes (:func:`kiana.stats.calfit.prefix_cut`: its
steps reach the next rung, or a step at or before its cut is added or removed); a GPU
whose version order changes for labels already judged; a kernel whose series are not in
time order around the cut (a later label measured earlier), or judged with
``--baseline`` (every session against one: a whole series); a GPU with a partition
without baselines is cut once for all its kernels (its GPU-wide controls cross them),
and re-judged in full if a region sees a partition without the baselines it has.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from kiana.stats.sessions import SESSION_FORMAT, assign_sessions
from kiana.vocabulary import LIGER, LIGER_PREFIX, SERIES_KEYS, SESSION_SCOPE

if TYPE_CHECKING:
    import duckdb

    from kiana.shards.stored import StoredJudged
    from kiana.stats import CodeChanges, JudgeOptions


@dataclass(frozen=True)
class Region:
    """What one (GPU, kernel) re-judges: steps ending at or after ``own``, from the
    sessions starting at or after ``since`` (both None: the whole kernel)."""

    gpu: str
    kernel: str
    own: datetime | None
    since: datetime | None

    @property
    def own_id(self) -> str | None:
        """``own`` as a session id (``2026-06-16T00:00:00Z``), to compare with them."""
        return None if self.own is None else self.own.strftime(SESSION_FORMAT)


def midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def fresh_runs(con: duckdb.DuckDBPyConnection, new: list[int]) -> pl.DataFrame:
    """Per GPU and kernel, the first run of the loads ``new``."""
    frame: pl.DataFrame = con.sql(
        "SELECT gpu, kernel, min(observed_at) AS first FROM runs "
        "WHERE load_id IN (SELECT unnest($loads)) GROUP BY ALL ORDER BY ALL",
        params={"loads": new},
    ).pl()
    return frame


def unbased(con: duckdb.DuckDBPyConnection, gpus: list[str]) -> set[str]:
    """The GPUs with a partition of Liger runs and no baseline run."""
    liger = f"(provider = '{LIGER}' OR starts_with(provider, '{LIGER_PREFIX}'))"
    rows = con.execute(
        f"SELECT DISTINCT gpu FROM runs WHERE gpu IN (SELECT unnest($g)) "
        f"GROUP BY gpu, partition_id HAVING bool_or({liger}) AND NOT bool_or(NOT {liger})",
        {"g": gpus},
    ).fetchall()
    return {str(r[0]) for r in rows}


def plan_gpu(
    points: pl.DataFrame, fresh: pl.DataFrame, options: JudgeOptions, *, together: bool
) -> list[Region]:
    """The regions of one GPU (module docstring): ``points`` its stored session points,
    ``fresh`` its new runs' first time per kernel; ``together``: one cut for every kernel
    (a partition without baselines: GPU-wide controls)."""
    gpu = str(fresh["gpu"][0])
    kernels = sorted({*fresh["kernel"].to_list(), *points["kernel"].unique().to_list()})
    first = dict(fresh.select("kernel", "first").iter_rows())
    groups = [kernels] if together else [[k] for k in kernels if k in first]
    regions: list[Region] = []
    for group in groups:
        mine = points.filter(pl.col("kernel").is_in(group))
        t = min(first[k] for k in group if k in first)
        own, since = cut(mine, t, options)
        regions += [Region(gpu, k, own, since) for k in group]
    return regions


def cut(
    points: pl.DataFrame, t: datetime, options: JudgeOptions
) -> tuple[datetime | None, datetime | None]:
    """``(D, D2)`` of the module docstring for a kernel's stored ``points`` and its
    first new run ``t``; ``(None, None)``: the whole kernel."""
    if options.baseline is not None or points.height == 0:
        return None, None
    ordered = points.sort(*SERIES_KEYS, "position")
    if not _monotone(ordered):
        return None, None
    joined = ordered.filter(pl.col("last_observed_at") >= t - options.session_gap)
    if joined.height:
        earliest: datetime = joined["session_start"].min()  # type: ignore[assignment]
        t = min(t, earliest)
    before = ordered.filter(pl.col("session_start") < t)
    last = before.group_by(SERIES_KEYS).agg(pl.col("session_start").last())
    d = midnight(min([t, *last["session_start"].to_list()]))
    ahead = (
        ordered.filter(pl.col("session_start") < d)
        .group_by(SERIES_KEYS)
        .agg(pl.col("session_start").tail(2).first())
    )
    d2 = midnight(min([d, *ahead["session_start"].to_list()]))
    return d, d2


def _monotone(ordered: pl.DataFrame) -> bool:
    """Whether every series' sessions start in the order of its points."""
    if ordered.height == 0:
        return True
    steps = ordered.select(
        (pl.col("session_start").diff().over(SERIES_KEYS) < timedelta(0)).any()
    ).item()
    return not bool(steps)


def region_runs(
    con: duckdb.DuckDBPyConnection, regions: list[Region], options: JudgeOptions
) -> pl.DataFrame:
    """The judgeable runs of every session starting at or after each region's
    ``since`` (read from ``since`` less twice the session gap, so that the sessions
    starting from ``since`` on come out whole)."""
    from kiana.shards.runs import shard_runs

    margin = 2 * options.session_gap
    table = pl.DataFrame(
        [(r.gpu, r.kernel, r.since, None if r.since is None else r.since - margin) for r in regions],
        schema={"gpu": pl.String, "kernel": pl.String, "since": pl.Datetime("us"),
                "read_from": pl.Datetime("us")},
        orient="row",
    )  # fmt: skip
    con.register("_kiana_regions", table.select("gpu", "kernel", "read_from"))
    try:
        runs = shard_runs(
            con,
            where="EXISTS (SELECT 1 FROM _kiana_regions g WHERE g.gpu = runs.gpu AND "
            "g.kernel = runs.kernel AND (g.read_from IS NULL OR runs.observed_at >= g.read_from))",
        )
    finally:
        con.unregister("_kiana_regions")
    runs = runs.with_columns(pl.col("median").cast(pl.Float64).fill_nan(None)).filter(
        (pl.col("status") == "passed") & pl.col("median").is_not_null()
    )
    indexed = runs.with_row_index("_i")
    sessions = assign_sessions(
        indexed.select("_i", *SESSION_SCOPE, "origin", "observed_at"), options.session_gap
    ).join(table.select("gpu", "kernel", "since"), on=["gpu", "kernel"])
    keep = sessions.filter(
        pl.col("since").is_null() | (pl.col("session_start") >= pl.col("since"))
    )["_i"].sort()
    return runs.with_row_index("_i").filter(pl.col("_i").is_in(keep.implode())).drop("_i")


def regions_frame(regions: list[Region]) -> pl.DataFrame:
    """One row per region: ``gpu``, ``kernel``, ``own`` (a session id), ``since``."""
    return pl.DataFrame(
        [(r.gpu, r.kernel, r.own_id, r.since) for r in regions],
        schema={"gpu": pl.String, "kernel": pl.String, "own": pl.String,
                "since": pl.Datetime("us")},
        orient="row",
    )  # fmt: skip


def owned(frame: pl.DataFrame, regions: list[Region], column: str) -> pl.DataFrame:
    """The rows of ``frame`` a region re-judges: ``column`` (a session id) at or after
    its ``own`` (every row of the kernel when None)."""
    table = regions_frame(regions).select("gpu", "kernel", pl.col("own").alias("_own"))
    joined = frame.join(table, on=["gpu", "kernel"], how="inner", maintain_order="left")
    return joined.filter(pl.col("_own").is_null() | (pl.col(column) >= pl.col("_own"))).drop("_own")


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

    new = sorted(set(store.loads(con)) - set(store.stored_loads(con)))
    fresh = fresh_runs(con, new)
    gpus = sorted(set(fresh["gpu"].to_list()))
    con.execute("BEGIN TRANSACTION")
    try:
        store.rejudge(con, options, code_changes, gpus, max_runs=max_runs)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return f"stored judgement updated: {len(gpus)} GPU(s) judged again in full"


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
