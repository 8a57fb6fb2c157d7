"""The loader reads each document by its harness profile (``kiana.harness``): the
``harness``, ``version`` and ``role`` columns, and the rejects of a document its profile
cannot read (the unknown-source rule: judged by the plain profile, which needs
``run.metadata.labels.version``, and the reason names the sources that have a profile)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pytest

import kiana.load

Doc = Callable[[], dict[str, Any]]


def _with(doc: dict[str, Any], source: object, labels: dict[str, object]) -> dict[str, Any]:
    native = doc["run"]["spec"]["sourceNative"]
    if source is None:
        native.pop("source")
    else:
        native["source"] = source
    doc["run"]["metadata"]["labels"] = labels
    return doc


def _run(con: duckdb.DuckDBPyConnection, doc: dict[str, Any]) -> tuple[object, ...] | None:
    kiana.load.load_documents(con, [doc], source="test")
    rows = con.execute("SELECT harness, version, role FROM runs").fetchall()
    return rows[0] if rows else None


def _reject(con: duckdb.DuckDBPyConnection, doc: dict[str, Any]) -> tuple[str, str]:
    summary = kiana.load.load_documents(con, [doc], source="test")
    assert (summary.loaded, summary.rejected) == (0, 1)
    path, reason = con.execute("SELECT json_path, reason FROM rejects").fetchall()[0]
    return str(path), str(reason)


def test_a_liger_document_is_read_by_liger_s_profile(
    con: duckdb.DuckDBPyConnection, seed: Doc
) -> None:
    assert _run(con, seed()) == ("liger-kernel-bench", "0.6.0", "baseline")


def test_a_document_without_a_source_is_liger_s(con: duckdb.DuckDBPyConnection, seed: Doc) -> None:
    doc = _with(seed(), None, {"liger_version": "0.4.1"})
    assert _run(con, doc) == ("liger-kernel-bench", "0.4.1", "baseline")


def test_another_source_is_read_by_the_plain_profile(
    con: duckdb.DuckDBPyConnection, seed: Doc
) -> None:
    doc = _with(seed(), "tritonbench", {"version": "2.1", "role": "subject"})
    assert _run(con, doc) == ("tritonbench", "2.1", "subject")


def test_a_plain_provider_without_a_role_label_is_a_baseline(
    con: duckdb.DuckDBPyConnection, seed: Doc
) -> None:
    assert _run(con, _with(seed(), "tritonbench", {"version": "2.1"}))[2] == "baseline"  # type: ignore[index]


def test_liger_s_role_follows_the_provider_not_a_label(
    con: duckdb.DuckDBPyConnection, seed: Doc
) -> None:
    doc = _with(seed(), "liger-kernel-bench", {"liger_version": "0.4.1", "role": "subject"})
    assert _run(con, doc) == ("liger-kernel-bench", "0.4.1", "baseline")  # huggingface


def test_an_unknown_source_without_a_version_label_is_rejected_naming_the_known_ones(
    con: duckdb.DuckDBPyConnection, seed: Doc
) -> None:
    # e.g. a Liger document whose source is misspelt: liger_version is not read
    doc = _with(seed(), "liger-kernel-benchmark", {"liger_version": "0.4.1"})
    path, reason = _reject(con, doc)
    assert path == "$.run.metadata.labels.version"
    assert "liger-kernel-benchmark" in reason and "plain profile" in reason
    assert "liger-kernel-bench (labels.liger_version)" in reason


def test_a_liger_document_needs_liger_version(con: duckdb.DuckDBPyConnection, seed: Doc) -> None:
    path, reason = _reject(con, _with(seed(), "liger-kernel-bench", {"version": "0.4.1"}))
    assert path == "$.run.metadata.labels.liger_version"
    assert "every run needs its Liger release" in reason


@pytest.mark.parametrize("said", ["subjet", 1, True])
def test_a_role_label_that_is_no_role_is_rejected(
    con: duckdb.DuckDBPyConnection, seed: Doc, said: object
) -> None:
    path, reason = _reject(con, _with(seed(), "tritonbench", {"version": "1", "role": said}))
    assert path == "$.run.metadata.labels.role"
    assert "must be subject or baseline" in reason


def test_a_source_that_is_no_string_is_rejected(con: duckdb.DuckDBPyConnection, seed: Doc) -> None:
    path, reason = _reject(con, _with(seed(), 7, {"liger_version": "0.4.1"}))
    assert path == "$.run.spec.sourceNative.source"
    assert "must be a string" in reason


def test_the_full_check_reads_the_profiles_as_the_fast_path(
    con: duckdb.DuckDBPyConnection, seed: Doc
) -> None:
    """A backslash sends a document to the full check: the same columns."""
    doc = _with(seed(), "triton\\bench", {"version": "2\\1", "role": "subject"})
    assert _run(con, doc) == ("triton\\bench", "2\\1", "subject")
