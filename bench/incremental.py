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

One load is one draw of what an update costs: a GPU whose steps reach the next rung of
its calibration (``kiana.stats.calfit.prefix_size``: twice the steps) is judged again
whole, so a +1% load costs more when one does and less when none does.  What a team
adding +1% at a time pays on average is measured by ``--increments K``: the newest
``K x share`` of the runs split into ``K`` loads of ``share`` each (in time order), the
base (the rest) judged once, then the ``K`` loads loaded and judged one after the other
into one database (``kiana regressions`` after each: the stored judgement updated, as CI
would), and at the end one full judge (``--full``) of a copy holding every load, with
which the last update's stored findings must be identical.  Per load: its seconds, CPU,
peak and the GPUs whose calibration moved (``judged_gpus.prefix`` before and after: with
every step up to 8,192 steps, then at each rung), each judged again whole.  The ratios
are each update's and their mean's against that one full judge (of the largest
database: a full judge of an earlier one holds up to ``K x share`` fewer runs).

    nice .venv/bin/python bench/incremental.py --size 10m --increments 5

Target: +1% of documents judged in <= 10% of a full judge, with the same findings as
``--full`` (``bench/README.md``'s table).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import KIANA, timed  # noqa: E402

OUT = HERE / "out" / "incremental"
OBSERVED = re.compile(rb'"observedAt":"([^"]+)"')


def tag(size: str, increments: int) -> str:
    """The cache name of a split: ``1m`` (one load), ``1m-x5`` (five)."""
    return size if increments == 1 else f"{size}-x{increments}"


def split(size: str, share: float, increments: int = 1) -> tuple[Path, list[Path]]:
    """The corpus of ``size`` as ``base/`` (runs before the first cut) and the newest
    ``increments x share`` of the runs as ``increments`` loads of ``share`` each, oldest
    first (``new/``, or ``new-1/`` ... ``new-K/``), one file per corpus file in each."""
    import bisect

    import numpy as np
    import scale_corpus

    folder = OUT / tag(size, increments)
    base = folder / "base"
    news = (
        [folder / "new"]
        if increments == 1
        else [folder / f"new-{i}" for i in range(1, increments + 1)]
    )
    if (folder / ".done").exists():
        return base, news
    corpus = scale_corpus.ensure(size)
    files = sorted(corpus.glob("*.jsonl.gz"))
    times: list[bytes] = []
    for path in files:
        with gzip.open(path, "rb") as handle:
            times += [_observed(line) for line in handle]
    ordered = sorted(times)
    del times
    cuts = [ordered[int(len(ordered) * (1 - (increments - i) * share))] for i in range(increments)]
    del ordered
    targets = [base, *news]
    for target in targets:
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
    counts = np.zeros(len(targets), dtype=np.int64)
    for path in files:
        with contextlib.ExitStack() as stack, gzip.open(path, "rb") as handle:
            sinks = [
                stack.enter_context(gzip.open(t / path.name, "wb", compresslevel=1))
                for t in targets
            ]
            for line in handle:
                part = bisect.bisect_right(cuts, _observed(line))
                sinks[part].write(line)
                counts[part] += 1
    names = ["base", *(t.name for t in news)]
    (folder / ".done").write_text(json.dumps(dict(zip(names, map(int, counts), strict=True))))
    return base, news


def _observed(line: bytes) -> bytes:
    found = OBSERVED.search(line)
    if found is None:
        raise SystemExit("a document without observedAt")
    return found.group(1)


@contextlib.contextmanager
def _read_only(db: Path) -> Iterator[Any]:
    """``db`` opened read-only with this tree's kiana, closed after."""
    sys.path.insert(0, str(HERE.parent))
    import kiana.load

    con = kiana.load.connect(db, read_only=True)
    try:
        yield con
    finally:
        con.close()


def _findings(db: Path) -> Any:
    """The findings stored in ``db`` (read-only: its stored judgement, current)."""
    from kiana.shards import judge_all
    from kiana.shards.stored import StoredJudged

    with _read_only(db) as con:
        judged = judge_all(con)
        assert isinstance(judged, StoredJudged), "the stored judgement is not current"
        return judged.findings


def _compare(row: dict[str, Any], mine: Path, full: Path) -> None:
    """``identical_findings`` of the updated database ``mine`` and the fully judged
    ``full`` in ``row``, and where they differ."""
    ours, theirs = _findings(mine), _findings(full)
    row["identical_findings"] = ours.equals(theirs)
    if not row["identical_findings"]:
        row["differences"] = _differences(ours, theirs)


def _record(row: dict[str, Any], dbs: list[Path]) -> None:
    """``row`` with the commit measured, appended to ``results.jsonl``; the work
    databases ``dbs`` deleted, or kept (to be read: which findings differ, and why)."""
    row["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    for db in dbs:
        if row["identical_findings"]:
            db.unlink()
        else:
            print(f"findings differ: {db} kept", flush=True)
    with (OUT / "results.jsonl").open("a") as sink:
        sink.write(json.dumps(row, default=str) + "\n")  # differences may hold datetimes


def load_base(size: str, base: Path) -> Path:
    """The base loaded, not judged (cached apart from the judged base: the load does not
    depend on the judging code, the stored judgement does); ``size``: a :func:`tag`."""
    loaded = OUT / f"base-{size}.loaded.duckdb"
    if not loaded.exists():
        scratch = loaded.with_suffix(".tmp")
        scratch.unlink(missing_ok=True)
        print(f"loading the base into {loaded} ...", flush=True)
        timed([*KIANA, "load", str(base), "--db", str(scratch), "--quiet"])
        scratch.rename(loaded)
    return loaded


def judged_base(size: str, base: Path) -> Path:
    """The base loaded and judged (its judgement stored), cached; ``size``: a :func:`tag`."""
    stored = OUT / f"base-{size}.duckdb"
    if not stored.exists():
        scratch = stored.with_suffix(".tmp")
        scratch.unlink(missing_ok=True)
        loaded = load_base(size, base)
        print(f"judging the base into {stored} ...", flush=True)
        shutil.copyfile(loaded, scratch)
        first = timed([*KIANA, "regressions", "--db", str(scratch)])
        print(f"  base judged and stored: {first['seconds']} s", flush=True)
        scratch.rename(stored)
    else:
        # Judged by another version of kiana, its stored judgement is stale: brought up to
        # date here (a current one is only read), or every round would time a full judge.
        timed([*KIANA, "regressions", "--db", str(stored)])
    return stored


def measure(size: str, base: Path, new: Path, rounds: int) -> list[dict[str, Any]]:
    """Every round: load ``new`` into copies of the judged base, time both judges."""
    stored = judged_base(size, base)
    results: list[dict[str, Any]] = []
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
        _compare(row, dbs["incremental"], dbs["full"])
        row["ratio"] = round(row["incremental"]["seconds"] / row["full"]["seconds"], 4)
        row["cpu_ratio"] = round(row["incremental"]["cpu_seconds"] / row["full"]["cpu_seconds"], 4)
        _record(row, list(dbs.values()))
        print(_line(row), flush=True)
        results.append(row)
    return results


def _prefixes(db: Path) -> dict[str, int]:
    """Per GPU, how many of its steps its stored calibration rests on."""
    with _read_only(db) as con:
        rows = con.execute("SELECT gpu, prefix FROM judged_gpus").fetchall()
    return {str(g): int(p) for g, p in rows}


def measure_sequence(size: str, base: Path, news: list[Path]) -> dict[str, Any]:
    """The loads ``news`` one after the other into one copy of the judged base, each
    followed by ``kiana regressions`` (the update); then one full judge of a copy of the
    result (module docstring)."""
    name = tag(size, len(news))
    stored = judged_base(name, base)
    work, full = OUT / "work-sequence.duckdb", OUT / "work-sequence-full.duckdb"
    shutil.copyfile(stored, work)
    row: dict[str, Any] = {
        "size": size,
        "increments": len(news),
        "at": time.strftime("%Y-%m-%d %H:%M"),
    }
    updates: list[dict[str, Any]] = []
    before = _prefixes(work)
    for index, new in enumerate(news, start=1):
        loaded = timed([*KIANA, "load", str(new), "--db", str(work), "--quiet"])
        update = timed([*KIANA, "regressions", "--db", str(work)])
        after = _prefixes(work)
        update["load"] = loaded
        update["calibration_moved"] = sorted(
            g for g, p in after.items() if before.get(g, 0) not in (0, p)
        )
        before = after
        updates.append(update)
        print(
            f"  load {index}: {loaded['seconds']} s; update {update['seconds']} s, "
            f"{update['cpu_seconds']} s CPU ({update['tree_peak_bytes'] / 2**30:.2f} GiB); "
            f"calibration moved: {', '.join(update['calibration_moved']) or 'none'}",
            flush=True,
        )
    shutil.copyfile(work, full)
    row["full"] = timed([*KIANA, "regressions", "--db", str(full), "--full"])
    row["read"] = timed([*KIANA, "regressions", "--db", str(work)])
    _compare(row, work, full)
    row["updates"] = updates
    for unit in ("seconds", "cpu_seconds"):
        whole = row["full"][unit]
        each = [u[unit] / whole for u in updates]
        row[f"ratios_{unit}"] = [round(r, 4) for r in each]
        row[f"mean_ratio_{unit}"] = round(sum(each) / len(each), 4)
    _record(row, [work, full])
    whole = row["full"]
    print(
        f"{size}, {len(news)} loads in turn: full judge {whole['seconds']} s, "
        f"{whole['cpu_seconds']} s CPU ({whole['tree_peak_bytes'] / 2**30:.2f} GiB); updates "
        f"/ full, CPU: {', '.join(f'{r:.3f}' for r in row['ratios_cpu_seconds'])}; mean "
        f"{row['mean_ratio_cpu_seconds']:.3f} (wall {row['mean_ratio_seconds']:.3f}; target "
        f"<= 0.10); identical findings: {row['identical_findings']}",
        flush=True,
    )
    return row


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
        "--increments",
        type=int,
        default=1,
        help="K > 1: K loads of --share, judged one after the other (module docstring)",
    )
    parser.add_argument(
        "--prepare", action="store_true", help="only split the corpus and load the base"
    )
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    name = tag(options.size, options.increments)
    base, news = split(options.size, options.share, options.increments)
    print(f"corpus split: {(OUT / name / '.done').read_text()}", flush=True)
    if options.prepare:
        load_base(name, base)
        return 0
    if options.increments > 1:
        return 0 if measure_sequence(options.size, base, news)["identical_findings"] else 1
    results = measure(options.size, base, news[0], options.rounds)
    return 0 if all(r["identical_findings"] for r in results) else 1


if __name__ == "__main__":
    os.environ.setdefault("KIANA_TRACEBACK", "1")
    sys.exit(main())
