"""Whatever a command prints, made inert and bounded on its way out.

Every command's ``sys.stdout`` and ``sys.stderr`` pass through an :class:`InertStream`
(``kiana.cli`` installs them with :func:`inert_streams`), a second line of defence
behind :func:`kiana.safe.terminal` on each field:

* ``##[`` (the GitHub runner's legacy command syntax, acted on anywhere in a line)
  becomes ``#\\#[``, and a line's leading ``::`` becomes ``\\::``; under GitHub Actions
  (``GITHUB_ACTIONS=true``) every ``::`` does (``:\\:``), and plain-text output is fenced
  between ``::stop-commands::TOKEN`` and ``::TOKEN::`` with a random token
  (GitHub's "Stopping and starting workflow commands"), so the runner acts on nothing
  between them;
* JSON output (``--json``) keeps its meaning: ``::`` and ``##[`` inside its strings become
  ``:\\u003a`` and ``#\\u0023[`` (JSON's own escapes: the same strings, decoded), and no
  fence is printed into it;
* a run of more than :data:`~kiana.safe.text.FIELD_LIMIT` characters without a space
  (a 100 KB kernel name) is cut, saying how much, and so is a line of more than
  :data:`LINE_LIMIT` (a 1 MB commit subject) in text output;
* with ``cap`` (the gate: :data:`GATE_CAP`, 1 MB), output past it is dropped and one
  last line says how much.

>>> import io
>>> raw = io.StringIO()
>>> out = InertStream(raw, json=False, actions=False)
>>> _ = out.write("::error::x\\nkernel " + "k" * 400 + "\\n")
>>> print(raw.getvalue().splitlines()[0])
\\::error::x
>>> raw.getvalue().splitlines()[1][-40:]
'kkkkkkkkkkkkkkkkkk… (100 characters cut)'
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import sys
from collections.abc import Iterator
from typing import TextIO

from kiana.safe.text import FIELD_LIMIT, cut

#: Longest line of text output printed whole (characters).
LINE_LIMIT = 4_000
#: What the gate prints to stdout at most (bytes of UTF-8).
GATE_CAP = 1 << 20

_LONG_RUN = re.compile(rf"\S{{{FIELD_LIMIT + 1},}}")
_LEGACY = "##["


def _text_line(line: str, actions: bool) -> str:
    line = _LONG_RUN.sub(lambda m: cut(m.group(0)), line.replace(_LEGACY, "#\\#["))
    if actions:
        line = line.replace("::", ":\\:")
    elif line.lstrip().startswith("::"):
        line = "\\" + line
    if len(line) > LINE_LIMIT + 1:
        end = "\n" if line.endswith("\n") else ""
        line = cut(line.removesuffix("\n"), LINE_LIMIT) + end
    return line


def _json_text(text: str) -> str:
    return text.replace("::", ":\\u003a").replace(_LEGACY, "#\\u0023[")


class InertStream(io.TextIOBase):
    """A text stream that writes through to ``raw`` line by line (module docstring)."""

    def __init__(self, raw: TextIO, *, json: bool, actions: bool, cap: int | None = None) -> None:
        super().__init__()
        self.raw = raw
        self.json = json
        self.actions = actions
        self.cap = cap
        self.written = 0
        self.dropped = 0
        self._pending = ""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    def isatty(self) -> bool:
        return self.raw.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            done, _, self._pending = self._pending.rpartition("\n")
            self._emit(done + "\n")
        if len(self._pending) > LINE_LIMIT * 2:  # a line that never ends
            self._emit(self._pending)
            self._pending = ""
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._emit(self._pending)
            self._pending = ""
        with contextlib.suppress(ValueError):
            self.raw.flush()

    def _emit(self, text: str) -> None:
        if self.json:
            shown = _json_text(text)
        else:
            shown = "".join(_text_line(line, self.actions) for line in text.splitlines(True))
        if self.cap is not None:
            size = len(shown.encode("utf-8", "replace"))
            if self.written + size > self.cap or self.dropped:
                self.dropped += size
                return
            self.written += size
        self.raw.write(shown)

    def finish(self) -> None:
        """Flush, and say what the cap dropped."""
        self.flush()
        if self.dropped:
            self.raw.write(
                f"\nkiana: output cut at {self.cap:,} bytes: {self.dropped:,} more not shown\n"
            )
            self.raw.flush()


@contextlib.contextmanager
def inert_streams(*, json: bool, cap: int | None = None) -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`InertStream` for the block (``cap``
    on stdout), fenced under GitHub Actions unless the output is JSON."""
    actions = os.environ.get("GITHUB_ACTIONS") == "true"
    raw_out, raw_err = sys.stdout, sys.stderr
    out = InertStream(raw_out, json=json, actions=actions, cap=cap)
    err = InertStream(raw_err, json=False, actions=actions)
    fence = secrets.token_hex(16) if actions and not json else None
    if fence is not None:
        raw_out.write(f"::stop-commands::{fence}\n")
        raw_out.flush()
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = raw_out, raw_err
        with contextlib.suppress(OSError, ValueError):
            err.finish()
        with contextlib.suppress(OSError, ValueError):
            out.finish()
        if fence is not None:
            with contextlib.suppress(OSError, ValueError):
                raw_out.write(f"::{fence}::\n")
                raw_out.flush()
