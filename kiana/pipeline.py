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
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from kiana.errors import UsageError

if TYPE_CHECKING:
    import duckdb

    from kiana.culprits.rank import Finder
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
            conditions.append(pl.col("to_origin").is_in(origins))
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


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` found.  ``judgement`` is everything judged; the frames
    below are the selection of it, and ``findings`` carry their culprit columns."""

    runs: pl.DataFrame  #: the runs judged (:func:`kiana.load.judged.judged_runs`)
    judgement: Judgement = field(repr=False)
    findings: pl.DataFrame  #: the selected findings, with culprits
    options: JudgeOptions
    selection: Selection
    repo: Path | None  #: the Liger checkout culprits came from, if any
    finder: Finder = field(repr=False)

    @property
    def steps(self) -> pl.DataFrame:
        """The selected steps (no culprit columns: :meth:`annotate` adds them)."""
        return self.selection.apply(self.judgement.steps)

    @property
    def quality(self) -> pl.DataFrame:
        return self.selection.apply(self.judgement.quality)

    @property
    def changepoints(self) -> pl.DataFrame:
        return self.selection.apply(self.judgement.changepoints)

    @property
    def tradeoffs(self) -> pl.DataFrame | None:
        tradeoffs = self.judgement.tradeoffs
        return None if tradeoffs is None else self.selection.apply(tradeoffs)

    @property
    def coverage(self) -> Coverage:
        return self.judgement.coverage

    def annotate(self, frame: pl.DataFrame, *, lists: bool = True) -> pl.DataFrame:
        """``frame`` (findings or steps) with the culprit columns of this analysis."""
        from kiana.culprits import annotate

        return annotate(frame, self.repo, lists=lists, finder=self.finder)


def analyze(
    con: duckdb.DuckDBPyConnection,
    options: JudgeOptions | None = None,
    *,
    git: Path | None = None,
    selection: Selection | None = None,
    finder: Finder | None = None,
    code_changes: CodeChanges | None = None,
) -> Analysis:
    """Judge every run behind ``con`` and rank the selected findings' culprits.

    ``git`` is the Liger-Kernel checkout the rows were imported from (culprits are
    commits; without it each finding carries the ``git log`` command that lists
    them); ``finder`` replaces ``Finder(git)`` (the gate's range of commits);
    ``code_changes`` says where baselines' own code changed between two recordings
    (:class:`kiana.stats.CodeChanges`; their controls are then set aside).  A filter
    of ``selection`` that matches no run raises :class:`~kiana.errors.UsageError`."""
    from kiana.culprits import Finder, annotate
    from kiana.load.judged import judged_runs
    from kiana.stats import JudgeOptions, judge

    options = options or JudgeOptions()
    selection = selection or Selection()
    runs = judged_runs(con)
    selection.check(runs)
    judgement = judge(runs, options, code_changes=code_changes)
    finder = finder or Finder(git)
    findings = annotate(selection.apply(judgement.findings), git, finder=finder)
    return Analysis(
        runs=runs,
        judgement=judgement,
        findings=findings,
        options=options,
        selection=selection,
        repo=git,
        finder=finder,
    )
