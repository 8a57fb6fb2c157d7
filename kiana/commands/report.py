"""``kiana report [PATH...] [--db FILE] -o report.html``.

Without PATHs the report is built from the database (``--db``, default
``kiana.duckdb``).  With PATHs they are loaded into a fresh in-memory database first
(unless ``--db`` is given too, then into that file), so ``kiana report data/ -o
report.html`` is the one-command demo.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from kiana.commands.common import DEFAULT_DB, add_judge_options, count

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
    parser.add_argument(
        "--top", type=count, default=30, metavar="N",
        help="findings that get charts (default 30); the table lists the rest",
    )  # fmt: skip
    parser.add_argument(
        "--rows", type=count, default=2000, metavar="N",
        help="rows shown per table before a note gives the count (default 2000)",
    )  # fmt: skip
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    from kiana import load, report
    from kiana.errors import InputError
    from kiana.stats import JudgeOptions

    started = time.monotonic()
    db = args.db if args.db is not None else (None if args.paths else DEFAULT_DB)
    if db == ":memory:":
        db = None
    if db is not None and not args.paths:
        from pathlib import Path

        if not Path(db).exists():
            raise InputError(
                f"{db}: no such database",
                hint="load documents first (kiana load PATH --db FILE), or give PATHs: "
                "kiana report data/ -o report.html",
            )
    con = load.connect(db)
    try:
        if args.paths:
            summary = load.load(con, args.paths)
            if not args.quiet:
                print(
                    f"loaded {summary.loaded:,} of {summary.read:,} documents "
                    f"({summary.rejected:,} rejected)",
                    file=sys.stderr,
                )
        options = report.ReportOptions(
            top=args.top, table_rows=args.rows,
            command_line=shlex.join(["kiana", *sys.argv[1:]]),
        )  # fmt: skip
        html, headline = report.build_with_headline(
            con, options, JudgeOptions(threshold=args.threshold, baseline=args.baseline)
        )
    finally:
        con.close()
    path = report.write(args.output, html)
    if not args.quiet:
        size = len(html.encode("utf-8"))
        print(headline)
        print(f"wrote {path} ({size / 1e6:.2f} MB) in {time.monotonic() - started:.1f} s")
    return 0
