"""The culprit columns without a repository, written as expressions
(:func:`kiana.culprits.rank._hints`), against :meth:`Finder.annotate_row` row by row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl
import pytest

from kiana.culprits import Finder, annotate
from kiana.culprits.rank import CULPRIT_COLUMNS, CULPRIT_DTYPE


def frame(times: list[tuple[datetime | None, datetime | None]]) -> pl.DataFrame:
    kernels = ["rms_norm", "jsd", None, "", "fused_linear_cross_entropy"]
    rows: list[dict[str, Any]] = [
        {
            "provider": "liger" if i % 3 else "torch",
            "is_subject": bool(i % 3),
            "kernel": kernels[i % len(kernels)],
            "from_origin": None,
            "to_origin": None,
            "from_observed_at": start,
            "to_observed_at": end,
        }
        for i, (start, end) in enumerate(times)
    ]
    return pl.DataFrame(rows, schema_overrides={"from_observed_at": pl.Datetime("us"),
                                                "to_observed_at": pl.Datetime("us")})  # fmt: skip


def row_by_row(rows: pl.DataFrame) -> pl.DataFrame:
    finder = Finder(None)
    values = [finder.annotate_row(r) for r in rows.iter_rows(named=True)]
    return rows.with_columns(
        pl.Series(n, [v[n] for v in values], dtype=CULPRIT_DTYPE if n == "culprits" else pl.String)
        for n in CULPRIT_COLUMNS
    )


TIMES = [
    (datetime(2026, 5, 3, 6, 6, 6), datetime(2026, 5, 17, 12, 59, 22)),
    (datetime(2025, 12, 31, 23, 0), datetime(2026, 1, 1)),
    (None, datetime(2026, 2, 1)),
    (datetime(2026, 2, 1), None),
    (datetime(1999, 1, 1, 0, 0, 0, 999), datetime(2000, 2, 29)),
] * 3


def test_hints_are_the_row_by_row_hints() -> None:
    rows = frame(TIMES)
    assert annotate(rows).equals(row_by_row(rows))


@pytest.mark.parametrize("edge", [datetime(9999, 12, 31), datetime(1, 1, 1)])
def test_a_hostile_year_takes_the_row_by_row_path(edge: datetime) -> None:
    rows = frame([*TIMES, (edge, edge)])
    assert annotate(rows).equals(row_by_row(rows))
