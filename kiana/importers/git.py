"""Every Liger benchmark row ever recorded, from the git history of its CSVs.

Liger-Kernel overwrites a row of ``benchmark/data/*.csv`` when a kernel is
re-benchmarked, so each release's numbers survive only in git.  This module walks
the history with plain ``git`` subprocess calls (no network, no library):

1. ``git log -z --raw --diff-merges=first-parent RANGE -- PATHSPEC`` lists every commit
   (merges compared with their first parent) that added or changed a CSV under
   ``benchmark/data/``, with the files it touched, their modes and blobs, NUL-separated
   (:mod:`kiana.importers.gitread`: any file name reads as it is);
2. one ``git cat-file --batch`` reads each touched file as it was at that commit (a
   symbolic link, a submodule or a blob over 256 MiB is a skipped row naming it, never
   read);
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
history (or none among the versions read) is an :class:`~kiana.errors.InputError`.  A
shallow clone imports with a warning: rows older than its cut are missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kiana.errors import InputError
from kiana.importers.ci import CiRows
from kiana.importers.gitblobs import read_blobs
from kiana.importers.gitread import (
    REGULAR_MODES,
    git,
    refusal,
    shallow_warning,
    touched_files,
)
from kiana.importers.liger import (
    MAX_CSV_BYTES,
    ImportResult,
    NotLigerCsvError,
    convert_rows,
    read_rows,
)
from kiana.importers.rows import Row, Skipped

__all__ = ["PATHSPEC", "CsvVersion", "GitImportResult", "csv_versions", "git", "import_git"]

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
    #: Why the version was not read (a link, a submodule, too large); None when it was.
    refused: str | None = None


@dataclass(frozen=True)
class GitImportResult:
    result: ImportResult
    commits: int
    file_versions: int
    rows_seen: int
    unique_rows: int
    liger_versions: tuple[str, ...]
    #: Liger's CI history read on ``gh-pages`` and ``--ref`` (None: no such ref).
    ci: CiRows | None = None


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
    """Every version of a CSV that a commit of ``rev`` added or changed, oldest first.
    A link or submodule is a version with ``refused`` set and no text; a blob larger
    than :data:`~kiana.importers.liger.MAX_CSV_BYTES` too."""
    touched = touched_files(repo, rev, PATHSPEC)
    blobs = read_blobs(
        repo, (b for _, paths in touched for _, m, b in paths if m in REGULAR_MODES), MAX_CSV_BYTES
    )
    for commit, paths in touched:
        release: str | None = None
        for path, mode, blob in paths:
            refused = refusal(path, mode)
            text = blobs.get(blob) if refused is None else None
            if refused is None and text is None:
                refused = f"larger than {MAX_CSV_BYTES >> 20} MiB or unreadable: not read"
            header = (text or "").split("\n", 1)[0]
            if text is not None and "liger_version" not in header and release is None:
                release = release_at(repo, commit)
            yield CsvVersion(commit, path, text or "", release, refused)


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


def _data_rows(
    repo: Path, rev: str | None
) -> tuple[list[Row | Skipped], set[str], int, int, int, list[NotLigerCsvError]]:
    """The distinct rows of every version of ``benchmark/data/*.csv`` (oldest kept), and
    the commits, file versions, rows seen and distinct rows read, and the foreign CSVs."""
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
        if version.refused is not None:
            rows.append(Skipped(source, 1, None, version.refused))
            continue
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
    return rows, commits, files, rows_seen, len(seen), foreign


def import_git(repo: Path, rev: str | None = None, refs: Sequence[str] = ()) -> GitImportResult:
    """The union of every row ever recorded in ``benchmark/data/*.csv`` and, on
    ``gh-pages`` and ``refs``, in Liger's CI history (:mod:`kiana.importers.ci`) ->
    documents."""
    from kiana.importers import ci

    rows, commits, files, rows_seen, unique, foreign = _data_rows(repo, rev)
    history = ci.from_git(repo, refs)
    ci_files = history.files if history is not None else 0
    if files == 0 and ci_files == 0 and (rev is None or not _ever_had_csvs(repo)):
        raise InputError(
            f"{repo}: no Liger CSVs: no commit of {rev or 'HEAD'} adds or changes {PATHSPEC}",
            hint=_NO_CSV_HINT,
        )
    if foreign and len(foreign) == files and ci_files == 0:
        raise InputError(
            f"{repo}: no Liger CSVs: none of the {files} version(s) of {PATHSPEC} read "
            f"has Liger's columns (first: {foreign[0].message})",
            hint=_NO_CSV_HINT,
        )
    every = rows if history is None else [*rows, *history.rows]
    result = convert_rows(every, sources=[str(repo)])
    shallow = shallow_warning(repo)
    if shallow is not None:
        result = replace(result, warnings=(*result.warnings, shallow))
    versions = sorted(
        {d["run"]["metadata"]["labels"]["liger_version"] for d in result.documents},
        key=_version_key,
    )
    return GitImportResult(
        result=result,
        commits=len(commits),
        file_versions=files,
        rows_seen=rows_seen,
        unique_rows=unique,
        liger_versions=tuple(versions),
        ci=history,
    )
