"""Writing one batch of checked documents into the tables, without duplicates.

Called inside the load's single transaction (see :mod:`kiana.load`).  Per batch:
check every document (the fast path of :mod:`kiana.load.fast`, then the full check
for the few it does not pass as clean), reject what failed a check or a
digest-consistency check, drop what is already
stored (``run_id`` is the sha256 of the document's minified JSON, so the same
document under any file name or layout is stored once), insert the rest.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from kiana.load.columns import CONTENT_HASH, FLAT_SQL
from kiana.load.fast import FAST_SQL
from kiana.load.hashing import sha256_hex
from kiana.load.sources import Batch
from kiana.vocabulary import GPU_LABEL_SQL, partition_id_sql

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


# Digest consistency: the first content seen behind a digest wins; a document whose
# protocol/environment content differs from it is rejected.  Contents are compared by
# a 64-bit hash of their JSON text (columns.CONTENT_HASH), stored content included: two
# different contents behind one digest would have to collide as well to slip through.
_CONFLICTS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _conflicts AS
WITH v AS (
    SELECT rec, item, protocol_digest AS pd, protocol_hash AS ph,
           environment_digest AS ed, environment_hash AS eh
    FROM _flat WHERE reject_reason IS NULL
), firstp AS (
    SELECT pd, arg_min(ph, (rec, item)) AS ph FROM v GROUP BY pd
), firste AS (
    SELECT ed, arg_min(eh, (rec, item)) AS eh FROM v GROUP BY ed
), p AS (
    SELECT digest, {CONTENT_HASH.format("content")} AS h, first_source FROM protocols
), e AS (
    SELECT digest, {CONTENT_HASH.format("content")} AS h, first_source FROM environments
), c AS (
    SELECT v.rec, v.item,
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

_GOOD_SQL = f"""
CREATE OR REPLACE TEMP TABLE _good AS
WITH ok AS (
    SELECT rec, item, i.run_id
    FROM _flat f JOIN (SELECT rec, item, run_id FROM _items) i USING (rec, item)
        ANTI JOIN _conflicts c USING (rec, item)
    WHERE f.reject_reason IS NULL
), firsts AS (
    -- dedupe on the narrow (rec, item, run_id) only, then one join back to the wide rows
    SELECT run_id, arg_min(rec, (rec, item)) AS rec, arg_min(item, (rec, item)) AS item
    FROM ok GROUP BY run_id
), fresh AS (
    SELECT * FROM firsts ANTI JOIN runs r USING (run_id)
)
SELECT x.* EXCLUDE (reject_path, reject_reason), fresh.run_id,
    {GPU_LABEL_SQL} AS gpu,
    {partition_id_sql()} AS partition_id
FROM _flat x JOIN fresh USING (rec, item)
"""

_INSERT_RUNS_SQL = """
INSERT INTO runs BY NAME
SELECT run_id, partition_id, family, kernel, "pass", provider, workload, gpu, vendor, product, form_factor,
    architecture, liger_version, observed_at, status, metric, unit,
    median_val AS median, p20, p80,
    CASE WHEN metric = 'latency' THEN median_val::BIGINT END AS median_ns,
    CASE WHEN metric = 'latency' THEN round(p20)::BIGINT END AS p20_ns,
    CASE WHEN metric = 'latency' THEN round(p80)::BIGINT END AS p80_ns,
    protocol_digest, workload_digest, environment_digest, implementation_digest,
    benchmark, external_id, name, title,
    source, $load_id AS load_id
FROM _good
"""

#: The details of the new runs.  An object's entries come as two lists unnested side by
#: side, its keys and its values (``'$.*'``), which keep the same order (duplicate keys
#: included): ``json_each`` gave the same rows but as a lateral join, which DuckDB runs
#: as a hash join on the JSON text, ~10x slower.
_INSERT_DETAILS_SQL = """
INSERT INTO measurements
SELECT run_id, 'measurements', m.metric, m.statistic, m.value, m.unit
FROM (SELECT run_id, unnest(ms) AS m FROM _good);
INSERT INTO measurements
SELECT run_id, 'timing', 'latency', 'median', median_val, 'ns' FROM _good WHERE metric = 'latency'
    AND median_val IS NOT NULL;
INSERT INTO measurements
SELECT run_id, 'sourceNative', key, NULL, try_cast(value AS DOUBLE), NULL
FROM (SELECT run_id, unnest(json_keys(native_metrics)) AS key,
             unnest(json_extract(native_metrics, '$.*')) AS value
      FROM _good WHERE json_type(native_metrics) = 'OBJECT');
INSERT INTO labels
SELECT run_id, key,
    CASE WHEN json_type(value) = 'VARCHAR' THEN json_extract_string(value, '$') ELSE value::VARCHAR END
FROM (SELECT run_id, unnest(json_keys(labels)) AS key, unnest(json_extract(labels, '$.*')) AS value
      FROM _good);
INSERT INTO protocols
SELECT digest, json_extract_string(c, '$.metadata.name'), json_extract_string(c, '$.metadata.title'),
    json_extract_string(c, '$.spec.comparability.family'), json_extract_string(c, '$.spec.comparability.notes'),
    json_extract_string(c, '$.spec.measurement.timer'), json_extract_string(c, '$.spec.measurement.primaryStatistic'),
    json_extract_string(c, '$.spec.harness.name'), json_extract_string(c, '$.spec.harness.repository'),
    c, src
FROM (SELECT digest, src, json_transform(i.doc, '{"protocol": "JSON"}').protocol AS c
      FROM (SELECT protocol_digest AS digest, arg_min(rec, (rec, item)) AS rec,
                   arg_min(item, (rec, item)) AS item, arg_min(source, (rec, item)) AS src
            FROM _good GROUP BY ALL) ANTI JOIN protocols USING (digest)
      JOIN _items i USING (rec, item));
INSERT INTO environments
SELECT digest, json_extract_string(c, '$.metadata.name'), json_extract_string(c, '$.metadata.title'),
    vendor, product, form_factor, architecture, gpu, json_extract(c, '$.spec.software'), c, src
FROM (SELECT g.*, json_transform(i.doc, '{"environment": "JSON"}').environment AS c
      FROM (SELECT environment_digest AS digest, arg_min(rec, (rec, item)) AS rec,
                   arg_min(item, (rec, item)) AS item, arg_min(source, (rec, item)) AS src,
                   arg_min(vendor, (rec, item)) AS vendor, arg_min(product, (rec, item)) AS product,
                   arg_min(form_factor, (rec, item)) AS form_factor,
                   arg_min(architecture, (rec, item)) AS architecture, arg_min(gpu, (rec, item)) AS gpu
            FROM _good GROUP BY ALL) g ANTI JOIN environments USING (digest)
      JOIN _items i USING (rec, item));
"""

_WARNINGS_SQL = """
INSERT INTO warnings
SELECT $load_id, run_id, source, '$.run.spec.measurements', 'no_spread',
    'no ' || metric || ' p20/p80 measurement: this run carries no noise information'
FROM _good WHERE median_val IS NOT NULL AND (p20 IS NULL OR p80 IS NULL)
UNION ALL
SELECT $load_id, run_id, source, '$.run.spec.status', 'not_passed',
    'status ' || status || ': kept, never judged as a timing'
FROM _good WHERE status <> 'passed'
UNION ALL
SELECT $load_id, run_id, source, '$.run.spec.sourceNative.metrics.ms_50', 'native_mismatch',
    'sourceNative ms_50 (' || ms50 || ' ms) disagrees with the median (' || median_val || ' ns)'
FROM (SELECT *, try_cast(json_extract(native_metrics, '$.ms_50') AS DOUBLE) AS ms50
      FROM _good)
WHERE metric = 'latency' AND ms50 IS NOT NULL AND abs(ms50 * 1e6 - median_val) > 1
"""


def _query(sql: str) -> str:
    """The query of a ``CREATE OR REPLACE TEMP TABLE name AS query`` stage."""
    head = re.match(r"\s*CREATE OR REPLACE TEMP TABLE \w+ AS\s", sql)
    if head is None:  # pragma: no cover - the stage queries are constants
        raise ValueError("not a stage query")
    return sql[head.end() :]


#: Stage 1a: each raw record parsed once (``try(json(text))``: minified, or NULL when
#: invalid); minified JSON starts with ``[`` exactly when it is an array.
_RECORDS = """
SELECT *, CASE WHEN left(j, 1) = '[' THEN json_array_length(j) END AS n
FROM (SELECT rec, source, line, text, problem,
             CASE WHEN problem IS NULL THEN try(json(text)) END AS j
      FROM _batch)
"""

#: Stage 1b: one row per candidate document (arrays expanded).  As one statement with
#: a CTE that parsed every record up to five times it ran 4x slower.
_ITEMS = """
SELECT rec, 0 AS item, source, line, NULL AS item_index, j AS doc,
       CASE WHEN problem IS NOT NULL THEN problem
            WHEN j IS NULL THEN 'invalid JSON'
            WHEN n = 0 THEN 'empty array: no document in it' END AS problem,
       CASE WHEN problem IS NULL AND j IS NULL THEN text[:200] END AS excerpt
FROM _records WHERE n IS NULL OR n = 0
UNION ALL
SELECT rec, unnest(range(n::BIGINT)) AS item, source, line,
       unnest(range(n::BIGINT)) AS item_index,
       unnest(json_extract(j, '$[*]')) AS doc, NULL, NULL
FROM _records WHERE n > 0
"""
#: Stage 1 as one statement: the parsed records materialised once inside DuckDB
#: instead of a round trip through Arrow.
_STAGE1 = f"WITH _records AS MATERIALIZED ({_RECORDS}) {_ITEMS}"
_FLAT = _query(FLAT_SQL)


#: The fast path straight from the candidate documents (no copy of them first), with
#: the reject columns of the full check: a batch whose documents are all clean is
#: final once ``clean`` is dropped (zero-copy in Arrow).
_FAST_ITEMS = FAST_SQL.replace("FROM _pending\n", "FROM _items WHERE problem IS NULL\n", 1)
assert _FAST_ITEMS != FAST_SQL
_FAST_ITEMS = (
    "SELECT *, NULL::VARCHAR AS reject_path, NULL::VARCHAR AS reject_reason FROM ("
    + _FAST_ITEMS
    + ")"
)


def _check(con: duckdb.DuckDBPyConnection, _items: pa.Table) -> pa.Table:
    """The checked rows of a batch's candidate documents: the fast path for all, then
    the full check (:data:`FLAT_SQL`) for the few it does not pass as clean."""
    _fast = con.sql(_FAST_ITEMS).to_arrow_table()
    (unclean,) = con.execute("SELECT count(*) FROM _fast WHERE NOT clean").fetchall()[0]
    if not unclean:
        return _fast.drop_columns(["clean"])
    _pending = con.sql(
        "SELECT rec, item, source, line, item_index, doc FROM _items SEMI JOIN "
        "(SELECT rec, item FROM _fast WHERE NOT clean) USING (rec, item)"
    ).to_arrow_table()
    _slow = con.sql(_FLAT).to_arrow_table()
    del _pending
    return con.sql(
        "SELECT * EXCLUDE (clean) FROM _fast WHERE clean UNION ALL BY NAME SELECT * FROM _slow"
    ).to_arrow_table()


_CONFLICTS = _query(_CONFLICTS_SQL)
_GOOD = _query(_GOOD_SQL)


def write_batch(con: duckdb.DuckDBPyConnection, batch: Batch, load_id: int) -> BatchCounts:
    """Check, dedupe and insert one batch; returns its counts."""
    lap = laps()
    table = batch.table()
    # The stages are Arrow tables held in local variables that the queries name
    # (DuckDB's replacement scans find them): neither temp tables nor registered
    # views, whose every replaced version the load's transaction keeps until the
    # commit (memory grew by ~350 MB per batch of 20,000 documents).
    _batch = table
    _items = con.sql(_STAGE1).to_arrow_table()
    del _batch, table
    lap("stage 1: parse + minify, arrays expanded")
    counts = BatchCounts()
    bad = con.execute(
        "SELECT rec, source || CASE WHEN line IS NOT NULL THEN ':' || line ELSE '' END, problem "
        "FROM _items WHERE problem IS NOT NULL ORDER BY rec"
    ).fetchall()
    rows = []
    for rec, source, problem in bad:
        text = batch.text_at(rec)
        if problem == "invalid JSON" and text is not None:
            problem = _json_error(text)
        excerpt = text[:200] if text else None
        rows.append((load_id, source, None, problem, excerpt))
    # run_id (hashlib, which lets go of the GIL) on a second thread while DuckDB checks
    # the same documents: the sha256 of 100k documents (~0.3 s) hides behind the check.
    with ThreadPoolExecutor(1) as pool:
        run_ids = pool.submit(sha256_hex, _items.column("doc"))
        _flat = _check(con, _items)
        _items = _items.append_column("run_id", run_ids.result())
    lap("checks (+ run_id sha256 beside them)")
    _conflicts = con.sql(_CONFLICTS).to_arrow_table()  # read by name in the queries below
    lap("digest consistency")
    _good = con.sql(_GOOD).to_arrow_table()
    lap("dedupe")
    read, good = _items.num_rows, _good.num_rows
    if rows:
        con.executemany("INSERT INTO rejects VALUES (?, ?, ?, ?, ?)", rows)
    con.execute(
        """INSERT INTO rejects
        SELECT $load_id, f.source, reject_path, reject_reason, (i.doc::VARCHAR)[:200]
        FROM _flat f JOIN _items i USING (rec, item) WHERE reject_reason IS NOT NULL
        UNION ALL
        SELECT $load_id, f.source, c.path, c.reason, (i.doc::VARCHAR)[:200]
        FROM _conflicts c JOIN _flat f USING (rec, item) JOIN _items i USING (rec, item)""",
        {"load_id": load_id},
    )
    (flat_rejects,) = con.execute(
        "SELECT (SELECT count(*) FROM _flat WHERE reject_reason IS NOT NULL)"
        " + (SELECT count(*) FROM _conflicts)"
    ).fetchall()[0]
    lap("rejects")
    con.execute(_INSERT_RUNS_SQL, {"load_id": load_id})
    lap("insert runs")
    con.execute(_INSERT_DETAILS_SQL)
    lap("insert measurements, labels, protocols, environments")
    con.execute(_WARNINGS_SQL, {"load_id": load_id})
    (warned,) = con.execute(
        "SELECT count(DISTINCT run_id) FROM warnings WHERE load_id = ? "
        "AND run_id IN (SELECT run_id FROM _good)",
        [load_id],
    ).fetchall()[0]
    lap("warnings")
    counts.read = int(read)
    counts.loaded = int(good)
    counts.rejected = len(rows) + int(flat_rejects)
    counts.already_present = counts.read - counts.loaded - counts.rejected
    counts.warned = int(warned)
    return counts
