"""Whether Ctrl-C came while a command ran: the state :func:`kiana.cli.main` keeps and the
commands read (``kiana load`` reports what it stored before an interrupt), below both.

DuckDB turns a Ctrl-C during a query into an error of its own, and code that puts a
DuckDB error aside (the reset of the memory limit after a load, say) would otherwise
lose it and exit 0: :func:`note_ctrl_c` records it as Python's handler raises.
"""

from __future__ import annotations

import signal
from types import FrameType

_ctrl_c = False


def note_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """Python's own SIGINT handler (it raises ``KeyboardInterrupt``), which also
    records that Ctrl-C came: DuckDB turns a Ctrl-C during a query into an error of its
    own, and code that puts a DuckDB error aside (the reset of the memory limit after a
    load, say) would otherwise lose it and exit 0."""
    global _ctrl_c
    _ctrl_c = True
    signal.default_int_handler(signum, frame)


def ctrl_c_came() -> bool:
    """Whether Ctrl-C came while this ``main`` ran a command, even if it was caught."""
    return _ctrl_c


def reset() -> None:
    """Forget an earlier Ctrl-C (each :func:`kiana.cli.main` starts afresh)."""
    global _ctrl_c
    _ctrl_c = False


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised while handling) is Ctrl-C: Python's
    ``KeyboardInterrupt`` or DuckDB's ``Query interrupted`` (DuckDB takes SIGINT while a
    query runs; a rollback after it may fail in turn, hiding the interrupt), or any
    failure after Ctrl-C came (DuckDB also wraps it: "reading the schema of the Arrow
    source failed: KeyboardInterrupt")."""
    if _ctrl_c:
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, KeyboardInterrupt):
            return True
        if "interrupt" in type(current).__name__.lower() or "Query interrupted" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False
