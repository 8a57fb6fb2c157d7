"""Corpora onto disk: the documents in one of three layouts, and ``truth.csv``."""

from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kiana.errors import InputError
from kiana.generate.corpus import Corpus
from kiana.generate.truth import TRUTH_FILE, write_truth
from kiana.safe import open_folder, open_output, write_text

Layout = Literal["files", "jsonl", "jsonl.gz"]
LAYOUTS: tuple[Layout, ...] = ("files", "jsonl", "jsonl.gz")


@dataclass(frozen=True)
class Written:
    """What :func:`write_corpus` wrote."""

    documents: int
    files: int
    truth: Path | None


def _file_name(doc: dict[str, Any]) -> str:
    """``<kernel>/<pass>/<gpu>/<provider>/<workload>-<stamp>[-memory].json``: unique
    per run, unlike ``metadata.name`` (which is cut at 100 characters)."""
    spec = doc["run"]["spec"]
    kernel, pass_, provider, gpu, workload, stamp = spec["sourceNative"]["externalId"].split("/")
    memory = "" if "timing" in spec else "-memory"
    return f"{kernel}/{pass_}/{gpu}/{provider}/{workload}-{stamp}{memory}.json"


def write_corpus(
    corpus: Corpus, out: str | os.PathLike[str], layout: Layout = "jsonl", *, truth: bool = True
) -> Written:
    """Write every document of ``corpus`` under ``out`` and, with ``truth``, the ground
    truth as ``out/truth.csv``.

    Layouts: ``files`` (one pretty-printed ``.json`` per run, as the seeds), ``jsonl``
    (``out/documents.jsonl``, one compact document a line) or ``jsonl.gz`` (the same,
    gzip-compressed with a zero mtime so the bytes are reproducible).  Existing files of
    the same names are overwritten; nothing else in ``out`` is touched.
    """
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r}", hint=f"use one of {', '.join(LAYOUTS)}")
    root = Path(out)
    os.close(open_folder(root, mkdirs=True))
    count = 0
    files = 0
    if layout == "files":
        for doc in corpus.documents():
            text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
            write_text(root / _file_name(doc), text, mkdirs=True)
            count += 1
        files = count
    else:
        with open_output(root / ("documents." + layout), "wb") as raw:
            sink: Any = raw
            if layout == "jsonl.gz":
                sink = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
            with io.TextIOWrapper(sink, encoding="utf-8", newline="\n") as text_out:
                dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
                for doc in corpus.documents():
                    text_out.write(dumps(doc))
                    text_out.write("\n")
                    count += 1
        files = 1
    truth_path = None
    if truth:
        truth_path = root / TRUTH_FILE
        write_truth(corpus.truth, truth_path)
    return Written(count, files, truth_path)
