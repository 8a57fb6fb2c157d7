"""Did a baseline's own code change between two recordings?  The git answer to the
statistics' ``CodeChanges`` question (:mod:`kiana.stats`).

A baseline provider (``torch``, ``huggingface``) is a control only while its code stays
the same.  Its code is the kernel's benchmark script,
``benchmark/scripts/benchmark_<kernel>.py`` (the reference implementation is often
written there), and the modules of the repository that script imports, one level deep:
``from utils import ...`` (``benchmark/scripts/utils.py``), ``from
test.transformers.test_jsd import ...`` (``test/transformers/test_jsd.py``), as the
script is at either recording commit.  Liger's own modules (``liger_kernel.*``) are the
kernel under test, not the baseline, and are left out (:mod:`kiana.culprits.layout`
ranks them as culprits).

:meth:`GitCodeChanges.baseline_changed` takes the distinct ``kernel, from_origin,
to_origin`` of the steps (origins ``<commit>:<csv>``, or null) and adds
``baseline_changed`` (a commit of ``(from commit, to commit]``, the recording commit
included, touches one of those files; for a module the script imports, only where a
hunk between the two commits can change what runs, :mod:`kiana.culprits.hunks`: one
that only routes the results keeps the control) and ``baseline_note`` (``"benchmark_jsd.py
changed in abc123def456"``; null when unchanged or when it cannot tell: an origin
without a commit, a commit the repository does not hold)::

    from kiana.culprits.changes import GitCodeChanges
    kiana.stats.judge(runs, options, code_changes=GitCodeChanges(Path("~/Liger-Kernel")))

:meth:`GitCodeChanges.kernel_changed` answers the same pairs for the code under test
(:mod:`kiana.stats.unstable`: a series that switches level at a commit touching the
kernel changed, one that switches at the same code is unstable): ``kernel_changed``, a
commit of ``(from commit, to commit]`` touches one of the kernel's files
(:func:`kiana.culprits.rank.kernel_files_at` the later commit: the culprits' rule), null
when it cannot tell.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import polars as pl

from kiana.culprits import history, layout
from kiana.culprits.hunks import mattering_hunks
from kiana.culprits.rank import kernel_files_at, origin_commit

SCRIPTS = "benchmark/scripts"
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import\b", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.M)


def script(kernel: str) -> str | None:
    """The benchmark script of ``kernel``; None for a name that cannot name a file."""
    if not layout.patterns(kernel):
        return None
    return f"{SCRIPTS}/benchmark_{layout.base_kernel(kernel)}.py"


def imported_modules(text: str, tree: frozenset[str]) -> list[str]:
    """The files of ``tree`` that the benchmark script ``text`` imports (module
    docstring), sorted.

    >>> tree = frozenset({"benchmark/scripts/utils.py", "test/transformers/test_jsd.py"})
    >>> imported_modules("from utils import x\\nfrom test.transformers.test_jsd import y\\n"
    ...                  "from liger_kernel.ops.jsd import z\\nimport torch\\n", tree)
    ['benchmark/scripts/utils.py', 'test/transformers/test_jsd.py']
    """
    names: list[tuple[str, str]] = [(dots, name) for dots, name in _FROM.findall(text)]
    for group in _IMPORT.findall(text):
        names += [("", part.strip()) for part in group.split(",")]
    found: set[str] = set()
    for dots, name in names:
        if name.split(".")[0] == "liger_kernel":
            continue
        parts = [p for p in name.split(".") if p]
        bases = [SCRIPTS] if dots else [SCRIPTS, ""]  # the script's folder, then the root
        for base in bases:
            stem = posixpath.join(base, *parts) if parts else base
            for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
                if candidate in tree:
                    found.add(candidate)
    return sorted(found)


class GitCodeChanges:
    """``CodeChanges`` (:mod:`kiana.stats`) from a Liger-Kernel checkout (module
    docstring); each kernel and pair of commits is looked up once."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._memo: dict[tuple[str, str, str], tuple[bool, str | None]] = {}
        self._kernel_memo: dict[tuple[str, str, str], bool | None] = {}

    def files(self, kernel: str, commits: tuple[str, ...]) -> list[str]:
        """The benchmark script of ``kernel`` and what it imports, at any of ``commits``."""
        path = script(kernel)
        if path is None:
            return []
        files = {path}
        for commit in commits:
            text = history.show(self.repo, commit, path)
            if text is not None:
                tree = history.tree(self.repo, commit, SCRIPTS) | history.tree(
                    self.repo, commit, "test"
                )
                files.update(imported_modules(text, tree))
        return sorted(files)

    def changed(self, kernel: str, start: str, end: str) -> tuple[bool, str | None]:
        """Whether a commit of ``start..end`` touches the baseline's files, and the note."""
        key = (kernel, start, end)
        if key not in self._memo:
            self._memo[key] = self._lookup(kernel, start, end)
        return self._memo[key]

    def _lookup(self, kernel: str, start: str, end: str) -> tuple[bool, str | None]:
        if start == end:
            return False, None
        files = self.files(kernel, (start, end))
        if not files:
            return False, None
        try:
            found = history.commits(self.repo, start, end, first_parent=False)
        except history.GitError:
            return False, None
        wanted = set(files)
        touching = [c for c in found if wanted & set(c.files)]
        if not touching:
            return False, None
        own = script(kernel)
        hunks: list[str] = []
        for path in sorted({f for c in touching for f in wanted & set(c.files)}):
            if path == own:
                continue
            before, after = history.show(self.repo, start, path), history.show(self.repo, end, path)
            if before is not None and after is not None:
                # A shared module: only hunks that can change what runs (kiana.culprits.hunks).
                mattering = mattering_hunks(posixpath.basename(path), before, after)
                hunks += mattering
                if not mattering:
                    wanted.discard(path)
        touching = [c for c in found if wanted & set(c.files)]
        if not touching:
            return False, None
        newest = touching[0]
        names = sorted({posixpath.basename(f) for c in touching for f in wanted & set(c.files)})
        more = f" (and {len(touching) - 1} more commit(s))" if len(touching) > 1 else ""
        extra = f" ({'; '.join(hunks[:3])})" if hunks else ""
        return True, f"{', '.join(names)} changed in {newest.sha[:12]}{more}{extra}"

    def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """``pairs`` (``kernel, from_origin, to_origin``) plus ``baseline_changed`` and
        ``baseline_note`` (module docstring)."""
        answers: list[tuple[bool, str | None]] = []
        for kernel, start, end in pairs.select("kernel", "from_origin", "to_origin").iter_rows():
            first, last = origin_commit(start), origin_commit(end)
            if not kernel or first is None or last is None:
                answers.append((False, None))
            else:
                answers.append(self.changed(str(kernel), first, last))
        return pairs.with_columns(
            pl.Series("baseline_changed", [a for a, _ in answers], dtype=pl.Boolean),
            pl.Series("baseline_note", [n for _, n in answers], dtype=pl.String),
        )

    def kernel_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """``pairs`` (``kernel, from_origin, to_origin``) plus ``kernel_changed`` (module
        docstring)."""
        answers: list[bool | None] = []
        for kernel, start, end in pairs.select("kernel", "from_origin", "to_origin").iter_rows():
            first, last = origin_commit(start), origin_commit(end)
            if not kernel or first is None or last is None:
                answers.append(None)
                continue
            key = (str(kernel), first, last)
            if key not in self._kernel_memo:
                self._kernel_memo[key] = self._kernel_lookup(*key)
            answers.append(self._kernel_memo[key])
        return pairs.with_columns(pl.Series("kernel_changed", answers, dtype=pl.Boolean))

    def _kernel_lookup(self, kernel: str, start: str, end: str) -> bool | None:
        if start == end:
            return False
        files = kernel_files_at(self.repo, kernel, end)
        try:
            found = history.commits(self.repo, start, end, first_parent=False)
        except history.GitError:
            return None
        return any(files.kind(path) is not None for c in found for path in c.files)
