"""Which runs are judged together: shards of whole GPUs, and their runs.

A shard is one GPU, or several small GPUs packed together (in name order) up to a
budget of runs: series, sessions, controls and noise floors never cross a GPU, and the
drift check needs every provider of one GPU together, so a GPU is never split.  The
budget is :data:`SHARD_RUNS` runs, lowered when DuckDB's ``memory_limit`` (``kiana
... --memory-limit``) is smaller than that many runs need while judged
(:data:`BYTES_PER_RUN`, measured by ``bench/scale.py``).  A GPU larger than the budget
is a shard of its own: the peak is set by the largest GPU, not by the database.

>>> import kiana
>>> con = kiana.connect()
>>> _ = kiana.load_paths(con, ["data/seeds"])
>>> [(s.gpus, s.runs) for s in plan(con, max_runs=1)]
[(('NVIDIA A100 SXM4-80GB',), 1), (('NVIDIA H100 80GB HBM3',), 1)]
>>> [s.runs for s in plan(con)]
[2]
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from kiana.load.judged import ORIGIN_LABELS
from kiana.load.schema import has_table
from kiana.stats.packing import pack
from kiana.vocabulary import JUDGED_COLUMNS

#: Runs per shard when memory allows: large enough that the judge's fixed cost per
#: call is small beside its work, small enough that one shard stays near 1 GiB.
SHARD_RUNS = 500_000
#: Peak bytes per run of judging one shard (the runs, the judge's frames, the results
#: kept): ~1.2 KB at 1M runs (bench/scale.py), with a margin.
BYTES_PER_RUN = 2_000

#: DuckDB's memory while shards are read, when no lower ``memory_limit`` is set: it
#: spills the one large query (every run's origin) to its temp directory beyond that.
DUCKDB_SHARE = 512 << 20

#: The order of :func:`kiana.load.judged.judged_runs` (its ORDER BY).
ORDER = ("partition_id", "provider", "observed_at", "_run_id")

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


@dataclass(frozen=True)
class Shard:
    """The GPUs judged together and their number of runs."""

    gpus: tuple[str, ...]
    runs: int


def memory_limit(con: duckdb.DuckDBPyConnection) -> int | None:
    """DuckDB's ``memory_limit`` of ``con`` in bytes (None when unlimited)."""
    (text,) = con.execute("SELECT current_setting('memory_limit')").fetchall()[0]
    found = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(text))
    if found is None or found.group(2).upper() not in _UNITS:
        return None
    return int(float(found.group(1)) * _UNITS[found.group(2).upper()])


def budget(con: duckdb.DuckDBPyConnection) -> int:
    """Runs per shard: :data:`SHARD_RUNS`, or fewer under a small ``memory_limit``."""
    limit = memory_limit(con)
    if limit is None:
        return SHARD_RUNS
    return max(1, min(SHARD_RUNS, limit // BYTES_PER_RUN))


def plan(
    con: duckdb.DuckDBPyConnection,
    *,
    max_runs: int | None = None,
    only: Collection[str] | None = None,
) -> list[Shard]:
    """The shards of the runs behind ``con``: consecutive GPUs (by name) packed up to
    ``max_runs`` runs (default :func:`budget`); a larger GPU alone.  ``only``: the
    GPUs named there (every GPU when None)."""
    limit = budget(con) if max_runs is None else max_runs
    rows = con.execute("SELECT gpu, count(*) FROM runs GROUP BY gpu ORDER BY gpu").fetchall()
    if only is not None:
        rows = [(gpu, count) for gpu, count in rows if gpu in set(only)]
    packed = pack(((str(gpu), int(count)) for gpu, count in rows), limit)
    return [Shard(tuple(gpus), size) for gpus, size in packed]


#: A run's origin from its labels (as :func:`kiana.load.judged.judged_runs`): the
#: commit and CSV labels, ``:``-joined, null when it has neither.
_ORIGIN = """nullif(concat_ws(':', max(l.value) FILTER (WHERE l.key = $commit),
                                  max(l.value) FILTER (WHERE l.key = $csv)), '') AS origin"""


def _origins_sql() -> str:
    """The origin of every run with one."""
    return f"""
        SELECT l.run_id, {_ORIGIN}
        FROM labels l WHERE l.key IN ($commit, $csv) GROUP BY l.run_id
    """


def _origins_of(con: duckdb.DuckDBPyConnection, chosen: str) -> str:
    """The origin of every run of ``chosen`` (a table of runs; only its ``run_id`` is
    read) with one: its labels joined first, then grouped (filtering the labels by a
    subquery after grouping every run's would group all 30M labels of 10M runs: 18.5 s
    against 1.3 s for one GPU).  In a database, the ``labels`` view's rows are made
    from the ``run_details`` of those runs alone (the view itself, joined, unnested
    every run's labels at 10M runs: 9.6 s against 1.7 s for the +1% windows)."""
    if not has_table(con, "run_details"):  # a lake: its labels are a table
        return f"""
            SELECT l.run_id, {_ORIGIN}
            FROM (SELECT run_id FROM {chosen}) c JOIN labels l USING (run_id)
            WHERE l.key IN ($commit, $csv) GROUP BY l.run_id
        """
    # the labels view of kiana.load.schema, of the runs chosen
    return f"""
        SELECT l.run_id, {_ORIGIN} FROM (
          SELECT run_id, key, CASE WHEN json_type(value) = 'VARCHAR'
                 THEN json_extract_string(value, '$') ELSE value::VARCHAR END AS value
          FROM (SELECT d.run_id, unnest(json_keys(d.labels)) AS key,
                       unnest(json_extract(d.labels, '$.*')) AS value
                FROM (SELECT run_id FROM {chosen}) c JOIN run_details d USING (run_id))
          WHERE key IN ($commit, $csv)) l
        GROUP BY l.run_id
    """


def write_origins(
    con: duckdb.DuckDBPyConnection, folder: Path, gpus: Collection[str] | None = None
) -> Path:
    """Every run's origin (of the ``gpus`` named: the shards to be judged), once, as
    Parquet partitioned by GPU under ``folder``: the labels are one long table, read in
    one pass here instead of once per shard."""
    commit, csv = ORIGIN_LABELS
    target = folder / "origins"
    quoted = "'" + str(target).replace("'", "''") + "'"
    params: dict[str, object] = {"commit": commit, "csv": csv}
    if gpus is None:
        chosen, runs = "", "runs"
        source = _origins_sql()
    else:  # those GPUs' runs (the constant list prunes row groups), read once
        params |= {f"g{i}": gpu for i, gpu in enumerate(sorted(gpus))}
        listed = ", ".join(f"$g{i}" for i in range(len(gpus))) or "NULL"
        chosen = (
            f"WITH chosen AS MATERIALIZED (SELECT run_id, gpu FROM runs WHERE gpu IN ({listed}))"
        )
        runs, source = "chosen", _origins_of(con, "chosen")
    con.execute(
        f"COPY ({chosen} SELECT r.gpu, o.run_id, o.origin FROM ({source}) o "
        f"JOIN {runs} r USING (run_id)) "
        f"TO {quoted} (FORMAT parquet, PARTITION_BY (gpu), OVERWRITE_OR_IGNORE)",
        params,
    )
    return target


def shard_runs(
    con: duckdb.DuckDBPyConnection,
    shard: Shard | None = None,
    *,
    origins: Path | None = None,
    where: str = "",
    params: dict[str, object] | None = None,
    join: str = "",
) -> pl.DataFrame:
    """The judged columns and ``origin`` of the runs of ``shard`` (every run when
    None): :func:`kiana.load.judged.judged_runs` with ``WHERE gpu IN (...)``, in its
    order.  ``origins``: the folder :func:`write_origins` wrote (empty: no run has an
    origin), read for this shard's GPUs only; without it the labels are read.
    ``where``: a further SQL condition on ``runs`` (its ``params`` named ``$...``);
    ``join``: a join of ``runs`` with a table that matches each run at most once (the
    runs it matches are kept).  With either, the runs chosen are read once (a
    materialized CTE), for their rows and for their origins."""
    columns = ", ".join(f'r."{c}"' for c in JUDGED_COLUMNS)
    gpus = list(shard.gpus) if shard is not None else []
    listed = ", ".join(f"$g{i}" for i in range(len(gpus)))
    conditions = [f"runs.gpu IN ({listed})"] if gpus else []
    conditions += [f"({where})"] if where else []
    some = bool(where or join)
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    params = {**(params or {}), **{f"g{i}": gpu for i, gpu in enumerate(gpus)}}
    if origins is not None and gpus and not any(origins.rglob("*.parquet")):
        source = "SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS origin WHERE false"
    elif origins is not None and gpus:
        pattern = "'" + str(origins / "**" / "*.parquet").replace("'", "''") + "'"
        source = (
            f"SELECT run_id, origin FROM read_parquet({pattern}, hive_partitioning = true, "
            f"hive_types_autocast = false) WHERE gpu IN ({listed})"
        )
    else:
        commit, csv = ORIGIN_LABELS
        params |= {"commit": commit, "csv": csv}
        source = _origins_of(con, "chosen") if some else _origins_sql()
    # Sorted here rather than by DuckDB's ORDER BY (the same byte order of strings, and
    # run_id last makes it total): DuckDB then streams the rows out in batches, with no
    # sort of a whole shard held in its memory.
    relation = con.sql(
        f"""
        WITH chosen AS {"MATERIALIZED " if some else ""}(SELECT runs.* FROM runs {join} {where}),
        origins AS ({source})
        SELECT {columns}, o.origin, r.run_id AS _run_id
        FROM chosen r LEFT JOIN origins o USING (run_id)
        """,
        params=params,
    )
    # DuckDB 2 names it to_arrow_reader; 1.x fetch_arrow_reader
    reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    frame = pl.from_arrow(reader(1 << 16).read_all())
    assert isinstance(frame, pl.DataFrame)
    return frame.sort(*ORDER).drop("_run_id")


def selectable(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The distinct kernel, GPU, provider and pass of the runs: what a
    :class:`kiana.pipeline.Selection` is checked against, without reading every run."""
    frame: pl.DataFrame = con.sql(
        'SELECT DISTINCT kernel, gpu, provider, "pass" FROM runs ORDER BY ALL'
    ).pl()
    return frame
