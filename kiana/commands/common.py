"""What several subcommands share: the --db option, opening an existing database, and
argument types that turn bad values into argparse's own clear messages."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

DEFAULT_DB = "kiana.duckdb"


def add_db_option(parser: argparse.ArgumentParser, *, default: str | None = DEFAULT_DB) -> None:
    parser.add_argument(
        "--db",
        default=default,
        metavar="FILE",
        help=f"DuckDB database file (default: {default}); ':memory:' for none",
    )


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """--baseline and --threshold, as kiana.stats.JudgeOptions takes them."""
    parser.add_argument(
        "--baseline",
        metavar="VERSION",
        help="compare every version against this one (default: consecutive versions)",
    )
    parser.add_argument(
        "--threshold",
        type=fraction,
        default=0.03,
        metavar="FRACTION",
        help="smallest change that matters, 0.03 or 3%% (default 0.03)",
    )


def open_existing(db: str) -> duckdb.DuckDBPyConnection:
    """Open a database that ``kiana load`` made, read-only; a clear error if it is missing."""
    from pathlib import Path

    from kiana.errors import DatabaseError
    from kiana.load import connect

    if db != ":memory:" and not Path(db).exists():
        raise DatabaseError(f"{db}: no such database", hint="run `kiana load PATH --db FILE` first")
    return connect(None if db == ":memory:" else db, read_only=True)


def fraction(text: str) -> float:
    """``0.03`` or ``3%`` -> 0.03."""
    try:
        value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 10.0:
        raise argparse.ArgumentTypeError(f"out of range: {text!r} (0.03 or 3% is 3%)")
    return value


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value
