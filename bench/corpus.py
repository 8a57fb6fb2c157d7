"""Make (and cache) the benchmark corpora with kiana's own generator.

    .venv/bin/python bench/corpus.py                   # 10k and 100k, every layout; 1M as JSONL
    .venv/bin/python bench/corpus.py --sizes 1m --layouts files   # 1M single-document files too

Corpora land in ``bench/out/corpus/<size>/<layout>/`` (gitignored) and are reused when
their ``.done`` marker exists; ``--force`` remakes them.  Same config, same bytes: the
generator is deterministic (``CorpusConfig.sized(n, seed=0)``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "corpus"
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
LAYOUTS = ("files", "jsonl", "jsonl.gz")
#: 1M single-document files are ~4 GB and a million inodes: only on request.
DEFAULT = {"10k": LAYOUTS, "100k": LAYOUTS, "1m": ("jsonl", "jsonl.gz")}


def corpus_dir(size: str, layout: str) -> Path:
    return OUT / size / layout


def input_path(size: str, layout: str) -> Path:
    """What to hand to a loader: the folder of files, or the one JSONL file."""
    base = corpus_dir(size, layout)
    return base if layout == "files" else base / f"documents.{layout}"


def ensure(size: str, layout: str, *, force: bool = False) -> Path:
    """Make the corpus of ``size`` in ``layout`` unless it is cached; returns its input path."""
    from kiana.generate import CorpusConfig, generate, write_corpus

    target = corpus_dir(size, layout)
    done = target / ".done"
    if done.exists() and not force:
        return input_path(size, layout)
    if target.exists():
        shutil.rmtree(target)
    started = time.perf_counter()
    corpus = generate(CorpusConfig.sized(SIZES[size], seed=0))
    written = write_corpus(corpus, target, layout)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    info = {"documents": written.documents, "files": written.files, "seconds": round(seconds, 1)}
    done.write_text(json.dumps(info) + "\n")
    print(
        f"{size:>5} {layout:9} {written.documents:>9,} documents in {written.files:,} files, "
        f"{seconds:.1f} s",
        file=sys.stderr,
    )
    return input_path(size, layout)


def documents(size: str, layout: str) -> int:
    return int(json.loads((corpus_dir(size, layout) / ".done").read_text())["documents"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", choices=SIZES, default=list(SIZES))
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=None)
    parser.add_argument("--force", action="store_true", help="remake cached corpora")
    args = parser.parse_args()
    for size in args.sizes:
        for layout in args.layouts or DEFAULT[size]:
            path = ensure(size, layout, force=args.force)
            print(f"{size:>5} {layout:9} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
