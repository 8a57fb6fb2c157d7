"""Documents out of run specs, fast, and corpora onto disk.

:class:`DocumentFactory` returns exactly what :func:`kiana.documents.build_document`
returns (same keys, same order, same values; a test compares them on every run of a
corpus) but caches what repeats across runs: the protocol and environment digests, the
workload and implementation digests, the external-id and name prefixes.  That makes
document generation about three times faster, which is what lets a benchmark ask for a
million documents.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kiana.documents import (
    API_VERSION,
    NAME_LIMIT,
    SOURCE,
    Gpu,
    RunSpec,
    digest,
    environment_document,
    measurement_parts,
    protocol_document,
    slugify,
    timestamp_z,
)
from kiana.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from kiana.generate.model import Corpus

Layout = Literal["files", "jsonl", "jsonl.gz"]
LAYOUTS: tuple[Layout, ...] = ("files", "jsonl", "jsonl.gz")
TRUTH_FILE = "truth.csv"


@dataclass(frozen=True)
class _Static:
    prefix: str  # externalId up to the timestamp
    name_prefix: str  # "liger-" + slug of the same, before "-<stamp>"
    protocol_digest: str
    workload_digest: str
    environment_digest: str


class DocumentFactory:
    """``build(spec) == kiana.documents.build_document(spec)``, with caches."""

    def __init__(self) -> None:
        self._static: dict[tuple[str, str, str, Gpu, str], _Static] = {}
        self._implementation: dict[tuple[str, str, str], str] = {}
        self._stamps: dict[datetime, tuple[str, str]] = {}
        self._protocol_digests: dict[str, str] = {}
        self._environment_digests: dict[Gpu, str] = {}
        self._environments: dict[Gpu, dict[str, Any]] = {}

    def _static_for(self, spec: RunSpec) -> _Static:
        key = (spec.kernel, spec.pass_, spec.provider, spec.gpu, spec.workload)
        static = self._static.get(key)
        if static is None:
            parts = [spec.kernel, spec.pass_, spec.provider, spec.gpu.slug, spec.workload]
            protocol = self._protocol_digests.get(spec.pass_)
            if protocol is None:
                protocol = self._protocol_digests[spec.pass_] = digest(
                    protocol_document(spec.pass_)
                )
            environment = self._environment_digests.get(spec.gpu)
            if environment is None:
                environment = self._environment_digests[spec.gpu] = digest(
                    environment_document(spec.gpu)
                )
            static = self._static[key] = _Static(
                prefix="/".join(parts) + "/",
                name_prefix="liger-" + slugify("-".join(parts)) + "-",
                protocol_digest=protocol,
                workload_digest=digest(
                    {
                        "kernel": spec.kernel,
                        "workload": spec.workload,
                        "params": spec.workload_params,
                    }
                ),
                environment_digest=environment,
            )
        return static

    def build(self, spec: RunSpec) -> dict[str, Any]:
        static = self._static_for(spec)
        implementation_key = (spec.kernel, spec.provider, spec.liger_version)
        implementation = self._implementation.get(implementation_key)
        if implementation is None:
            implementation = self._implementation[implementation_key] = digest(
                {
                    "kernel": spec.kernel,
                    "provider": spec.provider,
                    "liger_version": spec.liger_version,
                }
            )
        stamps = self._stamps.get(spec.observed_at)
        if stamps is None:
            if len(self._stamps) > 4096:
                self._stamps.clear()
            stamps = self._stamps[spec.observed_at] = (
                spec.observed_at.strftime("%Y-%m-%d-%H-%M-%S"),
                timestamp_z(spec.observed_at),
            )
        stamp, observed = stamps
        run_spec: dict[str, Any] = {"status": spec.status}
        if spec.metric == "latency":
            run_spec["timing"] = {
                "latencyNs": {"median": round(spec.median)},
                "primaryStatistic": "median",
            }
        measurements, native = measurement_parts(spec)
        run_spec["observedAt"] = observed
        run_spec["measurements"] = measurements
        run_spec["sourceNative"] = {
            "source": SOURCE,
            "metrics": native,
            "benchmark": f"{spec.kernel}/{spec.pass_}",
            "externalId": static.prefix + stamp,
        }
        run_spec["protocolDigest"] = static.protocol_digest
        run_spec["workloadDigest"] = static.workload_digest
        run_spec["environmentDigest"] = static.environment_digest
        run_spec["implementationDigest"] = implementation
        run = {
            "kind": "BenchmarkRun",
            "spec": run_spec,
            "metadata": {
                "name": (static.name_prefix + stamp)[:NAME_LIMIT],
                "title": f"{spec.kernel_title} · {spec.provider} · {spec.pass_}",
                "labels": {"liger_version": spec.liger_version},
            },
            "apiVersion": API_VERSION,
        }
        return {
            "run": run,
            "protocol": protocol_document(spec.pass_),
            "environment": self._environment(spec.gpu),
        }

    def _environment(self, gpu: Gpu) -> dict[str, Any]:
        """A fresh copy of ``environment_document(gpu)`` (whose slug regex is slow)."""
        template = self._environments.get(gpu)
        if template is None:
            template = self._environments[gpu] = environment_document(gpu)
        spec = template["spec"]
        return {
            "kind": template["kind"],
            "spec": {"hardware": dict(spec["hardware"]), "software": dict(spec["software"])},
            "metadata": dict(template["metadata"]),
            "apiVersion": template["apiVersion"],
        }


@dataclass(frozen=True)
class Written:
    """What :func:`write_corpus` wrote."""

    documents: int
    files: int
    truth: Path | None


def _file_name(doc: dict[str, Any]) -> str:
    """``<kernel>/<pass>/<gpu>/<provider>/<workload>-<stamp>[-memory].json``: unique
    per run, unlike ``metadata.name`` (which is cut at 100 characters)."""
    spec = doc["run"]["spec"]
    kernel, pass_, provider, gpu, workload, stamp = spec["sourceNative"]["externalId"].split("/")
    memory = "" if "timing" in spec else "-memory"
    return f"{kernel}/{pass_}/{gpu}/{provider}/{workload}-{stamp}{memory}.json"


def write_corpus(
    corpus: Corpus, out: str | os.PathLike[str], layout: Layout = "jsonl", *, truth: bool = True
) -> Written:
    """Write every document of ``corpus`` under ``out`` and, with ``truth``, the ground
    truth as ``out/truth.csv``.

    Layouts: ``files`` (one pretty-printed ``.json`` per run, as the seeds), ``jsonl``
    (``out/documents.jsonl``, one compact document a line) or ``jsonl.gz`` (the same,
    gzip-compressed with a zero mtime so the bytes are reproducible).  Existing files of
    the same names are overwritten; nothing else in ``out`` is touched.
    """
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r}", hint=f"use one of {', '.join(LAYOUTS)}")
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    count = 0
    files = 0
    if layout == "files":
        made: set[Path] = set()
        for doc in corpus.documents():
            path = root / _file_name(doc)
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
            path.write_text(text, encoding="utf-8")
            count += 1
        files = count
    else:
        name = "documents." + layout
        target = root / name
        partial = root / (name + ".partial")
        with open(partial, "wb") as raw:
            sink: io.BufferedIOBase
            if layout == "jsonl.gz":
                sink = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
            else:
                sink = raw
            with io.TextIOWrapper(sink, encoding="utf-8", newline="\n") as text_out:
                dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
                for doc in corpus.documents():
                    text_out.write(dumps(doc))
                    text_out.write("\n")
                    count += 1
        os.replace(partial, target)
        files = 1
    truth_path = None
    if truth:
        truth_path = root / TRUTH_FILE
        write_truth(corpus.truth, truth_path)
    return Written(count, files, truth_path)


def write_truth(frame: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """The truth as CSV: a header of the truth columns, nulls as empty fields, changes
    as Python writes floats (``0.1234``, ``-0.05``)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(frame.columns)
        for row in frame.iter_rows():
            writer.writerow(["" if value is None else value for value in row])


def read_truth(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A truth CSV back as the DataFrame :attr:`Corpus.truth` had."""
    import polars as pl

    from kiana.generate.model import TRUTH_COLUMNS

    schema = {c: pl.Float64 if c == "change" else pl.String for c in TRUTH_COLUMNS}
    return pl.read_csv(Path(path), schema=schema)
