"""``run_id``: the sha256 of a document's minified JSON, hashed straight from Arrow.

The digests are exactly those of DuckDB's ``sha256()`` (``tests/load/test_native.py``
compares them), computed by Python's ``hashlib`` (OpenSSL), which is several times
faster and lets go of the GIL, so the loader hashes a batch on a second thread while
DuckDB checks it (``bench/README.md`` has the figures).  :func:`sha256_hex` hashes
slices of the Arrow string column's data buffer, located by its offsets buffer, so no
Python string is made for a document.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa


def _chunk_digests(chunk: pa.Array) -> list[str | None]:
    if not (pa.types.is_large_string(chunk.type) or pa.types.is_string(chunk.type)):
        raise TypeError(f"cannot hash a column of {chunk.type}")  # pragma: no cover
    validity, offsets_buffer, data_buffer = chunk.buffers()
    if data_buffer is None or offsets_buffer is None:  # all empty or all null
        return [None if v.as_py() is None else hashlib.sha256(b"").hexdigest() for v in chunk]
    raw = memoryview(offsets_buffer)
    all_offsets = raw.cast("q") if pa.types.is_large_string(chunk.type) else raw.cast("i")
    offsets = all_offsets[chunk.offset : chunk.offset + len(chunk) + 1]
    data = memoryview(data_buffer)
    sha = hashlib.sha256
    if validity is None or chunk.null_count == 0:
        return [sha(data[offsets[i] : offsets[i + 1]]).hexdigest() for i in range(len(chunk))]
    valid = chunk.is_valid().to_pylist()
    return [
        sha(data[offsets[i] : offsets[i + 1]]).hexdigest() if valid[i] else None
        for i in range(len(chunk))
    ]


def sha256_hex(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The lowercase hex sha256 of every UTF-8 string of ``column`` (NULL stays NULL)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    digests: list[str | None] = []
    for chunk in chunks:
        digests.extend(_chunk_digests(chunk))
    return pa.array(digests, pa.string())
