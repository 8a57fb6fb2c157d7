"""``kiana.shards.unit.with_pos``: a step's position is its later session's point's,
joined on the keys alone (the frame's own columns kept as they are), and where a key
has several points the whole frame joined, as before: a step of each."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from kiana.shards.unit import POS, with_pos


def _points(sessions: list[str]) -> pl.DataFrame:
    n = len(sessions)
    return pl.DataFrame({
        "partition_id": ["p"] * n, "provider": ["liger"] * n, "metric": ["latency"] * n,
        "session": sessions, "origin": ["o"] * n, "version": ["1"] * n,
        "position": list(range(n)),
    })  # fmt: skip


def _steps(sessions: list[str]) -> pl.DataFrame:
    n = len(sessions)
    return pl.DataFrame({
        "partition_id": ["p"] * n, "provider": ["liger"] * n, "metric": ["latency"] * n,
        "to_session": sessions, "to_origin": ["o"] * n, "to_version": ["1"] * n,
        "evidence": [f"step {s}" for s in sessions],
    }, schema_overrides=dict.fromkeys(["partition_id", "provider", "metric", "to_session",
                                       "to_origin", "to_version", "evidence"], pl.String))  # fmt: skip


def _joined(steps: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """The whole frame joined (what ``with_pos`` gave before it joined the keys alone)."""
    right = points.select(
        "partition_id", "provider", "metric", pl.col("session").alias("to_session"),
        pl.col("origin").alias("to_origin"), pl.col("version").alias("to_version"),
        pl.col("position").alias(POS),
    )  # fmt: skip
    on = ["partition_id", "provider", "metric", "to_session", "to_origin", "to_version"]
    return steps.join(right, on=on, how="left", nulls_equal=True, maintain_order="left")


def test_each_step_takes_its_later_points_position() -> None:
    points, steps = _points(["a", "b", "c"]), _steps(["c", "b", "x"])
    got = with_pos(steps, points)
    assert got[POS].to_list() == [2, 1, None]
    assert got.columns == [*steps.columns, POS]
    assert_frame_equal(got, _joined(steps, points))


def test_a_key_of_two_points_gives_its_step_twice() -> None:
    points, steps = _points(["a", "b", "b"]), _steps(["a", "b"])
    got = with_pos(steps, points)
    assert got.height == 3
    assert got[POS].to_list() == [0, 1, 2]
    assert_frame_equal(got, _joined(steps, points))


def test_no_steps() -> None:
    points, steps = _points(["a"]), _steps([])
    got = with_pos(steps, points)
    assert got.height == 0
    assert got.columns == [*steps.columns, POS]
