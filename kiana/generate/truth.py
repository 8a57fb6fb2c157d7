"""The ground truth's shape, and the truth as CSV (``truth.csv``)."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import polars as pl

Effect = Literal[
    "regression", "improvement", "drift", "outlier", "conflict", "changepoint",
    "baseline_change", "aa",
]  # fmt: skip
EFFECTS: tuple[Effect, ...] = (
    "regression", "improvement", "drift", "outlier", "conflict", "changepoint",
    "baseline_change", "aa",
)  # fmt: skip

#: Columns of :attr:`kiana.generate.Corpus.truth`, in order (see kiana.generate).
TRUTH_COLUMNS: tuple[str, ...] = (
    "kernel", "pass", "provider", "gpu", "workload", "metric", "from_version",
    "to_version", "from_session", "to_session", "effect", "change", "note",
)  # fmt: skip
TRUTH_FILE = "truth.csv"


def truth_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The truth rows as a DataFrame of :data:`TRUTH_COLUMNS` (``change`` a float)."""
    import polars as pl

    return pl.DataFrame(rows, schema=_schema(), orient="row")


def _schema() -> dict[str, Any]:
    import polars as pl

    return {c: pl.Float64 if c == "change" else pl.String for c in TRUTH_COLUMNS}


def write_truth(frame: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """The truth as CSV: a header of the truth columns, nulls as empty fields, changes
    as Python writes floats (``0.1234``, ``-0.05``)."""
    from kiana.safe import open_output

    with open_output(Path(path)) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(frame.columns)
        for row in frame.iter_rows():
            writer.writerow(["" if value is None else value for value in row])


def read_truth(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A truth CSV back as the DataFrame :attr:`Corpus.truth` had."""
    import polars as pl

    return pl.read_csv(Path(path), schema=_schema())
