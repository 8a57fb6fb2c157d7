"""Judging a lake on Apache Spark: one GPU per group, each through kiana's own judge.

The plan, in Spark's terms::

    runs   = read.parquet(lake/runs)              # hive partitions gpu=, kernel=
               .dropDuplicates(["run_id"])        # many writers, one run each
    origin = read.parquet(lake/labels)            # liger_commit:liger_csv per run
    judged = runs.join(origin, "run_id", "left")
               .groupBy("gpu").applyInArrow(judge_gpu, ENVELOPE)   # one GPU per call
    judged.write.parquet(out/_staging)            # judged once
    for table in TABLES: staging[table].mapInArrow(decode, schema).write.parquet(out/table)

``judge_gpu`` receives one GPU's runs as an Arrow table, sorts them as
:func:`kiana.load.judged.judged_runs` does and calls :func:`kiana.shards.judge_shard`;
it returns an *envelope*: one row per output table and chunk, the frame as Arrow IPC
bytes, since one Spark function returns one schema and a judgement is six frames.  The
envelope is written once and each table decoded from it, so the judge runs once per GPU
whatever is written.  The session is local (``local[2]`` by default) unless a master
URL is given, binds to 127.0.0.1 without its UI, and downloads nothing: PySpark ships
its jars and ``spark.jars.packages`` is never set.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from kiana.lake.tables import TABLES, conform, schema
from kiana.stats import Coverage, JudgeOptions
from kiana.vocabulary import JUDGED_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

#: Rows per Arrow IPC payload of the envelope (bounds one Spark row's size: ~1 MB).
CHUNK_ROWS = 5_000
ENVELOPE = "table string, gpu string, part int, payload binary"
#: The order :func:`kiana.load.judged.judged_runs` returns runs in.
ORDER = ("partition_id", "provider", "observed_at", "run_id")


def session(master: str = "local[2]", *, memory: str = "4g") -> SparkSession:
    """A Spark session for kiana: ``master``, the driver's ``memory``, no UI, loopback
    only, workers on this Python, partition values read as strings, UTC."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder: Any = SparkSession.builder.master(master).appName("kiana")
    settings = {
        "spark.ui.enabled": "false",
        "spark.driver.memory": memory,
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.inferTimestampNTZ.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # the envelope's rows are payloads of ~1 MB: Parquet's vectorized reader reads
        # 4096 rows a batch by default, 4 GB of them (a 1M-run lake ran out of heap)
        "spark.sql.parquet.columnarReaderBatchSize": "64",
        # and are written in row groups of 32 MB, not 128 MB per task
        "spark.hadoop.parquet.block.size": str(32 << 20),
    }
    if master.startswith("local"):
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark: SparkSession = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _schema_2_runs(runs: DataFrame) -> DataFrame:
    """The runs of a lake an older kiana exported (``liger_version``, no ``harness`` nor
    ``role``) as that kiana read them: by the Liger profile (``kiana.export`` reads
    them so too)."""
    from pyspark.sql import functions as F

    from kiana.harness import DEFAULT, role_sql

    harness = "'" + DEFAULT.name.replace("'", "''") + "'"
    return (
        runs.withColumnRenamed("liger_version", "version")
        .withColumn("harness", F.lit(DEFAULT.name))
        .withColumn("role", F.expr(role_sql(harness, "provider", "NULL")))
    )


def judged_runs(spark: SparkSession, lake: str) -> DataFrame:
    """The lake's runs, one per ``run_id``, with the columns the judge reads and their
    ``origin`` (as :func:`kiana.load.judged.judged_runs` makes it)."""
    from pyspark.sql import functions as F

    from kiana.load.judged import ORIGIN_LABELS

    base = lake.rstrip("/")
    manifest = json.loads(Path(base, "kiana-export.json").read_text(encoding="utf-8"))
    runs = spark.read.option("basePath", f"{base}/runs").parquet(f"{base}/runs")
    if "liger_version" in runs.columns:  # exported by an older kiana (schema version 2)
        runs = _schema_2_runs(runs)
    runs = runs.select("run_id", *JUDGED_COLUMNS).dropDuplicates(["run_id"])
    first = manifest.get("format") == "kiana-parquet/1"
    labels = spark.read.parquet(f"{base}/labels.parquet" if first else f"{base}/labels")
    commit, csv = ORIGIN_LABELS
    origins = (
        labels.where(F.col("key").isin(commit, csv))
        .groupBy("run_id")
        .agg(
            F.max(F.when(F.col("key") == commit, F.col("value"))).alias("_commit"),
            F.max(F.when(F.col("key") == csv, F.col("value"))).alias("_csv"),
        )
        .select(
            "run_id",
            F.expr("nullif(concat_ws(':', _commit, _csv), '')").alias("origin"),
        )
    )
    return runs.join(origins, "run_id", "left")


def judge_gpu(options: JudgeOptions, table: pa.Table) -> pa.Table:
    """One GPU's runs (an Arrow table from Spark) -> the envelope of its judgement."""
    import pyarrow as pa

    from kiana.shards import judge_shard

    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    frame = frame.with_columns(pl.col("observed_at").cast(pl.Datetime("us")))
    runs = frame.sort(list(ORDER)).drop("run_id")
    gpu = str(runs["gpu"][0]) if runs.height else ""
    judgement = judge_shard(runs, options)
    rows: dict[str, list[Any]] = {"table": [], "gpu": [], "part": [], "payload": []}
    for name in TABLES:
        frame = conform(getattr(judgement, name), name)
        for part, chunk in enumerate(frame.iter_slices(CHUNK_ROWS)):
            rows["table"].append(name)
            rows["gpu"].append(gpu)
            rows["part"].append(part)
            rows["payload"].append(_ipc(chunk.to_arrow().cast(arrow_schema(name))))
    rows["table"].append("coverage")
    rows["gpu"].append(gpu)
    rows["part"].append(0)
    rows["payload"].append(json.dumps(judgement.coverage.to_dict()).encode())
    return pa.table(
        rows,
        schema=pa.schema(
            [("table", pa.string()), ("gpu", pa.string()), ("part", pa.int32()),
             ("payload", pa.binary())]
        ),
    )  # fmt: skip


def _typed(options: JudgeOptions) -> Any:
    """:func:`judge_gpu` with ``options`` bound, annotated with the Arrow types from
    which PySpark tells an ``applyInArrow`` function's kind."""
    import pyarrow as pa

    def judge(table: pa.Table) -> pa.Table:
        return judge_gpu(options, table)

    judge.__annotations__ = {"table": pa.Table, "return": pa.Table}
    return judge


def _ipc(table: pa.Table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The rows of every envelope payload of ``batches`` (``mapInArrow``)."""
    import pyarrow as pa

    for batch in batches:
        for payload in batch.column("payload").to_pylist():
            with pa.ipc.open_stream(payload) as reader:
                yield from reader


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow types of ``table`` that Spark's types map to one for one."""
    import pyarrow as pa

    types = {
        pl.String: pa.string(),
        pl.Float64: pa.float64(),
        pl.Int64: pa.int64(),
        pl.Boolean: pa.bool_(),
    }
    return pa.schema(
        [
            (name, pa.timestamp("us") if dtype == pl.Datetime("us") else types[dtype.base_type()])
            for name, dtype in schema(table).items()
        ]
    )


def spark_schema(table: str) -> str:
    """``table``'s columns as a Spark DDL schema string."""
    names = {"string": "string", "double": "double", "int64": "bigint", "bool": "boolean"}
    columns = []
    for field in arrow_schema(table):
        kind = (
            "timestamp_ntz" if str(field.type).startswith("timestamp") else names[str(field.type)]
        )
        columns.append(f"`{field.name}` {kind}")
    return ", ".join(columns)


def judge_on_spark(
    lake: str, out: Path, options: JudgeOptions, *, master: str = "local[2]"
) -> tuple[dict[str, int], int, list[Coverage]]:
    """Judge the lake at ``lake`` on Spark, write the tables under ``out``: rows per
    table, GPUs judged, and each GPU's coverage."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    spark = session(master)
    staging = out / "_staging"
    try:
        runs = judged_runs(spark, lake)
        gpus = runs.select("gpu").distinct().count()
        spark.conf.set("spark.sql.shuffle.partitions", str(max(1, gpus)))
        envelope = runs.groupBy("gpu").applyInArrow(_typed(options), ENVELOPE)
        envelope.write.parquet(str(staging))
        staged = spark.read.parquet(str(staging))
        rows: dict[str, int] = {}
        for name in TABLES:
            decoded = (
                staged.where(F.col("table") == name)
                .orderBy("gpu", "part")
                .select("payload")
                .mapInArrow(decode, spark_schema(name))
            )
            decoded.write.parquet(str(out / name))
            files = sorted((out / name).glob("*.parquet"))
            rows[name] = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        covered = staged.where(F.col("table") == "coverage").select("payload").collect()
        parts = [Coverage(**json.loads(bytes(r["payload"]))) for r in covered]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        # a JVM that died already must not hide the error that killed it
        with contextlib.suppress(Exception):
            spark.stop()
    return rows, gpus, parts
