"""The ``kiana`` command line.

Each subcommand lives in ``kiana/commands/<name>.py`` and exposes ``HELP``,
``configure(parser)`` and ``run(args) -> int``.  Command modules import their heavy
dependencies (altair, scipy, polars...) inside ``run`` so that ``kiana --help`` and
``kiana load`` start quickly.  This is the only module that exits the process.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from kiana._version import __version__
from kiana.errors import KianaError

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


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"kiana.commands.{COMMANDS[name]}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kiana",
        description="Find GPU-kernel latency regressions in kernelindex benchmark documents.",
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    fresh = _new_database(args)
    try:
        code: int = args._run(args)
    except KianaError as exc:
        _remove(fresh)
        print(f"kiana {args.command}: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _remove(fresh)
        print(f"kiana {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    if code == 2:
        _remove(fresh)
    return code


def _new_database(args: argparse.Namespace) -> Path | None:
    """The ``--db`` file when it does not exist yet: a command that fails must not
    leave a new, empty database behind (a later ``kiana regressions`` would read it)."""
    db = getattr(args, "db", None)
    if db is None or str(db) == ":memory:":
        return None
    path = Path(db)
    return None if path.exists() else path


def _remove(path: Path | None) -> None:
    if path is None:
        return
    for leftover in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(OSError):
            leftover.unlink()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
