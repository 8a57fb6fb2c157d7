"""Coverage: what was compared, and why the rest was not.

Silence reads as "all clear", so every judgement says how many series it could
compare and, for the others, why not: a series with one session has nothing to be
compared with; one whose sessions all conflict (:mod:`kiana.stats.quality`) is not
judged; one of an unstable sweep series (two levels, :mod:`kiana.stats.unstable`)
could not be judged; one whose only step is an A/A pair (the same code measured twice,
:mod:`kiana.stats.reruns`) was measured, not compared; with ``--baseline`` a series
without a session of that version has no step.

A series continued across a workload rename (a config key added or removed at one value,
:mod:`kiana.stats.renames`) is one series: its two slugs are counted once, and
``renamed`` says how many series were joined so, by kernel and slug part (``+tp1``:
added, ``-tp1``: removed), which the sentence names ("workload renamed: 6 series continued (...)").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from kiana.safe.text import terminal
from kiana.stats.options import JudgeOptions
from kiana.stats.renames import renamed_ids
from kiana.vocabulary import SERIES_KEYS, subject_expr

#: Reasons a series was not compared, in the order they are checked.
REASONS: tuple[str, ...] = (
    "no passed run",
    "one session only",
    "conflicting sessions",
    "same code measured twice only",
    "in an unstable sweep",
    "no session of the baseline version",
)


@dataclass(frozen=True)
class Coverage:
    """Counts of series (one provider in one partition, one metric) and partitions."""

    series: int
    compared: int
    partitions: int
    partitions_compared: int
    #: Series of the code under test (role ``subject``), and how many were compared.
    subject_series: int
    subject_compared: int
    not_compared: dict[str, int] = field(default_factory=dict)
    #: Series continued across a workload rename, by ``"<kernel> +<part>"`` (added) or
    #: ``"<kernel> -<part>"`` (removed): :mod:`kiana.stats.renames`.
    renamed: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "compared": self.compared,
            "not_compared": dict(self.not_compared),
            "partitions": self.partitions,
            "partitions_compared": self.partitions_compared,
            "subject_series": self.subject_series,
            "subject_compared": self.subject_compared,
            "renamed": dict(self.renamed),
        }

    def sentence(self) -> str:
        """``compared 30 of 1,112 series (12 of 400 partitions); not compared: ...``"""
        head = (
            f"compared {self.compared:,} of {self.series:,} series "
            f"({self.partitions_compared:,} of {self.partitions:,} partitions)"
        )
        rest = [f"{n:,} {reason}" for reason, n in self.not_compared.items() if n]
        return head + self._renamed() + ("; not compared: " + ", ".join(rest) if rest else "")

    def _renamed(self) -> str:
        return renamed_clause(self.renamed)


def renamed_clause(renamed: Mapping[str, int]) -> str:
    """``; workload renamed: 6 series continued (megatron_cross_entropy +tp1)``, names
    escaped and cut (:func:`kiana.safe.text.terminal`), three at most; "" for none."""
    counted = {str(k): int(n) for k, n in renamed.items() if isinstance(n, int) and n > 0}
    if not counted:
        return ""
    shown = [terminal(name, limit=RENAMED_SHOWN_CHARS) for name in list(counted)[:3]]
    more = len(counted) - len(shown)
    named = ", ".join(shown) + (f" and {more:,} more" if more else "")
    return f"; workload renamed: {sum(counted.values()):,} series continued ({named})"


#: Longest kernel and part name a coverage sentence shows of one rename.
RENAMED_SHOWN_CHARS = 80


def coverage(
    points: pl.DataFrame,
    steps: pl.DataFrame,
    options: JudgeOptions,
    runs: pl.DataFrame,
    *,
    reruns: pl.DataFrame | None = None,
    renames: pl.DataFrame | None = None,
) -> Coverage:
    """Count the series of ``runs``, those with a step, and the reasons of the rest.
    ``points``: every session point, conflicting ones included; ``reruns``: the A/A
    steps (left out of ``steps``); ``renames``: the workloads joined to a later form
    (:func:`kiana.stats.renames.find`: ``runs`` carry their own partitions)."""
    keys = list(SERIES_KEYS)
    joined = _renamed_series(runs, renames)
    runs = renamed_ids(runs.select(*keys, "role"), renames)
    every = runs.group_by(keys).agg(subject_expr().any().alias("_subject"))
    per_series = points.group_by(keys).agg(
        pl.len().alias("_sessions"),
        (~pl.col("conflict")).sum().alias("_clean"),
    )
    shaky = pl.col("unstable") if "unstable" in steps.columns else pl.lit(False)
    marked = steps.group_by(keys).agg(shaky.all().alias("_unstable"))
    compared = marked.with_columns((~pl.col("_unstable")).alias("_compared"))
    measured = (reruns if reruns is not None else steps.clear()).select(keys).unique()
    table = (
        every.join(per_series, on=keys, how="left", nulls_equal=True)
        .join(compared, on=keys, how="left", nulls_equal=True)
        .join(
            measured.with_columns(pl.lit(True).alias("_aa")), on=keys, how="left", nulls_equal=True
        )
        .with_columns(
            pl.col("_compared").fill_null(False),
            pl.col("_unstable").fill_null(False),
            pl.col("_aa").fill_null(False),
        )
    )
    reason = (
        pl.when(pl.col("_compared"))
        .then(None)
        .when(pl.col("_sessions").is_null())
        .then(pl.lit(REASONS[0]))
        .when((pl.col("_clean") < pl.col("_sessions")) & (pl.col("_clean") < 2))
        .then(pl.lit(REASONS[2]))
        .when(pl.col("_sessions") == 1)
        .then(pl.lit(REASONS[1]))
        .when(pl.col("_unstable"))
        .then(pl.lit(REASONS[4]))
        .when(pl.col("_aa"))
        .then(pl.lit(REASONS[3]))
        .otherwise(pl.lit(REASONS[5] if options.baseline else "no step"))
    )
    table = table.with_columns(reason.alias("_reason"))
    counts = dict(
        table.filter(pl.col("_reason").is_not_null()).group_by("_reason").len().iter_rows()
    )
    ordered = {r: int(counts[r]) for r in (*REASONS, "no step") if r in counts}
    partitions = table.group_by("partition_id").agg(pl.col("_compared").any())
    return Coverage(
        series=table.height,
        compared=int(table["_compared"].sum()),
        partitions=partitions.height,
        partitions_compared=int(partitions["_compared"].sum()),
        subject_series=int(table["_subject"].sum()),
        subject_compared=int((table["_subject"] & table["_compared"]).sum()),
        not_compared=ordered,
        renamed=joined,
    )


def _renamed_series(runs: pl.DataFrame, renames: pl.DataFrame | None) -> dict[str, int]:
    """Per ``"<kernel> +<part>"``, the series that have runs of both forms."""
    if renames is None or renames.height == 0:
        return {}
    series = runs.select("partition_id", "provider", "metric").unique()
    both = (
        series.join(renames, left_on="partition_id", right_on="from_partition")
        .join(series, left_on=["to_partition", "provider", "metric"],
              right_on=["partition_id", "provider", "metric"], how="semi")
    )  # fmt: skip
    named = pl.col("kernel") + pl.when("added").then(pl.lit(" +")).otherwise(pl.lit(" -"))
    counts = both.group_by((named + pl.col("part")).alias("name")).len().sort("name")
    return {str(k): int(n) for k, n in counts.iter_rows()}
