"""``kiana export --parquet DIR [--db FILE] [--overwrite]``."""

from __future__ import annotations

import argparse

from kiana.commands.common import add_db_option

HELP = "export the tables to Parquet (runs partitioned by GPU and kernel) for other engines"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--parquet", required=True, metavar="DIR", help="folder to write (new or empty)"
    )
    add_db_option(parser)
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a previous kiana export in DIR"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from kiana.errors import DatabaseError
    from kiana.export import export_parquet
    from kiana.load import connect

    if args.db == ":memory:" or not Path(args.db).exists():
        raise DatabaseError(
            f"{args.db}: no such database", hint="run `kiana load PATH --db FILE` first"
        )
    started = time.monotonic()
    con = connect(args.db, read_only=True)
    try:
        exported = export_parquet(con, args.parquet, overwrite=args.overwrite)
    finally:
        con.close()
    if not args.quiet:
        counts = ", ".join(f"{table} {n:,}" for table, n in exported.rows.items() if n)
        print(
            f"wrote {exported.files:,} Parquet files to {exported.path} in "
            f"{time.monotonic() - started:.1f} s ({counts})"
        )
        print(
            "read back: kiana.export.connect_parquet("
            f"{str(exported.path)!r}) (views named like the tables)"
        )
    return 0
