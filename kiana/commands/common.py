"""What several subcommands share: the --db option and :func:`open_db`, the one way a
command opens its database, and argument types that turn bad values into argparse's
own clear messages."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

    from kiana.stats.options import JudgeOptions

DEFAULT_DB = "kiana.duckdb"


def add_db_option(parser: argparse.ArgumentParser, *, default: str | None = DEFAULT_DB) -> None:
    parser.add_argument(
        "--db",
        default=default,
        metavar="FILE",
        help=f"DuckDB database file (default: {default}); ':memory:' for none",
    )
    add_memory_option(parser)


def add_memory_option(parser: argparse.ArgumentParser) -> None:
    """``--memory-limit``: DuckDB's ``memory_limit`` (:func:`open_db` sets it); the
    judge's shards are sized to it (:mod:`kiana.shards`)."""
    parser.add_argument(
        "--memory-limit",
        type=memory_size,
        metavar="SIZE",
        help="memory DuckDB may use, e.g. 4GB or 512MiB (default: 80%% of RAM, and 16 "
        "batches, 768 MiB, while a load runs); judging is split into shards that fit it",
    )


def memory_size(text: str) -> str:
    """``4GB``, ``512MiB``, ``2.5 GiB``: a size DuckDB's ``memory_limit`` takes."""
    import re

    if not re.fullmatch(r"\s*[0-9]+(\.[0-9]+)?\s*([KMGT]i?B)\s*", text, flags=re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (e.g. 4GB, 512MiB)")
    return text.strip()


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """--baseline, --threshold, --separation and --bridge-separation, as
    kiana.stats.JudgeOptions takes them
    (:func:`judge_options` reads them back)."""
    parser.add_argument(
        "--baseline",
        metavar="VERSION",
        help="compare every session against this version's last one (default: consecutive "
        "sessions)",
    )
    parser.add_argument(
        "--threshold",
        type=fraction,
        default=0.03,
        metavar="FRACTION",
        help="smallest change that matters, 0.03 or 3%% (default 0.03)",
    )
    parser.add_argument(
        "--separation",
        type=positive,
        default=3.0,
        metavar="Z",
        help="smallest change in noise units, |ln ratio| / noise (default 3)",
    )
    parser.add_argument(
        "--bridge-separation",
        type=positive,
        default=6.0,
        metavar="Z",
        help="the separation a change between two sessions across one too noisy to place it "
        "needs (a bridge: a second look, default 6; inf: none)",
    )


def judge_options(args: argparse.Namespace, **more: Any) -> JudgeOptions:
    """The :class:`kiana.stats.JudgeOptions` of :func:`add_judge_options`'s arguments."""
    from kiana.stats.options import JudgeOptions

    return JudgeOptions(
        threshold=args.threshold,
        separation=args.separation,
        baseline=args.baseline,
        bridge_separation=args.bridge_separation,
        **more,
    )


MEMORY = ":memory:"


def open_db(
    args: argparse.Namespace, *, must_exist: bool, read_only: bool
) -> duckdb.DuckDBPyConnection:
    """The database of ``--db`` (``args.db``), the one way every command opens it.

    ``:memory:`` (or no ``--db`` at all) is a new, empty in-memory database.  A file is
    opened read-only when ``read_only`` (then it must exist), and must exist when
    ``must_exist`` (a command that reads what ``kiana load`` wrote); otherwise it is
    created.  Every failure is a :class:`kiana.errors.DatabaseError` with a hint."""
    from kiana.errors import DatabaseError
    from kiana.load import connect

    db: str | None = getattr(args, "db", None)
    if db is None or db == MEMORY:
        if must_exist:
            raise DatabaseError(
                "--db :memory: is a new, empty database: there is nothing to read",
                hint="give the database file that `kiana load PATH --db FILE` wrote",
            )
        return _limited(connect(None), args)
    if (must_exist or read_only) and not Path(db).exists():
        raise DatabaseError(f"{db}: no such database", hint="run `kiana load PATH --db FILE` first")
    if Path(db).is_dir():
        raise DatabaseError(f"{db}: is a folder, not a database file", hint="give a file name")
    return _limited(connect(db, read_only=read_only), args)


def _limited(con: duckdb.DuckDBPyConnection, args: argparse.Namespace) -> duckdb.DuckDBPyConnection:
    """``con`` with DuckDB's ``memory_limit`` set from ``--memory-limit``, if given
    (:func:`memory_size` checked its text)."""
    limit: str | None = getattr(args, "memory_limit", None)
    if limit:
        con.execute(f"SET memory_limit = '{memory_size(limit)}'")
    return con


#: DuckDB's words for what went wrong under a command -> what kiana says, and the hint.
_FAILURES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("no space left", "disk full", "not enough space"),
        "the disk is full: the command was rolled back",
        "free some space, or give a --db file on another disk",
    ),
    (
        ("corrupt", "checksum", "not a valid duckdb"),
        "the database file is corrupt",
        "load the documents again into a new --db file (kiana load PATH --db NEW.duckdb)",
    ),
    (
        ("interrupt",),
        "interrupted: the command was rolled back, the database is as it was",
        "run it again",
    ),
    (
        ("out of memory",),
        "DuckDB ran out of memory: the command was rolled back",
        "give it more with --memory-limit SIZE, or free memory on this machine",
    ),
)


@contextlib.contextmanager
def database_errors(db: object = None) -> Iterator[None]:
    """Turn a DuckDB error raised while a command works on its database (a disk that
    fills up, a corrupt block read, an interrupted query) into a
    :class:`kiana.errors.DatabaseError` with a clear message, never a traceback.
    ``cli.main`` wraps every command in it."""
    try:
        yield
    except Exception as exc:
        if not type(exc).__module__.startswith(("duckdb", "_duckdb")):
            raise
        from kiana.errors import DatabaseError
        from kiana.safe import terminal

        text = (str(exc).strip().splitlines() or [""])[0][:300]
        where = f"{terminal(db)}: " if db not in (None, MEMORY) else ""
        for words, message, hint in _FAILURES:
            if any(word in text.lower() for word in words):
                raise DatabaseError(where + message, hint=hint) from None
        raise DatabaseError(
            f"{where}the database failed: {terminal(text)}",
            hint="check the --db file and the free disk space; a load is rolled back as a whole",
        ) from None


def discard_new_database(path: Path | None) -> bool:
    """After a failed command: remove ``path`` (the ``--db`` file that did not exist when
    it started) only when this process created it and nobody wrote data to it
    (:func:`kiana.load.database.discard`).  ``cli.main`` calls it on failure."""
    if path is None:
        return False
    from kiana.load.database import discard

    return discard(path)


def fraction(text: str) -> float:
    """``0.03`` or ``3%`` -> 0.03."""
    try:
        value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        shown = f"{value:.0%}" if value == value and abs(value) < 1e6 else text
        raise argparse.ArgumentTypeError(
            f"{text!r} would be {shown}: give a fraction (0.05 = 5%) or a percentage (5%)"
        )
    return value


#: The rule of each numeric argument type: its name, how to read it, what must hold.
_RULES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "positive": ("must be positive", lambda v: v > 0),
    "count": ("must be 0 or more", lambda v: v >= 0),
}


def _parsed(text: str, convert: Callable[[str], float], what: str, rule: str) -> float:
    """``convert(text)``, or argparse's clear message when it is not ``what`` or breaks
    the named rule of :data:`_RULES`."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    message, holds = _RULES[rule]
    if not holds(value):
        raise argparse.ArgumentTypeError(f"{message}: {text!r}")
    return value


def positive(text: str) -> float:
    """A number above zero."""
    return _parsed(text, float, "a number", "positive")


def count(text: str) -> int:
    """A whole number, zero or more."""
    return int(_parsed(text, int, "a whole number", "count"))
