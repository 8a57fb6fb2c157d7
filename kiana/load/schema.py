"""The DuckDB tables kiana keeps.  One definition, used by the loader and by tests.

``runs``          one row per loaded document (a run); the columns every later stage uses.
``run_details``   one row per run: its ``measurements[]`` array (a list of structs), the
                  harness's ``sourceNative.metrics`` and its ``run.metadata.labels``
                  (raw JSON), as the document gave them.
``measurements``  (a view) long form of every number in a run: the ``measurements[]``
                  array, the timing median, and the harness's ``sourceNative.metrics``.
``labels``        (a view) every ``run.metadata.labels`` entry.
``protocols``     one row per protocol digest.
``environments``  one row per environment digest.
``rejects``       one row per input that could not be loaded, with the JSON path and why.
``warnings``      data-quality notes on runs that were loaded (zero spread, ...).
``loads``         one row per ``kiana load``: when, what, and the counts.
``repositories``  the Liger-Kernel checkouts ``kiana import liger --git`` read (absolute
                  path, when): where culprits are looked up without ``--git``.
"""

from __future__ import annotations

import duckdb

#: 2: ``measurements`` and ``labels`` became views over ``run_details`` (one row per run
#: instead of ~7 detail rows each carrying the 64-character ``run_id``).
SCHEMA_VERSION = 2

RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    # sha256 of the document's minified JSON.  Unique, but not a PRIMARY KEY: the loader
    # keeps it unique (one writer at a time, an anti-join with the stored ids), without
    # the index of a key on 64 random hex characters, which would take a large share of
    # the database file and of the load time (bench/README.md).
    ("run_id", "VARCHAR NOT NULL"),
    ("partition_id", "VARCHAR NOT NULL"),  # see kiana.vocabulary.partition_id
    ("family", "VARCHAR NOT NULL"),
    ("kernel", "VARCHAR NOT NULL"),
    ("pass", "VARCHAR NOT NULL"),
    ("provider", "VARCHAR NOT NULL"),
    ("workload", "VARCHAR NOT NULL"),  # the workload slug, e.g. hidden4096-rows4096-fp32
    ("gpu", "VARCHAR NOT NULL"),  # vendor + product + form factor, e.g. NVIDIA H100 80GB HBM3
    ("vendor", "VARCHAR NOT NULL"),
    ("product", "VARCHAR NOT NULL"),
    ("form_factor", "VARCHAR"),
    ("architecture", "VARCHAR"),
    ("liger_version", "VARCHAR NOT NULL"),
    ("observed_at", "TIMESTAMP NOT NULL"),  # UTC
    ("status", "VARCHAR NOT NULL"),
    ("metric", "VARCHAR NOT NULL"),  # latency | memory
    ("unit", "VARCHAR NOT NULL"),  # ns | MB
    ("median", "DOUBLE"),  # in `unit`; NULL only when status is not passed
    ("p20", "DOUBLE"),
    ("p80", "DOUBLE"),
    ("median_ns", "BIGINT"),  # latency only
    ("p20_ns", "BIGINT"),
    ("p80_ns", "BIGINT"),
    ("protocol_digest", "VARCHAR NOT NULL"),
    ("workload_digest", "VARCHAR NOT NULL"),
    ("environment_digest", "VARCHAR NOT NULL"),
    ("implementation_digest", "VARCHAR NOT NULL"),
    ("benchmark", "VARCHAR NOT NULL"),
    ("external_id", "VARCHAR NOT NULL"),
    ("name", "VARCHAR"),
    ("title", "VARCHAR"),
    ("source", "VARCHAR NOT NULL"),  # file, and ':line' for JSONL or '[i]' for arrays
    ("load_id", "INTEGER NOT NULL"),
)

DDL = f"""
CREATE TABLE IF NOT EXISTS kiana_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE SEQUENCE IF NOT EXISTS load_ids START 1;
CREATE TABLE IF NOT EXISTS loads (
    load_id INTEGER PRIMARY KEY, started_at TIMESTAMP, finished_at TIMESTAMP,
    kiana_version VARCHAR, inputs VARCHAR[], read BIGINT, loaded BIGINT,
    already_present BIGINT, rejected BIGINT, warned BIGINT
);
CREATE TABLE IF NOT EXISTS runs ({", ".join(f'"{n}" {t}' for n, t in RUN_COLUMNS)});
CREATE TABLE IF NOT EXISTS run_details (
    run_id VARCHAR NOT NULL,
    measurements STRUCT(metric VARCHAR, statistic VARCHAR, value DOUBLE, unit VARCHAR)[],
    native_metrics JSON, labels JSON
);
-- The details in long form, read on demand: the loader writes one run_details row per run.
-- An object's entries come as two lists unnested side by side, its keys and its values
-- ('$.*'), which keep the same order (duplicate keys included).
CREATE VIEW IF NOT EXISTS measurements AS
SELECT run_id, 'measurements' AS origin, m.metric, m.statistic, m.value, m.unit
FROM (SELECT run_id, unnest(measurements) AS m FROM run_details)
UNION ALL
SELECT run_id, 'timing', 'latency', 'median', median, 'ns'
FROM runs WHERE metric = 'latency' AND median IS NOT NULL
UNION ALL
SELECT run_id, 'sourceNative', key, NULL, try_cast(value AS DOUBLE), NULL
FROM (SELECT run_id, unnest(json_keys(native_metrics)) AS key,
             unnest(json_extract(native_metrics, '$.*')) AS value
      FROM run_details WHERE json_type(native_metrics) = 'OBJECT');
CREATE VIEW IF NOT EXISTS labels AS
SELECT run_id, key,
    CASE WHEN json_type(value) = 'VARCHAR' THEN json_extract_string(value, '$')
         ELSE value::VARCHAR END AS value
FROM (SELECT run_id, unnest(json_keys(labels)) AS key, unnest(json_extract(labels, '$.*')) AS value
      FROM run_details);
CREATE TABLE IF NOT EXISTS protocols (
    digest VARCHAR PRIMARY KEY, name VARCHAR, title VARCHAR, family VARCHAR, notes VARCHAR,
    timer VARCHAR, primary_statistic VARCHAR, harness_name VARCHAR,
    harness_repository VARCHAR, content JSON, first_source VARCHAR
);
CREATE TABLE IF NOT EXISTS environments (
    digest VARCHAR PRIMARY KEY, name VARCHAR, title VARCHAR, vendor VARCHAR, product VARCHAR,
    form_factor VARCHAR, architecture VARCHAR, gpu VARCHAR, software JSON, content JSON,
    first_source VARCHAR
);
CREATE TABLE IF NOT EXISTS rejects (
    load_id INTEGER NOT NULL, source VARCHAR NOT NULL, json_path VARCHAR,
    reason VARCHAR NOT NULL, excerpt VARCHAR
);
CREATE TABLE IF NOT EXISTS repositories (path VARCHAR NOT NULL, imported_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS warnings (
    load_id INTEGER NOT NULL, run_id VARCHAR NOT NULL, source VARCHAR, json_path VARCHAR,
    kind VARCHAR NOT NULL, message VARCHAR NOT NULL
);
"""


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the tables if they are missing; refuse a database of another schema (before
    creating anything in it)."""
    if _schema_version(con) is not None:
        check_schema(con)
    con.execute("BEGIN TRANSACTION")  # one commit (one WAL sync) for all the statements
    try:
        con.execute(DDL)
        if _schema_version(con) is None:
            con.execute(
                "INSERT INTO kiana_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    check_schema(con)


def check_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a database that kiana did not write, or wrote with another schema."""
    from kiana.errors import DatabaseError

    version = _schema_version(con)
    if version is None:
        raise DatabaseError(
            "not a kiana database (it has no kiana_meta table)",
            hint="give a database file written by `kiana load`",
        )
    if version != str(SCHEMA_VERSION):
        raise DatabaseError(
            f"this database has kiana schema version {version}, this kiana writes {SCHEMA_VERSION}",
            hint="load the documents into a new database file (--db NEW.duckdb)",
        )


def _schema_version(con: duckdb.DuckDBPyConnection) -> str | None:
    try:
        rows = con.execute("SELECT value FROM kiana_meta WHERE key = 'schema_version'").fetchall()
    except duckdb.CatalogException:
        return None
    return str(rows[0][0]) if rows else None
