"""Incremental judging: ``kiana regressions`` after a load of +1% new runs (the stored
judgement updated) against a full judge of the same database (``--full``), one run each,
alternating, in one run of this script.

    nice .venv/bin/python bench/incremental.py --size 1m          # ~10 minutes on 2 cores
    nice .venv/bin/python bench/incremental.py --size 1m --rounds 2

The corpus is ``bench/scale_corpus.py``'s (cached under ``bench/out/scale/<size>/``),
split by each run's ``observedAt`` into the oldest 99% (``base/``) and the newest 1%
(``new/``: the next commits of the history, as CI would add them), cached under
``bench/out/incremental/<size>/``.  The base is loaded into a database and judged once
(``kiana regressions``: the judgement stored); each round copies that database, loads
``new/`` into the copy (timed apart: ``load``), then times ``kiana regressions`` (the
stored judgement updated: ``incremental``) and, on another copy with the same two
loads, ``kiana regressions --full`` (``full``), both under ``/usr/bin/time -v``.  The
table output, not ``--json``: the JSON of every step (~1.7 GB at 1M) costs the same
whichever way the judgement was made.  Both databases' stored findings must be
identical (checked, the same rows in the same order); the ratios incremental / full
(wall and CPU seconds) are printed and appended to ``bench/out/incremental/results.jsonl``,
with ``read``: ``kiana regressions`` once more on the updated database (its stored
judgement current: what any run pays whatever judged it, the start, the reading of the
stored judgement, the culprit columns and the table).
"""

from __future__ import annotations

import argparse
import gzip
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
sys.path.insert(0, str(HERE))

from scale import KIANA, timed  # noqa: E402

OUT = HERE / "out" / "incremental"
OBSERVED = re.compile(rb'"observedAt":"([^"]+)"')


def split(size: str, share: float) -> tuple[Path, Path]:
    """The corpus of ``size`` as ``base/`` (runs before the cut) and ``new/`` (the
    newest ``share`` of the runs), one file per corpus file in each."""
    import numpy as np
    import scale_corpus

    folder = OUT / size
    base, new = folder / "base", folder / "new"
    if (folder / ".done").exists():
        return base, new
    corpus = scale_corpus.ensure(size)
    files = sorted(corpus.glob("*.jsonl.gz"))
    times: list[bytes] = []
    for path in files:
        with gzip.open(path, "rb") as handle:
            times += [_observed(line) for line in handle]
    cut = sorted(times)[int(len(times) * (1 - share))]
    del times
    for target in (base, new):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
    counts = np.zeros(2, dtype=np.int64)
    for path in files:
        with (
            gzip.open(path, "rb") as handle,
            gzip.open(base / path.name, "wb", compresslevel=1) as old,
            gzip.open(new / path.name, "wb", compresslevel=1) as fresh,
        ):
            for line in handle:
                later = _observed(line) >= cut
                (fresh if later else old).write(line)
                counts[int(later)] += 1
    (folder / ".done").write_text(json.dumps({"base": int(counts[0]), "new": int(counts[1])}))
    return base, new


def _observed(line: bytes) -> bytes:
    found = OBSERVED.search(line)
    if found is None:
        raise SystemExit("a document without observedAt")
    return found.group(1)


def _findings(db: Path) -> Any:
    """The findings stored in ``db`` (read-only: its stored judgement, current)."""
    sys.path.insert(0, str(HERE.parent))
    import kiana.load
    from kiana.shards import judge_all
    from kiana.shards.stored import StoredJudged

    con = kiana.load.connect(db, read_only=True)
    try:
        judged = judge_all(con)
        assert isinstance(judged, StoredJudged), "the stored judgement is not current"
        return judged.findings
    finally:
        con.close()


def load_base(size: str, base: Path) -> Path:
    """The base loaded, not judged (cached apart from the judged base: the load does not
    depend on the judging code, the stored judgement does)."""
    loaded = OUT / f"base-{size}.loaded.duckdb"
    if not loaded.exists():
        scratch = loaded.with_suffix(".tmp")
        scratch.unlink(missing_ok=True)
        print(f"loading the base into {loaded} ...", flush=True)
        timed([*KIANA, "load", str(base), "--db", str(scratch), "--quiet"])
        scratch.rename(loaded)
    return loaded


def measure(size: str, base: Path, new: Path, rounds: int) -> list[dict[str, Any]]:
    """Every round: load ``new`` into copies of the judged base, time both judges."""
    stored = OUT / f"base-{size}.duckdb"
    results: list[dict[str, Any]] = []
    if not stored.exists():
        scratch = stored.with_suffix(".tmp")
        scratch.unlink(missing_ok=True)
        loaded = load_base(size, base)
        print(f"judging the base into {stored} ...", flush=True)
        shutil.copyfile(loaded, scratch)
        first = timed([*KIANA, "regressions", "--db", str(scratch)])
        print(f"  base judged and stored: {first['seconds']} s", flush=True)
        scratch.rename(stored)
    for index in range(rounds):
        row: dict[str, Any] = {"size": size, "round": index, "at": time.strftime("%Y-%m-%d %H:%M")}
        order = ["incremental", "full"] if index % 2 == 0 else ["full", "incremental"]
        dbs = {name: OUT / f"work-{name}.duckdb" for name in order}
        for name in order:
            shutil.copyfile(stored, dbs[name])
            row[f"load_{name}"] = timed(
                [*KIANA, "load", str(new), "--db", str(dbs[name]), "--quiet"]
            )
            extra = ["--full"] if name == "full" else []
            row[name] = timed([*KIANA, "regressions", "--db", str(dbs[name]), *extra])
        # the fixed cost of any `kiana regressions` of this database: start, open, read the
        # stored judgement (current now), culprit columns, table
        row["read"] = timed([*KIANA, "regressions", "--db", str(dbs["incremental"])])
        mine, theirs = _findings(dbs["incremental"]), _findings(dbs["full"])
        row["identical_findings"] = mine.equals(theirs)
        if not row["identical_findings"]:
            row["differences"] = _differences(mine, theirs)
        row["ratio"] = round(row["incremental"]["seconds"] / row["full"]["seconds"], 4)
        row["cpu_ratio"] = round(row["incremental"]["cpu_seconds"] / row["full"]["cpu_seconds"], 4)
        row["commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
        for db in dbs.values():
            if row["identical_findings"]:
                db.unlink()
            else:  # kept, to be read: which findings differ, and why
                print(f"findings differ: {db} kept", flush=True)
        print(_line(row), flush=True)
        results.append(row)
        with (OUT / "results.jsonl").open("a") as sink:
            sink.write(json.dumps(row) + "\n")
    return results


def _differences(a: Any, b: Any) -> dict[str, Any]:
    """Where two findings frames differ: their heights, the findings (keys) in one only,
    and per column the number of findings present in both whose value differs."""
    import polars as pl

    from kiana.vocabulary import FINDING_KEYS

    keys = list(FINDING_KEYS)
    both = a.join(b, on=keys, how="inner", suffix="_full", nulls_equal=True)
    columns = {
        c: int(both.filter(pl.col(c).ne_missing(pl.col(f"{c}_full"))).height)
        for c in a.columns if c not in keys and f"{c}_full" in both.columns
    }  # fmt: skip
    return {
        "heights": [a.height, b.height],
        "incremental_only": a.join(b, on=keys, how="anti", nulls_equal=True).head(5).rows(),
        "full_only": b.join(a, on=keys, how="anti", nulls_equal=True).head(5).rows(),
        "columns": {c: n for c, n in columns.items() if n},
    }


def _line(row: dict[str, Any]) -> str:
    inc, full = row["incremental"], row["full"]
    return (
        f"{row['size']} round {row['round']}: +1% load {row['load_incremental']['seconds']} s; "
        f"incremental {inc['seconds']} s, {inc['cpu_seconds']} s CPU "
        f"({inc['tree_peak_bytes'] / 2**30:.2f} GiB), full {full['seconds']} s, "
        f"{full['cpu_seconds']} s CPU ({full['tree_peak_bytes'] / 2**30:.2f} GiB): "
        f"ratio {row['ratio']:.3f} (CPU {row['cpu_ratio']:.3f}; target <= 0.10); the stored "
        f"judgement read again: {row['read']['seconds']} s, {row['read']['cpu_seconds']} s CPU; "
        "identical findings: "
        f"{row['identical_findings']}; load average {inc['load_average']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1m", help="1m, 10m, ... (bench/scale_corpus.py)")
    parser.add_argument("--share", type=float, default=0.01, help="the new runs' share")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--prepare", action="store_true", help="only split the corpus and load the base"
    )
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    base, new = split(options.size, options.share)
    print(f"corpus split: {(OUT / options.size / '.done').read_text()}", flush=True)
    if options.prepare:
        load_base(options.size, base)
        return 0
    results = measure(options.size, base, new, options.rounds)
    return 0 if all(r["identical_findings"] for r in results) else 1


if __name__ == "__main__":
    os.environ.setdefault("KIANA_TRACEBACK", "1")
    sys.exit(main())
