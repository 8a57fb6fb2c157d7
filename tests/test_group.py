"""Partitions never mix kernels, passes, workloads or GPUs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiana.load
from kiana.errors import NotComparableError
from kiana.group import compare, ensure_comparable, ensure_one_partition, partition_id, partitions
from kiana.vocabulary import GPU_LABEL_SQL, PARTITION_RECIPE, gpu_label, partition_id_sql
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


#: Strings that could make SQL and Python disagree: the separator itself, NUL, quotes,
#: backslashes, non-ASCII letters whose case folds to more characters, emoji, blanks.
HOSTILE = (
    "",
    "a\x1fb",
    "x\x00y",
    "'; DROP TABLE runs; --",
    '"pass"',
    "\\u00e9 \\",
    "é",
    "İSTANBUL",
    "🚀 rocket",
    "line\nbreak\ttab",
    " lead",
    "trail ",
    "\u200b",
)

_KEY_SQL = (
    "SELECT {expr} FROM (SELECT ?::VARCHAR AS family, ?::VARCHAR AS kernel, "
    '?::VARCHAR AS "pass", ?::VARCHAR AS workload, ?::VARCHAR AS gpu)'
)


def _sql_partition_id(con: duckdb.DuckDBPyConnection, key: tuple[str, ...]) -> str:
    (value,) = con.execute(_KEY_SQL.format(expr=partition_id_sql()), list(key)).fetchall()[0]
    return str(value)


@pytest.mark.parametrize("text", HOSTILE)
def test_partition_id_sql_equals_python_on_hostile_strings(text: str) -> None:
    """An existing database keeps working only if the loader's SQL and
    :func:`kiana.vocabulary.partition_id` give byte-identical ids."""
    con = duckdb.connect()
    for key in ((text, "k", "p", "w", "g"), ("f", text, text, "w" + text, text + "g")):
        assert _sql_partition_id(con, key) == partition_id(*key)


_SQL = duckdb.connect()


@settings(deadline=None, max_examples=60)
@given(key=st.tuples(*[st.text(st.characters(exclude_categories=["Cs"]), max_size=6)] * 5))
def test_partition_id_sql_equals_python(key: tuple[str, str, str, str, str]) -> None:
    assert _sql_partition_id(_SQL, key) == partition_id(*key)


def test_partition_id_is_the_v1_recipe() -> None:
    """The recipe of every stored id: changing it orphans existing databases."""
    assert PARTITION_RECIPE == "v1"
    assert partition_id("f", "k", "p", "w", "g") == "db3591c15a58087a"


@pytest.mark.parametrize(
    ("vendor", "product", "form_factor"),
    [
        ("NVIDIA", "NVIDIA H100", "80GB HBM3"),
        ("NVIDIA", "H100", "PCIe"),
        ("nvidia", "NVIDIA H100", None),
        ("AMD", "MI300X", ""),
        ("İ", "i̇x", "'; --"),
        ("ß", "SS", "🚀"),
    ],
)
def test_gpu_label_sql_equals_python(vendor: str, product: str, form_factor: str | None) -> None:
    (label,) = (
        duckdb.connect()
        .execute(
            f"SELECT {GPU_LABEL_SQL} FROM (SELECT ?::VARCHAR AS vendor, ?::VARCHAR AS product, "
            "?::VARCHAR AS form_factor)",
            [vendor, product, form_factor],
        )
        .fetchall()[0]
    )
    assert label == gpu_label(vendor, product, form_factor)
