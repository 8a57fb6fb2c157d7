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
from kiana.importers.git import git as run_git

_PR = (re.compile(r"\(#(\d+)\)"), re.compile(r"^Merge pull request #(\d+)\b"))
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
        raise GitError(f"{repo}: not a directory", hint="pass a Liger-Kernel checkout")
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
            f"{repo}: not a git repository",
            hint="pass a Liger-Kernel clone (actions/checkout with fetch-depth: 0)",
        ) from None
    return repo


def resolve(repo: Path, ref: str, *, option: str = "REF") -> str:
    """The full sha of commit ``ref``; a :class:`GitError` when the repository does not
    know it."""
    if ref.startswith("-"):
        raise GitError(
            f"{option} {ref!r}: a revision cannot start with '-'", hint="a branch, tag or sha"
        )
    sha = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).strip()
    if not _SHA.match(sha):
        raise GitError(
            f"{option} {ref!r}: unknown revision in {repo}",
            hint="fetch it first (git fetch origin main; actions/checkout with fetch-depth: 0)",
        )
    return sha


def pr_number(subject: str) -> int | None:
    """The pull request a subject names: ``... (#123)`` (squash merges, the last one
    wins) or ``Merge pull request #123 from ...``; None otherwise."""
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
    date: str
    files: tuple[str, ...]

    @property
    def pr(self) -> int | None:
        return pr_number(self.subject)


def _iso(epoch: str) -> str:
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_log(out: str) -> list[Commit]:
    commits: list[Commit] = []
    for block in out.split("\0")[1:]:
        head, _, rest = block.partition("\n")
        sha, epoch, subject = [*head.split("\x1f", 2), "", ""][:3]
        files = tuple(line.strip() for line in rest.splitlines() if line.strip())
        commits.append(Commit(sha.strip(), subject, _iso(epoch), files))
    return commits


_LOG_FORMAT = "--format=%x00%H%x1f%ct%x1f%s"


@cache
def commits(repo: Path, start: str, end: str, *, first_parent: bool) -> tuple[Commit, ...]:
    """The commits of ``start..end``, newest first, with their files.  ``first_parent``:
    the first-parent chain (a main branch's history: each merge or squash once, its files
    against the previous state of the branch); otherwise every non-merge commit (a pull
    request's own commits)."""
    mode = ["--first-parent", "--diff-merges=first-parent"] if first_parent else ["--no-merges"]
    out = git(repo, "log", _LOG_FORMAT, "--name-only", "--no-renames", *mode, f"{start}..{end}")
    return tuple(_parse_log(out))


@cache
def tree(repo: Path, commit: str, under: str = "src/liger_kernel") -> frozenset[str]:
    """The file paths under ``under`` at ``commit`` (empty when there are none)."""
    out = git(repo, "ls-tree", "-r", "--name-only", commit, "--", under, check=False)
    return frozenset(line for line in out.splitlines() if line)


def show(repo: Path, commit: str, path: str) -> str | None:
    """``path`` as it was at ``commit``; None when it did not exist."""
    done = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    return done.stdout if done.returncode == 0 else None
