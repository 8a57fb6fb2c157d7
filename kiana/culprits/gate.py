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
a shallow clone does not hold the history (check out with ``fetch-depth: 0``): it warns,
and the commits it is cut at are never blamed.

The head is untrusted (``tests/SECURITY.md``): its files are read without following a
link (:mod:`kiana.culprits.headfiles`), a re-run is compared with the rows it replaced
first (:mod:`kiana.culprits.gaterows`), and every head row that could not be judged is
counted with its reason (:mod:`kiana.culprits.accounting`).  Exit codes:
:data:`EXIT_CODES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from kiana.culprits import accounting, headsessions, history
from kiana.culprits.accounting import Accounting, Rejected
from kiana.culprits.exits import (
    EXIT_CODES,
    EXIT_CRASH,
    EXIT_PASSED,
    EXIT_REGRESSED,
    EXIT_ROWS,
    EXIT_TIMEOUT,
    EXIT_UNJUDGED,
    EXIT_USAGE,
    MAX_ROWS,
    TIMEOUT_SECONDS,
)
from kiana.culprits.gaterows import (
    Counter,
    HeadRows,
    head_rows,
    precount_commit,
    precount_worktree,
    raw_records,
    replaced_first,
)
from kiana.culprits.gaterows import history as history_rows
from kiana.culprits.headfiles import HeadFiles, commit_csvs, worktree_csvs
from kiana.culprits.outcome import Outcome, outcome
from kiana.culprits.rank import Finder
from kiana.errors import InputError, UsageError
from kiana.importers.git import PATHSPEC
from kiana.importers.gitread import shallow_warning
from kiana.importers.liger import convert_rows
from kiana.importers.rows import LigerRowError, Row, Skipped, row_spec
from kiana.pipeline import Analysis, Selection
from kiana.safe import excerpt, terminal
from kiana.stats import Judgement, JudgeOptions
from kiana.vocabulary import BRIDGE

_NO_CSV_HINT = "pass a Liger-Kernel checkout: its results live in benchmark/data/*.csv"

__all__ = [
    "EXIT_CODES",
    "EXIT_CRASH",
    "EXIT_PASSED",
    "EXIT_REGRESSED",
    "EXIT_ROWS",
    "EXIT_TIMEOUT",
    "EXIT_UNJUDGED",
    "EXIT_USAGE",
    "MAX_ROWS",
    "TIMEOUT_SECONDS",
    "GateResult",
    "gate",
]


@dataclass(frozen=True)
class GateResult:
    """What :func:`gate` found: the pull request's findings (with culprits), how they
    were reached, and what of the head could not be judged."""

    base: str  #: full sha of the base
    head: str  #: full sha of the head commit (for the work tree: HEAD)
    worktree: bool  #: the head is the work tree (uncommitted CSV edits included)
    history_rows: int  #: distinct rows up to the base
    head_rows: int  #: rows the head adds or changes
    findings: pl.DataFrame  #: findings whose later session is the head's, annotated
    steps: pl.DataFrame  #: their per-workload steps
    judgement: Judgement = field(repr=False)
    accounting: Accounting = field(default_factory=Accounting)
    warnings: tuple[str, ...] = ()  #: shallow clone, head behind its base, ...

    @property
    def regressions(self) -> pl.DataFrame:
        """The findings that fail the gate: a Liger provider's regression of the head's
        own step."""
        return self.findings.filter(
            pl.col("is_subject") & (pl.col("verdict") == "regression") & ~_bridged()
        )

    @property
    def unplaced(self) -> pl.DataFrame:
        """A Liger provider's regression between an earlier session and the head's, across
        one too noisy to say in which step (a bridge, :mod:`kiana.stats.bridges`): maybe
        this pull request's, maybe an earlier commit's; it fails closed (exit 3)."""
        return self.findings.filter(
            pl.col("is_subject") & (pl.col("verdict") == "regression") & _bridged()
        )

    @property
    def uncertain(self) -> pl.DataFrame:
        """A Liger provider's finding of the head's own step that is ``inconclusive``
        (not an outlier session's): too noisy to say whether this pull request regressed
        it, so it fails closed (exit 3); its ``reruns`` say how many runs per session
        would resolve it, where reruns can."""
        return self.findings.filter(
            pl.col("is_subject")
            & (pl.col("verdict") == "inconclusive")
            & ~pl.col("basis").eq_missing(pl.lit("outlier"))
        )

    @property
    def head_label(self) -> str:
        return f"work tree at {self.head[:12]}" if self.worktree else self.head[:12]

    @property
    def outcome(self) -> Outcome:
        """What the gate concludes (:mod:`kiana.culprits.outcome`): 1 on a Liger
        regression, else 3 when Liger rows could not be judged, a regression could not be
        placed in the head's step (:attr:`unplaced`) or a Liger finding of the head is too
        noisy to say (:attr:`uncertain`), else 0; with the sentence every surface says."""
        return outcome(self)

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code

    def summary(self) -> dict[str, Any]:
        """The gate's own fields, for the JSON."""
        counts = dict(self.findings.group_by("verdict").len().iter_rows())
        said = self.outcome
        return {
            "base": self.base,
            "head": self.head,
            "worktree": self.worktree,
            "history_rows": self.history_rows,
            "head_rows": self.head_rows,
            "findings": self.findings.height,
            "verdicts": {str(k): int(v) for k, v in sorted(counts.items())},
            "regressed": self.regressions.height > 0,
            "unplaced": self.unplaced.height,
            "uncertain": self.uncertain.height,
            "exit_code": said.exit_code,
            "outcome": {"status": said.status, "reason": said.reason},
            "not_judged": self.accounting.summary(),
            "warnings": list(self.warnings),
        }


def _bridged() -> pl.Expr:
    return pl.col("basis").eq_missing(pl.lit(BRIDGE))


def _origin(row: Row) -> str:
    return f"{row.commit}:{row.csv}" if row.commit else str(row.csv)


def _new_skips(skipped: list[Skipped], head: HeadFiles, base: HeadFiles) -> list[Skipped]:
    """The rows skipped reading the head that the base's version of the file did not
    hold as they are (a bad row already at the base is the history's, not the head's):
    records found by the csv module's reader position (:func:`raw_records`)."""
    held = {path: set(raw_records(text).values()) for path, text in base.texts.items()}
    records = {path: raw_records(text) for path, text in head.texts.items()}
    out = []
    for item in skipped:
        path = item.source.split(":", 1)[-1]
        record = records.get(path, {}).get(item.line)
        if record is None or record not in held.get(path, set()):
            out.append(item)
    return out


def _precheck(fresh: HeadRows, skipped: list[Skipped]) -> tuple[list[Row], list[Rejected]]:
    """The head rows that become documents, and the others with their reasons."""
    rejected = [Rejected(s.source, s.line, s.reason, None) for s in skipped]
    good = []
    for row in fresh.rows:
        try:
            row_spec(row)
        except LigerRowError as exc:
            where = f"column {exc.column}: " if exc.column else ""
            rejected.append(
                Rejected(row.source, row.line, where + exc.reason, row.cells.get("kernel_provider"))
            )
        else:
            good.append(row)
    return good, rejected


def _doc_origin(doc: dict[str, Any]) -> str:
    labels = doc["run"]["metadata"]["labels"]
    commit, csv = labels.get("liger_commit"), labels.get("liger_csv")
    return f"{commit}:{csv}" if commit else str(csv)


def _analyze(
    past: list[Row | Skipped],
    fresh: list[Row],
    repo: Path,
    options: JudgeOptions,
    finder: Finder,
) -> tuple[Analysis, list[Rejected], set[str]]:
    """Load the rows into a database of their own (the history, then the head: the
    loader's rejects of the head's load are head rows) and run
    :func:`kiana.pipeline.analyze`, selecting the findings of head sessions."""
    import kiana.load
    from kiana.pipeline import analyze

    origins = {_origin(r) for r in fresh}
    result = convert_rows([*past, *fresh], sources=[str(repo)])
    docs = {True: [], False: []}  # type: dict[bool, list[dict[str, Any]]]
    for doc in result.documents:
        docs[_doc_origin(doc) in origins].append(doc)
    con = kiana.load.connect(None)
    try:
        kiana.load.load_documents(con, docs[False], source="history")
        loaded = kiana.load.load_documents(con, docs[True], source="head")
        rejects = con.execute(
            "SELECT source, json_path, reason FROM rejects WHERE load_id = ? ORDER BY source",
            [loaded.load_id],
        ).fetchall()
        rejected = []
        for source, path, reason in rejects:
            index = int(str(source).rsplit(":", 1)[-1]) - 1
            spec = docs[True][index]["run"]["spec"] if 0 <= index < len(docs[True]) else {}
            provider = str(spec.get("provider")) if spec.get("provider") else None
            rejected.append(
                Rejected(_doc_origin(docs[True][index]), None, f"{path}: {reason}", provider)
            )
        analysis = analyze(
            con,
            options,
            git=repo,
            finder=finder,
            selection=Selection(to_origin=tuple(origins)),
        )
    finally:
        con.close()
    return analysis, rejected, origins


def _check_refs(repo: Path, base: str, head: str, worktree: bool) -> list[str]:
    """Warnings on how base and head relate; a :class:`UsageError` when a committed head
    is behind its base (the refs are swapped, or the branch holds nothing new)."""
    if base == head:
        return []
    if history.is_ancestor(repo, head, base):
        if not worktree:
            raise UsageError(
                f"--head {head[:12]} is behind --base {base[:12]} (an ancestor of it): "
                "the head adds nothing, or the refs are swapped",
                hint="kiana gate REPO --base origin/main --head PR_BRANCH",
            )
        return [
            f"HEAD {head[:12]} is behind the base {base[:12]}: only uncommitted rows are the head's"
        ]
    if not history.is_ancestor(repo, base, head):
        return [
            f"the head does not contain the base {base[:12]} (not rebased, or the refs are "
            "swapped): rows the base added since they parted are history, not the head's"
        ]
    return []


def gate(
    repo: Path,
    base: str,
    head: str | None = None,
    options: JudgeOptions | None = None,
    *,
    max_rows: int = MAX_ROWS,
) -> GateResult:
    """Judge the rows ``head`` (default: the work tree) adds or changes against the
    history up to ``base`` (module docstring).  A :class:`~kiana.errors.UsageError`
    when ``repo`` is not a git repository, a revision is unknown or the head is behind
    the base; an :class:`~kiana.errors.InputError` when neither holds a Liger CSV; a
    :class:`~kiana.culprits.gaterows.RowLimitError` beyond ``max_rows`` distinct rows."""
    repo = Path(
        history.git(history.require_repository(repo), "rev-parse", "--show-toplevel").strip()
        or repo
    )
    base_sha = history.resolve(repo, base, option="--base")
    head_sha = history.resolve(repo, head or "HEAD", option="--head" if head else "HEAD")
    worktree = head is None
    warnings = _check_refs(repo, base_sha, head_sha, worktree)
    shallow = shallow_warning(repo)
    warnings += [shallow] if shallow else []
    counter = Counter(max_rows)
    past, known, files = history_rows(repo, base_sha, counter)
    (precount_worktree if worktree else precount_commit)(repo, head_sha, known, counter)
    head_files = worktree_csvs(repo) if worktree else commit_csvs(repo, head_sha)
    label = "worktree" if worktree else head_sha[:12]
    fresh = head_rows(repo, (base_sha, head_sha), head_files, known, label, counter)
    if files == 0 and not head_files.texts and not head_files.refused:
        raise InputError(
            f"{terminal(repo)}: no Liger CSVs: neither {excerpt(base)} nor the head holds "
            f"{PATHSPEC}",
            hint=_NO_CSV_HINT,
        )
    base_files = commit_csvs(repo, base_sha)
    skipped = _new_skips(fresh.skipped, head_files, base_files)
    good, rejected = _precheck(fresh, skipped)
    cut = replaced_first(past, good, base_files)
    finder = Finder(repo, first_parent=False, span=(base_sha, head_sha))
    options = options or JudgeOptions()
    analysis, load_rejected, origins = _analyze(cut.kept, good, repo, options, finder)
    runs = analysis.runs
    judgement = analysis.judgement
    conflicts = accounting.head_conflicts(judgement.quality, runs, origins)
    books = Accounting(
        refused=head_files.refused,
        rejected=tuple(rejected + load_rejected),
        conflicts=conflicts,
        unmatched=accounting.unmatched(runs, origins),
        unjudged=headsessions.unjudged(
            runs, judgement.steps, origins, conflicts=conflicts, gap=options.session_gap
        ),
        replaced_series=cut.series,
        dropped_rows=cut.dropped,
    )
    return GateResult(
        base=base_sha,
        head=head_sha,
        worktree=worktree,
        history_rows=len(known),
        head_rows=len(fresh.rows) + len(skipped),
        findings=analysis.findings,
        steps=analysis.steps,
        judgement=analysis.judgement,
        accounting=books,
        warnings=tuple(warnings),
    )
