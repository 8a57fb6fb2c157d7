"""kiana: when did a GPU kernel get slower?  The public API.

    import kiana
    con = kiana.connect("kiana.duckdb")     # or kiana.connect() in memory
    kiana.load_paths(con, ["data/"])        # files, folders, globs
    kiana.partitions(con)                   # polars DataFrame, one row per partition
    analysis = kiana.analyze(con)           # what kiana regressions / report / gate show
    analysis.findings                       # .steps, .quality, .coverage, .runs, ...

``kiana.analyze`` is the one pipeline every command uses (:mod:`kiana.pipeline`): the
one way to a verdict.  It reads what the database knows beside the runs (the sessions'
origins, the code changes ``kiana import liger --git`` recorded, the culprits); the
statistics alone (:func:`kiana.stats.judge`) are not exported here, since a runs frame
without those reaches other verdicts than every command shows.

Names are imported on first use, so ``import kiana`` (and the CLI) start quickly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kiana._version import __version__

_LAZY: dict[str, str] = {
    "connect": "kiana.load",
    "runs": "kiana.load",
    "load_paths": "kiana.load",
    "load_documents": "kiana.load",
    "LoadSummary": "kiana.load",
    "partitions": "kiana.group",
    "compare": "kiana.group",
    "ensure_comparable": "kiana.group",
    "ensure_one_partition": "kiana.group",
    "PartitionKey": "kiana.group",
    "generate": "kiana.generate",
    "CorpusConfig": "kiana.generate",
    "write_corpus": "kiana.generate",
    "analyze": "kiana.pipeline",
    "Analysis": "kiana.pipeline",
    "Selection": "kiana.pipeline",
    "JudgeOptions": "kiana.stats",
    "KianaError": "kiana.errors",
    "NotComparableError": "kiana.errors",
    "InputError": "kiana.errors",
    "DatabaseError": "kiana.errors",
    "UsageError": "kiana.errors",
}

__all__ = [
    "Analysis",
    "CorpusConfig",
    "DatabaseError",
    "InputError",
    "JudgeOptions",
    "KianaError",
    "LoadSummary",
    "NotComparableError",
    "PartitionKey",
    "Selection",
    "UsageError",
    "__version__",
    "analyze",
    "compare",
    "connect",
    "ensure_comparable",
    "ensure_one_partition",
    "generate",
    "load_documents",
    "load_paths",
    "partitions",
    "runs",
    "write_corpus",
]

if TYPE_CHECKING:
    from kiana.errors import (
        DatabaseError,
        InputError,
        KianaError,
        NotComparableError,
        UsageError,
    )
    from kiana.generate import CorpusConfig, generate, write_corpus
    from kiana.group import (
        PartitionKey,
        compare,
        ensure_comparable,
        ensure_one_partition,
        partitions,
    )
    from kiana.load import LoadSummary, connect, load_documents, runs
    from kiana.load import load as load_paths
    from kiana.pipeline import Analysis, Selection, analyze
    from kiana.stats import JudgeOptions


#: Public name -> name inside its module, where they differ (``kiana.load`` is the
#: loader package, so its ``load`` function is ``kiana.load_paths`` here).
_RENAMED = {"load_paths": "load"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kiana' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value
