"""The loader's batches, one type per stage, so a batch's progress is its type.

::

    RawBatch ──parse──▶ ParsedBatch ──screen──▶ ScreenedBatch ──check──▶ CheckedBatch ──store──▶ BatchCounts
    (Python's reader)                    ▲
    DuckDB's JSONL reader ───────────────┘  (its reading query parses and screens)

* :class:`RawBatch`: records as Python read them (:mod:`kiana.load.sources`);
* :class:`ParsedBatch`: stage 1 (:mod:`kiana.load.parse`): one row per candidate
  document, minified (``doc``), an array's elements each a row;
* :class:`ScreenedBatch`: the fast path (:mod:`kiana.load.screen`) has answered "is
  this document clean?" for every row, and given the checked columns of the clean ones;
* :class:`CheckedBatch`: the full check (:mod:`kiana.load.check`) has given the rest
  their reject reason (or their columns), ``run_id`` is being hashed;
* :class:`BatchCounts`: what storing it did (:mod:`kiana.load.store`).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa

from kiana.load.arrow import matching

__all__ = [
    "CANDIDATE_COLUMNS",
    "BatchCounts",
    "CheckedBatch",
    "ParsedBatch",
    "RawBatch",
    "ScreenedBatch",
]

#: The columns of a candidate document (:class:`ParsedBatch`, and carried through the
#: fast path into :class:`ScreenedBatch`): ``rec`` (the record's number in its batch),
#: ``item`` (0, or the element of an array), ``item_index`` (NULL, or the element's index
#: in its array), ``source`` (the file), ``line`` (JSONL), ``text`` (the record's text,
#: kept only where it will be rejected: no JSON, or an empty array), ``problem`` (why the
#: record is no document, or NULL) and ``doc`` (the minified document, or NULL).
CANDIDATE_COLUMNS = ("rec", "item", "item_index", "source", "line", "text", "problem", "doc")


@dataclass(frozen=True)
class RawBatch:
    """Columns of raw records, as Python read them (``text``: a str, or UTF-8 bytes
    already checked, which Arrow copies as they are, where a str that is not ASCII would
    first need its UTF-8 form made)."""

    source: list[str]
    line: list[int | None]
    text: list[str | bytes | None]
    problem: list[str | None]

    def __len__(self) -> int:
        return len(self.source)

    def table(self) -> pa.Table:
        """The records as an Arrow table, numbered by ``rec`` from 0."""
        return pa.table(
            {
                "rec": pa.array(range(len(self)), pa.int64()),
                "source": pa.array(self.source, pa.string()),
                "line": pa.array(self.line, pa.int64()),
                # as bytes, then checked as UTF-8 at once: 15x quicker than str from a list
                "text": pa.array(self.text, pa.binary()).cast(pa.string()),
                "problem": pa.array(self.problem, pa.string()),
            }
        )


@dataclass(frozen=True)
class ParsedBatch:
    """Stage 1's candidate documents (:data:`CANDIDATE_COLUMNS`) of one batch."""

    rows: pa.Table


@dataclass(frozen=True)
class ScreenedBatch:
    """Candidate documents (:data:`CANDIDATE_COLUMNS`) with the fast path's columns:
    ``clean`` (true: the other columns are the document's checked columns) and the
    checked columns (:func:`kiana.load.columns.normal`, ``gpu``, ``partition_id``,
    ``ms50``; meaningless where ``clean`` is not true).  Rows of DuckDB's reader may
    still be arrays (``doc`` starts with ``[``): their elements are checked in full."""

    rows: pa.Table


@dataclass(frozen=True)
class CheckedBatch:
    """One batch after the checks, ready to store."""

    #: every candidate document (arrays replaced by their elements), by key
    items: pa.Table
    #: the checked rows, one per document of ``items``, with ``key`` and the reject
    #: path and reason (NULL when the document is good)
    flat: pa.Table
    #: the records that are no document: where (``file:line``), why, their text's start
    unreadable: tuple[tuple[str, str, str | None], ...]
    #: the ``run_id`` of each row of ``items``, being hashed on a thread of its own
    run_ids: Future[pa.Array]

    def with_run_ids(self) -> tuple[pa.Table, pa.Table]:
        """``items`` and ``flat``, each with its ``run_id`` (waits for the hashing)."""
        items = self.items.append_column("run_id", self.run_ids.result())
        return items, self.flat.append_column("run_id", matching(items, "run_id", self.flat))

    def files(self) -> set[str]:
        """The files the batch's records came from."""
        return {str(s) for s in self.items.column("source").unique().to_pylist()}


@dataclass(frozen=True)
class BatchCounts:
    """What storing one batch (or a whole load) did:
    ``read = loaded + already_present + rejected``."""

    read: int = 0
    loaded: int = 0
    already_present: int = 0
    rejected: int = 0
    warned: int = 0

    def __add__(self, other: BatchCounts) -> BatchCounts:
        return BatchCounts(
            self.read + other.read,
            self.loaded + other.loaded,
            self.already_present + other.already_present,
            self.rejected + other.rejected,
            self.warned + other.warned,
        )
