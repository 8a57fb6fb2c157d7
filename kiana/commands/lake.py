"""``kiana lake LAKE --out DIR [--engine spark|local] [--master URL]``.

Judges a Parquet lake written by ``kiana export --parquet`` (by one writer or many),
one GPU per shard, and writes the judgement back as Parquet under ``--out``
(``findings/``, ``steps/``, ``quality/``, ``changepoints/``, ``tradeoffs/`` and
``coverage.json``): on Apache Spark (``pip install 'kiana[spark]'``, Java 17+;
``--master local[2]`` by default, or a cluster's URL), or in this process
(``--engine local``).  Both engines give the same rows (:mod:`kiana.lake`).
"""

from __future__ import annotations

import argparse

from kiana.commands.common import add_judge_options, judge_options

HELP = "judge a Parquet lake (kiana export --parquet) on Apache Spark, one GPU per task"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lake", metavar="LAKE", help="the folder kiana export --parquet wrote")
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder to write the judgement to (new or empty)",
    )
    parser.add_argument(
        "--engine", choices=("spark", "local"), default="spark",
        help="spark (default; kiana[spark] and Java) or local (this process, DuckDB)",
    )  # fmt: skip
    parser.add_argument(
        "--master", default="local[2]", metavar="URL",
        help="Spark master (default local[2]: this machine, two cores)",
    )  # fmt: skip
    add_judge_options(parser)
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a previous judgement in DIR"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from kiana.errors import InputError, UsageError
    from kiana.lake import judge_lake

    if not (Path(args.lake) / "kiana-export.json").is_file():
        raise InputError(
            f"{args.lake}: not a kiana Parquet export (no kiana-export.json)",
            hint="write one with `kiana export --parquet DIR --db FILE`",
        )
    if args.engine == "spark":
        try:
            import pyspark  # noqa: F401
        except ModuleNotFoundError:
            raise UsageError(
                "--engine spark needs PySpark, which is not installed",
                hint="pip install 'kiana[spark]' (and Java 17+), or --engine local",
            ) from None
    started = time.monotonic()
    done = judge_lake(
        args.lake,
        args.out,
        judge_options(args),
        engine=args.engine,
        master=args.master,
        overwrite=args.overwrite,
    )
    if not args.quiet:
        counts = ", ".join(f"{table} {n:,}" for table, n in done.rows.items())
        print(
            f"judged {done.gpus:,} GPU(s) on {args.engine} in {time.monotonic() - started:.1f} s: "
            f"{counts}; wrote {done.path}"
        )
        print(done.coverage.sentence())
    return 0
