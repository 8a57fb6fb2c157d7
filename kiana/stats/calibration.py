"""Calibration: how much a step moves when nothing changed, measured on the data judged.

The p20-p80 spread of a run is the noise *inside* one session.  Real sittings of
unchanged code differ far more than that: in Liger's history, re-runs of one commit
differ by 3-7% per workload while their spreads say 0.5%, and one provider's whole
sitting is often off by a few percent.  So a step (two sessions of one provider and
workload, log ratio ``y``) is modelled as

    y = change + offset + e + measured noise

* ``offset``: what every workload of one provider's step shares (the sitting was
  off: clocks, placement, a warm or cold cache).  It does not average away over a
  sweep, so the pooled finding carries it (:mod:`kiana.stats.pooling`);
* ``e``: the session-to-session noise of one workload, beyond what its spread says;
* ``measured noise``: from the spreads and replicates (:mod:`kiana.stats.noise`).

Both unknown components are estimated from the data being judged, with the
heavy-tailed two-groups model of :mod:`kiana.stats.nullfit`:

* the **workload** component from the differences of consecutive workloads of one
  sweep (the offset and any sweep-wide change cancel), ``c = 2``; kept apart for
  single-sample steps (p20 = median = p80 on either side: one ``do_bench`` sample
  moves far more than a median of many);
* the **sitting** component from what cannot be a change of Liger: the mean log
  ratio of a baseline's sweep (the machine and its own offset: an upper bound on the
  offset, ``c = 1``; environment shifts and the baselines' own code changes are the
  two-groups model's alternative), the mean difference of two baselines of one step
  over their common workloads (the machine cancels, ``c = 2``), and A/A pairs (two
  sessions of the same code, :mod:`kiana.stats.reruns`: pure noise, ``c = 1``).
  Liger's own steps never enter it: they hold the changes being judged, and a
  provider's sitting offset is a property of the harness and the machine, which
  Liger shares with its baselines.  Steps whose baseline code changed
  (:mod:`kiana.stats.codechanges`) are left out.

Hierarchy: every estimate is per GPU and metric, never pooled across GPUs, so judging
one GPU alone gives the same answer (``judge`` shards by GPU).  Levels, each the prior
centre of the next (prior sd of ``ln s``: 1.0 at the top, 0.5 below):

    workload: prior -> (gpu, metric, sampling) -> + kernel -> + provider
    sitting:  prior -> (gpu, metric)           -> + kernel

The tails (``nu``) and the share of real changes are fitted at the top level (with at
least 40 samples; else the prior tails of :data:`PRIOR_TAIL`) and inherited.  The prior (:data:`PRIOR`) is the robust core of Liger's real baseline
steps (``../shared/liger``: about 0.5% per component; 2% per workload between single
samples; memory a quarter of latency); it matters only where a GPU has little data.
Scales live on the grid of :mod:`kiana.stats.nullfit` (5% apart); the grid's ends
(0.001% and 100%) are the only bounds, and a scale at the upper end is marked
``bounded`` and said in the evidence.

Decisions use the *normal-equivalent* sigma, ``scale * equivalent_factor(nu)``: heavy
tails raise the noise at the tail the separation tests (:func:`sigmas`).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from kiana.stats.nullfit import GRID, equivalent_factor, fit_cells

#: Prior centres of each component's scale, per metric and sampling (module docstring).
PRIOR: dict[tuple[str, str, str], float] = {
    ("latency", "workload", "median"): 0.005,
    ("latency", "workload", "single"): 0.02,
    ("latency", "sitting", ""): 0.005,
    ("memory", "workload", "median"): 0.0025,
    ("memory", "workload", "single"): 0.0025,
    ("memory", "sitting", ""): 0.0025,
}
#: Prior tails (Student-t degrees of freedom; ``inf``: normal) where a GPU has fewer
#: than :data:`kiana.stats.nullfit.MIN_TAIL_SAMPLES` samples: latency t3 (Liger's real
#: baseline steps: robust sd about 1%, yet a 90th percentile of 6-9% on A100 and B200),
#: memory normal (deterministic up to allocator rounding).
PRIOR_TAIL: dict[str, float] = {"latency": 3.0, "memory": math.inf}
TOP_SD = 1.0
CHILD_SD = 0.5

WORKLOAD_LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gpu", ("gpu", "metric", "sampling")),
    ("kernel", ("gpu", "metric", "sampling", "kernel")),
    ("provider", ("gpu", "metric", "sampling", "kernel", "provider")),
)
SITTING_LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gpu", ("gpu", "metric")),
    ("kernel", ("gpu", "metric", "kernel")),
)
KEY_COLUMNS = ("gpu", "metric", "sampling", "kernel", "provider")

#: The columns of :attr:`Calibration.frame`.
CALIBRATION_SCHEMA: dict[str, pl.DataType] = {
    "component": pl.String(), "level": pl.String(), "gpu": pl.String(), "metric": pl.String(),
    "sampling": pl.String(), "kernel": pl.String(), "provider": pl.String(),
    "scale": pl.Float64(), "tail": pl.Float64(), "share": pl.Float64(),
    "samples": pl.Int64(), "bounded": pl.Boolean(),
}  # fmt: skip


@dataclass(frozen=True)
class Calibration:
    """The calibrated noise components, one row per component and cell.

    ``frame`` columns: ``component`` (``workload`` | ``sitting``), ``level`` (``gpu`` |
    ``kernel`` | ``provider``), the keys ``gpu``, ``metric``, ``sampling`` (``median``
    | ``single``; null for sitting rows), ``kernel`` and ``provider`` (null above their
    level), ``scale`` (the Student-t scale of one step's component, log units),
    ``tail`` (its degrees of freedom, null = normal), ``share`` (the share of real
    changes among its samples), ``samples`` and ``bounded`` (the scale is at the
    grid's upper end).  Serialise with :meth:`to_json` / :meth:`from_json`."""

    frame: pl.DataFrame

    def to_json(self) -> str:
        return self.frame.write_json()

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        frame = pl.read_json(io.StringIO(text), schema=CALIBRATION_SCHEMA)
        return cls(frame)

    def for_gpus(self, gpus: list[str]) -> Calibration:
        """The rows of the given GPUs (every estimate is per GPU)."""
        return Calibration(self.frame.filter(pl.col("gpu").is_in(gpus)))

    @classmethod
    def empty(cls) -> Calibration:
        return cls(pl.DataFrame(schema=CALIBRATION_SCHEMA))


def sampling_expr() -> pl.Expr:
    """``single`` for a step with a one-sample side (noise source ``single``)."""
    return (
        pl.when(pl.col("noise_source") == "single")
        .then(pl.lit("single"))
        .otherwise(pl.lit("median"))
    )


def _prior(metric: pl.Expr, component: str, sampling: pl.Expr | None) -> pl.Expr:
    """The prior centre of :data:`PRIOR` for each row (latency's for other metrics)."""
    entries = [
        (m, samp, value)
        for (m, comp, samp), value in PRIOR.items()
        if comp == component and (samp == "") == (sampling is None)
    ]
    expr: pl.Expr = pl.lit(entries[0][2])
    for m, samp, value in entries:
        cond = metric == m if sampling is None else (metric == m) & (sampling == samp)
        expr = pl.when(cond).then(pl.lit(value)).otherwise(expr)
    return expr


def _fit(
    samples: pl.DataFrame, component: str, levels: tuple[tuple[str, tuple[str, ...]], ...]
) -> pl.DataFrame:
    """Fit every level of one component (module docstring); one row per cell."""
    out: list[pl.DataFrame] = []
    parent: pl.DataFrame | None = None
    parent_keys: tuple[str, ...] = ()
    if samples.height == 0:
        return pl.DataFrame(schema=CALIBRATION_SCHEMA)
    for depth, (level, keys) in enumerate(levels):
        cells = samples.group_by(keys).agg(pl.len().alias("samples")).sort(keys)
        cells = cells.with_row_index("_cell")
        if parent is None:
            sampling = pl.col("sampling") if "sampling" in keys else None
            prior_tail = pl.lit(PRIOR_TAIL["latency"])
            for metric, value in PRIOR_TAIL.items():
                prior_tail = pl.when(pl.col("metric") == metric).then(pl.lit(value)).otherwise(prior_tail)
            cells = cells.with_columns(
                _prior(pl.col("metric"), component, sampling).alias("_center"),
                pl.lit(TOP_SD).alias("_sd"),
                prior_tail.alias("tail"),
                pl.lit(None, pl.Float64).alias("share"),
            )
        else:
            up = parent.select(
                *parent_keys,
                pl.col("scale").alias("_center"),
                pl.col("tail"),
                pl.col("share"),
            )
            cells = cells.join(up, on=list(parent_keys), how="left").with_columns(
                pl.lit(CHILD_SD).alias("_sd")
            )
        indexed = samples.join(cells.select(*keys, "_cell"), on=list(keys), how="left")
        cell = indexed["_cell"].to_numpy().astype(np.int64)
        nu = cells["tail"].fill_null(math.inf).to_numpy().astype(np.float64)
        share = cells["share"].fill_null(0.0).to_numpy().astype(np.float64)
        scale, nu, share = fit_cells(
            cell, cells.height, indexed["x"].to_numpy(), indexed["q2"].to_numpy(),
            indexed["c"].to_numpy(), indexed["may_change"].to_numpy(),
            cells["_center"].to_numpy(), cells["_sd"].to_numpy(), tails=depth == 0,
            nu=nu, share=share,
        )  # fmt: skip
        fitted = cells.select(*keys, "samples").with_columns(
            pl.Series("scale", scale, dtype=pl.Float64),
            pl.Series("tail", np.where(np.isinf(nu), np.nan, nu), dtype=pl.Float64).fill_nan(None),
            pl.Series("share", share, dtype=pl.Float64),
        )
        out.append(fitted.with_columns(pl.lit(level).alias("level")))
        parent, parent_keys = fitted, keys
    frame = pl.concat(out, how="diagonal_relaxed")
    return frame.with_columns(
        pl.lit(component).alias("component"),
        (pl.col("scale") >= GRID[-1]).alias("bounded"),
    )


def workload_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Differences of consecutive workloads of one sweep (module docstring)."""
    sweep = ["kernel", "pass", "provider", "gpu", "metric", "from_session", "to_session"]
    usable = steps.filter(pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed"))
    ordered = usable.sort([*sweep, "workload"]).with_columns(
        (pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2)).alias("_q2"),
        sampling_expr().alias("_sampling"),
    )
    nxt = [
        pl.col(c).shift(-1).over(sweep).alias(f"_n{c}") for c in ("log_ratio", "_q2", "_sampling")
    ]
    paired = ordered.with_columns(nxt).filter(pl.col("_nlog_ratio").is_not_null())
    single = (pl.col("_sampling") == "single") | (pl.col("_n_sampling") == "single")
    return paired.select(
        "gpu", "metric",
        pl.when(single).then(pl.lit("single")).otherwise(pl.lit("median")).alias("sampling"),
        "kernel", "provider",
        (pl.col("log_ratio") - pl.col("_nlog_ratio")).alias("x"),
        (pl.col("_q2") + pl.col("_n_q2")).alias("q2"),
        pl.lit(2.0).alias("c"),
        pl.lit(True).alias("may_change"),
    )  # fmt: skip


def sitting_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """Baseline sweep means, baseline-pair differences and A/A sweep means (module
    docstring).  ``steps`` carry ``workload_var`` (the calibrated workload component,
    squared t scale)."""
    sitting = ["kernel", "pass", "gpu", "metric", "from_session", "to_session"]
    q2 = pl.col("from_measured").pow(2) + pl.col("to_measured").pow(2) + pl.col("workload_var")
    base = steps.filter(pl.col("log_ratio").is_not_null() & ~pl.col("benchmark_changed"))
    base = base.select(
        *sitting, "partition_id", "provider", "is_liger", "aa", "log_ratio", q2.alias("_q2")
    )
    baselines = base.filter(~pl.col("is_liger") & ~pl.col("aa"))
    pairs = baselines.join(baselines, on=[*sitting, "partition_id"], suffix="_b").filter(
        pl.col("provider") < pl.col("provider_b")
    )
    between = pairs.group_by(*sitting, "provider", "provider_b").agg(
        (pl.col("log_ratio") - pl.col("log_ratio_b")).mean().alias("x"),
        ((pl.col("_q2") + pl.col("_q2_b")).sum() / pl.len().pow(2)).alias("q2"),
    )

    def means(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.group_by(*sitting, "provider").agg(
            pl.col("log_ratio").mean().alias("x"),
            (pl.col("_q2").sum() / pl.len().pow(2)).alias("q2"),
        )

    columns = ["gpu", "metric", "kernel", "x", "q2", "c", "may_change"]
    parts = [
        (between, 2.0, True),
        (means(baselines), 1.0, True),
        (means(base.filter(pl.col("aa"))), 1.0, False),
    ]
    return pl.concat(
        [
            part.with_columns(pl.lit(c).alias("c"), pl.lit(change).alias("may_change")).select(columns)
            for part, c, change in parts
        ],
        how="vertical_relaxed",
    )


def fit(steps: pl.DataFrame) -> Calibration:
    """Calibrate both components on ``steps`` (the steps of :func:`kiana.stats.steps.
    pair_points` with ``aa`` and ``benchmark_changed`` marked)."""
    workload = _fit(workload_samples(steps), "workload", WORKLOAD_LEVELS)
    with_var = attach_scales(steps, Calibration(workload), component="workload")
    sitting = _fit(sitting_samples(with_var), "sitting", SITTING_LEVELS)
    frame = pl.concat([workload, sitting], how="diagonal_relaxed")
    return Calibration(frame.select(CALIBRATION_SCHEMA.keys()).cast(CALIBRATION_SCHEMA))  # type: ignore[arg-type]


def attach_scales(steps: pl.DataFrame, calibration: Calibration, *, component: str) -> pl.DataFrame:
    """Add ``{component}_scale``, ``_tail``, ``_samples``, ``_level`` and ``_var``
    (squared scale) from the finest calibrated cell of each step (the prior where
    there is none: level ``prior``, 0 samples)."""
    levels = WORKLOAD_LEVELS if component == "workload" else SITTING_LEVELS
    frame = steps.with_columns(sampling_expr().alias("_sampling_key"))
    rows = calibration.frame.filter(pl.col("component") == component)
    columns: list[str] = []
    for level, keys in reversed(levels):
        table = rows.filter(pl.col("level") == level).select(
            *(pl.col(k).alias(f"_k_{k}") for k in keys),
            *(pl.col(c).alias(f"_{level}_{c}") for c in ("scale", "tail", "samples")),
        )
        on = [f"_k_{k}" for k in keys]
        frame = (
            frame.with_columns(
                *(pl.col("_sampling_key" if k == "sampling" else k).alias(f"_k_{k}") for k in keys)
            )
            .join(table, on=on, how="left", maintain_order="left")
            .drop(on)
        )
        columns.append(level)
    sampling = pl.col("_sampling_key") if component == "workload" else None
    scale = pl.coalesce(
        *(pl.col(f"_{lv}_scale") for lv in columns), _prior(pl.col("metric"), component, sampling)
    )
    tail = pl.coalesce(*(pl.col(f"_{lv}_tail") for lv in columns))
    samples = pl.coalesce(*(pl.col(f"_{lv}_samples") for lv in columns), pl.lit(0, pl.Int64))
    level = pl.coalesce(
        *(pl.when(pl.col(f"_{lv}_scale").is_not_null()).then(pl.lit(lv)) for lv in columns),
        pl.lit("prior"),
    )
    helpers = [f"_{lv}_{c}" for lv in columns for c in ("scale", "tail", "samples")]
    return frame.with_columns(
        scale.alias(f"{component}_scale"),
        tail.alias(f"{component}_tail"),
        samples.cast(pl.Int64).alias(f"{component}_samples"),
        level.alias(f"{component}_level"),
        scale.pow(2).alias(f"{component}_var"),
    ).drop(*helpers, "_sampling_key")  # fmt: skip


def sigmas(steps: pl.DataFrame, calibration: Calibration, separation: float) -> pl.DataFrame:
    """Both components of every step (:func:`attach_scales`) and their normal-equivalent
    sigmas at ``separation`` (``workload_sigma``, ``sitting_sigma``)."""
    frame = attach_scales(steps, calibration, component="workload")
    frame = attach_scales(frame, calibration, component="sitting")
    for component in ("workload", "sitting"):
        tails = frame[f"{component}_tail"].drop_nulls().unique().to_list()
        factors = {float(t): equivalent_factor(float(t), separation) for t in tails}
        factor = pl.col(f"{component}_tail").replace_strict(
            factors, default=1.0, return_dtype=pl.Float64
        )
        frame = frame.with_columns(
            (pl.col(f"{component}_scale") * factor).alias(f"{component}_sigma")
        )
    return frame
