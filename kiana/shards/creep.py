"""Change points that resume: the E-divisive search of :mod:`kiana.stats.changepoints`,
able to take the sessions appended to a series without searching it again.

The search splits a series at the ``tau`` maximising ``Q(tau)``, tests the split, and
searches both sides again (binary segmentation).  ``Q`` of a segment of ``L`` values
needs three vectors of its pairwise distances (:func:`q_state`, the same additions in
the same order as :func:`kiana.stats.changepoints.q_statistics`, so the same bits):
``diag[a]`` (every pair among the first ``a + 1`` values, each twice), ``last[a]`` (the
first ``a + 1`` values against every value) and ``rows[j]`` (every value against value
``j``).  A value appended to the segment extends them in ``O(L)`` (:func:`append`)
instead of ``O(L^2)``.

A series appended to keeps, on its *right chain* (the segments that end at its last
value: the whole series, then the right side of each accepted split), the state of
each segment.  When the new values arrive, each link of the chain is extended and
tested again; while a link splits where it split before, its left side (values that did
not change) keeps its change points, and the next link is the right side.  The first
link whose split moves (or whose test turns) is searched again from scratch, with
everything right of it (:func:`search`).  :func:`resume_all` does this for many series
at once (the links of one rank of every chain tested together, batched by length as the
judge batches its segments), :func:`resume` for one; ``tests/shards/test_creep.py``
holds them to a search of the whole series, and :func:`search` is held to the judge's
change points by the stored judgement's tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from kiana.stats.changepoints import (
    _empty,
    _median,
    _verdicts,
    empty_changepoints,
    segment_batches,
    split_test,
)
from kiana.stats.options import JudgeOptions

#: Cells (links x (new values + 1) x length) of one :func:`extend_batch` at most (its
#: arrays stay a few MiB: 2M cells cost 30% more time at 1M runs).
_BATCH_CELLS = 200_000
#: The change-point rows as the judge gives them, plus ``_index`` (the index of the
#: first value after the shift: where :func:`resume` finds it again).
INDEX = "_index"


@dataclass
class Link:
    """One segment of a series' right chain: where it starts, the split it took (the
    index of the first value after it, or None when it was not accepted or not tested),
    the p-value of that split, and its state (None: too short to be tested)."""

    start: int
    split: int | None
    p: float | None
    diag: np.ndarray | None = None
    last: np.ndarray | None = None
    rows: np.ndarray | None = None


@dataclass
class Found:
    """A series' change points ``(index, p)``, sorted, and its right chain."""

    points: list[tuple[int, float]]
    chain: list[Link]


def q_state(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(diag, last, rows)`` of every segment (row of ``x``, G x L): see the module
    docstring; :func:`q_from` turns them into ``Q``.  Made as the judge's search makes
    them (:func:`kiana.stats.changepoints.prefix_rows`: one running row per segment, the
    same bits as the whole block of distances, in memory linear in ``L``)."""
    from kiana.stats.changepoints import prefix_rows

    return prefix_rows(x)


def q_from(diag: np.ndarray, last: np.ndarray, min_size: int) -> np.ndarray:
    """``Q(tau)`` for ``tau = min_size .. L - min_size`` of each segment (rows), as
    :func:`kiana.stats.changepoints.q_statistics` computes it."""
    length = diag.shape[1]
    tau = np.arange(min_size, length - min_size + 1)
    m = tau.astype(np.float64)
    k = (length - tau).astype(np.float64)
    full = diag[:, length - 1][:, None]
    left = diag[:, tau - 1]
    between = last[:, tau - 1] - left
    right = full - left - 2.0 * between
    e = 2.0 * between / (m * k) - left / (m * (m - 1.0)) - right / (k * (k - 1.0))
    return np.asarray(m * k / (m + k) * e)


def append(link: Link, values: np.ndarray, new: float) -> None:
    """Extend ``link``'s state by one value (``values``: the segment before it)."""
    assert link.diag is not None and link.last is not None and link.rows is not None
    d = np.abs(np.subtract(values, new))
    column = np.cumsum(np.append(d, 0.0))
    rows = np.append(link.rows + d, column[-1])
    corner = np.cumsum(rows)[-1]
    link.last = np.append(link.last + column[:-1], corner)
    link.diag = np.append(link.diag, corner)
    link.rows = rows


def extend(link: Link, values: np.ndarray, before: int) -> None:
    """Extend ``link``'s state by ``values[before:]`` (``values``: the whole series, the
    link's segment running from ``link.start`` to ``before``): :func:`append` of each
    new value in turn, the same additions in the same order, for all of them at once
    (:func:`extend_batch` of one link)."""
    if values.size - before > 0:
        extend_batch([link], values[None, link.start :], before - link.start)


def extend_batch(links: list[Link], segments: np.ndarray, start: int) -> None:
    """Extend each of ``links`` by the values of its row of ``segments`` (G x L: the
    links' segments, each extended to the series' end) from ``start`` on, its state
    being that of the first ``start`` values: every link of one segment length and one
    count of new values in one set of numpy operations (each row's additions are its
    own, in the order :func:`append` takes them: the same bits as one at a time).

    Row ``m`` of the matrices (of each link) is the ``m``-th value appended (at ``n =
    start + m``): ``gaps`` its distances to the values before it, ``column`` their
    running sums; the rows and the last column gain one row of additions per value, in
    order (``cumsum`` down the stack: sequential, as each :func:`append` adds), and its
    corner is the running sum of its rows (``cumsum`` along them)."""
    count, size = segments.shape
    k = size - start
    if k <= 0 or count == 0:
        return
    new = np.arange(k)
    at = np.arange(start, size)
    earlier = (np.arange(size)[None, :] < at[:, None])[None, :, :]
    gaps = np.where(earlier, np.abs(np.subtract(segments[:, None, :], segments[:, at][:, :, None])), 0.0)  # fmt: skip
    column = np.cumsum(gaps, axis=2)
    own = column[:, new, at - 1] + 0.0
    gaps[:, new, at] = own
    rows = np.zeros((count, k + 1, size))
    rows[:, 0, :start] = np.stack([link.rows for link in links])  # type: ignore[misc]
    rows[:, 1:] = gaps
    np.cumsum(rows, axis=1, out=rows)
    corner = np.cumsum(rows[:, 1:], axis=2)[:, new, at]
    lasts = np.where(earlier, column, 0.0)
    lasts[:, new, at] = corner
    last = np.zeros((count, k + 1, size))
    last[:, 0, :start] = np.stack([link.last for link in links])  # type: ignore[misc]
    last[:, 1:] = lasts
    summed = np.cumsum(last, axis=1)[:, -1]
    for g, link in enumerate(links):
        assert link.diag is not None
        link.rows = rows[g, -1].copy()
        link.last = summed[g].copy()
        link.diag = np.concatenate([link.diag, corner[g]])


def search(
    values: list[np.ndarray],
    noise: list[np.ndarray],
    starts: list[tuple[int, int]],
    options: JudgeOptions,
) -> dict[int, Found]:
    """The change points and right chains of the series ``s`` of ``starts``, searched
    from value ``a`` to the end (the judge's :func:`kiana.stats.changepoints.detect`
    from those segments on; ``a = 0``: the whole series)."""
    out = {s: Found([], []) for s, _ in starts}
    _grow(values, noise, [(s, a, len(values[s])) for s, a in starts], out, options)
    for found in out.values():
        found.points.sort()
        found.chain.sort(key=lambda link: link.start)
    return out


def _grow(
    values: list[np.ndarray],
    noise: list[np.ndarray],
    active: list[tuple[int, int, int]],
    out: dict[int, Found],
    options: JudgeOptions,
) -> None:
    """Binary segmentation of the segments ``(s, a, b)`` of ``active`` and of every
    side accepted, into ``out`` (unsorted)."""
    min_size = options.changepoint_min_size
    while active:
        by_length: dict[int, list[tuple[int, int, int]]] = {}
        for seg in active:
            if seg[2] - seg[1] >= 2 * min_size:
                by_length.setdefault(seg[2] - seg[1], []).append(seg)
            elif seg[2] == len(values[seg[0]]):  # an untested end of the chain
                out[seg[0]].chain.append(Link(seg[1], None, None))
        active = []
        for batch, x, nz in segment_batches(by_length, values, noise):
            diag, last, rows = q_state(x)
            tau, p, ok = split_test(x, nz, q_from(diag, last, min_size), options)
            for i, (s, a, b) in enumerate(batch):
                good, t = bool(ok[i]), int(tau[i])
                if b == len(values[s]):
                    link = Link(a, a + t if good else None, float(p[i]) if good else None)
                    link.diag, link.last, link.rows = diag[i], last[i], rows[i]
                    out[s].chain.append(link)
                if good:
                    out[s].points.append((a + t, float(p[i])))
                    active.extend([(s, a, a + t), (s, a + t, b)])


def resume(
    old: Found, values: np.ndarray, noise: np.ndarray, before: int, options: JudgeOptions
) -> Found:
    """The change points of a series whose first ``before`` values are those ``old``
    was found on and the rest were appended (module docstring; :func:`resume_all` of
    one series)."""
    return resume_all({0: (old, before)}, [values], [noise], options)[0]


@dataclass
class _Resumed:
    """A series' resume under way: the old search, its values before, the links kept
    (tested again, same split) and the change points they vouch for."""

    old: Found
    before: int
    chain: list[Link]
    points: list[tuple[int, float]]


def resume_all(
    olds: dict[int, tuple[Found, int]],
    values: list[np.ndarray],
    noise: list[np.ndarray],
    options: JudgeOptions,
) -> dict[int, Found]:
    """:func:`resume` of every series ``s`` of ``olds`` (its old search and how many of
    its values it was made on), the links of the same rank of every chain extended and
    tested together, in batches of one segment length (as the judge's search batches).
    Where a link's split moves, its extended state and test are the first round of the
    search of its segment again (the same bits as :func:`q_state`), which goes on from
    its two sides; where the chain ends untested or every link held, the search goes on
    from the last split."""
    jobs = {s: _Resumed(old, before, [], []) for s, (old, before) in olds.items()}
    out: dict[int, Found] = {}
    grow: list[tuple[int, int, int]] = []
    fresh: list[tuple[int, int]] = []
    todo, rank = list(jobs), 0
    while todo:
        tests: dict[int, list[tuple[int, Link]]] = {}
        extended: dict[tuple[int, int], list[tuple[int, Link]]] = {}
        for s in todo:
            job = jobs[s]
            link = job.old.chain[rank] if rank < len(job.old.chain) else None
            if link is None or link.diag is None:  # search on from the last split
                start = job.chain[-1].split if job.chain else 0
                assert start is not None  # a held link has a split
                fresh.append((s, start))
            elif link.start == 0 and values[s].size < options.changepoint_min_points:
                out[s] = Found([], [])
            else:
                size = values[s].size - link.start
                extended.setdefault((size, job.before - link.start), []).append((s, link))
                tests.setdefault(size, []).append((s, link))
        for (size, start), batch in extended.items():
            per = max(1, _BATCH_CELLS // ((size - start + 1) * size))
            for lo in range(0, len(batch), per):
                part = batch[lo : lo + per]
                segments = np.stack([values[s][link.start :] for s, link in part])
                extend_batch([link for _, link in part], segments, start)
        todo = _test_links(tests, values, noise, jobs, out, grow, options)
        rank += 1
    return _searched_on(jobs, out, grow, fresh, values, noise, options)


def _test_links(
    tests: dict[int, list[tuple[int, Link]]],
    values: list[np.ndarray],
    noise: list[np.ndarray],
    jobs: dict[int, _Resumed],
    out: dict[int, Found],
    grow: list[tuple[int, int, int]],
    options: JudgeOptions,
) -> list[int]:
    """Test each extended link again (``tests``: by segment length); the series whose
    link held its split (to go on with the next link)."""
    held: list[int] = []
    for _, batch in sorted(tests.items()):
        for lo in range(0, len(batch), 256):
            part = batch[lo : lo + 256]
            x = np.stack([values[s][link.start :] for s, link in part])
            nz = np.stack([noise[s][link.start :] for s, link in part])
            diag = np.stack([link.diag for _, link in part])  # type: ignore[misc]
            last = np.stack([link.last for _, link in part])  # type: ignore[misc]
            q = q_from(diag, last, options.changepoint_min_size)
            tau, p, ok = split_test(x, nz, q, options)
            for i, (s, link) in enumerate(part):
                split = link.start + int(tau[i]) if bool(ok[i]) else None
                job, moved = jobs[s], split != link.split
                link.split, link.p = split, float(p[i]) if split is not None else None
                job.chain.append(link)
                if split is None:
                    out[s] = Found(sorted(job.points), job.chain)
                    continue
                if moved:
                    grow += [(s, link.start, split), (s, split, values[s].size)]
                else:
                    job.points += [c for c in job.old.points if link.start < c[0] < split]
                    held.append(s)
                job.points.append((split, float(p[i])))
    return held


def _searched_on(
    jobs: dict[int, _Resumed],
    out: dict[int, Found],
    grow: list[tuple[int, int, int]],
    fresh: list[tuple[int, int]],
    values: list[np.ndarray],
    noise: list[np.ndarray],
    options: JudgeOptions,
) -> dict[int, Found]:
    """``out`` with the series still open searched on: from both sides of a moved
    split (``grow``), or from the last split held (``fresh``: ``(s, start)``)."""
    rest = {s: Found([], []) for s, _, _ in grow}
    _grow(values, noise, grow, rest, options)
    starts = []
    for s, start in fresh:
        if start == 0 and values[s].size < options.changepoint_min_points:
            out[s] = Found([], [])
        else:
            starts.append((s, start))
    for s, found in (rest | search(values, noise, starts, options)).items():
        found.chain.sort(key=lambda one: one.start)
        out[s] = Found(sorted(jobs[s].points + found.points), jobs[s].chain + found.chain)
    return out


@dataclass(frozen=True)
class Series:
    """One series to give rows for: its keys and labels (``partition_id``,
    ``provider``, ``metric``, ``kernel``, ``pass``, ``gpu``, ``workload``), the version
    of each value, the values (log medians) and what was found on them."""

    head: dict[str, object]
    versions: list[str]
    values: np.ndarray
    found: Found


def rows(series: list[Series]) -> pl.DataFrame:
    """The change-point rows of ``series`` (in their order), as
    :func:`kiana.stats.changepoints.changepoints` writes them, with :data:`INDEX`;
    their verdicts need every series of a partition (:func:`verdicts`)."""
    empty = _empty()
    out: list[dict[str, object]] = []
    for one in series:
        listed: list[float] = one.values.tolist()
        cps = one.found.points
        bounds = [0, *(i for i, _ in cps), len(listed)]
        for j, (i, pv) in enumerate(cps):
            before = _median(listed[bounds[j] : i])
            after = _median(listed[i : bounds[j + 2]])
            out.append(
                {
                    **one.head,
                    "from_version": one.versions[i - 1],
                    "to_version": one.versions[i],
                    "segment_start": one.versions[bounds[j]],
                    "segment_end": one.versions[bounds[j + 2] - 1],
                    "before_level": float(np.exp(before)),
                    "after_level": float(np.exp(after)),
                    "change": float(np.expm1(after - before)),
                    "p_value": pv,
                    "n_points": len(listed),
                    INDEX: i,
                }
            )
    schema = {**empty.schema, INDEX: pl.Int64()}
    if not out:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame(out, schema=schema, strict=False)


def verdicts(frame: pl.DataFrame) -> pl.DataFrame:
    """The judge's verdict, control and evidence of change-point rows (every row of a
    partition, in series order: the control named is the first baseline's)."""
    if frame.height == 0:
        return empty_changepoints().with_columns(pl.lit(None, pl.Int64).alias(INDEX))
    return _verdicts(frame)
