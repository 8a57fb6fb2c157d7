"""Where documents come from: paths, folders and globs -> files -> raw records.

A *record* is one candidate document as text, with where it came from: a whole
``.json`` file (one document or an array of them) or one line of a ``.jsonl`` /
``.ndjson`` file, any of them optionally gzip-compressed.  Reading problems that
make a record unusable before any JSON parsing (an empty file, bytes that are not
UTF-8, a corrupt gzip stream, a document over the size limit) travel with the
record as ``problem`` and become rows of the ``rejects`` table: nothing is
dropped silently.

Records are produced in bounded batches, streaming line by line through JSONL
files, so memory stays flat however large the input is.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Literal, NamedTuple

from kiana.errors import InputError
from kiana.load.batches import RawBatch
from kiana.load.limits import DEFAULT_LIMITS, LoadLimits

__all__ = [
    "InputFile",
    "RawRecords",
    "Record",
    "batches",
    "classify",
    "document_batches",
    "expand",
    "file_records",
]

Kind = Literal["json", "jsonl"]

_SUFFIXES: dict[str, Kind] = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_GLOB_CHARS = set("*?[")


class InputFile(NamedTuple):
    """One input file.  A named tuple: a walk makes one per file, and the garbage
    collector stops tracking tuples of strings, where it would walk dataclass
    instances at every collection (100k files: 0.12 s)."""

    path: str  # as shown in runs.source: normalised like str(Path(...))
    kind: Kind
    gzipped: bool


class RawRecords:
    """The records of the batch being read, as columns of Python lists, until
    :meth:`batch` hands them on as a :class:`~kiana.load.batches.RawBatch`."""

    def __init__(self) -> None:
        self.source: list[str] = []
        self.line: list[int | None] = []
        self.text: list[str | bytes | None] = []
        self.problem: list[str | None] = []
        self.nbytes = 0

    def add(
        self, source: str, line: int | None, text: str | bytes | None, problem: str | None
    ) -> None:
        self.source.append(source)
        self.line.append(line)
        self.text.append(text)
        self.problem.append(problem)
        self.nbytes += len(text) if text else 0

    def __len__(self) -> int:
        return len(self.source)

    def batch(self) -> RawBatch:
        return RawBatch(self.source, self.line, self.text, self.problem)


#: ``_kind`` of each lower-case suffix kiana reads (``.json``, ``.json.gz``, ...).
_KINDS: dict[str, tuple[Kind, bool]] = {
    **{suffix: (kind, False) for suffix, kind in _SUFFIXES.items()},
    **{suffix + ".gz": (kind, True) for suffix, kind in _SUFFIXES.items()},
}


def _kind(name: str) -> tuple[Kind, bool] | None:
    """The kind of a file from its name (and whether it is gzipped), or None: as
    ``os.path.splitext`` of the name without ``.gz`` would say (a name that is only
    dots and a suffix, like ``.json``, has none), with string slices instead, as the
    walk of a large folder calls it once per file."""
    lower = name.lower()
    dot = lower.rfind(".")
    if dot <= 0:
        return None
    if lower.endswith(".gz"):
        dot = lower.rfind(".", 0, dot)
        if dot <= 0:
            return None
    found = _KINDS.get(lower[dot:])
    if found is None or not lower[:dot].strip("."):
        return None
    return found


def classify(path: str | os.PathLike[str]) -> InputFile | None:
    """The kind of a file from its name, or None if kiana does not read such files."""
    text = str(Path(path))
    found = _kind(os.path.basename(text))
    return InputFile(text, *found) if found else None


def _join(folder: str, name: str) -> str:
    """``str(Path(folder) / name)`` for a normalised folder and a plain name, without
    building a Path (one per file would dominate the walk of a large folder)."""
    if folder == ".":
        return name
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


def _walk(root: Path) -> list[tuple[InputFile, str]]:
    """The document files under a folder, recursively, in path order, each with its
    resolved path; as ``sorted(root.rglob("*"))`` (symlinked folders are not entered)
    but with one ``scandir`` per folder and plain strings instead of a ``stat``,
    a ``resolve`` and Path objects per file.  Each folder's entries are sorted by name
    and visited depth first, which is the order of the sorted paths: a path's parts
    compare as its folders' entries do."""
    found: list[tuple[InputFile, str]] = []

    def visit(folder: str, shown: str, real: str) -> None:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=_name)
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                visit(entry.path, _join(shown, name), _join(real, name))
            elif (kind := _kind(name)) and entry.is_file():
                key = os.path.realpath(entry.path) if entry.is_symlink() else _join(real, name)
                found.append((InputFile(_join(shown, name), *kind), key))

    visit(os.fspath(root), str(root), str(root.resolve()))
    return found


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[InputFile]:
    """Files, folders (recursively) and globs -> the input files, each once, in order."""
    found: list[InputFile] = []
    seen: set[str] = set()

    def take(item: InputFile, key: str) -> None:
        if key not in seen:
            seen.add(key)
            found.append(item)

    def take_file(path: Path) -> None:
        item = classify(path)
        if item is None:
            raise InputError(
                f"{path}: kiana reads .json, .jsonl and .ndjson files (optionally .gz)",
                hint="rename the file, or give its folder to load every document file in it",
            )
        take(item, str(path.resolve()))

    for raw in paths:
        text = os.fspath(raw)
        path = Path(text)
        if path.is_dir():
            for item, key in _walk(path):
                take(item, key)
        elif path.is_file():
            take_file(path)
        elif _GLOB_CHARS & set(text):
            matches = sorted(glob.glob(text, recursive=True))
            files = [Path(m) for m in matches if Path(m).is_file() and classify(Path(m))]
            if not files:
                raise InputError(
                    f"{text}: the pattern matches no .json, .jsonl or .ndjson file",
                    hint="check the pattern; quote it so that kiana, not the shell, expands **",
                )
            for file in files:
                take_file(file)
        else:
            raise InputError(f"{text}: no such file or folder", hint="check the path")
    return found


#: One raw record: source, line (JSONL) or None, text (or None), problem (or None).
Record = tuple[str, int | None, str | bytes | None, str | None]


def _open(item: InputFile) -> IO[bytes]:
    if item.gzipped:
        return gzip.open(item.path, "rb")  # type: ignore[return-value]
    return open(item.path, "rb")


def _decode(data: bytes) -> tuple[str | None, str | None]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
    return text, None


def _read_plain(path: str, limits: LoadLimits) -> bytes | int:
    """A plain file's bytes, or its size when that is over the limit for a .json file.
    ``os.open``/``os.read`` rather than ``open()``: a third less time per small file."""
    most = limits.max_json_file_bytes
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > most:
            return size
        # ask for the file's size first (read(n) allocates n bytes), then in blocks up to
        # the limit while there is more (a file that grew since fstat)
        parts = [os.read(fd, size + 1)]
        got = len(parts[0])
        while size < got <= most and parts[-1]:
            parts.append(os.read(fd, min(limits.block_bytes, most + 1 - got)))
            got += len(parts[-1])
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _json_records(item: InputFile, source: str, limits: LoadLimits) -> Iterator[Record]:
    most = limits.max_json_file_bytes
    if item.gzipped:
        with _open(item) as handle:
            data: bytes | int = handle.read(most + 1)
    else:
        data = _read_plain(item.path, limits)
    if isinstance(data, int):
        yield (
            source,
            None,
            None,
            (
                f"file is {data >> 20} MiB, over the {most >> 20} MiB limit "
                "for a .json file; write large corpora as JSONL"
            ),
        )
        return
    if len(data) > most:
        yield (
            source,
            None,
            None,
            (
                f"file is over the {most >> 20} MiB limit for a .json file; "
                "write large corpora as JSONL"
            ),
        )
        return
    if not data or data.isspace():
        yield source, None, None, "empty file: no document in it"
        return
    body = data[3:] if data.startswith(codecs.BOM_UTF8) else data
    try:
        body.decode("utf-8")  # checked here, handed on as bytes (see RawBatch)
    except UnicodeDecodeError:
        yield source, None, None, _decode(data)[1]
        return
    yield source, None, body, None


def _oversize(source: str, number: int, limit: int) -> Record:
    return source, number, None, f"line is over the {limit >> 20} MiB limit for one document"


def _lines(chunk: bytes, source: str, first: int, limit: int) -> Iterator[Record]:
    """The records of ``chunk`` (whole lines, without the last newline), numbered from
    ``first``, as UTF-8 bytes (see :class:`~kiana.load.batches.RawBatch`); a line over
    ``limit`` bytes is rejected.  The chunk is checked at once;
    only a chunk with bytes that are not UTF-8 is decoded line by line, to say which
    line and byte."""
    try:
        chunk.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    for number, raw in enumerate(chunk.split(b"\n"), first):
        if len(raw) > limit:
            yield _oversize(source, number, limit)
        elif not raw.strip(b" \t\r\x0b\x0c"):
            continue  # a blank line
        elif valid:
            yield source, number, raw[3:] if raw.startswith(codecs.BOM_UTF8) else raw, None
        else:
            text, problem = _decode(raw)
            yield source, number, text, problem


def _jsonl_records(item: InputFile, source: str, limits: LoadLimits) -> Iterator[Record]:
    """One record per non-blank line, read in blocks of whole lines (a line over the
    size limit is skipped without holding it in memory, and rejected)."""
    limit = limits.max_line_bytes
    any_line = False
    number = 0  # lines seen so far
    with _open(item) as handle:
        pending = b""  # the start of a line whose end is not read yet
        skipping = False  # inside an oversized line
        while True:
            block = handle.read(limits.block_bytes)
            if not block:
                break
            if skipping:
                cut = block.find(b"\n")
                if cut < 0:
                    continue
                block = block[cut + 1 :]
                skipping = False
            data = pending + block if pending else block
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                if len(pending) > limit:
                    number += 1
                    any_line = True
                    yield _oversize(source, number, limit)
                    pending = b""
                    skipping = True
                continue
            pending = data[cut + 1 :]
            chunk = data[:cut]
            for record in _lines(chunk, source, number + 1, limit):
                any_line = True
                yield record
            number += chunk.count(b"\n") + 1
        if pending:
            for record in _lines(pending, source, number + 1, limit):
                any_line = True
                yield record
    if not any_line:
        yield source, None, None, "empty file: no document in it"


def file_records(item: InputFile, limits: LoadLimits = DEFAULT_LIMITS) -> Iterator[Record]:
    """The records of one file, read by Python (any kind, gzip or not)."""
    source = str(item.path)
    try:
        if item.kind == "json":
            yield from _json_records(item, source, limits)
        else:
            yield from _jsonl_records(item, source, limits)
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        yield source, None, None, f"corrupt gzip stream ({exc or 'truncated'})"
    except OSError as exc:
        raise InputError(
            f"{source}: cannot read ({exc.strerror or exc})", hint="check the file's permissions"
        ) from exc


def batches(files: Iterable[InputFile], limits: LoadLimits = DEFAULT_LIMITS) -> Iterator[RawBatch]:
    """Every record of every file, read by Python, in bounded batches (records of
    consecutive files share a batch)."""
    records = RawRecords()
    limit = limits.first_batch
    for item in files:
        for source, line, text, problem in file_records(item, limits):
            records.add(source, line, text, problem)
            if len(records) >= limit or records.nbytes >= limits.batch_bytes:
                yield records.batch()
                records = RawRecords()
                limit = limits.batch_records
    if len(records):
        yield records.batch()


def document_batches(
    documents: Iterable[Any], source: str, limits: LoadLimits = DEFAULT_LIMITS
) -> Iterator[RawBatch]:
    """Documents already in memory (dicts), as records named ``source:N`` (N counting
    from 1), in batches of ``limits.batch_records``; one that is not serialisable as JSON
    is a record with that problem."""
    records = RawRecords()
    for number, document in enumerate(documents, start=1):
        try:
            text: str | None = json.dumps(document, ensure_ascii=False, allow_nan=True)
            problem = None
        except (TypeError, ValueError) as exc:
            text, problem = None, f"not serialisable as JSON: {exc}"
        records.add(source, number, text, problem)
        if len(records) >= limits.batch_records:
            yield records.batch()
            records = RawRecords()
    if len(records):
        yield records.batch()
