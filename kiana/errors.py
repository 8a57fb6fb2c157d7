"""Every error kiana raises on purpose is a :class:`KianaError`.

Messages name what went wrong and where (the file, the JSON path, the fields
that differ) and end with a hint: what to do about it.  The CLI prints them
without a traceback and exits with status 2.
"""

from __future__ import annotations


class KianaError(Exception):
    """Base class of every error kiana raises on purpose."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message}\nHint: {hint}" if hint else message)


class InputError(KianaError):
    """A path or input given to kiana cannot be read at all (not: a bad document,
    which becomes a row of the ``rejects`` table)."""


class DatabaseError(KianaError):
    """The DuckDB database cannot be opened, is locked, full, or not kiana's."""


class NotComparableError(KianaError):
    """Runs from different partitions were asked to be compared."""

    def __init__(
        self, message: str, *, differing: dict[str, tuple[object, object]], hint: str | None = None
    ) -> None:
        self.differing = differing
        super().__init__(message, hint=hint)


class UsageError(KianaError):
    """An option or argument is invalid (a bad threshold, an unknown version...)."""


class StrictLoadError(KianaError):
    """``--strict`` was given and at least one input was rejected."""
