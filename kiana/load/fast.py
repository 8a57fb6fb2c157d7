"""The fast path of the checks: one parse per document for the documents that pass.

Every candidate document passes through it once, in one of two places: DuckDB's JSONL
reader runs it in its reading query, with stage 1 (:func:`reading_sql`), and
:func:`screen` runs it on the batches Python read.  What it does not pass as clean goes
to the full check (:mod:`kiana.load.check`), never through the fast path again.

The full check (:data:`kiana.load.columns.FLAT_SQL`) finds the *first* failing check
of a document and says why, which needs the JSON type of every container, a second
parse of the measurements and ``json_extract_string`` on every string leaf; planning
its two ``CASE`` expressions, one branch per check, is itself a cost per batch.
Rejects are rare, so most documents do not need any of that: the fast path
(:func:`fast_sql`) parses each document once, into the same structure but with the measurements inside it, and
asks one yes/no question, *is this document clean?*  Clean rows are final (no reject);
the others (rare) go through the full check, which gives their reason.

A document is clean when all of these hold, and then the full check accepts it with
the same columns (``tests/load/test_fast.py`` checks both on generated documents):

* it has no backslash, so every string leaf is its raw JSON text without the quotes
  (``[2:-2]``, no escapes to decode: the same text as ``json_extract_string``);
* ``run.spec.measurements`` is an array (``json_transform`` gives a list exactly then;
  a missing or null array is legal but takes the full check);
* no check of :data:`kiana.load.validate.CHECKS` fires, except the container-type
  checks, which the others imply: each container holds a required field that must be
  a string or object (``run.apiVersion``, ``run.spec.status``, ``run.metadata.labels``,
  ``protocol.apiVersion``, ``protocol.spec.comparability.family``,
  ``environment.apiVersion``, ``environment.spec.hardware.vendor``), and
  ``json_transform`` finds no field in anything but an object.
"""

from __future__ import annotations

import duckdb

from kiana.load.arrow import registered
from kiana.load.batches import CANDIDATE_COLUMNS, ParsedBatch, ScreenedBatch
from kiana.load.columns import SIDE_PARTS, derived, finished, normal, plain_text
from kiana.load.parse import STAGE1_SQL
from kiana.load.validate import CHECKS, structure

__all__ = ["FAST_CHECKS", "FAST_STRUCTURE", "fast_sql", "reading_sql", "screen"]

#: The document structure with the measurements parsed in the same pass.
FAST_STRUCTURE = structure(
    '[{"metric": "JSON", "statistic": "JSON", "value": "JSON", "unit": "JSON"}]'
)

#: The checks the fast path evaluates: all but the container types (``types[i]``).
FAST_CHECKS = tuple(check[0] for check in CHECKS if not check[0].startswith("types["))

_CLEAN = (
    "NOT contains(doc::VARCHAR, '\\') AND d.run.spec.measurements IS NOT NULL AND NOT ("
    + "\n        OR ".join(f"coalesce({condition}, false)" for condition in FAST_CHECKS)
    + ")"
)


def fast_sql(documents: str, keys_in: str, keys_out: str) -> str:
    """The fast path over the relation ``documents`` (a column ``doc``, the minified
    document, and the columns ``keys_in`` reads) -> the checked rows when clean, with
    ``clean`` false or NULL (and the other columns meaningless) when they need the full
    check.  ``keys_in`` are carried from ``documents`` to the result, which starts with
    ``keys_out``: the candidate documents' columns (:func:`screen`), or stage 1's in the
    reading query of DuckDB's JSONL reader (:func:`reading_sql`)."""
    return f"""
WITH t AS (
    SELECT {keys_in},
           doc, strlen(doc::VARCHAR) AS doc_bytes,
           CASE WHEN starts_with(doc::VARCHAR, '{{') THEN 'OBJECT' ELSE '?' END AS doc_type,
           json_transform(doc, '{FAST_STRUCTURE}') AS d
    FROM {documents}
), t2 AS (
    {SIDE_PARTS}
), {
        derived(
            plain_text,
            "d.run.spec.measurements",
            "t2",
            "CASE WHEN d.run.spec.measurements IS NOT NULL THEN 'ARRAY' END AS meas_type,",
        )
    }
{finished(f"SELECT {normal(plain_text, keys_out)}, {_CLEAN} AS clean FROM f")}
"""


_CARRIED = ", ".join(name for name in CANDIDATE_COLUMNS if name != "doc")

#: The fast path over candidate documents (the relation ``candidates``), which it carries.
_SCREEN_SQL = fast_sql("candidates", keys_in=_CARRIED, keys_out=f"doc, {_CARRIED}")


def screen(cursor: duckdb.DuckDBPyConnection, parsed: ParsedBatch) -> ScreenedBatch:
    """The fast path over a batch Python read (stage 1 done), on ``cursor``, a cursor of
    the checks, outside the load's transaction."""
    return ScreenedBatch(registered(cursor, _SCREEN_SQL, "candidates", parsed.rows))


def reading_sql(lines: str) -> str:
    """Stage 1 (:data:`kiana.load.parse.STAGE1_SQL`) and the fast path in one statement,
    which DuckDB's JSONL reader runs as it reads (over the relation ``lines``: ``text``,
    ``problem``): a batch whose documents are clean leaves the reading query checked,
    without crossing into Arrow and back in between, and without a second statement to
    bind.  Its rows are ``doc``, ``text``, ``problem`` and the fast path's columns."""
    stage1 = STAGE1_SQL.format(records=lines)
    return fast_sql(f"({stage1})", keys_in="text, problem", keys_out="doc, text, problem")
