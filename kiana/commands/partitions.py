"""``kiana partitions [--db FILE] [--json]``."""

from __future__ import annotations

import argparse

from kiana.commands.common import add_db_option, open_db

HELP = "list comparability partitions (kernel, pass, workload, GPU) with providers and versions"


def configure(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for machines")


def run(args: argparse.Namespace) -> int:
    import json

    from kiana.group import partitions

    con = open_db(args, must_exist=True, read_only=True)
    try:
        frame = partitions(con)
    finally:
        con.close()
    if args.json:
        rows = frame.to_dicts()
        print(json.dumps({"partitions": rows}, default=str, indent=1))
        return 0
    if frame.height == 0:
        print("no partitions: the database holds no runs")
        return 0
    header = f"{'partition':16}  {'kernel':28} {'pass':10} {'gpu':24} {'workload':34} runs  providers / versions"
    print(header)
    for row in frame.iter_rows(named=True):
        versions = row["versions"]
        span = (
            versions[0]
            if len(versions) == 1
            else f"{versions[0]}..{versions[-1]} ({len(versions)})"
        )
        print(
            f"{row['partition_id']:16}  {row['kernel'][:28]:28} {row['pass'][:10]:10} "
            f"{row['gpu'][:24]:24} {row['workload'][:34]:34} {row['runs']:4}  "
            f"{','.join(row['providers'])} / {span}"
        )
    print(f"{frame.height} partitions")
    return 0
