"""Where a load's time goes: a profiler object the pipeline times its stages with.

:func:`kiana.load.load` takes ``profiler=``: by default :data:`NO_PROFILER`, which
records nothing and costs one shared no-op context per stage.  A :class:`StageTimes`
sums the seconds of each stage over a load's batches (``bench/load_stages.py`` prints
them)::

    >>> from kiana.load.profiling import StageTimes
    >>> times = StageTimes()
    >>> with times.stage("parse"):
    ...     pass
    >>> list(times.seconds)
    ['parse']

The stages of different threads overlap (the next batch is read and checked while the
one before is stored), so their seconds add up to more than the whole load.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Protocol

__all__ = ["NO_PROFILER", "NoProfiler", "Profiler", "StageTimes"]


class Profiler(Protocol):
    """What the loader asks of a profiler: a context timing one stage of one batch."""

    def stage(self, name: str) -> AbstractContextManager[None]: ...


class NoProfiler:
    """Records nothing (the default)."""

    _NOTHING = contextlib.nullcontext()

    def stage(self, name: str) -> AbstractContextManager[None]:
        return self._NOTHING


#: The profiler of a load that names none.
NO_PROFILER = NoProfiler()


class StageTimes:
    """Seconds per stage, summed over a load's batches (safe across the load's threads)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            with self._lock:
                self.seconds[name] = self.seconds.get(name, 0.0) + spent
