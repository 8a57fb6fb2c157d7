"""Where a load's time goes: seconds per stage of ``kiana.load.load``, summed over its
batches (a ``kiana.load.StageTimes`` profiler), for one input into a new database file.

    .venv/bin/python bench/corpus.py --sizes 100k --layouts jsonl   # once
    .venv/bin/python bench/load_stages.py bench/out/corpus/100k/jsonl/documents.jsonl
    .venv/bin/python bench/load_stages.py bench/out/corpus/100k/files --repeats 3

Prints a Markdown table: the median seconds of each stage over ``--repeats`` loads and
its share of the whole load, by thread.  The reading thread's stages (Python's reader,
stage 1) and the checking thread's (DuckDB's reader, screening, checking) overlap the
caller's (waiting for the checks, storing, COMMIT), which add up to the whole load with
"other" (connect, expand, close).
Used to decide what to make faster next (bench/README.md).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, machine, median, table


def profile(path: Path) -> tuple[float, dict[str, float]]:
    import kiana.load

    work = Path(tempfile.mkdtemp(prefix="kiana-stages-", dir=OUT))
    try:
        times = kiana.load.StageTimes()
        started = time.perf_counter()
        con = kiana.load.connect(work / "kiana.duckdb")
        kiana.load.load(con, [path], profiler=times)
        con.close()
        seconds = time.perf_counter() - started
        stages = times.seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)
    caller = sum(value for name, value in stages.items() if _thread(name) == _CALLER)
    stages["other (connect, expand, close)"] = seconds - caller
    return seconds, stages


_CALLER = "caller (storing)"
_THREADS = ("reading", "checking", _CALLER)


def _thread(stage: str) -> str:
    """The thread whose time ``stage`` is."""
    if stage.startswith(("store:", "waiting for the checks", "end of load", "COMMIT", "other")):
        return _CALLER
    return "reading" if "(reading thread)" in stage else "checking"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(machine())
    runs = [profile(args.path) for _ in range(args.repeats)]
    total = median([seconds for seconds, _ in runs])
    names = list(dict.fromkeys(name for _, stages in runs for name in stages))
    rows = []
    for name in sorted(names, key=lambda name: _THREADS.index(_thread(name))):
        value = median([stages.get(name, 0.0) for _, stages in runs])
        rows.append([_thread(name), name, f"{value:.2f}", f"{100 * value / total:.0f}%"])
    rows.append(["", "**whole load**", f"**{total:.2f}**", "100%"])
    print(table(["thread", "stage", "seconds", "share"], rows))
    print(f"\nmedian of {args.repeats} load(s) of {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
