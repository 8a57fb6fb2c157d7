"""The ``kiana`` command line.

Each subcommand lives in ``kiana/commands/<name>.py`` and exposes ``HELP``,
``configure(parser)`` and ``run(args) -> int``.  Command modules import their heavy
dependencies (altair, scipy, polars...) inside ``run`` so that ``kiana --help`` and
``kiana load`` start quickly.  This is the only module that exits the process, and every
way out has its own status (:data:`EXIT_CODES`, listed by ``kiana --help``):

* 0: done; 1: a verdict (``--fail-on``, ``kiana gate``): never a crash;
* 2: usage or input error (a :class:`~kiana.errors.KianaError`: message and hint);
* 3: kiana itself failed (a bug): one line naming the exception,
  ``KIANA_TRACEBACK=1`` prints the traceback;
* 130: interrupted (Ctrl-C): one line of what to do; a load is one transaction and a
  report is written through a temporary file, so the database and the output are as they
  were before the command.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from kiana._version import __version__
from kiana.commands import interrupts
from kiana.errors import KianaError
from kiana.safe import terminal

#: Subcommand name -> module under kiana.commands, in the order --help lists them.
COMMANDS: dict[str, str] = {
    "load": "load",
    "partitions": "partitions",
    "regressions": "regressions",
    "gate": "gate",
    "report": "report",
    "generate": "generate",
    "import": "import_",
    "export": "export",
    "lake": "lake",
}

OK, VERDICT, USAGE, CRASH, INTERRUPTED = 0, 1, 2, 3, 130
#: Every exit status of ``kiana``, and what it means (``kiana --help`` lists them).
EXIT_CODES: dict[int, str] = {
    OK: "done",
    VERDICT: "a verdict: --fail-on matched, or kiana gate found a regression",
    USAGE: "usage or input error (the message says what to fix)",
    CRASH: "kiana failed: a bug (KIANA_TRACEBACK=1 shows the traceback); please report it",
    INTERRUPTED: "interrupted (Ctrl-C): the database and the output files are as they were",
}

#: What to do after Ctrl-C, per command (the default: run it again).
_AFTER_INTERRUPT: dict[str, str] = {
    "load": "nothing of this load was stored; run it again to load the files",
    "import": "nothing of this import was stored; run it again",
    "regressions": "nothing was judged; run it again (--kernel or --gpu make it quicker)",
    "report": "no report was written; run it again (--top and --rows make it smaller)",
    "gate": "no verdict was reached; run it again",
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"kiana.commands.{COMMANDS[name]}")


def build_parser() -> argparse.ArgumentParser:
    codes = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items())
    parser = argparse.ArgumentParser(
        prog="kiana",
        description="Find GPU-kernel latency regressions in kernelindex benchmark documents.",
        epilog=f"exit status:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kiana {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = _module(name)
        except ModuleNotFoundError as exc:  # a command not built yet in this checkout
            if exc.name != f"kiana.commands.{COMMANDS[name]}":
                raise
            continue
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(command)
        command.set_defaults(_run=module.run)
    return parser


def _innermost(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The (sub)parser of the command given (``kiana import liger``'s, not ``kiana``'s)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _innermost(action.choices[chosen], args)
    return parser


def _reject_unknown(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> None:
    """Report arguments no parser took with the usage of the command given, naming the
    option meant (``-db`` -> ``--db``); exits with status 2."""
    command = _innermost(parser, args)
    options = [o for action in command._actions for o in action.option_strings]
    first = extra[0]
    if first.startswith("-"):
        wanted = first.split("=", 1)[0]
        close = difflib.get_close_matches(wanted, options, n=1, cutoff=0.6)
        close = close or [o for o in options if o.lstrip("-") == wanted.lstrip("-")]
        meant = f"; did you mean {close[0]}?" if close else f"; see {command.prog} --help"
        command.error(f"unrecognized argument {terminal(first)}{meant}")
    command.error(f"unrecognized arguments: {terminal(' '.join(extra))}; see {command.prog} --help")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``kiana`` command; its exit status (:data:`EXIT_CODES`)."""
    interrupts.reset()
    previous = signal.getsignal(signal.SIGINT)
    ours = previous is signal.default_int_handler  # an ignored SIGINT stays ignored
    if ours:
        try:
            signal.signal(signal.SIGINT, interrupts.note_ctrl_c)
        except ValueError:  # not the main thread: Python's handler stays
            ours = False
    try:
        return _main(argv)
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while starting: nothing was done yet
        print("kiana: interrupted before it started: nothing was done", file=sys.stderr)
        return INTERRUPTED
    if extra:
        _reject_unknown(parser, args, extra)
    if not getattr(args, "_run", None):
        parser.print_help()
        return USAGE
    from kiana.safe.stream import GATE_CAP, inert_streams

    json_out = bool(getattr(args, "json", False))
    with inert_streams(json=json_out, cap=GATE_CAP if args.command == "gate" else None):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; every way out has its own status."""
    from kiana.commands.common import database_errors, discard_new_database

    fresh = _new_database(args)
    try:
        with database_errors(getattr(args, "db", None)):
            code: int = args._run(args)
    except KianaError as exc:
        discard_new_database(fresh)
        if interrupts.interrupted(exc):
            return _failed(args.command, exc)
        print(f"kiana {args.command}: error: {terminal(exc.message)}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {terminal(exc.hint)}", file=sys.stderr)
        return USAGE
    except BrokenPipeError:
        _quiet_stdout()
        return OK
    except BaseException as exc:  # every way out gets its own status
        if isinstance(exc, SystemExit):
            raise
        discard_new_database(fresh)
        return _failed(args.command, exc)
    if code == USAGE:
        discard_new_database(fresh)
    if (
        interrupts.ctrl_c_came() and code != INTERRUPTED
    ):  # caught on the way, after the work was done
        print(
            f"kiana {args.command}: interrupted as it finished: what it printed or wrote "
            "is complete",
            file=sys.stderr,
        )
        return INTERRUPTED
    return code


def _failed(command: str, exc: BaseException) -> int:
    """The one line (and status) of an exception no command turned into a KianaError."""
    if interrupts.interrupted(exc):
        what = _AFTER_INTERRUPT.get(command, "run it again")
        print(f"kiana {command}: interrupted: {what}", file=sys.stderr)
        return INTERRUPTED
    if os.environ.get("KIANA_TRACEBACK"):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    print(
        f"kiana {command}: internal error: {type(exc).__name__}"
        + (f": {terminal(first)[:300]}" if first else "")
        + " (a bug in kiana: KIANA_TRACEBACK=1 shows the traceback; please report it)",
        file=sys.stderr,
    )
    return CRASH


def _quiet_stdout() -> None:
    """After a closed pipe (``kiana regressions | head``): no second error at exit."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _new_database(args: argparse.Namespace) -> Path | None:
    """The ``--db`` file when it does not exist yet: a command that fails must not
    leave a new, empty database behind (a later ``kiana regressions`` would read it)."""
    db = getattr(args, "db", None)
    if db is None or str(db) == ":memory:":
        return None
    path = Path(db)
    return None if path.exists() else path


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
