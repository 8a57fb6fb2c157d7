"""Where each run was recorded: the provenance labels of the Liger importer as a frame.

``kiana import liger --git REPO`` labels every document with ``liger_csv`` (the file,
``benchmark/data/<name>.csv``) and ``liger_commit`` (the full sha of the first commit
whose version of that file holds the row); CSV imports carry ``liger_csv`` alone and
other documents neither.  They live in the ``labels`` table (one row per run and key),
so the runs table keeps its schema; :func:`provenance` pivots them::

    import kiana
    from kiana.culprits import provenance
    con = kiana.connect("kiana.duckdb")
    provenance(con)  # run_id, liger_commit, liger_csv (null where not recorded)
"""

from __future__ import annotations

import duckdb
import polars as pl

from kiana.importers.rows import LABEL_COMMIT, LABEL_CSV

#: The columns of :func:`provenance`, in order.
PROVENANCE_COLUMNS: tuple[str, ...] = ("run_id", LABEL_COMMIT, LABEL_CSV)


def provenance(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per run of the database: ``run_id``, ``liger_commit`` (full sha, or null)
    and ``liger_csv`` (``benchmark/data/<name>.csv``, a base name, or null), sorted by
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
    return frame.select(
        pl.col("run_id").cast(pl.String),
        pl.col(LABEL_COMMIT).cast(pl.String),
        pl.col(LABEL_CSV).cast(pl.String),
    )
