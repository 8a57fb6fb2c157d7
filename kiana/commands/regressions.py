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
from typing import TYPE_CHECKING, Any, TextIO

from kiana.commands.common import add_db_option, add_judge_options, open_existing, positive

if TYPE_CHECKING:
    from collections.abc import Iterator

    import duckdb
    import polars as pl

HELP = "judge every series: regressions, improvements and drift between Liger versions"

FAIL_CHOICES = ("regression", "drift", "inconclusive", "improvement")


def configure(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    add_judge_options(parser)
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
    import sys

    from kiana.errors import UsageError
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
        frame = _judged_columns(con)
    finally:
        con.close()
    result = judge(frame, options)
    steps = _filter(result.steps, args)
    findings = _filter(result.findings, args)
    changepoints = _filter(result.changepoints, args)
    tradeoffs = _filter(result.tradeoffs, args) if result.tradeoffs is not None else None
    if args.json:
        write_json(
            sys.stdout,
            {
                "steps": steps,
                "findings": findings,
                "changepoints": changepoints,
                "tradeoffs": tradeoffs,
            },
        )
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
        counts = ", ".join(f"{steps.filter(steps['verdict'] == v).height} {v}" for v in failing)
        print(f"kiana regressions: failing: {counts} step(s)", file=sys.stderr)
        return 1
    return 0


def _judged_columns(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The runs the statistics read: only their columns (13 of the table's ~33), in
    the order of :func:`kiana.load.runs` (which reads every column)."""
    from kiana.stats.series import REQUIRED_COLUMNS

    columns = ", ".join(f'"{c}"' for c in REQUIRED_COLUMNS)
    frame: pl.DataFrame = con.sql(
        f"SELECT {columns} FROM runs ORDER BY partition_id, provider, observed_at, run_id"
    ).pl()
    return frame


#: Rows of a frame encoded per chunk by :func:`_json_rows` (bounds the memory held).
_JSON_CHUNK = 50_000


def write_json(out: TextIO, frames: dict[str, pl.DataFrame | None]) -> None:
    """Write ``{"name": [row objects], ...}`` and a newline, exactly as
    ``print(json.dumps({name: frame.to_dicts()}, default=str, allow_nan=False))``
    would (a missing frame is ``[]``), but streamed chunk by chunk, with every column
    encoded at once instead of a dict per row: a million steps would otherwise cost
    two copies of the rows as Python objects and the whole text in memory."""
    out.write("{")
    for index, (name, frame) in enumerate(frames.items()):
        out.write(("" if index == 0 else ", ") + _json_key(name) + ": [")
        for number, text in enumerate(_json_rows(frame)):
            if number:
                out.write(", ")
            out.write(text)
        out.write("]")
    out.write("}\n")


def _json_key(name: str) -> str:
    import json

    return json.dumps(name)


#: A character that ``json.dumps`` (``ensure_ascii``) escapes: all but printable ASCII,
#: and ``"`` and ``\``.  Strings without one are their own JSON text between quotes.
_ESCAPED = r"[^ !#-\[\]-~]"


def _json_rows(frame: pl.DataFrame | None) -> Iterator[str]:
    """Each chunk of rows of ``frame`` as the text of ``json.dumps`` of its dicts,
    joined by ``", "``, without the brackets.

    polars builds the texts of every column and row at once; only what polars writes
    differently from Python goes through Python, one distinct value at a time:
    strings with a character to escape, and floats below 1e-4 (or from 1e16), which
    Python writes as ``1e-05`` and polars as ``0.00001``.  Other column types (none
    in kiana's frames) take ``json.dumps`` itself."""
    import json

    import polars as pl

    if frame is None or frame.height == 0:
        return
    schema = frame.schema
    simple = all(
        t == pl.String or t == pl.Boolean or t.is_float() or t.is_integer() for t in schema.values()
    )
    if not simple:
        for chunk in frame.iter_slices(_JSON_CHUNK):
            yield json.dumps(chunk.to_dicts(), default=str, allow_nan=False)[1:-1]
        return
    strings = [c for c, t in schema.items() if t == pl.String]
    floats = [c for c, t in schema.items() if t.is_float()]
    for chunk in frame.iter_slices(_JSON_CHUNK):
        chunk = chunk.with_columns(pl.col(floats).cast(pl.Float64))
        odd = chunk.select(
            *(
                pl.col(c).filter(pl.col(c).str.contains(_ESCAPED)).unique().implode()
                for c in strings
            ),
            *(pl.col(c).filter(_odd_float(c)).unique().implode() for c in floats),
            pl.any_horizontal(
                pl.lit(False),
                *((pl.col(c).is_nan() | pl.col(c).is_infinite()).any() for c in floats),
            ).alias("_nonfinite"),
        ).row(0, named=True)
        if odd["_nonfinite"]:
            raise ValueError("Out of range float values are not JSON compliant")
        pieces: list[pl.Expr] = []
        for index, (name, dtype) in enumerate(schema.items()):
            pieces.append(pl.lit(("{" if index == 0 else ", ") + _json_key(name) + ": "))
            pieces.append(_json_text(name, dtype, odd.get(name) or []))
        rows = chunk.select(pl.concat_str([*pieces, pl.lit("}")])).to_series()
        yield ", ".join(rows.to_list())


def _odd_float(name: str) -> pl.Expr:
    import polars as pl

    size = pl.col(name).abs()
    return ((size < 1e-4) & (size > 0)) | (size >= 1e16)


def _json_text(name: str, dtype: pl.DataType, odd: list[Any]) -> pl.Expr:
    """The JSON text of column ``name`` as ``json.dumps`` writes its values; ``odd``:
    the values polars would write differently (see :func:`_json_rows`)."""
    from json.encoder import encode_basestring_ascii

    import polars as pl

    column = pl.col(name)
    if dtype == pl.Boolean:
        return (
            pl.when(column.is_null())
            .then(pl.lit("null"))
            .when(column)
            .then(pl.lit("true"))
            .otherwise(pl.lit("false"))
        )
    if dtype.is_integer():
        return column.cast(pl.String).fill_null("null")
    if dtype == pl.String:
        text = pl.lit('"') + column + pl.lit('"')
        by_python = [encode_basestring_ascii(v) for v in odd]
    else:
        text = column.cast(pl.String)
        by_python = [float.__repr__(v) for v in odd]
    if odd:
        text = pl.coalesce(
            column.replace_strict(odd, by_python, default=None, return_dtype=pl.String), text
        )
    return text.fill_null("null")


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
