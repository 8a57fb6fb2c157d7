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
with a partition without baselines, whose GPU-wide control does, or, with the kernels' code
changes known, with runs of the code under test recorded at a Liger commit, whose
toolchain control does: :mod:`kiana.stats.toolchain`), with ``t`` the
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
  GPU's stored calibration; every GPU's window in one judge) and spliced in
  (:func:`kiana.shards.splice.splice`, which checks the window against what is stored
  where both overlap).  ``D`` and ``D2`` are computed in SQL (:func:`cuts`): only
  aggregates of the stored points leave DuckDB.

Change points are resumed (or searched again) on the partitions whose points changed.  What is
judged again in full instead (exact anyway, only slower; its change points resumed
where they can, :func:`kiana.shards.store.rejudge`): a GPU new to the store; a
GPU whose calibration would change (:func:`kiana.stats.calfit.prefix_size`: its steps
reach the next rung, or ``t`` is at or before the calibration's cut: every step whose value
can change has a session at or after ``t``, and a step is ordered by its later session, so
the steps the calibration is fitted on are untouched when ``t`` comes after its cut); a GPU whose
version labels would be ordered otherwise in the window (labels that are not releases
are placed by time, across kernels), or whose stored series are not in time order (a
later label measured earlier: the window cannot tell where new points go); and every
GPU judged with ``--baseline`` (every session against one: a whole series); and a GPU
with an unstable series, stored or in its window (:mod:`kiana.stats.unstable`: a verdict on
a series' whole history, which a window of its last sessions cannot give); and a GPU with a
renamed workload, stored, in its window, or possible with its new runs (a new slug one
part away from a stored one: :func:`renamed_gpus`, :mod:`kiana.stats.renames`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from kiana.stats.sessions import assign_sessions
from kiana.vocabulary import SESSION_SCOPE

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


#: One row per GPU and kernel re-judged: ``gpu``, ``kernel``, ``own`` (``D``),
#: ``since`` (``D2``) and ``first`` (``t``: the first new run, or the start of the stored
#: session it joins).
CUT_SCHEMA: dict[str, pl.DataType] = {
    "gpu": pl.String(), "kernel": pl.String(), "own": pl.Datetime("us"),
    "since": pl.Datetime("us"), "first": pl.Datetime("us"),
}  # fmt: skip

#: ``(D, D2)`` of the module docstring per group of kernels (``grp``: a kernel, or
#: ``*`` for every kernel of a GPU with a partition without baselines), in SQL over
#: the stored points: only the aggregates leave DuckDB, never a GPU's history.  The
#: stored points are read twice, each time grouped by series once (hashing a series'
#: keys is what costs): ``per`` gives each series' last point before ``t`` (``D`` is the
#: earliest of those of the touched series), ``after`` whether it has a point from
#: ``D`` on, and the sessions of its last two points before ``D`` (the series are in
#: time order, checked before: those are the two latest positions before ``D``).
_CUT_SQL = """
WITH pts AS (
  SELECT p.gpu, g.grp, p.partition_id, p.provider, p.metric, p.position, p.session_start,
         p.last_observed_at
  FROM judged_points p JOIN kiana_groups g USING (gpu, kernel)),
f AS (SELECT g.gpu, g.grp, f.partition_id, f.provider, f.metric, f."first"
      FROM kiana_fresh f JOIN kiana_groups g USING (gpu, kernel)),
t0 AS (SELECT gpu, grp, min("first") AS t0 FROM f GROUP BY ALL),
t AS (SELECT t0.gpu, t0.grp, least(t0.t0, coalesce(min(p.session_start), t0.t0)) AS t
      FROM t0 LEFT JOIN pts p
        ON p.gpu = t0.gpu AND p.grp = t0.grp AND p.last_observed_at >= t0.t0 - $gap
      GROUP BY t0.gpu, t0.grp, t0.t0),
touched AS (SELECT DISTINCT gpu, grp, partition_id, provider, metric FROM f),
per AS (SELECT p.gpu, p.grp, p.partition_id, p.provider, p.metric,
               max(p.session_start) FILTER (WHERE p.session_start < t.t) AS last
        FROM pts p JOIN t USING (gpu, grp) GROUP BY ALL),
d AS (SELECT t.gpu, t.grp, date_trunc('day', least(t.t, coalesce(min(l.last), t.t))) AS d
      FROM t LEFT JOIN (per JOIN touched USING (gpu, grp, partition_id, provider, metric)) l
        USING (gpu, grp)
      GROUP BY t.gpu, t.grp, t.t),
after AS (SELECT p.gpu, p.grp, bool_or(p.session_start >= d.d) AS live,
                 list_min(max_by(p.session_start, p.position, 2)
                          FILTER (WHERE p.session_start < d.d)) AS a
          FROM pts p JOIN d USING (gpu, grp) GROUP BY p.gpu, p.grp, p.partition_id, p.provider, p.metric),
since AS (SELECT d.gpu, d.grp, d.d,
                 date_trunc('day', least(d.d, coalesce(min(a.a) FILTER (WHERE a.live), d.d))) AS s
          FROM d LEFT JOIN after a USING (gpu, grp) GROUP BY d.gpu, d.grp, d.d)
SELECT g.gpu, g.kernel, since.d AS own, since.s AS since, t.t AS "first"
FROM since JOIN t USING (gpu, grp) JOIN kiana_groups g USING (gpu, grp) ORDER BY ALL
"""

#: The GPUs with a stored series whose sessions do not start in the order of its points
#: (its session starts in the order of its positions are not sorted): one group-by of
#: the stored points, not a join of each point with the next.
_DISORDERED_SQL = """
SELECT DISTINCT gpu FROM (
  SELECT gpu, list(session_start ORDER BY position) AS starts FROM judged_points
  WHERE gpu IN (SELECT unnest($gpus)) GROUP BY gpu, partition_id, provider, metric)
WHERE starts <> list_sort(starts)
"""


#: The GPUs with a partition without a baseline's judgeable run (its steps take the
#: GPU-wide control, which crosses kernels).
_UNCONTROLLED_SQL = """
SELECT DISTINCT gpu FROM (
  SELECT gpu, partition_id, bool_or(role <> 'subject') AS controlled FROM runs
  WHERE gpu IN (SELECT unnest($gpus)) AND status = 'passed' AND median IS NOT NULL
    AND NOT isnan(median)
  GROUP BY ALL)
WHERE NOT controlled
"""


#: The GPUs whose code under test has runs recorded at a Liger commit: their findings'
#: toolchain control is the common move of the provider's other kernels between the
#: same sittings (:mod:`kiana.stats.toolchain`), which crosses kernels.
_SITTINGS_SQL = """
SELECT DISTINCT r.gpu FROM runs r JOIN labels l USING (run_id)
WHERE r.gpu IN (SELECT unnest($gpus)) AND r.role = 'subject' AND l.key = 'liger_commit'
"""


def _kernels_known(code_changes: CodeChanges | None) -> bool:
    """Whether ``code_changes`` says where the code under test changed (what the
    toolchain control needs, :mod:`kiana.stats.toolchain`)."""
    from kiana.stats.unstable import KernelChanges

    return isinstance(code_changes, KernelChanges)


def cuts(
    con: duckdb.DuckDBPyConnection,
    fresh: pl.DataFrame,
    gpus: list[str],
    options: JudgeOptions,
    kernels_known: bool = False,
) -> pl.DataFrame:
    """``(D, D2)`` of the module docstring per kernel with new runs of each of ``gpus``
    (every kernel of a GPU with a partition without baselines, whose GPU-wide control
    crosses kernels: one cut for all of them), from the stored points and the new runs'
    series (``fresh``: :func:`fresh_runs`).  A GPU left out is judged again whole: with
    ``--baseline``, no stored point, a series not in time order (the window cannot
    tell where new points go), or a stored unstable series."""
    if options.baseline is not None or not gpus:
        return pl.DataFrame(schema=CUT_SCHEMA)
    listed = {"gpus": gpus}
    stored = {g for (g,) in con.execute(
        "SELECT DISTINCT gpu FROM judged_points WHERE gpu IN (SELECT unnest($gpus))", listed
    ).fetchall()}  # fmt: skip
    disordered = {g for (g,) in con.execute(_DISORDERED_SQL, listed).fetchall()}
    # An unstable series is a verdict on its whole history (kiana.stats.unstable), which
    # a window does not hold: its GPU is judged again whole.
    unstable = {g for (g,) in con.execute(
        "SELECT DISTINCT gpu FROM judged_outliers WHERE kind = 'unstable'"
    ).fetchall()}  # fmt: skip
    chosen = [g for g in gpus if g in stored and g not in disordered and g not in unstable]
    renamed = renamed_gpus(con, fresh, chosen)
    chosen = [g for g in chosen if g not in renamed]
    together = {g for (g,) in con.execute(_UNCONTROLLED_SQL, {"gpus": chosen}).fetchall()}
    if kernels_known:  # the toolchain control needs the kernels' code changes
        together |= {g for (g,) in con.execute(_SITTINGS_SQL, {"gpus": chosen}).fetchall()}
    known: dict[str, set[str]] = {}
    for g, k in con.execute(
        "SELECT DISTINCT gpu, kernel FROM judged_points WHERE gpu IN (SELECT unnest($gpus))",
        {"gpus": sorted(together)},
    ).fetchall():
        known.setdefault(str(g), set()).add(str(k))
    rows: list[tuple[str, str, str]] = []
    for gpu in chosen:
        mine = fresh.filter(pl.col("gpu") == gpu)["kernel"].unique().sort().to_list()
        if gpu in together:
            rows += [(gpu, k, "*") for k in sorted({*mine, *known.get(gpu, set())})]
        else:
            rows += [(gpu, k, k) for k in mine]
    if not rows:
        return pl.DataFrame(schema=CUT_SCHEMA)
    groups = pl.DataFrame(rows, schema=["gpu", "kernel", "grp"], orient="row")
    con.register("kiana_groups", groups.to_arrow())
    con.register("kiana_fresh", fresh.to_arrow())
    try:
        found: pl.DataFrame = con.sql(_CUT_SQL, params={"gap": options.session_gap}).pl()
    finally:
        con.unregister("kiana_groups")
        con.unregister("kiana_fresh")
    return found.select(pl.col(c).cast(t) for c, t in CUT_SCHEMA.items())


def renamed_gpus(con: duckdb.DuckDBPyConnection, fresh: pl.DataFrame, gpus: list[str]) -> set[str]:
    """The ``gpus`` with a stored workload rename, or whose new runs (``fresh``) bring a
    partition whose slug is a stored one of its kernel and pass with one part added or
    taken off (:func:`kiana.stats.renames.related`): a rename is a verdict on a
    series' whole history (:mod:`kiana.stats.renames`), which a window may not hold."""
    from kiana.stats.renames import related

    listed = {"gpus": gpus}
    found = {str(g) for (g,) in con.execute(
        "SELECT DISTINCT gpu FROM judged_renames WHERE gpu IN (SELECT unnest($gpus))", listed
    ).fetchall()}  # fmt: skip
    known: dict[tuple[str, str, str], set[str]] = {}
    ids: set[str] = set()
    for gpu, kernel, pass_, workload, pid in con.execute(
        'SELECT DISTINCT gpu, kernel, "pass", workload, partition_id FROM judged_points '
        "WHERE gpu IN (SELECT unnest($gpus))",
        listed,
    ).fetchall():
        known.setdefault((str(gpu), str(kernel), str(pass_)), set()).add(str(workload))
        ids.add(str(pid))
    new = sorted(set(fresh.filter(pl.col("gpu").is_in(gpus))["partition_id"].to_list()) - ids)
    if not new:
        return found
    for gpu, kernel, pass_, workload in con.execute(
        'SELECT DISTINCT gpu, kernel, "pass", workload FROM runs '
        "WHERE partition_id IN (SELECT unnest($p))",
        {"p": new},
    ).fetchall():
        stored = known.get((str(gpu), str(kernel), str(pass_)), set())
        if any(related(str(workload), w) for w in stored):
            found.add(str(gpu))
    return found


def window_runs(
    con: duckdb.DuckDBPyConnection, cut: pl.DataFrame, options: JudgeOptions
) -> pl.DataFrame:
    """The judgeable runs of the sessions starting at or after each GPU's and kernel's
    ``since`` (:func:`cuts`; read from ``since`` less twice the session gap, so that
    those sessions come out whole), of every GPU of ``cut`` at once: a join of the
    runs with the cut (one row per GPU and kernel), and the constant conditions it
    implies (the GPUs listed, from the earliest bound on), which DuckDB checks against
    each row group's minimum and maximum before reading it (at 10M runs an ``EXISTS``
    over the cut read every run)."""
    from kiana.shards.runs import Shard, shard_runs

    margin = 2 * options.session_gap
    bounds = cut.select("gpu", "kernel", (pl.col("since") - margin).alias("_from"))
    con.register("kiana_window", bounds.to_arrow())
    try:
        runs = shard_runs(
            con,
            Shard(tuple(sorted(set(bounds["gpu"].to_list()))), 0),
            join="JOIN kiana_window w ON w.gpu = runs.gpu AND w.kernel = runs.kernel "
            "AND runs.observed_at >= w._from",
            where="runs.observed_at >= $from",
            params={"from": bounds["_from"].min()},
        )
    finally:
        con.unregister("kiana_window")
    runs = runs.with_columns(pl.col("median").cast(pl.Float64).fill_nan(None)).filter(
        (pl.col("status") == "passed") & pl.col("median").is_not_null()
    )
    on = ["gpu", "kernel"]
    runs = runs.join(cut.select(*on, "since"), on=on, how="left", maintain_order="left")
    indexed = runs.with_row_index("_i")
    sessions = assign_sessions(
        indexed.select("_i", *SESSION_SCOPE, "origin", "observed_at", "since"), options.session_gap
    )
    keep = sessions.filter(pl.col("session_start") >= pl.col("since"))["_i"].sort()
    return indexed.filter(pl.col("_i").is_in(keep.implode())).drop("_i", "since")


#: Splice new sessions into a GPU's stored judgement (False: re-judge touched GPUs whole).
SPLICE = True
#: DuckDB's memory during an update (unless set lower): its queries over the stored
#: judgement (the cuts, the windows' runs, the rows replaced) spill beyond it, instead of
#: DuckDB keeping what it read up to 80% of RAM (6.5 GiB at 10M runs before the windows
#: were judged).  What the update's transaction holds comes on top of the share the GPUs
#: judged again whole are read with (:func:`kiana.shards.share.held`).
UPDATE_SHARE = 1 << 30


def update(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
    *,
    max_runs: int | None = None,
) -> str:
    """Bring the stored judgement up to the runs of ``con`` (module docstring), in one
    transaction; what was re-judged, in words."""
    from kiana.shards import store, tables
    from kiana.shards.share import duckdb_share, release
    from kiana.shards.splice import splice
    from kiana.shards.unit import GPU_SCHEMA

    new = sorted(set(tables.loads(con)) - set(store.stored_loads(con)))
    fresh = fresh_runs(con, new)
    gpus = sorted(set(fresh["gpu"].to_list()))
    known = {str(g) for (g,) in con.execute("SELECT gpu FROM judged_gpus").fetchall()}
    with duckdb_share(con, UPDATE_SHARE):  # restored after, on a failure too
        con.execute("BEGIN TRANSACTION")
        try:
            chosen = [g for g in gpus if g in known and SPLICE]
            found = cuts(con, fresh, chosen, options, _kernels_known(code_changes))
            spliced: list[str] = []
            if found.height:
                window = window_runs(con, found, options)
                spliced = splice(con, window, found, options, code_changes)
                del window
            whole = [g for g in gpus if g not in spliced]
            store.rejudge(con, options, code_changes, whole, max_runs=max_runs)
            if not whole:  # every GPU spliced: the loads still need recording
                tables.finish(con, options, pl.DataFrame(schema=GPU_SCHEMA), [])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    release(con)
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
    from kiana.shards.share import release
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
        release(con)
        note = "judged in full and stored"
    elif status == "stale":
        note = update(con, options, code_changes, max_runs=max_runs)
    else:
        note = "the stored judgement, read"
    return StoredJudged(con, options, note)
