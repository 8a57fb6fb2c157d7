"""Liger's own CI history: ``benchmarks/<commit>[-v<release>]/benchmark.csv``.

Liger-Kernel benchmarks itself on CI and publishes every run on its ``gh-pages``
branch: one folder per measured commit, ``benchmarks/<commit>/benchmark.csv`` (a seven
digit sha), ``benchmarks/<commit>-v<release>/benchmark.csv`` for a release run of that
commit, beside ``commits.txt`` (the order they were measured in) and
``golden_commits.json`` (the dashboard's reference commit per kernel).  The CSVs have
the columns of ``benchmark/data/`` and go through the same reader and conversion
(:func:`kiana.importers.liger.read_rows`, :func:`~kiana.importers.liger.convert_rows`).

The folder names the code that was measured, so provenance is exact and needs no
search of the history: each row's ``liger_commit`` label is the measured commit,
resolved to its full sha in the repository where it resolves (the folder's own name
where it does not, or without a repository), and ``liger_csv`` the file's path,
``benchmarks/<folder>/benchmark.csv``, the same from git and from a checkout.  A
release run and the plain run of one commit are two sittings of the same code (two
files: :mod:`kiana.stats.reruns` pairs them as A/A), and a CI sitting and a
``benchmark/data/`` row of the same commit, GPU and workload stay two sittings: their
files differ, so do their labels, run ids and sessions.

Two ways in:

* :func:`git_files`: every version of the files on ``gh-pages`` (``origin/gh-pages``
  in a clone) and on any ref named (``kiana import liger --git REPO --ref REF``): the
  ``git log -z --raw`` of :mod:`kiana.importers.gitread` and ``git cat-file --batch`` of
  :mod:`kiana.importers.gitblobs`,
  each distinct (path, blob) read once (the branch deletes and restores them on every
  docs deploy);
* :func:`dir_files`: a checkout of the branch, or its ``benchmarks`` folder
  (``kiana import liger DIR``): each measured folder's ``benchmark.csv``, read as a
  CSV file is (never through a link).

A file outside a measured folder (``benchmarks/notes/benchmark.csv``) is one skipped
row naming it; a row that appears in two versions of one folder's file is read once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kiana.errors import InputError
from kiana.importers.gitblobs import read_blobs
from kiana.importers.gitread import (
    REGULAR_MODES,
    refusal,
    resolve_commits,
    touched_files,
)
from kiana.importers.liger import MAX_CSV_BYTES, NotLigerCsvError, read_csv_file, read_rows
from kiana.importers.rows import Row, Skipped
from kiana.safe import excerpt

__all__ = [
    "CI_PATHSPEC",
    "CiFile",
    "CiRows",
    "Measured",
    "ci_folder",
    "ci_refs",
    "ci_rows",
    "dir_files",
    "from_dir",
    "from_git",
    "git_files",
    "measured",
]

#: The files of Liger's CI history (``*`` may cross ``/`` in git: :func:`measured` checks).
CI_PATHSPEC = "benchmarks/*/benchmark.csv"
#: The refs read without ``--ref``: the first that the repository holds.
DEFAULT_REFS = ("gh-pages", "origin/gh-pages")
#: ``<commit>[-v<release>]``: 7-40 lower-case hex digits, then a release.
FOLDER = re.compile(r"^(?P<commit>[0-9a-f]{7,40})(?:-v(?P<release>[0-9][0-9A-Za-z.+_-]{0,63}))?$")


@dataclass(frozen=True)
class Measured:
    """What a CI folder's name says: the commit measured, and the release of a release
    run (``7644a0f-v0.7.0``: ``7644a0f``, ``0.7.0``).

    >>> measured("benchmarks/7644a0f-v0.7.0/benchmark.csv")
    Measured(folder='7644a0f-v0.7.0', commit='7644a0f', release='0.7.0')
    >>> measured("benchmarks/notes/benchmark.csv") is None
    True
    """

    folder: str
    commit: str
    release: str | None

    @property
    def path(self) -> str:
        """The file's path on the branch (its ``liger_csv`` label)."""
        return f"benchmarks/{self.folder}/benchmark.csv"


def measured(path: str) -> Measured | None:
    """The measured commit of ``benchmarks/<folder>/benchmark.csv``; None for any other
    path."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != "benchmarks" or parts[2] != "benchmark.csv":
        return None
    match = FOLDER.match(parts[1])
    return Measured(parts[1], match["commit"], match["release"]) if match else None


@dataclass(frozen=True)
class CiFile:
    """One version of one CI file: its path on the branch, the text, where it was read
    (``source``, for messages) and why it was not (``refused``; None when it was)."""

    path: str
    text: str
    source: str
    refused: str | None = None


@dataclass(frozen=True)
class CiRows:
    """The rows of a CI history, and what was read."""

    rows: tuple[Row | Skipped, ...]
    refs: tuple[str, ...]  #: the refs read (git), empty for a checkout
    files: int  #: file versions read
    folders: int  #: distinct measured folders (``<commit>[-v<release>]``)
    commits: int  #: distinct measured commits
    resolved: int  #: measured commits resolved to a full sha in the repository
    rows_seen: int
    unique_rows: int


def ci_refs(repo: Path, refs: Sequence[str]) -> list[tuple[str, str]]:
    """(name, full sha) of the refs to read: ``refs`` (each must resolve: an
    :class:`~kiana.errors.InputError` naming it otherwise), else the first of
    :data:`DEFAULT_REFS` the repository holds (none: an empty list)."""
    found: list[tuple[str, str]] = []
    for ref in refs:
        if ref.startswith("-"):
            raise InputError(
                f"--ref {excerpt(ref)}: a ref cannot start with '-'",
                hint="give a branch or tag, e.g. --ref origin/gh-pages",
            )
        sha = resolve_commits(repo, [ref]).get(ref) if _plain_ref(ref) else None
        if sha is None:
            raise InputError(
                f"--ref {excerpt(ref)}: {repo} holds no such ref",
                hint="fetch it first (git fetch origin gh-pages)",
            )
        found.append((ref, sha))
    if refs:
        return found
    for ref in DEFAULT_REFS:
        sha = resolve_commits(repo, [ref]).get(ref)
        if sha is not None:
            return [(ref, sha)]
    return []


def _plain_ref(ref: str) -> bool:
    """Whether ``ref`` is one line git reads as a revision (``--batch-check`` reads a line
    per name)."""
    return bool(ref) and "\n" not in ref and "\r" not in ref and len(ref) <= 256


def git_files(repo: Path, refs: Sequence[tuple[str, str]]) -> Iterator[CiFile]:
    """Every version of :data:`CI_PATHSPEC` that a commit of ``refs`` added or changed,
    oldest first, each distinct (path, blob) once."""
    versions: dict[tuple[str, str], tuple[str, str]] = {}
    for _, sha in refs:
        for commit, paths in touched_files(repo, sha, CI_PATHSPEC):
            for path, mode, blob in paths:
                versions.setdefault((path, blob), (commit, mode))
    blobs = read_blobs(
        repo, (b for (_, b), (_, m) in versions.items() if m in REGULAR_MODES), MAX_CSV_BYTES
    )
    for (path, blob), (commit, mode) in versions.items():
        source = f"{commit[:12]}:{path}"
        refused = refusal(path, mode)
        text = blobs.get(blob) if refused is None else None
        if refused is None and text is None:
            refused = f"larger than {MAX_CSV_BYTES >> 20} MiB or unreadable: not read"
        yield CiFile(path, text or "", source, refused)


def ci_folder(path: Path) -> Path | None:
    """The ``benchmarks`` folder of a checkout of Liger's ``gh-pages`` (``path/benchmarks``
    or ``path`` itself) when it holds a measured folder with a ``benchmark.csv``; None
    otherwise (not a CI history: a folder of CSVs)."""
    for candidate in (path / "benchmarks", path):
        if candidate.is_dir() and not candidate.is_symlink() and any(_measured_dirs(candidate)):
            return candidate
    return None


def _measured_dirs(benchmarks: Path) -> Iterator[os.DirEntry[str]]:
    """The folders of ``benchmarks`` (never through a link) that hold a ``benchmark.csv``."""
    try:
        entries = sorted(os.scandir(benchmarks), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and os.path.lexists(
            os.path.join(entry.path, "benchmark.csv")
        ):
            yield entry


def dir_files(benchmarks: Path) -> Iterator[CiFile]:
    """The ``benchmark.csv`` of each folder of ``benchmarks`` (:func:`ci_folder`), by
    name; a link, a FIFO or a file too large is refused and named, never read."""
    for entry in _measured_dirs(benchmarks):
        path = f"benchmarks/{entry.name}/benchmark.csv"
        file = Path(entry.path) / "benchmark.csv"
        try:
            text = read_csv_file(file)
        except InputError as exc:
            yield CiFile(path, "", str(file), exc.message.removeprefix(f"{file}: "))
            continue
        yield CiFile(path, text, str(file))


def ci_rows(
    files: Iterable[CiFile],
    resolved: Mapping[str, str | None] | None = None,
    *,
    refs: Sequence[str] = (),
) -> CiRows:
    """The rows of ``files`` (module docstring): each labelled with its measured commit
    (``resolved[name]`` when it resolved, else the folder's name for it) and its path."""
    resolved = resolved or {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    rows: list[Row | Skipped] = []
    folders: set[str] = set()
    commits: set[str] = set()
    files_read = rows_seen = 0
    for file in files:
        files_read += 1
        where = measured(file.path)
        if file.refused is not None or where is None:
            why = file.refused or "not in a folder named <commit>[-v<release>]: not read"
            rows.append(Skipped(file.source, 1, None, why))
            continue
        folders.add(where.folder)
        commit = resolved.get(where.commit) or where.commit
        commits.add(commit)
        defaults = {"liger_version": where.release} if where.release else None
        try:
            for item in read_rows(
                file.text, file.source, csv_name=where.path, commit=commit, defaults=defaults
            ):
                rows_seen += 1
                if isinstance(item, Row):
                    key = (where.path, item.key)
                    if key in seen:
                        continue
                    seen.add(key)
                rows.append(item)
        except NotLigerCsvError as exc:
            rows.append(Skipped(file.source, 1, None, exc.message.removeprefix(f"{file.source}: ")))
    return CiRows(
        rows=tuple(rows),
        refs=tuple(refs),
        files=files_read,
        folders=len(folders),
        commits=len(commits),
        resolved=sum(1 for sha in resolved.values() if sha is not None),
        rows_seen=rows_seen,
        unique_rows=len(seen),
    )


def folder_commits(paths: Iterable[str]) -> list[str]:
    """The measured commits the CI paths name (in order, once each)."""
    found = (measured(path) for path in paths)
    return list(dict.fromkeys(m.commit for m in found if m is not None))


def from_git(repo: Path, refs: Sequence[str] = ()) -> CiRows | None:
    """The CI history on ``refs`` (or ``gh-pages``) of ``repo``; None when there is no
    such ref."""
    targets = ci_refs(repo, refs)
    if not targets:
        return None
    files = list(git_files(repo, targets))
    resolved = resolve_commits(repo, folder_commits(f.path for f in files))
    return ci_rows(files, resolved, refs=[name for name, _ in targets])


def from_dir(path: Path, repo: Path | None = None) -> CiRows:
    """The CI history of a checkout of ``gh-pages`` (or its ``benchmarks`` folder);
    ``repo`` resolves the folders' commits to full shas."""
    benchmarks = ci_folder(path)
    if benchmarks is None:
        raise InputError(
            f"{path}: not a checkout of Liger's gh-pages: no benchmarks/<commit>/benchmark.csv",
            hint="give the checkout or its benchmarks folder",
        )
    files = list(dir_files(benchmarks))
    resolved = resolve_commits(repo, folder_commits(f.path for f in files)) if repo else None
    return ci_rows(files, resolved)
