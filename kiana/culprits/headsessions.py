"""Every head row accounted for: judged in a step that ends at its session, or not
judged, with the reason.

A head row (a run whose ``origin`` is the head's) lies in one session point of its
series (partition, provider, metric; sessions as the statistics form them,
:func:`kiana.stats.series.judgeable`).  The point is **judged** when a step of the
judgement that is not an outlier's ends at it (same series, ``to_session`` and
``to_origin``): that step's finding is the gate's (regression, improvement,
unchanged, or one of the cases that fail closed, :mod:`kiana.culprits.outcome`).
Every other head point is **not judged**, for the first reason that holds
(:data:`REASONS`):

* ``same session``: it lies within the session gap of a base session of its series
  (a base row re-stamped, one column changed): one sitting is never its own history;
* ``older version``: its version ranks below the newest of its series' history, so
  the statistics place it inside the history;
* ``before`` / ``inside``: dated before the series' first base session, or before its
  last one (a step ends at a base session, never at the head's);
* ``hidden``: a later head point of the series follows it (rows at the old speed one
  or seven days later make it an outlier, judged as nothing);
* ``no step``: no judged step ends at it (its step is an outlier's);
* ``no history``: its series has no base run.  It is *new* (shown, not failed) when
  its kernel, its GPU, or its workload on that kernel and GPU has no base run of any
  provider: a pull request that adds a kernel, a GPU or a workload.

Conflicting points (:func:`kiana.culprits.accounting.head_conflicts`) are counted
there, not here.  A head row of a provider under test that is not judged fails the
gate closed (:data:`kiana.culprits.exits.EXIT_UNJUDGED`) unless it is new.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

import polars as pl

from kiana.stats.series import judgeable
from kiana.stats.sessions import SESSION_GAP
from kiana.stats.versions import gpu_version_ranks
from kiana.vocabulary import SERIES_KEYS, subject_expr

Reason = Literal["same session", "older version", "before", "inside", "hidden", "no step",
                 "no history"]  # fmt: skip
#: What each reason says (a row's reason in the output; counts only, never data).
REASONS: dict[Reason, str] = {
    "same session": "the same session as a base row (within the session gap of one)",
    "older version": "an older version than the base's newest of its series",
    "before": "dated before the history of its series",
    "inside": "dated inside the history of its series (before its last base session)",
    "hidden": "followed by later head rows of its series that hide it (an outlier)",
    "no step": "no judged step ends at its session (an outlier's step)",
    "no history": "matches no history (no base run of its series)",
}
#: What a series with no history may be new in, in the order checked.
NEW_KINDS = ("kernel", "GPU", "workload")
_LABELS = ("kernel", "pass", "provider", "gpu", "workload", "metric")


@dataclass(frozen=True)
class Unjudged:
    """Head rows of one session point that no judged step ends at, and why."""

    series: dict[str, str]  #: kernel, pass, provider, GPU, workload, metric
    session: str
    rows: int
    reason: Reason
    is_subject: bool  #: a provider under test (its runs' role)
    new: str | None = None  #: "kernel", "GPU" or "workload" the pull request adds

    @property
    def failing(self) -> bool:
        return self.is_subject and self.new is None

    @property
    def text(self) -> str:
        """The reason in words; a new series says what it adds."""
        if self.new is not None:
            return f"a new {self.new}: nothing to compare with"
        return REASONS[self.reason]


def _head_points(frame: pl.DataFrame, origins: list[str]) -> pl.DataFrame:
    is_head = pl.col("origin").is_in(origins).fill_null(False)
    return (
        frame.filter(is_head)
        .group_by(*SERIES_KEYS, "session", "origin")
        .agg(
            *(pl.col(c).first() for c in ("kernel", "pass", "gpu", "workload", "version_rank")),
            pl.col("session_start").min(),
            pl.col("session_end").max(),
            pl.len().alias("rows"),
            subject_expr().any().alias("is_subject"),
        )
    )


def _judged(points: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """``points`` with ``judged``: a non-outlier step ends at it."""
    if steps.height == 0:
        return points.with_columns(pl.lit(False).alias("judged"))
    ends = (
        steps.filter(~pl.col("outlier").fill_null(False))
        .select(*SERIES_KEYS, pl.col("to_session").cast(pl.String).alias("session"),
                pl.col("to_origin").cast(pl.String).alias("origin"))
        .unique()
        .with_columns(pl.lit(True).alias("judged"))
    )  # fmt: skip
    keys = [*SERIES_KEYS, "session", "origin"]
    return points.join(ends, on=keys, how="left").with_columns(pl.col("judged").fill_null(False))


def _reasons(
    points: pl.DataFrame, every: pl.DataFrame, past: pl.DataFrame, gap: timedelta
) -> pl.DataFrame:
    """The :data:`REASONS` key of each of ``points`` (module docstring's order);
    ``every``: all head points, ``past``: the history's runs."""
    history = past.group_by(SERIES_KEYS).agg(
        pl.col("session_start").min().alias("_first"),
        pl.col("version_rank").max().alias("_top"),
    )
    last = (
        past.join(history, on=SERIES_KEYS)
        .filter(pl.col("version_rank") == pl.col("_top"))
        .group_by(SERIES_KEYS)
        .agg(pl.col("session_start").max().alias("_last"))
    )
    sessions = past.group_by(*SERIES_KEYS, "session", "origin").agg(
        pl.col("session_start").min().alias("_start"), pl.col("session_end").max().alias("_end")
    )
    near = (
        points.join(sessions, on=SERIES_KEYS)
        .filter(
            (pl.col("_start") <= pl.col("session_end") + gap)
            & (pl.col("session_start") - gap <= pl.col("_end"))
        )
        .select(*SERIES_KEYS, "session", "origin")
        .unique()
        .with_columns(pl.lit(True).alias("_same"))
    )
    later = every.select(
        *SERIES_KEYS, pl.col("version_rank").alias("_rank"), pl.col("session_start").alias("_at")
    )
    hidden = (
        points.join(later, on=SERIES_KEYS)
        .filter(
            (pl.col("_rank") > pl.col("version_rank"))
            | ((pl.col("_rank") == pl.col("version_rank")) & (pl.col("_at") > pl.col("session_start")))
        )
        .select(*SERIES_KEYS, "session", "origin")
        .unique()
        .with_columns(pl.lit(True).alias("_hidden"))
    )  # fmt: skip
    keys = [*SERIES_KEYS, "session", "origin"]
    out = (
        points.join(history, on=SERIES_KEYS, how="left")
        .join(last, on=SERIES_KEYS, how="left")
        .join(near, on=keys, how="left")
        .join(hidden, on=keys, how="left")
    )
    at_top = pl.col("version_rank") == pl.col("_top")
    reason = (
        pl.when(pl.col("_top").is_null()).then(pl.lit("no history"))
        .when(pl.col("_same").fill_null(False)).then(pl.lit("same session"))
        .when(pl.col("version_rank") < pl.col("_top")).then(pl.lit("older version"))
        .when(pl.col("session_start") < pl.col("_first")).then(pl.lit("before"))
        .when(at_top & (pl.col("session_start") < pl.col("_last"))).then(pl.lit("inside"))
        .when(pl.col("_hidden").fill_null(False)).then(pl.lit("hidden"))
        .otherwise(pl.lit("no step"))
    )  # fmt: skip
    return out.with_columns(reason.alias("reason"))


class _Known:
    """The kernels, GPUs and workloads (per kernel and GPU) the history holds."""

    def __init__(self, past: pl.DataFrame) -> None:
        triples = past.select("kernel", "gpu", "workload").unique()
        self.workloads = {tuple(str(v) for v in row) for row in triples.iter_rows()}
        self.kernels = {k for k, _, _ in self.workloads}
        self.gpus = {g for _, g, _ in self.workloads}

    def new(self, row: dict[str, object]) -> str | None:
        """What a series with no history adds (None: nothing new, only its series)."""
        kernel, gpu, workload = str(row["kernel"]), str(row["gpu"]), str(row["workload"])
        if kernel not in self.kernels:
            return "kernel"
        if gpu not in self.gpus:
            return "GPU"
        return "workload" if (kernel, gpu, workload) not in self.workloads else None


def unjudged(
    runs: pl.DataFrame,
    steps: pl.DataFrame,
    origins: set[str],
    *,
    conflicts: pl.DataFrame | None = None,
    gap: timedelta = SESSION_GAP,
) -> tuple[Unjudged, ...]:
    """The head session points (``origin`` in ``origins``) no judged step of ``steps``
    ends at, each with its reason (module docstring); conflicting points left out."""
    if runs.height == 0 or not origins:
        return ()
    frame = judgeable(runs, gap)
    ranks = gpu_version_ranks(frame)
    on = [c for c in ("gpu", "harness") if c in ranks.columns] + ["version"]
    frame = frame.join(ranks.select(*on, "version_rank"), on=on, how="left")
    every = _judged(_head_points(frame, sorted(origins)), steps)
    head = every.filter(~pl.col("judged"))
    if conflicts is not None and conflicts.height and "session" in conflicts.columns:
        clash = conflicts.select(*SERIES_KEYS, pl.col("session").cast(pl.String)).unique()
        head = head.join(clash, on=[*SERIES_KEYS, "session"], how="anti")
    if head.height == 0:
        return ()
    is_head = pl.col("origin").is_in(sorted(origins)).fill_null(False)
    past = frame.filter(~is_head)
    found = _reasons(head, every, past, gap).sort(*SERIES_KEYS, "session_start")
    known = _Known(past)
    out = []
    for row in found.iter_rows(named=True):
        reason: Reason = row["reason"]
        out.append(
            Unjudged(
                series={c: str(row[c]) for c in _LABELS},
                session=str(row["session"]),
                rows=int(row["rows"]),
                reason=reason,
                is_subject=bool(row["is_subject"]),
                new=known.new(row) if reason == "no history" else None,
            )
        )
    return tuple(out)
