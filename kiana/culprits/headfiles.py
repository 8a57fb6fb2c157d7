"""The head's benchmark CSVs, read as a pull request's files must be: untrusted.

A pull request controls its work tree and its commits: a CSV may be a symbolic link to
``/proc/self/environ`` or ``~/.ssh``, ``benchmark/data`` itself may be a link to a
folder outside the repository, a name may hold a newline.  So:

* in the work tree, ``benchmark``, ``benchmark/data`` and each ``*.csv`` are checked
  with ``lstat`` (never followed); a link or anything but a regular file is *refused*:
  named in the gate's output, never read, and the gate fails closed (its rows cannot
  be judged); files are opened with ``O_NOFOLLOW``
  (:func:`kiana.importers.liger.read_csv_file`);
* at a commit, ``git ls-tree -z`` gives each entry's mode: a link (``120000``) or a
  submodule is refused the same way, ``benchmark`` and ``benchmark/data`` included (a
  committed ``benchmark -> bench2`` is refused as the work tree refuses it); blobs are
  read by id (:mod:`kiana.importers.gitblobs`) as bytes and decoded as a file on disk is
  (:func:`kiana.importers.liger.decode_csv`): invalid UTF-8 is refused in both.

Both sides are also given as lines read lazily (:func:`stream_lines`,
:func:`commit_lines`), for the gate's count before any file is read whole (``--max-rows``
stops a 2M-row CSV, on disk or committed, after the rows it took to prove it).
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from kiana.errors import InputError
from kiana.importers.gitblobs import Blobs, read_blob_bytes
from kiana.importers.gitread import git, parse_tree, refusal, tree_entries
from kiana.importers.liger import MAX_CSV_BYTES, decode_csv, read_csv_file
from kiana.safe import terminal

DATA = "benchmark/data"


@dataclass(frozen=True)
class HeadFiles:
    """``benchmark/data/*.csv`` of one side: path -> text, and what was refused."""

    texts: dict[str, str]
    refused: tuple[str, ...] = ()  #: one message per refused entry, naming it


def _is_csv(path: str) -> bool:
    return path.endswith(".csv") and path.count("/") == 2 and path.startswith(DATA + "/")


def _refused_folder(repo: Path) -> str | None:
    """Why ``benchmark/data`` of the work tree cannot be listed (a link on the way)."""
    current = repo
    for part in DATA.split("/"):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            target = "outside the repository"
            try:
                if os.path.realpath(current).startswith(os.path.realpath(repo) + os.sep):
                    target = "inside the repository"
            except OSError:
                pass
            return f"{current.relative_to(repo)}: a symbolic link ({target}): not followed"
        if not stat.S_ISDIR(mode):
            return f"{current.relative_to(repo)}: not a folder: not read"
    return None


def worktree_files(repo: Path) -> tuple[dict[str, Path], list[str]] | None:
    """The work tree's regular ``benchmark/data/*.csv`` files (path -> file) and what was
    refused listing them; ``None`` when ``benchmark/data`` does not exist."""
    why = _refused_folder(repo)
    if why is not None:
        return {}, [why]
    folder = repo / DATA
    if not folder.is_dir():
        return None
    files: dict[str, Path] = {}
    refused: list[str] = []
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if not entry.name.endswith(".csv"):
                continue
            path = f"{DATA}/{entry.name}"
            if entry.is_symlink():
                refused.append(f"{path}: a symbolic link: not followed")
            elif not entry.is_file(follow_symlinks=False):
                refused.append(f"{path}: not a regular file: not read")
            else:
                files[path] = Path(entry.path)
    return files, refused


def worktree_csvs(repo: Path) -> HeadFiles:
    """The work tree's ``benchmark/data/*.csv`` (module docstring)."""
    listing = worktree_files(repo)
    if listing is None:
        return HeadFiles({})
    files, refused = listing
    texts: dict[str, str] = {}
    for path, file in files.items():
        try:
            texts[path] = read_csv_file(file)
        except InputError as exc:
            refused.append(f"{path}: {exc.message.rsplit(': ', 1)[-1]}")
    return HeadFiles(texts, tuple(terminal(r) for r in refused))


def stream_lines(file: Path, max_chars: int = MAX_CSV_BYTES) -> Iterator[str]:
    """The lines of one work-tree CSV, read lazily (the reader stops the read when it
    stops iterating), opened as :func:`~kiana.importers.liger.read_csv_file` opens it
    (``O_NOFOLLOW``, never blocking, a regular file only) and decoded as it decodes
    (UTF-8, a BOM dropped: :class:`UnicodeDecodeError` at the first invalid byte).
    Ends quietly at ``max_chars`` characters or when the file cannot be opened: the
    whole read (:func:`worktree_csvs`) refuses such a file and names it."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(file, flags)
    except OSError:
        return
    with os.fdopen(fd, "rb") as raw:
        if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            return
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        read = 0
        for line in text:
            read += len(line)
            if read > max_chars:
                return
            yield line


def _refused_tree_folder(repo: Path, commit: str) -> str | None:
    """Why ``benchmark`` or ``benchmark/data`` at ``commit`` is not a folder to list (a
    link or a submodule on the way), as :func:`_refused_folder` says it of the work tree."""
    current = ""
    for part in DATA.split("/"):
        current = f"{current}/{part}" if current else part
        out = git(repo, "ls-tree", "-z", "--full-tree", commit, "--", current, check=False)
        entry = next((e for e in parse_tree(out) if e[0] == current), None)
        if entry is None:
            return None
        if entry[1] != "040000":
            return f"{current}: {refusal(current, entry[1]) or 'not a folder in git: not read'}"
    return None


def _commit_listing(repo: Path, commit: str) -> tuple[dict[str, str], list[str]]:
    """The regular ``benchmark/data/*.csv`` at ``commit`` (path -> blob id) and what was
    refused listing them (module docstring)."""
    why = _refused_tree_folder(repo, commit)
    if why is not None:
        return {}, [why]
    entries = list(tree_entries(repo, commit, DATA))
    refused = [
        f"{path}: {why}"
        for path, mode, _ in entries
        if (path == DATA or _is_csv(path)) and (why := refusal(path, mode)) is not None
    ]
    wanted = {
        path: blob for path, mode, blob in entries if _is_csv(path) and not refusal(path, mode)
    }
    return wanted, refused


def commit_csvs(repo: Path, commit: str) -> HeadFiles:
    """``benchmark/data/*.csv`` as committed at ``commit`` (module docstring)."""
    wanted, refused = _commit_listing(repo, commit)
    blobs = read_blob_bytes(repo, wanted.values(), MAX_CSV_BYTES)
    texts = {}
    for path, blob in wanted.items():
        data = blobs.get(blob)
        if data is None:
            refused.append(f"{path}: larger than {MAX_CSV_BYTES >> 20} MiB: not read")
            continue
        try:
            texts[path] = decode_csv(data)
        except UnicodeDecodeError as exc:
            refused.append(f"{path}: not UTF-8 (byte {exc.start:,})")
    return HeadFiles(texts, tuple(terminal(r) for r in refused))


@contextmanager
def commit_lines(repo: Path, commit: str) -> Iterator[dict[str, Callable[[], Iterator[str]]]]:
    """Each regular ``benchmark/data/*.csv`` at ``commit`` (path -> its lines), as
    :func:`stream_lines` gives a work-tree file's: read lazily from one ``git cat-file
    --batch`` (the reader stops the read when it stops iterating), decoded as
    :func:`commit_csvs` decodes (UTF-8, a BOM dropped: :class:`UnicodeDecodeError` at
    the first invalid byte), no lines for a blob over the size cap.  Leaving the block
    ends git (killed if a read stopped early); the whole read refuses and names what
    these lines leave out."""
    wanted, _ = _commit_listing(repo, commit)
    with Blobs(repo, MAX_CSV_BYTES) as reader:
        yield {path: partial(_blob_lines, reader, blob) for path, blob in wanted.items()}


def _blob_lines(reader: Blobs, blob: str) -> Iterator[str]:
    raw = reader.open(blob)
    if raw is None:
        return
    with io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as text:
        yield from text
