"""The pull-request gate behind ``kiana gate``: did the head's benchmark rows make a
Liger kernel slower than the history up to the base?

1. **History**: every row ever recorded in ``benchmark/data/*.csv`` up to ``base``
   (the walk of ``kiana import liger --git REPO --rev BASE``), each labelled with the
   commit that first held it.
2. **Head rows**: the rows of the head's ``benchmark/data/*.csv`` (``--head REF``: as
   committed; default: the work tree, uncommitted edits included) that the history
   does not hold: the rows the head adds or changes.  A row also in a commit of
   ``base..head`` is labelled with the first such commit (it recorded the session);
   a row only in the work tree has no commit (its origin is the file alone).
3. **Judged together** with :func:`kiana.stats.judge`, as ``kiana regressions`` judges
   (sessions, same-label sessions included: a pull request re-measures under the
   installed version); the gate keeps the findings whose later session is a head
   session, and their culprits are the commits of ``base..head`` (merges left out)
   that touch the kernel (:mod:`kiana.culprits.rank`, the recording commit first).

Everything is read from git's objects but the work tree's CSVs, so a sparse or
partial checkout (``benchmark/`` and ``src/`` only, or blobs fetched on demand) works;
a shallow clone does not hold the history (check out with ``fetch-depth: 0``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from kiana.culprits import history
from kiana.culprits.rank import Finder
from kiana.errors import InputError
from kiana.importers.git import PATHSPEC, csv_versions, release_at
from kiana.importers.liger import NotLigerCsvError, convert_rows, read_csv_file, read_rows
from kiana.importers.rows import Row, Skipped
from kiana.pipeline import Analysis
from kiana.stats import Judgement, JudgeOptions

_DATA = "benchmark/data"
_NO_CSV_HINT = "pass a Liger-Kernel checkout: its results live in benchmark/data/*.csv"


@dataclass(frozen=True)
class GateResult:
    """What :func:`gate` found: the pull request's findings (with culprits) and how
    they were reached."""

    base: str  #: full sha of the base
    head: str  #: full sha of the head commit (for the work tree: HEAD)
    worktree: bool  #: the head is the work tree (uncommitted CSV edits included)
    history_rows: int  #: distinct rows up to the base
    head_rows: int  #: rows the head adds or changes
    findings: pl.DataFrame  #: findings whose later session is the head's, annotated
    steps: pl.DataFrame  #: their per-workload steps
    judgement: Judgement = field(repr=False)

    @property
    def regressions(self) -> pl.DataFrame:
        """The findings that fail the gate: a Liger provider's regression."""
        return self.findings.filter(pl.col("is_liger") & (pl.col("verdict") == "regression"))

    @property
    def head_label(self) -> str:
        return f"work tree at {self.head[:12]}" if self.worktree else self.head[:12]

    def summary(self) -> dict[str, Any]:
        """The gate's own fields, for the JSON."""
        counts = dict(self.findings.group_by("verdict").len().iter_rows())
        return {
            "base": self.base,
            "head": self.head,
            "worktree": self.worktree,
            "history_rows": self.history_rows,
            "head_rows": self.head_rows,
            "findings": self.findings.height,
            "verdicts": {str(k): int(v) for k, v in sorted(counts.items())},
            "regressed": self.regressions.height > 0,
        }


def _rows(
    text: str, source: str, path: str, commit: str | None, release: str | None
) -> list[Row | Skipped]:
    defaults = {"liger_version": release} if release else None
    try:
        return list(read_rows(text, source, csv_name=path, commit=commit, defaults=defaults))
    except NotLigerCsvError as exc:
        return [Skipped(source, 1, None, exc.message.removeprefix(f"{source}: "))]


def _history(
    repo: Path, base: str
) -> tuple[list[Row | Skipped], set[tuple[tuple[str, str], ...]], int]:
    """Rows up to ``base`` (deduplicated, oldest first), their keys, CSV versions read."""
    rows: list[Row | Skipped] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    files = 0
    for version in csv_versions(repo, base):
        files += 1
        source = f"{version.commit[:12]}:{version.path}"
        for item in _rows(version.text, source, version.path, version.commit, version.release):
            if isinstance(item, Row):
                if item.key in seen:
                    continue
                seen.add(item.key)
            rows.append(item)
    return rows, seen, files


def _head_csvs(repo: Path, head: str, worktree: bool) -> dict[str, str]:
    """``benchmark/data/<name>.csv`` -> its text at the head (the work tree, or ``head``)."""
    if worktree:
        folder = repo / _DATA
        return {
            f"{_DATA}/{p.name}": read_csv_file(p)
            for p in sorted(folder.glob("*.csv"))
            if p.is_file()
        }
    listed = history.git(repo, "ls-tree", "--name-only", head, "--", f"{_DATA}/")
    texts = {}
    for path in listed.splitlines():
        if path.endswith(".csv") and path.count("/") == 2:
            text = history.show(repo, head, path)
            if text is not None:
                texts[path] = text
    return texts


def _origin(row: Row) -> str:
    return f"{row.commit}:{row.csv}" if row.commit else str(row.csv)


def head_rows(
    repo: Path, base: str, head: str, worktree: bool, known: set[tuple[tuple[str, str], ...]]
) -> tuple[list[Row | Skipped], int]:
    """The rows of the head that ``known`` (the history's keys) does not hold, each
    with the first commit of ``base..head`` holding it (none: the work tree's own);
    and the number of head CSVs read."""
    texts = _head_csvs(repo, head, worktree)
    release = None
    if any("liger_version" not in t.split("\n", 1)[0] for t in texts.values()):
        release = release_at(repo, head)
    label = "worktree" if worktree else head[:12]
    fresh: dict[tuple[tuple[str, str], ...], Row | None] = {}
    skipped: list[Row | Skipped] = []
    for path, text in texts.items():
        for item in _rows(text, f"{label}:{path}", path, None, release):
            if isinstance(item, Skipped):
                skipped.append(item)
            elif item.key not in known:
                fresh.setdefault(item.key, item)
    recorded: dict[tuple[tuple[str, str], ...], Row] = {}
    for version in csv_versions(repo, f"{base}..{head}"):
        source = f"{version.commit[:12]}:{version.path}"
        for item in _rows(version.text, source, version.path, version.commit, version.release):
            if isinstance(item, Row) and item.key in fresh and item.key not in recorded:
                recorded[item.key] = item
    rows: list[Row | Skipped] = [recorded.get(key, row) for key, row in fresh.items() if row]
    return rows + skipped, len(texts)


def _analyze(
    rows: Iterable[Row | Skipped],
    repo: Path,
    options: JudgeOptions,
    origins: set[str],
    finder: Finder,
) -> Analysis:
    """Load ``rows`` into a database of their own and run :func:`kiana.pipeline.analyze`
    on it, selecting the findings whose later session is one of ``origins``."""
    import kiana.load
    from kiana.pipeline import Selection, analyze

    result = convert_rows(rows, sources=[str(repo)])
    con = kiana.load.connect(None)
    try:
        kiana.load.load_documents(con, result.documents, source="gate")
        return analyze(
            con, options, git=repo, finder=finder, selection=Selection(to_origin=tuple(origins))
        )
    finally:
        con.close()


def gate(
    repo: Path, base: str, head: str | None = None, options: JudgeOptions | None = None
) -> GateResult:
    """Judge the rows ``head`` (default: the work tree) adds or changes against the
    history up to ``base`` (module docstring).  A :class:`~kiana.errors.UsageError`
    when ``repo`` is not a git repository or a revision is unknown; an
    :class:`~kiana.errors.InputError` when neither holds a Liger CSV."""
    repo = Path(
        history.git(history.require_repository(repo), "rev-parse", "--show-toplevel").strip()
        or repo
    )
    base_sha = history.resolve(repo, base, option="--base")
    head_sha = history.resolve(repo, head or "HEAD", option="--head" if head else "HEAD")
    worktree = head is None
    past, known, files = _history(repo, base_sha)
    fresh, head_files = head_rows(repo, base_sha, head_sha, worktree, known)
    if files == 0 and head_files == 0:
        raise InputError(
            f"{repo}: no Liger CSVs: neither {base} nor the head holds {PATHSPEC}",
            hint=_NO_CSV_HINT,
        )
    origins = {_origin(r) for r in fresh if isinstance(r, Row)}
    finder = Finder(repo, first_parent=False, span=(base_sha, head_sha))
    analysis = _analyze([*past, *fresh], repo, options or JudgeOptions(), origins, finder)
    return GateResult(
        base=base_sha,
        head=head_sha,
        worktree=worktree,
        history_rows=len(known),
        head_rows=sum(isinstance(r, Row) for r in fresh),
        findings=analysis.findings,
        steps=analysis.steps,
        judgement=analysis.judgement,
    )
