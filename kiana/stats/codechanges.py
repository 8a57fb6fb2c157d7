"""Code changes of the baselines: when a control is no control.

A baseline provider (``torch``, ``huggingface``) measures the machine only while its
own code stays the same.  Twice in Liger's history the pull request that recorded the
rows also edited the baseline's code (the reference implementation in the benchmark
script, or a test module the script imports); its move was then the benchmark's, and
judging Liger against it reported "the machine moved".

:class:`CodeChanges` is the question kiana asks whoever knows the code (the git
implementation lives in :mod:`kiana.culprits`): for each pair of origins of a step,
did the baseline's code change between them?  :func:`mark_changes` asks it once per
distinct ``(kernel, from_origin, to_origin)`` and marks every step:
``benchmark_changed`` (bool) and ``benchmark_note`` (``"benchmark_jsd.py changed in
abc123def456"``).  A marked step's controls are set aside (the GPU-wide fallback too: a
benchmark change is not the machine), its finding says "benchmark changed between
sessions: <note>", its baselines' moves are the benchmark's own (never ``drift``), and
the calibration leaves them out.

Without such knowledge, the rule of :mod:`kiana.stats.sweeps` applies instead: a
control that moved alone while Liger stayed flat is not a Liger change.

>>> import polars as pl
>>> class Touched:
...     def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
...         changed = pl.col("kernel") == "jsd"
...         return pairs.with_columns(
...             changed.alias("baseline_changed"),
...             pl.when(changed).then(pl.lit("benchmark_jsd.py changed in abc123")).alias("baseline_note"),
...         )
>>> steps = pl.DataFrame({"kernel": ["jsd", "rope"], "from_origin": ["a:x.csv", None],
...                       "to_origin": ["b:x.csv", None]})
>>> mark_changes(steps, Touched())["benchmark_changed"].to_list()
[True, False]
"""

from __future__ import annotations

from typing import Protocol

import polars as pl

from kiana.errors import UsageError

#: The columns of the pairs asked about, in order.
PAIR_COLUMNS: tuple[str, ...] = ("kernel", "from_origin", "to_origin")


class CodeChanges(Protocol):
    """Who knows whether a baseline's code changed between two recordings."""

    def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """``pairs`` holds the distinct ``kernel, from_origin, to_origin`` of the steps
        (origins may be null); return those rows plus ``baseline_changed: bool`` and
        ``baseline_note: str | None`` (a short description, e.g. ``"benchmark_jsd.py
        changed in abc123def456"``)."""
        ...


def mark_changes(steps: pl.DataFrame, code_changes: CodeChanges | None) -> pl.DataFrame:
    """Add ``benchmark_changed`` and ``benchmark_note`` to ``steps`` (module docstring);
    without ``code_changes`` nothing is marked."""
    if code_changes is None or steps.height == 0:
        return steps.with_columns(
            pl.lit(False).alias("benchmark_changed"),
            pl.lit(None, pl.String).alias("benchmark_note"),
        )
    keys = list(PAIR_COLUMNS)
    pairs = (
        steps.select(pl.col(c).cast(pl.String) for c in keys).unique().sort(keys, nulls_last=True)
    )
    answer = code_changes.baseline_changed(pairs)
    missing = [c for c in (*keys, "baseline_changed", "baseline_note") if c not in answer.columns]
    if missing:
        raise UsageError(
            f"CodeChanges.baseline_changed returned no column(s) {', '.join(missing)}",
            hint="return the pairs frame with baseline_changed (bool) and baseline_note (str) added",
        )
    answer = answer.select(
        *(pl.col(c).cast(pl.String) for c in keys),
        pl.col("baseline_changed").cast(pl.Boolean).fill_null(False).alias("benchmark_changed"),
        pl.col("baseline_note").cast(pl.String).alias("benchmark_note"),
    ).unique(keys, keep="first")
    joined = steps.join(answer, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return joined.with_columns(pl.col("benchmark_changed").fill_null(False))
