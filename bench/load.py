"""Load benchmark: ``kiana load`` against what a user would otherwise run.

Target: 100k JSONL and files <= 1.0x python+polars; 1M JSONL <= 20 s and <= 1.5 GiB;
+1,000 documents into 1M runs <= 1 s (``bench/README.md``'s table).

    .venv/bin/python bench/corpus.py                     # once: make the corpora
    .venv/bin/python bench/load.py                       # 10k and 100k, every layout
    .venv/bin/python bench/load.py --sizes 1m --layouts jsonl jsonl.gz --repeats 1
    .venv/bin/python bench/load.py --incremental         # +1,000 documents into 1M runs
    .venv/bin/python bench/load.py --before /tmp/old --contenders kiana "kiana before"

Contenders, each in its own process (peak memory = that process's own VmHWM, ``common.peak_mib``), timing
the work only (not interpreter start-up nor imports):

* ``kiana``: ``kiana.load.load`` into an empty database file;
* ``python+polars`` (a): a loop of ``json.load``/``json.loads`` per document, the same
  flattened run columns in Python dicts, one ``polars.DataFrame`` at the end;
* ``duckdb read_json`` (b): ``CREATE TABLE ... AS SELECT * FROM read_json(...)`` with
  auto-detected schema, into an empty database file;
* ``floor`` (c): DuckDB reads the same bytes and parses each document once
  (``read_text`` + ``json_valid`` for files; one VARCHAR column per line for JSONL),
  keeping nothing;
* ``kiana before`` (with ``--before DIR``): ``kiana.load.load`` of another kiana tree
  (e.g. ``git worktree add /tmp/old <commit>``), imported through ``PYTHONPATH=DIR``, to
  compare two loaders in one run (also with ``--incremental``).

Printed: the median seconds over ``--repeats`` runs (and their range), the median CPU
seconds (user + system, every thread: on a shared machine less moved by the other work
than the clock), documents per second, the ratio to kiana (>1: the contender is slower
than kiana) and the peak memory.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, child, machine, median, peak_mib, table

CONTENDERS = ("kiana", "kiana before", "python+polars", "duckdb read_json", "floor")

#: The kiana tree of the ``before`` contenders (``--before``), when given.
BEFORE: str | None = None


# --- the contenders (run in a child process) ------------------------------------------


def _kiana(path: Path, work: Path) -> int:
    import kiana.load

    con = kiana.load.connect(work / "kiana.duckdb")
    summary = kiana.load.load(con, [path])
    con.close()
    return summary.loaded


def _flatten(doc: dict[str, Any]) -> dict[str, Any]:
    run, env = doc["run"], doc["environment"]
    spec, meta = run["spec"], run["metadata"]
    native = spec["sourceNative"]
    kernel, pass_, provider, _gpu, workload, _ = native["externalId"].split("/")
    hw = env["spec"]["hardware"]
    quantiles = {m["statistic"]: m["value"] for m in spec.get("measurements", [])}
    median_ns = spec.get("timing", {}).get("latencyNs", {}).get("median")
    return {
        "family": doc["protocol"]["spec"]["comparability"]["family"],
        "kernel": kernel,
        "pass": pass_,
        "provider": provider,
        "workload": workload,
        "gpu": f"{hw['product']} {hw.get('formFactor', '')}".strip(),
        "vendor": hw["vendor"],
        "product": hw["product"],
        "form_factor": hw.get("formFactor"),
        "architecture": hw.get("architecture"),
        "liger_version": meta["labels"]["liger_version"],
        "observed_at": spec["observedAt"],
        "status": spec["status"],
        "metric": "latency" if median_ns is not None else "memory",
        "median": median_ns if median_ns is not None else quantiles.get("median"),
        "p20": quantiles.get("p20"),
        "p80": quantiles.get("p80"),
        "protocol_digest": spec["protocolDigest"],
        "workload_digest": spec["workloadDigest"],
        "environment_digest": spec["environmentDigest"],
        "implementation_digest": spec["implementationDigest"],
        "benchmark": native["benchmark"],
        "external_id": native["externalId"],
        "name": meta.get("name"),
        "title": meta.get("title"),
    }


def _python_polars(path: Path, work: Path) -> int:
    import gzip

    import polars as pl

    rows: list[dict[str, Any]] = []
    if path.is_dir():
        for file in sorted(path.rglob("*.json")):
            with open(file, "rb") as handle:
                rows.append(_flatten(json.load(handle)))
    else:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
            for line in handle:
                if line.strip():
                    rows.append(_flatten(json.loads(line)))
    frame = pl.DataFrame(rows)
    frame = frame.with_columns(pl.col("observed_at").str.to_datetime(time_zone="UTC"))
    return frame.height


def _files_glob(path: Path) -> str:
    return str(path / "**" / "*.json") if path.is_dir() else str(path)


def _duckdb_read_json(path: Path, work: Path) -> int:
    import duckdb

    con = duckdb.connect(str(work / "read_json.duckdb"))
    fmt = "auto" if path.is_dir() else "newline_delimited"
    con.execute(
        f"CREATE TABLE docs AS SELECT * FROM read_json('{_files_glob(path)}', format = '{fmt}')"
    )
    (count,) = con.execute("SELECT count(*) FROM docs").fetchall()[0]
    con.close()
    return int(count)


def _floor(path: Path, work: Path) -> int:
    import duckdb

    con = duckdb.connect()
    if path.is_dir():
        query = f"SELECT count(*) FILTER (WHERE json_valid(content)) FROM read_text('{_files_glob(path)}')"
    else:
        query = (
            f"SELECT count(*) FILTER (WHERE json_valid(line)) FROM read_csv('{path}', "
            "columns = {'line': 'VARCHAR'}, delim = chr(1), quote = '', escape = '', "
            "header = false, max_line_size = 16777216)"
        )
    (count,) = con.execute(query).fetchall()[0]
    con.close()
    return int(count)


def _incremental(path: Path, work: Path) -> int:
    import kiana.load

    con = kiana.load.connect(work / "kiana.duckdb")
    summary = kiana.load.load(con, [path])
    con.close()
    return summary.loaded


RUNNERS = {
    "kiana": _kiana,
    "kiana before": _kiana,
    "incremental before": _incremental,
    "python+polars": _python_polars,
    "duckdb read_json": _duckdb_read_json,
    "floor": _floor,
    "incremental": _incremental,
}


#: The modules each contender imports, imported before its clock starts.
IMPORTS = {
    "kiana": ("kiana.load",),
    "kiana before": ("kiana.load",),
    "incremental before": ("kiana.load",),
    "python+polars": ("gzip", "polars"),
    "duckdb read_json": ("duckdb",),
    "floor": ("duckdb",),
    "incremental": ("kiana.load",),
}


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all its threads."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_one(contender: str, path: Path, work: Path) -> None:
    for module in IMPORTS[contender]:
        importlib.import_module(module)
    used = _cpu_seconds()
    started = time.perf_counter()
    documents = RUNNERS[contender](path, work)
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {
        "seconds": seconds,
        "cpu": _cpu_seconds() - used,
        "documents": documents,
        "peak_mib": peak_mib(),
    }
    if "kiana.load" in sys.modules:
        result["kiana"] = str(Path(sys.modules["kiana.load"].__file__ or "").parents[2])
    print(json.dumps(result))


# --- the driver -----------------------------------------------------------------------


def _once(contender: str, path: Path, prepare: Path | None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="kiana-bench-", dir=OUT))
    before = contender.endswith(" before")
    if before and BEFORE is None:
        raise SystemExit(f"{contender}: give the other kiana tree with --before DIR")
    saved = os.environ.get("PYTHONPATH")
    try:
        if prepare is not None:
            shutil.copy(prepare, work / "kiana.duckdb")
        if before:
            os.environ["PYTHONPATH"] = str(BEFORE)  # the child imports that tree's kiana
        got = child([__file__, "--one", contender, str(path), str(work)])
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
        shutil.rmtree(work, ignore_errors=True)
    expected = Path(str(BEFORE)).resolve() if before else ROOT
    if "kiana" in got and Path(got["kiana"]).resolve() != expected:
        raise RuntimeError(f"{contender} imported kiana from {got['kiana']}, not {expected}")
    return got


def measure(
    contenders: list[str], path: Path, repeats: int, prepare: Path | None = None
) -> dict[str, dict[str, Any]]:
    """Each contender ``repeats`` times, taking turns (kiana, then the next, ... then
    kiana again), so that a shared machine's changing load falls on all of them alike:
    the median seconds, the largest peak and the documents of each."""
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    for _ in range(repeats):
        for contender in contenders:
            runs[contender].append(_once(contender, path, prepare))
    return {
        c: {
            "seconds": median([r["seconds"] for r in got]),
            "cpu": median([r["cpu"] for r in got]),
            "min": min(r["seconds"] for r in got),
            "max": max(r["seconds"] for r in got),
            "peak_mib": max(r["peak_mib"] for r in got),
            "documents": got[-1]["documents"],
        }
        for c, got in runs.items()
    }


def _spread(got: dict[str, Any]) -> str:
    return f"{got['min']:.2f}-{got['max']:.2f}"


def incremental(repeats: int) -> str:
    """1,000 new documents into a database that holds the 1M corpus."""
    import corpus

    from kiana.generate import CorpusConfig, generate, write_corpus

    big = corpus.ensure("1m", "jsonl")
    base = OUT / "db-1m.duckdb"
    if not base.exists():
        print("building the 1M-run database once (kiana load)...", file=sys.stderr)
        work = Path(tempfile.mkdtemp(prefix="kiana-bench-", dir=OUT))
        result = child([__file__, "--one", "kiana", str(big), str(work)])
        shutil.move(work / "kiana.duckdb", base)
        shutil.rmtree(work, ignore_errors=True)
        print(f"  {result['seconds']:.1f} s", file=sys.stderr)
    new = OUT / "corpus" / "new-1k" / "documents.jsonl"
    if not new.exists():
        config = CorpusConfig.sized(1000, seed=99)
        write_corpus(generate(config), new.parent, "jsonl", truth=False)
    contenders = ["incremental"] + (["incremental before"] if BEFORE else [])
    lines = []
    for name, got in measure(contenders, new, repeats, prepare=base).items():
        lines.append(
            f"{name}: {got['documents']:,} new documents into a 1M-run database: "
            f"{got['seconds']:.2f} s (median of {repeats}; {_spread(got)}; "
            f"CPU {got['cpu']:.2f} s), "
            f"peak {got['peak_mib']:.0f} MiB (target <= 1 s)"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description="kiana load against its baselines")
    parser.add_argument(
        "--one", nargs=3, metavar=("CONTENDER", "PATH", "WORK"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--sizes", nargs="+", default=["10k", "100k"], choices=["10k", "100k", "1m"]
    )
    parser.add_argument("--layouts", nargs="+", default=["files", "jsonl", "jsonl.gz"])
    parser.add_argument(
        "--contenders",
        nargs="+",
        choices=CONTENDERS,
        help="default: all (but not duckdb read_json on 100k+ single files, which needs >8 GB)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (median)")
    parser.add_argument("--incremental", action="store_true", help="only the +1,000 case")
    parser.add_argument(
        "--before", metavar="DIR", help="another kiana tree, for the 'kiana before' contenders"
    )
    args = parser.parse_args()
    global BEFORE
    BEFORE = args.before
    if args.one:
        contender, path, work = args.one
        run_one(contender, Path(path), Path(work))
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    if args.incremental:
        print(incremental(args.repeats))
        return 0
    import corpus

    rows: list[list[str]] = []
    for size in args.sizes:
        for layout in args.layouts:
            path = corpus.ensure(size, layout)
            default = [c for c in CONTENDERS if c != "kiana before" or BEFORE]
            contenders = args.contenders or [
                c
                for c in default
                if not (c == "duckdb read_json" and layout == "files" and size != "10k")
            ]
            if len(contenders) < len(args.contenders or default):
                print(f"{size} {layout}: duckdb read_json left out (name it to run it)")
            results = measure(contenders, path, args.repeats)
            base = results.get("kiana")
            for name, got in results.items():
                ratio = f"{got['seconds'] / base['seconds']:.2f}x" if base else "-"
                rows.append(
                    [
                        size,
                        layout,
                        name,
                        f"{got['documents']:,}",
                        f"{got['seconds']:.2f}",
                        _spread(got),
                        f"{got['cpu']:.2f}",
                        f"{got['documents'] / got['seconds']:,.0f}",
                        ratio,
                        f"{got['peak_mib']:,.0f}",
                    ]
                )
            print(table(HEADER, rows[-len(results) :]), flush=True)
    print()
    print(f"median of {args.repeats} run(s); ratio = contender time / kiana time")
    print(table(HEADER, rows))
    return 0


HEADER = [
    "size",
    "layout",
    "contender",
    "documents",
    "seconds",
    "min-max",
    "CPU s",
    "docs/s",
    "vs kiana",
    "peak MiB",
]

if __name__ == "__main__":
    sys.exit(main())
