"""The order of versions (Liger's releases, or another harness's version labels).

A series is one provider's runs in version order, so everything downstream rests on
one total order of the ``version`` labels found in the data:

* Labels that parse as PEP 440 versions (``0.5.10``, ``0.6.0rc1``, ``v0.4.2``) sort by
  :class:`packaging.version.Version`, so ``0.5.10`` comes after ``0.5.9`` (a string sort
  would get that wrong) and pre-releases come before their release.
* Other labels (``main``, a git hash) carry no order of their own.  They are placed by
  time: after the last PEP 440 version first observed at or before the label's first
  observation, and among themselves by first observation.  They are reported, never
  dropped.  A label measured at several times (``main`` re-benchmarked) is one
  version whose runs are replicates, because nothing in the document tells two
  ``main`` builds apart.
* Ties (two spellings of one version, ``0.6`` and ``0.6.0``) keep distinct ranks,
  ordered by first observation, so the order is total and deterministic.

Only the distinct labels are ordered here (a few dozen), so a Python loop is fine;
the rank is then joined onto the runs.
"""

from __future__ import annotations

import bisect
from datetime import datetime

import polars as pl
from packaging.version import InvalidVersion, Version

from kiana.errors import UsageError


def parse_version(label: str) -> Version | None:
    """The PEP 440 version of a label, or None when it is not one."""
    try:
        return Version(label)
    except InvalidVersion:
        return None


def version_table(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct ``version``: ``version_rank`` (0-based, total order),
    ``version_kind`` (``pep440`` | ``label``) and ``first_observed_at``."""
    if runs.height == 0:
        return pl.DataFrame(
            schema={
                "version": pl.String,
                "version_rank": pl.Int64,
                "version_kind": pl.String,
                "first_observed_at": pl.Datetime("us"),
            }
        )
    firsts = (
        runs.group_by("version")
        .agg(pl.col("observed_at").min().alias("first_observed_at"))
        .sort("version")
    )
    labels: list[str] = firsts["version"].to_list()
    seen: list[datetime | None] = firsts["first_observed_at"].to_list()
    pep: list[tuple[Version, datetime | None, str]] = []
    other: list[tuple[datetime | None, str]] = []
    for label, first in zip(labels, seen, strict=True):
        parsed = parse_version(label)
        if parsed is None:
            other.append((first, label))
        else:
            pep.append((parsed, first, label))
    pep.sort(key=lambda item: (item[0], _time_key(item[1]), item[2]))
    # Position k in the PEP 440 order: a label goes after the last release first seen
    # at or before it.  Running maximum of first-seen times keeps bisect valid.
    running: list[float] = []
    latest = float("-inf")
    for _, first, _ in pep:
        latest = max(latest, _time_key(first))
        running.append(latest)
    keyed: list[tuple[int, int, float, str, str]] = []
    for index, (_, _, label) in enumerate(pep):
        keyed.append((index, 0, 0.0, label, "pep440"))
    for first, label in other:
        slot = bisect.bisect_right(running, _time_key(first)) - 1
        keyed.append((slot, 1, _time_key(first), label, "label"))
    keyed.sort(key=lambda item: (item[0], item[1], item[2], item[3]))
    order = {label: rank for rank, (_, _, _, label, _) in enumerate(keyed)}
    kinds = {label: kind for _, _, _, label, kind in keyed}
    return (
        firsts.with_columns(
            pl.col("version").replace_strict(order, return_dtype=pl.Int64).alias("version_rank"),
            pl.col("version").replace_strict(kinds, return_dtype=pl.String).alias("version_kind"),
        )
        .sort("version_rank")
        .select("version", "version_rank", "version_kind", "first_observed_at")
    )


def _time_key(moment: datetime | None) -> float:
    if moment is None:
        return float("inf")
    return moment.timestamp()


def check_baseline(versions: pl.DataFrame, baseline: str | None) -> None:
    """Raise :class:`UsageError` when ``baseline`` is not a version in the data."""
    if baseline is None:
        return
    known: list[str] = versions["version"].to_list()
    if baseline in known:
        return
    shown = ", ".join(known[-12:]) if known else "none: the database has no passed runs"
    more = f" (and {len(known) - 12} earlier)" if len(known) > 12 else ""
    raise UsageError(
        f"--baseline {baseline!r} is not a version in the data",
        hint=f"known versions, oldest first: {shown}{more}",
    )


def gpu_version_ranks(runs: pl.DataFrame) -> pl.DataFrame:
    """``gpu``, ``harness``, ``version``, ``version_rank``: the order of
    :func:`version_table` computed on each GPU's runs of each harness alone, so that
    judging one GPU's runs orders its series exactly as judging all of them does
    (labels that are not PEP 440 versions are placed by time, and another GPU's times
    must not move them), and one harness's labels never place another's."""
    schema = {
        "gpu": pl.String,
        "harness": pl.String,
        "version": pl.String,
        "version_rank": pl.Int64,
    }
    parts = [
        version_table(part).select(
            pl.lit(gpu, pl.String).alias("gpu"),
            pl.lit(harness, pl.String).alias("harness"),
            "version",
            "version_rank",
        )
        for (gpu, harness), part in runs.group_by("gpu", "harness")
    ]
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).cast(schema)  # type: ignore[arg-type]
