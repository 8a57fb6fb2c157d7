"""Storing one checked batch in the load's transaction: rejects, dedupe, inserts.

:func:`store` runs on the load's connection, inside its one transaction, batch after
batch (the load's one serial stage), so it only copies what the checks computed:

1. digest consistency: the first content seen behind a protocol or environment digest
   wins, a document naming a different content behind it is rejected;
2. dedupe: a run already stored (before this load, or by an earlier batch of it) is
   not stored again; within the batch, its first document (by key) is;
3. the rejects (the records that are no document, the failed checks, the conflicts);
4. the new runs, their details, the new protocols and environments, the warnings.

The SQL of each step reads the relations its comment names; table names (``runs``,
``protocols``, ...) are the database's own.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from kiana.load.arrow import Rows, matching, select, write
from kiana.load.batches import BatchCounts, CheckedBatch
from kiana.load.columns import CONTENT_HASH
from kiana.load.profiling import NO_PROFILER, Profiler

__all__ = ["Seen", "store"]

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
#: DuckDB builds the join's hash table on the batch (a RIGHT_ANTI join: ``EXPLAIN`` on a
#: 1M-run database), so the stored ids are probed, never held.
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
SELECT run_id, partition_id, harness, family, kernel, "pass", provider, role, workload, gpu,
    vendor, product, form_factor, architecture, version, observed_at, status, metric, unit,
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

#: The new protocols (lists, one entry per protocol: ``digest``, ``src`` and ``doc``, the
#: document it was first seen in) -> ``protocols``.
_INSERT_PROTOCOLS_SQL = """
INSERT INTO protocols
SELECT digest, json_extract_string(c, '$.metadata.name'), json_extract_string(c, '$.metadata.title'),
    json_extract_string(c, '$.spec.comparability.family'), json_extract_string(c, '$.spec.comparability.notes'),
    json_extract_string(c, '$.spec.measurement.timer'), json_extract_string(c, '$.spec.measurement.primaryStatistic'),
    json_extract_string(c, '$.spec.harness.name'), json_extract_string(c, '$.spec.harness.repository'),
    c, src
FROM (
    SELECT digest, src, json_transform(doc, '{"protocol": "JSON"}').protocol AS c
    FROM (SELECT unnest($digest) AS digest, unnest($src) AS src, unnest($doc) AS doc)
)
"""

#: The new environments (lists, as for :data:`_INSERT_PROTOCOLS_SQL`, and the hardware
#: columns of the first document) -> ``environments``.
_INSERT_ENVIRONMENTS_SQL = """
INSERT INTO environments
SELECT digest, json_extract_string(c, '$.metadata.name'), json_extract_string(c, '$.metadata.title'),
    vendor, product, form_factor, architecture, gpu, json_extract(c, '$.spec.software'), c, src
FROM (
    SELECT *, json_transform(doc, '{"environment": "JSON"}').environment AS c
    FROM (
        SELECT unnest($digest) AS digest, unnest($src) AS src, unnest($doc) AS doc,
            unnest($vendor) AS vendor, unnest($product) AS product,
            unnest($form_factor) AS form_factor, unnest($architecture) AS architecture,
            unnest($gpu) AS gpu
    )
)
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
            conflicts.append_column("source", matching(flat, "source", conflicts)).select(names),
        ],
        promote_options="permissive",
    )
    rejected = rejected.append_column("doc", matching(items, "doc", rejected))
    write(con, _INSERT_REJECTS_SQL.format(load_id=load_id), "rejected", rejected)


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


#: For each table of :data:`_CONTENTS`: its insert, and the columns of the first document
#: of a new digest that the insert reads besides its digest, source and document.
_INSERTS = (
    (_INSERT_PROTOCOLS_SQL, ()),
    (_INSERT_ENVIRONMENTS_SQL, ("vendor", "product", "form_factor", "architecture", "gpu")),
)


def _first_of_new(
    flat: pa.Table, column: str, stored: dict[str, int], extra: tuple[str, ...]
) -> pa.Table | None:
    """The first new run (by key) of each ``column`` digest that is not ``stored``, with
    the columns its insert reads; None when every digest of the new runs is stored (one
    column filtered: most batches)."""
    known = pa.array(list(stored), pa.string())
    new = pc.and_(flat.column("fresh"), pc.invert(pc.is_in(flat.column(column), value_set=known)))
    if not pc.any(new).as_py():
        return None
    rows = flat.select([column, "rec", "item", "key", "source", *extra]).filter(new)
    first = rows.group_by(column).aggregate([("key", "min")]).column("key_min")
    return rows.filter(pc.is_in(rows.column("key"), value_set=first))


def _insert_details(
    con: duckdb.DuckDBPyConnection,
    items: pa.Table,
    flat: pa.Table,
    good: Rows,
    stored: dict[str, dict[str, int]],
) -> None:
    """The details of the new runs (``good``, the ``fresh`` rows of ``flat``), and the
    protocols and environments whose digests are new (their content from their first
    document; ``stored``: :func:`_stored_contents`, taken before this batch's inserts).
    A batch has few new digests: their rows go to the inserts as lists, in one plain
    statement each (no relation to bind: 4 -> 2 statements, ~30 ms less for a first
    load of one document)."""
    write(con, _INSERT_DETAILS_SQL, "good", good)
    for (column, _, table), (insert_sql, extra) in zip(_CONTENTS, _INSERTS, strict=True):
        new = _first_of_new(flat, column, stored[table], extra)
        if new is not None:
            values = {name: new.column(name).to_pylist() for name in extra}
            values["digest"] = new.column(column).to_pylist()
            values["src"] = new.column("source").to_pylist()
            values["doc"] = matching(items, "doc", new).to_pylist()
            con.execute(insert_sql, values)


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
    """The ``run_id`` of every run a load stored so far, each kept as the 256-bit
    integer its hex digits spell: exact, and 93 bytes a run where the hex string took
    155 (a load of 10M runs held 1.5 GiB of them; bench/README.md)."""

    def __init__(self) -> None:
        self._ids: set[int] = set()

    def new(self, fresh: pa.Table) -> pa.Array:
        """The keys of the rows of ``fresh`` (``run_id``, ``key``: not stored before the
        load) whose run this load has not stored yet; those runs count as stored now."""
        ids = self._ids
        keep = []
        for hex_id in fresh.column("run_id").to_pylist():  # unique: fresh is per run
            run_id = int(hex_id, 16)
            keep.append(run_id not in ids)
            ids.add(run_id)
        keys: pa.Array = fresh.column("key").filter(pa.array(keep, pa.bool_())).combine_chunks()
        return keys


def _consistency(
    con: duckdb.DuckDBPyConnection, flat: pa.Table
) -> tuple[pa.Table, pa.Table, dict[str, dict[str, int]]]:
    """``flat`` with ``conflicting`` (its digests name another content), the conflicts
    (:data:`_CONFLICTS_SQL`) and the stored content hashes (:func:`_stored_contents`)."""
    stored = _stored_contents(con, flat)
    if _consistent(flat, stored):
        return (
            flat.append_column("conflicting", pa.repeat(False, flat.num_rows)),
            _NO_CONFLICTS,
            stored,
        )
    conflicts = select(con, _CONFLICTS_SQL, "flat", flat)
    conflicting = pc.is_in(flat.column("key"), conflicts.column("key"))
    return flat.append_column("conflicting", conflicting), conflicts, stored


def _rejects(
    con: duckdb.DuckDBPyConnection,
    load_id: int,
    checked: CheckedBatch,
    items: pa.Table,
    flat: pa.Table,
    conflicts: pa.Table,
) -> int:
    """Every reject of the batch -> ``rejects``; how many."""
    rows = [(load_id, where, None, why, excerpt) for where, why, excerpt in checked.unreadable]
    if rows:
        con.executemany("INSERT INTO rejects VALUES (?, ?, ?, ?, ?)", rows)
    failed = flat.filter(pc.is_valid(flat.column("reject_reason")))
    if failed.num_rows or conflicts.num_rows:
        _insert_rejects(con, load_id, items, failed, conflicts, flat)
    return len(rows) + int(failed.num_rows) + int(conflicts.num_rows)


def store(
    con: duckdb.DuckDBPyConnection,
    checked: CheckedBatch,
    load_id: int,
    seen: Seen,
    profiler: Profiler = NO_PROFILER,
) -> BatchCounts:
    """Reject, dedupe and insert one checked batch (in the load's transaction, on its
    connection); what it did."""
    load_id = int(load_id)
    with profiler.stage("store: waiting for run_id"):
        items, flat = checked.with_run_ids()
    with profiler.stage("store: digest consistency"):
        flat, conflicts, stored = _consistency(con, flat)
    with profiler.stage("store: dedupe"):
        fresh = seen.new(select(con, _FRESH_SQL.format(load_id=load_id), "flat", flat))
        flat = flat.append_column("fresh", pc.is_in(flat.column("key"), fresh))
        good = con.from_arrow(flat).filter("fresh")  # read by each insert: nothing is copied
    with profiler.stage("store: rejects"):
        rejected = _rejects(con, load_id, checked, items, flat, conflicts)
    with profiler.stage("store: insert runs"):
        write(con, _INSERT_RUNS_SQL.format(load_id=load_id), "good", good)
    with profiler.stage("store: insert details, protocols, environments"):
        _insert_details(con, items, flat, good, stored)
    with profiler.stage("store: warnings"):
        noted = write(con, _WARNINGS_SQL.format(load_id=load_id), "good", good)
    read = items.num_rows
    loaded = len(fresh)
    return BatchCounts(read, loaded, read - loaded - rejected, rejected, len(set(noted)))
