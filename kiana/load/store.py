"""Writing one batch of checked documents into the tables, without duplicates.

A batch goes through two steps, which may run on two threads (see :mod:`kiana.load`):

* :func:`check_batch` (reads no table, so it runs on a cursor of its own): stage 1
  (each record minified, ``run_id`` is the sha256 of that text, so the same document
  under any file name or layout is stored once), then the checks (the fast path of
  :mod:`kiana.load.fast`, then the full check for the few it does not pass as clean).
  Where DuckDB reads the file, stage 1 and the fast path have run in its reading query
  (:func:`read_sql`), and the batch arrives checked but for those few;
* :func:`store_batch` (inside the load's single transaction): reject what failed a
  check or the digest consistency, drop what is already stored, insert the rest.

Each stage's result is an Arrow table.  A query reads one such table (or a relation
over it) under the name the query uses: on the load's connection through a DuckDB
relation (:func:`_select`, :func:`_write`), on the checks' own cursors as a view
registered for one statement, which binds quicker (:func:`_checked_rows`).  Rows of two
tables are matched in Arrow by their ``(rec, item)`` key (:func:`_keys`).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeAlias

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from kiana.load.columns import CONTENT_HASH, FLAT_SQL
from kiana.load.fast import FAST_SQL, fast_sql
from kiana.load.hashing import sha256_hex
from kiana.load.sources import Batch

__all__ = [
    "STAGE_SECONDS",
    "BatchCounts",
    "Checked",
    "check_batch",
    "laps",
    "store_batch",
]

#: Seconds per stage of a load, summed over its batches, while a caller has set this to
#: a dict (``bench/load_stages.py`` does, to profile the loader); ``None`` (the
#: default) records nothing.
STAGE_SECONDS: dict[str, float] | None = None


def laps() -> Callable[[str | None], None]:
    """A stopwatch: each call adds the time since the previous one to ``STAGE_SECONDS``
    under the given stage name (when profiling is on); ``None`` only restarts it."""
    last = time.perf_counter()

    def lap(stage: str | None) -> None:
        nonlocal last
        now = time.perf_counter()
        if STAGE_SECONDS is not None and stage is not None:
            STAGE_SECONDS[stage] = STAGE_SECONDS.get(stage, 0.0) + now - last
        last = now

    return lap


@dataclass
class BatchCounts:
    read: int = 0
    loaded: int = 0
    already_present: int = 0
    rejected: int = 0
    warned: int = 0


def _json_error(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    return "invalid JSON (kiana's parser refused it; it may use NaN, or a duplicate key)"


# --------------------------------------------------------------------------- the queries
# Each reads the relations named in its docstring-comment; table names (runs,
# protocols, ...) are the database's own.

#: Stage 1 over the relation ``{records}`` (``text``, ``problem`` and any other columns
#: -> the same with ``doc``): each record parsed once, ``try(json(text))``: the minified
#: document (``run_id`` is its sha256), or NULL when the text is not JSON; the text is
#: kept only for a record that will be rejected.  DuckDB's JSONL reader runs it as it
#: reads (:mod:`kiana.load.native`); :func:`stage1` runs it on the records Python read.
STAGE1_SQL = """
SELECT * REPLACE (CASE WHEN doc IS NULL OR doc = '[]' THEN text END AS text)
FROM (SELECT *, CASE WHEN problem IS NULL THEN try(json(text)) END AS doc FROM {records})
"""


def read_sql(records: str, carried: str) -> str:
    """Stage 1 (:data:`STAGE1_SQL`) and the fast path of the checks
    (:func:`kiana.load.fast.fast_sql`) in one statement, which the readers run as they
    read (over the relation ``records``; ``carried``: its columns, which the result keeps
    beside ``doc``): a batch whose documents are clean leaves the reading query checked,
    without crossing into Arrow and back in between, and without a second statement
    to bind.  The rows that are not ``clean`` (invalid JSON, arrays, documents with a
    backslash or a failing check) are checked again from stage 1's columns
    (:func:`check_batch`)."""
    stage1 = STAGE1_SQL.format(records=records)
    return fast_sql(f"({stage1})", keys_in=carried, keys_out=f"doc, {carried}")


#: The columns :func:`read_sql` carries from stage 1 to its result.
STAGE1_COLUMNS = ("source", "line", "text", "problem", "doc")


#: The documents of the arrays among stage 1's rows (``arrays``: rows whose minified
#: document starts with ``[`` and holds at least one element), one row each.
_EXPAND_SQL = """
SELECT rec, unnest(range(n)) AS item, source, line, unnest(range(n)) AS item_index,
       unnest(json_extract(doc, '$[*]')) AS doc, problem, excerpt
FROM (SELECT *, json_array_length(doc)::BIGINT AS n FROM arrays)
"""


#: The fast path over the candidate documents of ``items`` (stage 1's rows without a
#: problem), with the reject columns of the full check (both NULL): a batch whose
#: documents are all clean is final once ``clean`` is dropped.
_FAST_ROWS_SQL = f"""
WITH documents AS (SELECT * FROM items WHERE problem IS NULL)
SELECT *, NULL::VARCHAR AS reject_path, NULL::VARCHAR AS reject_reason FROM ({FAST_SQL})
"""

#: Digest consistency (``flat``, the checked rows): the first content seen behind a
#: digest wins; a document whose protocol/environment content differs from it is
#: rejected.  Contents are compared by a 64-bit hash of their JSON text
#: (``columns.CONTENT_HASH``), stored content included: two different contents behind
#: one digest would have to collide as well to slip through.
_CONFLICTS_SQL = f"""
WITH v AS (
    SELECT rec, item, key, protocol_digest AS pd, protocol_hash AS ph,
           environment_digest AS ed, environment_hash AS eh
    FROM flat WHERE reject_reason IS NULL
), firstp AS (
    SELECT pd, arg_min(ph, (rec, item)) AS ph FROM v GROUP BY pd
), firste AS (
    SELECT ed, arg_min(eh, (rec, item)) AS eh FROM v GROUP BY ed
), p AS (
    SELECT digest, {CONTENT_HASH.format("content")} AS h, first_source FROM protocols
), e AS (
    SELECT digest, {CONTENT_HASH.format("content")} AS h, first_source FROM environments
), c AS (
    SELECT v.rec, v.item, v.key,
        CASE WHEN p.digest IS NOT NULL AND p.h <> v.ph THEN '$.run.spec.protocolDigest'
             WHEN p.digest IS NULL AND fp.ph <> v.ph THEN '$.run.spec.protocolDigest'
             WHEN e.digest IS NOT NULL AND e.h <> v.eh THEN '$.run.spec.environmentDigest'
             WHEN e.digest IS NULL AND fe.eh <> v.eh THEN '$.run.spec.environmentDigest'
        END AS path,
        CASE WHEN path = '$.run.spec.protocolDigest'
                THEN 'conflicting content: ' || v.pd || ' already names a different protocol (first seen in '
                     || coalesce(p.first_source, 'this load') || ')'
             WHEN path IS NOT NULL
                THEN 'conflicting content: ' || v.ed || ' already names a different environment (first seen in '
                     || coalesce(e.first_source, 'this load') || ')'
        END AS reason
    FROM v
    LEFT JOIN p ON p.digest = v.pd
    LEFT JOIN e ON e.digest = v.ed
    JOIN firstp fp ON fp.pd = v.pd
    JOIN firste fe ON fe.ed = v.ed
)
SELECT * FROM c WHERE path IS NOT NULL
"""

#: The first document of each run not stored before this load (``flat``: the checked
#: rows with ``run_id``, ``key`` and ``conflicting``), by its key.  The runs this load
#: stored are not scanned (their row groups are skipped by ``load_id``): the load keeps
#: their ids itself (:class:`Seen`), which spares a scan growing with every batch.
_FRESH_SQL = """
SELECT run_id, key FROM (
    SELECT run_id, min(key) AS key FROM flat
    WHERE reject_reason IS NULL AND NOT conflicting GROUP BY run_id
) ANTI JOIN (SELECT run_id FROM runs WHERE load_id <> {load_id}) USING (run_id)
"""

#: The rejected documents (``rejected``: source, path, reason, doc) -> ``rejects``.
_INSERT_REJECTS_SQL = """
INSERT INTO rejects SELECT {load_id}, source, path, reason, (doc::VARCHAR)[:200] FROM rejected
"""

#: The new runs (``good``) -> ``runs``.
_INSERT_RUNS_SQL = """
INSERT INTO runs BY NAME
SELECT run_id, partition_id, family, kernel, "pass", provider, workload, gpu, vendor, product,
    form_factor, architecture, liger_version, observed_at, status, metric, unit,
    median_val AS median, p20, p80,
    CASE WHEN metric = 'latency' THEN median_val::BIGINT END AS median_ns,
    CASE WHEN metric = 'latency' THEN round(p20)::BIGINT END AS p20_ns,
    CASE WHEN metric = 'latency' THEN round(p80)::BIGINT END AS p80_ns,
    protocol_digest, workload_digest, environment_digest, implementation_digest,
    benchmark, external_id, name, title,
    source, {load_id} AS load_id
FROM good
"""

#: The details of the new runs (``good``) -> ``run_details``, one row per run; the
#: ``measurements`` and ``labels`` views give them in long form (:mod:`kiana.load.schema`).
_INSERT_DETAILS_SQL = """
INSERT INTO run_details SELECT run_id, ms, native_metrics, labels FROM good
"""

#: The first document of each protocol digest not stored yet (``good``).
_NEW_PROTOCOLS_SQL = """
SELECT * FROM (
    SELECT protocol_digest AS digest, arg_min(rec, (rec, item)) AS rec,
           arg_min(item, (rec, item)) AS item, arg_min(source, (rec, item)) AS src
    FROM good GROUP BY ALL
) ANTI JOIN protocols USING (digest)
"""

#: The new protocols (``new``: digest, src and the document) -> ``protocols``.
_INSERT_PROTOCOLS_SQL = """
INSERT INTO protocols
SELECT digest, json_extract_string(c, '$.metadata.name'), json_extract_string(c, '$.metadata.title'),
    json_extract_string(c, '$.spec.comparability.family'), json_extract_string(c, '$.spec.comparability.notes'),
    json_extract_string(c, '$.spec.measurement.timer'), json_extract_string(c, '$.spec.measurement.primaryStatistic'),
    json_extract_string(c, '$.spec.harness.name'), json_extract_string(c, '$.spec.harness.repository'),
    c, src
FROM (SELECT digest, src, json_transform(doc, '{"protocol": "JSON"}').protocol AS c FROM new)
"""

#: The first document of each environment digest not stored yet (``good``).
_NEW_ENVIRONMENTS_SQL = """
SELECT * FROM (
    SELECT environment_digest AS digest, arg_min(rec, (rec, item)) AS rec,
           arg_min(item, (rec, item)) AS item, arg_min(source, (rec, item)) AS src,
           arg_min(vendor, (rec, item)) AS vendor, arg_min(product, (rec, item)) AS product,
           arg_min(form_factor, (rec, item)) AS form_factor,
           arg_min(architecture, (rec, item)) AS architecture,
           arg_min(gpu, (rec, item)) AS gpu
    FROM good GROUP BY ALL
) ANTI JOIN environments USING (digest)
"""

#: The new environments (``new``) -> ``environments``.
_INSERT_ENVIRONMENTS_SQL = """
INSERT INTO environments
SELECT digest, json_extract_string(c, '$.metadata.name'), json_extract_string(c, '$.metadata.title'),
    vendor, product, form_factor, architecture, gpu, json_extract(c, '$.spec.software'), c, src
FROM (SELECT *, json_transform(doc, '{"environment": "JSON"}').environment AS c FROM new)
"""

#: Data-quality notes on the new runs (``good``) -> ``warnings``, returning the run of
#: each note (``good`` is named once: a relation named twice would be materialised).
_WARNINGS_SQL = """
INSERT INTO warnings
SELECT {load_id}, run_id, source, w.path, w.kind, w.message
FROM (
    SELECT run_id, source, unnest([
        CASE WHEN median_val IS NOT NULL AND (p20 IS NULL OR p80 IS NULL) THEN {{
            'path': '$.run.spec.measurements', 'kind': 'no_spread',
            'message': 'no ' || metric || ' p20/p80 measurement: this run carries no noise information'
        }} END,
        CASE WHEN status <> 'passed' THEN {{
            'path': '$.run.spec.status', 'kind': 'not_passed',
            'message': 'status ' || status || ': kept, never judged as a timing'
        }} END,
        CASE WHEN metric = 'latency' AND ms50 IS NOT NULL AND abs(ms50 * 1e6 - median_val) > 1 THEN {{
            'path': '$.run.spec.sourceNative.metrics.ms_50', 'kind': 'native_mismatch',
            'message': 'sourceNative ms_50 (' || ms50 || ' ms) disagrees with the median ('
                || median_val || ' ns)'
        }} END
    ]) AS w
    FROM good
)
WHERE w IS NOT NULL
RETURNING run_id
"""

# --------------------------------------------------------------------------- the stages


#: What a query reads: an Arrow table, or a relation over one (``_good``).
Rows: TypeAlias = "pa.Table | duckdb.DuckDBPyRelation"


def _relation(con: duckdb.DuckDBPyConnection, rows: Rows) -> duckdb.DuckDBPyRelation:
    return con.from_arrow(rows) if isinstance(rows, pa.Table) else rows


#: :func:`_checked_rows` fetches a statement's result as Arrow, which DuckDB warns makes
#: a copy of the rows; it does, and it is still the quickest way here (see there).
warnings.filterwarnings(
    "ignore", message="Arrow output on a DB-API result", category=UserWarning, module=__name__
)


def _checked_rows(
    cursor: duckdb.DuckDBPyConnection, sql: str, name: str, table: pa.Table
) -> pa.Table:
    """:func:`_select` for the checks, on a cursor of their own (outside the load's
    transaction): ``table`` registered as a view for one statement.  A relation's query
    is parsed and bound several times (55 ms per batch for the fast check, 35 ms through
    ``cursor.sql``); one statement, 24 ms, the rows copied once more (~10 ms)."""
    cursor.register(name, table)
    try:
        rows: pa.Table = cursor.execute(sql).to_arrow_table(1 << 20)
    finally:
        cursor.unregister(name)
    return rows


def _select(con: duckdb.DuckDBPyConnection, sql: str, name: str, rows: Rows) -> pa.Table:
    """The rows of the query ``sql``, which reads ``rows`` as ``name``."""
    relation = _relation(con, rows).query(name, sql)
    if relation is None:  # pragma: no cover - the queries passed here are SELECTs
        raise ValueError("not a query")
    return relation.to_arrow_table()


def _write(con: duckdb.DuckDBPyConnection, sql: str, name: str, rows: Rows) -> list[Any]:
    """Run the statement ``sql``, which reads ``rows`` as ``name``; the rows it returned."""
    relation = _relation(con, rows).query(name, sql)
    return relation.fetchall() if relation is not None else []


def _keys(table: pa.Table) -> pa.Array:
    """The ``(rec, item)`` key of every row as one int64 (rec in the high 32 bits)."""
    rec = pc.cast(table.column("rec"), pa.int64())
    item = pc.cast(table.column("item"), pa.int64())
    keys = pc.add(pc.shift_left(rec, 32), item)
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def _matching(table: pa.Table, column: str, rows: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``column`` of ``table`` for each row of ``rows``, matched by key."""
    return table.column(column).take(pc.index_in(_keys(rows), value_set=_keys(table)))


def _check(con: duckdb.DuckDBPyConnection, items: pa.Table) -> pa.Table:
    """The checked rows of a batch's candidate documents: the fast path for all, then
    the full check (:data:`FLAT_SQL`) for the few it does not pass as clean."""
    fast = _checked_rows(con, _FAST_ROWS_SQL, "items", items)
    clean = fast.column("clean")
    if pc.all(clean).as_py() is not False:
        return fast.drop_columns(["clean"])
    unclean = _keys(fast.filter(pc.invert(clean)))
    pending = items.filter(pc.is_in(_keys(items), value_set=unclean))
    slow = _checked_rows(con, FLAT_SQL, "documents", pending)
    passed = fast.filter(clean).select(slow.column_names)
    return con.from_arrow(passed).union(con.from_arrow(slow)).to_arrow_table()


def stage1(cursor: duckdb.DuckDBPyConnection, batch: Batch) -> Batch:
    """Stage 1 (:data:`STAGE1_SQL`) of a batch Python read, on ``cursor``, a cursor of
    its own outside the load's transaction (the reading thread's, so that the parsing
    overlaps the checks of the batch before)."""
    if batch.arrow is not None and "doc" in batch.arrow.column_names:
        return batch
    table = batch.table().drop_columns(["rec"])
    return Batch.from_arrow(
        _checked_rows(cursor, STAGE1_SQL.format(records="records"), "records", table)
    )


def _items(records: pa.Table) -> pa.Table:
    """The rows the checks read, one per record after stage 1 (``doc``, NULL where the
    text is no JSON): the problem of each record that cannot be a document and the start
    of its text, computed in Arrow (the documents are not copied again)."""
    doc, text = records.column("doc"), records.column("text")
    count = records.num_rows
    invalid = pc.is_null(doc)
    none = pa.scalar(None, pa.string())
    problem = pc.if_else(
        invalid,
        "invalid JSON",
        pc.if_else(pc.equal(doc, "[]"), "empty array: no document in it", none),
    )
    return pa.table(
        {
            "rec": records.column("rec"),
            "item": pa.repeat(pa.scalar(0, pa.int64()), count),
            "source": records.column("source"),
            "line": records.column("line"),
            "item_index": pa.nulls(count, pa.int64()),
            "doc": doc,
            "problem": pc.coalesce(records.column("problem"), problem),
            "excerpt": pc.if_else(invalid, pc.utf8_slice_codeunits(text, 0, 200), none),
        }
    )


def _expanded(con: duckdb.DuckDBPyConnection, items: pa.Table) -> pa.Table:
    """Stage 1's rows with every array (not empty) replaced by its documents."""
    doc = items.column("doc")
    arrays = pc.and_(pc.starts_with(doc, "["), pc.is_null(items.column("problem")))
    if not pc.any(arrays).as_py():
        return items
    documents = _checked_rows(con, _EXPAND_SQL, "arrays", items.filter(arrays))
    kept = items.filter(pc.invert(pc.fill_null(arrays, False)))
    return pa.concat_tables([kept, documents.cast(kept.schema)])


def _unreadable(items: pa.Table) -> list[tuple[int, str, str]]:
    """The records that are no candidate document: rec, where (``source:line``), why."""
    problem = items.column("problem")
    if problem.null_count == items.num_rows:
        return []
    bad = items.select(["rec", "source", "line", "problem"]).filter(pc.is_valid(problem))
    return [
        (rec, source if line is None else f"{source}:{line}", why)
        for rec, source, line, why in sorted(zip(*bad.to_pydict().values(), strict=True))
    ]


def _insert_rejects(
    con: duckdb.DuckDBPyConnection,
    load_id: int,
    items: pa.Table,
    failed: pa.Table,
    conflicts: pa.Table,
    flat: pa.Table,
) -> None:
    """The documents that failed a check (``failed``) or the digest consistency
    (``conflicts``) -> ``rejects``, each with the start of its text."""
    names = ["rec", "item", "source", "path", "reason"]
    rejected = pa.concat_tables(
        [
            failed.select(["rec", "item", "source", "reject_path", "reject_reason"]).rename_columns(
                names
            ),
            conflicts.append_column("source", _matching(flat, "source", conflicts)).select(names),
        ],
        promote_options="permissive",
    )
    rejected = rejected.append_column("doc", _matching(items, "doc", rejected))
    _write(con, _INSERT_REJECTS_SQL.format(load_id=load_id), "rejected", rejected)


#: The two digests whose content is kept once: (column, its content hash, table).
_CONTENTS = (
    ("protocol_digest", "protocol_hash", "protocols"),
    ("environment_digest", "environment_hash", "environments"),
)


def _stored(con: duckdb.DuckDBPyConnection, table: str, digests: list[str]) -> dict[str, int]:
    """The content hash of each of ``digests`` already in ``table``."""
    rows = con.execute(
        f"SELECT digest, {CONTENT_HASH.format('content')} FROM {table} "
        "WHERE list_contains(?, digest)",
        [digests],
    ).fetchall()
    return {str(digest): int(h) for digest, h in rows}


def _stored_contents(con: duckdb.DuckDBPyConnection, flat: pa.Table) -> dict[str, dict[str, int]]:
    """For each table of :data:`_CONTENTS`, the content hash of each digest of the
    batch's checked documents that the table holds already (one small query each)."""
    valid = pc.is_null(flat.column("reject_reason"))
    return {
        table: _stored(con, table, pc.unique(pc.filter(flat.column(column), valid)).to_pylist())
        for column, _, table in _CONTENTS
    }


def _consistent(flat: pa.Table, stored: dict[str, dict[str, int]]) -> bool:
    """Whether every digest of the batch's checked documents names one content, and the
    stored one where it is stored (``stored``: :func:`_stored_contents`): then no
    document conflicts and the full check (:data:`_CONFLICTS_SQL`) need not run.  A few
    digests per batch: cheap in Arrow."""
    valid = pc.is_null(flat.column("reject_reason"))
    for column, content, table in _CONTENTS:
        pairs = (
            pa.table(
                {
                    "d": pc.filter(flat.column(column), valid),
                    "h": pc.filter(flat.column(content), valid),
                }
            )
            .group_by("d")
            .aggregate([("h", "min"), ("h", "max")])
        )
        if not pc.all(pc.equal(pairs.column("h_min"), pairs.column("h_max"))).as_py():
            return False
        first = dict(
            zip(pairs.column("d").to_pylist(), pairs.column("h_min").to_pylist(), strict=True)
        )
        if any(first[digest] != h for digest, h in stored[table].items()):
            return False
    return True


def _insert_details(
    con: duckdb.DuckDBPyConnection,
    items: pa.Table,
    flat: pa.Table,
    good: Rows,
    stored: dict[str, dict[str, int]],
) -> None:
    """The details of the new runs (``good``, the ``fresh`` rows of ``flat``), and the
    protocols and environments whose digests are new (their content from their first
    document; ``stored``: :func:`_stored_contents`, taken before this batch's inserts)."""
    _write(con, _INSERT_DETAILS_SQL, "good", good)
    fresh = flat.column("fresh")
    for (column, _, table), new_sql, insert_sql in zip(
        _CONTENTS,
        (_NEW_PROTOCOLS_SQL, _NEW_ENVIRONMENTS_SQL),
        (_INSERT_PROTOCOLS_SQL, _INSERT_ENVIRONMENTS_SQL),
        strict=True,
    ):
        digests = pc.unique(pc.filter(flat.column(column), fresh)).to_pylist()
        if any(digest not in stored[table] for digest in digests):
            new = _select(con, new_sql, "good", good)
            new = new.append_column("doc", _matching(items, "doc", new))
            _write(con, insert_sql, "new", new)


@dataclass(frozen=True)
class Checked:
    """One batch after the checks (:func:`check_batch`), ready for :func:`store_batch`."""

    batch: Batch
    items: pa.Table  # stage 1's rows (arrays expanded)
    flat: pa.Table  # the checked rows, with their key (see _keys)
    unreadable: list[tuple[str, str, str | None]]  # where, why, excerpt
    run_ids: Future[pa.Array]  # the run_id of each row of items, being hashed

    def with_run_ids(self) -> tuple[pa.Table, pa.Table]:
        """``items`` and ``flat``, each with its ``run_id`` (once hashed)."""
        items = self.items.append_column("run_id", self.run_ids.result())
        return items, self.flat.append_column("run_id", _matching(items, "run_id", self.flat))


def _all(flags: pa.Array) -> bool:
    return bool(flags.null_count == 0 and flags.true_count == len(flags))


def _shown_source(records: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``source`` as :data:`kiana.load.columns.SOURCE` shows it, for stage 1's rows (no
    array element among them): ``file:line`` for a JSONL line, ``file`` for a file."""
    source = records.column("source")
    line = pc.cast(records.column("line"), pa.string())
    return pc.coalesce(pc.binary_join_element_wise(source, line, ":"), source)


def _fast_checked(con: duckdb.DuckDBPyConnection, records: pa.Table) -> pa.Table:
    """Stage 1's rows with the fast path's columns: as the reading query gave them
    (:func:`read_sql`), or computed now on ``con`` (records Python read)."""
    if "clean" in records.column_names:
        return records
    carried = ", ".join(["rec", *STAGE1_COLUMNS[:-1]])
    sql = fast_sql("records", keys_in=carried, keys_out=f"doc, {carried}")
    return _checked_rows(con, sql, "records", records)


def _passed(records: pa.Table, clean: pa.Array) -> pa.Table:
    """The checked rows (no reject) of the ``clean`` rows of :func:`_fast_checked`."""
    fields = [
        name for name in records.column_names if name not in {"rec", "clean", *STAGE1_COLUMNS}
    ]
    passed = records.select(["rec", "source", "line", *fields])
    if not _all(clean):
        passed = passed.filter(clean)  # a filter copies: not the documents, left out above
    count = passed.num_rows
    none = pa.nulls(count, pa.string())
    return pa.table(
        {
            "rec": passed.column("rec"),
            "item": pa.repeat(pa.scalar(0, pa.int64()), count),
            "source": _shown_source(passed),
            **{name: passed.column(name) for name in fields},
            "reject_path": none,
            "reject_reason": none,
        }
    )


def check_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> Checked:
    """Stage 1 and the checks of one batch, on ``con``: a cursor of their own, outside
    the load's transaction (its statements register views, :func:`_checked_rows`).  It
    reads no table, so it runs while another batch is stored (:mod:`kiana.load`).

    The fast path has run on every record (mostly as it was read, :func:`read_sql`):
    the clean ones are checked rows as they are.  The others (rare) are no document
    (their problem becomes a reject), an array (replaced by its documents) or a
    document the full check must see (:func:`_check`)."""
    lap = laps()
    batch = stage1(con, batch)  # done already where it was read
    records = _fast_checked(con, batch.table())
    clean = pc.fill_null(records.column("clean"), False).combine_chunks()
    passed = _passed(records, clean)
    items = _items(records)
    rest = items.slice(0, 0)
    if not _all(clean):
        rest = _expanded(con, items.filter(pc.invert(clean)))
        items = pa.concat_tables([items.filter(clean), rest])
    lap("the fast path (Python-read batches), arrays expanded")
    unreadable = []
    for rec, source, problem in _unreadable(rest):
        text = batch.text_at(rec)
        if problem == "invalid JSON" and text is not None:
            problem = _json_error(text)
        unreadable.append((source, problem, text[:200] if text else None))
    # run_id (hashlib, which lets go of the GIL) on a thread of its own, which the storing
    # waits for: the hashing hides behind the checks and the storing of the batch before.
    hashing = ThreadPoolExecutor(1, thread_name_prefix="kiana-load-hash")
    run_ids = hashing.submit(sha256_hex, items.column("doc"))
    hashing.shutdown(wait=False)
    flat = passed
    if pc.any(pc.is_null(rest.column("problem"))).as_py():
        flat = pa.concat_tables([passed, _check(con, rest).select(passed.column_names)])
    flat = flat.append_column("key", _keys(flat))
    lap("the full check")
    return Checked(batch, items, flat, unreadable, run_ids)


#: The rows of :data:`_CONFLICTS_SQL` when there are none.
_NO_CONFLICTS = pa.schema(
    [
        ("rec", pa.int64()),
        ("item", pa.int64()),
        ("key", pa.int64()),
        ("path", pa.string()),
        ("reason", pa.string()),
    ]
).empty_table()


class Seen:
    """The ``run_id`` of every run a load stored so far."""

    def __init__(self) -> None:
        self._ids: set[str] = set()

    def new(self, fresh: pa.Table) -> pa.Array:
        """The keys of the rows of ``fresh`` (``run_id``, ``key``: not stored before the
        load) whose run this load has not stored yet; those runs count as stored now."""
        ids = self._ids
        keep = []
        for run_id in fresh.column("run_id").to_pylist():  # unique: fresh is per run
            keep.append(run_id not in ids)
            ids.add(run_id)
        keys: pa.Array = fresh.column("key").filter(pa.array(keep, pa.bool_())).combine_chunks()
        return keys


def store_batch(
    con: duckdb.DuckDBPyConnection, checked: Checked, load_id: int, seen: Seen
) -> BatchCounts:
    """Reject, dedupe and insert one checked batch (in the load's transaction, on its
    connection); returns its counts."""
    lap = laps()
    load_id = int(load_id)
    items, flat = checked.with_run_ids()
    lap("waiting for run_id")
    stored = _stored_contents(con, flat)
    if _consistent(flat, stored):
        conflicts = _NO_CONFLICTS
        flat = flat.append_column("conflicting", pa.repeat(False, flat.num_rows))
    else:
        conflicts = _select(con, _CONFLICTS_SQL, "flat", flat)
        flat = flat.append_column(
            "conflicting", pc.is_in(flat.column("key"), conflicts.column("key"))
        )
    lap("digest consistency")
    fresh = seen.new(_select(con, _FRESH_SQL.format(load_id=load_id), "flat", flat))
    flat = flat.append_column("fresh", pc.is_in(flat.column("key"), fresh))
    good = con.from_arrow(flat).filter("fresh")  # read by each insert: nothing is copied
    lap("dedupe")
    rows = [(load_id, where, None, why, excerpt) for where, why, excerpt in checked.unreadable]
    if rows:
        con.executemany("INSERT INTO rejects VALUES (?, ?, ?, ?, ?)", rows)
    failed = flat.filter(pc.is_valid(flat.column("reject_reason")))
    if failed.num_rows or conflicts.num_rows:
        _insert_rejects(con, load_id, items, failed, conflicts, flat)
    lap("rejects")
    _write(con, _INSERT_RUNS_SQL.format(load_id=load_id), "good", good)
    lap("insert runs")
    _insert_details(con, items, flat, good, stored)
    lap("insert measurements, labels, protocols, environments")
    noted = _write(con, _WARNINGS_SQL.format(load_id=load_id), "good", good)
    lap("warnings")
    counts = BatchCounts(read=items.num_rows, loaded=len(fresh), warned=len(set(noted)))
    counts.rejected = len(rows) + failed.num_rows + conflicts.num_rows
    counts.already_present = counts.read - counts.loaded - counts.rejected
    return counts
