"""Everything the page shows, gathered once from the database, the runs and the
judgement, as small polars frames (aggregated in DuckDB or polars, never per run)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import duckdb
import polars as pl

from kiana.report import frames
from kiana.stats.versions import version_table
from kiana.vocabulary import VERDICTS, verdict_rank


class Judgement(Protocol):
    """What the report needs of :func:`kiana.stats.judge`'s result."""

    @property
    def steps(self) -> pl.DataFrame: ...

    @property
    def findings(self) -> pl.DataFrame: ...

    @property
    def tradeoffs(self) -> pl.DataFrame | None: ...


@dataclass(frozen=True)
class ReportOptions:
    """How the page is built.

    top: findings that get charts; table_rows: rows shown per table before a note says
    how many more there are; settings: the judge's options, shown under "how it was
    made"; command_line and now: recorded on the page (``now`` fixed for tests)."""

    top: int = 30
    table_rows: int = 2000
    title: str = "kiana report"
    command_line: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    now: datetime | None = None


@dataclass(frozen=True)
class ReportData:
    counts: dict[str, int]
    versions: pl.DataFrame  # liger_version, version_rank, version_kind, runs
    findings: pl.DataFrame  # latency findings, most important first, with `rank`
    memory_findings: pl.DataFrame
    tradeoffs: pl.DataFrame  # latency improvements paid for with a memory regression
    steps: pl.DataFrame
    runs: pl.DataFrame  # runs of the partitions the charts show
    charted: pl.DataFrame  # the findings that get charts
    speedups: pl.DataFrame  # speedup summary rows
    flips: pl.DataFrame  # speedup pairs below 1x
    rejects: pl.DataFrame  # reason, count, example source
    warnings: pl.DataFrame  # kind, count, example message
    conflicts: pl.DataFrame  # digest conflicts
    spread: pl.DataFrame  # per GPU: runs, zero spread, no spread
    loads: pl.DataFrame
    generated_at: datetime


def sort_findings(findings: pl.DataFrame) -> pl.DataFrame:
    """Most important first: by verdict (in :data:`kiana.vocabulary.VERDICTS` order),
    then impact, then the size of the median change."""
    if findings.height == 0:
        return findings.with_columns(pl.lit(0, pl.Int64).alias("rank"))
    keyed = findings.with_columns(
        verdict_rank().alias("_v"), pl.col("median_change").abs().alias("_m")
    )
    ordered = keyed.sort(
        ["_v", "impact", "_m", "kernel", "pass", "provider", "gpu"],
        descending=[False, True, True, False, False, False, False],
        nulls_last=True,
    ).drop("_v", "_m")
    return ordered.with_row_index("rank", offset=1)


def _frame(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    frame: pl.DataFrame = con.sql(sql).pl()
    return frame


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    rows = con.execute(sql).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def gather(
    con: duckdb.DuckDBPyConnection,
    runs: pl.DataFrame,
    judgement: Judgement,
    options: ReportOptions,
) -> ReportData:
    steps = judgement.steps
    ordered = sort_findings(judgement.findings)
    latency = ordered.filter(pl.col("metric") == "latency")
    memory = ordered.filter(pl.col("metric") != "latency")
    charted = ordered.filter(pl.col("verdict") != "unchanged").head(options.top)
    partitions: list[str] = []
    for row in charted.iter_rows(named=True):
        try:
            partitions.append(str(frames.worst_step(steps, row)["partition_id"]))
        except Exception:  # a finding without steps is shown in the table only
            continue
    chart_runs = runs.filter(pl.col("partition_id").is_in(partitions))
    passed = runs.filter(pl.col("status") == "passed")
    versions = (
        version_table(runs)
        .join(runs.group_by("liger_version").agg(pl.len().alias("runs")), on="liger_version")
        .sort("version_rank")
    )
    counts = {
        "documents read": _scalar(con, "SELECT sum(read) FROM loads"),
        "runs": runs.height,
        "rejects": _scalar(con, "SELECT count(*) FROM rejects"),
        "partitions": runs["partition_id"].n_unique(),
        "kernels": runs["kernel"].n_unique(),
        "GPUs": runs["gpu"].n_unique(),
        "Liger versions": runs["liger_version"].n_unique(),
        "latency runs": passed.filter(pl.col("metric") == "latency").height,
        "memory runs": passed.filter(pl.col("metric") == "memory").height,
        "not passed": runs.height - passed.height,
        "steps": steps.height,
        "findings": ordered.height,
    }
    for verdict in VERDICTS:
        counts[verdict] = ordered.filter(pl.col("verdict") == verdict).height
    pairs = frames.speedup_frame(runs)
    return ReportData(
        counts=counts,
        versions=versions,
        findings=latency,
        tradeoffs=judgement.tradeoffs if judgement.tradeoffs is not None else pl.DataFrame(),
        memory_findings=memory,
        steps=steps,
        runs=chart_runs,
        charted=charted,
        speedups=frames.speedup_summary(pairs),
        flips=pairs.filter(pl.col("speedup") < 1).sort("speedup"),
        rejects=_frame(
            con,
            """SELECT regexp_replace(reason, ':.*', '') AS problem, count(*) AS documents,
                      any_value(reason) AS example, any_value(source) AS source,
                      any_value(json_path) AS json_path
               FROM rejects GROUP BY 1 ORDER BY 2 DESC, 1""",
        ),
        warnings=_frame(
            con,
            """SELECT kind, count(*) AS runs, any_value(message) AS example,
                      any_value(source) AS source
               FROM warnings GROUP BY 1 ORDER BY 2 DESC, 1""",
        ),
        conflicts=_frame(
            con,
            """SELECT 'rejected' AS kind, reason AS detail, source FROM rejects
               WHERE reason LIKE 'conflicting content%'
               UNION ALL
               SELECT 'environment digest names several GPUs',
                      environment_digest || ': ' || string_agg(DISTINCT gpu, ', '), NULL
               FROM runs GROUP BY environment_digest HAVING count(DISTINCT gpu) > 1
               UNION ALL
               SELECT 'workload digest names several workloads',
                      workload_digest || ': ' || string_agg(DISTINCT kernel || '/' || workload, ', '),
                      NULL
               FROM runs GROUP BY workload_digest
               HAVING count(DISTINCT kernel || '/' || workload) > 1
               ORDER BY 1, 2""",
        ),
        spread=_spread(passed),
        loads=_frame(
            con,
            """SELECT load_id, started_at, kiana_version, array_to_string(inputs, ', ') AS inputs,
                      read, loaded, already_present, rejected, warned
               FROM loads ORDER BY load_id""",
        ),
        generated_at=options.now or datetime.now(UTC).replace(microsecond=0),
    )


def _spread(passed: pl.DataFrame) -> pl.DataFrame:
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


def database_label(con: duckdb.DuckDBPyConnection) -> str:
    """The database file of a connection, or ``in memory``."""
    rows = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    path = rows[0][0] if rows else None
    return os.fspath(path) if path else "in memory"
