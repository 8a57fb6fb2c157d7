"""Liger's own dashboard rule beside kiana, on Liger's CI history.

Target: on the CI history, what Liger's dashboard colours red and what kiana calls a Liger
regression, side by side, with counts where they disagree and kiana's verdict on each of
the dashboard's reds (issue 38; ``bench/README.md``'s table).

Run by hand (not part of the tests)::

    .venv/bin/python -m kiana import liger --git REPO --db /tmp/ci.duckdb   # once, ~70 s
    .venv/bin/python bench/dashboard.py --db /tmp/ci.duckdb --git REPO [--ci ../shared/liger-ci]

The rule, as ``gh-pages:benchmarks/script.js`` applies it in its "commits" view (read there,
2026-03): for each measured commit of ``commits.txt`` and each ``<kernel>_<mode>_<metric>``,
the value is ``y_value_50`` of the *first* ``liger`` row of that commit's
``benchmark.csv`` (one workload, whatever the GPU); it is compared with the same key's value
at the kernel's golden commit (``golden_commits.json``: the base kernel's entry, else the
longest key the name contains, else ``default_commit``); **red** when more than 10% above it,
green when below.  A cell is *newly red* when it is red and the previous measured commit's
was not: the dashboard's "it got slower here".

kiana's side: its Liger (``liger``) latency and memory findings between consecutive measured
commits (``kiana.analyze`` with the culprits' repository).  Both are keyed by (measured
commit, kernel, pass, metric).  The table counts newly red cells, kiana's regressions, both,
and each side alone, and gives kiana's verdict (and basis) on the dashboard's newly red cells
it does not call a regression.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from collections import Counter
from pathlib import Path

import polars as pl

import kiana

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT.parent / "shared" / "liger-ci"
THRESHOLD = 0.10
_SUFFIXES = ("_forward_speed", "_backward_speed", "_full_speed", "_full_memory",
             "_forward_memory", "_backward_memory")  # fmt: skip
_FOLDER = re.compile(r"benchmarks/([0-9a-f]{7,40})(?:-v[^/]*)?/benchmark\.csv$")
Key = tuple[str, str, str]  #: (kernel, mode, metric as Liger names it: speed or memory)


def values(text: str) -> dict[Key, float]:
    """The dashboard's value per key of one ``benchmark.csv``: the first liger row's median.

    >>> head = "kernel_name,kernel_provider,kernel_operation_mode,metric_name,y_value_50\\n"
    >>> values(head + "rms,liger,forward,speed,2.0\\nrms,liger,forward,speed,9.0\\n")
    {('rms', 'forward', 'speed'): 2.0}
    """
    found: dict[Key, float] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row.get("kernel_provider") != "liger":
            continue
        key = (row["kernel_name"], row["kernel_operation_mode"], row["metric_name"])
        if key not in found:
            try:
                found[key] = float(row["y_value_50"])
            except (TypeError, ValueError):
                continue
    return found


def golden_of(key: Key, golden: dict[str, str], default: str) -> str:
    """The golden commit of a key, as ``getGoldenCommit`` finds it.

    >>> golden_of(("rms_norm", "full", "speed"), {"rms_norm": "abc", "rms": "x"}, "d")
    'abc'
    >>> golden_of(("fused_rms_norm", "full", "speed"), {"rms_norm": "abc"}, "d")
    'abc'
    >>> golden_of(("geglu", "full", "speed"), {"rms_norm": "abc"}, "d")
    'd'
    """
    name = "_".join(key)
    base = next((name[: -len(s)] for s in _SUFFIXES if name.endswith(s)), name)
    if base in golden:
        return golden[base]
    best = max((k for k in golden if k in name), key=len, default=None)
    return golden[best] if best is not None else default


def newly_red(ci: Path) -> dict[tuple[str, str, str, str], float]:
    """(commit, kernel, mode, metric) -> the change against golden, for every newly red cell."""
    bench = ci / "benchmarks"
    commits = [c.strip() for c in (bench / "commits.txt").read_text().split() if c.strip()]
    config = json.loads((bench / "golden_commits.json").read_text())
    golden, default = config.get("golden_commits", {}), config.get("default_commit", "")
    data = {c: values(p.read_text()) for c in {*commits, *golden.values(), default}
            if (p := bench / c / "benchmark.csv").is_file()}  # fmt: skip
    red: dict[tuple[str, str, str, str], float] = {}
    before: set[Key] = set()
    for commit in commits:
        now: set[Key] = set()
        for key, value in data.get(commit, {}).items():
            gold = golden_of(key, golden, default)
            reference = data.get(gold, {}).get(key)
            if commit == gold or reference is None or reference == 0:
                continue
            change = (value - reference) / reference
            if change > THRESHOLD:
                now.add(key)
                if key not in before:
                    red[(commit[:7], *key)] = change
        before = now
    return red


def kiana_steps(db: Path, repo: Path) -> pl.DataFrame:
    """kiana's Liger findings between consecutive measured commits: commit (the later),
    kernel, mode, metric (speed or memory), verdict, basis, change."""
    con = kiana.connect(str(db))
    try:
        found = kiana.analyze(con, git=repo).findings
    finally:
        con.close()
    found = found.filter((pl.col("provider") == "liger") & pl.col("to_origin").is_not_null())
    folder = pl.col("to_origin").str.extract(_FOLDER.pattern).str.slice(0, 7)
    before = pl.col("from_origin").str.extract(_FOLDER.pattern)
    return found.filter(before.is_not_null() & folder.is_not_null()).select(
        folder.alias("commit"), pl.col("kernel"), pl.col("pass").alias("mode"),
        pl.when(pl.col("metric") == "latency").then(pl.lit("speed")).otherwise(pl.lit("memory"))
        .alias("metric"), "verdict", "basis", "change",
    )  # fmt: skip


def compare(red: dict[tuple[str, str, str, str], float], steps: pl.DataFrame) -> str:
    """The side-by-side table (Markdown)."""
    keys = ["commit", "kernel", "mode", "metric"]
    judged = {tuple(r[k] for k in keys): r for r in steps.iter_rows(named=True)}
    regressions = {k for k, r in judged.items() if r["verdict"] == "regression"}
    reds = set(red)
    both, dash_only, kiana_only = reds & regressions, reds - regressions, regressions - reds
    why = Counter(
        f"{judged[k]['verdict']} ({judged[k]['basis']})" if k in judged else "no finding of kiana's"
        for k in dash_only
    )
    lines = [
        "| | count |", "| --- | ---: |",
        f"| dashboard: newly red cells (> +10% against the golden commit) | {len(reds)} |",
        f"| kiana: Liger regressions between consecutive measured commits | {len(regressions)} |",
        f"| both | {len(both)} |",
        f"| red on the dashboard, not a regression of kiana's | {len(dash_only)} |",
        f"| a regression of kiana's, not newly red on the dashboard | {len(kiana_only)} |",
        "", "| kiana's verdict on the dashboard-only reds | count |", "| --- | ---: |",
        *(f"| {w} | {n} |" for w, n in why.most_common()),
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--git", type=Path, required=True, help="Liger-Kernel clone")
    parser.add_argument("--ci", type=Path, default=CI, help="a checkout of gh-pages")
    args = parser.parse_args()
    print(compare(newly_red(args.ci), kiana_steps(args.db, args.git)))


if __name__ == "__main__":
    main()
