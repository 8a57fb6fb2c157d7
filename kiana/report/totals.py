"""The report of a database judged shard by shard, in bounded memory.

With one shard, :func:`kiana.commands.report.collect` hands the page every run and
step (:attr:`kiana.pipeline.Analysis.runs`, ``.judgement``).  With more
(:mod:`kiana.shards`), that would hold the whole database in memory; instead
:func:`bounded` keeps only what the charts draw, the steps of the charted findings
(:func:`kiana.report.data.charted_findings`, as the page charts them) and the runs of their
kernels, passes, GPUs and metrics, and :func:`totals` gathers what the page says about every
run and step one shard at a time: the counts, the version table, the speed-up pairs
and the spread per GPU, in a :class:`Totals` (``ReportData.totals``).

Partitions, series and GPUs never cross a shard, so per-shard counts add up, per-GPU
frames concatenate and versions are unions; the speed-ups of each shard are ranked by
the version table of every shard's runs, as :func:`kiana.report.frames.speedup_frame`
of every run ranks them.  ``tests/report/test_totals.py`` holds the page of several
shards equal to the page of one.

>>> import kiana
>>> from kiana.load.judged import judged_runs
>>> con = kiana.connect()
>>> _ = kiana.load_paths(con, ["data/seeds"])
>>> known = totals([judged_runs(con).lazy()], steps=0)
>>> known.counts["runs"], known.counts["GPUs"], known.gpus
(2, 2, ('NVIDIA A100 SXM4-80GB', 'NVIDIA H100 80GB HBM3'))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from kiana.report import frames
from kiana.report.data import RUN_COUNTS, _spread, chart_scopes, charted_findings, sort_findings
from kiana.stats.versions import version_table

if TYPE_CHECKING:
    from kiana.pipeline import Analysis
    from kiana.report.data import ReportOptions
    from kiana.stats import Judgement

#: The columns of a run the counts, versions and spread read (those a shard has).
COUNTED: tuple[str, ...] = ("partition_id", "kernel", "gpu", "status", "metric")
COUNTED += ("liger_version", "observed_at", "median", "p20", "p80")
#: ... and :func:`kiana.report.frames.speedup_frame`.
PAIRED: tuple[str, ...] = ("partition_id", "harness", "kernel", "pass", "gpu", "workload")
PAIRED += ("liger_version", "version", "provider", "role", "status", "metric", "median")
PAIRED += ("observed_at",)


@dataclass(frozen=True)
class Totals:
    """What the page says about every run and step when ``ReportData.runs`` and
    ``judgement.steps`` hold only what the charts draw (see the module docstring)."""

    counts: dict[str, int]  #: ``data.RUN_COUNTS``: runs, partitions, ..., steps
    versions: pl.DataFrame  #: as ``data.versions_frame`` of every run
    speedups: pl.DataFrame  #: as ``frames.speedup_frame`` of every run
    spread: pl.DataFrame  #: as ``data._spread`` of every passed run
    kernels: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()


def _columns(scan: pl.LazyFrame, wanted: tuple[str, ...]) -> list[str]:
    names = scan.collect_schema().names()
    return [c for c in dict.fromkeys(wanted) if c in names]


def _eligible() -> pl.Expr:
    """The runs :func:`kiana.report.frames.speedup_frame` pairs: passed latency runs
    with a positive median."""
    return (
        (pl.col("status") == "passed")
        & (pl.col("metric") == "latency")
        & pl.col("median").is_not_null()
        & (pl.col("median") > 0)
    )


def totals(shards: Sequence[pl.LazyFrame], *, steps: int) -> Totals:
    """:class:`Totals` of every shard's runs (each a lazy frame, collected one at a
    time, twice: the counts, then the speed-ups with every shard's version ranks) and
    the number of ``steps`` of every shard."""
    names = ("runs", "partitions", "latency runs", "memory runs", "not passed")
    counts = dict.fromkeys(names, 0)
    kernels: set[str] = set()
    gpus: set[str] = set()
    firsts, paired, spreads = [], [], []
    for scan in shards:
        runs = scan.select(_columns(scan, COUNTED)).collect()
        passed = runs.filter(pl.col("status") == "passed")
        counts["runs"] += runs.height
        counts["partitions"] += runs["partition_id"].n_unique()
        counts["latency runs"] += passed.filter(pl.col("metric") == "latency").height
        counts["memory runs"] += passed.filter(pl.col("metric") == "memory").height
        counts["not passed"] += runs.height - passed.height
        kernels |= set(runs["kernel"].drop_nulls().to_list())
        gpus |= set(runs["gpu"].drop_nulls().to_list())
        by_version = runs.group_by("liger_version")
        firsts.append(by_version.agg(pl.col("observed_at").min(), pl.len().alias("runs")))
        paired.append(
            runs.filter(_eligible()).group_by("liger_version").agg(pl.col("observed_at").min())
        )
        spreads.append(_spread(passed))
        del runs, passed
    first = _merged(firsts, runs=True)
    versions = version_table(first).join(first.select("liger_version", "runs"), on="liger_version")
    ranks = version_table(_merged(paired, runs=False))
    pairs = [
        frames.speedup_frame(
            scan.filter(_eligible()).select(_columns(scan, PAIRED)).collect(), ranks=ranks
        )
        for scan in shards
    ]
    known = {**counts, "kernels": len(kernels), "GPUs": len(gpus)}
    known |= {"Liger versions": versions.height, "steps": steps}
    return Totals(
        counts={k: known[k] for k in RUN_COUNTS},
        versions=versions.sort("version_rank"),
        speedups=_concat(pairs).sort("kernel", "pass", "gpu", "provider", "baseline", "workload"),
        spread=_concat(spreads).sort("gpu"),
        kernels=tuple(sorted(kernels)),
        gpus=tuple(sorted(gpus)),
    )


def _merged(parts: list[pl.DataFrame], *, runs: bool) -> pl.DataFrame:
    """Per version: the first observation of every shard (and the runs, summed)."""
    merged = _concat(parts).group_by("liger_version")
    if runs:
        return merged.agg(pl.col("observed_at").min(), pl.col("runs").sum())
    return merged.agg(pl.col("observed_at").min())


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical_relaxed")


def bounded(analysis: Analysis, options: ReportOptions) -> tuple[Judgement, pl.DataFrame, Totals]:
    """The judgement with the charted findings' steps only (the findings selected and
    annotated, everything else whole), the runs of the kernels, passes, GPUs and
    metrics they chart, and the :class:`Totals` of every shard."""
    import dataclasses

    judged = analysis.judged
    charted = charted_findings(sort_findings(analysis.findings), options)
    steps = analysis.steps_of(charted)
    judgement = dataclasses.replace(judged.judgement(steps), findings=analysis.findings)
    wanted = chart_scopes(steps, charted)
    keys = list(wanted.columns)
    runs = [scan.join(wanted.lazy(), on=keys, how="semi") for scan in judged.scans("runs")]
    counted = sum(int(scan.select(pl.len()).collect().item()) for scan in judged.scans("steps"))
    known = totals(judged.scans("runs"), steps=counted)
    return judgement, pl.concat(runs, how="vertical_relaxed").collect(), known
