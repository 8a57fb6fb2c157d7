"""Polars aggregations behind the charts: from runs/steps/findings to small frames.

Each function returns at most a few hundred rows, so the charts stay far below
Altair's 5,000-row limit whatever the size of the corpus.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from typing import Any

import polars as pl

from kiana.errors import UsageError
from kiana.report.components import visible
from kiana.stats.sessions import SESSION_GAP
from kiana.stats.versions import version_table
from kiana.vocabulary import FINDING_KEYS, is_bridge, subject_expr

__all__ = [
    "chart_values",
    "charted_workload",
    "display_unit",
    "natural_order",
    "overview_frame",
    "point_order",
    "series_frame",
    "speedup_frame",
    "speedup_rows",
    "speedup_summary",
    "step_of",
    "step_points",
    "sweep_frame",
    "version_order",
    "visible",
    "worst_step",
]

#: Keys a finding must carry; the session keys of FINDING_KEYS are matched when both the
#: finding and the frame have them (judgements made before sessions have neither).
_SESSION_KEYS = ("from_session", "to_session")
_REQUIRED_KEYS = tuple(k for k in FINDING_KEYS if k not in _SESSION_KEYS)


def _passed(runs: pl.DataFrame, metric: str) -> pl.DataFrame:
    return runs.filter(
        (pl.col("status") == "passed")
        & (pl.col("metric") == metric)
        & pl.col("median").is_not_null()
    )


def series_frame(
    runs: pl.DataFrame,
    *,
    partition_id: str | None = None,
    metric: str = "latency",
    gap: timedelta = SESSION_GAP,
) -> pl.DataFrame:
    """Per provider and *session* of one partition (sessions as the statistics find
    them, :func:`kiana.stats.series.judgeable`, with the same ``gap``): median of the
    run medians, p20, p80, the number of runs, ``version``, ``session`` (id),
    ``version_rank``, ``point`` (the x position: session id, a space, the version;
    :func:`point_order` sorts them) and ``role`` (``subject`` | ``baseline``).  Two
    sessions under one label are two points.

    Sessions are found among the runs of the partition's kernel, pass and GPU (every
    workload of the sweep), exactly as the judgement finds them: pass every run, not
    one partition's."""
    from kiana.stats.series import judgeable

    data = _passed(runs, metric)
    if partition_id is None:
        ids = data["partition_id"].unique().to_list()
        if len(ids) > 1:
            raise UsageError(
                f"these runs span {len(ids)} partitions; a series chart shows one",
                hint="pass partition_id=... (see runs['partition_id'].unique())",
            )
        partition_id = str(ids[0]) if ids else None
    mine = data.filter(pl.col("partition_id") == partition_id)
    if mine.height:
        scope = mine.select("kernel", "pass", "gpu").row(0, named=True)
        data = data.filter(*(pl.col(k) == v for k, v in scope.items()))
    else:
        data = mine
    sessions = judgeable(data, gap).filter(pl.col("partition_id") == partition_id)
    ranks = version_table(sessions).select("version", "version_rank")
    subject = subject_expr().any().over("provider")
    return (
        sessions.with_columns(subject.alias("_subject"))
        .group_by("provider", "version", "session", "origin")
        .agg(
            pl.col("median").median().alias("median"),
            pl.col("p20").median().alias("p20"),
            pl.col("p80").median().alias("p80"),
            pl.len().alias("runs"),
            pl.col("session_start").min().alias("session_start"),
            pl.col("_subject").first(),
        )
        .join(ranks, on="version", how="left")
        .with_columns(
            pl.concat_str([pl.col("session"), pl.lit(" "), pl.col("version")]).alias("point"),
            pl.when("_subject").then(pl.lit("subject")).otherwise(pl.lit("baseline")).alias("role"),
        )
        .drop("_subject")
        .drop("origin")
        .sort("provider", "version_rank", "session_start", "point")
    )


def point_order(frame: pl.DataFrame) -> list[str]:
    """The ``point`` values of a :func:`series_frame` in (version, session time) order:
    the x axis of a series chart."""
    ordered = (
        frame.group_by("point")
        .agg(pl.col("version_rank").min(), pl.col("session_start").min())
        .sort("version_rank", "session_start", "point", nulls_last=True)
    )
    return [str(v) for v in ordered["point"].to_list()]


def version_order(frame: pl.DataFrame) -> list[str]:
    """The versions of a frame with ``version`` and ``version_rank``, in order."""
    ordered = frame.select("version", "version_rank").unique().sort("version_rank")
    return [str(v) for v in ordered["version"].to_list()]


def step_of(finding: Mapping[str, Any]) -> tuple[str, str]:
    """The two sessions a finding joins (its versions, for a finding without sessions):
    the ``step`` of a series chart."""
    if finding.get("from_session") and finding.get("to_session"):
        return str(finding["from_session"]), str(finding["to_session"])
    return str(finding["from_version"]), str(finding["to_version"])


def step_points(order: list[str], step: tuple[str, str]) -> tuple[str, str] | None:
    """The two points of ``order`` (:func:`point_order`) a step joins.  Each side is a
    session id (a finding's ``from_session`` and ``to_session``) or a version label: then
    the latest point of the first side that has a point of the second after it, and the
    first such point (``("0.8.0", "0.8.0")``: the last two sessions of 0.8.0).  None when
    a side matches no point.

    >>> order = ["2025-01-01T00:00:00Z 0.5.0", "2025-02-01T00:00:00Z 0.5.0",
    ...          "2025-03-01T00:00:00Z 0.6.0"]
    >>> step_points(order, ("0.5.0", "0.6.0"))[0][:10]
    '2025-02-01'
    >>> step_points(order, ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"))[1][:10]
    '2025-02-01'
    """
    keys = [point.split(" ", 1) for point in order]

    def positions(value: str) -> list[int]:
        exact = [i for i, (session, _) in enumerate(keys) if session == value]
        return exact or [i for i, (_, version) in enumerate(keys) if version == value]

    froms, tos = positions(step[0]), positions(step[1])
    for start in reversed(froms):
        later = [i for i in tos if i > start]
        if later:
            return order[start], order[later[0]]
    return None


def display_unit(metric: str, largest: Any) -> tuple[str, float]:
    """A readable unit for the values of a metric (latency is stored in ns)."""
    if metric != "latency":
        return "MB", 1.0
    top = float(largest) if isinstance(largest, int | float) else 0.0
    if top >= 1e6:
        return "ms", 1e6
    if top >= 1e3:
        return "µs", 1e3
    return "ns", 1.0


def _natural_key(text: str) -> list[tuple[int, int | str]]:
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text) if t]


def natural_order(values: Iterable[str]) -> list[str]:
    """``hidden512`` before ``hidden4096``: numbers inside names compare as numbers."""
    return sorted(set(values), key=_natural_key)


def _matches(frame: pl.DataFrame, finding: Mapping[str, Any]) -> pl.DataFrame:
    missing = [k for k in _REQUIRED_KEYS if k not in finding]
    if missing:
        raise UsageError(
            f"a finding needs the fields {', '.join(missing)}",
            hint="pass a row of judge(...).findings, e.g. findings.row(0, named=True)",
        )
    keys = [*_REQUIRED_KEYS, *(k for k in _SESSION_KEYS if k in finding and k in frame.columns)]
    cond = pl.lit(True)
    for key in keys:
        cond = cond & pl.col(key).eq_missing(finding[key])
    return frame.filter(cond)


def sweep_frame(steps: pl.DataFrame, finding: Mapping[str, Any]) -> pl.DataFrame:
    """The steps of one finding, one row per workload of the sweep."""
    wanted = [
        "workload", "partition_id", "change", "control_change", "adjusted_change",
        "control_provider", "verdict", "noise_source",
    ]  # fmt: skip
    data = _matches(steps, finding)
    return data.select([c for c in wanted if c in data.columns])


def charted_workload(
    runs: pl.DataFrame, steps: pl.DataFrame, finding: Mapping[str, Any]
) -> dict[str, Any]:
    """The workload whose series charts a finding (``workload``, ``partition_id``): its
    worst step's, or for a bridge (:mod:`kiana.stats.bridges`, no step of its own) the
    first workload that carries it."""
    if not is_bridge(finding):
        return worst_step(steps, finding)
    workload = str(finding.get("workloads") or "").split(", ")[0]
    found = runs.filter(
        *(pl.col(c) == finding[c] for c in ("kernel", "pass", "gpu")),
        pl.col("workload") == workload,
    )["partition_id"]
    if found.len() == 0:
        raise UsageError(
            "no runs of the finding's first workload", hint="pass the runs it was judged on"
        )
    return {"workload": workload, "partition_id": str(found[0])}


def worst_step(steps: pl.DataFrame, finding: Mapping[str, Any]) -> dict[str, Any]:
    """The step of a finding that moved most in the finding's direction."""
    data = _matches(steps, finding).filter(pl.col("change").is_not_null())
    if data.height == 0:
        data = _matches(steps, finding)
    if data.height == 0:
        raise UsageError("no steps match this finding", hint="use the steps of the same judge()")
    verdict = finding.get("verdict")
    if verdict == "improvement":
        key = pl.col("change")
    elif verdict == "regression":
        key = -pl.col("change")
    else:
        key = -pl.col("change").abs()
    return data.sort(key, "workload", nulls_last=True).row(0, named=True)


def speedup_frame(
    runs: pl.DataFrame, *, version: str | None = None, ranks: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per partition, provider under test and same-run baseline: the speedup (baseline
    median / its median) at the newest version where both were measured (or ``version``).
    ``ranks``: the version table that orders them (default: of ``runs``' own passed
    latency runs; a shard of the runs passes every shard's, :mod:`kiana.report.totals`)."""
    data = _passed(runs, "latency").filter(pl.col("median") > 0)
    keys = ["partition_id", "harness", "kernel", "pass", "gpu", "workload", "version"]
    per = data.group_by([*keys, "provider"]).agg(
        pl.col("median").median(), subject_expr().any().alias("_subject")
    )
    subject = per.filter("_subject").drop("_subject")
    base = (
        per.filter(~pl.col("_subject"))
        .drop("_subject")
        .rename({"provider": "baseline", "median": "baseline_median"})
    )
    if version is not None:
        subject = subject.filter(pl.col("version") == version)
    pairs = subject.join(base, on=keys, how="inner").with_columns(
        (pl.col("baseline_median") / pl.col("median")).alias("speedup")
    )
    ranks = (version_table(data) if ranks is None else ranks).select("version", "version_rank")
    pairs = pairs.join(ranks, on="version", how="left")
    newest = pl.col("version_rank") == pl.col("version_rank").max().over("partition_id", "provider")
    return pairs.filter(newest).sort("kernel", "pass", "gpu", "provider", "baseline", "workload")


def speedup_summary(pairs: pl.DataFrame) -> pl.DataFrame:
    """The speedups of :func:`speedup_frame` over the workloads of each kernel, pass, GPU,
    provider under test and baseline: geometric mean, the slowest and the fastest
    workload, how many workloads are below 1×.  ``row`` (``kernel · pass · GPU``) is the
    speedup map's row: only kernels, passes and GPUs where one under test and a baseline were
    measured together have one; ``pair`` (``liger vs torch``) is one mark of it, the
    ``slot``-th of its row's ``slots`` (in provider, baseline order)."""
    keys = ["kernel", "pass", "gpu", "provider", "baseline"]
    out = (
        pairs.group_by(keys)
        .agg(
            pl.col("speedup").log().mean().exp().alias("geomean"),
            pl.col("speedup").min().alias("worst"),
            pl.col("speedup").max().alias("best"),
            (pl.col("speedup") < 1).sum().alias("below_1x"),
            pl.len().alias("workloads"),
            pl.col("version").sort_by("version_rank").last().alias("version"),
            pl.col("harness").first(),
        )
        .sort(keys)
    )
    row = ["kernel", "pass", "gpu"]
    return out.with_columns(
        pl.concat_str([pl.col(k) for k in row], separator=" · ").alias("row"),
        pl.concat_str([pl.col("provider"), pl.lit(" vs "), pl.col("baseline")]).alias("pair"),
        pl.int_range(pl.len(), dtype=pl.Int64).over(row).alias("slot"),
        pl.len().over(row).cast(pl.Int64).alias("slots"),
    )


def speedup_rows(summary: pl.DataFrame) -> list[str]:
    """The rows of a :func:`speedup_summary` in (kernel, pass, GPU) order, numbers inside
    names compared as numbers: the speedup map's y axis, exactly the rows with data."""
    found = summary.select("kernel", "pass", "gpu", "row").unique()
    ordered = sorted(
        found.iter_rows(),
        key=lambda r: (_natural_key(r[0]), _natural_key(r[1]), _natural_key(r[2])),
    )
    return [str(r[3]) for r in ordered]


def overview_frame(frame: pl.DataFrame, *, value: str = "change") -> pl.DataFrame:
    """Per kernel, pass, provider and GPU, the row of ``frame`` (findings or steps) whose
    ``value`` moved most; with a ``row`` label and a ``+12%`` cell label."""
    if value not in frame.columns:  # a frame made before findings carried their change
        value = next((c for c in ("change", "median_change") if c in frame.columns), value)
    if value not in frame.columns:
        raise UsageError(
            f"this frame has no {value!r} column",
            hint="pass findings or steps (both have change: the finding's or step's estimate)",
        )
    keys = ["kernel", "pass", "provider", "gpu"]
    data = (
        frame.filter(pl.col(value).is_not_null())
        .sort(pl.col(value).abs(), descending=True)
        .group_by(keys, maintain_order=True)
        .first()
        .sort(keys)
    )
    return data.select(
        *keys,
        pl.col(value).alias("change"),
        pl.col("verdict"),
        pl.concat_str(
            [pl.col("kernel"), pl.col("pass"), pl.col("provider")], separator=" · "
        ).alias("row"),
        pl.when(pl.col(value) >= 0)
        .then(pl.format("+{}%", (pl.col(value) * 100).round(1)))
        .otherwise(pl.format("{}%", (pl.col(value) * 100).round(1)))
        .alias("label"),
    )


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def chart_values(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts for a chart's inline data: NaN/inf as null, times as ISO
    strings.  (Strings are made visible in the whole spec by ``charts.to_spec``.)"""
    return [{k: _clean(v) for k, v in row.items()} for row in frame.iter_rows(named=True)]
