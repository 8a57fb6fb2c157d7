"""Data quality of a kiana database: what was rejected, what was warned about, the loads
and the digests that disagree.  Each function takes a DuckDB connection and returns a
small polars frame (aggregated in DuckDB, a row per problem, never per run)::

    con = kiana.connect("kiana.duckdb")
    kiana.load.quality.rejects(con)   # problem, documents, example, source, json_path
    kiana.load.quality.collect(con)   # all of them, as one DataQuality
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from kiana.errors import DatabaseError

if TYPE_CHECKING:
    import duckdb

__all__ = ["DataQuality", "collect", "conflicts", "loads", "rejects", "warnings"]

_REJECTS = """
SELECT regexp_replace(reason, ':.*', '') AS problem, count(*) AS documents,
       any_value(reason) AS example, any_value(source) AS source,
       any_value(json_path) AS json_path
FROM rejects GROUP BY 1 ORDER BY 2 DESC, 1"""

_WARNINGS = """
SELECT kind, count(*) AS runs, any_value(message) AS example, any_value(source) AS source
FROM warnings GROUP BY 1 ORDER BY 2 DESC, 1"""

_CONFLICTS = """
SELECT 'rejected' AS kind, reason AS detail, source FROM rejects
WHERE reason LIKE 'conflicting content%'
UNION ALL
SELECT 'environment digest names several GPUs',
       environment_digest || ': ' || string_agg(DISTINCT gpu, ', '), NULL
FROM runs GROUP BY environment_digest HAVING count(DISTINCT gpu) > 1
UNION ALL
SELECT 'workload digest names several workloads',
       workload_digest || ': ' || string_agg(DISTINCT kernel || '/' || workload, ', '), NULL
FROM runs GROUP BY workload_digest HAVING count(DISTINCT kernel || '/' || workload) > 1
ORDER BY 1, 2"""

_LOADS = """
SELECT load_id, started_at, kiana_version, array_to_string(inputs, ', ') AS inputs,
       read, loaded, already_present, rejected, warned
FROM loads ORDER BY load_id"""


def _frame(con: duckdb.DuckDBPyConnection, sql: str, what: str) -> pl.DataFrame:
    import duckdb

    try:
        frame: pl.DataFrame = con.sql(sql).pl()
    except duckdb.Error as exc:
        raise DatabaseError(
            f"cannot read the {what} of this database: {exc}",
            hint="is it a database kiana load wrote? Load the documents into a new file "
            "(kiana load PATH --db NEW.duckdb) and try again",
        ) from exc
    return frame


def rejects(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Rejected documents by problem (the reason up to its first colon): ``problem``,
    ``documents``, and one ``example`` reason with its ``source`` and ``json_path``."""
    return _frame(con, _REJECTS, "rejects")


def warnings(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Warnings on loaded runs by ``kind``: ``runs``, one ``example`` message, ``source``."""
    return _frame(con, _WARNINGS, "warnings")


def conflicts(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Digest conflicts: documents rejected for conflicting content, environment digests
    naming several GPUs, workload digests naming several workloads (``kind``,
    ``detail``, ``source``)."""
    return _frame(con, _CONFLICTS, "digest conflicts")


def loads(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per ``kiana load``: when, which kiana, the inputs and the counts."""
    return _frame(con, _LOADS, "loads")


def _empty(schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


_REJECTS_SCHEMA = pl.Schema({
    "problem": pl.String, "documents": pl.Int64, "example": pl.String, "source": pl.String,
    "json_path": pl.String,
})  # fmt: skip
_WARNINGS_SCHEMA = pl.Schema(
    {"kind": pl.String, "runs": pl.Int64, "example": pl.String, "source": pl.String}
)
_CONFLICTS_SCHEMA = pl.Schema({"kind": pl.String, "detail": pl.String, "source": pl.String})
_LOADS_SCHEMA = pl.Schema({
    "load_id": pl.Int32(), "started_at": pl.Datetime("us"), "kiana_version": pl.String(),
    "inputs": pl.String(), "read": pl.Int64(), "loaded": pl.Int64(), "already_present": pl.Int64(),
    "rejected": pl.Int64(), "warned": pl.Int64(),
})  # fmt: skip


@dataclass(frozen=True)
class DataQuality:
    """The four frames above; empty (for runs that never were in a database) by default."""

    rejects: pl.DataFrame = field(default_factory=lambda: _empty(_REJECTS_SCHEMA))
    warnings: pl.DataFrame = field(default_factory=lambda: _empty(_WARNINGS_SCHEMA))
    conflicts: pl.DataFrame = field(default_factory=lambda: _empty(_CONFLICTS_SCHEMA))
    loads: pl.DataFrame = field(default_factory=lambda: _empty(_LOADS_SCHEMA))

    @property
    def documents_read(self) -> int:
        """Documents read by every load (loaded, already present or rejected)."""
        return int(self.loads["read"].sum() or 0) if self.loads.height else 0

    @property
    def rejected(self) -> int:
        """Documents in the ``rejects`` table."""
        return int(self.rejects["documents"].sum() or 0) if self.rejects.height else 0


def collect(con: duckdb.DuckDBPyConnection) -> DataQuality:
    """Every data-quality frame of the database behind ``con``."""
    return DataQuality(
        rejects=rejects(con), warnings=warnings(con), conflicts=conflicts(con), loads=loads(con)
    )
