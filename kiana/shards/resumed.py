"""The change points of the partitions a splice changed (:mod:`kiana.shards.splice`),
resumed from their stored search state.

A series whose stored values are the beginning of its new ones, bit for bit, resumes
its search (:func:`kiana.shards.creep.resume_all`: every such series at once, the
links of one rank tested together); one whose values did not change at all
keeps what was found (the search is a function of the values); any other is searched
again from its first value (as :func:`kiana.shards.unit.judge_unit` does).  Only the
stored points from ``own`` on can differ from the new ones (the splice keeps every
point before), so :func:`stored_state` reads those, each series' count of values and
its search state, before the splice; :func:`search_again` reads the new series after
it, in one query for every GPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from kiana.shards import creep
from kiana.shards.unit import changepoint_rows, query, segments
from kiana.vocabulary import SERIES_KEYS, SERIES_LABELS

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import JudgeOptions

Key = tuple[object, ...]
_WHERE = "partition_id IN (SELECT unnest($p))"


@dataclass(frozen=True)
class Before:
    """A series as stored before the splice: how many values (points with a level) it
    had, those from ``own`` on (values and noise, the rest is kept as it was), and what
    its search found (change points and right chain)."""

    size: int
    tail: np.ndarray
    tail_noise: np.ndarray
    found: creep.Found

    def prefix_of(self, values: np.ndarray, noise: np.ndarray) -> bool:
        """Whether the stored values (and noise) are the beginning of ``values``, bit for
        bit (NaN where NaN)."""
        if self.size > values.size:
            return False
        head = slice(self.size - self.tail.size, self.size)
        return bool(
            np.array_equal(self.tail, values[head], equal_nan=True)
            and np.array_equal(self.tail_noise, noise[head], equal_nan=True)
        )


def stored_state(
    con: duckdb.DuckDBPyConnection,
    parts: list[str],
    tail: pl.DataFrame,
    facts: pl.DataFrame,
    cut: pl.DataFrame,
) -> dict[Key, Before]:
    """Per series of ``parts`` with a stored search state, what :class:`Before` keeps
    (``tail``: the stored points from ``since`` on; ``facts``: each series' count of
    values, ``_levels``; ``cut``: ``own`` per GPU and kernel)."""
    keys = list(SERIES_KEYS)
    searches = _searches(con, _WHERE, {"p": parts})
    own = tail.join(cut.select("gpu", "kernel", "own"), on=["gpu", "kernel"], how="inner")
    own = own.filter((pl.col("session_start") >= pl.col("own")) & pl.col("cp_index").is_not_null())
    # every series' points in one sorted frame, split where a series starts (one array
    # per column, not one frame per series: 10k series at 10M runs)
    own = own.select(*keys, "cp_index", "log_median", "sigma").sort(*keys, "cp_index")
    firsts = np.flatnonzero(own.select(pl.struct(keys).is_first_distinct()).to_series().to_numpy())
    values = np.split(own["log_median"].to_numpy().astype(np.float64), firsts[1:])
    noises = np.split(own["sigma"].fill_null(np.nan).to_numpy().astype(np.float64), firsts[1:])
    heads = own[firsts.tolist()].select(keys).rows()
    by_series = dict(zip(heads, zip(values, noises, strict=True), strict=True)) if heads else {}
    sizes = {tuple(r[:3]): int(r[3]) for r in facts.select(*keys, "_levels").iter_rows()}
    empty = (np.empty(0), np.empty(0))
    return {
        key: Before(sizes[key], *by_series.get(key, empty), found)
        for key, found in searches.items()
    }


def stored_whole(con: duckdb.DuckDBPyConnection, gpus: list[str]) -> dict[Key, Before]:
    """:class:`Before` of every series of ``gpus`` with a stored search state, with all
    its stored values (for GPUs judged again whole: a GPU whose calibration moved to
    its next rung keeps the values of its points, and their noise as long as the
    workload component it rests on did not move, so its series resume)."""
    where = "gpu IN (SELECT unnest($g))"
    params: dict[str, object] = {"g": gpus}
    searches = _searches(con, where, params)
    frame = query(
        con,
        "SELECT partition_id, provider, metric, log_median, sigma FROM judged_points "
        f"WHERE {where} AND cp_index IS NOT NULL ORDER BY partition_id, provider, metric, cp_index",
        params,
    )
    out: dict[Key, Before] = {}
    if frame.height == 0:
        return out
    keys = frame.select(*SERIES_KEYS)
    starts = keys.select(pl.struct(*SERIES_KEYS).is_first_distinct()).to_series()
    cuts = np.flatnonzero(starts.to_numpy()).tolist()[1:]
    values = np.split(frame["log_median"].to_numpy().astype(np.float64), cuts)
    noise = np.split(frame["sigma"].fill_null(np.nan).to_numpy().astype(np.float64), cuts)
    for key, v, n in zip(keys[[0, *cuts]].iter_rows(), values, noise, strict=True):
        found = searches.get(key)
        if found is not None:
            out[key] = Before(v.size, v, n, found)
    return out


def _searches(
    con: duckdb.DuckDBPyConnection, where: str, params: dict[str, object]
) -> dict[Key, creep.Found]:
    """The stored search of every series with a search state (``where``: of the
    change-point and segment tables): its change points and right chain."""
    keys = list(SERIES_KEYS)
    cps = query(
        con, f"SELECT {', '.join(keys)}, {creep.INDEX}, p_value FROM judged_changepoints "
        f"WHERE {where}", params,
    )  # fmt: skip
    found_at: dict[Key, list[tuple[int, float]]] = {}
    for row in cps.iter_rows():
        found_at.setdefault(tuple(row[:3]), []).append((int(row[3]), float(row[4])))
    links = query(con, f"SELECT * FROM judged_segments WHERE {where}", params)
    chains: dict[Key, list[creep.Link]] = {}
    for named in links.sort(*keys, "link").iter_rows(named=True):
        link = creep.Link(named["start"], named["split"], named["p"])
        link.diag, link.last, link.rows = (
            None if named[c] is None else np.frombuffer(named[c], dtype=np.float64).copy()
            for c in ("diag", "last", "rows")
        )
        chains.setdefault(tuple(named[k] for k in keys), []).append(link)
    return {key: creep.Found(sorted(found_at.get(key, [])), chain) for key, chain in chains.items()}


def search_again(
    con: duckdb.DuckDBPyConnection,
    parts: list[str],
    before: dict[Key, Before],
    options: JudgeOptions,
) -> None:
    """The change points (and search states) of every series of ``parts`` after the
    splice, stored in place of the old ones (module docstring)."""
    from kiana.shards.tables import insert

    if not parts:
        return
    params: dict[str, object] = {"p": parts}
    for table in ("judged_changepoints", "judged_segments"):
        con.execute(f"DELETE FROM {table} WHERE {_WHERE}", params)
    if not options.changepoints:
        return
    values, noise, heads = series(con, parts)
    found: dict[int, creep.Found] = {}
    starts: list[tuple[int, int]] = []
    resumed: dict[int, tuple[creep.Found, int]] = {}
    for s, (v, n) in enumerate(zip(values, noise, strict=True)):
        if v.size < options.changepoint_min_points:
            continue
        prior = before.get(tuple(heads[s].head[k] for k in SERIES_KEYS))
        if prior is None or not prior.prefix_of(v, n):
            starts.append((s, 0))
        elif prior.size == v.size:  # nothing changed: what was found stands
            found[s] = prior.found
        else:
            resumed[s] = (prior.found, prior.size)
    found |= creep.resume_all(resumed, values, noise, options)
    found |= creep.search(values, noise, starts, options)
    heads = with_versions(con, heads, found)
    insert(con, "judged_segments", segments(heads, found))
    insert(con, "judged_changepoints", changepoint_rows(heads, values, found))


def series(
    con: duckdb.DuckDBPyConnection, parts: list[str]
) -> tuple[list[np.ndarray], list[np.ndarray], list[creep.Series]]:
    """The change-point series of ``parts`` as stored (values, noise, keys and labels),
    in the order :func:`kiana.shards.unit.cp_series` gives them; their versions left
    empty (:func:`with_versions` reads those a change point names)."""
    labels = [*SERIES_KEYS, *SERIES_LABELS, "is_subject"]
    order = "ORDER BY partition_id, provider, metric, position"
    where = f"WHERE {_WHERE} AND cp_index IS NOT NULL"
    params: dict[str, object] = {"p": parts}
    frame = query(
        con, f"SELECT log_median, sigma, cp_index FROM judged_points {where} {order}", params
    )
    if frame.height == 0:
        return [], [], []
    cuts = np.flatnonzero(frame["cp_index"].to_numpy() == 0)[1:]
    values = np.split(frame["log_median"].to_numpy().astype(np.float64), cuts)
    noise = np.split(frame["sigma"].fill_null(np.nan).to_numpy().astype(np.float64), cuts)
    firsts = query(
        con,
        f"SELECT {', '.join(labels)} FROM judged_points {where} AND cp_index = 0 {order}",
        params,
    ).iter_rows(named=True)
    heads = [
        creep.Series(h, [], v, creep.Found([], [])) for h, v in zip(firsts, values, strict=True)
    ]
    ranked = sorted(
        range(len(heads)), key=lambda s: tuple(str(heads[s].head[k]) for k in SERIES_KEYS)
    )
    return [values[s] for s in ranked], [noise[s] for s in ranked], [heads[s] for s in ranked]


def with_versions(
    con: duckdb.DuckDBPyConnection, heads: list[creep.Series], found: dict[int, creep.Found]
) -> list[creep.Series]:
    """``heads`` with the version labels their change points name (the values before
    and after each, and the ends of its segments; the others left empty)."""
    wanted: list[tuple[object, ...]] = []
    for s, one in found.items():
        bounds = [0, *(i for i, _ in one.points), heads[s].values.size]
        at = {i for i, _ in one.points} | {i - 1 for i, _ in one.points} | set(bounds[:-1])
        at |= {b - 1 for b in bounds[1:]}
        key = tuple(heads[s].head[k] for k in SERIES_KEYS)
        wanted += [(s, *key, i) for i in sorted(at)] if one.points else []
    if not wanted:
        return heads
    asked = pl.DataFrame(wanted, schema=["_s", *SERIES_KEYS, "cp_index"], orient="row")
    con.register("kiana_asked", asked.to_arrow())
    try:
        named = query(
            con,
            "SELECT a._s, a.cp_index, p.version FROM kiana_asked a JOIN judged_points p "
            "USING (partition_id, provider, metric, cp_index)",
        )
    finally:
        con.unregister("kiana_asked")
    labels: dict[int, list[str]] = {}
    for s, i, version in named.iter_rows():
        labels.setdefault(s, [""] * heads[s].values.size)[i] = version
    return [dataclasses.replace(h, versions=labels[s]) if s in labels else h
            for s, h in enumerate(heads)]  # fmt: skip
