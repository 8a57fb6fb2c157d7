"""The stored judgement's per-unit tables: their names and types (:data:`TABLES`,
:func:`schemas`), writing a unit's rows into them or to Parquet for a worker
(:func:`insert_unit`, :func:`write_unit`), and what is recorded per GPU once a unit is
written (:func:`finish`).  Below :mod:`kiana.shards.store` (what is stored and when it is
judged again), :mod:`kiana.shards.worker` and :mod:`kiana.shards.resumed`, which all write.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from kiana.shards.unit import Unit

if TYPE_CHECKING:
    from kiana.stats import Coverage, JudgeOptions

#: The per-unit tables and the frame of :class:`~kiana.shards.unit.Unit` each holds.
TABLES: dict[str, str] = {
    "judged_steps": "steps", "judged_findings": "findings", "judged_outliers": "outliers",
    "judged_aa": "aa", "judged_points": "points", "judged_segments": "segments",
    "judged_changepoints": "changepoints", "judged_calibration": "calibration",
    "judged_renames": "renames",
}  # fmt: skip


def loads(con: duckdb.DuckDBPyConnection) -> dict[int, int]:
    """Every load id of the runs table and its runs."""
    rows = con.execute("SELECT load_id, count(*) FROM runs GROUP BY load_id").fetchall()
    return {int(a): int(b) for a, b in rows}


@cache
def schemas() -> dict[str, dict[str, pl.DataType]]:
    """The column types of every per-unit table: those of the frames of a judge of no
    run (origins are strings even where no finding has one)."""
    from kiana.shards.unit import judge_unit
    from kiana.stats import JudgeOptions
    from kiana.vocabulary import JUDGED_COLUMNS

    dtypes: dict[str, pl.DataType] = {c: pl.String() for c in JUDGED_COLUMNS}
    dtypes |= {"observed_at": pl.Datetime("us"), "median": pl.Float64(), "p20": pl.Float64()}
    dtypes |= {"p80": pl.Float64(), "origin": pl.String()}
    _, unit = judge_unit(pl.DataFrame(schema=dtypes), JudgeOptions())
    out = {table: dict(getattr(unit, name).schema) for table, name in TABLES.items()}
    for column in ("from_origin", "to_origin"):
        out["judged_findings"][column] = pl.String()
    return out


def shaped(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the columns and types of ``table``."""
    return frame.select(pl.col(c).cast(t) for c, t in schemas()[table].items())


def insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    rows = shaped(table, frame)  # noqa: F841 (read by DuckDB)
    con.execute(f"INSERT INTO {table} SELECT * FROM rows")


def insert_unit(con: duckdb.DuckDBPyConnection, unit: Unit | dict[str, Path]) -> None:
    """Insert one unit's frames (or the Parquet files a worker wrote of them)."""
    for table, name in TABLES.items():
        if isinstance(unit, Unit):
            insert(con, table, getattr(unit, name))
        else:
            quoted = "'" + str(unit[name]).replace("'", "''") + "'"
            con.execute(f"INSERT INTO {table} SELECT * FROM read_parquet({quoted})")


def write_unit(unit: Unit, folder: Path, index: int) -> dict[str, Path]:
    """Write one unit's frames as Parquet files (a worker's output)."""
    paths: dict[str, Path] = {}
    for table, name in TABLES.items():
        path = folder / f"{name}-{index:05d}.parquet"
        shaped(table, getattr(unit, name)).write_parquet(path, compression="lz4")
        paths[name] = path
    paths["gpus"] = folder / f"gpus-{index:05d}.parquet"
    unit.gpus.write_parquet(paths["gpus"])
    return paths


def finish(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions,
    gpus: pl.DataFrame,
    touched: list[str] | None = None,
) -> None:
    """Record, for the GPUs judged (``gpus``: :attr:`Unit.gpus` rows; ``touched``: every
    GPU whose rows changed, default those), their counts, coverage and version firsts,
    and the loads the judgement now rests on."""
    names = sorted(set(touched if touched is not None else gpus["gpu"].to_list()))
    if names:
        con.execute("DELETE FROM judged_gpus WHERE gpu IN (SELECT unnest($g))", {"g": names})
        con.execute("DELETE FROM judged_versions WHERE gpu IN (SELECT unnest($g))", {"g": names})
    counted = dict(
        con.execute(
            "SELECT gpu, count(*) FROM runs WHERE gpu IN (SELECT unnest($g)) GROUP BY gpu",
            {"g": names},
        ).fetchall()
    )
    known = {str(r["gpu"]): r for r in gpus.iter_rows(named=True)}
    for gpu in names:
        row = known.get(gpu, {"steps": 0, "prefix": 0, "cut": None, "runs_judged": 0})
        covered = json.dumps(coverage_of(con, gpu, options).to_dict())
        con.execute(
            "INSERT INTO judged_gpus VALUES (?, ?, ?, ?, ?, ?, ?)",
            [gpu, int(counted.get(gpu, 0)), row["runs_judged"], row["steps"], row["prefix"],
             row["cut"], covered],
        )  # fmt: skip
    con.execute(
        "INSERT INTO judged_versions SELECT gpu, version, min(observed_at) FROM runs "
        "WHERE gpu IN (SELECT unnest($g)) AND status = 'passed' AND median IS NOT NULL "
        "AND NOT isnan(median) GROUP BY ALL",
        {"g": names},
    )
    con.execute(
        "UPDATE judged_meta SET value = ? WHERE key = 'loads'",
        [json.dumps({str(k): v for k, v in sorted(loads(con).items())})],
    )


def coverage_of(con: duckdb.DuckDBPyConnection, gpu: str, options: JudgeOptions) -> Coverage:
    """The coverage of one GPU (:func:`kiana.stats.coverage.coverage` of its stored
    points, steps, A/A steps and renamed workloads, and every series of its runs)."""
    from kiana.stats.coverage import coverage

    keys = "partition_id, provider, metric"
    where = {"g": gpu}
    points = con.sql(
        f"SELECT {keys}, conflict FROM judged_points WHERE gpu = $g", params=where
    ).pl()
    steps = con.sql(
        f"SELECT {keys}, bool_and(unstable) AS unstable FROM judged_steps WHERE gpu = $g "
        "GROUP BY ALL",
        params=where,
    ).pl()
    aa = con.sql(f"SELECT DISTINCT {keys} FROM judged_aa WHERE gpu = $g", params=where).pl()
    runs = con.sql(f"SELECT DISTINCT {keys}, role FROM runs WHERE gpu = $g", params=where).pl()
    renames = con.sql("SELECT * FROM judged_renames WHERE gpu = $g", params=where).pl()
    return coverage(points, steps, options, runs, reruns=aa, renames=renames)
