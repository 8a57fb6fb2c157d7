"""Partitions never mix kernels, passes, workloads or GPUs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kiana.load
from kiana.errors import NotComparableError
from kiana.group import compare, ensure_comparable, ensure_one_partition, partition_id, partitions
from tests.conftest import write_jsonl

Doc = dict[str, Any]


def _variant(
    seed: Callable[[], Doc],
    *,
    kernel: str = "layer_norm",
    pass_: str = "backward",
    workload: str = "hidden4096-rows4096-fp32",
    form_factor: str = "80GB HBM3",
    version: str = "0.6.0",
) -> Doc:
    doc = seed()
    spec = doc["run"]["spec"]
    spec["sourceNative"]["benchmark"] = f"{kernel}/{pass_}"
    spec["sourceNative"]["externalId"] = f"{kernel}/{pass_}/huggingface/gpu/{workload}/t"
    doc["run"]["metadata"]["labels"]["liger_version"] = version
    doc["environment"]["spec"]["hardware"]["formFactor"] = form_factor
    spec["environmentDigest"] = "sha256:" + form_factor.replace(" ", "")
    return doc


def test_each_key_field_splits_partitions(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, seed: Callable[[], Doc]
) -> None:
    docs = [
        _variant(seed),
        _variant(seed, version="0.7.0"),  # same partition, another version
        _variant(seed, kernel="rms_norm"),
        _variant(seed, pass_="forward"),
        _variant(seed, workload="hidden8192-rows4096-fp32"),
        _variant(seed, form_factor="PCIe"),
    ]
    write_jsonl(tmp_path / "p.jsonl", docs)
    assert kiana.load.load(con, [tmp_path / "p.jsonl"]).rejected == 0
    frame = partitions(con)
    assert frame.height == 5
    assert sorted(frame["runs"].to_list()) == [1, 1, 1, 1, 2]
    assert set(frame["gpu"]) == {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"}


def test_partition_id_in_sql_matches_python(
    con: duckdb.DuckDBPyConnection,
) -> None:
    from tests.conftest import SEEDS

    kiana.load.load(con, [SEEDS])
    for row in kiana.load.runs(con).iter_rows(named=True):
        assert row["partition_id"] == partition_id(
            row["family"], row["kernel"], row["pass"], row["workload"], row["gpu"]
        )


RUN = {
    "family": "f",
    "kernel": "k",
    "pass": "forward",
    "workload": "w",
    "gpu": "NVIDIA H100 80GB HBM3",
    "metric": "latency",
    "median": 100.0,
}


def test_compare_within_one_partition() -> None:
    assert compare(RUN, {**RUN, "median": 110.0}) == pytest.approx(0.10)


def test_compare_across_gpus_names_the_field() -> None:
    other = {**RUN, "gpu": "NVIDIA H100 PCIe"}
    with pytest.raises(
        NotComparableError, match="gpu: 'NVIDIA H100 80GB HBM3' vs 'NVIDIA H100 PCIe'"
    ):
        compare(RUN, other)


def test_compare_names_every_differing_field() -> None:
    with pytest.raises(NotComparableError) as info:
        ensure_comparable(RUN, {**RUN, "kernel": "x", "pass": "backward"})
    assert set(info.value.differing) == {"kernel", "pass"}
    assert "Hint" in str(info.value)


def test_compare_refuses_memory_against_latency() -> None:
    with pytest.raises(NotComparableError, match="metric"):
        compare(RUN, {**RUN, "metric": "memory"})


def test_one_partition_frame_check() -> None:
    frame = pl.DataFrame([RUN, {**RUN, "workload": "w2"}])
    with pytest.raises(NotComparableError, match="workload"):
        ensure_one_partition(frame)
    assert ensure_one_partition(frame.head(1)).kernel == "k"


names = st.text(min_size=1, max_size=8)


@given(
    a=st.tuples(names, names, names, names, names), b=st.tuples(names, names, names, names, names)
)
def test_partition_ids_differ_when_keys_differ(
    a: tuple[str, str, str, str, str], b: tuple[str, str, str, str, str]
) -> None:
    assert (partition_id(*a) == partition_id(*b)) == (a == b)
