"""``kiana partitions [--db FILE] [--json] [--wide]``: the comparability partitions, a
table fitted to the terminal (:mod:`kiana.commands.layout`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kiana.commands.common import add_db_option, open_db
from kiana.commands.layout import INDENT, cells, fit, line, pack, terminal_width, widths

if TYPE_CHECKING:
    import polars as pl

HELP = "list comparability partitions (kernel, pass, workload, GPU) with providers and versions"


def configure(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.add_argument(
        "--wide", action="store_true",
        help="one line per partition, whatever the terminal's width (default: fit COLUMNS)",
    )  # fmt: skip


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
    _print_table(frame, terminal_width(args.wide))
    print(f"{frame.height:,} partitions")
    return 0


_TITLES = ("partition", "kernel", "pass", "gpu", "workload", "runs", "providers / versions")


def _row(row: dict[str, Any]) -> list[str]:
    versions = row["versions"]
    span = versions[0] if len(versions) == 1 else f"{versions[0]}..{versions[-1]} ({len(versions)})"
    values = [row["partition_id"], row["kernel"], row["pass"], row["gpu"], row["workload"],
              row["runs"], f"{','.join(row['providers'])} / {span}"]  # fmt: skip
    return cells(values)


def _print_table(frame: pl.DataFrame, width: int | None) -> None:
    """One aligned line per partition when that fits ``width``; otherwise a heading per
    kernel, pass and GPU and one line per workload under it (every name whole)."""
    rows = [_row(r) for r in frame.iter_rows(named=True)]
    right = [False] * 5 + [True, False]
    one_line = fit(_TITLES, rows, width=width, right=right)
    if one_line is not None:
        print("\n".join(one_line))
        return
    print(f"kernel · pass · gpu\n{INDENT}partition workload runs providers / versions")
    groups: dict[tuple[str, str, str], list[list[str]]] = {}
    for row in rows:
        groups.setdefault((row[1], row[2], row[3]), []).append(row)
    for (kernel, pass_, gpu), members in groups.items():
        for part in pack([kernel, f"· {pass_}", f"· {gpu}"], width=width):
            print(part)
        sizes = widths([[r[0], r[4], r[5]] for r in members])
        for row in members:
            fixed = line([row[0], row[4], row[5]], sizes, [False, False, True])
            providers, span = row[6].rsplit(" / ", 1)
            names = [f"{p}," for p in providers.split(",")]
            names[-1] = names[-1].rstrip(",")
            narrow = width is not None and len(fixed) + len(INDENT) > width
            parts = [*([row[0], row[4], row[5]] if narrow else [fixed]), *names, f"/ {span}"]
            for part in pack(parts, width=width, indent=INDENT * 2, first=INDENT):
                print(part)
