"""``kiana report [PATH...] [--db FILE] -o report.html``.

Without PATHs the report is built from the database (``--db``, default
``kiana.duckdb``).  With PATHs they are loaded into a fresh in-memory database first
(unless ``--db`` is given too, then into that file), so ``kiana report data/ -o
report.html`` is the one-command demo.

The pipeline (open the database, load, read the runs, judge, read the data quality) is
here, in :func:`collect`; ``kiana.report.render`` only turns its result into HTML.
``--git REPO`` (the Liger-Kernel checkout the rows came from) ranks each Liger finding's
culprits (:mod:`kiana.culprits`); without it the findings show the ``git log`` command
that would list them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.commands.common import DEFAULT_DB, add_judge_options, add_memory_option, count, open_db
from kiana.commands.common import judge_options as common_judge_options

if TYPE_CHECKING:
    from datetime import datetime

    import duckdb

    from kiana.report import ReportData, ReportOptions
    from kiana.stats import JudgeOptions

HELP = "write one self-contained HTML report (findings, charts, data quality) that opens offline"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH",
        help="documents to load first (files, folders, globs); none: use --db as it is",
    )  # fmt: skip
    parser.add_argument(
        "--db", metavar="FILE",
        help=f"DuckDB database (default without PATHs: {DEFAULT_DB}; with PATHs: in memory)",
    )  # fmt: skip
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="HTML file to write")
    add_judge_options(parser)
    add_memory_option(parser)
    parser.add_argument(
        "--top", type=count, default=30, metavar="N",
        help="findings that get charts (default 30); the table lists the rest",
    )  # fmt: skip
    parser.add_argument(
        "--rows", type=count, default=2000, metavar="N",
        help="rows shown per table before a note gives the count (default 2000)",
    )  # fmt: skip
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    parser.add_argument(
        "--git", type=Path, metavar="REPO",
        help="the Liger-Kernel checkout the rows came from: list each finding's culprits",
    )  # fmt: skip


def collect(
    con: duckdb.DuckDBPyConnection,
    judge_options: JudgeOptions | None = None,
    options: ReportOptions | None = None,
    *,
    generated_at: datetime | None = None,
    git: Path | None = None,
) -> ReportData:
    """The report's pipeline: the runs of the database behind ``con`` (the columns the
    judge reads, with their origin: the runs ``kiana regressions`` judges), judged with
    ``judge_options``, its findings' culprits (from the checkout ``git``, or the ``git
    log`` hint without one: :func:`kiana.culprits.annotate`), and its data quality, as
    the :class:`ReportData` that ``kiana.report.render`` turns into the page.  Judged
    in several shards, it holds only the charted findings' steps and the runs they
    chart, with the totals of every shard (:func:`kiana.report.totals.bounded`)."""
    import dataclasses

    from kiana.load import quality
    from kiana.pipeline import analyze
    from kiana.report import ReportData, ReportOptions

    analysis = analyze(con, judge_options, git=git)
    options = options or ReportOptions()
    known = None
    if analysis.judged.shards > 1:  # only what the charts draw, and every shard's totals
        from kiana.report.totals import bounded

        judgement, runs, known = bounded(analysis.judged, analysis.findings, options)
    else:
        judgement = dataclasses.replace(analysis.judgement, findings=analysis.findings)
        runs = analysis.runs
    return ReportData(
        runs=runs,
        judgement=judgement,
        judge_options=analysis.options,
        quality=quality.collect(con),
        options=options,
        database=database_label(con),
        totals=known,
        **({"generated_at": generated_at} if generated_at is not None else {}),
    )


def database_label(con: duckdb.DuckDBPyConnection) -> str:
    """The database file of a connection, or ``in memory``."""
    import os

    rows = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    path = rows[0][0] if rows else None
    return os.fspath(path) if path else "in memory"


def run(args: argparse.Namespace) -> int:
    from kiana import load, report
    from kiana.culprits.history import require_repository
    from kiana.errors import InputError

    started = time.monotonic()
    repo = require_repository(args.git) if args.git is not None else None
    # without PATHs: read the database kiana load wrote; with PATHs: load them first,
    # into a fresh in-memory database unless --db names a file
    db = args.db if args.db is not None or args.paths else DEFAULT_DB
    reading = not args.paths
    con = open_db(
        argparse.Namespace(db=db, memory_limit=args.memory_limit),
        must_exist=reading,
        read_only=reading,
    )
    try:
        if args.paths:
            summary = load.load(con, args.paths)
            if not args.quiet:
                print(
                    f"loaded {summary.loaded:,} of {summary.read:,} documents "
                    f"({summary.rejected:,} rejected)",
                    file=sys.stderr,
                )
            if summary.files == 0:
                raise InputError(
                    f"no document files under {', '.join(map(str, args.paths))}",
                    hint="kiana reads .json, .jsonl and .ndjson files (optionally .gz)",
                )
        if con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 0:
            raise InputError(
                f"nothing to report: {'the documents given' if args.paths else db} hold no "
                "loaded run",
                hint="load benchmark documents first (kiana load PATH --db FILE); the "
                "rejects table says why documents were refused",
            )
        options = report.ReportOptions(
            top=args.top, table_rows=args.rows,
            command_line=shlex.join(["kiana", *sys.argv[1:]]),
        )  # fmt: skip
        judge_options = common_judge_options(args)
        data = collect(con, judge_options, options, git=repo)
    finally:
        con.close()
    html = report.render(data)
    path = report.write(args.output, html)
    if not args.quiet:
        size = len(html.encode("utf-8"))
        print(report.headline(data))
        covered = report.coverage_line(data)
        if covered:
            print(covered[0].upper() + covered[1:] + ".")
        print(f"wrote {path} ({size / 1e6:.2f} MB) in {time.monotonic() - started:.1f} s")
    return 0
