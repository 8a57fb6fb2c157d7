"""The fast path of the checks (:mod:`kiana.load.fast`) against the full check.

On every document: when the fast path calls it clean, the full check accepts it and
gives the very same columns; and every document the full check accepts that has no
backslash and a measurements array is clean (so the fast path accepts exactly what the
full check accepts, on the documents it is meant for).  The documents are the
reliability suite's mutations (dropped, retyped, duplicated fields, odd keys, huge and
non-finite numbers, deep nesting) and valid documents with arbitrary strings and
numbers at their leaves.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiana.load
from kiana.load.arrow import registered
from kiana.load.batches import RawBatch
from kiana.load.columns import FLAT_SQL
from kiana.load.fast import screen
from kiana.load.parse import parse
from tests import reliability as rel

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
COUNTER = itertools.count()

#: Per candidate document: whether its measurements are an array, and its text.
_SHAPE = """
SELECT rec, item, json_type(doc, '$.run.spec.measurements') = 'ARRAY' AS measured,
       doc::VARCHAR AS text FROM documents
"""


@pytest.fixture(scope="module")
def cursor() -> Iterator[duckdb.DuckDBPyConnection]:
    """One cursor for every example (the checks read no table)."""
    con = kiana.load.connect(None)
    yield con.cursor()
    con.close()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(cursor: duckdb.DuckDBPyConnection, texts: list[str]) -> tuple[int, int]:
    """Check both paths on ``texts`` (one record each: stage 1, then the fast path and,
    on the same candidate documents, the full check); returns (clean, accepted)."""
    count = len(texts)
    raw = RawBatch(["doc"] * count, [None] * count, list(texts), [None] * count)
    parsed = parse(cursor, raw)
    documents = parsed.rows.filter(parsed.rows.column("problem").is_null())
    fast = {(r["rec"], r["item"]): r for r in screen(cursor, parsed).rows.to_pylist()}
    full = registered(cursor, FLAT_SQL, "documents", documents).to_pylist()
    shape = {
        (r["rec"], r["item"]): r
        for r in registered(cursor, _SHAPE, "documents", documents).to_pylist()
    }
    assert len(full) == documents.num_rows
    clean = accepted = 0
    for row in full:
        key = (row["rec"], row["item"])
        quick = fast[key]
        good = row["reject_reason"] is None
        accepted += good
        if quick["clean"]:
            clean += 1
            assert good, (row["reject_reason"], texts[row["rec"]][:300])
            # ``source`` as shown (``file[i]`` for an element) is the check's to make
            for name, value in row.items():
                if name not in ("reject_path", "reject_reason", "source"):
                    assert _same(quick[name], value), (name, quick[name], value)
        elif good and "\\" not in shape[key]["text"] and shape[key]["measured"]:
            raise AssertionError(
                f"the fast path refused a good document: {texts[row['rec']][:300]}"
            )
    return clean, accepted


@SETTINGS
@given(st.data())
def test_fast_path_agrees_on_mutated_documents(
    cursor: duckdb.DuckDBPyConnection, data: st.DataObject
) -> None:
    drawn = rel.Drawn(data)
    texts = [rel.mutate(next(COUNTER), drawn).text for _ in range(data.draw(st.integers(1, 8)))]
    texts.append(json.dumps(rel.make_document(next(COUNTER))))
    clean, accepted = compare(cursor, texts)
    assert clean >= 1 and accepted >= clean


_STRING_PATHS = [p for p in rel.SEED_PATHS if isinstance(rel.get(rel.seed_document(), p), str)]
_NUMBER_PATHS = [
    p for p in rel.SEED_PATHS if isinstance(rel.get(rel.seed_document(), p), int | float)
]
_LEAF = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "a/b", "x/y/z/w/v/u", "sha256:", "2024-01-01T00:00:00Z", "\\"]),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
)


@SETTINGS
@given(st.data())
def test_fast_path_agrees_on_arbitrary_leaves(
    cursor: duckdb.DuckDBPyConnection, data: st.DataObject
) -> None:
    texts = []
    for _ in range(data.draw(st.integers(1, 6))):
        doc = rel.make_document(next(COUNTER))
        for _ in range(data.draw(st.integers(0, 3))):
            paths = _STRING_PATHS if data.draw(st.booleans()) else _NUMBER_PATHS
            path = data.draw(st.sampled_from(paths))
            parent = rel.get(doc, path[:-1])
            value = data.draw(_LEAF)
            if isinstance(value, str) and isinstance(parent.get(path[-1]), str):
                value = data.draw(st.sampled_from([value, parent[path[-1]] + value]))
            parent[path[-1]] = value
        texts.append(json.dumps(doc, ensure_ascii=data.draw(st.booleans())))
    compare(cursor, texts)


def test_fast_path_agrees_on_the_sweep_of_every_path(cursor: duckdb.DuckDBPyConnection) -> None:
    texts = [
        line
        for case in rel.sweep_cases(itertools.count())
        for line in case.data.decode("utf-8", "replace").splitlines()
        if line.strip()
    ]
    clean, accepted = compare(cursor, texts)
    assert clean > 0 and accepted > 0


def test_clean_documents_take_the_fast_path(cursor: duckdb.DuckDBPyConnection) -> None:
    texts = [json.dumps(rel.make_document(n)) for n in range(20)]
    assert compare(cursor, texts) == (20, 20)


def test_elements_of_an_array_are_candidates_of_their_own(
    cursor: duckdb.DuckDBPyConnection,
) -> None:
    docs = [json.dumps(rel.make_document(n)) for n in range(3)]
    texts = [f"[{docs[0]}, {docs[1]}]", docs[2], "[]", "not json"]
    assert compare(cursor, texts) == (3, 3)
