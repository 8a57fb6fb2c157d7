"""Every Liger benchmark row ever recorded, from the git history of its CSVs.

Liger-Kernel overwrites a row of ``benchmark/data/*.csv`` when a kernel is
re-benchmarked, so each release's numbers survive only in git.  This module walks
the history with plain ``git`` subprocess calls (no network, no library):

1. ``git log --format=... --name-status --diff-merges=first-parent RANGE -- PATHSPEC``
   lists every commit (merges compared with their first parent) that added or changed a
   CSV under ``benchmark/data/``, with the files it touched;
2. ``git show COMMIT:PATH`` reads each touched file as it was at that commit;
3. rows are read with the file's path, which renames the plain ``liger`` provider of a
   per-backend CSV (see ``kernel_provider`` in :mod:`kiana.importers.liger`), then
   deduplicated on their full content (cells by column name, so a reordered header does
   not make new rows), keeping the first occurrence, oldest commit first;
4. the union goes through :func:`kiana.importers.liger.convert_rows`, like a CSV import.

Rows are reported with ``<commit:12>:<path>`` as their source and their line in that
version of the file; their documents carry the labels ``liger_csv`` (the path) and
``liger_commit`` (the full sha of the first commit holding the row).  CSVs written
before Liger recorded ``liger_version`` get the release named in that commit's
``pyproject.toml`` / ``setup.py`` (when one is there).  A version of a CSV whose header
holds none of Liger's columns is one skipped row; a repository with no Liger CSV in its
history (or none among the versions read) is an :class:`~kiana.errors.InputError`.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kiana.errors import InputError, KianaError
from kiana.importers.liger import ImportResult, NotLigerCsvError, convert_rows, read_rows
from kiana.importers.rows import Row, Skipped

PATHSPEC = "benchmark/data/*.csv"
_NO_CSV_HINT = (
    "pass a Liger-Kernel checkout (its results live in benchmark/data/*.csv), "
    "and a --rev range whose commits change them"
)
_VERSION_FILES = (
    ("pyproject.toml", re.compile(r'^version\s*=\s*"([^"]+)"', re.M)),
    ("setup.py", re.compile(r"""version\s*=\s*["']([^"']+)["']""")),
)


@dataclass(frozen=True)
class CsvVersion:
    """One CSV as it was at one commit."""

    commit: str
    path: str
    text: str
    #: Liger release named by the commit's packaging files (None if none found).
    release: str | None


@dataclass(frozen=True)
class GitImportResult:
    result: ImportResult
    commits: int
    file_versions: int
    rows_seen: int
    unique_rows: int
    liger_versions: tuple[str, ...]


def git(
    repo: Path,
    *args: str,
    check: bool = True,
    error: type[KianaError] = InputError,
    hint: str = "pass a Liger-Kernel checkout (--git DIR) and a valid --rev range",
) -> str:
    """The standard output of ``git -C REPO ARGS`` (plain subprocess, no network); an
    ``error`` (a :class:`KianaError` subclass) with ``hint`` when git fails or is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            check=check,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except FileNotFoundError:
        raise error("git is not installed", hint="install git") from None
    except subprocess.CalledProcessError as exc:
        raise error(f"{repo}: git {args[0]} failed: {exc.stderr.strip()}", hint=hint) from None
    return done.stdout


def touched_files(repo: Path, rev: str | None = None) -> list[tuple[str, list[str]]]:
    """(commit, CSV paths it added or changed), oldest commit first."""
    if not repo.is_dir():
        raise InputError(f"{repo}: not a directory", hint="pass a Liger-Kernel checkout")
    if rev is not None and rev.startswith("-"):
        raise InputError(
            f"--rev {rev!r}: a revision range cannot start with '-'",
            hint="give commits, tags or ranges such as v0.4.0..main",
        )
    out = git(
        repo,
        "log",
        "--reverse",
        "--format=%x00%H",
        "--name-status",
        "--no-renames",
        "--diff-merges=first-parent",
        rev or "HEAD",
        "--",
        PATHSPEC,
    )
    commits: list[tuple[str, list[str]]] = []
    for block in out.split("\0")[1:]:
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        paths = [
            line.split("\t", 1)[1]
            for line in lines[1:]
            if "\t" in line and not line.startswith("D")
        ]
        if paths:
            commits.append((lines[0].strip(), paths))
    return commits


def release_at(repo: Path, commit: str) -> str | None:
    """The Liger release a commit's packaging files name, if any."""
    for path, pattern in _VERSION_FILES:
        try:
            text = git(repo, "show", f"{commit}:{path}")
        except InputError:
            continue
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


def csv_versions(repo: Path, rev: str | None = None) -> Iterator[CsvVersion]:
    for commit, paths in touched_files(repo, rev):
        release: str | None = None
        for path in paths:
            text = git(repo, "show", f"{commit}:{path}")
            header = text.split("\n", 1)[0]
            if "liger_version" not in header and release is None:
                release = release_at(repo, commit)
            yield CsvVersion(commit, path, text, release)


def _ever_had_csvs(repo: Path) -> bool:
    """Whether any commit of any branch or tag adds or changes a Liger CSV (a ``--rev``
    range without CSV changes in a Liger checkout imports nothing, without error)."""
    return bool(git(repo, "log", "-1", "--format=%H", "--all", "--", PATHSPEC).strip())


def _version_key(version: str) -> tuple[int, Version | str]:
    """Releases in PEP 440 order, anything else (``main``, a hash) after them."""
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def import_git(repo: Path, rev: str | None = None) -> GitImportResult:
    """The union of every row ever recorded in ``benchmark/data/*.csv`` -> documents."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    rows: list[Row | Skipped] = []
    commits: set[str] = set()
    files = 0
    foreign: list[NotLigerCsvError] = []
    rows_seen = 0
    for version in csv_versions(repo, rev):
        commits.add(version.commit)
        files += 1
        defaults = {"liger_version": version.release} if version.release else None
        source = f"{version.commit[:12]}:{version.path}"
        rows_of_file = read_rows(
            version.text, source, csv_name=version.path, commit=version.commit, defaults=defaults
        )
        try:
            for item in rows_of_file:
                rows_seen += 1
                if isinstance(item, Row):
                    if item.key in seen:
                        continue
                    seen.add(item.key)
                rows.append(item)
        except NotLigerCsvError as exc:
            foreign.append(exc)
            rows.append(Skipped(source, 1, None, exc.message.removeprefix(f"{source}: ")))
    if files == 0 and (rev is None or not _ever_had_csvs(repo)):
        raise InputError(
            f"{repo}: no Liger CSVs: no commit of {rev or 'HEAD'} adds or changes {PATHSPEC}",
            hint=_NO_CSV_HINT,
        )
    if foreign and len(foreign) == files:
        raise InputError(
            f"{repo}: no Liger CSVs: none of the {files} version(s) of {PATHSPEC} read "
            f"has Liger's columns (first: {foreign[0].message})",
            hint=_NO_CSV_HINT,
        )
    result = convert_rows(rows, sources=[str(repo)])
    versions = sorted(
        {d["run"]["metadata"]["labels"]["liger_version"] for d in result.documents},
        key=_version_key,
    )
    return GitImportResult(
        result=result,
        commits=len(commits),
        file_versions=files,
        rows_seen=rows_seen,
        unique_rows=len(seen),
        liger_versions=tuple(versions),
    )
