"""The tables of a kiana database as Parquet, and back as a DuckDB connection.

``export_parquet(con, out)`` writes every kiana table under ``out``:

* ``runs/`` partitioned hive style by GPU and kernel
  (``runs/gpu=NVIDIA H100 80GB HBM3/kernel=layer_norm/data_0.parquet``), so an engine
  reading one GPU or kernel opens only its folders;
* every other table (``measurements``, ``labels``, ``protocols``, ``environments``,
  ``rejects``, ``warnings``, ``loads``, ``kiana_meta``) as one ``<table>.parquet``;
* ``kiana-export.json``: what was written, with row counts, to check a copy against.

``connect_parquet(out)`` opens an in-memory DuckDB connection whose views carry the
tables' names and columns, so the queries written for a kiana database (``kiana.load.
runs``, ``kiana.group.partitions``, ``kiana.stats.judge`` on ``runs``) run unchanged.
``out`` may be a local folder or, with DuckDB's httpfs extension, an ``s3://`` /
``gs://`` / ``https://`` prefix (credentials from a DuckDB ``CREATE SECRET``).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from kiana.errors import DatabaseError, InputError

__all__ = ["MANIFEST", "PARTITION_BY", "TABLES", "Exported", "connect_parquet", "export_parquet"]

#: The tables exported, in this order; ``runs`` is partitioned, the rest single files.
TABLES: tuple[str, ...] = (
    "runs",
    "measurements",
    "labels",
    "protocols",
    "environments",
    "rejects",
    "warnings",
    "loads",
    "kiana_meta",
)
#: Hive partition columns of ``runs``: comparability never crosses a GPU or a kernel.
PARTITION_BY: tuple[str, ...] = ("gpu", "kernel")
MANIFEST = "kiana-export.json"
FORMAT = "kiana-parquet/1"


@dataclass(frozen=True)
class Exported:
    """What :func:`export_parquet` wrote: the folder and the rows per table."""

    path: Path
    rows: dict[str, int]
    files: int


def _remote(location: str) -> bool:
    return "://" in location


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [str(r[0]) for r in rows]


def export_parquet(
    con: duckdb.DuckDBPyConnection, out: str | os.PathLike[str], *, overwrite: bool = False
) -> Exported:
    """Write the kiana tables of ``con`` as Parquet under the folder ``out``.

    ``out`` must not exist or be empty (``overwrite`` replaces a previous export)."""
    root = Path(out)
    if root.exists() and any(root.iterdir()):
        if not overwrite or not (root / MANIFEST).exists():
            raise InputError(
                f"{root}: the folder exists and is not empty",
                hint="give a new folder, or --overwrite to replace a previous kiana export",
            )
        shutil.rmtree(root)
    missing = [t for t in TABLES if not _columns(con, t)]
    if missing:
        raise DatabaseError(
            f"not a kiana database: no table {', '.join(missing)}",
            hint="export a database made by `kiana load`",
        )
    root.mkdir(parents=True, exist_ok=True)
    rows: dict[str, int] = {}
    try:
        for table in TABLES:
            (count,) = con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0]
            rows[table] = int(count)
            if table == "runs":
                # The partition columns live in the folder names; ORDER BY keeps each
                # file's rows in series order, which is what readers scan by.
                target = root / "runs"
                con.execute(
                    f"COPY (SELECT * FROM runs ORDER BY {', '.join(PARTITION_BY)}, "
                    "partition_id, provider, observed_at, run_id) "
                    f"TO {_quote(os.fspath(target))} (FORMAT parquet, COMPRESSION zstd, "
                    f"PARTITION_BY ({', '.join(PARTITION_BY)}), OVERWRITE_OR_IGNORE)"
                )
            else:
                target = root / f"{table}.parquet"
                con.execute(
                    f'COPY (SELECT * FROM "{table}") TO {_quote(os.fspath(target))} '
                    "(FORMAT parquet, COMPRESSION zstd)"
                )
    except duckdb.IOException as exc:
        raise DatabaseError(
            f"{root}: cannot write the export ({exc})", hint="check free disk space and permissions"
        ) from exc
    files = sum(1 for p in root.rglob("*.parquet"))
    manifest = {
        "format": FORMAT,
        "tables": list(TABLES),
        "partitioned": {"runs": list(PARTITION_BY)},
        "rows": rows,
        "columns": {t: _columns(con, t) for t in TABLES},
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return Exported(root, rows, files)


def _source(location: str, table: str) -> str:
    base = location.rstrip("/")
    if table == "runs":
        return (
            f"read_parquet({_quote(base + '/runs/**/*.parquet')}, hive_partitioning = true, "
            "hive_types_autocast = false)"
        )
    return f"read_parquet({_quote(base + '/' + table + '.parquet')})"


def attach_parquet(con: duckdb.DuckDBPyConnection, location: str | os.PathLike[str]) -> None:
    """Create, in ``con``, one view per kiana table over the export at ``location``,
    with the columns in the order of the database's tables."""
    text = os.fspath(location)
    if not _remote(text):
        root = Path(text)
        if not (root / MANIFEST).exists():
            raise InputError(
                f"{root}: not a kiana Parquet export (no {MANIFEST})",
                hint="write one with `kiana export --parquet DIR --db FILE`",
            )
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        columns: dict[str, list[str]] = manifest["columns"]
    else:  # object storage: the manifest through DuckDB's httpfs, like the tables
        (content,) = con.execute(
            "SELECT content FROM read_text(?)", [text.rstrip("/") + "/" + MANIFEST]
        ).fetchall()[0]
        columns = json.loads(content)["columns"]
    for table in TABLES:
        names = columns.get(table)
        select = ", ".join(f'"{c}"' for c in names) if names else "*"
        con.execute(
            f'CREATE OR REPLACE VIEW "{table}" AS SELECT {select} FROM {_source(text, table)}'
        )


def connect_parquet(location: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection whose views ``runs``, ``measurements``, ...
    read the Parquet export at ``location`` (a folder, or an ``s3://`` prefix once
    httpfs and a secret are set up): the queries of a kiana database run unchanged."""
    con = duckdb.connect(":memory:")
    con.execute("SET preserve_insertion_order = false")
    if _remote(os.fspath(location)):
        con.execute("INSTALL httpfs")
        con.execute("LOAD httpfs")
    try:
        attach_parquet(con, location)
    except BaseException:
        con.close()
        raise
    return con
