"""The one pipeline behind every door: runs -> judgement -> culprits.

``kiana regressions``, ``kiana report``, ``kiana gate``, the notebooks and the README's
snippet all call :func:`analyze`, so they can never disagree: the same runs (with the
``origin`` that tells sessions apart, :mod:`kiana.load.judged`), judged with the same
options (:func:`kiana.stats.judge`), with the same culprits (:func:`kiana.culprits.annotate`).

>>> import kiana
>>> con = kiana.connect()
>>> _ = kiana.load_paths(con, ["data/seeds"])
>>> analysis = kiana.analyze(con)
>>> analysis.findings.height        # two documents, one session each: nothing to compare
0
>>> analysis.coverage.compared
0

A :class:`Selection` narrows what is shown (findings, steps, quality, change points,
trade-offs) without changing what is judged: controls, noise floors and the
calibration always use every run.

What every surface counts, lists and folds is decided here once
(:func:`count_findings`, :meth:`Analysis.listed`): a baseline provider's drift that a
finding of the code under test of the same sitting explains is *folded* (kept in ``findings`` and the
JSON, named in that finding's evidence, never counted again); unchanged findings and
the drift of baselines are counted but not *listed* by default.

>>> analysis.counts.sentence()
'0 findings'
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from kiana.errors import UsageError

if TYPE_CHECKING:
    import duckdb

    from kiana.culprits.rank import Finder
    from kiana.shards import Judged
    from kiana.stats import CodeChanges, Coverage, Judgement, JudgeOptions

#: Substring filters (any case) and whole-value filters (any case) of a Selection.
_SUBSTRING = ("kernel", "gpu")
_WHOLE = ("provider", "pass")


@dataclass(frozen=True)
class Selection:
    """What to show: kernels and GPUs by substring, providers and passes by whole
    name (all ignoring case), one metric, and (the gate) the origins of the later
    session.  Empty means everything."""

    kernel: tuple[str, ...] = ()
    gpu: tuple[str, ...] = ()
    provider: tuple[str, ...] = ()
    pass_: tuple[str, ...] = ()
    metric: str | None = None
    to_origin: tuple[str, ...] | None = None

    def _values(self, column: str) -> tuple[str, ...]:
        values: tuple[str, ...] = self.pass_ if column == "pass" else getattr(self, column)
        return values

    def apply(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of ``frame`` selected (a filter on a column ``frame`` lacks is skipped)."""
        conditions = [
            _matches(column, self._values(column), column in _SUBSTRING)
            for column in (*_SUBSTRING, *_WHOLE)
            if self._values(column) and column in frame.columns
        ]
        if self.metric and "metric" in frame.columns:
            conditions.append(pl.col("metric") == self.metric)
        if self.to_origin is not None and "to_origin" in frame.columns:
            origins = pl.Series(sorted(self.to_origin), dtype=pl.String)
            conditions.append(pl.col("to_origin").cast(pl.String).is_in(origins.implode()))
        return frame.filter(*conditions) if conditions else frame

    def check(self, runs: pl.DataFrame) -> None:
        """Raise :class:`UsageError` for a filter value that matches no run, naming the
        closest values that exist (a filter that silently matches nothing reads as
        "no regressions")."""
        for column in (*_SUBSTRING, *_WHOLE):
            for value in self._values(column):
                if runs.select(_matches(column, (value,), column in _SUBSTRING).any()).item():
                    continue
                known = runs.get_column(column).unique().drop_nulls().to_list()
                lowered = {k.lower(): k for k in known}
                close = difflib.get_close_matches(value.lower(), list(lowered), n=3, cutoff=0.4)
                shown = ", ".join(lowered[c] for c in close) or ", ".join(sorted(known)[:5])
                raise UsageError(
                    f"--{column} {value!r} matches no run",
                    hint=f"closest {column} values in the database: {shown or 'none'}",
                )


def _matches(column: str, values: tuple[str, ...], substring: bool) -> pl.Expr:
    lowered = pl.col(column).str.to_lowercase()
    expr = pl.lit(False)
    for value in values:
        wanted = value.lower()
        expr = expr | (
            lowered.str.contains(wanted, literal=True) if substring else lowered == wanted
        )
    return expr


def listed_expr() -> pl.Expr:
    """True for a finding every surface lists by default: what moved or could not be
    decided, and the drift of the code under test (a baseline's drift is context)."""
    verdict = pl.col("verdict")
    return verdict.is_in(["regression", "improvement", "inconclusive"]) | (
        (verdict == "drift") & pl.col("is_subject")
    )


def folded_expr(findings: pl.DataFrame) -> pl.Expr:
    """True for a finding folded into another (a baseline's drift it explains)."""
    if "folded" not in findings.columns:
        return pl.lit(False)
    return pl.col("folded").fill_null(False)


@dataclass(frozen=True)
class Counts:
    """How many findings there are and what the surfaces fold and do not list, the same
    numbers in the CLI, the JSON, the report and the notebooks (:func:`count_findings`)."""

    findings: int  #: every finding selected, folded ones included
    folded: int  #: baseline drift folded into the finding of the code under test it explains
    verdicts: dict[str, int]  #: the findings of their own (not folded), per verdict
    listed: int  #: of their own, listed by default
    unlisted: dict[str, int]  #: of their own, not listed by default: why -> how many
    #: of ``verdicts``, the baseline providers' own (``is_subject`` false), per verdict:
    #: not the code under test, said wherever a verdict is counted (issue 39)
    baselines: dict[str, int] = field(default_factory=dict)

    def verdict_text(self, verdict: str, count: str | None = None) -> str:
        """``6 inconclusive`` with ``(3 of them baselines')`` where baselines hold some of
        them (not for drift: a baseline's drift is its one verdict)."""
        n = self.verdicts.get(verdict, 0)
        text = f"{n:,} {verdict}" if count is None else count
        theirs = self.baselines.get(verdict, 0)
        if theirs and verdict != "drift":
            text += f" ({'all' if theirs == n else f'{theirs:,} of them'} baselines')"
        return text

    @property
    def own(self) -> int:
        """The findings of their own: every finding but the folded ones."""
        return self.findings - self.folded

    def tally(self) -> str:
        """``10 regression, 12 improvement, 10 drift, 6 inconclusive, 293 unchanged``."""
        return ", ".join(self.verdict_text(v) for v in self.verdicts)

    def not_listed(self) -> str:
        """What is not listed by default, ``296 unchanged, 2 drift`` ('' for nothing)."""
        return ", ".join(f"{n:,} {why}" for why, n in self.unlisted.items() if n)

    def folded_clause(self, note: str) -> str:
        """``; 9 baseline drift folded into the findings they explain (NOTE)``, or ''."""
        if not self.folded:
            return ""
        return f"; {self.folded:,} baseline drift folded into the findings they explain ({note})"

    def sentence(self) -> str:
        """The counts in one line, saying what is folded and what is not listed."""
        if self.findings == 0:
            return "0 findings"
        text = f"{self.own:,} findings: {self.tally()}"
        if unlisted := self.not_listed():
            text += f"; not listed by default: {unlisted}"
        return text + self.folded_clause("not counted again")


def count_findings(findings: pl.DataFrame) -> Counts:
    """The :class:`Counts` of a findings frame (the one place that counts findings)."""
    from kiana.vocabulary import VERDICTS

    folded = findings.filter(folded_expr(findings))
    own = findings.filter(~folded_expr(findings))
    per = dict(own.group_by("verdict").len().iter_rows()) if own.height else {}
    listed = own.filter(listed_expr()) if own.height else own
    rest = own.filter(~listed_expr()) if own.height else own
    unchanged = rest.filter(pl.col("verdict") == "unchanged").height if rest.height else 0
    theirs = (
        own.filter(~pl.col("is_subject").fill_null(False))
        if "is_subject" in own.columns
        else own.clear()
    )
    base = dict(theirs.group_by("verdict").len().iter_rows()) if theirs.height else {}
    return Counts(
        findings=findings.height,
        folded=folded.height,
        verdicts={v: int(per.get(v, 0)) for v in VERDICTS},
        listed=listed.height,
        unlisted={"unchanged": unchanged, "baseline drift": rest.height - unchanged},
        baselines={v: int(base[v]) for v in VERDICTS if base.get(v)},
    )


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` found.  ``judged`` holds every shard's judgement (the runs
    and steps of each shard on disk when there are several: :mod:`kiana.shards`);
    ``findings`` are the selected findings, with their culprit columns.  ``runs`` and
    ``judgement`` put every shard's runs and steps in one frame when first read (what
    notebooks and small databases want); at scale, read them shard by shard
    (:meth:`iter_steps`) or only what is shown (:meth:`steps_of`, :meth:`runs_of`)."""

    judged: Judged = field(repr=False)
    findings: pl.DataFrame  #: the selected findings, with culprits and sources
    options: JudgeOptions
    selection: Selection
    repo: Path | None  #: the Liger checkout culprits came from, if any
    finder: Finder = field(repr=False)

    @cached_property
    def runs(self) -> pl.DataFrame:
        """Every run judged (:func:`kiana.load.judged.judged_runs`), shard by shard."""
        return self.judged.all_runs()

    @cached_property
    def judgement(self) -> Judgement:
        """Everything judged, as one :class:`~kiana.stats.Judgement` (every step)."""
        return self.judged.judgement()

    @property
    def runs_total(self) -> int:
        """How many runs were read (judged or not), without reading them again."""
        return self.judged.runs_total

    @property
    def counts(self) -> Counts:
        """How many findings, folded and not listed (:func:`count_findings`)."""
        return count_findings(self.findings)

    def listed(self, *, everything: bool = False) -> pl.DataFrame:
        """The findings a surface lists, most important first: by default what moved or
        could not be decided (:func:`listed_expr`); ``everything``: every finding of its
        own (unchanged ones and baseline drift too).  Folded findings never: the finding
        of the code under test they explain names them."""
        own = self.findings.filter(~folded_expr(self.findings))
        return own if everything or own.height == 0 else own.filter(listed_expr())

    def table(self, *, everything: bool = False) -> pl.DataFrame:
        """:meth:`listed` for people: one row per finding, the step as
        ``0.8.0 (2026-06-16) → 0.8.0 (2026-07-05)`` and the changes as percentages
        (:func:`kiana.report.text.finding_table`, what the CLI and the report show)."""
        from kiana.report.text import finding_table

        return finding_table(self.listed(everything=everything))

    @property
    def steps(self) -> pl.DataFrame:
        """The selected steps (no culprit columns: :meth:`annotate` adds them)."""
        return self.selection.apply(self.judgement.steps)

    def iter_steps(self) -> Iterator[pl.DataFrame]:
        """The selected steps, one shard at a time (bounded memory)."""
        for steps in self.judged.steps():
            yield self.selection.apply(steps)

    def steps_of(self, findings: pl.DataFrame) -> pl.DataFrame:
        """The steps behind ``findings`` (the same finding keys)."""
        return self.judged.steps_of(findings)

    def runs_of(self, partitions: list[str]) -> pl.DataFrame:
        """The runs of the partitions named."""
        return self.judged.runs_of(partitions)

    @property
    def quality(self) -> pl.DataFrame:
        return self.selection.apply(self.judged.quality)

    @property
    def changepoints(self) -> pl.DataFrame:
        return self.selection.apply(self.judged.changepoints)

    @property
    def tradeoffs(self) -> pl.DataFrame | None:
        tradeoffs = self.judged.tradeoffs
        return None if tradeoffs is None else self.selection.apply(tradeoffs)

    @property
    def coverage(self) -> Coverage:
        return self.judged.coverage

    def annotate(self, frame: pl.DataFrame, *, lists: bool = True) -> pl.DataFrame:
        """``frame`` (findings or steps) with the culprit columns of this analysis and
        each side's source (:func:`kiana.culprits.recorded.with_sources`)."""
        from kiana.culprits import annotate
        from kiana.culprits.recorded import with_sources

        return with_sources(annotate(frame, self.repo, lists=lists, finder=self.finder))


def analyze(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions | None = None,
    *,
    git: Path | None = None,
    selection: Selection | None = None,
    finder: Finder | None = None,
    code_changes: CodeChanges | None = None,
    full: bool = False,
) -> Analysis:
    """Judge every run behind ``con`` and rank the selected findings' culprits.

    The runs are judged shard by shard (:func:`kiana.shards.judge_all`: one GPU, or
    a few small ones, at a time, read with ``WHERE gpu IN (...)``), so memory is set by
    the largest shard, not the database; DuckDB's ``memory_limit`` of ``con`` lowers
    the shard size.  ``git`` is the Liger-Kernel checkout the rows were imported from
    (culprits are commits; without it each finding carries the ``git log`` command
    that lists them); without ``git`` (and ``finder``), the checkout ``kiana import
    liger --git`` recorded in the database is used while it still exists
    (:func:`remembered_repository`).  ``finder`` replaces ``Finder(git)`` (the gate's
    range of commits).  ``code_changes`` says where baselines' own code changed between
    two recordings (:class:`kiana.stats.CodeChanges`; their controls are then set
    aside); with a checkout and no ``code_changes``, its git history says
    (:class:`kiana.culprits.changes.GitCodeChanges`).  A database file opened for
    writing keeps the judgement (:mod:`kiana.shards.store`): after a load only what the
    new sessions touch is judged again; ``full`` judges everything again.  A filter of
    ``selection`` that matches no run raises :class:`~kiana.errors.UsageError`."""
    from kiana.culprits import Finder, annotate
    from kiana.culprits.recorded import with_sources
    from kiana.shards import judge_all, selectable
    from kiana.stats import JudgeOptions

    options = options or JudgeOptions()
    selection = selection or Selection()
    if git is None and finder is None:
        git = remembered_repository(con)
    if code_changes is None and git is not None:
        from kiana.culprits.changes import GitCodeChanges

        code_changes = GitCodeChanges(git)
    selection.check(selectable(con))
    judged = judge_all(con, options, code_changes=code_changes, full=full)
    finder = finder or Finder(git)
    findings = with_sources(annotate(selection.apply(judged.findings), git, finder=finder))
    return Analysis(judged, findings, options, selection, git, finder)


def remember_repository(con: duckdb.DuckDBPyConnection, repo: Path) -> None:
    """Record that the rows of ``con`` came from the Liger-Kernel checkout ``repo``
    (``kiana import liger --git``), so :func:`analyze` finds culprits without ``git``."""
    con.execute("INSERT INTO repositories VALUES (?, now()::TIMESTAMP)", [str(repo.resolve())])


def remembered_repository(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The checkout :func:`remember_repository` recorded last, while it is still a git
    repository; None otherwise (or in a database older than the table)."""
    import duckdb

    from kiana.errors import KianaError

    try:
        rows = con.execute(
            "SELECT path FROM repositories ORDER BY imported_at DESC NULLS LAST LIMIT 1"
        ).fetchall()
    except duckdb.CatalogException:
        return None
    if not rows:
        return None
    from kiana.culprits.history import require_repository

    try:
        return require_repository(Path(rows[0][0]))
    except KianaError:  # moved or deleted since the import: the git log hints instead
        return None
