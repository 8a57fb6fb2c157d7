"""Where imported documents go: one ``.json`` file each, one JSONL file, or a database.

* :func:`write_files`: ``DIR/<externalId slug>-<metric>.json`` (pretty, 2-space indent).
  A Liger speed row and memory row of one benchmark session can share the same
  ``externalId`` (the upstream timestamp has one-second resolution), hence the metric in
  the name; names are cut at 180 characters and made unique with ``-2``, ``-3``, ...
* :func:`write_jsonl`: one minified document per line; gzip when the name ends in ``.gz``.
* ``kiana import liger --db`` loads them with ``kiana.load.load_documents`` into the
  database ``kiana.commands.common.open_db`` opens, through the loader's validation like
  any document.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kiana.documents import slugify
from kiana.errors import InputError
from kiana.safe import open_folder, open_output, terminal, write_output

NAME_LIMIT = 180


def document_filename(doc: dict[str, Any]) -> str:
    spec = doc["run"]["spec"]
    metric = spec["measurements"][0]["metric"] if spec["measurements"] else "run"
    return f"{slugify(spec['sourceNative']['externalId'])[:NAME_LIMIT]}-{metric}"


def write_files(documents: Iterable[dict[str, Any]], directory: Path) -> int:
    """One pretty-printed ``.json`` per document in ``directory`` (created), none through
    a link (:mod:`kiana.safe.files`)."""
    try:
        os.close(open_folder(directory, mkdirs=True))
    except OSError as exc:
        raise InputError(
            f"{terminal(directory, 300)}: cannot create: {exc.strerror or exc}",
            hint="choose another -o",
        ) from None
    used: set[str] = set()
    written = 0
    for doc in documents:
        stem = base = document_filename(doc)
        n = 1
        while stem in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem)
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        write_output(directory / f"{stem}.json", text, hint="choose another -o")
        written += 1
    return written


def write_jsonl(documents: Iterable[dict[str, Any]], path: Path) -> int:
    """One minified document per line (gzip where the name ends in ``.gz``), written
    without following a link (:mod:`kiana.safe.files`)."""
    try:
        with open_output(path, "wb", mkdirs=True) as raw:
            sink: Any = (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw) if path.suffix == ".gz" else raw
            )
            with io.TextIOWrapper(sink, encoding="utf-8", newline="\n") as out:
                written = 0
                for doc in documents:
                    out.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
                    written += 1
    except OSError as exc:
        raise InputError(
            f"{terminal(path, 300)}: cannot write: {exc.strerror or exc}",
            hint="choose another --jsonl",
        ) from None
    return written
