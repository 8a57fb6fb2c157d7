"""Liger's git history, read back: where a run was recorded and which commits to read
for a finding.

* :func:`provenance` (:mod:`kiana.culprits.recorded`): ``run_id``, ``liger_commit``,
  ``liger_csv`` of every run, from the labels ``kiana import liger --git`` writes;
* :func:`annotate` (:mod:`kiana.culprits.rank`): findings or steps of
  :func:`kiana.analyze` with their ranked ``culprits`` (commits touching the
  kernel's files, :mod:`kiana.culprits.layout`) and a ``git log`` command listing them;
* :mod:`kiana.culprits.gate`: the pull-request gate behind ``kiana gate``.

```python
import kiana
from kiana.culprits import provenance

con = kiana.connect("kiana.duckdb")  # kiana import liger --git ~/Liger-Kernel --db ...
provenance(con)  # run_id, liger_commit, liger_csv
analysis = kiana.analyze(con, git=Path("~/Liger-Kernel").expanduser())
analysis.findings.select("kernel", "verdict", "culprits")  # ranked by annotate
```
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiana.culprits.rank import CULPRIT_COLUMNS, Finder, annotate
    from kiana.culprits.recorded import PROVENANCE_COLUMNS, provenance

__all__ = ["CULPRIT_COLUMNS", "PROVENANCE_COLUMNS", "Finder", "annotate", "provenance"]

#: Where each name lives: imported on first use, so ``kiana gate --help`` (which reads
#: :mod:`kiana.culprits.exits`) does not import polars and DuckDB.
_HOMES = {
    "PROVENANCE_COLUMNS": "recorded",
    "provenance": "recorded",
    "CULPRIT_COLUMNS": "rank",
    "Finder": "rank",
    "annotate": "rank",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kiana.culprits' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kiana.culprits.{home}"), name)
