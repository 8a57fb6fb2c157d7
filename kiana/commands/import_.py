"""``kiana import liger``: Liger-Kernel benchmark CSVs (or their git history) -> documents.

```
kiana import liger benchmark/data/*.csv -o docs/          # one .json per row
kiana import liger all_benchmark_data.csv --jsonl runs.jsonl.gz
kiana import liger --git ~/Liger-Kernel [--rev v0.4.0..main] [--ref REF] --db kiana.duckdb
kiana import liger liger-gh-pages/                         # a checkout of Liger's CI history
```
Without ``-o`` or ``--jsonl`` the documents are loaded into ``--db`` (default
``kiana.duckdb``, the database ``kiana regressions`` and ``kiana report`` read).  A folder
stands for the ``*.csv`` files in it (``benchmark/data/``), or, when it is a checkout of
Liger's ``gh-pages`` (or its ``benchmarks`` folder), for its CI history
(:mod:`kiana.importers.ci`).  ``--git`` also reads the CI history on ``gh-pages`` (or
``origin/gh-pages``) and on each ``--ref``.  With ``--git`` and a
database, the checkout is recorded in it (:func:`kiana.pipeline.remember_repository`):
``kiana regressions`` and ``kiana report`` then rank culprits without ``--git``.
Rows that cannot become documents are listed (file, line, column, reason), never dropped.
A CSV whose header holds none of Liger's columns, or a ``--git`` repository with no Liger
CSV in its history, is an ``InputError`` (exit status 2): nothing is written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.commands.common import DEFAULT_DB, open_db
from kiana.errors import InputError, UsageError
from kiana.safe import terminal

if TYPE_CHECKING:
    from kiana.importers.ci import CiRows
    from kiana.importers.liger import ImportResult

#: The --db given when none is (compared by identity: the user may name the same file).
_DEFAULT = Path(DEFAULT_DB)

HELP = "import benchmark results from other formats (Liger-Kernel CSVs and their git history)"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    liger = sub.add_parser(
        "liger",
        help="Liger-Kernel benchmark/data/*.csv files, or every version of them in git",
        description="Liger-Kernel benchmark CSVs -> kernelindex.dev/v1alpha1 documents.",
    )
    liger.add_argument("csv", nargs="*", type=Path, metavar="CSV", help="Liger CSV files")
    liger.add_argument(
        "--git",
        type=Path,
        metavar="REPO",
        help="a Liger-Kernel checkout: import every row ever recorded in benchmark/data/*.csv",
    )
    liger.add_argument(
        "--rev", metavar="RANGE", help="with --git: the revisions to walk (default HEAD)"
    )
    liger.add_argument(
        "--ref", action="append", default=[], metavar="REF",
        help="with --git: a ref holding Liger's CI history, benchmarks/<commit>/benchmark.csv "
        "(repeatable; default gh-pages or origin/gh-pages, when there is one)",
    )  # fmt: skip
    out = liger.add_mutually_exclusive_group()
    out.add_argument("-o", "--out", type=Path, metavar="DIR", help="one .json file per document")
    out.add_argument(
        "--jsonl", type=Path, metavar="FILE", help="one JSONL file (gzip if it ends in .gz)"
    )
    out.add_argument(
        "--db", type=Path, default=_DEFAULT, metavar="FILE",
        help=f"load into this DuckDB database (the default, {DEFAULT_DB}, without -o or --jsonl)",
    )  # fmt: skip


def csv_files(paths: list[Path]) -> list[Path]:
    """The CSV files of ``paths``: a folder stands for the ``*.csv`` files in it (a
    checkout of Liger's CI history: for none, :func:`import_paths` reads it)."""
    from kiana.importers.ci import ci_folder

    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        if ci_folder(path) is not None:
            continue
        found = sorted(path.glob("*.csv"))
        if not found:
            raise InputError(
                f"{path}: a folder with no .csv file in it",
                hint="give Liger's benchmark/data/ folder or its CSV files "
                "(all_benchmark_data*.csv)",
            )
        files.extend(found)
    return files


def ci_line(history: CiRows | None) -> str:
    """What was read of Liger's CI history, one line."""
    if history is None:
        return "CI history: no gh-pages ref (--ref REF names one)"
    where = f" on {', '.join(history.refs)}" if history.refs else ""
    return (
        f"CI history{where}: {history.files} file versions, {history.folders} measured "
        f"folders, {history.commits} measured commits ({history.resolved} resolved to a full "
        f"sha), {history.rows_seen} rows seen, {history.unique_rows} distinct rows"
    )


def import_paths(paths: list[Path]) -> tuple[ImportResult, list[str]]:
    """CSV files, folders of them and checkouts of Liger's CI history, as one import."""
    from kiana.importers.ci import ci_folder, from_dir
    from kiana.importers.liger import convert_rows, csv_rows

    histories = [from_dir(path) for path in paths if path.is_dir() and ci_folder(path)]
    files = csv_files(paths)
    rows = [*csv_rows(files), *(row for h in histories for row in h.rows)]
    result = convert_rows(rows, sources=[str(p) for p in paths])
    return result, [ci_line(h) for h in histories]


def run(args: argparse.Namespace) -> int:
    from kiana.importers import output
    from kiana.importers.git import import_git

    if args.rev and not args.git:
        raise UsageError("--rev needs --git REPO", hint="kiana import liger --git DIR --rev A..B")
    if args.ref and not args.git:
        raise UsageError(
            "--ref needs --git REPO", hint="kiana import liger --git DIR --ref origin/gh-pages"
        )
    if args.git and args.csv:
        raise UsageError(
            "give either CSV files or --git REPO, not both",
            hint="run kiana import liger twice to combine them",
        )
    if not args.git and not args.csv:
        raise UsageError(
            "nothing to import", hint="kiana import liger FILE.csv... or --git LIGER_CHECKOUT"
        )
    started = time.perf_counter()
    lines: list[str] = []
    if args.git:
        history = import_git(args.git, args.rev, args.ref)
        result = history.result
        lines.append(
            f"git: {history.commits} commits, {history.file_versions} CSV versions, "
            f"{history.rows_seen} rows seen, {history.unique_rows} distinct rows"
        )
        lines.append(ci_line(history.ci))
        lines.append(
            f"liger versions recovered: {len(history.liger_versions)} "
            f"({', '.join(history.liger_versions) or 'none'})"
        )
    else:
        result, ci_lines = import_paths(args.csv)
        lines += ci_lines
    documents = result.documents
    if args.out:
        written = output.write_files(documents, args.out)
        target = f"into {args.out}/"
    elif args.jsonl:
        written = output.write_jsonl(documents, args.jsonl)
        target = f"into {args.jsonl}"
    else:
        from kiana.load import load_documents
        from kiana.pipeline import remember_repository

        con = open_db(argparse.Namespace(db=str(args.db)), must_exist=False, read_only=False)
        try:
            summary = load_documents(con, documents, source="liger-import")
            if args.git:
                remember_repository(con, args.git)
        finally:
            con.close()
        written = len(documents)
        target = (
            f"into {args.db} (loaded {summary.loaded}, already present "
            f"{summary.already_present}, rejected {summary.rejected})"
            + ("; the default --db, which kiana regressions reads" if args.db is _DEFAULT else "")
            + (f"; culprits will come from {args.git.resolve()}" if args.git else "")
        )
    metrics = ", ".join(f"{m} {n}" for m, n in result.by_metric.items()) or "none"
    print(f"rows read: {result.rows_read}")
    for line in lines:
        print(terminal(line))
    print(terminal(f"documents: {len(documents)} ({metrics}); written {written} {target}"))
    print(f"skipped: {len(result.skipped)}")
    for reason, count in result.skipped_by_reason.items():
        print(f"  {count:6d}  {terminal(reason)}")
    for skipped in result.skipped:
        print(f"skipped {terminal(skipped)}", file=sys.stderr)
    for warning in result.warnings:
        print(f"warning: {terminal(warning)}", file=sys.stderr)
    print(f"time: {time.perf_counter() - started:.2f} s")
    return 0
