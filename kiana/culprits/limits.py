"""``kiana gate --timeout``: a deadline that always ends the gate.

Inside the deadline, ``SIGALRM`` raises :class:`GateTimeout` in the main thread as soon
as Python runs again (git subprocesses are killed by ``subprocess.run`` when it
unwinds).  A query that never returns to Python (one long DuckDB or polars call)
cannot be interrupted that way, so a backstop thread waits :data:`GRACE` seconds more,
calls ``on_expiry`` (the gate writes its "could not judge" comment) and ends the
process with ``code``: a gate never hangs a CI job, and never exits as if it judged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from kiana.errors import KianaError

#: Seconds the backstop waits after the deadline for the main thread to stop by itself.
GRACE = 15.0


class GateTimeout(KianaError):
    """``--timeout`` seconds passed before the gate had judged."""


@contextlib.contextmanager
def deadline(seconds: float | None, *, code: int, on_expiry: Callable[[], None]) -> Iterator[None]:
    """Raise :class:`GateTimeout` after ``seconds`` (module docstring); None or 0: none."""
    if not seconds:
        yield
        return
    main = threading.current_thread() is threading.main_thread()
    previous = None

    def expired(signum: int, frame: FrameType | None) -> None:
        raise GateTimeout(
            f"--timeout {seconds:g} s reached: not judged",
            hint="raise --timeout if the history is this large (Liger's full history takes "
            "10-13 s)",
        )

    def backstop() -> None:
        with contextlib.suppress(BaseException):
            on_expiry()
            print(f"kiana gate: --timeout {seconds:g} s reached: not judged", file=sys.stderr)
        os._exit(code)

    timer = threading.Timer(seconds + (GRACE if main else 0.0), backstop)
    timer.daemon = True
    if main:
        previous = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
