"""``kiana export --parquet DIR [--db FILE] [--overwrite | --append]``.

``--append`` adds this database's files to an existing lake (many CI writers, one
lake: each writes files of its own name; readers deduplicate runs by ``run_id``)."""

from __future__ import annotations

import argparse

from kiana.commands.common import add_db_option, open_db

HELP = "export the tables to Parquet (runs partitioned by GPU and kernel) for other engines"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--parquet", required=True, metavar="DIR", help="folder to write (new or empty)"
    )
    add_db_option(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--overwrite", action="store_true", help="replace a previous kiana export in DIR"
    )
    mode.add_argument(
        "--append",
        action="store_true",
        help="add this database's files to the kiana export in DIR (one lake, many writers)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    import time

    from kiana.export import export_parquet

    started = time.monotonic()
    con = open_db(args, must_exist=True, read_only=True)
    try:
        exported = export_parquet(con, args.parquet, overwrite=args.overwrite, append=args.append)
    finally:
        con.close()
    if not args.quiet:
        counts = ", ".join(f"{table} {n:,}" for table, n in exported.rows.items() if n)
        print(
            f"wrote {exported.files:,} Parquet files to {exported.path} as {exported.writer} in "
            f"{time.monotonic() - started:.1f} s ({counts})"
        )
        print(
            "read back: kiana.export.connect_parquet("
            f"{str(exported.path)!r}) (views named like the tables)"
        )
    return 0
