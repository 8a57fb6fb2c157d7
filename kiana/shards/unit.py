"""A shard judged for the stored judgement: the judge's frames, and what the next load
needs to re-judge only what it touches (:mod:`kiana.shards.store`).

:func:`judge_unit` is :func:`kiana.stats.judge` of a shard's runs (its change points
found by :mod:`kiana.shards.creep`, which keeps each series' search state) plus, from
the judge's first stage, every session point of each series (its level, noise and
position: what the next load's change points resume from, and what its re-judged
region is planned on) and the A/A steps (the data-quality ``rerun`` rows are made from
them when the judgement is read back).  Every frame carries ``_pos``, the position of
its (later) session in its series, which gives back the judge's own row order.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from kiana.shards import creep
from kiana.stats import Judgement, JudgeOptions, judge_stage
from kiana.stats.calfit import prefix_cut, step_time
from kiana.stats.calibration import Calibration, sigmas
from kiana.stats.options import series_window
from kiana.vocabulary import SERIES_KEYS, SERIES_LABELS, UNSTABLE

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import CodeChanges, _Stage

#: A session point of a series as stored (``judged_points``).
POINT_COLUMNS: tuple[str, ...] = (
    *SERIES_KEYS, *SERIES_LABELS, "version", "harness", "is_subject", "session", "origin",
    "session_start",
    "first_observed_at", "last_observed_at", "n_runs", "log_range", "conflict",
    "log_median", "sigma", "position", "cp_index",
)  # fmt: skip
#: An A/A step as stored (what :func:`kiana.stats.reruns.rerun_quality` reads).
AA_COLUMNS: tuple[str, ...] = (
    *SERIES_KEYS, *SERIES_LABELS, "from_version", "to_version", "from_session",
    "to_session", "from_origin", "to_origin", "from_observed_at", "to_observed_at",
    "from_n_runs", "to_n_runs", "log_ratio", "aa", "_pos",
)  # fmt: skip
#: The join of a step's later session with its point.
_TO = {"to_session": "session", "to_origin": "origin", "to_version": "version"}
POS = "_pos"


@dataclass(frozen=True)
class Unit:
    """The stored frames of one shard (module docstring); ``gpus``: per GPU its steps,
    how many of them its calibration rests on and their cut
    (:func:`kiana.stats.calfit.prefix_cut`), and its judged runs."""

    steps: pl.DataFrame
    findings: pl.DataFrame
    outliers: pl.DataFrame
    aa: pl.DataFrame
    points: pl.DataFrame
    segments: pl.DataFrame
    changepoints: pl.DataFrame
    calibration: pl.DataFrame
    gpus: pl.DataFrame
    #: The workloads joined to a later form (:func:`kiana.stats.renames.find`).
    renames: pl.DataFrame


def stage_of(runs: pl.DataFrame, options: JudgeOptions, code_changes: CodeChanges | None) -> _Stage:
    """The judge's first stage of ``runs`` (its session points and steps)."""
    from kiana.stats import _stage

    return _stage(runs, options, code_changes)


def judge_unit(
    runs: pl.DataFrame,
    options: JudgeOptions,
    code_changes: CodeChanges | None = None,
    calibration: Calibration | None = None,
) -> tuple[Judgement, Unit]:
    """Judge ``runs`` (every run of some GPUs, or a region of them with their stored
    ``calibration``) and give the stored frames (module docstring).  Change points are
    searched here from scratch; :mod:`kiana.shards.incremental` resumes them instead."""
    stage = stage_of(runs, options, code_changes)
    # Nothing after the stage reads the runs: a caller that passes them without keeping
    # them (the worker) holds none through the judge (0.08 GiB at 400k runs, issue 41).
    del runs
    judgement = judge_stage(
        stage, dataclasses.replace(options, changepoints=False), calibration=calibration,
        require_baseline=False,
    )  # fmt: skip
    cal = judgement.calibration
    points = point_frame(stage, cal, options)
    # What the unit reads of the stage, taken now: the stage's frames (the steps, every
    # point) are not held through the change-point search (issue 41).
    aa, gpus, renamed = aa_steps(stage, points), gpu_rows(stage), stage.renames
    del stage
    # Before the change-point search's series and states are made: the join's keys
    # beside them were the B200 worker's peak of clone-long-1m (issue 41).
    steps = with_pos(judgement.steps, points)
    values, noise, heads = cp_series(points)
    found: dict[int, creep.Found] = {}
    if options.changepoints:
        starts = [(s, 0) for s, v in enumerate(values) if v.size >= options.changepoint_min_points]
        found = creep.search(values, noise, starts, options)
    unit = Unit(
        steps=steps,
        findings=judgement.findings,
        outliers=outlier_rows(judgement.quality, points),
        aa=aa,
        points=points,
        segments=segments(heads, found),
        changepoints=changepoint_rows(heads, values, found),
        calibration=(cal or Calibration.empty()).frame,
        gpus=gpus,
        renames=renamed,
    )
    return judgement, unit


def point_frame(stage: _Stage, cal: Calibration | None, options: JudgeOptions) -> pl.DataFrame:
    """Every session point of the stage (conflicting ones too) with the noise the
    change-point search reads (``sigma``, as the judge computes it) and ``cp_index``
    (its index among its series' points with a level, null for the others)."""
    all_points: pl.DataFrame = stage.all_points
    judged: pl.DataFrame = stage.points
    if options.calibrate and cal is not None:
        noised = sigmas(judged, cal, options.separation)
    else:
        noised = judged.with_columns(pl.lit(0.0).alias("workload_sigma"))
    key = [*SERIES_KEYS, "version", "origin", "session_start"]
    sigma = (pl.col("measured").pow(2) + pl.col("workload_sigma").pow(2) / 2.0).sqrt()
    noise = noised.select(*key, sigma.alias("sigma"))
    if judged.height == all_points.height and not noise.select(key).is_duplicated().any():
        # No point conflicts (the judged points are every point, in order) and one point
        # per key: the join would give each point its own row's sigma.  Beside it the join
        # held 0.09 GiB more at the worker's peak (400k points, issue 41).
        frame = all_points.with_columns(noise["sigma"])
    else:
        frame = all_points.join(noise, on=key, how="left", nulls_equal=True, maintain_order="left")
    usable = ~pl.col("conflict") & pl.col("log_median").is_not_null()
    window = series_window(frame)  # the series' integer id where it has one
    frame = frame.with_columns(
        pl.when(usable).then(usable.cast(pl.Int64).cum_sum().over(window) - 1).alias("cp_index")
    )  # fmt: skip
    return frame.select(POINT_COLUMNS)


def cp_series(
    points: pl.DataFrame,
) -> tuple[list[np.ndarray], list[np.ndarray], list[creep.Series]]:
    """The change-point search's series of ``points`` (as
    :func:`kiana.stats.changepoints.changepoints` builds them): values, noise and
    each series' keys, labels and versions (``found`` left empty)."""
    read = [*SERIES_KEYS, *SERIES_LABELS, "is_subject", "version", "position", "log_median"]
    usable = (
        points.filter(pl.col("cp_index").is_not_null())
        .select(*read, "sigma")
        .sort(*SERIES_KEYS, "position")
    )
    if usable.height == 0:
        return [], [], []
    cuts = (
        np.flatnonzero(
            np.diff(usable.select(pl.struct(SERIES_KEYS).rle_id()).to_series().to_numpy())
        )
        + 1
    )
    values = np.split(usable["log_median"].to_numpy().astype(np.float64), cuts)
    noise = np.split(usable["sigma"].fill_null(np.nan).to_numpy().astype(np.float64), cuts)
    # One str object per label, not per point (400k points, 514 labels: issue 41).
    labels_of: dict[str, str] = {}
    versions = [labels_of.setdefault(v, v) for v in usable["version"].to_list()]
    labels = usable.select(*SERIES_KEYS, *SERIES_LABELS, "is_subject")
    starts = [0, *cuts.tolist()]
    heads = [
        creep.Series(labels.row(first, named=True), versions[first : first + v.size], v,
                     creep.Found([], []))
        for first, v in zip(starts, values, strict=True)
    ]  # fmt: skip
    return values, noise, heads


def changepoint_rows(
    heads: list[creep.Series], values: list[np.ndarray], found: dict[int, creep.Found]
) -> pl.DataFrame:
    """The change-point rows of the series searched, with their verdicts."""
    series = [
        dataclasses.replace(heads[s], found=found[s]) for s in sorted(found) if found[s].points
    ]
    return creep.verdicts(creep.rows(series))


#: The stored right chain of a series (``judged_segments``).
SEGMENT_SCHEMA: dict[str, pl.DataType] = {
    **{k: pl.String() for k in SERIES_KEYS}, "gpu": pl.String(), "kernel": pl.String(),
    "link": pl.Int64(), "start": pl.Int64(), "split": pl.Int64(), "p": pl.Float64(),
    "diag": pl.Binary(), "last": pl.Binary(), "rows": pl.Binary(),
}  # fmt: skip


def _bytes(array: np.ndarray | None) -> bytes | None:
    return None if array is None else np.ascontiguousarray(array, dtype=np.float64).tobytes()


def segments(heads: list[creep.Series], found: dict[int, creep.Found]) -> pl.DataFrame:
    """Every link of every series' right chain, its state as float64 bytes."""
    out = [
        {**{k: heads[s].head[k] for k in (*SERIES_KEYS, "gpu", "kernel")}, "link": n,
         "start": link.start, "split": link.split, "p": link.p, "diag": _bytes(link.diag),
         "last": _bytes(link.last), "rows": _bytes(link.rows)}
        for s in sorted(found) for n, link in enumerate(found[s].chain)
    ]  # fmt: skip
    return pl.DataFrame(out, schema=SEGMENT_SCHEMA) if out else pl.DataFrame(schema=SEGMENT_SCHEMA)


def with_pos(frame: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (steps) with :data:`POS`: the position of its later session's point."""
    # No rows (the A/A steps of most shards): the join against no point, the same frame.
    at = (points if frame.height else points.clear()).select(
        *SERIES_KEYS, *_TO.values(), pl.col("position").alias(POS)
    )
    right = at.rename({v: k for k, v in _TO.items()})
    on = [*SERIES_KEYS, *_TO]
    # The keys joined alone and the position put beside the frame's own columns: the
    # join of the whole frame copied every column of the judged steps (0.22 GiB at the
    # B200 of clone-long-1m, issue 41).  Where a key has several points the join gives
    # a step several rows: then the whole frame is joined, as it was.
    pos = frame.select(on).join(right, on=on, how="left", nulls_equal=True, maintain_order="left")
    if pos.height == frame.height:
        return frame.with_columns(pos.get_column(POS))
    return frame.join(right, on=on, how="left", nulls_equal=True, maintain_order="left")


def outlier_rows(quality: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """The judge's ``outlier`` quality rows with :data:`POS` (their session's point), and
    its ``unstable`` rows (of a whole series: :data:`POS` null, read back last of it)."""
    rows = quality.filter(pl.col("kind").is_in(["outlier", UNSTABLE]))
    at = points.select(*SERIES_KEYS, "version", "session", pl.col("position").alias(POS))
    at = at.unique([*SERIES_KEYS, "version", "session"], keep="first", maintain_order=True)
    on = [*SERIES_KEYS, "version", "session"]
    return rows.join(at, on=on, how="left", maintain_order="left")


def aa_steps(stage: _Stage, points: pl.DataFrame) -> pl.DataFrame:
    """The stage's A/A steps (left out of the judge's steps), with :data:`POS`."""
    steps: pl.DataFrame = stage.steps
    return with_pos(steps.filter(pl.col("aa")), points).select(AA_COLUMNS)


def gpu_rows(stage: _Stage) -> pl.DataFrame:
    """Per GPU: its steps, the share its calibration rests on and their cut, its
    judged runs (the stage's counts)."""
    steps: pl.DataFrame = stage.steps
    judged = stage.gpu_runs
    timed = steps.select("gpu", step_time().alias("_t"))
    rows = []
    for gpu in sorted(judged):
        n, size, cut = prefix_cut(timed.filter(pl.col("gpu") == gpu)["_t"])
        rows.append(
            {"gpu": gpu, "steps": n, "prefix": size, "cut": cut, "runs_judged": judged[gpu]}
        )
    return pl.DataFrame(rows, schema=GPU_SCHEMA) if rows else pl.DataFrame(schema=GPU_SCHEMA)


#: :attr:`Unit.gpus`.
GPU_SCHEMA: dict[str, pl.DataType] = {
    "gpu": pl.String(), "steps": pl.Int64(), "prefix": pl.Int64(),
    "cut": pl.Datetime("us"), "runs_judged": pl.Int64(),
}  # fmt: skip


def query(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None
) -> pl.DataFrame:
    """The rows of ``sql`` (with ``params``) as a polars frame."""
    frame: pl.DataFrame = con.sql(sql, params=params).pl()
    return frame
