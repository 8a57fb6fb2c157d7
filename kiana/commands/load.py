"""``kiana load PATH... [--db FILE] [--strict]``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kiana.commands.common import DEFAULT_DB, add_db_option, open_db
from kiana.safe import terminal

if TYPE_CHECKING:
    import duckdb

HELP = "load kernelindex documents (files, folders, globs; .json, .jsonl, .gz) into DuckDB"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or globs")
    add_db_option(parser)
    parser.add_argument(
        "--strict", action="store_true", help="exit non-zero if any input is rejected"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def progress_bar() -> Callable[[int, int, int], None] | None:
    """A progress bar on stderr (files and documents so far), drawn from the first
    second of a load on; None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        return None
    started = time.monotonic()

    def show(files_done: int, files: int, documents: int) -> None:
        if time.monotonic() - started < 1.0:
            return
        width = 30
        filled = width * files_done // max(files, 1)
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {files_done}/{files} files, "
            f"{documents:,} documents"
        )
        sys.stderr.flush()

    return show


def _refuse_csv(paths: list[str]) -> None:
    """A CSV named on the command line is Liger's results, not kernelindex documents:
    point to the command that reads them (before anything is opened or loaded)."""
    from kiana.errors import InputError

    csvs = [p for p in paths if p.lower().endswith((".csv", ".csv.gz"))]
    if csvs:
        raise InputError(
            f"{csvs[0]}: a CSV file; kiana load reads kernelindex JSON documents "
            "(.json, .jsonl, .ndjson, optionally .gz)",
            hint=f"Liger-Kernel's benchmark CSVs go through `kiana import liger "
            f"{' '.join(csvs)} --db {DEFAULT_DB}`",
        )


def run(args: argparse.Namespace) -> int:
    from kiana.commands.interrupts import ctrl_c_came, interrupted
    from kiana.errors import InputError, StrictLoadError
    from kiana.load import load

    _refuse_csv(args.paths)
    con = open_db(args, must_exist=False, read_only=False)
    last = _last_load(con)
    bar = None if args.quiet else progress_bar()
    try:
        try:
            summary = load(con, args.paths, progress=bar)
        finally:
            con.close()
            if bar is not None:
                sys.stderr.write("\r\033[K")  # the bar's line, cleared
    except BaseException as exc:
        stored = _stored_after(args.db, last) if interrupted(exc) else None
        if stored is None:
            raise
        return _interrupted_after(stored)
    if ctrl_c_came() and (stored := _stored_after(args.db, last)):
        return _interrupted_after(stored)  # a Ctrl-C that code on the way put aside
    if summary.files == 0:
        raise InputError(
            f"no document files under {', '.join(map(str, args.paths))}: nothing was loaded",
            hint="kiana reads .json, .jsonl and .ndjson files (optionally .gz); "
            "Liger's CSVs go through `kiana import liger`",
        )
    if not args.quiet:
        rate = summary.read / summary.seconds if summary.seconds > 0 else 0.0
        print(
            f"read {summary.read:,} documents from {summary.files:,} files in "
            f"{summary.seconds:.2f} s ({rate:,.0f}/s): loaded {summary.loaded:,}, "
            f"already present {summary.already_present:,}, rejected {summary.rejected:,}"
            + (f", with warnings {summary.warned:,}" if summary.warned else "")
        )
        for source, path, reason in summary.first_rejects[:5]:
            where = f" at {path}" if path else ""
            print(terminal(f"  rejected {source}{where}: {reason}"))
        if summary.rejected > 5:
            print(
                f"  ... {summary.rejected - 5:,} more: SELECT * FROM rejects WHERE load_id = "
                f"{summary.load_id}"
            )
        print(terminal(f"database: {args.db}"))
    if args.strict and summary.rejected:
        raise StrictLoadError(
            f"{summary.rejected} input(s) rejected (--strict); the rest was loaded",
            hint="see the rejects table for each source, JSON path and reason",
        )
    return 0


def _last_load(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT coalesce(max(load_id), 0) FROM loads").fetchone()
    return int(row[0]) if row else 0


def _interrupted_after(stored: tuple[int, int]) -> int:
    print(
        f"kiana load: interrupted after this load was stored (load {stored[0]}: "
        f"{stored[1]:,} documents loaded): nothing is lost, nothing to run again",
        file=sys.stderr,
    )
    return 130


def _stored_after(db: str | None, last: int) -> tuple[int, int] | None:
    """(load id, documents loaded) of a load after load ``last`` that Ctrl-C came after
    (its transaction committed while the connection closed, say), so the usual "nothing
    was stored" would be false; None otherwise (an in-memory database, or not stored)."""
    from kiana.commands.common import MEMORY
    from kiana.load import connect

    if db in (None, MEMORY):
        return None
    try:
        con = connect(db, read_only=True)
    except Exception:
        return None
    try:
        row = con.execute(
            "SELECT load_id, loaded FROM loads WHERE load_id > ? ORDER BY load_id DESC LIMIT 1",
            [last],
        ).fetchone()
    finally:
        con.close()
    return (int(row[0]), int(row[1] or 0)) if row else None
