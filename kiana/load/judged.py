"""The runs the statistics read, with where each was recorded.

:func:`judged_runs` returns only the runs-table columns :func:`kiana.stats.judge`
reads, plus ``origin``: ``<liger_commit>:<liger_csv>`` (or the file alone) for rows
imported from Liger's CSVs, whose labels say which file at which commit recorded
them; null for other documents.  Sessions never span two origins
(:mod:`kiana.stats.sessions`).
"""

from __future__ import annotations

import duckdb
import polars as pl

from kiana.vocabulary import JUDGED_COLUMNS

#: The run labels the Liger importer writes (see kiana.importers).
ORIGIN_LABELS: tuple[str, str] = ("liger_commit", "liger_csv")


def judged_runs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The judged columns of every run and its ``origin`` (see the module docstring)."""
    columns = ", ".join(f'r."{c}"' for c in JUDGED_COLUMNS)
    commit, csv = ORIGIN_LABELS
    relation = con.sql(
        f"""
        WITH origins AS (
            SELECT run_id,
                   nullif(concat_ws(':', max(value) FILTER (WHERE key = ?),
                                         max(value) FILTER (WHERE key = ?)), '') AS origin
            FROM labels WHERE key IN (?, ?) GROUP BY run_id
        )
        SELECT {columns}, o.origin
        FROM runs r LEFT JOIN origins o USING (run_id)
        ORDER BY r.partition_id, r.provider, r.observed_at, r.run_id
        """,
        params=[commit, csv, commit, csv],
    )
    frame: pl.DataFrame = relation.pl()
    return frame
