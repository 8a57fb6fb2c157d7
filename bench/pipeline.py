"""Pipeline benchmark: ``kiana partitions``, ``kiana regressions``, ``kiana report``.

Target: regressions on 1M runs < 30 s; the report of 100k runs < 30 s
(``bench/README.md``'s table).

    .venv/bin/python bench/corpus.py                     # once: make the corpora
    .venv/bin/python bench/pipeline.py                   # 10k, 100k and 1M runs
    .venv/bin/python bench/pipeline.py --sizes 10k 100k --repeats 3

Each size is loaded once into ``bench/out/db-<size>.duckdb`` (kept, reused), then each
command runs as a real subprocess (``python -m kiana ...``, so start-up and imports
count, as for a user) ``--repeats`` times; the table gives the median seconds, the
peak memory of the command (its own ``ru_maxrss``, read through ``os.wait4`` by a bare
Python launcher: Linux carries a process's high-water mark over ``execve`` into the
process it starts, so the floor is the launcher's few MiB, not this bench's), the
report's size, and the growth exponent ``k`` of a least-squares fit
``seconds ~ runs^k`` over the sizes measured (1 = linear).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, child, machine, median, table

COMMANDS = {
    "partitions": ["partitions", "--json"],
    "regressions": ["regressions", "--json"],
    "report": ["report", "-o", "{out}/report-{size}.html", "--quiet"],
}


def _available(command: str) -> bool:
    module = {"partitions": "partitions", "regressions": "regressions", "report": "report"}
    return (ROOT / "kiana" / "commands" / f"{module[command]}.py").exists()


#: Starts ``argv[2:]``, waits for it and writes its ``ru_maxrss`` (KiB) to the file
#: descriptor ``argv[1]``: a bare
#: Python of a few MiB, so the command's peak is not floored at this bench's own.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "os.write(int(sys.argv[1]), str(usage.ru_maxrss).encode())\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def run_timed(argv: list[str]) -> tuple[float, float]:
    """Seconds and peak MiB of one subprocess (its own ru_maxrss, via the launcher)."""
    started = time.perf_counter()
    read, write = os.pipe()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(write), *argv],
            stdout=sink, stderr=subprocess.PIPE, cwd=ROOT, pass_fds=(write,),
        )  # fmt: skip
        os.close(write)
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.wait()
    with os.fdopen(read, "rb") as report:
        peak_kib = int(report.read() or b"0")
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # regressions --fail-on may exit 1; not used here
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    return seconds, peak_kib / 1024


def database(size: str) -> tuple[Path, int]:
    import corpus

    db = OUT / f"db-{size}.duckdb"
    if not db.exists():
        path = corpus.ensure(size, "jsonl")
        print(f"loading {size} into {db} ...", file=sys.stderr, flush=True)
        work = OUT / f"load-{size}"
        work.mkdir(parents=True, exist_ok=True)
        child([str(Path(__file__).with_name("load.py")), "--one", "kiana", str(path), str(work)])
        (work / "kiana.duckdb").rename(db)
        work.rmdir()
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    (runs,) = con.execute("SELECT count(*) FROM runs").fetchall()[0]
    con.close()
    return db, int(runs)


def exponent(points: list[tuple[int, float]]) -> str:
    if len(points) < 2:
        return "-"
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(s, 1e-6)) for _, s in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return f"{k:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description="time partitions, regressions and report")
    parser.add_argument("--sizes", nargs="+", default=["10k", "100k", "1m"])
    parser.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=COMMANDS)
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (median)")
    parser.add_argument("--repeats-1m", type=int, default=1, help="runs per case at 1M")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    rows: list[list[str]] = []
    growth: dict[str, list[tuple[int, float]]] = {}
    for size in args.sizes:
        db, runs = database(size)
        for command in args.commands:
            if not _available(command):
                rows.append([size, f"{runs:,}", command, "not built yet", "", ""])
                continue
            argv = [
                sys.executable,
                "-m",
                "kiana",
                *(a.format(out=OUT, size=size) for a in COMMANDS[command]),
                "--db",
                str(db),
            ]
            repeats = args.repeats_1m if size == "1m" else args.repeats
            timings = [run_timed(argv) for _ in range(repeats)]
            seconds = median([t for t, _ in timings])
            peak = max(p for _, p in timings)
            extra = ""
            if command == "report":
                report = OUT / f"report-{size}.html"
                extra = f"{report.stat().st_size / 1e6:.1f} MB"
            growth.setdefault(command, []).append((runs, seconds))
            rows.append([size, f"{runs:,}", command, f"{seconds:.2f}", f"{peak:,.0f}", extra])
            print(table(HEADER, rows[-1:]), flush=True)
    print()
    print(table(HEADER, rows))
    print()
    for command, points in growth.items():
        shown = ", ".join(f"{n:,} runs: {s:.2f} s" for n, s in points)
        print(f"{command}: {shown}; fitted seconds ~ runs^{exponent(points)}")
    return 0


HEADER = ["size", "runs", "command", "seconds", "peak MiB", "report size"]

if __name__ == "__main__":
    sys.exit(main())
