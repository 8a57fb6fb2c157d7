"""kiana on the held-out part of Liger's CI history: false findings where no commit touched
the kernel.

Target: on the last third of the commits Liger's CI measured (``commits.txt``'s order; the
priors of ``docs/CALIBRATION.md`` are fitted on the first two thirds), Liger's findings on
steps between two measured commits with no first-parent commit touching the kernel's files
are a regression or an improvement at most 1% of the time (``bench/README.md``'s table).

Run by hand (not part of the tests)::

    .venv/bin/python -m kiana import liger --git REPO --db /tmp/ci.duckdb   # once, ~70 s
    .venv/bin/python bench/ci_holdout.py --db /tmp/ci.duckdb --git REPO [--commits FILE]

``REPO`` is a Liger-Kernel clone with its ``gh-pages`` branch (the culprits of a CI step are
the first-parent commits between its two measured commits that touch the kernel's files,
:mod:`kiana.culprits`); ``--commits`` defaults to ``../shared/liger-ci/benchmarks/commits.txt``.
Every CI-to-CI finding of a Liger provider is placed in the part both its measured commits
fall in (fit, held out, or across the cut), and counted by verdict twice: on every step,
and on the steps no commit touched ("quiet"), where a regression or an improvement is a
false finding (the kernel's code did not change; what moved is the machine, a baseline's
library, or an unstable kernel).  Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import polars as pl

import kiana

ROOT = Path(__file__).resolve().parents[1]
COMMITS = ROOT.parent / "shared" / "liger-ci" / "benchmarks" / "commits.txt"
FOLDER = re.compile(r"benchmarks/([0-9a-f]{7,40})(?:-v[^/]*)?/benchmark\.csv$")
VERDICTS = ("regression", "improvement", "drift", "inconclusive", "unchanged")


def measured_commit(origin: str | None) -> str | None:
    """The commit a CI session measured (its folder's name), None for another source.

    >>> measured_commit("7705dcc9:benchmarks/7705dcc-v0.6.1/benchmark.csv")
    '7705dcc'
    >>> measured_commit("ead96b6:benchmark/data/all_benchmark_data.csv") is None
    True
    """
    found = FOLDER.search(origin or "")
    return found.group(1) if found else None


def part_of(row: dict[str, object], rank: dict[str, int], cut: int) -> str | None:
    """``fit``, ``held out`` or ``across`` for a CI-to-CI finding; None for any other."""
    ends = [measured_commit(str(row.get(f"{s}_origin") or "")) for s in ("from", "to")]
    ranks = [rank.get(c[:7]) if c else None for c in ends]
    if None in ranks:
        return None
    low, high = sorted(r for r in ranks if r is not None)
    return "fit" if high < cut else "held out" if low >= cut else "across"


def table(findings: pl.DataFrame, rank: dict[str, int], cut: int) -> str:
    """The Markdown table of the module docstring."""
    counts: dict[tuple[str, bool], Counter[str]] = {}
    for row in findings.filter(pl.col("is_subject")).iter_rows(named=True):
        part = part_of(row, rank, cut)
        if part is None:
            continue
        quiet = not row.get("culprits")
        for key in ((part, False), (part, True)) if quiet else ((part, False),):
            counts.setdefault(key, Counter())[str(row["verdict"])] += 1
    lines = [
        "| part | steps | findings | " + " | ".join(VERDICTS) + " | false (reg+imp) |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in VERDICTS) + " | ---: |",
    ]
    for part in ("fit", "held out", "across"):
        for quiet in (False, True):
            got = counts.get((part, quiet), Counter())
            n = sum(got.values())
            moved = got["regression"] + got["improvement"]
            false = f"{moved} ({moved / n:.1%})" if quiet and n else "–"
            lines.append(
                f"| {part} | {'no commit touched the kernel' if quiet else 'every step'} | {n} | "
                + " | ".join(str(got[v]) for v in VERDICTS)
                + f" | {false} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--git", type=Path, required=True, help="Liger-Kernel clone")
    parser.add_argument("--commits", type=Path, default=COMMITS)
    args = parser.parse_args()
    order = [c.strip()[:7] for c in args.commits.read_text().split() if c.strip()]
    rank = {c: i for i, c in enumerate(order)}
    cut = len(order) * 2 // 3
    con = kiana.connect(str(args.db))
    try:
        findings = kiana.analyze(con, git=args.git, full=True).findings
    finally:
        con.close()
    print(f"{len(order)} measured commits in order; fit: the first {cut}, held out: the rest")
    print(table(findings, rank, cut))


if __name__ == "__main__":
    main()
