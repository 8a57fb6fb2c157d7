"""A scale corpus: millions of kernelindex documents with per-commit histories, fast.

    .venv/bin/python bench/scale_corpus.py --runs 10m --jobs 2   # bench/out/scale/10m/*.jsonl.gz

``kiana generate`` plans every run in Python and caps at 1,000 versions; this writes
the documents with polars, a chunk of rows at a time (every document of a chunk is one
``concat_str``), gzip level 1, one file per GPU and chunk; documents spread over each
file's first chunk are checked against :func:`kiana.documents.build_document`.  It models:

* a **commit history**: ``COMMITS`` commits, one every ~6 hours over ~2 years, a
  release every ~40 commits; a session at a commit carries the release installed then
  (``liger_version``, the same label for dozens of sessions, as a development tree
  re-measures under the last release) and the commit (``liger_commit`` and
  ``liger_csv``, as the Liger importer writes them: one origin per session);
* **series lengths as CI makes them**: each (kernel, pass, GPU) group is benchmarked at
  a log-uniform share of the commits (100 to 3,000 sessions, median ~550), every session
  timing every provider of the kernel on its whole sweep (6 points; two dtypes for some
  kernels), a quarter of the groups with a memory run beside each latency run;
* **real-looking noise**: sittings of unchanged code differ by ~4% per workload (the
  brief's 3-7%), while the p20-p80 spread says 0.3-0.8% (or is zero for slow kernels);
  Liger's level steps (±5-25%) at ~1 commit in 150, and the machine drifts (every
  provider of a group together) at ~1 in 400.

Breadth grows with ``--runs``, not series length: 1M and 10M have the same mix of
series lengths, so time per run can be compared.  Groups are drawn from 20 GPUs x the
catalog's kernels and passes until the target is reached.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from kiana.documents import (  # noqa: E402
    API_VERSION,
    NAME_LIMIT,
    SOURCE,
    Gpu,
    RunSpec,
    build_document,
    digest,
    environment_document,
    protocol_document,
)
from kiana.generate.catalog import GPUS, KERNELS, liger_versions  # noqa: E402

OUT = HERE / "out" / "scale"
SIZES = {"100k": 100_000, "1m": 1_000_000, "3m": 3_000_000, "10m": 10_000_000}
COMMITS = 3000
START = datetime(2024, 9, 1)
CHUNK = 200_000
CSV = "benchmark/data/all_benchmark_data.csv"

#: The catalog's GPUs and 13 more: 10M runs over 20 GPUs (~0.5M each), as an index of
#: several kernel libraries would hold.
_EXTRA = """
nvidia | NVIDIA H200 | 141GB HBM3e | sm_90 | NVIDIA H200
nvidia | NVIDIA B200 | 180GB HBM3e | sm_100 | NVIDIA B200
nvidia | NVIDIA L40S | PCIe | sm_89 | NVIDIA L40S
nvidia | NVIDIA GeForce RTX 4090 | PCIe | sm_89 | NVIDIA GeForce RTX 4090
amd | AMD Instinct MI250X | OAM | gfx90a | AMD Instinct MI250X
amd | AMD Instinct MI325X | OAM | gfx942 | AMD Instinct MI325X
nvidia | NVIDIA GH200 | 96GB HBM3 | sm_90 | NVIDIA GH200
nvidia | NVIDIA H20 | 96GB HBM3 | sm_90 | NVIDIA H20
nvidia | NVIDIA L4 | PCIe | sm_89 | NVIDIA L4
nvidia | NVIDIA A100 | PCIe-80GB | sm_80 | NVIDIA A100 80GB PCIe
nvidia | NVIDIA RTX 6000 Ada | PCIe | sm_89 | NVIDIA RTX 6000 Ada Generation
nvidia | NVIDIA B100 | 192GB HBM3e | sm_100 | NVIDIA B100
nvidia | NVIDIA A30 | PCIe | sm_80 | NVIDIA A30
"""
EXTRA_GPUS = tuple(
    Gpu(*(cell.strip() for cell in line.split("|"))) for line in _EXTRA.strip().splitlines()
)
ALL_GPUS: tuple[Gpu, ...] = (*(s.gpu for s in GPUS.values()), *EXTRA_GPUS)


def _groups(target: int, seed: int) -> pl.DataFrame:
    """The (kernel, pass, GPU) groups and their session counts, until ``target`` runs."""
    rng = np.random.default_rng(seed)
    combos = [
        (k, p, g) for g in range(len(ALL_GPUS)) for k, spec in KERNELS.items() for p in spec.passes
    ]
    order = rng.permutation(len(combos))
    rows: list[dict[str, Any]] = []
    total = 0
    for index in order:
        kernel, pass_, gpu = combos[index]
        spec = KERNELS[kernel]
        sessions = int(math.exp(rng.uniform(math.log(100), math.log(3000))))
        memory = bool(rng.random() < 0.25)
        per_session = (1 + len(spec.baselines)) * 6 * len(spec.dtypes) * (2 if memory else 1)
        rows.append(
            {"kernel": kernel, "pass": pass_, "gpu": gpu, "sessions": sessions, "memory": memory}
        )
        total += sessions * per_session
        if total >= target:
            break
    return pl.DataFrame(rows)


def _commits(seed: int) -> pl.DataFrame:
    """Every commit: its index, time, sha and the release installed then."""
    rng = np.random.default_rng(seed + 1)
    hours = np.cumsum(rng.exponential(6.0, COMMITS))
    releases = np.cumsum(rng.random(COMMITS) < 1 / 40)
    versions = liger_versions(int(releases.max()) + 1)
    return pl.DataFrame(
        {
            "commit": np.arange(COMMITS),
            "at": [START + timedelta(hours=float(h)) for h in hours],
            "sha": [hashlib.sha1(f"commit {i}".encode()).hexdigest() for i in range(COMMITS)],
            "liger_version": [versions[r] for r in releases],
        }
    )


def _workloads(kernel: str) -> list[tuple[str, dict[str, Any], float]]:
    """The sweep of a kernel: (slug, params, relative size) per point and dtype."""
    spec = KERNELS[kernel]
    points = []
    for dtype in spec.dtypes:
        for i in range(6):
            x = spec.x_start * 2**i
            params = {**dict(spec.fixed), spec.x_name: x, "dtype": dtype}
            slug = "-".join(f"{k}{v}" for k, v in sorted(params.items()) if k != "dtype")
            points.append((f"{slug}-{dtype}", params, float(2**i)))
    return points


def _series_frame(groups: pl.DataFrame, commits: pl.DataFrame, seed: int) -> pl.DataFrame:
    """One row per session x provider x workload x metric, with its latency level."""
    rng = np.random.default_rng(seed + 2)
    frames = []
    for g in groups.iter_rows(named=True):
        spec = KERNELS[g["kernel"]]
        at = np.sort(rng.choice(COMMITS, size=min(g["sessions"], COMMITS), replace=False))
        n = len(at)
        # Liger's own level: steps at ~1 commit in 150 (+-5-25%), the machine's drift
        # at ~1 in 400 (every provider), sitting-to-sitting noise ~4% per workload.
        steps = np.where(rng.random(n) < 1 / 150, rng.uniform(0.05, 0.25, n), 0.0)
        steps *= np.where(rng.random(n) < 0.5, 1.0, -1.0)
        drift = np.where(rng.random(n) < 1 / 400, rng.normal(0, 0.08, n), 0.0)
        liger_level = np.cumsum(np.log1p(steps))
        env_level = np.cumsum(drift)
        providers = [("liger", 1.0), *spec.baseline_cost]
        slow = bool(rng.random() < 0.3)
        spread = 0.0 if slow else float(rng.uniform(0.003, 0.008))
        base = float(rng.uniform(2e4, 4e6))
        metrics = ["latency", "memory"] if g["memory"] else ["latency"]
        for provider, cost in providers:
            level = env_level + (liger_level if provider == "liger" else 0.0)
            for w, (slug, _params, size) in enumerate(_workloads(g["kernel"])):
                for metric in metrics:
                    noise = rng.normal(0, 0.04 if metric == "latency" else 0.0005, n)
                    value = base * size * cost * np.exp(level + noise)
                    if metric == "memory":
                        value = np.round(value / 1e4, 2)  # MB
                    frames.append(
                        pl.DataFrame(
                            {
                                "commit": at,
                                "kernel": g["kernel"],
                                "pass": g["pass"],
                                "gpu": g["gpu"],
                                "provider": provider,
                                "workload": slug,
                                "w": w,
                                "metric": metric,
                                "median": value,
                                "spread": spread,
                            },
                            schema_overrides={"gpu": pl.Int32, "w": pl.Int32},
                        )
                    )
    runs = pl.concat(frames).join(commits, on="commit")
    # runs of one sitting a few seconds apart, in provider/workload order
    offset = pl.col("w") * 7 + pl.col("provider").rank("dense").over("kernel", "commit") * 60
    return runs.with_columns(
        (pl.col("at") + pl.duration(seconds=offset) + pl.duration(minutes=pl.col("gpu") * 11))
        .dt.truncate("1s")
        .alias("observed_at")
    ).sort("gpu", "kernel", "pass", "commit", "provider", "w", "metric")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _lookup(groups: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The per-key JSON fragments: protocol, environment and digests, made once each."""
    passes = sorted({str(p) for p in groups["pass"]})
    protocols = [(p, _compact(protocol_document(p)), digest(protocol_document(p))) for p in passes]
    gpus = [
        (i, _compact(environment_document(g)), digest(environment_document(g)), g.slug)
        for i, g in enumerate(ALL_GPUS)
    ]
    workloads = [
        (k, slug, digest({"kernel": k, "workload": slug, "params": params}), json.dumps(params))
        for k in sorted({str(k) for k in groups["kernel"]})
        for slug, params, _ in _workloads(k)
    ]
    return {
        "protocols": pl.DataFrame(
            protocols, schema=["pass", "protocol_json", "protocol_digest"], orient="row"
        ),
        "gpus": pl.DataFrame(
            gpus,
            schema={
                "gpu": pl.Int32,
                "environment_json": pl.String,
                "environment_digest": pl.String,
                "gpu_slug": pl.String,
            },
            orient="row",
        ),
        "workloads": pl.DataFrame(
            workloads, schema=["kernel", "workload", "workload_digest", "params"], orient="row"
        ),
    }


def _implementations(runs: pl.DataFrame) -> pl.DataFrame:
    keys = runs.select("kernel", "provider", "liger_version").unique()
    return keys.with_columns(
        pl.Series(
            "implementation_digest",
            [
                digest({"kernel": k, "provider": p, "liger_version": v})
                for k, p, v in keys.iter_rows()
            ],
        )
    )


def _q(text: str) -> pl.Expr:
    return pl.lit(text)


def _values(runs: pl.DataFrame) -> dict[str, pl.Expr]:
    """The JSON texts of a run's numbers: ``timing``, ``measurements`` and the harness's
    ``metrics`` (latency in ns and ms, or memory in MB), as :func:`build_document`."""
    latency = pl.col("metric") == "latency"
    median_ns = pl.col("median").round(0).cast(pl.Int64)
    half = pl.col("median") * pl.col("spread")
    p20 = (pl.col("median") - half).round(0).cast(pl.Int64)
    p80 = (pl.col("median") + half).round(0).cast(pl.Int64)
    # numpy divides as Python does (polars may multiply by the reciprocal instead)
    ints = runs.select(p20.alias("20"), median_ns.alias("50"), p80.alias("80"))
    ms = {
        q: pl.lit(pl.Series(np.divide(ints[q].to_numpy(), 1e6))).cast(pl.String)
        for q in ints.columns
    }
    mb = pl.col("median").cast(pl.String)
    timing = _q('"timing":{"latencyNs":{"median":') + median_ns.cast(pl.String)
    ns = [_q('[{"unit":"ns","value":'), p20.cast(pl.String)]
    ns += [_q(',"metric":"latency","statistic":"p20"},{"unit":"ns","value":')]
    ns += [p80.cast(pl.String), _q(',"metric":"latency","statistic":"p80"}]')]
    megabytes = [_q('[{"unit":"MB","value":'), mb]
    for statistic, last in (("p20", False), ("median", False), ("p80", True)):
        megabytes.append(_q(f',"metric":"memory","statistic":"{statistic}"}}'))
        megabytes += [_q("]")] if last else [_q(',{"unit":"MB","value":'), mb]
    native_ms = [_q('{"ms_20":'), ms["20"], _q(',"ms_50":'), ms["50"], _q(',"ms_80":')]
    native_mb = [_q('{"mb_20":'), mb, _q(',"mb_50":'), mb, _q(',"mb_80":'), mb, _q("}")]
    return {
        "timing": pl.when(latency)
        .then(timing + _q('},"primaryStatistic":"median"},'))
        .otherwise(_q("")),
        "measurements": pl.when(latency)
        .then(pl.concat_str(ns))
        .otherwise(pl.concat_str(megabytes)),
        "metrics": pl.when(latency)
        .then(pl.concat_str([*native_ms, ms["80"], _q("}")]))
        .otherwise(pl.concat_str(native_mb)),
    }


def _documents(runs: pl.DataFrame) -> pl.Series:
    """The JSON text of every run (the shape of :func:`kiana.documents.build_document`)."""
    values = _values(runs)
    stamp = pl.col("observed_at").dt.strftime("%Y-%m-%d-%H-%M-%S")
    title = pl.col("kernel").replace_strict({k: s.title for k, s in KERNELS.items()})
    keys = ("kernel", "pass", "provider", "gpu_slug", "workload")
    slug = pl.concat_str(*keys, stamp, separator="-").str.replace_all("_", "-")
    name = (_q("liger-") + slug).str.slice(0, NAME_LIMIT)
    external = pl.concat_str(*keys, stamp, separator="/")
    doc = pl.concat_str(
        _q('{"run":{"kind":"BenchmarkRun","spec":{"status":"passed",'),
        values["timing"],
        _q('"observedAt":"'),
        pl.col("observed_at").dt.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        _q('","measurements":'),
        values["measurements"],
        _q(f',"sourceNative":{{"source":"{SOURCE}","metrics":'),
        values["metrics"],
        _q(',"benchmark":"'),
        pl.col("kernel"),
        _q("/"),
        pl.col("pass"),
        _q('","externalId":"'),
        external,
        *(
            piece
            for key in ("protocol", "workload", "environment", "implementation")
            for piece in (
                _q(f'","{key}Digest":"' if key != "protocol" else '"},"protocolDigest":"'),
                pl.col(f"{key}_digest"),
            )
        ),
        _q('"},"metadata":{"name":"'),
        name,
        _q('","title":"'),
        title,
        _q(" · "),
        pl.col("provider"),
        _q(" · "),
        pl.col("pass"),
        _q('","labels":{"liger_version":"'),
        pl.col("liger_version"),
        _q(f'","liger_csv":"{CSV}","liger_commit":"'),
        pl.col("sha"),
        _q(f'"}}}},"apiVersion":"{API_VERSION}"}},"protocol":'),
        pl.col("protocol_json"),
        _q(',"environment":'),
        pl.col("environment_json"),
        _q("}"),
    )
    return runs.select(doc.alias("doc")).to_series()


def check(runs: pl.DataFrame, docs: pl.Series, rows: int = 60) -> None:
    """``rows`` documents spread over the chunk (memory runs among them) equal
    :func:`build_document`'s for the same runs."""
    step = max(1, runs.height // rows)
    index = pl.int_range(pl.len())
    picked = runs.with_columns(doc=docs).filter(
        (index % step == 0) | (index == pl.col("metric").eq("memory").arg_true().first())
    )
    for row in picked.iter_rows(named=True):
        latency = row["metric"] == "latency"
        median = round(row["median"]) if latency else row["median"]
        half = row["median"] * row["spread"]
        spec = RunSpec(
            kernel=row["kernel"],
            kernel_title=KERNELS[row["kernel"]].title,
            pass_=row["pass"],
            provider=row["provider"],
            gpu=ALL_GPUS[row["gpu"]],
            workload=row["workload"],
            observed_at=row["observed_at"],
            version=row["liger_version"],
            median=median,
            p20=round(row["median"] - half) if latency else median,
            p80=round(row["median"] + half) if latency else median,
            metric=row["metric"],
            workload_params=json.loads(row["params"]),
            labels={"liger_csv": CSV, "liger_commit": row["sha"]},
        )
        if json.loads(row["doc"]) != build_document(spec):
            raise AssertionError(f"document differs from build_document:\n{row['doc']}")


def _write_gpu(job: tuple[int, int, Path, int]) -> tuple[int, int]:
    """Write every document of one GPU of a ``target``-run corpus: (documents, bytes)."""
    target, gpu, out, seed = job
    groups = _groups(target, seed).filter(pl.col("gpu") == gpu)
    if groups.height == 0:
        return 0, 0
    commits = _commits(seed)
    runs = _series_frame(groups, commits, seed + gpu * 1009)
    parts = _lookup(groups)
    runs = (
        runs.join(parts["protocols"], on="pass")
        .join(parts["gpus"], on="gpu")
        .join(parts["workloads"], on=["kernel", "workload"])
    )
    runs = runs.join(_implementations(runs), on=["kernel", "provider", "liger_version"])
    written = 0
    size = 0
    for number, chunk in enumerate(runs.iter_slices(CHUNK)):
        docs = _documents(chunk)
        if number == 0:
            check(chunk, docs)
        path = out / f"gpu{gpu:02d}-{number:03d}.jsonl.gz"
        with gzip.open(path, "wb", compresslevel=1) as sink:
            docs.to_frame().write_csv(sink, include_header=False, quote_style="never")
        written += chunk.height
        size += path.stat().st_size
    return written, size


def build(target: int, out: Path, *, seed: int = 0, jobs: int = 2) -> dict[str, Any]:
    """Write the corpus of ``target`` runs under ``out`` (existing files replaced)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jsonl.gz"):
        old.unlink()
    started = time.perf_counter()
    gpus = sorted({int(g) for g in _groups(target, seed)["gpu"]})
    with ProcessPoolExecutor(jobs) as pool:
        results = list(pool.map(_write_gpu, [(target, g, out, seed) for g in gpus]))
    info = {
        "runs": sum(r[0] for r in results),
        "bytes": sum(r[1] for r in results),
        "gpus": len(gpus),
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / ".done").write_text(json.dumps(info) + "\n")
    return info


def ensure(size: str, *, jobs: int = 2) -> Path:
    """The corpus folder of ``size`` (``1m``, ``10m``...; ``clone-long-1m`` and the other
    clones of Liger's real history are ``bench/clone_corpus.py``'s), built unless cached."""
    if size.startswith("clone-"):
        import clone_corpus

        return clone_corpus.ensure(size)
    out = OUT / size
    if not (out / ".done").exists():
        build(SIZES[size], out, jobs=jobs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--runs", default="1m", help=f"{', '.join(SIZES)}, or a clone (bench/clone_corpus.py)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="writer processes (default 2)")
    parser.add_argument("--force", action="store_true", help="rebuild a cached corpus")
    args = parser.parse_args()
    out = OUT / args.runs
    if args.force and (out / ".done").exists():
        (out / ".done").unlink()
    started = time.perf_counter()
    path = ensure(args.runs, jobs=args.jobs)
    info = json.loads((path / ".done").read_text())
    print(
        f"{args.runs}: {info['runs']:,} documents, {info['bytes'] / 2**30:.2f} GiB gzip, "
        f"in {time.perf_counter() - started:.1f} s: {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
