"""DuckDB's own JSONL reader (:mod:`kiana.load.native`) against the Python reader.

Every input is loaded twice, once with the DuckDB reader allowed and once with
Python reading every file, and every table must come out identical (rejects with
their source ``file:line``, JSON path, reason and excerpt; runs with their
``run_id``); the tests also check which files took which path.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiana.load
from kiana.errors import InputError
from kiana.load import native, pipeline, sources
from kiana.load.limits import DEFAULT_LIMITS, LoadLimits
from tests import reliability as rel

_TABLES = {
    "runs": "* EXCLUDE (load_id)",
    "measurements": "*",
    "labels": "*",
    "protocols": "*",
    "environments": "*",
    "rejects": "* EXCLUDE (load_id)",
    "warnings": "* EXCLUDE (load_id)",
}


def _tables(
    paths: list[Path],
    *,
    allow_native: bool,
    monkeypatch: pytest.MonkeyPatch,
    limits: LoadLimits = DEFAULT_LIMITS,
) -> Any:
    with monkeypatch.context() as patch:
        if not allow_native:
            patch.setattr(pipeline, "longest_line", lambda item, limits: None)
        con = kiana.load.connect(None)
        summary = kiana.load.load(con, paths, limits=limits)
        out = {
            name: sorted(
                con.execute(f"SELECT {columns} FROM {name}").fetchall(), key=lambda r: repr(r)
            )
            for name, columns in _TABLES.items()
        }
        con.close()
    counts = (summary.read, summary.loaded, summary.already_present, summary.rejected)
    return counts, out


def _same(
    paths: list[Path], monkeypatch: pytest.MonkeyPatch, limits: LoadLimits = DEFAULT_LIMITS
) -> Any:
    python = _tables(paths, allow_native=False, monkeypatch=monkeypatch, limits=limits)
    duck = _tables(paths, allow_native=True, monkeypatch=monkeypatch, limits=limits)
    assert duck == python
    return duck


def _docs(start: int, count: int) -> list[str]:
    return [json.dumps(rel.make_document(n)) for n in range(start, start + count)]


def _eligible(path: Path, limits: LoadLimits = DEFAULT_LIMITS) -> bool:
    item = sources.classify(path)
    assert item is not None
    return native.eligible(item, limits)


@pytest.mark.heavy
def test_clean_file_takes_the_duckdb_reader_and_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _docs(0, 30)
    lines[3] = lines[3].replace('"layer_norm"', '"layer\\u005fnorm"', 1)  # a unicode escape
    lines[5] = lines[5].replace("100160", "1" + "0" * 400, 1)  # a huge number
    lines[7] = lines[5]  # a duplicate
    lines[9] = "   \t"  # a line of blanks (skipped by both)
    lines[11] = '{"truncated": '
    lines[12] = "[" + ",".join(_docs(100, 3)) + "]"  # an array of documents
    lines[13] = "[]"
    lines[14] = json.dumps({"apiVersion": "nope"})
    lines[15] = lines[15].replace('"passed"', '"failed"')
    lines[16] = json.dumps(json.loads(lines[16]), indent=None, ensure_ascii=False) + "  "
    lines[17] = '{"é": "ünïcødé ✓", "x": "' + "z" * 300 + '"}'
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines))  # no newline at the end
    assert _eligible(path)
    counts, tables = _same([path], monkeypatch)
    assert counts[1] > 20 and counts[3] >= 3
    reject_sources = {r[0] for r in tables["rejects"]}
    assert f"{path}:12" in reject_sources and f"{path}:14" in reject_sources


@pytest.mark.parametrize(
    ("name", "text", "takes_duckdb"),
    [
        ("crlf", "\r\n", False),
        ("blank", "\n\n", False),
        ("spaces", "\n  \n", True),
        ("bom", "\n\ufeff", False),
        ("nul", "\n\x00", False),
        ("ctrl", "\n\x01\x02", False),
    ],
)
def test_files_the_duckdb_reader_must_not_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, takes_duckdb: bool
) -> None:
    lines = _docs(0, 6)
    body = "\n".join(lines[:3]) + text + "\n".join(lines[3:]) + "\n"
    path = tmp_path / f"{name}.jsonl"
    path.write_text(body, encoding="utf-8")
    if name == "bom":  # a BOM at the start of the file too
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert _eligible(path) is takes_duckdb
    _same([path], monkeypatch)


@pytest.mark.heavy
def test_mixed_good_and_bad_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "a-good.jsonl"
    good.write_text("\n".join(_docs(0, 20)) + "\n")
    bad_utf8 = tmp_path / "b-bad.jsonl"
    bad_utf8.write_bytes(("\n".join(_docs(20, 5)) + "\n").encode() + b'{"x": "\xff"}\n')
    empty = tmp_path / "c-empty.jsonl"
    empty.write_text("  \n")
    overlap = tmp_path / "d-overlap.ndjson"
    overlap.write_text("\n".join(_docs(10, 20)) + "\n")  # half already in a-good
    zipped = tmp_path / "e.jsonl.gz"
    zipped.write_bytes(gzip.compress(("\n".join(_docs(40, 5)) + "\n").encode()))
    single = rel.write_corpus(tmp_path / "f.json", 0)
    single.write_text(_docs(50, 1)[0])
    assert [_eligible(p) for p in (good, bad_utf8, empty, overlap, zipped, single)] == [
        True,
        False,
        False,
        True,
        False,
        False,
    ]
    counts, _ = _same([tmp_path], monkeypatch)
    assert counts[2] == 15  # 10 from a-good, 5 from b-bad


@pytest.mark.heavy
def test_batches_split_within_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(_docs(0, 50)) + "\n" + "\n".join(_docs(0, 5)) + "\n")
    limits = LoadLimits(batch_records=7, chunk_rows=3)
    counts, tables = _same([path], monkeypatch, limits)
    assert counts == (55, 50, 5, 0)
    sources_seen = {value for row in tables["runs"] for value in row if isinstance(value, str)}
    assert {f"{path}:{n}" for n in range(1, 51)} <= sources_seen


def test_oversized_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limits = LoadLimits(max_line_bytes=4000, block_bytes=1024)
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join([*_docs(0, 2), '{"pad": "' + "x" * 5000 + '"}', *_docs(2, 2)]))
    assert not _eligible(path, limits)
    _same([path], monkeypatch, limits)
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(_docs(0, 3)))
    assert _eligible(short, limits)


def test_run_ids_hashed_from_arrow_are_duckdbs() -> None:
    import duckdb
    import pyarrow as pa

    from kiana.load.hashing import sha256_hex

    values = ['{"a":1}', "", None, "ünïcødé ✓ \U0001f600", "x" * 5000, '{"b":[1,2]}']
    column = pa.chunked_array([pa.array(values[:3]), pa.array(values[3:]).slice(1)])
    for array in (column, pa.array(values, pa.large_string()), pa.array([None, None], pa.string())):
        table = duckdb.connect().from_arrow(pa.table({"t": array}))
        expected = table.query("hashed", "SELECT sha256(t) FROM hashed").fetchall()
        assert sha256_hex(array).to_pylist() == [row[0] for row in expected]


def test_only_what_duckdb_cannot_take_is_read_by_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n, text in enumerate(_docs(0, 5)):
        (tmp_path / f"{n}.json").write_text(text)
    (tmp_path / "6.jsonl").write_text("\n".join(_docs(5, 3)))
    (tmp_path / "7.jsonl").write_text("\n".join(_docs(8, 3)) + "\r\n")
    by_python: list[str] = []
    original = sources.file_records

    def spy(item: sources.InputFile, limits: LoadLimits) -> Any:
        by_python.append(os.path.basename(item.path))
        return original(item, limits)

    monkeypatch.setattr(sources, "file_records", spy)
    summary = kiana.load.load(kiana.load.connect(None), [tmp_path])
    assert (summary.read, summary.loaded, summary.rejected) == (11, 11, 0)
    # .json files stay with Python, which reads small files faster than DuckDB's
    # read_blob (bench/README.md)
    assert sorted(by_python) == [*(f"{n}.json" for n in range(5)), "7.jsonl"]


def test_progress_counts_files_and_documents_read_by_duckdb(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("\n".join(_docs(0, 4)))
    (tmp_path / "b.jsonl").write_text("\n".join(_docs(4, 3)))
    calls: list[tuple[int, int, int]] = []
    con = kiana.load.connect(None)
    kiana.load.load(
        con, [tmp_path], progress=lambda files, total, docs: calls.append((files, total, docs))
    )
    assert calls == [(1, 2, 4), (2, 2, 7)]


def _longest_line_reference(data: bytes, limit: int) -> int | None:
    """The pre-check written the slow, obvious way: the whole file decoded, split; the
    longest line's bytes when the file is eligible."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if any(bad in text for bad in ("\r", "\x00", "\x01", "\x02")):
        return None
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # the newline ends the last line; it does not start an empty one
    eligible = (
        bool(text.strip())
        and all(line != "" and not line.startswith("\ufeff") for line in lines)
        and all(len(line.encode()) <= limit for line in lines)
    )
    return max(len(line.encode()) for line in lines) if eligible else None


_PIECES = st.sampled_from(
    ["\n", "\n\n", "{}", '{"a": 1}', "é", "✓", "\ufeff", "\r", "  ", "x" * 9, "\x01"]
)


@pytest.mark.heavy
@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=12),
    raw=st.sampled_from([b"", b"\xff", b"\xc3", b"\xe2\x9c"]),
    cut=st.integers(0, 12),
    block=st.integers(1, 9),
)
def test_eligible_agrees_with_the_slow_reference(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[str], raw: bytes, cut: int, block: int
) -> None:
    data = "".join(pieces).encode()
    data = data[:cut] + raw + data[cut:]  # invalid or cut UTF-8 anywhere
    path = tmp_path_factory.mktemp("eligible") / "f.jsonl"
    path.write_bytes(data)
    limit = 12
    limits = LoadLimits(block_bytes=block, max_line_bytes=limit)  # boundaries everywhere
    expected = _longest_line_reference(data, limit)
    assert _eligible(path, limits) is (expected is not None)
    item = sources.classify(path)
    assert item is not None and native.longest_line(item, limits) == expected


def test_a_file_that_changed_after_the_pre_check_stops_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "growing.jsonl"
    lines = _docs(0, 3)
    lines[1] = json.dumps({"note": "x" * (2 << 20)})  # a line of 2 MiB
    path.write_text("\n".join(lines) + "\n")
    # as if the long line was written after the pre-check measured the file
    monkeypatch.setattr(pipeline, "longest_line", lambda item, limits: 100)
    con = kiana.load.connect(None)
    with pytest.raises(InputError, match=r"growing\.jsonl: the file changed while kiana read it"):
        kiana.load.load(con, [path])
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
