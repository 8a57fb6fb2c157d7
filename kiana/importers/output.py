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
import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from kiana.documents import slugify
from kiana.errors import InputError

NAME_LIMIT = 180


def document_filename(doc: dict[str, Any]) -> str:
    spec = doc["run"]["spec"]
    metric = spec["measurements"][0]["metric"] if spec["measurements"] else "run"
    return f"{slugify(spec['sourceNative']['externalId'])[:NAME_LIMIT]}-{metric}"


def write_files(documents: Iterable[dict[str, Any]], directory: Path) -> int:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{directory}: cannot create: {exc}", hint="choose another -o") from None
    used: set[str] = set()
    written = 0
    for doc in documents:
        stem = base = document_filename(doc)
        n = 1
        while stem in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem)
        path = directory / f"{stem}.json"
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written += 1
    return written


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8")
    return path.open("w", encoding="utf-8")


def write_jsonl(documents: Iterable[dict[str, Any]], path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _open_text(path) as out:
            written = 0
            for doc in documents:
                out.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
                written += 1
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc}", hint="choose another --jsonl") from None
    return written
