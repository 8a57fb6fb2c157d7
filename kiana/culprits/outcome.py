"""What ``kiana gate`` concludes, said once for every surface.

The exit code, the comment's headline, the terminal's last line and the JSON's
``outcome`` all read :func:`outcome`, so they cannot disagree: before this module the
comment and the terminal each wrote their own sentence per case, and the two
wordings had drifted apart.  One entry of :data:`RULES` per case, first match wins,
in the order of the exit codes' severity (a regression of the pull request's own step
before anything it could not judge).  The sentences hold counts only, never a row's
text: a pull request's data never reaches them.

>>> [rule.name for rule in RULES]
['regressed', 'unjudged_rows', 'not_judged', 'unplaced', 'toolchain', 'unstable', 'uncertain']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import polars as pl

from kiana.culprits.exits import EXIT_PASSED, EXIT_REGRESSED, EXIT_UNJUDGED
from kiana.vocabulary import TOOLCHAIN, UNSTABLE


class Accounted(Protocol):
    """The head rows' accounting a rule reads (:class:`kiana.culprits.accounting`)."""

    @property
    def failing(self) -> int: ...
    @property
    def unjudged_failing(self) -> int: ...
    @property
    def new_rows(self) -> int: ...


class GateResult(Protocol):
    """What the rules read of a gate's result (:class:`kiana.culprits.gate.GateResult`
    has it; typed here so the outcome sits below the gate, not beside it in a circle)."""

    @property
    def regressions(self) -> pl.DataFrame: ...
    @property
    def unplaced(self) -> pl.DataFrame: ...
    @property
    def uncertain(self) -> pl.DataFrame: ...
    @property
    def findings(self) -> pl.DataFrame: ...
    @property
    def accounting(self) -> Accounted: ...


def _subject(result: GateResult, basis: str) -> int:
    """The head's findings of the code under test on ``basis``."""
    return result.findings.filter(pl.col("is_subject") & (pl.col("basis") == basis)).height


#: The three things a gate can say of a pull request.
Status = Literal["failed", "could not judge", "passed"]


@dataclass(frozen=True)
class Rule:
    """One case: how many of the result's rows it counts, the status and exit code it
    gives when there are any, and its sentence (``{n}`` the count)."""

    name: str
    count: Callable[[GateResult], int]
    status: Status
    exit_code: int
    sentence: str


@dataclass(frozen=True)
class Outcome:
    """The gate's conclusion: status, exit code and one plain sentence."""

    status: Status
    exit_code: int
    reason: str
    rule: str | None  #: the :data:`RULES` entry that decided; None: passed

    def headline(self) -> str:
        """The comment's first line (Markdown)."""
        if self.status == "passed":
            return f"### kiana gate **passed**: {self.reason}"
        target = " this pull request" if self.status == "could not judge" else ""
        return f"### kiana gate **{self.status}**{target}: {self.reason}"

    def line(self) -> str:
        """The terminal's last line."""
        if self.status == "passed":
            return f"passed: {self.reason}"
        return f"{self.status.upper()}: {self.reason} (exit {self.exit_code})"


RULES: tuple[Rule, ...] = (
    Rule("regressed", lambda r: r.regressions.height, "failed", EXIT_REGRESSED,
         "{n:,} Liger regression(s) of the head's own step"),
    Rule("unjudged_rows", lambda r: r.accounting.failing, "could not judge", EXIT_UNJUDGED,
         "{n:,} head file(s) or row(s) of a Liger provider refused, rejected or conflicting"),
    Rule("not_judged", lambda r: r.accounting.unjudged_failing, "could not judge", EXIT_UNJUDGED,
         "{n:,} head row(s) of a Liger provider not judged: no judged step ends at their "
         "session (each reason listed)"),
    Rule("unplaced", lambda r: r.unplaced.height, "could not judge", EXIT_UNJUDGED,
         "{n:,} Liger regression(s) between an earlier session and the head's, across a "
         "session too noisy to say whether this pull request caused them"),
    Rule("toolchain", lambda r: _subject(r, TOOLCHAIN), "could not judge", EXIT_UNJUDGED,
         "{n:,} Liger finding(s) of the head moved with every other Liger kernel no commit "
         "touched (the machine or the toolchain of the head's run, kiana.stats.toolchain): "
         "could not judge"),
    Rule("unstable", lambda r: _subject(r, UNSTABLE), "could not judge", EXIT_UNJUDGED,
         "{n:,} Liger finding(s) of the head in an unstable series (it alternates between two "
         "levels, or moves both ways at the same code, kiana.stats.unstable): unstable, could "
         "not judge"),
    Rule("uncertain", lambda r: r.uncertain.height, "could not judge", EXIT_UNJUDGED,
         "{n:,} Liger finding(s) of the head too noisy to say whether it regressed "
         "(inconclusive; the evidence says how many reruns would resolve each)"),
)  # fmt: skip

PASSED = "no Liger regression, every head row of a Liger provider judged, none inconclusive"


def outcome(result: GateResult) -> Outcome:
    """The first rule of :data:`RULES` that counts anything, else passed."""
    for rule in RULES:
        n = rule.count(result)
        if n:
            return Outcome(rule.status, rule.exit_code, rule.sentence.format(n=n), rule.name)
    new = result.accounting.new_rows
    if new:
        said = PASSED.replace(
            "judged", f"judged or new ({new:,} row(s) of a kernel, GPU or workload the pull "
            "request adds)", 1)  # fmt: skip
        return Outcome("passed", EXIT_PASSED, said, None)
    return Outcome("passed", EXIT_PASSED, PASSED, None)
