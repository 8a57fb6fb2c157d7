"""The gate's conclusion is said once: the exit code, the comment, the terminal and the
JSON read :func:`kiana.culprits.outcome.outcome`."""

from __future__ import annotations

import polars as pl
import pytest

from kiana.culprits.accounting import Accounting
from kiana.culprits.exits import EXIT_CODES
from kiana.culprits.gate import GateResult
from kiana.culprits.headsessions import Unjudged
from kiana.culprits.markdown import _headline
from kiana.culprits.outcome import RULES, outcome
from kiana.stats import Judgement


def _result(
    verdict: str | None,
    basis: str = "adjusted",
    refused: int = 0,
    unjudged: tuple[Unjudged, ...] = (),
) -> GateResult:
    rows = {"is_subject": [True], "verdict": [verdict], "basis": [basis]} if verdict else {}
    findings = pl.DataFrame(rows, schema={"is_subject": pl.Boolean, "verdict": pl.String,
                                          "basis": pl.String})  # fmt: skip
    empty = pl.DataFrame()
    judgement = Judgement(steps=empty, findings=findings, changepoints=empty, versions=empty,
                          runs_judged=0, coverage=None, quality=empty)  # type: ignore[arg-type]  # fmt: skip
    books = Accounting(refused=tuple(f"file {i}" for i in range(refused)), unjudged=unjudged)
    return GateResult(base="b" * 40, head="h" * 40, worktree=False, history_rows=1,
                      head_rows=1, findings=findings, steps=empty, judgement=judgement,
                      accounting=books)  # fmt: skip


CASES = {
    "regressed": _result("regression"),
    "unjudged_rows": _result(None, refused=2),
    "not_judged": _result(
        "unchanged",
        "unchanged",
        unjudged=(Unjudged({"kernel": "k"}, "2025-01-01T00:00:00Z", 4, "before", is_subject=True),),
    ),
    "unplaced": _result("regression", "bridge"),
    "toolchain": _result("drift", "toolchain"),
    "unstable": _result("inconclusive", "unstable"),
    "uncertain": _result("inconclusive", "inconclusive"),
    None: _result("unchanged", "unchanged"),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_each_case_is_decided_by_its_own_rule(rule: str | None) -> None:
    assert outcome(CASES[rule]).rule == rule


@pytest.mark.parametrize("rule", list(CASES))
def test_comment_terminal_and_json_say_the_same_reason(rule: str | None) -> None:
    result = CASES[rule]
    said = result.outcome
    assert _headline(result) == said.headline()
    assert said.reason in said.line() and said.reason in said.headline()
    assert result.summary()["outcome"] == {"status": said.status, "reason": said.reason}
    assert result.summary()["exit_code"] == said.exit_code


def test_a_regression_outranks_what_could_not_be_judged() -> None:
    both = _result("regression", refused=1)
    assert both.outcome.rule == "regressed" and both.exit_code == 1


def test_every_rules_exit_code_is_documented() -> None:
    assert {rule.exit_code for rule in RULES} <= set(EXIT_CODES)


def test_the_terminal_line_names_its_exit_code_unless_passed() -> None:
    assert CASES["uncertain"].outcome.line().startswith("COULD NOT JUDGE: 1 Liger finding")
    assert CASES["uncertain"].outcome.line().endswith("(exit 3)")
    assert CASES[None].outcome.line().startswith("passed: no Liger regression")


def test_a_head_finding_of_an_unstable_series_could_not_be_judged() -> None:
    said = CASES["unstable"].outcome
    assert said.exit_code == 3 and said.status == "could not judge"
    assert "unstable, could not judge" in said.reason


def test_a_head_finding_that_moved_with_every_untouched_kernel_could_not_be_judged() -> None:
    said = CASES["toolchain"].outcome
    assert said.exit_code == 3 and "the machine or the toolchain of the head's run" in said.reason


def test_rows_of_a_new_kernel_pass_and_are_named_as_new() -> None:
    new = Unjudged({"kernel": "k"}, "s", 4, "no history", is_subject=True, new="kernel")
    said = _result("unchanged", "unchanged", unjudged=(new,)).outcome
    assert said.exit_code == 0 and "judged or new (4 row(s) of a kernel" in said.reason


def test_baseline_rows_not_judged_do_not_fail() -> None:
    other = Unjudged({"kernel": "k"}, "s", 4, "before", is_subject=False)
    assert _result("unchanged", "unchanged", unjudged=(other,)).exit_code == 0
