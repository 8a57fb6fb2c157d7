"""The rows the gate judges: the history up to the base, the head's new rows, and the
cut that makes a re-run compare with the rows it replaced.

* **History**: every distinct row of ``benchmark/data/*.csv`` up to the base (the walk
  of ``kiana import liger --git REPO --rev BASE``), each labelled with the first commit
  holding it.
* **Head rows**: the head's rows the history does not hold, each with the first commit
  of ``base..head`` holding it (none: the work tree's own).
* **Replaced first**: a re-run of a series (kernel, pass, provider, GPU, metric) in a
  file is compared with that file's rows of the series at the base, then with the
  history: rows of the series from *other* files measured after the replaced rows are
  left out of the judgement (on real history, a re-run appended to
  ``all_benchmark_data.csv`` was otherwise compared with a session of the cuTile CSV,
  on one workload of four).
* **Bounded**: more than ``max_rows`` distinct rows stop the gate (:class:`RowLimitError`).
  The head's CSVs are first counted as they stream, the work tree's
  (:func:`precount_worktree`) or a commit's (:func:`precount_commit`, ``--head``): the
  read of a file stops as the count passes the limit, so a 4.9M-row CSV costs the
  200,000 rows it took to prove it, not its 500 MB.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from kiana.culprits.headfiles import HeadFiles, commit_lines, stream_lines, worktree_files
from kiana.errors import KianaError
from kiana.importers.git import csv_versions, release_at
from kiana.importers.liger import NotLigerCsvError, read_rows, text_lines
from kiana.importers.rows import Row, Skipped

Key = tuple[tuple[str, str], ...]
#: A row's series as the CSV says it: kernel, pass, provider, GPU, metric.
SERIES_CELLS = (
    "kernel_name",
    "kernel_operation_mode",
    "kernel_provider",
    "gpu_name",
    "metric_name",
)


class RowLimitError(KianaError):
    """More distinct rows than ``--max-rows``: the gate stops before judging."""


def raw_records(text: str) -> dict[int, str]:
    """Each record's text (every physical line it spans) by the line it starts on, as
    :func:`kiana.importers.liger.read_rows` numbers them: the csv module's own reader
    position over the same lines, never ``str.splitlines`` (which also splits on
    ``\f``, ``\x85`` and U+2028, and would point a line number at another record)."""
    consumed: list[str] = []

    def lines() -> Iterator[str]:
        for line in text_lines(text):
            consumed.append(line)
            yield line

    reader = csv.reader(lines())
    out: dict[int, str] = {}
    start = 1
    while True:
        try:
            next(reader)
        except StopIteration:
            return out
        except csv.Error:
            pass
        record = "".join(consumed[start - 1 : reader.line_num])
        out[start] = record.removesuffix("\n").removesuffix("\r")
        start = reader.line_num + 1


def series_of(row: Row) -> tuple[str, ...]:
    return tuple(row.cells.get(c, "") for c in SERIES_CELLS)


def read_text_rows(
    text: str | Iterator[str], source: str, path: str, commit: str | None, release: str | None
) -> list[Row | Skipped]:
    """The records of one CSV; ``text`` may be its lines, read lazily: the list is made
    as they are read (a :class:`RowLimitError` raised by the caller's count stops it
    only after this returns, so :func:`precount_worktree` counts as it iterates
    :func:`iter_text_rows`)."""
    return list(iter_text_rows(text, source, path, commit, release))


def iter_text_rows(
    text: str | Iterator[str], source: str, path: str, commit: str | None, release: str | None
) -> Iterator[Row | Skipped]:
    """:func:`read_text_rows`, one record at a time."""
    defaults = {"liger_version": release} if release else None
    try:
        yield from read_rows(text, source, csv_name=path, commit=commit, defaults=defaults)
    except NotLigerCsvError as exc:
        yield Skipped(source, 1, None, exc.message.removeprefix(f"{source}: "))


class Counter:
    """Distinct rows read so far, against the limit."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self.rows = 0

    def add(self, count: int = 1) -> None:
        self.rows += count
        if self.rows > self.max_rows:
            raise RowLimitError(
                f"more than {self.max_rows:,} distinct benchmark rows (--max-rows): not judged",
                hint="raise --max-rows if this history is real (Liger's full history holds "
                "about 4,500 rows)",
            )


def history(repo: Path, base: str, counter: Counter) -> tuple[list[Row | Skipped], set[Key], int]:
    """Rows up to ``base`` (deduplicated, oldest first), their keys, CSV versions read."""
    rows: list[Row | Skipped] = []
    seen: set[Key] = set()
    files = 0
    for version in csv_versions(repo, base):
        files += 1
        if version.refused is not None:
            continue
        source = f"{version.commit[:12]}:{version.path}"
        found = iter_text_rows(version.text, source, version.path, version.commit, version.release)
        for item in found:  # counted as read: the limit stops the parse, not after it
            if isinstance(item, Row):
                if item.key in seen:
                    continue
                seen.add(item.key)
                counter.add()
            rows.append(item)
    return rows, seen, files


def precount_worktree(repo: Path, head: str, known: set[Key], counter: Counter) -> None:
    """Raise :class:`RowLimitError` as soon as the work tree's CSVs, streamed line by
    line, hold more new distinct rows than :func:`head_rows` would let ``counter`` take,
    before any file is read whole (:func:`_precount`)."""
    listing = worktree_files(repo)
    if listing is None:
        return
    _precount(
        repo, head, {p: partial(stream_lines, f) for p, f in listing[0].items()}, known, counter
    )


def precount_commit(repo: Path, head: str, known: set[Key], counter: Counter) -> None:
    """:func:`precount_worktree` for the CSVs committed at ``head`` (``--head``): each
    blob streamed from git, its read stopped (git ended) as the count passes the limit."""
    with commit_lines(repo, head) as lines:
        _precount(repo, head, lines, known, counter)


def _precount(
    repo: Path,
    head: str,
    files: dict[str, Callable[[], Iterator[str]]],
    known: set[Key],
    counter: Counter,
) -> None:
    """Count the rows of ``files`` (path -> its lines, read lazily) as :func:`head_rows`
    counts them (rows ``known`` does not hold, once each; a file's header without
    ``liger_version`` takes the release at ``head``), on hashes of the keys: a
    collision can only count fewer, and :func:`head_rows` then counts exactly.  A file
    that stops decoding (invalid UTF-8) gives its rows back: the whole read refuses it."""
    scratch = Counter(counter.max_rows)
    scratch.rows = counter.rows
    seen: set[int] = set()
    for path, open_lines in files.items():
        mine: set[int] = set()
        try:
            lines = open_lines()
            first = next(lines, "")
            release = None if "liger_version" in first else release_at(repo, head)
            found = iter_text_rows(_chain(first, lines), path, path, None, release)
            for item in found:
                if isinstance(item, Row) and item.key not in known:
                    digest = hash(item.key)
                    if digest not in seen and digest not in mine:
                        mine.add(digest)
                        scratch.add()
        except UnicodeDecodeError:
            scratch.rows -= len(mine)
            continue
        seen |= mine


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


@dataclass(frozen=True)
class HeadRows:
    """The head's rows that the history does not hold, and the rows skipped reading it."""

    rows: list[Row]
    skipped: list[Skipped]
    keys_by_path: dict[str, set[Key]]


def head_rows(
    repo: Path,
    span: tuple[str, str],
    files: HeadFiles,
    known: set[Key],
    label: str,
    counter: Counter,
) -> HeadRows:
    """The rows of ``files`` (the head's CSVs) that ``known`` does not hold, each with the
    first commit of ``base..head`` (``span``) holding it."""
    base, head = span
    release = None
    if any("liger_version" not in t.split("\n", 1)[0] for t in files.texts.values()):
        release = release_at(repo, head)
    fresh: dict[Key, Row] = {}
    skipped: list[Skipped] = []
    by_path: dict[str, set[Key]] = defaultdict(set)
    for path, text in files.texts.items():
        for item in iter_text_rows(text, f"{label}:{path}", path, None, release):
            if isinstance(item, Skipped):
                skipped.append(item)
                continue
            by_path[path].add(item.key)
            if item.key not in known and item.key not in fresh:
                fresh[item.key] = item
                counter.add()
    recorded: dict[Key, Row] = {}
    if base != head:
        for version in csv_versions(repo, f"{base}..{head}"):
            if version.refused is not None:
                continue
            source = f"{version.commit[:12]}:{version.path}"
            for item in read_text_rows(
                version.text, source, version.path, version.commit, version.release
            ):
                if isinstance(item, Row) and item.key in fresh and item.key not in recorded:
                    recorded[item.key] = item
    rows = [recorded.get(key, row) for key, row in fresh.items()]
    return HeadRows(rows, skipped, dict(by_path))


@dataclass(frozen=True)
class Cut:
    """What :func:`replaced_first` left out: rows of other files, per series."""

    kept: list[Row | Skipped]
    dropped: int  #: history rows left out
    series: int  #: head series compared with the rows they replaced


def replaced_first(past: list[Row | Skipped], fresh: list[Row], base_files: HeadFiles) -> Cut:
    """``past`` without the rows of other files that would come between a re-run and the
    rows it replaces (module docstring).  ``base_files``: the head's files at the base."""
    base_stamp: dict[tuple[str, tuple[str, ...]], str] = {}
    for path, text in base_files.texts.items():
        for item in read_text_rows(text, f"base:{path}", path, None, None):
            if isinstance(item, Row):
                key = (path, series_of(item))
                stamp = item.cells.get("timestamp", "").strip()
                base_stamp[key] = max(base_stamp.get(key, ""), stamp)
    cuts: dict[tuple[str, ...], tuple[str, str]] = {}
    for row in fresh:
        key = (str(row.csv), series_of(row))
        if key in base_stamp:
            cuts[key[1]] = (key[0], base_stamp[key])
    kept: list[Row | Skipped] = []
    dropped = 0
    for item in past:
        if isinstance(item, Row) and (cut := cuts.get(series_of(item))) is not None:
            path, stamp = cut
            if item.csv != path and item.cells.get("timestamp", "").strip() > stamp:
                dropped += 1
                continue
        kept.append(item)
    return Cut(kept, dropped, len(cuts))
