"""The tables of a kiana database as Parquet, and back as a DuckDB connection.

``export_parquet(con, out)`` writes every kiana table under ``out``, a lake that many
databases (CI writers) may export into (``append=True``), each under its own name
(``<writer>``: a hash of the database's loads):

* ``runs/`` partitioned hive style by GPU and kernel
  (``runs/gpu=NVIDIA H100 80GB HBM3/kernel=layer_norm/<writer>_0.parquet``), so an
  engine reading one GPU or kernel opens only its folders; written one GPU at a time,
  so memory is set by the largest GPU;
* every other table (``measurements``, ``labels``, ``protocols``, ``environments``,
  ``rejects``, ``warnings``, ``loads``, ``kiana_meta``) as ``<table>/<writer>_0.parquet``;
* ``kiana-export.json``: the format and every table's columns (the same for every
  writer), and ``exports/<writer>.json``: what one writer wrote, with row counts.

``connect_parquet(out)`` opens an in-memory DuckDB connection whose views carry the
tables' names and columns, so the queries written for a kiana database (``kiana.load.
runs``, ``kiana.group.partitions``, ``kiana.analyze``) run unchanged; ``runs`` holds
one row per ``run_id`` however many writers exported it.
``out`` may be a local folder or, with DuckDB's httpfs extension, an ``s3://`` /
``gs://`` / ``https://`` prefix (credentials from a DuckDB ``CREATE SECRET``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from kiana._version import __version__
from kiana.errors import DatabaseError, InputError
from kiana.safe import open_folder, refuse_links, write_text

__all__ = [
    "MANIFEST",
    "PARTITION_BY",
    "TABLES",
    "Exported",
    "Written",
    "connect_parquet",
    "export_parquet",
]

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
FORMAT = "kiana-parquet/2"
#: The first layout: one ``<table>.parquet`` per table beside ``runs/`` (still read).
FORMAT_1 = "kiana-parquet/1"


@dataclass(frozen=True)
class Written:
    """A folder of Parquet tables that kiana wrote, and the rows it wrote per table."""

    path: Path
    rows: dict[str, int]


@dataclass(frozen=True)
class Exported(Written):
    """What :func:`export_parquet` wrote: the folder, the rows per table, the files."""

    files: int
    writer: str  #: the name of this database's files in the lake


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


def _writer(con: duckdb.DuckDBPyConnection) -> str:
    """This database's name in a lake: 16 hex digits of the sha256 of its ``loads``
    (the same database exports under the same name, so exporting it again replaces
    its own files; two databases never share one)."""
    rows = con.execute("SELECT * FROM loads ORDER BY ALL").fetchall()
    (runs,) = con.execute("SELECT count(*) FROM runs").fetchall()[0]
    text = repr((rows, runs)).encode()
    return hashlib.sha256(text).hexdigest()[:16]


def _prepare(root: Path, *, overwrite: bool, append: bool) -> None:
    """Check what is at ``root`` before writing an export there."""
    refuse_links(root)
    if root.exists() and not root.is_dir():
        raise InputError(
            f"{root}: is a file, not a folder",
            hint="--parquet names a folder: the runs are written as one folder per GPU "
            "and kernel beneath it",
        )
    if not root.exists() or not any(root.iterdir()):
        return
    if not (root / MANIFEST).exists():
        raise InputError(
            f"{root}: the folder exists and is not empty",
            hint="give a new folder, or --overwrite / --append for a previous kiana export",
        )
    if overwrite:
        shutil.rmtree(root)
    elif not append:
        raise InputError(
            f"{root}: the folder exists and is not empty (a kiana export)",
            hint="--append adds this database's files to it, --overwrite replaces it",
        )


def _layout(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    return {
        "format": FORMAT,
        "tables": list(TABLES),
        "partitioned": {"runs": list(PARTITION_BY)},
        "columns": {t: _columns(con, t) for t in TABLES},
    }


def _write_manifest(root: Path, layout: dict[str, object]) -> None:
    """The lake's manifest: the same text for every writer, so writers may race."""
    path = root / MANIFEST
    if path.exists():
        there = json.loads(path.read_text(encoding="utf-8"))
        if there.get("format") != FORMAT or there.get("columns") != layout["columns"]:
            raise InputError(
                f"{root}: a kiana export of another format or schema "
                f"({there.get('format')!r}, this kiana writes {FORMAT!r})",
                hint="export into a new folder, or --overwrite this one",
            )
        return
    write_text(path, json.dumps(layout, indent=1) + "\n")


def _copy_runs(con: duckdb.DuckDBPyConnection, root: Path, writer: str) -> None:
    """``runs`` one GPU at a time (DuckDB sorts and buffers one GPU's rows, never the
    table), into ``runs/gpu=<gpu>/kernel=<kernel>/<writer>_<i>.parquet``."""
    target = _quote(os.fspath(root / "runs"))
    gpus = [str(g) for (g,) in con.execute("SELECT DISTINCT gpu FROM runs ORDER BY 1").fetchall()]
    for gpu in gpus:
        # ORDER BY keeps each file's rows in series order, which readers scan by.
        con.execute(
            f"COPY (SELECT * FROM runs WHERE gpu = {_quote(gpu)} ORDER BY kernel, "
            "partition_id, provider, observed_at, run_id) "
            f"TO {target} (FORMAT parquet, COMPRESSION zstd, "
            f"PARTITION_BY ({', '.join(PARTITION_BY)}), OVERWRITE_OR_IGNORE, "
            f"FILENAME_PATTERN {_quote(writer + '_{i}')})"
        )


def export_parquet(
    con: duckdb.DuckDBPyConnection,
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    append: bool = False,
) -> Exported:
    """Write the kiana tables of ``con`` as Parquet under the folder ``out``.

    ``out`` must not exist or be empty; ``overwrite`` replaces a previous export,
    ``append`` adds this database's files to it (many writers, one lake: the files of
    each are named by :func:`_writer`, readers deduplicate runs by ``run_id``)."""
    root = Path(out)
    _prepare(root, overwrite=overwrite, append=append)
    missing = [t for t in TABLES if not _columns(con, t)]
    if missing:
        raise DatabaseError(
            f"not a kiana database: no table {', '.join(missing)}",
            hint="export a database made by `kiana load`",
        )
    os.close(open_folder(root, mkdirs=True))
    refuse_links(root, below=True)  # DuckDB's COPY opens what it writes itself
    layout = _layout(con)
    _write_manifest(root, layout)
    writer = _writer(con)
    for old in root.glob(f"**/{writer}_*.parquet"):  # this database's previous export
        old.unlink()
    rows: dict[str, int] = {}
    try:
        for table in TABLES:
            (count,) = con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0]
            rows[table] = int(count)
            if table == "runs":
                _copy_runs(con, root, writer)
                continue
            (root / table).mkdir(exist_ok=True)
            target = root / table / f"{writer}_0.parquet"
            con.execute(
                f'COPY (SELECT * FROM "{table}") TO {_quote(os.fspath(target))} '
                "(FORMAT parquet, COMPRESSION zstd)"
            )
    except duckdb.IOException as exc:
        raise DatabaseError(
            f"{root}: cannot write the export ({exc})", hint="check free disk space and permissions"
        ) from exc
    files = sum(1 for _ in root.glob(f"**/{writer}_*.parquet"))
    record = {"writer": writer, "rows": rows, "files": files, "kiana": __version__}
    write_text(
        root / "exports" / f"{writer}.json", json.dumps(record, indent=1) + "\n", mkdirs=True
    )
    return Exported(root, rows, files, writer)


def _source(location: str, table: str, version: str) -> str:
    base = location.rstrip("/")
    if table == "runs":
        return (
            f"read_parquet({_quote(base + '/runs/**/*.parquet')}, hive_partitioning = true, "
            "hive_types_autocast = false, union_by_name = true)"
        )
    if version == FORMAT_1:
        return f"read_parquet({_quote(base + '/' + table + '.parquet')})"
    return f"read_parquet({_quote(base + '/' + table + '/*.parquet')}, union_by_name = true)"


def _view(table: str, select: str, source: str) -> str:
    """The view of one table; ``runs`` keeps one row per ``run_id`` (writers may
    export the same document: its rows are the same but for where it was loaded).
    Partitioned by ``gpu`` too, which ``run_id`` determines, so that a reader's
    ``WHERE gpu = ...`` is pushed below the deduplication into the scan."""
    if table != "runs":
        return f'CREATE OR REPLACE VIEW "{table}" AS SELECT {select} FROM {source}'
    return (
        f'CREATE OR REPLACE VIEW "runs" AS SELECT {select} FROM {source} '
        "QUALIFY row_number() OVER (PARTITION BY gpu, run_id ORDER BY load_id, source) = 1"
    )


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
    else:  # object storage: the manifest through DuckDB's httpfs, like the tables
        (content,) = con.execute(
            "SELECT content FROM read_text(?)", [text.rstrip("/") + "/" + MANIFEST]
        ).fetchall()[0]
        manifest = json.loads(content)
    columns: dict[str, list[str]] = manifest["columns"]
    version = str(manifest.get("format", FORMAT_1))
    for table in TABLES:
        names = columns.get(table)
        if table == "runs" and names and "liger_version" in names:
            select = _schema_2_runs(names)
        else:
            select = ", ".join(f'"{c}"' for c in names) if names else "*"
        con.execute(_view(table, select, _source(text, table, version)))


def _schema_2_runs(names: list[str]) -> str:
    """The columns of the ``runs`` of a lake an older kiana exported (schema version 2:
    ``liger_version``, no ``harness`` nor ``role``) as this kiana's, read as that kiana
    read them: by the Liger profile (as :mod:`kiana.load.schema` migrates a database)."""
    from kiana.harness import DEFAULT, role_sql
    from kiana.load.schema import RUN_COLUMNS

    harness = "'" + DEFAULT.name.replace("'", "''") + "'"
    made = {
        "version": '"liger_version"',
        "harness": harness,
        "role": role_sql(harness, '"provider"', "NULL"),
    }
    return ", ".join(
        f'{made[name]} AS "{name}"' if name in made else f'"{name}"'
        for name, _ in RUN_COLUMNS
        if name in made or name in names
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
