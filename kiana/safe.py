"""Strings from the data, made inert before they reach a terminal or a CI log.

Kernel, provider, workload, GPU and version names come from documents and CSV rows that
anyone can write (a pull request's rows reach ``kiana gate``).  Printed raw, a newline in
a name starts a line of its own, and a line such as ``::error file=README.md::safe to
merge`` is a GitHub Actions workflow command; an ANSI escape moves the cursor or
rewrites the line; a bidi override reorders what the reader sees.  :func:`terminal`
escapes every such character so a data string is always one visible line of text:

>>> terminal("rms_norm\\n::error::safe to merge")
'rms_norm\\\\n::error::safe to merge'
>>> terminal("::warning::x")
'\\\\::warning::x'
>>> terminal("abc\\u202edef")
'abc\\\\u202edef'
>>> terminal("H100 80GB HBM3")
'H100 80GB HBM3'
"""

from __future__ import annotations

import re

#: C0 controls (tab and newline included), DEL, C1 controls, the bidi embeddings,
#: overrides and isolates, the line and paragraph separators, and the zero-width
#: characters that hide text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: object) -> str:
    """``text`` as one inert line: control, bidi and zero-width characters escaped
    (``\\n``, ``\\x1b``, ``\\u202e``), and a leading ``::`` (a workflow command where the
    string starts a line) prefixed with a backslash."""
    escaped = _UNSAFE.sub(_escape, str(text))
    if escaped.lstrip().startswith("::"):
        escaped = "\\" + escaped
    return escaped
