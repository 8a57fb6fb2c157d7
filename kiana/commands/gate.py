"""``kiana gate REPO --base REF [--head REF] [--json] [--markdown FILE]``: the PR gate.

The benchmark rows the head adds or changes in ``benchmark/data/*.csv`` (default head:
the work tree, uncommitted edits included) are judged against the history up to
``--base`` with the statistics of ``kiana regressions`` (:mod:`kiana.culprits.gate`);
the findings whose later session is the head's are printed with their culprits (the
commits of base..head touching the kernel).  Exit status: ``EPILOG`` (one line per
code of :data:`kiana.culprits.gate.EXIT_CODES`).

The gate runs on untrusted pull requests (``tests/SECURITY.md``): every data string it
prints is one inert line (:func:`kiana.safe.terminal`), its output is fenced and
capped at 1 MB (:mod:`kiana.safe.stream`, installed by ``kiana.cli``), its files are
written without following a link (:func:`kiana.safe.write_text`: a linked folder or
name is refused, exit 2), and whatever stops it (a limit, a usage error, a
crash) writes a comment that says it could not judge, and exits with a code of its own:
never 0, never 1.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiana.commands.common import add_judge_options, count, judge_options, positive

if TYPE_CHECKING:
    from kiana.culprits.gate import GateResult

HELP = "pull-request gate: judge the benchmark rows a head adds against the history up to a base"

EPILOG = """\
exit status:
  0  no Liger provider regressed, every head row of a Liger provider was judged,
     and none of their findings is inconclusive
  1  a Liger provider regressed: a finding with verdict 'regression'
  2  usage error: REPO is not a git repository, --base/--head unknown or swapped, no
     Liger CSVs, an output that cannot be written
  3  fail closed: head rows of a Liger provider were rejected, conflict or were not
     judged (no step ends at their session), or a head CSV
     was refused (a link, a submodule), or a regression lies between an earlier session
     and the head's across one too noisy to place it, or a Liger finding of the head is
     inconclusive (too noisy to say whether it regressed): the pull request could not be
     judged
  4  more distinct rows than --max-rows: not judged
  5  --timeout reached: not judged
  6  internal error: the gate could not judge (a bug; the comment says so)
  (1 wins over 3: a regression is reported even when other rows could not be judged)

example (a pull request's checkout, benchmarks re-run into benchmark/data/*.csv):
  kiana gate . --base origin/main --markdown "$RUNNER_TEMP/kiana-gate.md"
"""


def configure(parser: argparse.ArgumentParser) -> None:
    from kiana.culprits.exits import MAX_ROWS, TIMEOUT_SECONDS

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
        "--json-file", type=Path, metavar="FILE",
        help="also write the full JSON here (the comment names it: upload it as an artifact)",
    )  # fmt: skip
    parser.add_argument(
        "--markdown", type=Path, metavar="FILE",
        help="also write a pull-request comment here (outside the checkout: $RUNNER_TEMP)",
    )  # fmt: skip
    parser.add_argument(
        "--max-rows", type=count, default=MAX_ROWS, metavar="N",
        help=f"stop (exit 4) beyond N distinct benchmark rows (default {MAX_ROWS:,})",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=positive, default=TIMEOUT_SECONDS, metavar="SECONDS",
        help=f"stop (exit 5) after SECONDS (default {TIMEOUT_SECONDS:g})",
    )  # fmt: skip


class _Outputs:
    """The files the gate writes (``--markdown``, ``--json-file``), never through a link."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.markdown: Path | None = args.markdown
        self.json_file: Path | None = args.json_file
        self.base = str(args.base)

    def write(self, path: Path | None, text: str) -> None:
        """Write ``text`` to ``path``; a :class:`~kiana.errors.KianaError` naming it when
        it cannot be written or is refused (exit 2, never a traceback)."""
        from kiana.safe import write_output

        if path is not None:
            write_output(
                path,
                text,
                hint="give a writable path outside the checkout ($RUNNER_TEMP/kiana-gate.md)",
            )

    def failed(self, what: str, detail: str) -> None:
        """The "could not judge" comment (errors writing it are ignored: the exit code
        already says the gate did not judge)."""
        import contextlib

        from kiana.culprits.markdown import failure
        from kiana.errors import KianaError

        with contextlib.suppress(KianaError):
            self.write(self.markdown, failure(what, detail, base=self.base))


def run(args: argparse.Namespace) -> int:
    """Run the gate; whatever stops it writes the "could not judge" comment and exits
    with its own code (``EPILOG``)."""
    import sys
    import traceback

    from kiana.culprits import gate as gates
    from kiana.culprits.gaterows import RowLimitError
    from kiana.culprits.limits import GateTimeout, deadline
    from kiana.errors import KianaError
    from kiana.safe import terminal

    outputs = _Outputs(args)
    try:
        outputs.write(outputs.markdown, _placeholder(args))
        with deadline(
            args.timeout,
            code=gates.EXIT_TIMEOUT,
            on_expiry=lambda: outputs.failed("timed out", f"--timeout {args.timeout:g} s reached"),
        ):
            result = gates.gate(
                args.repo,
                args.base,
                args.head,
                judge_options(args, changepoints=False),
                max_rows=args.max_rows,
            )
            return _report(result, args, outputs)
    except (GateTimeout, RowLimitError, KianaError) as exc:
        code = (
            gates.EXIT_TIMEOUT
            if isinstance(exc, GateTimeout)
            else gates.EXIT_ROWS
            if isinstance(exc, RowLimitError)
            else gates.EXIT_USAGE
        )
        outputs.failed(gates.EXIT_CODES[code].split(":")[0], exc.message)
        print(f"kiana gate: error: {terminal(exc.message)}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {terminal(exc.hint)}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        outputs.failed("interrupted", "the gate was interrupted before it had judged")
        raise
    except Exception as exc:  # a bug: say so, never exit 1 (the code of "regressed")
        name = type(exc).__name__
        outputs.failed("internal error", f"{name} inside kiana gate (a bug in kiana)")
        print(f"kiana gate: internal error: could not judge ({name})", file=sys.stderr)
        for line in traceback.format_exc().splitlines():
            print(terminal(line), file=sys.stderr)
        return gates.EXIT_CRASH


def _placeholder(args: argparse.Namespace) -> str:
    """The comment written first: a planted link at ``--markdown`` is replaced at once,
    and a gate killed before it finishes leaves a comment that says so."""
    from kiana.culprits.markdown import failure

    return failure("it did not finish", "kiana gate stopped before it wrote its result")


def _report(result: GateResult, args: argparse.Namespace, outputs: _Outputs) -> int:
    import io
    import sys

    from kiana.culprits.markdown import comment
    from kiana.jsonstream import write_json

    frames: dict[str, Any] = {
        "gate": result.summary(),
        "findings": result.findings,
        "steps": result.steps,
        "quality": result.judgement.quality,
    }
    if args.json_file is not None:
        text = io.StringIO()
        write_json(text, frames)
        outputs.write(args.json_file, text.getvalue())
    artifact = args.json_file.name if args.json_file is not None else None
    outputs.write(outputs.markdown, comment(result, artifact=artifact))
    if args.json:
        write_json(sys.stdout, frames)
    else:
        _print(result)
    return result.exit_code


def _print(result: GateResult) -> None:
    from kiana.commands.regressions import culprit_lines
    from kiana.safe import terminal as t

    findings, books = result.findings, result.accounting
    print(
        f"kiana gate: {result.head_label} against {result.base[:12]}: "
        f"{result.head_rows:,} new or changed row(s) over a history of "
        f"{result.history_rows:,}; {findings.height:,} finding(s)"
    )
    for warning in result.warnings:
        print(f"warning: {t(warning)}")
    if result.head_rows == 0 and not books.refused:
        print("the head adds or changes no benchmark row: nothing to judge")
    _print_not_judged(result)
    shown = findings.filter(findings["verdict"] != "unchanged")
    for row in shown.iter_rows(named=True):
        change = f"{row['change'] * 100:+.1f}%" if row["change"] is not None else "n/a"
        print(
            f"{row['verdict']:12} {t(row['kernel'])}/{t(row['pass'])} {t(row['provider'])} on "
            f"{t(row['gpu'])}: {t(row['from_version'])} ({str(row['from_session'])[:10]}) -> "
            f"{t(row['to_version'])} ({str(row['to_session'])[:10]}) {change}; "
            f"{t(row['evidence'])}"
        )
        for line in culprit_lines(row.get("culprits")):
            print(f"{'':12} {t(line)}")
    unchanged = findings.height - shown.height
    if unchanged:
        print(f"({unchanged} unchanged finding(s) not shown: --json)")
    print(result.outcome.line())


def _print_not_judged(result: GateResult) -> None:
    from kiana.safe import terminal as t

    books = result.accounting
    for refused in books.refused:
        print(f"refused: {t(refused)}")
    if books.rejected:
        liger = sum(r.is_subject for r in books.rejected)
        print(f"not judged: {len(books.rejected):,} head row(s) rejected ({liger:,} of Liger):")
        for reason, n in books.reasons()[:10]:
            print(f"  {n:6,}  {t(reason)}")
    if books.conflicts.height:
        print(
            f"not judged: {books.conflicts.height:,} conflicting head session point(s) "
            f"({books.subject_conflicts:,} of Liger): replicates that disagree far beyond "
            "their noise (--json: quality)"
        )
    for subject, who in ((True, "of a Liger provider"), (False, "of a baseline")):
        reasons = books.unjudged_reasons(subject=subject)
        if reasons:
            total = sum(n for _, n in reasons)
            print(f"not judged: {total:,} head row(s) {who}, no judged step ends at them:")
            for reason, n in reasons:
                print(f"  {n:6,}  {reason}")
    if books.unmatched:
        print(f"not compared: {books.unmatched_rows:,} head row(s) match no history; closest:")
        for item in books.unmatched[:10]:
            series = " / ".join(t(v) for v in item.series.values())
            closest = " / ".join(t(v) for v in (item.closest or {}).values()) or "none"
            print(
                f"  {item.rows:,} row(s) of {series}: closest {closest} ({', '.join(item.differs)})"
            )
    if books.replaced_series:
        print(
            f"{books.replaced_series:,} series compared with the rows they replace first; "
            f"{books.dropped_rows:,} history row(s) of other files in between left out"
        )
