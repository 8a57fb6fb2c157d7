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
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiana.load
from kiana.load.columns import FLAT_SQL
from kiana.load.fast import FAST_SQL
from tests import reliability as rel

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
COUNTER = itertools.count()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(texts: list[str]) -> tuple[int, int]:
    """Check both paths on ``texts`` (one document each); returns (clean, accepted)."""
    con = kiana.load.connect(None)
    texts_table = pa.table({"rec": pa.array(range(len(texts)), pa.int64()), "text": texts})
    pending = (
        con.from_arrow(texts_table)
        .query(
            "texts",
            "SELECT rec, 0 AS item, 'doc' AS source, NULL::BIGINT AS line, "
            "NULL::BIGINT AS item_index, j AS doc "
            "FROM (SELECT rec, try(json(text)) AS j FROM texts) "
            "WHERE j IS NOT NULL AND left(j, 1) <> '['",
        )
        .to_arrow_table()
    )
    documents = con.from_arrow(pending)
    fast = {
        r["rec"]: r for r in documents.query("documents", FAST_SQL).to_arrow_table().to_pylist()
    }
    full = {
        r["rec"]: r for r in documents.query("documents", FLAT_SQL).to_arrow_table().to_pylist()
    }
    rows = documents.query(
        "documents",
        "SELECT rec, json_type(doc, '$.run.spec.measurements') = 'ARRAY', doc::VARCHAR FROM documents",
    ).fetchall()
    measured = {rec: is_array for rec, is_array, _ in rows}
    docs = {rec: doc for rec, _, doc in rows}
    con.close()
    assert fast.keys() == full.keys()
    clean = accepted = 0
    for rec, row in full.items():
        quick = fast[rec]
        good = row["reject_reason"] is None
        accepted += good
        if quick["clean"]:
            clean += 1
            assert good, (row["reject_reason"], texts[rec][:300])
            for name, value in row.items():
                if name not in ("reject_path", "reject_reason"):
                    assert _same(quick[name], value), (name, quick[name], value)
        elif good and "\\" not in docs[rec] and measured[rec]:
            raise AssertionError(f"the fast path refused a good document: {texts[rec][:300]}")
    return clean, accepted


@SETTINGS
@given(st.data())
def test_fast_path_agrees_on_mutated_documents(data: st.DataObject) -> None:
    drawn = rel.Drawn(data)
    texts = [rel.mutate(next(COUNTER), drawn).text for _ in range(data.draw(st.integers(1, 8)))]
    texts.append(json.dumps(rel.make_document(next(COUNTER))))
    clean, accepted = compare(texts)
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
def test_fast_path_agrees_on_arbitrary_leaves(data: st.DataObject) -> None:
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
    compare(texts)


def test_fast_path_agrees_on_the_sweep_of_every_path() -> None:
    texts = [
        line
        for case in rel.sweep_cases(itertools.count())
        for line in case.data.decode("utf-8", "replace").splitlines()
        if line.strip()
    ]
    clean, accepted = compare(texts)
    assert clean > 0 and accepted > 0


def test_clean_documents_take_the_fast_path() -> None:
    texts = [json.dumps(rel.make_document(n)) for n in range(20)]
    assert compare(texts) == (20, 20)
