"""The quick walk of :mod:`kiana.load.sources` against the slow, obvious way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kiana.load import sources


def _kind_reference(name: str) -> tuple[str, bool] | None:
    name = name.lower()
    gzipped = name.endswith(".gz")
    if gzipped:
        name = name[:-3]
    kind = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(os.path.splitext(name)[1])
    return (kind, gzipped) if kind else None


_NAME_PARTS = st.sampled_from(["a", ".", "json", "JSONL", "ndjson", "gz", "GZ", "x y", "é", ""])


@given(st.lists(_NAME_PARTS, min_size=1, max_size=6))
def test_kind_agrees_with_splitext(parts: list[str]) -> None:
    name = "".join(parts)
    assert sources._kind(name) == _kind_reference(name)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.json", ("json", False)),
        ("a.NDJSON.gz", ("jsonl", True)),
        (".json", None),  # a hidden file, no suffix (as splitext says)
        ("..json.gz", None),
        ("a.json.txt", None),
        (".a.jsonl", ("jsonl", False)),
    ],
)
def test_kind_of_names(name: str, kind: tuple[str, bool] | None) -> None:
    assert sources._kind(name) == kind


def test_walk_is_the_sorted_rglob(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    for relative in [
        "b.json",
        "a/z.jsonl",
        "a.json",  # sorts after the folder a/ and all in it
        "a/b/c.ndjson.gz",
        "a-b/x.json",  # after all of a/: paths compare part by part, and "a" < "a-b"
        "A/upper.json",
        "a/notes.txt",
        "a/.hidden.json",
        "a/.json",
    ]:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    (root / "link.json").symlink_to(root / "b.json")  # a link to a file: read, once
    (root / "linked").symlink_to(root / "a", target_is_directory=True)  # not entered
    expected = [
        str(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and sources.classify(p) is not None and "linked" not in p.parts
    ]
    found = [item.path for item in sources.expand([root])]
    assert found == [p for p in expected if not p.endswith("link.json")]
    assert found.index(str(root / "a-b/x.json")) == found.index(str(root / "a/z.jsonl")) + 1
