"""``kiana regressions``: which kernels got slower between sessions.

Reads the runs of a kiana database, judges every series (:func:`kiana.stats.judge`)
and prints the findings (one kernel, pass, provider, GPU and metric between two
sessions, judged on its whole sweep), ranked regressions first, for people; or with
``--json`` one object ``{"coverage": {...}, "findings": [...], "steps": [...],
"quality": [...], "changepoints": [...], "tradeoffs": [...]}`` for machines.
Findings are the unit everywhere: the summary, the JSON and ``--fail-on VERDICT``
(exit 1 when any filtered finding has that verdict) count findings; ``--steps``
prints the per-workload steps behind them.  Filters apply to the output only:
controls and noise floors always use every run.  ``--git REPO`` (the Liger-Kernel
checkout the rows were imported from) ranks each Liger finding's culprits
(:mod:`kiana.culprits`): the top 3 under its table row, all of them in the JSON
(``culprits``); without it the JSON findings carry the ``git log`` command that would
list them (``culprits_command``, ``culprits_since``, ``culprits_until``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.commands.common import add_db_option, add_judge_options, judge_options, open_db
from kiana.vocabulary import FAILABLE, VERDICTS

if TYPE_CHECKING:
    import polars as pl

    from kiana.pipeline import Analysis, Selection

HELP = "judge every series: regressions, improvements and drift between sessions"


def configure(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    add_judge_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.add_argument(
        "--fail-on", action="append", choices=FAILABLE, default=[], metavar="VERDICT",
        help="exit 1 when any finding has this verdict (regression|improvement|drift|"
        "inconclusive); may be repeated",
    )  # fmt: skip
    parser.add_argument(
        "--steps", action="store_true",
        help="also print the per-workload steps behind the findings shown",
    )  # fmt: skip
    parser.add_argument(
        "--kernel",
        action="append",
        default=[],
        help="only this kernel (repeatable; substring, any case)",
    )
    parser.add_argument(
        "--gpu",
        action="append",
        default=[],
        help="only this GPU (repeatable; substring, any case)",
    )
    parser.add_argument(
        "--provider",
        action="append",
        default=[],
        help="only this provider (repeatable; whole name, any case)",
    )
    parser.add_argument(
        "--pass", dest="pass_", action="append", default=[], help="only this timed pass"
    )
    parser.add_argument("--metric", choices=("latency", "memory"), help="only this metric")
    parser.add_argument(
        "--all", action="store_true",
        help="also list unchanged findings and baseline providers' drift indicators",
    )  # fmt: skip
    parser.add_argument(
        "--limit", type=int, default=40, metavar="N", help="table rows per section (default 40)"
    )
    parser.add_argument(
        "--no-changepoints", action="store_true", help="skip the change-point search"
    )
    parser.add_argument(
        "--git", type=Path, metavar="REPO",
        help="the Liger-Kernel checkout the rows came from: rank each finding's culprits "
        "(commits touching the kernel between its two sessions)",
    )  # fmt: skip


def selection(args: argparse.Namespace) -> Selection:
    """The output filters of ``args`` (kernel, gpu, provider, pass, metric)."""
    from kiana.pipeline import Selection

    return Selection(
        kernel=tuple(args.kernel),
        gpu=tuple(args.gpu),
        provider=tuple(args.provider),
        pass_=tuple(args.pass_),
        metric=args.metric,
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from kiana.culprits.history import require_repository
    from kiana.errors import UsageError
    from kiana.jsonstream import write_json
    from kiana.pipeline import analyze

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: must be at least 1", hint="e.g. --limit 40")
    options = judge_options(args, changepoints=not args.no_changepoints)
    repo = require_repository(args.git) if args.git is not None else None
    con = open_db(args, must_exist=True, read_only=True)
    try:
        analysis = analyze(con, options, git=repo, selection=selection(args))
    finally:
        con.close()
    findings = analysis.findings
    if args.json:
        write_json(
            sys.stdout,
            {
                "coverage": analysis.coverage.to_dict(),
                "findings": findings,
                "steps": (
                    analysis.annotate(steps, lists=repo is not None)
                    for steps in analysis.iter_steps()
                ),
                "quality": analysis.quality,
                "changepoints": analysis.changepoints,
                "tradeoffs": analysis.tradeoffs,
            },
        )
    else:
        _print_report(analysis, args)
    unfolded = findings.filter(~findings["folded"])
    failing = {v: unfolded.filter(unfolded["verdict"] == v).height for v in args.fail_on}
    failing = {v: n for v, n in failing.items() if n}
    if failing:
        counts = ", ".join(f"{n} {v}" for v, n in failing.items())
        print(f"kiana regressions: failing: {counts} finding(s)", file=sys.stderr)
        return 1
    return 0


def _pct(value: float | None, *, signed: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def _versions(row: dict[str, object]) -> str:
    """``0.8.0 (2026-06-16) -> 0.8.0 (2026-07-05)``."""
    return (
        f"{row['from_version']} ({str(row['from_session'])[:10]}) -> "
        f"{row['to_version']} ({str(row['to_session'])[:10]})"
    )


def _print_report(analysis: Analysis, args: argparse.Namespace) -> None:
    import polars as pl

    result, findings, total = analysis.judged, analysis.findings, analysis.runs_total

    own = findings.filter(~pl.col("folded"))
    counts = dict(own.group_by("verdict").len().iter_rows())
    tally = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    folded = findings.height - own.height
    print(
        f"judged {result.runs_judged:,} passed runs of {total:,}; "
        f"{own.height:,} findings: {tally}"
        + (
            f" ({folded:,} baseline drift folded into the Liger findings it explains)"
            if folded
            else ""
        )
    )
    print(result.coverage.sentence())
    kinds = dict(result.quality.group_by("kind").len().iter_rows())
    if kinds.get("conflict"):
        print(
            f"data quality: {kinds['conflict']} session point(s) not judged: replicates that "
            "disagree far beyond their noise (--json: quality)"
        )
    if kinds.get("outlier"):
        print(
            f"data quality: {kinds['outlier']} outlier session(s): off their neighbours and "
            "back at the next, not judged as changes (--json: quality)"
        )
    if findings.height == 0:
        print(
            "nothing to compare: no series has two sessions (load more runs, or check --baseline)"
        )
        return
    shown = (
        findings
        if args.all
        else findings.filter(
            pl.col("verdict").is_in(["regression", "improvement", "inconclusive"])
            | ((pl.col("verdict") == "drift") & pl.col("is_liger"))
        )
    )
    print()
    if shown.height == 0:
        print("no findings: nothing moved beyond the noise and the threshold")
    else:
        print(
            f"{'verdict':12} {'kernel/pass':28} {'provider':13} {'gpu':21} {'metric':7} "
            f"{'sessions':44} {'change':>7} {'±':>5} {'work':>5}  evidence"
        )
        for row in shown.head(args.limit).iter_rows(named=True):
            print(
                f"{row['verdict']:12} {(row['kernel'] + '/' + row['pass'])[:28]:28} "
                f"{row['provider'][:13]:13} {row['gpu'][:21]:21} {row['metric'][:7]:7} "
                f"{_versions(row)[:44]:44} {_pct(row['change']):>7} "
                f"{_pct(row['change_se'], signed=False):>5} "
                f"{row['workloads_affected']:>2}/{row['workloads_total']:<2}  {row['evidence']}"
            )
            for line in culprit_lines(row.get("culprits")):
                print(f"{'':12} {line}")
        if shown.height > args.limit:
            print(f"... and {shown.height - args.limit} more (--limit N, --json)")
    hidden = findings.height - shown.height
    if hidden and not args.all:
        print(f"({hidden} unchanged findings and baseline providers' drift not shown: --all)")
    if args.steps:
        _print_steps(analysis.steps_of(shown), shown, args)
    changepoints = analysis.changepoints
    if changepoints.height:
        print()
        print("change points (level shifts over several sessions):")
        for row in changepoints.head(args.limit).iter_rows(named=True):
            print(
                f"  {row['verdict']:12} {row['kernel']}/{row['pass']} {row['provider']} "
                f"{row['gpu']} {row['workload']} {row['metric']}: {_pct(row['change'])} "
                f"at {row['from_version']}->{row['to_version']} (p={row['p_value']:.1g})"
            )
    tradeoffs = analysis.tradeoffs
    if tradeoffs is not None and tradeoffs.height:
        print(f"\n{tradeoffs.height} trade-off(s): faster, but more memory at the same step")
        for row in tradeoffs.head(args.limit).iter_rows(named=True):
            print(
                f"  {row['kernel']}/{row['pass']} {row['provider']} on {row['gpu']} "
                f"{row['from_version']}->{row['to_version']}: latency "
                f"{_pct(row['latency_change'])}, memory {_pct(row['memory_change'])}"
            )


def culprit_lines(culprits: list[dict[str, object]] | None, top: int = 3) -> list[str]:
    """The first ``top`` culprits of a finding, one line each (``culprit 1: <sha:12>
    <subject> (<date>, <role>: <files>)``), and how many more there are."""
    lines = []
    for number, item in enumerate((culprits or [])[:top], 1):
        files = ", ".join(str(f) for f in item.get("files") or [])  # type: ignore[attr-defined]
        lines.append(
            f"culprit {number}: {str(item['commit'])[:12]} {item['subject']} "
            f"({str(item['date'])[:10]}, {item['role']}: {files})"
        )
    if culprits and len(culprits) > top:
        lines.append(f"... and {len(culprits) - top} more commit(s) (--json: culprits)")
    return lines


def _print_steps(steps: pl.DataFrame, shown: pl.DataFrame, args: argparse.Namespace) -> None:
    """The per-workload steps of the findings shown."""
    from kiana.vocabulary import FINDING_KEYS

    keys = list(FINDING_KEYS)
    detail = steps.join(shown.select(keys), on=keys, how="semi")
    print()
    print(f"steps behind these findings ({detail.height}):")
    for row in detail.head(args.limit * 8).iter_rows(named=True):
        print(
            f"  {row['verdict']:12} {row['kernel']}/{row['pass']} {row['provider']} "
            f"{row['gpu']} {row['workload']} {row['metric']} {_versions(row)}: "
            f"{_pct(row['change'])}; {row['evidence']}"
        )
