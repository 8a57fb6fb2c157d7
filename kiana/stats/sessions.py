"""Sessions: which runs were measured together.

A run's ``liger_version`` is the Liger release *installed* when it ran.  In a
development tree that is the last release, so a kernel that a pull request made
faster or slower is usually measured under the same label as before: a label is not
one piece of code.  kiana therefore judges *sessions*, not labels.

A **session** is one benchmark sitting: the runs of one kernel, timed pass, GPU,
metric and version label (every provider and workload of the sweep), taken
together.  "Together" comes from what the input says:

* runs imported from Liger's CSVs carry the file and, from git history, the commit
  that recorded them (labels ``liger_csv`` and ``liger_commit``, joined here as
  ``origin``): one file at one commit is one sitting at most;
* within that, runs are sorted by ``observed_at`` and a gap of more than
  :data:`SESSION_GAP` (two hours) between consecutive runs starts a new session.

Why two hours: Liger's benchmark scripts time every provider and workload of one
kernel in one process, seconds to minutes apart.  In Liger's real CSVs
(``../shared/liger``), of the 3,655 gaps between consecutive rows of one file,
kernel, pass, GPU, metric and label, 3,644 are under 30 minutes, 7 between 30 and
60 minutes and the other 4 over a week (a re-benchmark under the same label).
Nothing falls between one hour and one week, and two hours sits in that empty
middle with margin on both sides.

A session's id (``session``) is the time of its first run, ``YYYY-MM-DDTHH:MM:SSZ``
(UTC, whole seconds), followed by ``~<version>`` where sessions of two version labels
started at the same second.  It is shared by every provider and workload of the sitting,
so the Liger provider and its same-session baselines (the controls) carry the same
session ids, and the workloads of a sweep line up into one finding.

One provider's runs of one partition inside one session are *replicates* of each
other.  Replicates that disagree far beyond their noise (``conflict``: two
implementations under one provider name, a mixed-up file) are a data-quality
problem: :func:`conflicting` finds them, and they are reported, never judged and never
pooled silently.
"""

from __future__ import annotations

import math
from datetime import timedelta

import polars as pl

from kiana.vocabulary import SESSION_SCOPE

#: A gap longer than this between two runs of one scope starts a new session.
SESSION_GAP = timedelta(hours=2)

#: The session id's format (UTC, whole seconds).
SESSION_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def assign_sessions(runs: pl.DataFrame, gap: timedelta = SESSION_GAP) -> pl.DataFrame:
    """Add ``session`` (the id), ``session_start`` (datetime of its first run) and
    ``session_end`` to every run (see the module docstring).  ``runs`` needs
    ``observed_at``, the :data:`SESSION_SCOPE` columns and ``origin`` (may be null)."""
    scope = [*SESSION_SCOPE, "origin"]
    ordered = runs.sort([*scope, "observed_at"], nulls_last=True)
    new = (pl.col("observed_at").diff().over(scope) > pl.lit(gap)).fill_null(True)
    numbered = ordered.with_columns(new.cum_sum().over(scope).alias("_session_no"))
    keys = [*scope, "_session_no"]
    return (
        numbered.with_columns(
            pl.col("observed_at").min().over(keys).alias("session_start"),
            pl.col("observed_at").max().over(keys).alias("session_end"),
        )
        .with_columns(
            pl.col("session_start").dt.strftime(SESSION_FORMAT).alias("session"),
        )
        .drop("_session_no")
        .with_columns(_distinct(pl.col("session")).alias("session"))
    )


def _distinct(session: pl.Expr) -> pl.Expr:
    """The session id, with ``~<version>`` after it where sessions of other version labels
    of the same kernel, pass, GPU and metric started at the same second (several releases
    measured in one sitting): each is a session of its own, and an id two of them shared
    would pair every point of one with every point of the other wherever sessions are
    joined (a history cloned with shared timestamps had 18 times its steps)."""
    scope = [c for c in SESSION_SCOPE if c != "version"]
    clash = pl.col("version").n_unique().over([*scope, "session"]) > 1
    return pl.when(clash).then(session + pl.lit("~") + pl.col("version")).otherwise(session)


def session_label(version: pl.Expr, session: pl.Expr) -> pl.Expr:
    """``0.8.0 (2026-06-16)``: a label and the day of its session, for people."""
    return version + pl.lit(" (") + session.str.slice(0, 10) + pl.lit(")")


def conflicting(*, gross_change: float, separation: float) -> pl.Expr:
    """True for a point (one provider's runs of one partition in one session) whose
    replicates disagree far beyond their noise: the range of their log medians exceeds
    both ``ln(1 + gross_change)`` and ``separation * sqrt(2)`` times their own spread
    sigma.  Two runs of one sitting 25% apart are not noise on any GPU; a kernel that
    noisy shows it in its p20-p80 spread, which raises the bar with it."""
    spread = pl.col("spread_sigma").fill_null(0.0)
    size = pl.col("log_range")
    return (
        (pl.col("n_runs") > 1)
        & (size > math.log1p(gross_change))
        & (size > separation * math.sqrt(2.0) * spread)
    )
