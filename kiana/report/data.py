"""What the page is made of: :class:`ReportData` (the runs, the judgement, the data
quality and the options, gathered by the caller) and :func:`gather`, which turns it
into the small frames the sections show (aggregated in polars, never per run).
Nothing here reads a database or judges: see ``kiana.commands.report.collect``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl

from kiana.errors import KianaError
from kiana.findings.counts import Counts, folded_expr, listed_expr
from kiana.load.quality import DataQuality
from kiana.report import frames
from kiana.report.known import Totals
from kiana.report.listing import Listing, listing, ordered
from kiana.stats import Judgement, JudgeOptions
from kiana.stats.versions import version_table
from kiana.vocabulary import is_bridge


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class ReportOptions:
    """How the page is built.

    top: findings that get charts; table_rows: rows shown per table before a note says
    how many more there are; title; command_line: recorded on the page."""

    top: int = 30
    table_rows: int = 2000
    title: str = "kiana report"
    command_line: str = ""


@dataclass(frozen=True)
class ReportData:
    """Everything the page shows: :func:`kiana.report.render` is a function of it.

    ``runs`` is ``kiana.load.judged.judged_runs(con)`` (or ``kiana.load.runs(con)``);
    ``judgement`` is ``kiana.stats.judge(runs, judge_options)`` (the options are shown
    on the page, their threshold drawn on the charts); ``quality`` is
    ``kiana.load.quality.collect(con)`` (empty by default); ``database`` names where
    the runs came from; ``generated_at`` is the page's time."""

    runs: pl.DataFrame
    judgement: Judgement
    judge_options: JudgeOptions = field(default_factory=JudgeOptions)
    quality: DataQuality = field(default_factory=DataQuality)
    options: ReportOptions = field(default_factory=ReportOptions)
    database: str = "in memory"
    generated_at: datetime = field(default_factory=_now)
    #: What the page says about every run and step when ``runs`` and
    #: ``judgement.steps`` are only what the charts draw (:mod:`kiana.report.totals`).
    totals: Totals | None = None


@dataclass(frozen=True)
class Gathered:
    """The frames of the page's sections (see :func:`gather`).  Of the findings it
    holds the rows the page shows only, with the counts of every one (``listing``)."""

    counts: dict[str, int]
    versions: pl.DataFrame  # version, version_rank, version_kind, runs
    listing: Listing  # the findings tables, the charted findings, the counts of every finding
    tradeoffs: pl.DataFrame  # latency improvements paid for with a memory regression
    steps: pl.DataFrame
    runs: pl.DataFrame  # runs of the kernels, passes and GPUs the charts show
    speedups: pl.DataFrame  # speedup summary rows
    flips: pl.DataFrame  # speedup pairs below 1x
    spread: pl.DataFrame  # per GPU: runs, zero spread, no spread
    coverage: dict[str, Any] | None  # judgement.coverage, when the judge gives one
    not_judged: pl.DataFrame  # judgement.quality: sessions not judged, and why

    @property
    def findings(self) -> pl.DataFrame:
        """The latency table's rows: the first ``table_rows`` latency findings, most
        important first, with ``rank`` and ``listed``."""
        return self.listing.latency.rows

    @property
    def memory_findings(self) -> pl.DataFrame:
        """The memory table's rows (as :attr:`findings`)."""
        return self.listing.memory.rows

    @property
    def latency_counts(self) -> Counts:
        """What the latency table lists, hides and folds (as the CLI)."""
        return self.listing.latency.counts

    @property
    def memory_counts(self) -> Counts:
        return self.listing.memory.counts

    @property
    def charted(self) -> pl.DataFrame:
        """The findings that get charts."""
        return self.listing.charted


def findings_listing(data: ReportData) -> Listing:
    """What the page shows of ``data``'s findings (:func:`kiana.report.listing.listing`):
    made from ``judgement.findings``, or the one of every shard's findings that
    ``totals`` carries when the judgement holds the rows shown only."""
    if data.totals is not None and data.totals.listing is not None:
        return data.totals.listing
    options = data.options
    return listing(data.judgement.findings, top=options.top, rows=options.table_rows)


def own_findings(findings: pl.DataFrame) -> pl.DataFrame:
    """The findings that are news of their own: a baseline provider's drift folded into
    the finding of the code under test it explains (``folded``, named in that finding's evidence) is not
    listed or counted again."""
    return findings.filter(~folded_expr(findings))


def sort_findings(findings: pl.DataFrame) -> pl.DataFrame:
    """Most important first: by verdict (in :data:`kiana.vocabulary.VERDICTS` order),
    then impact, then the size of the median change (:func:`kiana.report.listing.ordered`;
    ties keep their order); folded baseline drift left out (:func:`own_findings`).
    ``listed``: what every surface lists by default (:func:`kiana.findings.counts.listed_expr`,
    the rule of ``kiana regressions``).  The page reads every finding through
    :func:`findings_listing` instead, which keeps the rows it shows only."""
    findings = own_findings(findings)
    if findings.height == 0:
        return findings.with_columns(
            pl.lit(0, pl.Int64).alias("rank"), pl.lit(False).alias("listed")
        )
    findings = findings.with_columns(listed_expr().alias("listed"))
    return ordered(findings).with_row_index("rank", offset=1)


def chart_scopes(steps: pl.DataFrame, charted: pl.DataFrame) -> pl.DataFrame:
    """The kernels, passes, GPUs and metrics of the ``charted`` findings that have
    steps to chart: their series charts find sessions among every workload of them."""
    scopes: set[tuple[str, str, str, str]] = set()
    for row in charted.iter_rows(named=True):
        try:
            if not is_bridge(row):  # a bridge charts its series, no step
                frames.worst_step(steps, row)
        except KianaError:  # a finding without steps is shown in the table only
            continue
        scopes.add((str(row["kernel"]), str(row["pass"]), str(row["gpu"]), str(row["metric"])))
    schema = dict.fromkeys(("kernel", "pass", "gpu", "metric"), pl.String)
    return pl.DataFrame(sorted(scopes), schema=schema, orient="row")


def versions_frame(runs: pl.DataFrame) -> pl.DataFrame:
    """Every version of the runs in kiana's order, with its number of runs."""
    return (
        version_table(runs)
        .join(runs.group_by("version").agg(pl.len().alias("runs")), on="version")
        .sort("version_rank")
    )


def coverage(judgement: Judgement) -> dict[str, Any] | None:
    """The judgement's ``coverage`` as a dict (``series``, ``compared``, ``not_compared``
    by reason, ``partitions``...), or None when the judge gives none or it lacks the
    two counts."""
    found: Any = getattr(judgement, "coverage", None)
    if found is not None and not isinstance(found, dict) and hasattr(found, "to_dict"):
        found = found.to_dict()
    if not isinstance(found, dict):
        return None
    if not all(isinstance(found.get(k), int) for k in ("series", "compared")):
        return None
    return found


def not_judged(judgement: Judgement) -> pl.DataFrame:
    """The judgement's data-quality entries (sessions not judged, and why), when it has
    them; an empty frame otherwise."""
    found = getattr(judgement, "quality", None)
    return found if isinstance(found, pl.DataFrame) else pl.DataFrame()


def gather(data: ReportData) -> Gathered:
    """The frames of every section, from the runs and the judgement alone."""
    runs, steps = data.runs, data.judgement.steps
    shown = findings_listing(data)
    # every workload of a charted kernel, pass and GPU: its sessions are found among them
    wanted = chart_scopes(steps, shown.charted)
    chart_runs = runs.join(wanted, on=list(wanted.columns), how="semi")
    if data.totals is None:
        whole = run_counts(runs, steps.height)
        pairs, versions = frames.speedup_frame(runs), versions_frame(runs)
        spread = spread_frame(runs.filter(pl.col("status") == "passed"))
    else:  # runs and steps are the charts' only: every shard's totals
        known = data.totals
        whole, pairs, versions, spread = known.counts, known.speedups, known.versions, known.spread
    counts = {
        "documents read": data.quality.documents_read,
        "runs": whole["runs"],
        "rejects": data.quality.rejected,
        **{k: whole[k] for k in RUN_COUNTS[1:]},
        "findings": shown.counts.own,
        "folded": shown.counts.folded,
        **shown.counts.verdicts,
    }
    tradeoffs = data.judgement.tradeoffs
    return Gathered(
        counts=counts,
        versions=versions,
        listing=shown,
        tradeoffs=tradeoffs if tradeoffs is not None else pl.DataFrame(),
        steps=steps,
        runs=chart_runs,
        speedups=frames.speedup_summary(pairs),
        flips=pairs.filter(pl.col("speedup") < 1).sort("speedup"),
        spread=spread,
        coverage=coverage(data.judgement),
        not_judged=not_judged(data.judgement),
    )


#: The counts of runs and steps in ``Gathered.counts`` (of every shard's: ``Totals.counts``).
RUN_COUNTS: tuple[str, ...] = ("runs", "partitions", "kernels", "GPUs", "versions")
RUN_COUNTS += ("latency runs", "memory runs", "not passed", "steps")


def run_counts(runs: pl.DataFrame, steps: int) -> dict[str, int]:
    """:data:`RUN_COUNTS` of ``runs`` and a number of ``steps``."""
    passed = runs.filter(pl.col("status") == "passed")
    return {
        "runs": runs.height,
        "partitions": runs["partition_id"].n_unique(),
        "kernels": runs["kernel"].n_unique(),
        "GPUs": runs["gpu"].n_unique(),
        "versions": runs["version"].n_unique(),
        "latency runs": passed.filter(pl.col("metric") == "latency").height,
        "memory runs": passed.filter(pl.col("metric") == "memory").height,
        "not passed": runs.height - passed.height,
        "steps": steps,
    }


def spread_frame(passed: pl.DataFrame) -> pl.DataFrame:
    """Per GPU: latency runs, share with p20 = p80 (no noise information) and share
    with no p20/p80 recorded at all."""
    latency = passed.filter(pl.col("metric") == "latency")
    return (
        latency.group_by("gpu")
        .agg(
            pl.len().alias("runs"),
            ((pl.col("p20") == pl.col("p80")).fill_null(False)).mean().alias("zero_spread"),
            (pl.col("p20").is_null() | pl.col("p80").is_null()).mean().alias("no_spread"),
        )
        .sort("gpu")
    )
