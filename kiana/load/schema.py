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

from kiana.harness import DEFAULT, role_sql

#: 2: ``measurements`` and ``labels`` became views over ``run_details`` (one row per run
#: instead of ~7 detail rows each carrying the 64-character ``run_id``).
#: 3: ``runs`` carry ``harness``, ``version`` (was ``liger_version``) and ``role``, by
#: the run's harness profile (:mod:`kiana.harness`); a database of version 2 is
#: upgraded in place when it is opened (:func:`migrate`).
SCHEMA_VERSION = 3

RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    # sha256 of the document's minified JSON.  Unique, but not a PRIMARY KEY: the loader
    # keeps it unique (one writer at a time, an anti-join with the stored ids), without
    # the index of a key on 64 random hex characters, which would take a large share of
    # the database file and of the load time (bench/README.md).
    ("run_id", "VARCHAR NOT NULL"),
    ("partition_id", "VARCHAR NOT NULL"),  # see kiana.vocabulary.partition_id
    ("harness", "VARCHAR NOT NULL"),  # its profile's name (kiana.harness), e.g. liger-kernel-bench
    ("family", "VARCHAR NOT NULL"),
    ("kernel", "VARCHAR NOT NULL"),
    ("pass", "VARCHAR NOT NULL"),
    ("provider", "VARCHAR NOT NULL"),
    ("role", "VARCHAR NOT NULL"),  # subject (the code under test) | baseline, by the profile
    ("workload", "VARCHAR NOT NULL"),  # the workload slug, e.g. hidden4096-rows4096-fp32
    ("gpu", "VARCHAR NOT NULL"),  # vendor + product + form factor, e.g. NVIDIA H100 80GB HBM3
    ("vendor", "VARCHAR NOT NULL"),
    ("product", "VARCHAR NOT NULL"),
    ("form_factor", "VARCHAR"),
    ("architecture", "VARCHAR"),
    ("version", "VARCHAR NOT NULL"),  # the profile's version label, e.g. labels.liger_version
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
    """Create the tables if they are missing, upgrade a database an older kiana wrote
    (:func:`migrate`); refuse a database of another schema (before creating anything in
    it)."""
    if _schema_version(con) in MIGRATIONS:
        migrate(con)
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


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether ``con``'s current database holds a table called ``name``."""
    rows = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = $name "
        "AND database_name = current_database()",
        {"name": name},
    ).fetchall()
    return bool(rows[0][0])


def needs_migration(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` is a database an older kiana wrote that :func:`migrate` upgrades."""
    return _schema_version(con) in MIGRATIONS


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


#: Version 2 -> 3: ``runs`` rebuilt in the columns' order of :data:`RUN_COLUMNS`, with
#: ``liger_version`` as ``version`` and ``harness`` and ``role`` by the Liger profile,
#: which is how kiana read every run of those databases (version 2 loaded only documents
#: with ``labels.liger_version`` and judged ``liger``/``liger_*`` as the code under
#: test; it kept no ``sourceNative.source``).  In the stored order (insertion order is
#: preserved, :func:`migrate`): a sort by ``load_id`` would hold every run in memory
#: (14.3 GiB for 10M runs) and, not being stable, could reorder the runs of one load.
_MIGRATE_2 = f"""
ALTER TABLE runs RENAME TO runs_schema_2;
CREATE TABLE runs ({", ".join(f'"{n}" {t}' for n, t in RUN_COLUMNS)});
INSERT INTO runs BY NAME
SELECT * EXCLUDE (liger_version), liger_version AS version,
    {role_sql("harness", "provider", "NULL")} AS role
FROM (SELECT *, {_quoted(DEFAULT.name)} AS harness FROM runs_schema_2);
DROP TABLE runs_schema_2;
UPDATE kiana_meta SET value = '3' WHERE key = 'schema_version';
"""

#: The schema versions an older kiana wrote -> the SQL that upgrades each to the next.
MIGRATIONS: dict[str, str] = {"2": _MIGRATE_2}


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Upgrade a database of an older schema (:data:`MIGRATIONS`) to
    :data:`SCHEMA_VERSION`, one transaction per step: interrupted, it is as it was."""
    (kept,) = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0]
    con.execute("SET preserve_insertion_order = true")
    try:
        while (version := _schema_version(con)) in MIGRATIONS:
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute(MIGRATIONS[str(version)])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
    finally:
        con.execute(f"SET preserve_insertion_order = {bool(kept)}")


def check_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a database that kiana did not write, or wrote with another schema."""
    from kiana.errors import DatabaseError

    version = _schema_version(con)
    if version is None:
        raise DatabaseError(
            "not a kiana database (it has no kiana_meta table)",
            hint="give a database file written by `kiana load`",
        )
    if version in MIGRATIONS:
        raise DatabaseError(
            f"this database has kiana schema version {version} (an older kiana's), this kiana "
            f"reads {SCHEMA_VERSION}",
            hint="open it once for writing (`kiana load` into it, or kiana.load.connect(FILE)): "
            "kiana upgrades it in place, keeping every run",
        )
    if version != str(SCHEMA_VERSION):
        newer = version.isdigit() and int(version) > SCHEMA_VERSION
        raise DatabaseError(
            f"this database has kiana schema version {version}, this kiana reads {SCHEMA_VERSION}",
            hint="a newer kiana wrote it: upgrade kiana (pip install -U kiana), or load the "
            "documents into a new database file (--db NEW.duckdb)"
            if newer
            else "load the documents into a new database file (--db NEW.duckdb)",
        )


def _schema_version(con: duckdb.DuckDBPyConnection) -> str | None:
    try:
        rows = con.execute("SELECT value FROM kiana_meta WHERE key = 'schema_version'").fetchall()
    except duckdb.CatalogException:
        return None
    return str(rows[0][0]) if rows else None
