"""Stage 1: each record parsed once and minified; records -> candidate documents.

``run_id`` is the sha256 of a document's *minified* JSON, so the same document under any
file name or layout is stored once: stage 1 writes every record out again, minified
(:data:`STAGE1_SQL`: ``try(json(text))``, NULL when the text is not JSON).  A record is
then one candidate document, or several (an array: each element a row, numbered by
``item``), or none (no JSON, an empty array, a reading problem: its ``problem`` becomes a
reject).

Python-read batches (:func:`parse`) go through stage 1 on the reading thread, arrays
expanded there, so the fast path sees documents.  DuckDB's JSONL reader runs stage 1 in
its reading query (:func:`kiana.load.fast.reading_sql`); a line holding an array is
expanded by the full check (:mod:`kiana.load.check`).
"""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from kiana.load.arrow import registered
from kiana.load.batches import CANDIDATE_COLUMNS, ParsedBatch, RawBatch

__all__ = ["STAGE1_SQL", "candidates", "expanded", "json_error", "parse"]

#: Stage 1 over the relation ``{records}`` (``text``, ``problem`` and any other columns
#: -> the same with ``doc``): each record parsed once, ``try(json(text))``: the minified
#: document, or NULL when the text is not JSON; the text is kept only for a record that
#: will be rejected.  One projection: a CTE that parsed every record up to five times ran
#: 4x slower (bench/README.md).
STAGE1_SQL = """
SELECT * REPLACE (CASE WHEN doc IS NULL OR doc = '[]' THEN text END AS text)
FROM (SELECT *, CASE WHEN problem IS NULL THEN try(json(text)) END AS doc FROM {records})
"""

#: The elements of the arrays among candidate rows (``arrays``: records whose minified
#: document starts with ``[`` and holds at least one element), one row each, in
#: :data:`~kiana.load.batches.CANDIDATE_COLUMNS` order.
_EXPAND_SQL = """
SELECT rec, unnest(range(n)) AS item, unnest(range(n)) AS item_index, source, line,
       NULL::VARCHAR AS text, problem, unnest(json_extract(doc, '$[*]')) AS doc
FROM (SELECT *, json_array_length(doc)::BIGINT AS n FROM arrays)
"""

_STAGE1 = STAGE1_SQL.format(records="records")


def parse(cursor: duckdb.DuckDBPyConnection, raw: RawBatch) -> ParsedBatch:
    """Stage 1 of a batch Python read, on ``cursor`` (the reading thread's, outside the
    load's transaction, so that the parsing overlaps the checks of the batch before)."""
    rows = registered(cursor, _STAGE1, "records", raw.table())
    return ParsedBatch(expanded(cursor, candidates(rows).select(CANDIDATE_COLUMNS)))


def candidates(rows: pa.Table) -> pa.Table:
    """Stage 1's rows (``source``, ``line``, ``text``, ``problem``, ``doc`` and any
    other columns) as candidate documents: ``item`` 0 and ``item_index`` NULL added, and
    the problem of each record that is no document (no JSON, an empty array), computed
    in Arrow (the documents are not copied)."""
    doc = rows.column("doc")
    none = pa.scalar(None, pa.string())
    problem = pc.if_else(
        pc.is_null(doc),
        "invalid JSON",
        pc.if_else(pc.equal(doc, "[]"), "empty array: no document in it", none),
    )
    index = rows.schema.get_field_index("problem")
    rows = rows.set_column(index, "problem", pc.coalesce(rows.column("problem"), problem))
    count = rows.num_rows
    rows = rows.append_column("item", pa.repeat(pa.scalar(0, pa.int64()), count))
    return rows.append_column("item_index", pa.nulls(count, pa.int64()))


def expanded(cursor: duckdb.DuckDBPyConnection, rows: pa.Table) -> pa.Table:
    """Candidate rows (:data:`~kiana.load.batches.CANDIDATE_COLUMNS`) with every array
    record (not empty) replaced by its elements.  An element that is itself an array
    stays one candidate: the checks reject it."""
    doc = rows.column("doc")
    arrays = pc.and_(
        pc.and_(pc.starts_with(doc, "["), pc.is_null(rows.column("problem"))),
        pc.is_null(rows.column("item_index")),
    )
    arrays = pc.fill_null(arrays, False)
    if not pc.any(arrays).as_py():
        return rows
    elements = registered(cursor, _EXPAND_SQL, "arrays", rows.filter(arrays))
    kept = rows.filter(pc.invert(arrays))
    return pa.concat_tables([kept, elements.cast(kept.schema)])


def json_error(text: str) -> str:
    """Why ``text`` (which stage 1 could not parse) is not JSON, as Python's parser says."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    return "invalid JSON (kiana's parser refused it; it may use NaN, or a duplicate key)"
