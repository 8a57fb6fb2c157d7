"""Where each run was recorded: the provenance labels of the Liger importer as a frame,
and the source they name.

``kiana import liger --git REPO`` labels every document with ``liger_csv`` (the file,
``benchmark/data/<name>.csv``) and ``liger_commit`` (the full sha of the first commit
whose version of that file holds the row); rows of Liger's CI history
(:mod:`kiana.importers.ci`) with ``liger_csv`` ``benchmarks/<folder>/benchmark.csv``
and ``liger_commit`` the commit it measured; CSV imports carry ``liger_csv`` alone and
other documents neither.

A session's *source* follows from its origin (``<liger_commit>:<liger_csv>``, see
:mod:`kiana.load.judged`), one of :data:`SOURCES`:

* ``liger-ci``: Liger's CI history (``gh-pages``: ``benchmarks/<commit>/benchmark.csv``);
* ``benchmark/data``: the CSVs of ``benchmark/data/`` read from git history;
* ``file``: CSV files given by name (no commit);
* null: documents without those labels.

>>> source_of("7644a0fc696d9d19:benchmarks/7644a0f-v0.7.0/benchmark.csv")
'liger-ci'
>>> source_of("ead96b6:benchmark/data/all_benchmark_data.csv"), source_of("all_benchmark_data.csv")
('benchmark/data', 'file')

They live in the ``labels`` table (one row per run and key),
so the runs table keeps its schema; :func:`provenance` pivots them::

    import kiana
    from kiana.culprits import provenance
    con = kiana.connect("kiana.duckdb")
    provenance(con)  # run_id, liger_commit, liger_csv (null where not recorded)
"""

from __future__ import annotations

import re

import duckdb
import polars as pl

from kiana.importers.rows import LABEL_COMMIT, LABEL_CSV

#: The columns of :func:`provenance`, in order.
PROVENANCE_COLUMNS: tuple[str, ...] = ("run_id", LABEL_COMMIT, LABEL_CSV, "source")

CI, DATA, FILE = "liger-ci", "benchmark/data", "file"
#: The sources a session may come from (module docstring).
SOURCES: tuple[str, ...] = (CI, DATA, FILE)
#: What each source is, for people.
SOURCE_TITLES = {
    CI: "Liger CI history (gh-pages benchmarks/<commit>/benchmark.csv)",
    DATA: "benchmark/data/*.csv in git history",
    FILE: "CSV files given by name",
}
_COMMIT = r"^[0-9a-fA-F]{7,40}:"
_CI_CSV = r"benchmarks/[0-9a-f]{7,40}(?:-v[^/]+)?/benchmark\.csv$"


def source_of(origin: object) -> str | None:
    """The source of a session's origin (module docstring); None without one."""
    if not isinstance(origin, str) or not origin:
        return None
    commit = re.match(_COMMIT, origin)
    if commit and re.match(_CI_CSV, origin[commit.end() :]):
        return CI
    return DATA if commit else FILE


def ci_folder_of(origin: object) -> str | None:
    """The CI folder (``7644a0f-v0.7.0``) of a session of Liger's CI history; None for
    any other origin.

    >>> ci_folder_of("7644a0fc:benchmarks/7644a0f-v0.7.0/benchmark.csv")
    '7644a0f-v0.7.0'
    """
    if source_of(origin) != CI:
        return None
    return str(origin).rsplit("/", 2)[-2]


def source_expr(origin: pl.Expr) -> pl.Expr:
    """:func:`source_of` as an expression (null origin: null)."""
    has_commit = origin.str.contains(_COMMIT)
    is_ci = origin.str.contains(_COMMIT + _CI_CSV)
    return (
        pl.when(origin.is_null())
        .then(None)
        .when(is_ci)
        .then(pl.lit(CI))
        .when(has_commit)
        .then(pl.lit(DATA))
        .otherwise(pl.lit(FILE))
    )


def provenance(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per run of the database: ``run_id``, ``liger_commit`` (full sha, or null)
    , ``liger_csv`` (``benchmark/data/<name>.csv``, ``benchmarks/<folder>/benchmark.csv``,
    a base name, or null) and ``source`` (:data:`SOURCES`, or null), sorted by
    ``run_id``.  Join it to ``kiana.runs(con)`` on ``run_id``."""
    relation = con.sql(
        """
        SELECT r.run_id,
               max(l.value) FILTER (WHERE l.key = ?) AS liger_commit,
               max(l.value) FILTER (WHERE l.key = ?) AS liger_csv
        FROM runs r LEFT JOIN labels l ON l.run_id = r.run_id AND l.key IN (?, ?)
        GROUP BY r.run_id
        ORDER BY r.run_id
        """,
        params=[LABEL_COMMIT, LABEL_CSV, LABEL_COMMIT, LABEL_CSV],
    )
    frame: pl.DataFrame = relation.pl()
    origin = pl.concat_str(
        pl.col(LABEL_COMMIT).fill_null(""), pl.lit(":"), pl.col(LABEL_CSV)
    ).str.strip_prefix(":")
    return frame.select(
        pl.col("run_id").cast(pl.String),
        pl.col(LABEL_COMMIT).cast(pl.String),
        pl.col(LABEL_CSV).cast(pl.String),
        source_expr(origin).alias("source"),
    )


#: The source of each side's session of a finding or step, :func:`with_sources` adds.
SOURCE_COLUMNS: tuple[str, ...] = ("from_source", "to_source")


def with_sources(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (findings or steps, with ``from_origin`` and ``to_origin``) with
    :data:`SOURCE_COLUMNS` (null where an origin is missing)."""
    return frame.with_columns(
        (
            source_expr(pl.col(f"{side}_origin").cast(pl.String))
            if f"{side}_origin" in frame.columns
            else pl.lit(None, pl.String)
        ).alias(f"{side}_source")
        for side in ("from", "to")
    )
