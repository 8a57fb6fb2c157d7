"""A/A pairs: the same code measured twice is a noise measurement, never a finding.

Two sessions of one provider whose code cannot differ are an A/A pair: whatever moved
between them is noise.  In Liger's history, torch's jsd on a B200 was measured in
``all_benchmark_data.csv`` and in ``all_benchmark_data_cutile.csv`` 107 s apart at one
commit; its four workloads differ by -3.6%, -7.5%, +0.4% and -6.4%, and judged as a
step it was a change.  kiana recognises a step as an A/A pair when

* both sessions were recorded at one commit (origins ``<commit>:<csv>`` with the same
  commit and two CSVs: one pull request's run), or
* the data shows a re-run: the later session started less than ``session_gap`` (two
  hours) after the earlier one ended, in another origin (CSVs imported without git have
  the file name as origin; two files of one sitting are one checkout).

An A/A step leaves the steps and findings, feeds the calibration as a sample of pure
noise (:mod:`kiana.stats.calibration`, the sitting component) and appears in
``Judgement.quality`` (kind ``rerun``) with its difference, one row per provider and
pair of sessions.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from kiana.stats.evidence import pct
from kiana.stats.quality import shaped

#: ``<commit>:<csv>``: a commit (7-40 hex digits), a colon, the file.
_COMMIT = r"^([0-9a-fA-F]{7,40}):"


def commit_of(origin: pl.Expr) -> pl.Expr:
    """The commit part of an origin, null for an origin without one (a bare file)."""
    return origin.str.extract(_COMMIT, 1)


def mark_reruns(steps: pl.DataFrame, gap: timedelta) -> pl.DataFrame:
    """Add ``aa`` (bool) to ``steps``, which carry ``from_last_observed_at`` and
    ``to_observed_at`` (the first run of the later session)."""
    same_commit = (
        commit_of(pl.col("from_origin")).is_not_null()
        & (commit_of(pl.col("from_origin")) == commit_of(pl.col("to_origin")))
        & (pl.col("from_origin") != pl.col("to_origin"))
    )
    close = (pl.col("to_observed_at") - pl.col("from_last_observed_at")) < pl.lit(gap)
    other_origin = pl.col("from_origin").ne_missing(pl.col("to_origin"))
    aa = same_commit.fill_null(False) | (close & other_origin).fill_null(False)
    return steps.with_columns(aa.alias("aa"))


#: What one ``rerun`` quality row is of: a provider's A/A pair of sessions.
RERUN_KEYS: tuple[str, ...] = (
    "kernel", "pass", "provider", "gpu", "metric", "from_session", "to_session",
)  # fmt: skip


def rerun_steps(steps: pl.DataFrame) -> pl.DataFrame:
    """The A/A steps :func:`rerun_quality` groups, sorted by workload: its groups come
    in the order of their first row here."""
    return steps.filter(pl.col("aa") & pl.col("log_ratio").is_not_null()).sort("workload")


def rerun_quality(steps: pl.DataFrame) -> pl.DataFrame:
    """One ``rerun`` quality row per provider and A/A pair of sessions."""
    grouped = (
        rerun_steps(steps)
        .group_by(RERUN_KEYS, maintain_order=True)
        .agg(
            pl.col("to_version").first().alias("version"),
            pl.col("from_origin").first(),
            pl.col("to_origin").first(),
            (pl.col("from_n_runs") + pl.col("to_n_runs")).sum().cast(pl.Int64).alias("runs"),
            pl.col("log_ratio").mean().exp().alias("ratio"),
            pct(pl.col("log_ratio").exp() - 1.0).str.join(", ").alias("_changes"),
            pl.len().alias("_n"),
        )
    )
    where = pl.when(pl.col("from_origin").is_not_null() & pl.col("to_origin").is_not_null()).then(
        pl.lit(" (") + pl.col("from_origin") + pl.lit(" and ") + pl.col("to_origin") + pl.lit(")")
    )
    message = (
        pl.lit("same code measured twice, at ")
        + pl.col("from_session")
        + pl.lit(" and ")
        + pl.col("to_session")
        + where.fill_null(pl.lit(""))
        + pl.lit(": ")
        + pl.col("_changes")
        + pl.lit(" over ")
        + pl.col("_n").cast(pl.String)
        + pl.lit(" workload(s), mean ")
        + pct(pl.col("ratio") - 1.0)
        + pl.lit("; a noise measurement (it calibrates the sitting noise), not a finding")
    )
    return grouped.with_columns(
        pl.lit("rerun").alias("kind"),
        pl.lit(None, pl.String).alias("workload"),
        pl.lit(None, pl.String).alias("partition_id"),
        pl.col("to_session").alias("session"),
        message.alias("message"),
    ).pipe(shaped)
