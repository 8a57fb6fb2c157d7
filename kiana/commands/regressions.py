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
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.commands.common import add_db_option, add_judge_options, judge_options, open_db
from kiana.vocabulary import FAILABLE

if TYPE_CHECKING:
    import duckdb
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
    for flag, what, match in (
        ("--kernel", "kernel", "substring"),
        ("--gpu", "GPU", "substring"),
        ("--provider", "provider", "whole name"),
    ):
        parser.add_argument(
            flag,
            action="append",
            default=[],
            help=f"only this {what} (repeatable; {match}, any case)",
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
        "--wide", action="store_true",
        help="one line per finding, whatever the terminal's width (default: fit COLUMNS)",
    )  # fmt: skip
    parser.add_argument(
        "--limit", type=int, default=40, metavar="N", help="table rows per section (default 40)"
    )
    parser.add_argument(
        "--no-changepoints", action="store_true", help="skip the change-point search"
    )
    parser.add_argument(
        "--full", action="store_true",
        help="judge every run again (default: the judgement stored in --db, with what "
        "the loads since then touch judged again)",
    )  # fmt: skip
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
    from kiana.culprits.history import require_repository
    from kiana.errors import UsageError
    from kiana.pipeline import analyze

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: must be at least 1", hint="e.g. --limit 40")
    options = judge_options(args, changepoints=not args.no_changepoints)
    repo = require_repository(args.git) if args.git is not None else None
    con = _open(args)
    try:
        analysis = analyze(con, options, git=repo, selection=selection(args), full=args.full)
        return _output(analysis, args, repo)
    finally:
        con.close()


def _open(args: argparse.Namespace) -> duckdb.DuckDBPyConnection:
    """``--db`` opened for writing, where the judgement is stored
    (:mod:`kiana.shards.store`); read-only when the file may not be written or another
    process holds it (the judgement is then read when current, else made in memory)."""
    import os

    from kiana.errors import DatabaseError

    db = getattr(args, "db", None)
    if db is None or not os.access(db, os.W_OK):
        return open_db(args, must_exist=True, read_only=True)
    try:
        return open_db(args, must_exist=True, read_only=False)
    except DatabaseError:
        return open_db(args, must_exist=True, read_only=True)


def _output(analysis: Analysis, args: argparse.Namespace, repo: Path | None) -> int:
    """Print ``analysis`` (a table or JSON, ``repo``: ``--git``); the exit status of
    ``--fail-on``."""
    import sys

    from kiana.jsonstream import write_json

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
    unfolded = analysis.listed(everything=True)
    failing = {v: unfolded.filter(unfolded["verdict"] == v).height for v in args.fail_on}
    failing = {v: n for v, n in failing.items() if n}
    if failing:
        counts = ", ".join(f"{n} {v}" for v, n in failing.items())
        print(f"kiana regressions: failing: {counts} finding(s)", file=sys.stderr)
        return 1
    return 0


def _pct(value: float | None, *, signed: bool = True) -> str:
    from kiana.findings.wording import percent

    return percent(value, signed=signed)


def _versions(row: dict[str, object]) -> str:
    """``0.8.0 (2026-06-16) → 0.8.0 (2026-07-05)``."""
    from kiana.findings.wording import step_label

    return step_label(row)


#: The one-line table: column titles, and which are numbers (right-aligned).
_ONE_LINE = (
    ("verdict", False), ("kernel/pass", False), ("provider", False), ("gpu", False),
    ("metric", False), ("sessions", False), ("change", True), ("±", True),
    ("worst", True), ("work", True), ("control", False),
)  # fmt: skip
#: The first line of the two-line table (the second: gpu, metric, sessions, control).
_FIRST = ("verdict", "kernel/pass", "provider", "change", "±", "worst", "work")


def _cells(table: pl.DataFrame) -> list[dict[str, str]]:
    """The table's text (inert: kiana.safe.terminal) under the one-line titles."""
    from kiana.commands.layout import cells

    out = []
    for r in table.iter_rows(named=True):
        values = [
            r["verdict"], f"{r['kernel']}/{r['pass']}", r["provider"], r["gpu"], r["metric"],
            r["step"], r["change"], r["±"], r["worst"], r["workloads"], r["control"],
        ]  # fmt: skip
        row = dict(zip((t for t, _ in _ONE_LINE), cells(values), strict=True))
        row["evidence"], row["culprit"] = cells([r["evidence"], r["culprit"]])
        out.append(row)
    return out


def _print_findings(shown: pl.DataFrame, width: int | None, limit: int) -> None:
    """The findings table, fitted to ``width`` (kiana.commands.layout's rules): one
    aligned line per finding when that fits, else two (what and how much; where, when
    and against what), then its evidence wrapped and its first culprits."""
    from kiana.commands.layout import INDENT, fit, pack, wrap
    from kiana.findings.wording import finding_table

    head = shown.head(limit)
    rows = _cells(finding_table(head))
    titles = [t for t, _ in _ONE_LINE]
    right = [r for _, r in _ONE_LINE]
    lines = fit(titles, [[row[t] for t in titles] for row in rows], width=width, right=right)
    two = lines is None
    if lines is None:
        first = [[row[t] for t in _FIRST] for row in rows]
        aligned = fit(_FIRST, first, width=width, right=[r for t, r in _ONE_LINE if t in _FIRST])
        lines = aligned or [" ".join(_FIRST), *(" ".join(c) for c in first)]
        lines[0] += f"\n{INDENT}gpu · metric · sessions · control"
    print(lines[0] + ("  evidence" if width is None else ""))
    for text, row, source in zip(lines[1:], rows, head.iter_rows(named=True), strict=True):
        if width is not None and len(text) > width:  # even whole cells one apart do not fit
            for part in pack([row[t] for t in _FIRST], width=width):
                print(part)
        else:
            print(text + (f"  {row['evidence']}" if width is None else ""))
        if two:
            where = [row["gpu"], "·", row["metric"], "·", row["sessions"],
                     f"· control {row['control']}"]  # fmt: skip
            for part in pack(where, width=width, indent=INDENT * 2, first=INDENT):
                print(part)
        if width is not None and row["evidence"]:
            for part in wrap(row["evidence"], width=width):
                print(part)
        for culprit in culprit_lines(source.get("culprits")):
            print(_clipped(f"{INDENT}{culprit}", width))


def _clipped(text: str, width: int | None) -> str:
    from kiana.commands.layout import clip
    from kiana.safe import terminal

    return clip(terminal(text), width)


def _say(text: str, width: int | None) -> None:
    """A sentence of the summary, wrapped to the terminal."""
    from kiana.commands.layout import wrap
    from kiana.safe import terminal

    for part in wrap(terminal(text), width=width, first=""):
        print(part)


def _print_report(analysis: Analysis, args: argparse.Namespace) -> None:
    from kiana.commands.layout import terminal_width

    width = terminal_width(args.wide)
    result, total = analysis.judged, analysis.runs_total
    counts = analysis.counts
    _say(f"judged {result.runs_judged:,} passed runs of {total:,}; {counts.sentence()}", width)
    _say(result.coverage.sentence(), width)
    kinds = dict(result.quality.group_by("kind").len().iter_rows())
    if kinds.get("conflict"):
        _say(
            f"data quality: {kinds['conflict']} session point(s) not judged: replicates that "
            "disagree far beyond their noise (--json: quality)",
            width,
        )
    if kinds.get("outlier"):
        _say(
            f"data quality: {kinds['outlier']} outlier session(s): off their neighbours and "
            "back at the next, not judged as changes (--json: quality)",
            width,
        )
    _print_unstable(analysis.quality, width, args.limit)
    if counts.findings == 0:
        _say(
            "nothing to compare: no series has two sessions (load more runs, or check --baseline)",
            width,
        )
        return
    shown = analysis.listed(everything=args.all)
    print()
    if shown.height == 0:
        print("no findings: nothing moved beyond the noise and the threshold")
    else:
        _print_findings(shown, width, args.limit)
        if shown.height > args.limit:
            print(f"... and {shown.height - args.limit:,} more (--limit N, --json)")
    unlisted = ", ".join(f"{n:,} {why}" for why, n in counts.unlisted.items() if n)
    if unlisted and not args.all:
        _say(f"({unlisted} findings not listed: --all lists them)", width)
    _print_reruns(shown, width, args.limit)
    if args.steps:
        _print_steps(analysis.steps_of(shown), shown, args, width)
    _print_extras(analysis, args, width)


def _print_reruns(shown: pl.DataFrame, width: int | None, limit: int) -> None:
    """The inconclusive findings that lean one way: worth a rerun, with the runs each
    would need (:func:`kiana.findings.wording.worth_rerun`)."""
    from kiana.findings.wording import rerun_line, worth_rerun

    leaning = worth_rerun(shown)
    if leaning.height == 0:
        return
    print()
    print(f"worth a rerun ({leaning.height:,} inconclusive finding(s) leaning one way):")
    _print_wrapped((rerun_line(r) for r in leaning.head(limit).iter_rows(named=True)), width)
    if leaning.height > limit:
        print(f"  ... and {leaning.height - limit:,} more (--limit N, --json)")


def _print_unstable(quality: pl.DataFrame, width: int | None, limit: int) -> None:
    """The unstable series (kiana.stats.unstable): levels and switches, one line each."""
    rows = quality.filter(quality["kind"] == "unstable")
    if rows.height == 0:
        return
    _say(
        f"data quality: {rows.height} unstable series: alternating between two levels across "
        "sessions, could not judge (their findings are inconclusive):",
        width,
    )
    _print_wrapped(
        (
            f"{r['kernel']}/{r['pass']} {r['provider']} {r['gpu']} {r['metric']}: "
            f"{r['levels']}, {r['switches']} switches"
            for r in rows.head(limit).iter_rows(named=True)
        ),
        width,
    )
    if rows.height > limit:
        print(f"  ... and {rows.height - limit:,} more (--limit N, --json: quality)")


def _print_extras(analysis: Analysis, args: argparse.Namespace, width: int | None) -> None:
    """Change points and trade-offs, each line wrapped to the terminal."""
    changepoints = analysis.changepoints
    if changepoints.height:
        print()
        print("change points (level shifts over several sessions):")
        _print_wrapped(
            (
                f"{row['verdict']} {row['kernel']}/{row['pass']} {row['provider']} "
                f"{row['gpu']} {row['workload']} {row['metric']}: {_pct(row['change'])} "
                f"at {row['from_version']} → {row['to_version']} (p={row['p_value']:.1g})"
                for row in changepoints.head(args.limit).iter_rows(named=True)
            ),
            width,
        )
    tradeoffs = analysis.tradeoffs
    if tradeoffs is not None and tradeoffs.height:
        print(f"\n{tradeoffs.height} trade-off(s): latency against memory in the same sittings")
        _print_wrapped(
            (
                f"{row.get('kind', 'trade-off')}: "
                f"{row['kernel']}/{row['pass']} {row['provider']} on {row['gpu']} "
                f"{row['from_version']} → {row['to_version']}: latency "
                f"{_pct(row['latency_change'])}, memory {_pct(row['memory_change'])}"
                for row in tradeoffs.head(args.limit).iter_rows(named=True)
            ),
            width,
        )


def _print_wrapped(texts: Iterable[str], width: int | None) -> None:
    """Each text made safe for the terminal and wrapped to it, under a two-space indent."""
    from kiana.commands.layout import wrap
    from kiana.safe import terminal

    for text in texts:
        for part in wrap(terminal(text), width=width, indent="    ", first="  "):
            print(part)


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


def _print_steps(
    steps: pl.DataFrame, shown: pl.DataFrame, args: argparse.Namespace, width: int | None
) -> None:
    """The per-workload steps of the findings shown, each wrapped to the terminal."""
    from kiana.vocabulary import FINDING_KEYS

    keys = list(FINDING_KEYS)
    detail = steps.join(shown.select(keys), on=keys, how="semi")
    print()
    print(f"steps behind these findings ({detail.height}):")
    _print_wrapped(
        (
            f"{row['verdict']} {row['kernel']}/{row['pass']} {row['provider']} "
            f"{row['gpu']} {row['workload']} {row['metric']} {_versions(row)}: "
            f"{_pct(row['change'])}; {row['evidence']}"
            for row in detail.head(args.limit * 8).iter_rows(named=True)
        ),
        width,
    )
