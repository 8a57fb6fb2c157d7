"""DuckDB reads plain JSONL files itself: no Python line splitting, no Python lists.

The Python reader (:mod:`kiana.load.sources`) splits every line and builds the batch's
Arrow columns from Python lists.  For a plain (not gzip) ``.jsonl``/``.ndjson`` file DuckDB's
CSV reader can do the same work in C++: one ``VARCHAR`` column per line (a delimiter,
quote and escape that never occur), streamed as Arrow record batches.

It must give *exactly* the records the Python reader gives, so a file takes this path
only when a cheap byte-level pre-check (:func:`eligible`, ``memchr``-speed scans and one
UTF-8 validation, no per-line Python work) shows that none of the cases in which the two
readers could differ occurs:

* bytes that are not UTF-8 (Python names the line and byte), a byte-order mark at the
  start of a line (Python drops it), ``\\r`` (DuckDB would strip it from CRLF endings;
  Python keeps it in the text and its excerpts);
* an empty line (DuckDB skips it, so the line numbers would shift; a line of spaces is
  kept by both and dropped here as Python drops it);
* a line over the load's ``max_line_bytes`` (:class:`~kiana.load.limits.LoadLimits`;
  Python rejects it);
* NUL, the delimiter ``\\x01`` or the null string ``\\x02`` anywhere;
* no document at all (Python rejects the empty file).

The reading query also does stage 1 and the fast path of the checks
(:func:`kiana.load.fast.reading_sql`): each line is minified and checked as it is read,
and its text is kept only for a line that will be rejected, so a good document crosses
into Arrow once, checked: the reader yields :class:`~kiana.load.batches.ScreenedBatch`
es.  The reader is sized by the file's longest line, which the pre-check finds
(:func:`longest_line`).

Any other file (and every gzip or ``.json`` file) keeps the Python reader.  Line
numbers come from the order of the rows: the reading cursor preserves insertion order
(a session setting on the reading connection, so the load's other queries keep running
unordered), and every line of an eligible file is a row.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kiana.errors import InputError
from kiana.load.batches import ScreenedBatch
from kiana.load.fast import reading_sql
from kiana.load.limits import DEFAULT_LIMITS, LoadLimits
from kiana.load.parse import candidates
from kiana.load.sources import InputFile

__all__ = ["eligible", "file_batches", "longest_line"]

_DELIMITER = "\x01"
_NULL = "\x02"
#: Bytes that make a file take the Python reader wherever they occur.
_FORBIDDEN = (b"\r", b"\x00", _DELIMITER.encode(), _NULL.encode())
_BOM = b"\xef\xbb\xbf"
_NEWLINE = 10


def _utf8(data: bytes | memoryview) -> bool:
    """Whether ``data`` is valid UTF-8, checked by Arrow without copying it."""
    buffer = pa.py_buffer(data)
    offsets = pa.py_buffer(np.array([0, buffer.size], np.int64))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, buffer).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def eligible(item: InputFile, limits: LoadLimits = DEFAULT_LIMITS) -> bool:
    """Whether DuckDB's reader gives exactly the Python reader's records for the file."""
    return longest_line(item, limits) is not None


def longest_line(item: InputFile, limits: LoadLimits = DEFAULT_LIMITS) -> int | None:
    """The bytes of the file's longest line when DuckDB's reader gives exactly the
    Python reader's records for it (:func:`eligible`), else ``None``.  DuckDB's reader
    is sized by it: a buffer of a few lines' size hands the first rows on sooner (and
    with less work) than one sized for the largest document allowed (100k JSONL: the
    first rows after 0.07 s instead of 0.24 s).

    Per block of ``limits.block_bytes``: four ``memchr`` scans for the
    forbidden bytes, the newline positions with numpy (empty lines, line lengths, a BOM
    after a newline), and Arrow's UTF-8 validation of the whole lines (a character
    never spans a newline), only for a block that is not pure ASCII.  No block is
    decoded to ``str``.
    """
    if item.gzipped or item.kind != "jsonl":
        return None
    limit = limits.max_line_bytes
    longest = 0
    tail = b"\n"  # the last bytes read, as if the file followed a newline
    carry = b""  # the bytes after the last newline so far (the line in progress)
    content = False
    # One buffer and one array of newline flags, filled again for each block: fresh
    # memory per block cost a page fault per 4 KiB (100k JSONL: 0.155 -> 0.10 s).
    buffer = bytearray(limits.block_bytes)
    flags = np.empty(limits.block_bytes, dtype=bool)
    try:
        with open(item.path, "rb", buffering=0) as handle:
            while size := handle.readinto(buffer):
                block = buffer if size == len(buffer) else buffer[:size]
                if any(bad in block for bad in _FORBIDDEN):
                    return None
                plain = block.isascii()
                if not plain and b"\n" + _BOM in tail[-3:] + block[:3]:
                    return None  # a byte-order mark after a newline across the boundary
                view = np.frombuffer(block, np.uint8)
                newlines = np.flatnonzero(np.equal(view, _NEWLINE, out=flags[:size]))
                if not len(newlines):
                    carry += block
                    if len(carry) > limit:
                        return None
                    tail = (tail + block[-3:])[-3:]
                    content = content or bool(block.strip())
                    continue
                first, last = int(newlines[0]), int(newlines[-1])
                if first == 0 and tail.endswith(b"\n"):
                    return None  # an empty line across the boundary
                if len(carry) + first > limit:
                    return None  # lines inside one block are shorter than the block
                longest = max(longest, len(carry) + first)
                if len(newlines) > 1:
                    gaps = np.diff(newlines)
                    if bool((gaps == 1).any()):
                        return None  # an empty line inside the block
                    longest = max(longest, int(gaps.max()) - 1)
                if not plain:
                    starts = newlines[newlines + 3 < len(block)]
                    if bool(
                        (
                            (view[starts + 1] == _BOM[0])
                            & (view[starts + 2] == _BOM[1])
                            & (view[starts + 3] == _BOM[2])
                        ).any()
                    ):
                        return None  # a byte-order mark at the start of a line
                    whole = memoryview(block)[first + 1 : last + 1]
                    if not (_utf8(carry + block[:first]) and _utf8(whole)):
                        return None
                elif carry and not _utf8(carry):
                    return None
                content = content or bool(block.strip())
                carry = bytes(block[last + 1 :])
                tail = (tail + block[-3:])[-3:]
    except OSError:
        return None
    if not (content and len(carry) <= limit and _utf8(carry)):
        return None
    return max(longest, len(carry))


#: DuckDB's reader takes lines of up to the longest line of the file, or this at least.
_MIN_LINE_BYTES = 1 << 20
#: Its buffer holds two of the longest lines, or this at least: DuckDB hands a buffer's
#: rows on in order only once it has read them all (2-4 MiB were the quickest).
_MIN_BUFFER_BYTES = 4 << 20


def _reader(
    cursor: duckdb.DuckDBPyConnection, path: str, longest: int, chunk_rows: int
) -> pa.RecordBatchReader:
    cursor.execute("SET SESSION preserve_insertion_order = true")
    limit = max(longest + 1024, _MIN_LINE_BYTES)
    buffer = max(2 * limit, _MIN_BUFFER_BYTES)
    # Stage 1 and the fast path of the checks happen here, as the lines are read: each
    # line minified (``doc``), its text kept only for a reject (no JSON, or an empty
    # array), each document checked (``clean``) and flattened.
    lines = f"""(
        SELECT text, NULL::VARCHAR AS problem
        FROM read_csv($path, columns = {{'text': 'VARCHAR'}}, header = false,
            auto_detect = false, delim = '{_DELIMITER}', quote = '', escape = '',
            nullstr = '{_NULL}', new_line = '\\n', strict_mode = false,
            max_line_size = {limit}, buffer_size = {buffer})
    )"""
    query = reading_sql(lines)
    reader: pa.RecordBatchReader = cursor.sql(query, params={"path": path}).to_arrow_reader(
        chunk_rows
    )
    return reader


def _batch(source: str, pending: list[pa.Table]) -> ScreenedBatch:
    """The reading query's rows of one batch as candidate documents (numbered ``rec``)."""
    table = pa.concat_tables(pending)  # zero-copy: DuckDB scans the chunks as they are
    count = table.num_rows
    table = table.add_column(0, "source", pa.array([source] * count, pa.string()))
    table = table.add_column(0, "rec", pa.array(range(count), pa.int64()))
    return ScreenedBatch(candidates(table))


def _chunks(
    reader: duckdb.DuckDBPyConnection, path: str, longest: int, chunk_rows: int
) -> Iterator[pa.RecordBatch]:
    """The reading query's record batches.  The pre-check passed the file, so DuckDB
    refusing its input means the file changed in between (a line now longer than the
    reader was sized for, a byte the pre-check excludes): the load stops, rolled back.
    DuckDB raises the refusal itself when it comes with the first rows, and through the
    Arrow stream (an ``OSError`` with DuckDB's message) when it comes later."""
    try:
        yield from _reader(reader, path, longest, chunk_rows)
    except (duckdb.InvalidInputException, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        if not isinstance(exc, duckdb.InvalidInputException) and not first.startswith(
            "Invalid Input Error"
        ):
            raise
        raise InputError(
            f"{path}: the file changed while kiana read it ({first})",
            hint="load it again once it is complete; nothing of this load was written",
        ) from exc


def file_batches(
    reader: duckdb.DuckDBPyConnection,
    item: InputFile,
    longest: int,
    limits: LoadLimits = DEFAULT_LIMITS,
) -> Iterator[ScreenedBatch]:
    """The records of an :func:`eligible` file (``longest``: its :func:`longest_line`) in
    bounded batches, parsed and screened, read by DuckDB on ``reader``, a connection for
    reading only (its session keeps insertion order)."""
    source = str(item.path)
    line = 0  # lines read so far
    pending: list[pa.Table] = []
    rows = nbytes = 0
    limit = limits.first_batch
    for chunk in _chunks(reader, source, longest, limits.chunk_rows):
        count = chunk.num_rows
        text = chunk.column("text")
        numbers = pa.array(range(line + 1, line + 1 + count), pa.int64())
        line += count
        part = pa.Table.from_batches([chunk]).add_column(0, "line", numbers)
        if text.null_count < count:  # a line for a reject: maybe blanks only
            blank = pc.equal(pc.utf8_trim(text, " \t\x0b\x0c"), "")
            keep = pc.invert(pc.fill_null(blank, False))
            if not pc.all(keep).as_py():  # a line of blanks: skipped, as Python skips it
                part = part.filter(keep)
        while part.num_rows:
            piece = part.slice(0, limit - rows)
            part = part.slice(piece.num_rows)
            pending.append(piece)
            rows += piece.num_rows
            for column in ("doc", "text"):  # the text only of lines that are no JSON
                nbytes += int(pc.sum(pc.binary_length(piece.column(column))).as_py() or 0)
            if rows >= limit or nbytes >= limits.batch_bytes:
                yield _batch(source, pending)
                pending, rows, nbytes = [], 0, 0
                limit = limits.batch_records
    if rows:
        yield _batch(source, pending)
