"""``kiana report``'s memory phase by phase, in one process: what ``kiana report --db
DB -o OUT`` does (``collect``, ``render``, ``write``, the headline), each step wrapped so
that its own peak resident set is measured (``/proc/self/status``: ``VmHWM`` after the
step, the peak reset with ``/proc/self/clear_refs`` before it; a step inside another
counts towards both).

    nice .venv/bin/python bench/report_memory.py --db bench/out/scale/db-1m.duckdb \\
        -o /tmp/report-1m.html
    nice .venv/bin/python bench/report_memory.py --db DB -o /tmp/r.json --regressions

With ``--regressions``, ``kiana regressions --db DB --json --full`` instead (its JSON
written to ``-o``, the steps' lines among it: pick them out with ``grep -o '{"step": [^}]*}'``),
with the same steps and the JSON writer's.

One JSON line per step on stdout (in the order the steps end): ``step``, ``seconds``,
``peak_gib`` (the step's own peak), ``rss_gib`` (resident after it) and, after
``analyze``, the findings' count and size.  The page is written with a fixed
``generated_at`` and command line, so two trees' pages can be compared byte for byte
(``cmp``).  The shard workers are other processes: their memory is not counted here
(``bench/scale.py`` measures the tree).  The ``report`` line's peak is the command's
peak: resetting the peak also resets what the kernel reports at exit, so
``/usr/bin/time -v`` around this script gives the largest shard worker's peak, or the
command's after its last step, not the command's.

Target: the report's peak memory at 1M and 10M runs, step by step (``bench/README.md``'s
table).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

GIB = 2**30
#: The steps measured: (module, attribute), an attribute ``Class.method`` for a method.
#: Those a tree lacks are skipped (the script measures older and newer trees alike).
STEPS: tuple[tuple[str, str], ...] = (
    ("kiana.pipeline", "analyze"),
    ("kiana.shards", "judge_all"),
    ("kiana.pipeline", "Analysis.steps_of"),
    ("kiana.shards", "Judged.judgement"),
    ("kiana.report.totals", "bounded"),
    ("kiana.report.totals", "sort_findings"),
    ("kiana.report.totals", "_totals"),
    ("kiana.report.totals", "top_findings"),
    ("kiana.report.totals", "gathered_findings"),
    ("kiana.load.quality", "collect"),
    ("kiana.report.page", "gather"),
    ("kiana.report.page", "findings_table"),
    ("kiana.report.page", "chart_cards"),
    ("kiana.report.page", "speedup_section"),
    ("kiana.report.page", "memory_section"),
    ("kiana.report.page", "quality_section"),
    ("kiana.report.page", "headline"),
    ("kiana.jsonstream", "write_json"),
    ("kiana.pipeline", "Analysis.iter_steps"),
    ("kiana.pipeline", "Analysis.annotate"),
)


def _status() -> dict[str, int]:
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found


def _reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")


class Laps:
    """Peaks of nested steps: entering a step folds the peak so far into its parent's,
    then resets the peak; leaving it reads its own peak and folds it into its parent's."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = [["process", 0, time.monotonic()]]

    def enter(self, name: str) -> None:
        self.stack[-1][1] = max(self.stack[-1][1], _status()["VmHWM"])
        _reset()
        self.stack.append([name, 0, time.monotonic()])

    def leave(self, **extra: Any) -> None:
        name, peak, started = self.stack.pop()
        now = _status()
        peak = max(peak, now["VmHWM"])
        self.stack[-1][1] = max(self.stack[-1][1], peak)
        _reset()
        line = {"step": name, "seconds": round(time.monotonic() - started, 1)}
        line |= {"peak_gib": round(peak / GIB, 3), "rss_gib": round(now["VmRSS"] / GIB, 3)}
        print(json.dumps(line | extra), flush=True)


LAPS = Laps()


def _wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def measured(*args: Any, **kwargs: Any) -> Any:
        LAPS.enter(name)
        extra: dict[str, Any] = {}
        try:
            result = function(*args, **kwargs)
            findings = getattr(result, "findings", None)
            if name.endswith("analyze") and findings is not None:
                extra = {
                    "findings": findings.height,
                    "findings_mib": findings.estimated_size() >> 20,
                }
            return result
        finally:
            LAPS.leave(**extra)

    return measured


def instrument() -> None:
    for module_name, attribute in STEPS:
        module = importlib.import_module(module_name)
        owner: Any = module
        *path, last = attribute.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None or not hasattr(owner, last):
            continue
        label = f"quality.{last}" if module_name == "kiana.load.quality" else attribute
        setattr(owner, last, _wrap(label, getattr(owner, last)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path)
    parser.add_argument("-o", "--output", required=True, type=Path)
    parser.add_argument("--memory-limit", help="as kiana report's (fewer runs per shard)")
    parser.add_argument("--shard-runs", type=int, help="runs per shard (kiana.shards.runs)")
    parser.add_argument("--regressions", action="store_true",
                        help="kiana regressions --json --full instead of kiana report")  # fmt: skip
    args = parser.parse_args()
    instrument()
    if args.regressions:
        return _regressions(args)
    if args.shard_runs is not None:  # a small database judged in several shards
        import kiana.shards.runs

        kiana.shards.runs.SHARD_RUNS = args.shard_runs
    from kiana import report
    from kiana.commands.common import open_db
    from kiana.commands.report import collect

    LAPS.enter("report")
    con = open_db(argparse.Namespace(db=str(args.db), memory_limit=args.memory_limit), must_exist=True,
                  read_only=True)  # fmt: skip
    options = report.ReportOptions(command_line=f"kiana report --db {args.db.name} -o OUT")
    at = datetime(2026, 12, 1, tzinfo=UTC)
    LAPS.enter("collect")
    data = collect(con, None, options, generated_at=at)
    LAPS.leave()
    con.close()
    LAPS.enter("render")
    html = report.render(data)
    LAPS.leave(page_mb=round(len(html.encode()) / 1e6, 2))
    LAPS.enter("write")
    report.write(args.output, html)
    print(report.headline(data), file=sys.stderr)
    LAPS.leave()
    LAPS.leave()
    return 0


def _regressions(args: argparse.Namespace) -> int:
    """``kiana regressions --db DB --json --full`` in this process, its JSON to ``-o``."""
    import contextlib

    from kiana.cli import main as kiana

    argv = ["regressions", "--db", str(args.db), "--json", "--full"]
    if args.memory_limit:
        argv += ["--memory-limit", args.memory_limit]
    LAPS.enter("regressions")
    with args.output.open("w") as sink, contextlib.redirect_stdout(sink):
        status = kiana(argv)
    LAPS.leave()
    return status


if __name__ == "__main__":
    sys.exit(main())
