"""``kiana regressions``: which kernels got slower between Liger releases.

Reads the runs of a kiana database, judges every series (:func:`kiana.stats.judge`)
and prints the findings, ranked by impact, for people; or with ``--json`` one
object ``{"steps": [...], "findings": [...], "changepoints": [...], "tradeoffs": [...]}``
for machines (tradeoffs: a latency improvement paid for with a memory regression).
``--fail-on VERDICT`` exits 1 when any (filtered) step has that verdict, for CI.
Filters apply to the output only: controls and noise floors always use every run.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kiana.commands.common import add_db_option, fraction, open_existing, positive

if TYPE_CHECKING:
    import polars as pl

HELP = "judge every series: regressions, improvements and drift between Liger versions"

FAIL_CHOICES = ("regression", "drift", "inconclusive", "improvement")


def configure(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument(
        "--baseline", metavar="VERSION",
        help="compare every version against this one (default: consecutive versions)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", type=fraction, default=0.03, metavar="FRACTION",
        help="smallest change that matters, 0.03 or 3%% (default 0.03)",
    )  # fmt: skip
    parser.add_argument(
        "--separation", type=positive, default=3.0, metavar="Z",
        help="smallest change in noise units, |ln ratio| / noise (default 3)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.add_argument(
        "--fail-on", action="append", choices=FAIL_CHOICES, default=[], metavar="VERDICT",
        help="exit 1 when any step has this verdict (regression|drift|inconclusive|"
        "improvement); may be repeated",
    )  # fmt: skip
    parser.add_argument(
        "--kernel", action="append", default=[], help="only this kernel (repeatable; substring)"
    )
    parser.add_argument(
        "--gpu", action="append", default=[], help="only this GPU (repeatable; substring)"
    )
    parser.add_argument(
        "--provider", action="append", default=[], help="only this provider (repeatable; exact)"
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


def _filter(frame: pl.DataFrame, args: argparse.Namespace) -> pl.DataFrame:
    import polars as pl

    conditions: list[pl.Expr] = []
    for column, values, exact in (
        ("kernel", args.kernel, False),
        ("gpu", args.gpu, False),
        ("provider", args.provider, True),
        ("pass", args.pass_, True),
    ):
        if values and column in frame.columns:
            if exact:
                conditions.append(pl.col(column).is_in(values))
            else:
                lowered = pl.col(column).str.to_lowercase()
                expr = pl.lit(False)
                for value in values:
                    expr = expr | lowered.str.contains(value.lower(), literal=True)
                conditions.append(expr)
    if args.metric and "metric" in frame.columns:
        conditions.append(pl.col("metric") == args.metric)
    return frame.filter(*conditions) if conditions else frame


def run(args: argparse.Namespace) -> int:
    import json

    from kiana.errors import UsageError
    from kiana.load import runs
    from kiana.stats import JudgeOptions, judge

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: must be at least 1", hint="e.g. --limit 40")
    options = JudgeOptions(
        threshold=args.threshold,
        separation=args.separation,
        baseline=args.baseline,
        changepoints=not args.no_changepoints,
    )
    con = open_existing(args.db)
    try:
        frame = runs(con)
    finally:
        con.close()
    result = judge(frame, options)
    steps = _filter(result.steps, args)
    findings = _filter(result.findings, args)
    changepoints = _filter(result.changepoints, args)
    tradeoffs = _filter(result.tradeoffs, args) if result.tradeoffs is not None else None
    if args.json:
        out: dict[str, Any] = {
            "steps": steps.to_dicts(),
            "findings": findings.to_dicts(),
            "changepoints": changepoints.to_dicts(),
            "tradeoffs": tradeoffs.to_dicts() if tradeoffs is not None else [],
        }
        print(json.dumps(out, default=str, allow_nan=False))
    else:
        _print_table(steps, findings, changepoints, result.runs_judged, frame.height, args)
        if tradeoffs is not None and tradeoffs.height:
            print(f"\n{tradeoffs.height} trade-off(s): faster, but more memory at the same step")
            for row in tradeoffs.head(args.limit).iter_rows(named=True):
                print(
                    f"  {row['kernel']}/{row['pass']} {row['provider']} on {row['gpu']} "
                    f"{row['from_version']}->{row['to_version']}: latency "
                    f"{_pct(row['latency_change'])}, memory {_pct(row['memory_change'])}"
                )
    failing = [v for v in args.fail_on if steps.filter(steps["verdict"] == v).height > 0]
    if failing:
        import sys

        counts = ", ".join(f"{steps.filter(steps['verdict'] == v).height} {v}" for v in failing)
        print(f"kiana regressions: failing: {counts} step(s)", file=sys.stderr)
        return 1
    return 0


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"


def _print_table(
    steps: pl.DataFrame,
    findings: pl.DataFrame,
    changepoints: pl.DataFrame,
    judged: int,
    total: int,
    args: argparse.Namespace,
) -> None:
    import polars as pl

    counts = {
        row["verdict"]: row["len"] for row in steps.group_by("verdict").len().iter_rows(named=True)
    }
    order = ("regression", "drift", "improvement", "inconclusive", "unchanged")
    tally = ", ".join(f"{counts.get(v, 0)} {v}" for v in order)
    print(f"judged {judged} passed runs of {total}; {steps.height} version steps: {tally}")
    if steps.height == 0:
        print(
            "nothing to compare: no series has two versions (load more runs, or check --baseline)"
        )
        return
    shown = (
        findings
        if args.all
        else findings.filter(
            pl.col("verdict").is_in(["regression", "improvement", "inconclusive", "drift"])
            & (pl.col("provider").str.starts_with("liger") | (pl.col("verdict") == "regression"))
        )
    )
    shown = shown.filter(pl.col("workloads_affected") > 0) if not args.all else shown
    print()
    if shown.height == 0:
        print("no findings: nothing moved beyond the noise and the threshold")
    else:
        print(
            f"{'verdict':12} {'kernel/pass':30} {'provider':14} {'gpu':22} {'metric':7} "
            f"{'versions':19} {'work':>6} {'median':>7} {'worst':>7} {'conf':>5}  control"
        )
        for row in shown.head(args.limit).iter_rows(named=True):
            versions = f"{row['from_version']}->{row['to_version']}"
            print(
                f"{row['verdict']:12} {(row['kernel'] + '/' + row['pass'])[:30]:30} "
                f"{row['provider'][:14]:14} {row['gpu'][:22]:22} {row['metric'][:7]:7} "
                f"{versions[:19]:19} {row['workloads_affected']:>2}/{row['workloads_total']:<3} "
                f"{_pct(row['median_change']):>7} {_pct(row['worst_change']):>7} "
                f"{row['confidence']:5.2f}  {row['control_provider'] or '-'}"
            )
        if shown.height > args.limit:
            print(f"... and {shown.height - args.limit} more (--limit N, --json)")
    if changepoints.height:
        print()
        print("change points (level shifts over several versions):")
        for row in changepoints.head(args.limit).iter_rows(named=True):
            print(
                f"  {row['verdict']:12} {row['kernel']}/{row['pass']} {row['provider']} "
                f"{row['gpu']} {row['workload']} {row['metric']}: {_pct(row['change'])} "
                f"at {row['from_version']}->{row['to_version']} (p={row['p_value']:.1g})"
            )
    fallback = steps.filter(
        pl.col("verdict").is_in(["regression", "improvement", "drift"])
        & (pl.col("noise_source") != "spread")
    ).height
    if fallback:
        print(
            f"\nnote: {fallback} flagged step(s) rest on a fallback noise estimate (see --json evidence)"
        )
