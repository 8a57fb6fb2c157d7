"""One GPU's stored judgement brought up to a new load by judging only its newest
sessions (the window of :mod:`kiana.shards.incremental`) and splicing them in.

:func:`splice_gpu` judges the runs of the sessions starting at or after ``D2`` with the
GPU's stored calibration, checks that the window reproduces what is stored where both
overlap (the points from ``D2`` to ``D``: the same sessions, positions, levels and
noise) and that nothing moved that the window cannot see (the calibration's steps and
cut, the order of the version labels, a series' sessions in time order), then replaces
every stored row of the GPU from ``D`` on (steps, findings, outliers, A/A steps,
points) with the window's, and searches the change points of the partitions whose
points changed again.  Anything it cannot vouch for returns False: the caller judges
the GPU again in full (:func:`kiana.shards.store.rejudge`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from kiana.shards import creep
from kiana.shards.unit import (
    POS,
    Unit,
    changepoint_rows,
    cp_series,
    judge_unit,
    query,
    segments,
)
from kiana.stats.calfit import prefix_size
from kiana.stats.calibration import Calibration
from kiana.stats.sessions import SESSION_FORMAT
from kiana.vocabulary import SERIES_KEYS

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import CodeChanges, JudgeOptions

#: What must agree between the stored points and the window's where both have them.
_SAME = ("session", "origin", "version", "position", "cp_index", "n_runs", "conflict",
         "log_median", "sigma")  # fmt: skip
_JUDGEABLE = "status = 'passed' AND median IS NOT NULL AND NOT isnan(median)"
_SUBJECT = "(role = 'subject')"


def stored(con: duckdb.DuckDBPyConnection, table: str, gpu: str) -> pl.DataFrame:
    frame = query(con, f"SELECT * FROM {table} WHERE gpu = $g", {"g": gpu})
    return frame


def has_baselines(con: duckdb.DuckDBPyConnection, gpu: str) -> bool:
    """Whether every partition of ``gpu`` has a baseline's judgeable run (else its Liger
    steps take the GPU-wide control, which crosses kernels)."""
    rows = con.execute(
        f"SELECT count(*) FROM (SELECT partition_id FROM runs WHERE gpu = $g AND {_JUDGEABLE} "
        f"GROUP BY partition_id HAVING NOT bool_or(NOT {_SUBJECT}))",
        {"g": gpu},
    ).fetchall()
    return int(rows[0][0]) == 0


def splice_gpu(
    con: duckdb.DuckDBPyConnection,
    gpu: str,
    window: pl.DataFrame,
    cut: pl.DataFrame,
    old_points: pl.DataFrame,
    options: JudgeOptions,
    code_changes: CodeChanges | None,
) -> bool:
    """Splice the judgement of ``window`` (the runs of ``gpu``'s sessions starting at
    or after each kernel's ``since``: ``cut``) into the stored one from each kernel's
    ``own`` on (module docstring); False when it cannot be vouched for (nothing was
    written then).  ``old_points``: the GPU's stored points."""
    (row,) = (
        con.sql("SELECT * FROM judged_gpus WHERE gpu = $g", params={"g": gpu}).pl().rows(named=True)
    )
    if row["cut"] is None or cut["own"].min() <= row["cut"] or window.height == 0:
        return False
    calibration = Calibration(stored(con, "judged_calibration", gpu))
    plain = dataclasses.replace(options, changepoints=False)
    _, unit = judge_unit(window, plain, code_changes, calibration)
    offsets = _offsets(old_points, cut)
    points = _shift(unit.points, offsets, "position", "cp_index")
    if not _overlap_agrees(old_points, points, cut) or not _ranks_agree(con, gpu, window):
        return False
    if not _bases_agree(old_points, points):
        return False
    counted = _owned(_step_keys(con, gpu), cut, "to_session").height
    if _step_keys(con, gpu).height != int(row["steps"]):
        return False
    new_steps = _owned(unit.steps, cut, "to_session").height
    new_steps += _owned(unit.aa, cut, "to_session").height
    steps = int(row["steps"]) - counted + new_steps
    if prefix_size(steps) != int(row["prefix"]):
        return False
    _replace(con, gpu, cut, unit, offsets, points)
    changed = _owned(points, cut, "session_start")
    _changepoints(con, gpu, old_points, changed, options)
    (judged,) = con.execute(
        f"SELECT count(*) FROM runs WHERE gpu = $g AND {_JUDGEABLE}", {"g": gpu}
    ).fetchall()[0]
    gpus = pl.DataFrame(
        [{"gpu": gpu, "steps": steps, "prefix": row["prefix"], "cut": row["cut"],
          "runs_judged": int(judged)}],
        schema=unit.gpus.schema,
    )  # fmt: skip
    from kiana.shards.store import finish

    finish(con, options, gpus, [gpu])
    return True


def _step_keys(con: duckdb.DuckDBPyConnection, gpu: str) -> pl.DataFrame:
    """The kernel and later session of every stored step and A/A step of ``gpu``."""
    return query(
        con,
        "SELECT kernel, to_session FROM judged_steps WHERE gpu = $g UNION ALL "
        "SELECT kernel, to_session FROM judged_aa WHERE gpu = $g",
        {"g": gpu},
    )


def _owned(frame: pl.DataFrame, cut: pl.DataFrame, column: str) -> pl.DataFrame:
    """The rows of ``frame`` its kernel's cut re-judges: ``column`` (a session id, or a
    session's start) at or after the kernel's ``own``."""
    own = pl.col("_own")
    if frame.schema[column] == pl.String:
        own = own.dt.strftime(SESSION_FORMAT)
    table = cut.select("kernel", pl.col("own").alias("_own"))
    joined = frame.join(table, on="kernel", how="inner", maintain_order="left")
    return joined.filter(pl.col(column) >= own).drop("_own")


def _offsets(points: pl.DataFrame, cut: pl.DataFrame) -> pl.DataFrame:
    """Per series, the stored points before its kernel's ``since`` (all, and those with
    a level): what the window's positions and change-point indices start after."""
    joined = points.join(cut.select("kernel", "since"), on="kernel", how="inner")
    before = joined.filter(pl.col("session_start") < pl.col("since"))
    return before.group_by(SERIES_KEYS).agg(
        pl.len().cast(pl.Int64).alias("_at"),
        pl.col("cp_index").is_not_null().sum().cast(pl.Int64).alias("_cp"),
    )


def _shift(frame: pl.DataFrame, offsets: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """``frame`` with its series' positions (``columns``: a position, then optionally a
    change-point index) moved past the stored points before the window."""
    joined = frame.join(offsets, on=list(SERIES_KEYS), how="left", maintain_order="left")
    moved = [pl.col(columns[0]) + pl.col("_at").fill_null(0)]
    if len(columns) > 1:
        moved.append(pl.col(columns[1]) + pl.col("_cp").fill_null(0))
    return joined.with_columns(moved).drop("_at", "_cp")


def _overlap_agrees(old: pl.DataFrame, new: pl.DataFrame, cut: pl.DataFrame) -> bool:
    """Whether the window's points before their kernel's ``own`` are exactly the stored
    ones from ``since`` to ``own``, and every window point from ``own`` on comes after
    them in its series."""
    key = [*SERIES_KEYS, "session_start"]
    old = old.join(cut, on="kernel", how="inner")
    new = new.join(cut, on="kernel", how="left")
    if new["own"].null_count():
        return False
    mid = (pl.col("session_start") >= pl.col("since")) & (pl.col("session_start") < pl.col("own"))
    nan = pl.col(pl.Float64).fill_nan(None)  # NaN is NaN here: the same bits
    a = old.filter(mid).select(*key, *_SAME).sort(key).with_columns(nan)
    b = new.filter(pl.col("session_start") < pl.col("own")).select(*key, *_SAME)
    if not a.equals(b.sort(key).with_columns(nan)):
        return False
    kept = (
        old.filter(pl.col("session_start") < pl.col("own"))
        .group_by(SERIES_KEYS)
        .agg(pl.col("position").max().alias("_last"))
    )
    later = new.filter(pl.col("session_start") >= pl.col("own"))
    later = later.join(kept, on=list(SERIES_KEYS), how="left")
    return not later.filter(pl.col("position") <= pl.col("_last")).height


def _bases_agree(old: pl.DataFrame, new: pl.DataFrame) -> bool:
    """Whether each partition of the window has a baseline's point there exactly when it
    has one among all its points (the judge falls back on the GPU-wide control where a
    partition has none: the window must see what every run shows)."""
    base = ~pl.col("conflict") & ~pl.col("is_subject")
    window = new.group_by("partition_id").agg(base.any().alias("_w"))
    every = pl.concat([old.select("partition_id", "conflict", "is_subject"),
                       new.select("partition_id", "conflict", "is_subject")])  # fmt: skip
    whole = every.group_by("partition_id").agg(base.any().alias("_a"))
    joined = window.join(whole, on="partition_id", how="left")
    return bool((joined["_w"] == joined["_a"]).all())


def _ranks_agree(con: duckdb.DuckDBPyConnection, gpu: str, window: pl.DataFrame) -> bool:
    """Whether the window's version labels are in the order the GPU's runs give them."""
    from kiana.stats.versions import version_table

    firsts = con.sql(
        f"SELECT version, observed_at FROM runs WHERE gpu = $g AND {_JUDGEABLE}",
        params={"g": gpu},
    ).pl()
    whole = version_table(firsts)
    mine = version_table(window.select("version", "observed_at"))
    ranks = mine.join(whole, on="version", how="left").sort("version_rank")
    right = ranks["version_rank_right"]
    return bool(right.is_sorted()) and right.null_count() == 0


def _replace(
    con: duckdb.DuckDBPyConnection,
    gpu: str,
    cut: pl.DataFrame,
    unit: Unit,
    offsets: pl.DataFrame,
    points: pl.DataFrame,
) -> None:
    """Every stored row of ``gpu`` from its kernel's ``own`` on replaced with the
    window's."""
    from kiana.shards.store import insert

    cuts = cut.with_columns(pl.col("own").dt.strftime(SESSION_FORMAT).alias("own_id"))  # noqa: F841
    tables = (("judged_steps", "to_session", "own_id"), ("judged_findings", "to_session", "own_id"),
              ("judged_aa", "to_session", "own_id"), ("judged_outliers", "session", "own_id"),
              ("judged_points", "session_start", "own"))  # fmt: skip
    for table, column, own in tables:
        con.execute(
            f"DELETE FROM {table} t WHERE gpu = $g AND EXISTS (SELECT 1 FROM cuts c "
            f"WHERE c.kernel = t.kernel AND t.{column} >= c.{own})",
            {"g": gpu},
        )
        name = table.removeprefix("judged_")
        frame = _owned(points if name == "points" else getattr(unit, name), cut, column)
        if POS in frame.columns:
            frame = _shift(frame, offsets, POS)
        insert(con, table, frame)


def _changepoints(
    con: duckdb.DuckDBPyConnection,
    gpu: str,
    before: pl.DataFrame,
    changed: pl.DataFrame,
    options: JudgeOptions,
) -> None:
    """The change points (and search states) of every partition with a changed point:
    a series whose stored values (``before``: the GPU's points before the splice) are a
    prefix of its new ones resumes its search (:func:`kiana.shards.creep.resume`), any
    other is searched again (as :func:`kiana.shards.unit.judge_unit` does)."""
    from kiana.shards.store import insert

    parts = changed["partition_id"].unique().to_list()
    if not parts:
        return
    params: dict[str, object] = {"g": gpu, "p": parts}
    where = "gpu = $g AND partition_id IN (SELECT unnest($p))"
    old = _stored_found(con, where, params, before.filter(pl.col("partition_id").is_in(parts)))
    for table in ("judged_changepoints", "judged_segments"):
        con.execute(f"DELETE FROM {table} WHERE {where}", params)
    if not options.changepoints:
        return
    points = con.sql(f"SELECT * FROM judged_points WHERE {where}", params=params).pl()
    values, noise, heads = cp_series(points)
    found: dict[int, creep.Found] = {}
    starts: list[tuple[int, int]] = []
    for s, (v, n) in enumerate(zip(values, noise, strict=True)):
        if v.size < options.changepoint_min_points:
            continue
        prior = old.get(tuple(heads[s].head[k] for k in SERIES_KEYS))
        if prior is not None and _prefix(prior[0], v) and _prefix(prior[1], n):
            found[s] = creep.resume(prior[2], v, n, prior[0].size, options)
        else:
            starts.append((s, 0))
    found |= creep.search(values, noise, starts, options)
    insert(con, "judged_segments", segments(heads, found))
    insert(con, "judged_changepoints", changepoint_rows(heads, values, found))


def _prefix(old: np.ndarray, new: np.ndarray) -> bool:
    """Whether ``old`` is ``new``'s beginning, bit for bit (NaN where NaN)."""
    if old.size > new.size:
        return False
    head = new[: old.size]
    return bool(np.array_equal(old, head, equal_nan=True))


def _stored_found(
    con: duckdb.DuckDBPyConnection, where: str, params: dict[str, object], points: pl.DataFrame
) -> dict[tuple[object, ...], tuple[np.ndarray, np.ndarray, creep.Found]]:
    """Per series with a stored search state: its stored values, noise and what was
    found on them (change points and right chain)."""
    keys = list(SERIES_KEYS)
    cps = con.sql(
        f"SELECT {', '.join(keys)}, {creep.INDEX}, p_value FROM judged_changepoints WHERE {where}",
        params=params,
    ).pl()
    found_at: dict[tuple[object, ...], list[tuple[int, float]]] = {}
    for row in cps.iter_rows():
        found_at.setdefault(tuple(row[:3]), []).append((int(row[3]), float(row[4])))
    links = con.sql(f"SELECT * FROM judged_segments WHERE {where}", params=params).pl()
    chains: dict[tuple[object, ...], list[creep.Link]] = {}
    for row in links.sort(*keys, "link").iter_rows(named=True):
        link = creep.Link(row["start"], row["split"], row["p"])
        link.diag, link.last, link.rows = (
            None if row[c] is None else np.frombuffer(row[c], dtype=np.float64).copy()
            for c in ("diag", "last", "rows")
        )
        chains.setdefault(tuple(row[k] for k in keys), []).append(link)
    values, noise, heads = cp_series(points)
    out = {}
    for v, n, head in zip(values, noise, heads, strict=True):
        key = tuple(head.head[k] for k in keys)
        if key in chains:
            out[key] = (v, n, creep.Found(sorted(found_at.get(key, [])), chains[key]))
    return out
