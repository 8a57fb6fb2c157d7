"""``kiana load PATH... [--db FILE] [--strict]``."""

from __future__ import annotations

import argparse

from kiana.commands.common import add_db_option

HELP = "load kernelindex documents (files, folders, globs; .json, .jsonl, .gz) into DuckDB"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or globs")
    add_db_option(parser)
    parser.add_argument(
        "--strict", action="store_true", help="exit non-zero if any input is rejected"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    from kiana.errors import StrictLoadError
    from kiana.load import connect, load

    db = None if args.db == ":memory:" else args.db
    con = connect(db)
    try:
        summary = load(con, args.paths, progress=not args.quiet)
    finally:
        con.close()
    if not args.quiet:
        rate = summary.read / summary.seconds if summary.seconds > 0 else 0.0
        print(
            f"read {summary.read:,} documents from {summary.files:,} files in "
            f"{summary.seconds:.2f} s ({rate:,.0f}/s): loaded {summary.loaded:,}, "
            f"already present {summary.already_present:,}, rejected {summary.rejected:,}"
            + (f", with warnings {summary.warned:,}" if summary.warned else "")
        )
        for source, path, reason in summary.first_rejects[:5]:
            where = f" at {path}" if path else ""
            print(f"  rejected {source}{where}: {reason}")
        if summary.rejected > 5:
            print(
                f"  ... {summary.rejected - 5:,} more: SELECT * FROM rejects WHERE load_id = "
                f"{summary.load_id}"
            )
        print(f"database: {args.db}")
    if args.strict and summary.rejected:
        raise StrictLoadError(
            f"{summary.rejected} input(s) rejected (--strict); the rest was loaded",
            hint="see the rejects table for each source, JSON path and reason",
        )
    return 0
