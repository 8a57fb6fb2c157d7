"""Comparability: partitions, and the rule that only runs of one partition compare.

A **partition** is everything that may be compared: one benchmark family, kernel,
timed pass, workload and GPU (vendor + product + form factor, so ``NVIDIA H100
80GB HBM3`` and ``NVIDIA H100 PCIe`` are different partitions).  The protocol's own
notes say it: "Comparable only within one kernel, workload, timed pass, and GPU."
Inside a partition each provider (and metric) forms its own **series**.

The recipe (``PARTITION_FIELDS``, ``partition_id``) is :mod:`kiana.vocabulary`'s:
the first 16 hex digits of the sha256 of a recipe version and the key fields joined by
U+001F.  The loader computes the same in SQL (``partition_id_sql``), so ids are stable
across loads and machines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import duckdb
import polars as pl

from kiana.errors import NotComparableError
from kiana.vocabulary import PARTITION_FIELDS, partition_id

__all__ = [
    "PARTITION_FIELDS",
    "PartitionKey",
    "compare",
    "ensure_comparable",
    "ensure_one_partition",
    "partition_id",
    "partitions",
]


@dataclass(frozen=True)
class PartitionKey:
    family: str
    kernel: str
    pass_: str
    workload: str
    gpu: str

    @property
    def id(self) -> str:
        return partition_id(self.family, self.kernel, self.pass_, self.workload, self.gpu)

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> PartitionKey:
        """The key of one run (a mapping with the runs-table columns)."""
        return cls(
            str(run["family"]),
            str(run["kernel"]),
            str(run["pass"]),
            str(run["workload"]),
            str(run["gpu"]),
        )


def _differences(a: PartitionKey, b: PartitionKey) -> dict[str, tuple[object, object]]:
    out: dict[str, tuple[object, object]] = {}
    for f in fields(PartitionKey):
        left, right = getattr(a, f.name), getattr(b, f.name)
        if left != right:
            out[f.name.rstrip("_")] = (left, right)
    return out


def _refuse(differing: dict[str, tuple[object, object]]) -> NotComparableError:
    said = "; ".join(f"{name}: {a!r} vs {b!r}" for name, (a, b) in differing.items())
    return NotComparableError(
        f"these runs are in different partitions and are never compared ({said})",
        differing=differing,
        hint="compare runs of one kernel, workload, timed pass and GPU; "
        "`kiana partitions` lists them",
    )


def ensure_comparable(a: Mapping[str, Any], b: Mapping[str, Any]) -> PartitionKey:
    """Return the shared partition of two runs, or raise :class:`NotComparableError`
    naming every field that differs."""
    ka, kb = PartitionKey.of(a), PartitionKey.of(b)
    if ka != kb:
        raise _refuse(_differences(ka, kb))
    return ka


def ensure_one_partition(runs: pl.DataFrame) -> PartitionKey:
    """Every run of the frame must share one partition; the key, or an error that
    names the fields that differ between the first two partitions found."""
    keys = runs.select(PARTITION_FIELDS).unique(maintain_order=True)
    if keys.height == 0:
        raise NotComparableError(
            "no runs to compare", differing={}, hint="check the filter that selected the runs"
        )
    first = PartitionKey.of(keys.row(0, named=True))
    if keys.height > 1:
        raise _refuse(_differences(first, PartitionKey.of(keys.row(1, named=True))))
    return first


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Relative change of run ``b`` over run ``a`` (+0.10 = 10% slower), only within
    one partition and one metric."""
    ensure_comparable(a, b)
    if a.get("metric", "latency") != b.get("metric", "latency"):
        raise NotComparableError(
            "these runs measure different metrics and are never compared "
            f"(metric: {a.get('metric')!r} vs {b.get('metric')!r})",
            differing={"metric": (a.get("metric"), b.get("metric"))},
            hint="compare latency with latency, memory with memory",
        )
    return float(b["median"]) / float(a["median"]) - 1.0


def partitions(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per partition: its key, providers, versions, metrics and run counts."""
    frame: pl.DataFrame = con.sql(
        """
        SELECT partition_id, family, kernel, "pass", workload, gpu,
               list(DISTINCT provider ORDER BY provider) AS providers,
               list(DISTINCT version ORDER BY version) AS versions,
               list(DISTINCT metric ORDER BY metric) AS metrics,
               count(*) AS runs,
               count(*) FILTER (WHERE status = 'passed') AS passed_runs,
               min(observed_at) AS first_observed, max(observed_at) AS last_observed
        FROM runs
        GROUP BY ALL
        ORDER BY kernel, "pass", gpu, workload
        """
    ).pl()
    return frame
