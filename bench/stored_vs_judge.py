"""A database's stored judgement against judging each GPU's runs alone, GPU by GPU.

Run by hand (not part of the tests)::

    .venv/bin/python bench/stored_vs_judge.py --db DB [--gpu NAME ...]

Nothing the judge computes crosses GPUs, so the stored findings of a GPU (after any
number of incremental updates, :mod:`kiana.shards.incremental`) must be those of
:func:`kiana.stats.judge` of that GPU's runs, in memory.  This checks it one GPU at a
time (memory: the largest GPU), without judging the whole database again as
``kiana regressions --full`` would; for each GPU that differs it prints the columns that
differ, in how many findings, and a few of them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import polars as pl

import kiana.load
from kiana.shards.results import order_findings
from kiana.shards.runs import Shard, shard_runs
from kiana.stats import JudgeOptions, judge


def compare(con: object, gpu: str) -> tuple[bool, list[str]]:
    """Whether ``gpu``'s stored findings are its judge's, and what differs."""
    stored = con.sql(  # type: ignore[attr-defined]
        "SELECT * FROM judged_findings WHERE gpu = $g", params={"g": gpu}
    ).pl()
    judged = judge(shard_runs(con, Shard((gpu,), 0)), JudgeOptions(), require_baseline=False)  # type: ignore[arg-type]
    a, b = order_findings(stored), order_findings(judged.findings)
    if a.equals(b):
        return True, []
    if a.height != b.height:
        return False, [f"  {a.height} stored findings against {b.height} judged"]
    lines = []
    for column in a.columns:
        if a[column].equals(b[column]):
            continue
        rows = a.with_row_index().filter(a[column].ne_missing(b[column]))
        head = (
            rows.select("kernel", "pass", "provider", "from_session", "to_session").head(3).rows()
        )
        pairs = list(
            zip(
                rows[column].head(3).to_list(),
                b[column].gather(rows["index"].head(3)).to_list(),
                strict=True,
            )
        )
        lines.append(
            f"  {column}: {rows.height} finding(s) differ, e.g. {head}: stored/judged {pairs}"
        )
    return False, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--gpu", nargs="*", help="these GPUs only (default: every stored one)")
    args = parser.parse_args()
    con = kiana.load.connect(args.db, read_only=True)
    gpus = args.gpu or [
        str(g) for (g,) in con.execute("SELECT gpu FROM judged_gpus ORDER BY gpu").fetchall()
    ]
    differing = 0
    for gpu in gpus:
        started = time.monotonic()
        same, lines = compare(con, gpu)
        differing += not same
        print(
            f"{gpu}: {'same' if same else 'DIFFERENT'} ({time.monotonic() - started:.1f} s)",
            flush=True,
        )
        for line in lines:
            print(line, flush=True)
    print(f"{len(gpus) - differing} of {len(gpus)} GPUs: stored = judged alone")
    _ = pl
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
