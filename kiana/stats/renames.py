"""Renamed workloads: a benchmark config that gained (or lost) one key at one value
keeps its series.

A workload's identity is its slug (:mod:`kiana.importers.workloads`), and the slug is
made of every key of its benchmark config.  When a benchmark gains a key, every workload
of it gets a new slug, hence a new partition, and its series starts again: in Liger's
history ``megatron_cross_entropy``'s config gained ``"TP": 1`` between the 2026-06-10
and 2026-06-15 sittings (``batch4-seq2048-vocab131072`` became
``batch4-seq2048-tp1-vocab131072``), so Liger's +40% forward step at V = 131072 was
never compared and coverage called both halves "one session only".

A key added at the value the code had used all along changes nothing that is measured;
a key added at another value is another workload.  The data cannot tell the default, so
the rule is conservative and explicit.  Within one kernel, pass, GPU and harness (every
provider, every metric), a **part** ``X`` (one or more ``-``-separated pieces of a slug:
``tp1``; the statistics see slugs, not configs, and a slug part is one key at one
value) joins two forms of each workload when

1. some workload's slug less ``X`` is another workload's slug of the group (a candidate);
2. every session of the group holds either only slugs with ``X`` or only slugs without
   it: no session holds both forms (two forms measured in one sitting are two
   workloads); ``X`` appears at most once in a slug, and no two slugs with it give one
   slug without it;
3. the sessions of one form all end before the first session of the other begins (one
   rename, not a back and forth): absent on every earlier workload, on every later one
   (the key at one constant value: a key at two values gives two parts, and no part is
   on every later workload), or the reverse for a key removed;
4. at the rename, the forms match workload for workload: for each metric, the workloads
   of the last sitting before it are exactly those of the first sitting after it, ``X``
   taken off (a sweep that changed its points at the same time is not only renamed);
5. exactly one part of the group passes 1-4 (two would be a guess).

The joined series takes the identity of the later form (its ``partition_id`` and
``workload``: the name the CSVs use from then on, which new runs arrive with), so every
stage downstream sees one series; :func:`find` lists the joins (one row per earlier
partition) and coverage says how many series were continued this way and by which part
(:mod:`kiana.stats.coverage`).  Anything short of the rule leaves the slugs alone: a
series split in two is said ("one session only"), a wrong join would not be.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

import polars as pl

#: One row per partition joined to a later one (:func:`find`).
RENAME_SCHEMA: dict[str, pl.DataType] = {
    "gpu": pl.String(), "kernel": pl.String(), "pass": pl.String(),
    "from_partition": pl.String(), "from_workload": pl.String(),
    "to_partition": pl.String(), "to_workload": pl.String(),
    "part": pl.String(), "added": pl.Boolean(),
}  # fmt: skip

_GROUP = ("kernel", "pass", "gpu", "harness")
_SESSION = ("metric", "version", "origin", "session_start")

Tokens = tuple[str, ...]


def _occurrences(tokens: Tokens, part: Tokens) -> list[int]:
    n = len(part)
    return [i for i in range(len(tokens) - n + 1) if tokens[i : i + n] == part]


def _candidates(workloads: Iterable[str]) -> set[Tokens]:
    """Parts whose removal from one workload's slug gives another's (rule 1)."""
    known = set(workloads)
    found: set[Tokens] = set()
    for slug in known:
        tokens = tuple(slug.split("-"))
        for i in range(len(tokens)):
            for j in range(i + 1, len(tokens) + 1):
                if j - i < len(tokens) and "-".join(tokens[:i] + tokens[j:]) in known:
                    found.add(tokens[i:j])
    return found


def related(a: str, b: str) -> bool:
    """Whether one slug is the other with one part added (rule 1 for two slugs)."""
    return a != b and bool(_candidates([a, b]))


def _strip(slug: str, part: Tokens) -> str | None:
    """``slug`` less its one occurrence of ``part``; None without one, "" for two."""
    tokens = tuple(slug.split("-"))
    at = _occurrences(tokens, part)
    if not at:
        return None
    if len(at) > 1:
        return ""
    return "-".join(tokens[: at[0]] + tokens[at[0] + len(part) :])


_Session = tuple[str, datetime, datetime, frozenset[str]]  # metric, start, end, workloads


def _boundary(sessions: list[_Session], last: bool) -> dict[str, set[str]]:
    """Per metric, the workloads of the last (or first) sitting of ``sessions``."""
    out: dict[str, set[str]] = {}
    ends: dict[str, datetime] = {}
    for metric, start, _, names in sessions:
        best = ends.get(metric)
        if best is None or (start > best if last else start < best):
            ends[metric], out[metric] = start, set(names)
        elif start == best:
            out[metric] |= names
    return out


def _joins(part: Tokens, sessions: list[_Session]) -> tuple[bool, dict[str, str]] | None:
    """Rules 2-4 for ``part``: (added, {with-form slug: without-form slug}) or None."""
    stripped: dict[str, str] = {}
    with_form: list[_Session] = []
    without: list[_Session] = []
    for session in sessions:
        marks = {w: _strip(w, part) for w in session[3]}
        if any(m == "" for m in marks.values()):
            return None
        present = {m is not None for m in marks.values()}
        if len(present) > 1:
            return None
        (with_form if present == {True} else without).append(session)
        stripped |= {w: m for w, m in marks.items() if m}
    if not with_form or not without:
        return None
    if max(s[2] for s in without) < min(s[1] for s in with_form):
        added, before, after = True, without, with_form
    elif max(s[2] for s in with_form) < min(s[1] for s in without):
        added, before, after = False, with_form, without
    else:
        return None
    last, first = _boundary(before, last=True), _boundary(after, last=False)
    if added:
        first = {m: {stripped[w] for w in names} for m, names in first.items()}
    else:
        last = {m: {stripped[w] for w in names} for m, names in last.items()}
    shared = set(last) & set(first)
    if not shared or any(last[m] != first[m] for m in shared):
        return None
    plain = {w for s in without for w in s[3]}
    pairs = {w: m for w, m in stripped.items() if m in plain}
    if len(set(pairs.values())) < len(pairs):  # two slugs of one form give one of the other
        return None
    return added, pairs


def find(frame: pl.DataFrame) -> pl.DataFrame:
    """The joins of the module docstring in judgeable runs (with their sessions:
    :func:`kiana.stats.series.judgeable`), one row per earlier partition
    (:data:`RENAME_SCHEMA`), in group and partition order."""
    if frame.height == 0:
        return pl.DataFrame(schema=RENAME_SCHEMA)
    names = frame.select(*_GROUP, "workload", "partition_id").unique()
    many = names.group_by(*_GROUP, "workload").agg(pl.col("partition_id").n_unique() > 1)
    if many["partition_id"].any():  # one slug, two partitions (families): not ours to join
        bad = many.filter(pl.col("partition_id")).select(_GROUP).unique()
        names = names.join(bad, on=list(_GROUP), how="anti")
    per_group: dict[tuple[str, ...], dict[str, str]] = defaultdict(dict)
    for *named, workload, pid in names.iter_rows():
        per_group[tuple(named)][workload] = pid
    wanted = {g: c for g, w in per_group.items() if len(w) > 1 and (c := _candidates(w))}
    if not wanted:
        return pl.DataFrame(schema=RENAME_SCHEMA)
    keys = pl.DataFrame(list(wanted), schema=list(_GROUP), orient="row")
    sessions = (
        frame.join(keys, on=list(_GROUP), how="semi")
        .group_by(*_GROUP, *_SESSION)
        .agg(pl.col("session_end").max(), pl.col("workload").unique())
    )
    held: dict[tuple[str, ...], list[_Session]] = defaultdict(list)
    for row in sessions.iter_rows(named=True):
        held[tuple(row[c] for c in _GROUP)].append(
            (row["metric"], row["session_start"], row["session_end"], frozenset(row["workload"]))
        )
    rows: list[dict[str, object]] = []
    for group in sorted(wanted):
        passed = [(p, j) for p in sorted(wanted[group]) if (j := _joins(p, held[group]))]
        if len(passed) != 1:
            continue
        part, (added, pairs) = passed[0]
        ids = per_group[group]
        kernel, pass_, gpu, _ = group
        for with_form, without in sorted(pairs.items()):
            old, new = (without, with_form) if added else (with_form, without)
            rows.append({
                "gpu": gpu, "kernel": kernel, "pass": pass_,
                "from_partition": ids[old], "from_workload": old,
                "to_partition": ids[new], "to_workload": new,
                "part": "-".join(part), "added": added,
            })  # fmt: skip
    return pl.DataFrame(rows, schema=RENAME_SCHEMA)


def apply(frame: pl.DataFrame, renames: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each earlier partition's ``partition_id`` and ``workload`` those of
    the later form it was joined to (``renames``: :func:`find`); order kept."""
    if renames.height == 0:
        return frame
    to = renames.select(
        pl.col("from_partition").alias("partition_id"), "to_partition", "to_workload"
    )
    joined = frame.join(to, on="partition_id", how="left", maintain_order="left")
    return joined.with_columns(
        pl.coalesce("to_partition", "partition_id").alias("partition_id"),
        pl.coalesce("to_workload", "workload").alias("workload"),
    ).drop("to_partition", "to_workload")


def renamed_ids(frame: pl.DataFrame, renames: pl.DataFrame | None) -> pl.DataFrame:
    """``frame``'s ``partition_id`` mapped as :func:`apply` maps it (no other column)."""
    if renames is None or renames.height == 0:
        return frame
    to = renames.select(pl.col("from_partition").alias("partition_id"), "to_partition")
    joined = frame.join(to, on="partition_id", how="left", maintain_order="left")
    return joined.with_columns(
        pl.coalesce("to_partition", "partition_id").alias("partition_id")
    ).drop("to_partition")
