"""Plain ``git`` subprocess calls for culprits and the gate: resolve a revision, list
the commits of a range with the files each touched, read a file or a tree at a commit.
No network; works on sparse and partial checkouts (everything is read from git's
objects, never from the work tree).  Failures are :class:`GitError` (a
:class:`~kiana.errors.UsageError`) with a hint."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from kiana.errors import UsageError
from kiana.importers.gitread import git as run_git
from kiana.importers.gitread import grafts
from kiana.safe import excerpt, terminal

_PR = (re.compile(r"\(#(\d{1,9})\)"), re.compile(r"^Merge pull request #(\d{1,9})\b"))
_SHA = re.compile(r"^[0-9a-f]{40}$")


class GitError(UsageError):
    """A git command failed: not a repository, an unknown revision, git missing."""


def git(repo: Path, *args: str, check: bool = True) -> str:
    """The standard output of ``git -C REPO ARGS`` (a :class:`GitError` when it fails)."""
    return run_git(
        repo,
        *args,
        check=check,
        error=GitError,
        hint="pass a Liger-Kernel checkout and revisions it holds (git fetch, fetch-depth: 0)",
    )


def require_repository(repo: Path) -> Path:
    """``repo`` when it is (inside) a git work tree or repository; a :class:`GitError`
    naming it otherwise."""
    if not repo.is_dir():
        raise GitError(f"{terminal(repo)}: not a directory", hint="pass a Liger-Kernel checkout")
    try:
        subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--git-dir"],
            check=True,
            capture_output=True,
        )
    except FileNotFoundError:
        raise GitError("git is not installed", hint="install git") from None
    except subprocess.CalledProcessError:
        raise GitError(
            f"{terminal(repo)}: not a git repository",
            hint="pass a Liger-Kernel clone (actions/checkout with fetch-depth: 0)",
        ) from None
    return repo


def resolve(repo: Path, ref: str, *, option: str = "REF") -> str:
    """The full sha of commit ``ref``; a :class:`GitError` when the repository does not
    know it."""
    if ref.startswith("-"):
        raise GitError(
            f"{option} {excerpt(ref)}: a revision cannot start with '-'",
            hint="a branch, tag or sha",
        )
    sha = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).strip()
    if not _SHA.match(sha):
        raise GitError(
            f"{option} {excerpt(ref)}: unknown revision in {terminal(repo)}",
            hint="fetch it first (git fetch origin main; actions/checkout with fetch-depth: 0)",
        )
    return sha


def pr_number(subject: str) -> int | None:
    """The pull request a subject names: ``... (#123)`` (squash merges, the last one
    wins) or ``Merge pull request #123 from ...``; None otherwise (also for a number
    of ten digits or more: no pull request has one, and it would overflow).

    >>> pr_number("Fix (#12) (#345)"), pr_number("x (#99999999999999999999)")
    (345, None)
    """
    found = _PR[0].findall(subject)
    if found:
        return int(found[-1])
    merge = _PR[1].match(subject)
    return int(merge.group(1)) if merge else None


@dataclass(frozen=True)
class Commit:
    """One commit of a range: full sha, subject, committer date (ISO 8601 UTC) and the
    files it touched (merges: compared with their first parent)."""

    sha: str
    subject: str
    date: str | None  #: None when git's date is out of range (a hostile commit)
    files: tuple[str, ...]

    @property
    def pr(self) -> int | None:
        return pr_number(self.subject)


#: Committer dates outside [1970, 2100) are not real: shown as unknown, never compared.
_LATEST = datetime(2100, 1, 1, tzinfo=UTC).timestamp()


def _iso(epoch: str) -> str | None:
    """``%ct`` -> ISO 8601 UTC; None for a date git cannot mean (out of range)."""
    try:
        seconds = int(epoch)
    except ValueError:
        return None
    if not 0 <= seconds < _LATEST:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_log(out: str) -> list[Commit]:
    """``git log -z --format=%x00%H%x1f%ct%x1f%s --name-only``: an empty token starts a
    commit (no file name is empty), the first name after it follows a newline."""
    commits: list[Commit] = []
    tokens = iter(out.split("\0"))
    head: list[str] | None = None
    files: list[str] = []
    for token in tokens:
        if token == "":
            if head is not None:
                commits.append(_commit(head, files))
            head, files = [*next(tokens, "").split("\x1f", 2), "", ""][:3], []
            continue
        name = token.removeprefix("\n") if not files else token
        if name:
            files.append(name)
    if head is not None:
        commits.append(_commit(head, files))
    return commits


def _commit(head: list[str], files: list[str]) -> Commit:
    sha, epoch, subject = head
    return Commit(sha.strip(), subject, _iso(epoch), tuple(files))


_LOG_FORMAT = "--format=%x00%H%x1f%ct%x1f%s"


@cache
def commits(repo: Path, start: str, end: str, *, first_parent: bool) -> tuple[Commit, ...]:
    """The commits of ``start..end``, newest first, with their files.  ``first_parent``:
    the first-parent chain (a main branch's history: each merge or squash once, its files
    against the previous state of the branch); otherwise every non-merge commit (a pull
    request's own commits).  The commits a shallow clone is cut at are left out: git
    shows them adding every file they hold, so they would be blamed for all of it."""
    mode = ["--first-parent", "--diff-merges=first-parent"] if first_parent else ["--no-merges"]
    out = git(
        repo, "log", "-z", _LOG_FORMAT, "--name-only", "--no-renames", *mode, f"{start}..{end}"
    )
    cut = grafts(repo)
    return tuple(c for c in _parse_log(out) if c.sha not in cut)


@cache
def tree(repo: Path, commit: str, under: str = "src/liger_kernel") -> frozenset[str]:
    """The file paths under ``under`` at ``commit`` (empty when there are none)."""
    from kiana.importers.gitread import tree_entries

    return frozenset(path for path, _, _ in tree_entries(repo, commit, under))


def show(repo: Path, commit: str, path: str) -> str | None:
    """``path`` as it was at ``commit`` when it is a regular file there; None when it
    did not exist or is a link or a submodule (never followed)."""
    from kiana.importers.gitblobs import read_blobs
    from kiana.importers.gitread import REGULAR_MODES, tree_entries

    for name, mode, blob in tree_entries(repo, commit, path):
        if name == path and mode in REGULAR_MODES:
            return read_blobs(repo, [blob], 64 * 1024 * 1024)[blob]
    return None


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    """Whether commit ``older`` is an ancestor of (or is) ``newer``."""
    done = subprocess.run(
        ["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
    )
    return done.returncode == 0
