"""What kiana lets out: inert strings, bounded output, files written without following
a link.

* :mod:`kiana.safe.text`: data strings made inert for a terminal, a CI log or a
  pull-request comment (:func:`terminal`, :func:`markdown`, :func:`code`,
  :func:`excerpt`, :func:`cut`);
* :mod:`kiana.safe.stream`: every command's stdout and stderr, fenced under GitHub
  Actions and bounded (:func:`inert_streams`);
* :mod:`kiana.safe.files`: the one writer of every output file (:func:`write_text`,
  :func:`open_output`, :func:`open_folder`, :func:`refuse_links`).

``tests/SECURITY.md`` lists the cases they are tested against.
"""

from __future__ import annotations

from kiana.safe.files import (
    OutputRefused,
    open_folder,
    open_output,
    publish,
    refuse_links,
    write_bytes,
    write_output,
    write_text,
)
from kiana.safe.stream import inert_streams
from kiana.safe.text import FIELD_LIMIT, code, cut, excerpt, markdown, name_like, terminal

__all__ = [
    "FIELD_LIMIT",
    "OutputRefused",
    "code",
    "cut",
    "excerpt",
    "inert_streams",
    "markdown",
    "name_like",
    "open_folder",
    "open_output",
    "publish",
    "refuse_links",
    "terminal",
    "write_bytes",
    "write_output",
    "write_text",
]
