"""Outlier sessions: one session off, then back, is not two changes.

A session whose level leaves its neighbours' and comes back at the very next session
is an *outlier* (a busy machine, a thermal hiccup, a one-run mistake), not a
regression followed by an improvement.  Judged step by step it would be both: "-41%"
into it and "+70%" out of it, each a maintainer's wasted hour.

Rule, for a session ``i`` with a session before (``i-1``) and after (``i+1``) in its
series (consecutive steps only, not with ``--baseline``):

* both steps around it are beyond the noise of one workload between two sessions
  (``separation`` times the step's per-workload noise, measured and calibrated; the
  sitting offset left out, since a whole session off and back is an outlier whatever
  moved it) and the threshold, in opposite directions, and both at least ``resolution * threshold`` (9% by default): a small
  dip and return is as likely a change and its revert, and a maintainer wants to see a
  real 8% regression even when the next release undid it; glitches are large;
* the series comes back: the level of ``i+1`` is within half the smaller jump of the
  level of ``i-1`` (``|ln(L[i+1] / L[i-1])| <= min(|jump in|, |jump out|) / 2``), and
  where the whole sweep took both steps, its mean return is within ``separation``
  times its noise (the workloads' noise pooled, the sitting's shared) or 5% of the
  jump, whichever is larger: a glitch leaves the same code at the same level, while a
  change followed by a revert that did not quite undo it leaves a residual the sweep
  resolves (on the spread model's detection corpora, a -11% release step undone by
  +14% under the next label, a residual of +1%; ``bench/detection.py``);
* it is off for whatever it touches and back for the same: the other workloads of its
  sweep either took both steps with it (a whole session off and back) or neither (one
  workload off and back).  A workload that moved alone and came back when the whole
  sweep moved the other way is two changes, not an outlier;
* its same-session control did not move with it
  (:func:`kiana.stats.controls.control_moved`: the same direction, half the jump or
  more, beyond half the separation in its own noise), on both steps, or there is no
  control.  A control that moved with it explains the session as the machine's
  (``drift``, which stands).

Or, for **one workload against the rest of its sweep**: measured on the basis the lone
rule of :mod:`kiana.stats.sweeps` reads (its change against its control where it has
one, else its own change) minus the other workloads' mean, weighted by their noise
(:func:`kiana.stats.pooling.deviation`, the lone rule's own: the sitting's offset,
shared by the sweep, cancels), the workload leaves by ``separation`` times that
difference's standard error and by ``resolution * threshold``, and comes back at the next
session within half the smaller jump, while the rest of the sweep took neither step.
In a shifted sitting every workload of a provider shares an offset of several percent
that its own change carries and this deviation does not: a workload 12% off its sweep
and back, whose own change was -8% and +9%, is one session off, not an improvement and
a regression.  On the realistic model's 40 detection corpora (``bench/misses.py``,
its table "no change of Liger's own") this took the ``lone`` findings of unchanged
groups from 42 to 30 and of drift groups from 3 to 1, and no regression more was missed;
weighing the other workloads as the lone rule does (round 7, instead of their plain
mean) took the false findings of unchanged groups from 103 to 100 and moved nothing
else (``bench/detection.py``, both models).
The quality entry and the evidence then give the deviation, "(against the rest of its
sweep)".

Both steps then become ``inconclusive`` with the evidence "outlier at <session>" and
``outlier`` true (findings leave them out of the pooled evidence), and the session
gets a ``quality`` entry (kind ``outlier``) naming it and its size.  The
last session of a series cannot be known to return: its step keeps its verdict, and
its evidence says so.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.aggregate import lone_basis
from kiana.stats.controls import control_moved
from kiana.stats.evidence import pct
from kiana.stats.options import JudgeOptions
from kiana.stats.pooling import deviation
from kiana.stats.quality import empty_quality, shaped
from kiana.stats.sessions import session_label
from kiana.vocabulary import FINDING_KEYS, SERIES_KEYS


def mark_outliers(steps: pl.DataFrame, options: JudgeOptions) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Steps with outlier sessions marked (see the module docstring), and one
    ``quality`` row per outlier session.  ``steps`` are in series and session order."""
    if steps.height == 0 or options.baseline is not None:
        return steps.with_columns(pl.lit(False).alias("outlier")), empty_quality()
    frame = _into(steps, options)
    keys = list(SERIES_KEYS)
    frame = frame.with_columns(
        pl.col("_into").shift(1).over(keys).fill_null(False).alias("_out_of"),
        session_label(pl.col("to_version"), pl.col("to_session")).alias("_at"),
    ).with_columns(
        session_label(pl.col("from_version"), pl.col("from_session")).alias("_from_at"),
        (pl.col("_off").exp() - 1.0).shift(1).over(keys).alias("_prev_change"),
        pl.col("_versus").shift(1).over(keys).alias("_prev_versus"),
    )
    marked = _marked(frame)
    helpers = ["_sweep_wide", "_dev", "_dev_moved", "_next_sweep_wide", "_next_lr", "_next_moved", "_next_calm", "_chained", "_last", "_into",
               "_out_of", "_at", "_from_at", "_prev_change", "_versus", "_off", "_prev_versus"]  # fmt: skip
    return marked.drop(helpers), _quality(marked)


def _into(steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """``_into``: the step into an outlier session (module docstring), with the
    neighbouring step's columns it rests on."""
    keys = list(SERIES_KEYS)
    # Beyond the noise of one workload between two sessions (the sitting offset left
    # out: a whole session off and back is an outlier whatever moved it).
    moved = (pl.col("log_ratio").abs() >= options.separation * pl.col("wnoise")) & (
        pl.col("change").abs() >= options.threshold
    )
    calm = ~control_moved(
        pl.col("control_log_ratio"), pl.col("control_full_noise"), pl.col("log_ratio"), options
    )
    # Did the other workloads of the sweep take the same step?  (Their mean log ratio
    # in the same direction, at least half as large.)
    group = list(FINDING_KEYS)
    n = pl.col("log_ratio").count().over(group)
    others = (pl.col("log_ratio").sum().over(group) - pl.col("log_ratio")) / (n - 1)
    same = ((others > 0) == (pl.col("log_ratio") > 0)) & (
        others.abs() >= pl.col("log_ratio").abs() / 2
    )
    # One workload against the rest of its sweep, on the basis the lone rule reads (the
    # change against the control where there is one): the sitting's offset cancels.
    y, s = lone_basis()
    dev, dev_se, _ = deviation(y, s)
    dev_moved = (
        (n > 1)
        & (dev.abs() >= options.separation * dev_se)
        & (dev.abs() >= math.log1p(options.resolution * options.threshold))
    )
    steps = steps.with_columns(
        pl.when(n > 1).then(same).otherwise(False).fill_null(False).alias("_sweep_wide"),
        pl.when(n > 1).then(dev).alias("_dev"),
        dev_moved.fill_null(False).alias("_dev_moved"),
    )
    frame = steps.with_columns(
        pl.col("_sweep_wide").shift(-1).over(keys).alias("_next_sweep_wide"),
        pl.col("log_ratio").shift(-1).over(keys).alias("_next_lr"),
        moved.shift(-1).over(keys).alias("_next_moved"),
        calm.shift(-1).over(keys).alias("_next_calm"),
        (pl.col("from_session").shift(-1).over(keys) == pl.col("to_session")).alias("_chained"),
        pl.col("to_session").shift(-1).over(keys).is_null().alias("_last"),
    )
    lr, nxt = pl.col("log_ratio"), pl.col("_next_lr")
    smaller = pl.min_horizontal(lr.abs(), nxt.abs())
    back = _sweep_back(lr + nxt, smaller, options)
    dev, dev_next = pl.col("_dev"), pl.col("_dev").shift(-1).over(keys)
    dev_smaller = pl.min_horizontal(dev.abs(), dev_next.abs())
    alone = (
        pl.col("_chained").fill_null(False)
        & pl.col("_dev_moved")
        & pl.col("_dev_moved").shift(-1).over(keys).fill_null(False)
        & ((dev > 0) != (dev_next > 0))
        & ((dev + dev_next).abs() <= dev_smaller / 2)
        & ~pl.col("_sweep_wide")
        & ~pl.col("_next_sweep_wide").fill_null(True)
    ).fill_null(False)
    into = (
        pl.col("_chained").fill_null(False)
        & moved
        & pl.col("_next_moved").fill_null(False)
        & ((lr > 0) != (nxt > 0))
        & ((lr + nxt).abs() <= smaller / 2)
        & (smaller >= math.log1p(options.resolution * options.threshold))
        & calm
        & pl.col("_next_calm").fill_null(False)
        & (pl.col("_sweep_wide") == pl.col("_next_sweep_wide"))
        & (~pl.col("_sweep_wide") | back)
    ).fill_null(False)
    return frame.with_columns(
        (into | alone).alias("_into"),
        (alone & ~into).alias("_versus"),
        pl.when(into).then(lr).otherwise(dev).alias("_off"),
    )


#: Said of a one-workload outlier found against the rest of its sweep (module docstring).
VERSUS = " (against the rest of its sweep)"

#: A whole sweep off and back comes back within this share of its smaller jump, at
#: least (module docstring).
BACK_SHARE = 0.05


def _sweep_back(ret: pl.Expr, smaller: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """A whole sweep's level came back (module docstring): the mean over its workloads
    of ``ret`` (``ln(L[i+1] / L[i-1])``) within ``separation`` times the noise of that
    mean (the per-workload noise pooled, the sitting's shared) or within
    :data:`BACK_SHARE` of the smaller jump, whichever is larger."""
    group = list(FINDING_KEYS)
    k = ret.count().over(group)
    pooled = (
        pl.col("wnoise").pow(2).mean().over(group) / k
        + pl.col("sitting_sigma").pow(2).mean().over(group)
    ).sqrt()
    slack = pl.max_horizontal(options.separation * pooled, BACK_SHARE * smaller.mean().over(group))
    return (ret.mean().over(group).abs() <= slack) | pooled.is_null()


def _marked(frame: pl.DataFrame) -> pl.DataFrame:
    """``outlier``, verdicts and evidence of the steps into and out of an outlier."""
    flagged = pl.col("verdict").is_in(["regression", "improvement", "drift"])

    def note(at: str, change: pl.Expr, versus: str, back: str) -> pl.Expr:
        return (
            pl.lit("outlier at ")
            + pl.col(at)
            + pl.lit(": ")
            + pct(change)
            + pl.when(pl.col(versus)).then(pl.lit(VERSUS)).otherwise(pl.lit(""))
            + pl.lit(f" and back {back}, not a change; ")
        )

    outlier_note = (
        pl.when(pl.col("_into"))
        .then(note("_at", pl.col("_off").exp() - 1.0, "_versus", "at the next session"))
        .when(pl.col("_out_of"))
        .then(note("_from_at", pl.col("_prev_change"), "_prev_versus", "here"))
        .otherwise(pl.lit(""))
    )
    touched = pl.col("_into") | pl.col("_out_of")
    return frame.with_columns(
        touched.alias("outlier"),
        pl.when(touched & flagged & (pl.col("verdict") != "drift"))
        .then(pl.lit("inconclusive"))
        .otherwise(pl.col("verdict"))
        .alias("verdict"),
        (
            outlier_note
            + pl.col("evidence")
            + pl.when(pl.col("_last") & flagged & ~touched)
            .then(pl.lit("; latest session: whether it comes back is not known yet"))
            .otherwise(pl.lit(""))
        ).alias("evidence"),
    )


def _quality(marked: pl.DataFrame) -> pl.DataFrame:
    """One ``quality`` row per outlier session."""
    return (
        marked.filter(pl.col("_into"))
        .with_columns(
            pl.lit("outlier").alias("kind"),
            pl.col("to_version").alias("version"),
            pl.col("to_session").alias("session"),
            pl.col("to_n_runs").cast(pl.Int64).alias("runs"),
            pl.col("_off").exp().alias("ratio"),
            (
                pl.lit("one session ")
                + pct(pl.col("_off").exp() - 1.0)
                + pl.lit(" off its neighbours")
                + pl.when(pl.col("_versus")).then(pl.lit(VERSUS)).otherwise(pl.lit(""))
                + pl.lit(" and back at the next: an outlier, not a change")
            ).alias("message"),
        )
        .pipe(shaped)
    )
