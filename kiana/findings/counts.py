"""What every surface counts, lists and folds, decided once.

A baseline provider's drift that a finding of the code under test of the same sitting
explains is *folded* (kept in ``findings`` and the JSON, named in that finding's
evidence, never counted again); unchanged findings and the drift of baselines are
counted but not *listed* by default.

>>> import polars as pl
>>> frame = pl.DataFrame({"verdict": ["regression", "unchanged"], "is_subject": [True, True]})
>>> count_findings(frame).sentence()
'2 findings: 1 regression, 0 improvement, 0 drift, 0 inconclusive, 1 unchanged; not listed by default: 1 unchanged'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from kiana.vocabulary import VERDICTS


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
