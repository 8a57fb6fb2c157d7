"""The stored judgement brought up to a new load by judging only the newest sessions
of each GPU (the windows of :mod:`kiana.shards.incremental`) and splicing them in.

:func:`splice` judges the runs of every GPU's sessions starting at or after ``D2``
in one judge (each GPU with its stored calibration: nothing the judge computes
crosses GPUs), then, per GPU, checks that the window reproduces what is stored where
both overlap (the points from ``D2`` to ``D``: the same sessions, positions, levels and
noise) and that nothing moved that the window cannot see (the calibration's steps and
cut, the order of the version labels, a partition's baselines), replaces every stored
row of the GPUs that pass from ``D`` on (steps, findings, outliers, A/A steps, points)
with the window's, and resumes the change points of the partitions whose points
changed (:mod:`kiana.shards.resumed`).  What the checks need of the whole history
(counts, positions, firsts) is aggregated in DuckDB: only the window and the stored
points from ``D2`` on are read.  A GPU it cannot vouch for is left out of the list it
returns (nothing of it was written): the caller judges it again in full
(:func:`kiana.shards.store.rejudge`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import polars as pl

from kiana.shards.unit import POS, Unit, judge_unit, query
from kiana.stats.calfit import prefix_size
from kiana.stats.calibration import Calibration
from kiana.stats.sessions import SESSION_FORMAT
from kiana.vocabulary import SERIES_KEYS, UNSTABLE

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import CodeChanges, JudgeOptions

#: What must agree between the stored points and the window's where both have them.
_SAME = ("session", "origin", "version", "position", "cp_index", "n_runs", "conflict",
         "log_median", "sigma")  # fmt: skip
_JUDGEABLE = "status = 'passed' AND median IS NOT NULL AND NOT isnan(median)"
_ON = ("gpu", "kernel")
#: The cut as DuckDB reads it while splicing (``own_id``: ``own`` as a session id).
CUT_VIEW = "kiana_cut"
#: Per stored series of the cut's kernels: its points before ``since`` (all, and those
#: with a level), the last position before ``own``, and its points with a level.
_FACTS_SQL = f"""
SELECT p.partition_id, p.provider, p.metric,
       count(*) FILTER (WHERE p.session_start < c.since)::BIGINT AS _at,
       count(p.cp_index) FILTER (WHERE p.session_start < c.since)::BIGINT AS _cp,
       max(p.position) FILTER (WHERE p.session_start < c.own) AS _last,
       count(p.cp_index)::BIGINT AS _levels
FROM judged_points p JOIN {CUT_VIEW} c USING (gpu, kernel) GROUP BY ALL
"""


@dataclasses.dataclass(frozen=True)
class Window:
    """The judgement of the windows and what the checks read of the store: ``unit``
    (its points moved past the stored ones before the window), the stored ``tail``
    (points from ``since`` on), per series ``facts`` (:data:`_FACTS_SQL`), per GPU
    and version the first judgeable run of the window (``firsts``) and of every run
    (``every``), per GPU its ``judged_gpus`` row (``gpus``), and per partition of the
    window whether a stored point of it is a baseline's (``bases``, ``_s``)."""

    unit: Unit
    tail: pl.DataFrame
    facts: pl.DataFrame
    firsts: pl.DataFrame
    every: pl.DataFrame
    gpus: dict[str, dict[str, object]]
    bases: pl.DataFrame


def splice(
    con: duckdb.DuckDBPyConnection,
    window: pl.DataFrame,
    cut: pl.DataFrame,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
) -> list[str]:
    """Splice the judgement of ``window`` (the runs of each GPU's sessions starting at
    or after each kernel's ``since``: ``cut``) into the stored one from each kernel's
    ``own`` on (module docstring); the GPUs spliced (the others were not written)."""
    from kiana.shards import resumed
    from kiana.shards.tables import finish

    names = sorted(set(cut["gpu"].to_list()))
    rows = query(con, "SELECT * FROM judged_gpus WHERE gpu IN (SELECT unnest($g))", {"g": names})
    gpus = {str(r["gpu"]): r for r in rows.iter_rows(named=True)}
    # the calibration rests on the steps up to its cut: none may change (module docstring
    # of kiana.shards.incremental: every changed step has a session at or after ``first``)
    earliest = dict(cut.group_by("gpu").agg(pl.col("first").min()).iter_rows())
    present = set(window["gpu"].unique().to_list())
    names = [
        g for g in names
        if g in gpus and gpus[g]["cut"] is not None and earliest[g] > gpus[g]["cut"]
        and g in present
    ]  # fmt: skip
    if not names:
        return []
    cut = cut.filter(pl.col("gpu").is_in(names))
    with _viewed(con, cut):
        mine = window.filter(pl.col("gpu").is_in(names))
        judged = _judge(con, mine, cut, options, code_changes, gpus)
        steps = _steps_after(con, judged.unit, cut)
        good = [
            g for g in names
            if g in steps and _agrees(judged, cut, g, steps[g]) and not _unstable(judged, g)
            and not _renamed(judged, g)
        ]  # fmt: skip
    if not good:
        return []
    cut = cut.filter(pl.col("gpu").is_in(good))
    with _viewed(con, cut):
        changed = _owned(judged.unit.points, cut, "session_start")
        parts = changed["partition_id"].unique().sort().to_list()
        before = resumed.stored_state(con, parts, judged.tail, judged.facts, cut)
        _replace(con, cut, judged)
        resumed.search_again(con, parts, before, options)
    judged_runs = dict(
        con.execute(
            f"SELECT gpu, count(*) FROM runs WHERE gpu IN (SELECT unnest($g)) AND {_JUDGEABLE} "
            "GROUP BY gpu",
            {"g": good},
        ).fetchall()
    )
    frame = pl.DataFrame(
        [{"gpu": g, "steps": steps[g], "prefix": gpus[g]["prefix"], "cut": gpus[g]["cut"],
          "runs_judged": int(judged_runs.get(g, 0))} for g in good],
        schema=judged.unit.gpus.schema,
    )  # fmt: skip
    finish(con, options, frame, good)
    return good


def _unstable(judged: Window, gpu: str) -> bool:
    """Whether the window of ``gpu`` holds an unstable series: a verdict on a series' whole
    history (:mod:`kiana.stats.unstable`), which a window of its last sessions cannot give;
    the GPU is judged again whole instead."""
    outliers = judged.unit.outliers
    return bool(outliers.filter((pl.col("gpu") == gpu) & (pl.col("kind") == UNSTABLE)).height)


def _renamed(judged: Window, gpu: str) -> bool:
    """Whether the window of ``gpu`` joins a renamed workload (:mod:`kiana.stats.renames`:
    a verdict on a series' whole history); the GPU is judged again whole instead."""
    return bool(judged.unit.renames.filter(pl.col("gpu") == gpu).height)


class _viewed:
    """``cut`` (with ``own_id``) registered as :data:`CUT_VIEW` while in the block."""

    def __init__(self, con: duckdb.DuckDBPyConnection, cut: pl.DataFrame) -> None:
        self.con = con
        self.cut = cut.with_columns(pl.col("own").dt.strftime(SESSION_FORMAT).alias("own_id"))

    def __enter__(self) -> None:
        self.con.register(CUT_VIEW, self.cut.to_arrow())

    def __exit__(self, *_: object) -> None:
        self.con.unregister(CUT_VIEW)


def _judge(
    con: duckdb.DuckDBPyConnection,
    window: pl.DataFrame,
    cut: pl.DataFrame,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
    gpus: dict[str, dict[str, object]],
) -> Window:
    """Judge every GPU's window at once with the GPUs' stored calibrations; read the
    stored points from ``since`` on, the per-series facts and the version firsts."""
    names: list[str] = cut["gpu"].unique().to_list()
    calibration = Calibration(
        query(
            con, "SELECT * FROM judged_calibration WHERE gpu IN (SELECT unnest($g))", {"g": names}
        )
    )
    plain = dataclasses.replace(options, changepoints=False)
    _, unit = judge_unit(window, plain, code_changes, calibration)
    facts = query(con, _FACTS_SQL)
    tail = query(
        con,
        f"SELECT p.* FROM judged_points p JOIN {CUT_VIEW} c USING (gpu, kernel) "
        "WHERE p.session_start >= c.since",
    )
    points = _shift(unit.points, facts, "position", "cp_index")
    firsts = window.group_by("gpu", "version").agg(pl.col("observed_at").min())
    every = query(
        con,
        f"SELECT gpu, version, min(observed_at) AS observed_at FROM runs WHERE {_JUDGEABLE} "
        "AND gpu IN (SELECT unnest($g)) GROUP BY ALL",
        {"g": names},
    )
    bases = query(  # one scan of the stored points for every GPU's check
        con,
        "SELECT partition_id, bool_or(NOT conflict AND NOT is_subject) AS _s FROM judged_points "
        "WHERE partition_id IN (SELECT unnest($p)) GROUP BY 1",
        {"p": points["partition_id"].unique().sort().to_list()},
    )
    unit = dataclasses.replace(unit, points=points)
    return Window(unit, tail, facts, firsts, every, gpus, bases)


def _steps_after(con: duckdb.DuckDBPyConnection, unit: Unit, cut: pl.DataFrame) -> dict[str, int]:
    """Per GPU whose stored step count is what ``judged_gpus`` says, its steps and A/A
    steps once the window's replace the stored ones from ``own`` on."""
    counts = con.execute(
        f"""SELECT gpu, count(*), count(*) FILTER (WHERE t.to_session >= c.own_id) FROM (
              SELECT gpu, kernel, to_session FROM judged_steps
              WHERE gpu IN (SELECT gpu FROM {CUT_VIEW}) UNION ALL
              SELECT gpu, kernel, to_session FROM judged_aa
              WHERE gpu IN (SELECT gpu FROM {CUT_VIEW})) t
            LEFT JOIN {CUT_VIEW} c USING (gpu, kernel) GROUP BY gpu"""
    ).fetchall()
    stored = {str(g): int(n) for g, n, _ in counts}
    owned = {str(g): int(n) for g, _, n in counts}
    new = pl.concat([_owned(unit.steps, cut, "to_session").select("gpu"),
                     _owned(unit.aa, cut, "to_session").select("gpu")])  # fmt: skip
    added = dict(new.group_by("gpu").len().iter_rows())
    rows = con.execute(
        f"SELECT gpu, steps FROM judged_gpus WHERE gpu IN (SELECT gpu FROM {CUT_VIEW})"
    ).fetchall()
    return {
        str(g): stored.get(str(g), 0) - owned.get(str(g), 0) + int(added.get(g, 0))
        for g, n in rows
        if stored.get(str(g), 0) == int(n)
    }


def _agrees(judged: Window, cut: pl.DataFrame, gpu: str, steps: int) -> bool:
    """Whether ``gpu``'s window can be spliced in (module docstring), ``steps``: its
    steps after the splice."""
    mine = cut.filter(pl.col("gpu") == gpu)
    points = judged.unit.points.filter(pl.col("gpu") == gpu)
    tail = judged.tail.filter(pl.col("gpu") == gpu)
    if not _overlap_agrees(tail, points, mine, judged.facts):
        return False
    if not _ranks_agree(*(f.filter(pl.col("gpu") == gpu) for f in (judged.firsts, judged.every))):
        return False
    prefix = judged.gpus[gpu]["prefix"]
    return _bases_agree(points, judged.bases) and prefix_size(steps) == int(prefix)  # type: ignore[call-overload]


def _owned(frame: pl.DataFrame, cut: pl.DataFrame, column: str) -> pl.DataFrame:
    """The rows of ``frame`` its GPU's and kernel's cut re-judges: ``column`` (a session
    id, or a session's start) at or after the kernel's ``own``."""
    own = pl.col("_own")
    if frame.schema[column] == pl.String:
        own = own.dt.strftime(SESSION_FORMAT)
    table = cut.select(*_ON, pl.col("own").alias("_own"))
    joined = frame.join(table, on=list(_ON), how="inner", maintain_order="left")
    return joined.filter(pl.col(column) >= own).drop("_own")


def _shift(frame: pl.DataFrame, facts: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """``frame`` with its series' positions (``columns``: a position, then optionally a
    change-point index) moved past the stored points before the window (``facts``)."""
    offsets = facts.select(*SERIES_KEYS, "_at", "_cp")
    joined = frame.join(offsets, on=list(SERIES_KEYS), how="left", maintain_order="left")
    moved = [pl.col(columns[0]) + pl.col("_at").fill_null(0)]
    if len(columns) > 1:
        moved.append(pl.col(columns[1]) + pl.col("_cp").fill_null(0))
    return joined.with_columns(moved).drop("_at", "_cp")


def _overlap_agrees(
    tail: pl.DataFrame, new: pl.DataFrame, cut: pl.DataFrame, facts: pl.DataFrame
) -> bool:
    """Whether the window's points before their kernel's ``own`` are exactly the stored
    ones from ``since`` to ``own`` (``tail``: the stored points from ``since`` on), and
    every window point from ``own`` on comes after them in its series."""
    key = [*SERIES_KEYS, "session_start"]
    old = tail.join(cut, on=list(_ON), how="inner")
    new = new.join(cut, on=list(_ON), how="left")
    if new["own"].null_count():
        return False
    nan = pl.col(pl.Float64).fill_nan(None)  # NaN is NaN here: the same bits
    a = old.filter(pl.col("session_start") < pl.col("own")).select(*key, *_SAME)
    b = new.filter(pl.col("session_start") < pl.col("own")).select(*key, *_SAME)
    if not a.sort(key).with_columns(nan).equals(b.sort(key).with_columns(nan)):
        return False
    later = new.filter(pl.col("session_start") >= pl.col("own"))
    later = later.join(facts.select(*SERIES_KEYS, "_last"), on=list(SERIES_KEYS), how="left")
    return not later.filter(pl.col("position") <= pl.col("_last")).height


def _bases_agree(new: pl.DataFrame, stored: pl.DataFrame) -> bool:
    """Whether each partition of the window has a baseline's point there exactly when it
    has one among all its points, stored or new (the judge falls back on the GPU-wide
    control where a partition has none: the window must see what every run shows);
    ``stored``: per partition whether a stored point is a baseline's (``_s``)."""
    base = ~pl.col("conflict") & ~pl.col("is_subject")
    window = new.group_by("partition_id").agg(base.any().alias("_w"))
    joined = window.join(stored, on="partition_id", how="left")
    whole = pl.col("_w") | pl.col("_s").fill_null(False)
    return bool(joined.select((pl.col("_w") == whole).all()).item())


def _ranks_agree(window: pl.DataFrame, every: pl.DataFrame) -> bool:
    """Whether the window's version labels are in the order the GPU's runs give them
    (``window``, ``every``: the first judgeable run of each version in each)."""
    from kiana.stats.versions import version_table

    mine = version_table(window.select("version", "observed_at"))
    ranks = mine.join(version_table(every.select("version", "observed_at")), on="version",
                      how="left").sort("version_rank")  # fmt: skip
    right = ranks["version_rank_right"]
    return bool(right.is_sorted()) and right.null_count() == 0


def _replace(con: duckdb.DuckDBPyConnection, cut: pl.DataFrame, judged: Window) -> None:
    """Every stored row of the cut's GPUs from its kernel's ``own`` on replaced with the
    window's."""
    from kiana.shards.tables import insert

    tables = (("judged_steps", "to_session", "own_id"), ("judged_findings", "to_session", "own_id"),
              ("judged_aa", "to_session", "own_id"), ("judged_outliers", "session", "own_id"),
              ("judged_points", "session_start", "own"))  # fmt: skip
    unit = judged.unit
    for table, column, own in tables:
        # ``t.{column} >= (the earliest own)`` first: a comparison that leaves the few rows
        # of the newest days to the join with the cut, instead of every stored row
        con.execute(
            f"DELETE FROM {table} t WHERE gpu IN (SELECT gpu FROM {CUT_VIEW}) "
            f"AND t.{column} >= (SELECT min({own}) FROM {CUT_VIEW}) AND EXISTS "
            f"(SELECT 1 FROM {CUT_VIEW} c WHERE c.gpu = t.gpu AND c.kernel = t.kernel "
            f"AND t.{column} >= c.{own})"
        )
        name = table.removeprefix("judged_")
        frame = _owned(getattr(unit, name), cut, column)
        if POS in frame.columns:
            frame = _shift(frame, judged.facts, POS)
        insert(con, table, frame)
