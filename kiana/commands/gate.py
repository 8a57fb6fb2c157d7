"""``kiana gate REPO --base REF [--head REF] [--json] [--markdown FILE]``: the PR gate.

The benchmark rows the head adds or changes in ``benchmark/data/*.csv`` (default head:
the work tree, uncommitted edits included) are judged against the history up to
``--base`` with the statistics of ``kiana regressions`` (:mod:`kiana.culprits.gate`);
the findings whose later session is the head's are printed with their culprits (the
commits of base..head touching the kernel).  Exit status: 0 no Liger regression, 1 a
Liger provider regressed, 2 a usage error (not a git repository, an unknown revision,
no Liger CSVs).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.commands.common import add_judge_options, judge_options

if TYPE_CHECKING:
    from kiana.culprits.gate import GateResult

HELP = "pull-request gate: judge the benchmark rows a head adds against the history up to a base"

EPILOG = """\
exit status:
  0  no Liger provider regressed (improvements, drift, inconclusive and baselines pass)
  1  a Liger provider regressed: a finding with verdict 'regression'
  2  usage error: REPO is not a git repository, --base/--head unknown, no Liger CSVs

example (a pull request's checkout, benchmarks re-run into benchmark/data/*.csv):
  kiana gate . --base origin/main --markdown kiana-gate.md
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("repo", type=Path, metavar="REPO", help="a Liger-Kernel checkout")
    parser.add_argument(
        "--base", required=True, metavar="REF", help="the history to judge against (origin/main)"
    )
    parser.add_argument(
        "--head", metavar="REF",
        help="the commit whose rows are judged (default: the work tree, uncommitted edits "
        "to benchmark/data/*.csv included)",
    )  # fmt: skip
    add_judge_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.add_argument(
        "--markdown", type=Path, metavar="FILE", help="also write a pull-request comment here"
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from kiana.culprits.gate import gate
    from kiana.culprits.markdown import comment
    from kiana.jsonstream import write_json

    options = judge_options(args, changepoints=False)
    result = gate(args.repo, args.base, args.head, options)
    if args.markdown is not None:
        args.markdown.write_text(comment(result), encoding="utf-8")
    if args.json:
        write_json(
            sys.stdout,
            {
                "gate": result.summary(),
                "findings": result.findings,
                "steps": result.steps,
                "quality": result.judgement.quality,
            },
        )
    else:
        _print(result)
    return 1 if result.regressions.height else 0


def _print(result: GateResult) -> None:
    from kiana.commands.regressions import culprit_lines

    findings = result.findings
    failed = result.regressions.height
    print(
        f"kiana gate: {result.head_label} against {result.base[:12]}: "
        f"{result.head_rows:,} new or changed row(s) over a history of "
        f"{result.history_rows:,}; {findings.height:,} finding(s)"
    )
    if result.head_rows == 0:
        print("the head adds or changes no benchmark row: nothing to judge")
    shown = findings.filter(findings["verdict"] != "unchanged")
    for row in shown.iter_rows(named=True):
        change = f"{row['change'] * 100:+.1f}%" if row["change"] is not None else "n/a"
        print(
            f"{row['verdict']:12} {row['kernel']}/{row['pass']} {row['provider']} on "
            f"{row['gpu']}: {row['from_version']} ({str(row['from_session'])[:10]}) -> "
            f"{row['to_version']} ({str(row['to_session'])[:10]}) {change}; {row['evidence']}"
        )
        for line in culprit_lines(row.get("culprits")):
            print(f"{'':12} {line}")
    unchanged = findings.height - shown.height
    if unchanged:
        print(f"({unchanged} unchanged finding(s) not shown: --json)")
    print(f"FAILED: {failed} Liger regression(s)" if failed else "passed: no Liger regression")
