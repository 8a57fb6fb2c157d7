"""The report of a database judged shard by shard, in bounded memory.

With one shard, :func:`kiana.commands.report.collect` hands the page every run and
step (:attr:`kiana.pipeline.Analysis.runs`, ``.judgement``).  With more
(:mod:`kiana.shards`), that would hold the whole database in memory; instead
:func:`bounded` keeps only what the page shows: the findings of its tables and charts
(:class:`kiana.report.listing.Listing`, with the counts of every finding), the steps of
the charted findings and the runs of their kernels, passes, GPUs and metrics; and
:func:`totals` gathers what the page says about every run and step one shard at a
time: the counts, the version table, the speed-up pairs and the spread per GPU, in a
:class:`Totals` (``ReportData.totals``).

Partitions, series and GPUs never cross a shard, so per-shard counts add up, per-GPU
frames concatenate and versions are unions; the speed-ups of each shard are ranked by
the version table of every shard's runs, as :func:`kiana.report.frames.speedup_frame`
of every run ranks them.  ``tests/report/test_totals.py`` holds the page of several
shards equal to the page of one.

>>> import kiana
>>> from kiana.load.judged import judged_runs
>>> con = kiana.connect()
>>> _ = kiana.load_paths(con, ["data/seeds"])
>>> known = totals(lambda: [judged_runs(con)], steps=0)
>>> known.counts["runs"], known.counts["GPUs"], known.gpus
(2, 2, ('NVIDIA A100 SXM4-80GB', 'NVIDIA H100 80GB HBM3'))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import polars as pl

from kiana.report import frames
from kiana.report.data import RUN_COUNTS, chart_scopes, spread_frame
from kiana.report.known import Totals
from kiana.report.listing import listing
from kiana.shards.results import own_buffers
from kiana.stats.versions import version_table
from kiana.vocabulary import FINDING_KEYS

if TYPE_CHECKING:
    from kiana.report.data import ReportOptions
    from kiana.shards import Judged
    from kiana.stats import Judgement

#: The columns of a run the counts, versions and spread read (those a shard has).
COUNTED: tuple[str, ...] = ("partition_id", "kernel", "gpu", "harness", "status", "metric")
COUNTED += ("version", "observed_at", "median", "p20", "p80")


def _columns(runs: pl.DataFrame, wanted: tuple[str, ...]) -> list[str]:
    return [c for c in dict.fromkeys(wanted) if c in runs.columns]


def _eligible() -> pl.Expr:
    """The runs :func:`kiana.report.frames.speedup_frame` pairs: passed latency runs
    with a positive median."""
    return (
        (pl.col("status") == "passed")
        & (pl.col("metric") == "latency")
        & pl.col("median").is_not_null()
        & (pl.col("median") > 0)
    )


def totals(shards: Callable[[], Iterable[pl.DataFrame]], *, steps: int) -> Totals:
    """:class:`Totals` of every shard's runs (``shards()`` gives them one shard at a
    time; it is read twice: the counts, then the speed-ups with every shard's version
    ranks) and the number of ``steps`` of every shard."""
    return _totals(shards, steps, None)[0]


def _totals(
    shards: Callable[[], Iterable[pl.DataFrame]], steps: int, keep: pl.DataFrame | None
) -> tuple[Totals, list[pl.DataFrame]]:
    """:func:`totals`, and the runs of each shard that match a row of ``keep`` (a
    semi-join on its columns) kept on the first reading."""
    names = ("runs", "partitions", "latency runs", "memory runs", "not passed")
    counts = dict.fromkeys(names, 0)
    kernels: set[str] = set()
    gpus: set[str] = set()
    harnesses: set[str | None] = set()
    firsts, paired, spreads, kept = [], [], [], []
    for shard in shards():
        if keep is not None:
            kept.append(own_buffers(shard.join(keep, on=list(keep.columns), how="semi")))
        runs = shard.select(_columns(shard, COUNTED))
        del shard
        passed = runs.filter(pl.col("status") == "passed")
        counts["runs"] += runs.height
        counts["partitions"] += runs["partition_id"].n_unique()
        counts["latency runs"] += passed.filter(pl.col("metric") == "latency").height
        counts["memory runs"] += passed.filter(pl.col("metric") == "memory").height
        counts["not passed"] += runs.height - passed.height
        kernels |= set(runs["kernel"].drop_nulls().to_list())
        gpus |= set(runs["gpu"].drop_nulls().to_list())
        harnesses |= set(runs["harness"].unique().to_list())
        by_version = runs.group_by("version")
        firsts.append(
            own_buffers(by_version.agg(pl.col("observed_at").min(), pl.len().alias("runs")))
        )
        eligible = runs.filter(_eligible())
        paired.append(own_buffers(eligible.group_by("version").agg(pl.col("observed_at").min())))
        spreads.append(own_buffers(spread_frame(passed)))
        del runs, passed, eligible
    first = _merged(firsts, runs=True)
    versions = version_table(first).join(first.select("version", "runs"), on="version")
    ranks = version_table(_merged(paired, runs=False))
    pairs = [
        own_buffers(frames.speedup_frame(shard.filter(_eligible()), ranks=ranks))
        for shard in shards()
    ]
    known = {**counts, "kernels": len(kernels), "GPUs": len(gpus)}
    known |= {"versions": versions.height, "steps": steps}
    found = Totals(
        counts={k: known[k] for k in RUN_COUNTS},
        versions=versions.sort("version_rank"),
        speedups=_concat(pairs).sort("kernel", "pass", "gpu", "provider", "baseline", "workload"),
        spread=_concat(spreads).sort("gpu"),
        kernels=tuple(sorted(kernels)),
        gpus=tuple(sorted(gpus)),
        harnesses=tuple(sorted(harnesses, key=lambda h: (h is None, h or ""))),
    )
    return found, kept


def _merged(parts: list[pl.DataFrame], *, runs: bool) -> pl.DataFrame:
    """Per version: the first observation of every shard (and the runs, summed)."""
    merged = _concat(parts).group_by("version")
    if runs:
        return merged.agg(pl.col("observed_at").min(), pl.col("runs").sum())
    return merged.agg(pl.col("observed_at").min())


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical_relaxed")


def bounded(
    judged: Judged, findings: pl.DataFrame, options: ReportOptions
) -> tuple[Judgement, pl.DataFrame, Totals]:
    """The judgement (``judged``, of :attr:`kiana.pipeline.Analysis.judged`) with the
    ``findings`` the page shows and the charted findings' steps
    only (everything else whole), the runs of the kernels, passes, GPUs and metrics
    they chart, and the :class:`Totals` of every shard, with the
    :class:`~kiana.report.listing.Listing` of every finding.  Through
    :class:`~kiana.shards.Judged`'s own readers (``runs()``, ``steps()``), one shard at
    a time, so a judgement on disk or stored in the database reads the same."""
    shown = listing(findings, top=options.top, rows=options.table_rows)
    steps, counted = _charted_steps(judged.steps(), shown.charted)
    judgement = dataclasses.replace(judged.judgement(steps), findings=shown.rows())
    known, kept = _totals(judged.runs, counted, chart_scopes(steps, shown.charted))
    return judgement, _concat(kept), dataclasses.replace(known, listing=shown)


def _charted_steps(
    shards: Iterable[pl.DataFrame], charted: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """The steps of the ``charted`` findings (the same finding keys), shard by shard in
    the judge's order (as the page of one shard filters them), and how many steps there
    are in every shard."""
    keys = list(FINDING_KEYS)
    wanted = charted.select(keys).unique()
    kept, count = [], 0
    for steps in shards:
        count += steps.height
        kept.append(own_buffers(steps.join(wanted, on=keys, how="semi", maintain_order="left")))
        del steps
    return _concat(kept), count
