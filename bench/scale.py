"""Beyond one machine: load, regressions, report and export at 1M and 10M runs, peak
memory by ``/usr/bin/time -v``, and the Spark runner against the local judge.

    nice .venv/bin/python bench/scale.py --size 1m                   # every step, 1M runs
    nice .venv/bin/python bench/scale.py --size 10m --steps load regressions report export
    nice .venv/bin/python bench/scale.py --size 1m --steps spark     # kiana[spark], Java
    nice .venv/bin/python bench/scale.py --size clone-series-100k --steps load regressions
    .venv/bin/python bench/scale.py --table                          # the table of every result

Corpora come from ``bench/scale_corpus.py`` (cached under ``bench/out/scale/<size>/``;
``clone-<long|shared|series|point|sweep>-<25k|100k|400k|1m|...>`` are cloned from Liger's
real history by ``bench/clone_corpus.py``, issue 41's degenerate shapes),
the database from ``kiana load`` of that corpus (the load step, kept as
``bench/out/scale/db-<size>.duckdb``).  Every step is one ``kiana`` command as a user
runs it, under ``/usr/bin/time -v`` (wall time, maximum resident set size), one run
each; the load average at the start of each step is recorded beside it, because the
machine is shared.  Results append to ``bench/out/scale/results.jsonl``; ``--table``
prints them with the ratios against issue 25's figures (2 cores, shared, generated
corpora): per run, and peak memory against the 4 GiB target.

Target: load, regressions, report and export at 1M and 10M runs within the machine
(peak memory per command; ``bench/README.md``'s table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "scale"
RESULTS = OUT / "results.jsonl"
KIANA = [sys.executable, "-m", "kiana"]
#: Where ``-m kiana`` is imported from: this tree, or ``--tree DIR`` (a patched copy).
TREE = [ROOT]
STEPS = ("load", "regressions", "report", "export", "spark")
GIB = 2**30
TARGET_BYTES = 4 * GIB

#: Issue 25's measurements at 1M runs: seconds and peak GB (the lower figure of a range).
ISSUE_1M: dict[str, tuple[float, float]] = {
    "load": (37.0, 1.0),
    "regressions": (48.0, 2.6),
    "report": (31.0, 3.0),
    "export": (13.0, 2.5),
}


def _tree_rss(root: int) -> tuple[int, int]:
    """Bytes resident in ``root`` and every process below it, and in the children of
    ``root`` alone (the command ``/usr/bin/time`` runs, without its workers), now (from
    /proc)."""
    parents: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
            sizes[int(entry.name)] = int((entry / "statm").read_text().split()[1]) * 4096
        except (OSError, IndexError, ValueError):
            continue
    total, wanted = 0, {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    for pid in wanted:
        total += sizes.get(pid, 0)
    own = sum(sizes.get(pid, 0) for pid, parent in parents.items() if parent == root)
    return total, own


def timed(argv: list[str], *, stdout: Path | None = None) -> dict[str, Any]:
    """Run ``argv`` under ``/usr/bin/time -v``: seconds, peak bytes, exit status.
    ``/usr/bin/time`` gives the largest single process; ``tree_peak_bytes`` is the
    largest sum over the command's process tree (sampled twice a second), which is
    what a command with worker processes (the shards' judges) holds at once;
    ``command_peak_bytes`` the command's own process, its workers aside (sampled)."""
    OUT.mkdir(parents=True, exist_ok=True)  # bench/incremental.py may come first
    log = OUT / f"time-{os.getpid()}-{time.monotonic_ns()}.log"
    load = os.getloadavg()[0]
    started = time.perf_counter()
    tree = command = 0
    err = log.with_suffix(".err")
    with open(stdout or os.devnull, "wb") as sink, err.open("wb") as errors:
        proc = subprocess.Popen(
            ["/usr/bin/time", "-v", "-o", str(log), *argv], stdout=sink, stderr=errors, cwd=TREE[0]
        )
        while proc.poll() is None:
            now, own = _tree_rss(proc.pid)
            tree, command = max(tree, now), max(command, own)
            time.sleep(0.5)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, b"", err.read_bytes())
    err.unlink()
    seconds = time.perf_counter() - started
    text = log.read_text()
    log.unlink()
    peak = int(_field(text, r"Maximum resident set size \(kbytes\)"))
    cpu = float(_field(text, r"User time \(seconds\)")) + float(
        _field(text, r"System time \(seconds\)")
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr.decode()[-3000:]}")
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_bytes": peak * 1024,
        "tree_peak_bytes": tree,
        "command_peak_bytes": command,
        "load_average": round(load, 2),
        "stderr": done.stderr.decode()[-400:],
    }


def _field(text: str, name: str) -> str:
    found = re.search(name + r": ([0-9.]+)", text)
    if found is None:
        raise RuntimeError(f"/usr/bin/time -v printed no {name}:\n{text[-2000:]}")
    return found.group(1)


def database(size: str) -> Path:
    return OUT / f"db-{size}.duckdb"


def runs_in(db: Path) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM runs").fetchall()[0][0])
    finally:
        con.close()


def step(size: str, name: str, options: argparse.Namespace) -> dict[str, Any]:
    """One measured step at ``size``."""
    import scale_corpus

    db = database(size)
    memory = ["--memory-limit", options.memory_limit] if options.memory_limit else []
    if name == "load":
        corpus = scale_corpus.ensure(size)
        for leftover in (db, db.with_name(db.name + ".wal")):
            leftover.unlink(missing_ok=True)
        result = timed([*KIANA, "load", str(corpus), "--db", str(db), "--quiet", *memory])
    elif not db.exists():
        raise SystemExit(f"{db}: run the load step first (--steps load)")
    elif name == "regressions":
        out = OUT / f"regressions-{size}.json"
        full = ["--full"]  # a full judge every time (without it, the stored judgement is read)
        result = timed(
            [*KIANA, "regressions", "--db", str(db), "--json", *full, *memory], stdout=out
        )
        result["output_bytes"] = out.stat().st_size
        out.unlink()
    elif name == "report":
        html = OUT / f"report-{size}.html"
        result = timed([*KIANA, "report", "--db", str(db), "-o", str(html), "--quiet", *memory])
        result["output_bytes"] = html.stat().st_size
    elif name == "export":
        lake = OUT / f"lake-{size}"
        shutil.rmtree(lake, ignore_errors=True)
        result = timed([*KIANA, "export", "--parquet", str(lake), "--db", str(db), "-q", *memory])
        result["output_bytes"] = sum(p.stat().st_size for p in lake.rglob("*") if p.is_file())
    else:
        result = spark(size, options)
    result.update(size=size, step=name, runs=runs_in(db), at=time.strftime("%Y-%m-%d %H:%M"))
    result["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip() + ("" if TREE[0] == ROOT else f" + {TREE[0].name}")
    return result


def spark(size: str, options: argparse.Namespace) -> dict[str, Any]:
    """The Spark runner on ``local[2]`` against the local judge, on the same lake."""
    lake = OUT / f"lake-{size}"
    if not (lake / "kiana-export.json").exists():
        raise SystemExit(f"{lake}: run the export step first (--steps export)")
    here = OUT / f"findings-local-{size}"
    there = OUT / f"findings-spark-{size}"
    for folder in (here, there):
        shutil.rmtree(folder, ignore_errors=True)
    local = timed([*KIANA, "lake", str(lake), "--out", str(here), "--engine", "local", "-q"])
    result = timed([*KIANA, "lake", str(lake), "--out", str(there), "--master", "local[2]", "-q"])
    from kiana.lake import read_findings

    a, b = read_findings(here), read_findings(there)
    result.update(
        local_seconds=local["seconds"],
        local_peak_bytes=local["peak_bytes"],
        findings=a.height,
        identical=a.equals(b),
    )
    return result


def table() -> str:
    """Every result: wall and CPU seconds (user + system: what the command itself used,
    less sensitive than wall time to the other jobs of a shared machine), per run, the
    peak, and the ratios against issue 25's 1M figures (its wall time per run, its peak)."""
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    lines = [
        "| size | runs | step | wall s | CPU s | CPU µs/run | wall/run vs issue 1M "
        "| peak GiB (process) | peak GiB (tree) | peak GiB (command) | vs issue 1M peak "
        "| < 4 GiB | load avg | commit |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- "
        "| ---: | --- |",
    ]
    for r in rows:
        cpu = r.get("cpu_seconds")
        tree = r.get("tree_peak_bytes")
        peak = max(r["peak_bytes"], tree or 0)
        issue = ISSUE_1M.get(r["step"])
        wall_ratio = peak_ratio = ""
        if issue:
            wall_ratio = f"{(r['seconds'] / r['runs']) / (issue[0] / 1e6):.2f}x"
            peak_ratio = f"{max(r['peak_bytes'], tree or 0) / 1e9 / issue[1]:.2f}x"
        name = r["step"]
        if name == "spark":
            name += (
                f" (local judge: {r['local_seconds']:.0f} s, {r['local_peak_bytes'] / GIB:.2f} GiB;"
                f" {r['findings']:,} findings, identical: {r['identical']})"
            )
        cpu_text = "" if cpu is None else f"{cpu:.1f}"
        per_run = "" if cpu is None else f"{cpu / r['runs'] * 1e6:.1f}"
        lines.append(
            f"| {r['size']} | {r['runs']:,} | {name} | {r['seconds']:.1f} | "
            f"{cpu_text} | {per_run} | {wall_ratio} | "
            f"{r['peak_bytes'] / GIB:.2f} | {'' if tree is None else f'{tree / GIB:.2f}'} | "
            f"{f'{own / GIB:.2f}' if (own := r.get('command_peak_bytes')) else ''} | "
            f"{peak_ratio} | {'yes' if peak < TARGET_BYTES else 'NO'} | {r['load_average']:.1f} | "
            f"{r['commit']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--size", default="1m", help="1m, 10m, ... (bench/scale_corpus.py), clone-series-100k ..."
    )
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS[:4]))
    parser.add_argument("--memory-limit", help="passed to every kiana command (e.g. 3GB)")
    parser.add_argument("--table", action="store_true", help="print every result and stop")
    parser.add_argument(
        "--tree", type=Path, help="run the kiana of this folder (e.g. a patched copy)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    if args.table:
        print(table())
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    if args.tree:
        TREE[0] = args.tree.resolve()
    for name in args.steps:
        result = step(args.size, name, args)
        with RESULTS.open("a") as sink:
            sink.write(json.dumps(result) + "\n")
        print(
            f"{args.size} {name}: {result['seconds']:.1f} s, "
            f"{result['peak_bytes'] / GIB:.2f} GiB peak (load average {result['load_average']})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
