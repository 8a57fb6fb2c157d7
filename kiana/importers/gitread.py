"""Reading git's objects with plain ``git`` subprocesses, safely for hostile histories.

Everything here reads git's machine formats: NUL-separated output (``-z``), so a file
name with non-ASCII characters, quotes or a newline is read as it is (git's quoted
output would name another file); blobs by their object id
(:mod:`kiana.importers.gitblobs`); modes, so a symbolic link or a
submodule committed where a CSV should be is named and never read as one.  No network:
every command reads the local object database.

>>> parse_raw("\\0" + "a" * 40 + "\\0\\n:000000 100644 " + "0" * 40 + " " + "b" * 40 + " A\\0x.csv\\0")
[('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', [('x.csv', '100644', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'A')])]
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

from kiana.errors import InputError, KianaError
from kiana.safe import excerpt, terminal

#: A regular file's mode in git (``100755``: executable, also regular).
REGULAR_MODES = ("100644", "100755")
#: What other modes are, for the message that names a refused entry.
MODE_NAMES = {"120000": "a symbolic link", "160000": "a submodule"}


def git(
    repo: Path,
    *args: str,
    check: bool = True,
    error: type[KianaError] = InputError,
    hint: str = "pass a Liger-Kernel checkout (--git DIR) and a valid --rev range",
) -> str:
    """The standard output of ``git -C REPO ARGS`` (plain subprocess, no network); an
    ``error`` (a :class:`KianaError` subclass) with ``hint`` when git fails or is
    missing.  Its message quotes at most git's first line of errors, made inert."""
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
        first = (exc.stderr.strip().splitlines() or [""])[0][:200]
        raise error(
            f"{terminal(repo)}: git {args[0]} failed: {terminal(first)}", hint=hint
        ) from None
    return done.stdout


def parse_raw(out: str) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """``git log -z --format=%x00%H --raw --no-renames --no-abbrev`` -> (commit, [(path,
    new mode, new blob, status)]) per commit, in git's order.  An empty token starts a
    commit (no path is empty); each ``:`` status record is followed by its path."""
    commits: list[tuple[str, list[tuple[str, str, str, str]]]] = []
    tokens = iter(out.split("\0"))
    for token in tokens:
        if token == "":
            sha = next(tokens, "").strip()
            if sha:
                commits.append((sha, []))
            continue
        record = token.lstrip("\n")
        if not record.startswith(":") or not commits:
            continue
        path = next(tokens, "")
        fields = record[1:].split(" ")
        if len(fields) >= 5 and path:
            commits[-1][1].append((path, fields[1], fields[3], fields[4][:1]))
    return commits


def parse_tree(out: str) -> list[tuple[str, str, str]]:
    """``git ls-tree -z`` -> (path, mode, object id)."""
    entries = []
    for record in out.split("\0"):
        meta, tab, path = record.partition("\t")
        fields = meta.split(" ")
        if tab and len(fields) == 3:
            entries.append((path, fields[0], fields[2]))
    return entries


def is_shallow(repo: Path) -> bool:
    """Whether ``repo`` is a shallow clone (its history is cut at some commits)."""
    out = git(repo, "rev-parse", "--is-shallow-repository", check=False)
    return out.strip() == "true"


@cache
def grafts(repo: Path) -> frozenset[str]:
    """The commits a shallow clone cut the history at (their parents are missing: git
    shows them as adding every file they hold).  Empty for a full clone."""
    if not is_shallow(repo):
        return frozenset()
    name = git(repo, "rev-parse", "--git-path", "shallow", check=False).strip()
    path = Path(name) if Path(name).is_absolute() else repo / name
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def shallow_warning(repo: Path) -> str | None:
    """A warning for a shallow clone, or None."""
    cut = grafts(repo)
    if not cut:
        return None
    return (
        f"shallow clone: the history is cut at {len(cut)} commit(s) ({', '.join(sorted(c[:12] for c in cut)[:3])}): "
        "rows before them are missing and those commits are never blamed "
        "(check out with fetch-depth: 0)"
    )


def tree_entries(repo: Path, commit: str, under: str) -> Iterator[tuple[str, str, str]]:
    """(path, mode, object id) of every entry under ``under`` at ``commit``."""
    out = git(repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", under, check=False)
    yield from parse_tree(out)


def resolve_commits(repo: Path, names: Iterable[str]) -> dict[str, str | None]:
    """The full sha of each commit name (an abbreviated or full sha, as Liger's CI
    folders write them) through one ``git cat-file --batch-check`` (None: the repository
    holds no such commit, or the abbreviation is ambiguous).  Callers pass hexadecimal
    names only (nothing git could read as an option or a path)."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "--batch-check"],
            input="".join(f"{name}^{{commit}}\n" for name in wanted),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=False,
        )
    except FileNotFoundError:
        raise InputError("git is not installed", hint="install git") from None
    lines = done.stdout.splitlines()
    found: dict[str, str | None] = dict.fromkeys(wanted)
    for name, line in zip(wanted, lines, strict=False):
        fields = line.split()
        if len(fields) == 3 and fields[1] == "commit" and len(fields[0]) == 40:
            found[name] = fields[0]
    return found


def touched_files(
    repo: Path, rev: str | None, pathspec: str
) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(commit, [(path, mode, blob)] it added or changed under ``pathspec``), oldest
    commit first; read NUL-separated (``-z``), so any file name is read as it is."""
    if not repo.is_dir():
        raise InputError(f"{terminal(repo)}: not a directory", hint="pass a Liger-Kernel checkout")
    if rev is not None and rev.startswith("-"):
        raise InputError(
            f"--rev {excerpt(rev)}: a revision range cannot start with '-'",
            hint="give commits, tags or ranges such as v0.4.0..main",
        )
    out = git(
        repo,
        "log",
        "--reverse",
        "-z",
        "--format=%x00%H",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        "--diff-merges=first-parent",
        rev or "HEAD",
        "--",
        pathspec,
    )
    commits = []
    for commit, changes in parse_raw(out):
        paths = [(path, mode, blob) for path, mode, blob, status in changes if status != "D"]
        if paths:
            commits.append((commit, paths))
    return commits


def refusal(path: str, mode: str) -> str | None:
    """Why a tree entry of ``mode`` is not read as a CSV (None: a regular file)."""
    if mode in REGULAR_MODES:
        return None
    return f"{MODE_NAMES.get(mode, 'not a regular file')} in git (mode {mode}): not read"
