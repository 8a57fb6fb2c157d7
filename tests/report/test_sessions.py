"""Sessions are the x axis of every series chart: two sessions under one label are two
points, labelled with their version, dated in the tooltip; the flagged step joins the
finding's two sessions."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import kiana
from kiana.report import charts, frames
from tests.report.sessions_fixtures import session_database


def _analysis(tmp_path: Path) -> kiana.Analysis:
    return kiana.analyze(session_database(tmp_path))


@pytest.mark.heavy
def test_a_same_label_regression_is_found_between_two_sessions(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    top = analysis.listed().row(0, named=True)
    assert (top["verdict"], top["from_version"], top["to_version"]) == (
        "regression", "0.8.0", "0.8.0"
    )  # fmt: skip


def test_each_session_is_a_point(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    partition = analysis.runs["partition_id"][0]
    frame = frames.series_frame(analysis.runs, partition_id=partition)
    liger = frame.filter(pl.col("provider") == "liger")
    assert liger["version"].to_list() == ["0.7.0", "0.8.0", "0.8.0"]
    assert liger["session"].n_unique() == 3
    order = frames.point_order(frame)
    assert [p.split(" ", 1)[1] for p in order] == ["0.7.0", "0.8.0", "0.8.0"]


def test_the_step_joins_the_findings_sessions(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    top = analysis.listed().row(0, named=True)
    worst = frames.worst_step(analysis.steps, top)
    spec = charts.series_spec(
        analysis.runs, partition_id=worst["partition_id"], step=frames.step_of(top)
    )
    rect = spec["layer"][0]
    marked = rect["data"]["values"][0]
    assert marked["from"].startswith(top["from_session"])
    assert marked["to"].startswith(top["to_session"])
    assert marked["from"] != marked["to"]
    x = spec["layer"][-1]["encoding"]["x"]
    assert x["field"] == "point" and "labelExpr" in x["axis"]
    tooltip = {t["field"] for t in spec["layer"][-1]["encoding"]["tooltip"]}
    assert {"session", "version"} <= tooltip


@pytest.mark.heavy
def test_a_version_step_shades_the_last_session_before_the_next_label(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    order = frames.point_order(
        frames.series_frame(analysis.runs, partition_id=analysis.runs["partition_id"][0])
    )
    assert frames.step_points(order, ("0.7.0", "0.8.0")) == (order[0], order[1])
    assert frames.step_points(order, ("0.8.0", "0.8.0")) == (order[1], order[2])
    assert frames.step_points(order, ("0.6.0", "0.8.0")) is None
