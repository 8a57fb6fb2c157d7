"""Strings from the data, made inert before they reach a terminal, a CI log or a
pull-request comment.

:func:`terminal` (one inert line), :func:`markdown` and :func:`code` (inert Markdown:
no mention, link, entity or HTML), :func:`excerpt` (a short quote for an error message),
:func:`cut` (a field of at most :data:`FIELD_LIMIT` characters, saying how much was
cut).  ``tests/SECURITY.md`` lists the cases they are tested against.

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


#: The runner's legacy command syntax, ``##[error]...``: parsed anywhere in a line.
_LEGACY = re.compile(r"##\[")


def terminal(text: object, limit: int | None = None) -> str:
    """``text`` as one inert line: control, bidi and zero-width characters escaped
    (``\\n``, ``\\x1b``, ``\\u202e``), a leading ``::`` (a workflow command where the
    string starts a line) prefixed with a backslash, and ``##[`` (the runner's legacy
    syntax, parsed anywhere) broken as ``#\\#[``.  With ``limit``, cut first
    (:func:`cut`).

    >>> terminal("ok ##[error]merge me")
    'ok #\\\\#[error]merge me'
    """
    shown = str(text) if limit is None else cut(text, limit)
    escaped = _LEGACY.sub("#\\\\#[", _UNSAFE.sub(_escape, shown))
    if escaped.lstrip().startswith("::"):
        escaped = "\\" + escaped
    return escaped


#: Longest field printed whole (kernel names, commit subjects, reasons): issue 40.
FIELD_LIMIT = 300


def cut(value: object, limit: int = FIELD_LIMIT) -> str:
    """``value`` as text of at most ``limit`` characters, and how much was cut.

    >>> cut("x" * 310, 5)
    'xxxxx… (305 characters cut)'
    >>> cut("short")
    'short'
    """
    text = str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{ELLIPSIS} ({len(text) - limit:,} characters cut)"


#: Markdown and HTML characters escaped in :func:`markdown` (``&`` first: an entity in
#: the data must not decode into a mention or a tag).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|<>#&~])")
_MD_REPLACE = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
#: ``scheme://`` and ``www.``: what GitHub turns into links.
_URL = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*):(?=//)|\b(www)\.(?=\S)")
#: ``@user``, ``@org/team``: a mention notifies whoever it names.
_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
#: Longest data string :func:`markdown` and :func:`code` keep, in characters.
MARKDOWN_LIMIT = 200
ELLIPSIS = "…"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _one_line(value: object, limit: int) -> str:
    text = " ".join(str(value if value is not None else "").split())
    return _UNSAFE.sub(_escape, _cut(text, limit))


def markdown(value: object, limit: int = MARKDOWN_LIMIT) -> str:
    """``value`` as inert Markdown text, safe in a table cell: one line of at most
    ``limit`` characters; Markdown and HTML characters escaped; links, mentions and
    entities made inert (``https://x`` -> ``https[:]//x``, ``www.x`` -> ``www[.]x``,
    ``@user`` -> ``@`` + a zero-width space + ``user``), control and bidi characters
    escaped as :func:`terminal` does.  ``#123`` stays text (``\\#123``).

    >>> markdown("@octocat see https://evil.example | x")
    '@&#8203;octocat see https\\\\[:\\\\]//evil.example \\\\| x'
    >>> markdown("a\\nb <img src=x>")
    'a b &lt;img src=x&gt;'
    """
    text = _one_line(value, limit)
    text = _MD_SPECIAL.sub(lambda m: _MD_REPLACE.get(m.group(), "\\" + m.group()), text)
    text = _URL.sub(lambda m: f"{m[1]}\\[:\\]" if m[1] else f"{m[2]}\\[.\\]", text)
    return _MENTION.sub("@&#8203;", text)


def code(value: object, limit: int = MARKDOWN_LIMIT) -> str:
    """``value`` as an inline code span (outside tables: a ``|`` stays a ``|``): one
    line of at most ``limit`` characters, backticks replaced, control and bidi
    characters escaped.  Inside a code span nothing links or mentions.

    >>> code("git log `rm -rf` @x")
    "`git log 'rm -rf' @x`"
    """
    return "`" + _one_line(value, limit).replace("`", "'") + "`"


_NAME_LIKE = re.compile(r"^[\w .:/+-]{1,40}$")


def excerpt(value: object, limit: int = 40) -> str:
    """A short, escaped excerpt of something read, for an error message: at most
    ``limit`` characters, quoted, inert (:func:`terminal`).  Never quote more of a
    file than this: the file may be a link to a secret.

    >>> excerpt("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…' (100 characters)"
    >>> excerpt("0.5\\x1b[2J")
    "'0.5\\\\x1b[2J'"
    """
    text = str(value)
    shown = "'" + terminal(_cut(text, limit)) + "'"
    return shown if len(text) <= limit else f"{shown} ({len(text):,} characters)"


def name_like(value: str) -> bool:
    """Whether ``value`` looks like a column or file name (short, no punctuation that
    secrets are made of): only such cells of a foreign file are quoted in errors."""
    return bool(_NAME_LIKE.match(value))
