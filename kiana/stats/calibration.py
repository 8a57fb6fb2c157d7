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
  ratio of a baseline's sweep (the machine's move and the provider's own offset;
  environment shifts and the baselines' own code changes are the two-groups model's
  alternative), the mean difference of two baselines of one step over their common
  workloads, and A/A pairs (two sessions of the same code, :mod:`kiana.stats.reruns`:
  pure noise, never a change); all ``c = 1``.  It holds both parts of a sitting's
  offset: the *common* part every provider of the sitting shares (the machine moved)
  and each provider's *own* part.  Raw and drift verdicts carry it whole.  Liger's own
  steps never enter it: they hold the changes being judged.  Steps whose baseline code
  changed (:mod:`kiana.stats.codechanges`) are left out.
* the **contrast** component, the provider's own part alone, from contrasts within a
  sitting: the mean over common workloads of the difference of two providers' log
  ratios of one step (two baselines, or any two providers of an A/A pair), ``c = 2``
  (two providers' own offsets; the common part cancels exactly, whatever the machine
  did: a difference-in-differences contrast, as in the within-block contrasts of a
  randomized block design, Cochran & Cox 1957, "Experimental Designs", ch. 3; the
  variance components of Searle, Casella & McCulloch 1992, "Variance Components",
  ch. 3).  A control-adjusted change (Liger minus its control) carries one contrast
  term per provider (:mod:`kiana.stats.controls`), never the common part: a machine
  that moves often or a lot widens raw standard errors, not adjusted ones
  (``tests/stats/test_contrast.py``: a GPU whose machine moves at a third of its steps
  and a calm one with the same provider noise get adjusted noise within a few percent
  of each other).  It assumes the code under test's own offsets scatter as its
  baselines' do.  A GPU with fewer than :data:`MIN_CONTRASTS` contrasts (none where
  no two providers share a sitting) falls back to the **local** component where it has
  :data:`MIN_CONTRASTS` samples, never above the sitting component: baseline and A/A
  sweep means less the median of the other providers' sweep means of the GPU's release
  step (:func:`kiana.stats.nullsamples.local_samples`: the machine's move removed, the
  kernel sitting's shared part kept, so conservative); else to the sitting component
  (conservative: it holds the common part too).  On the grid of noise models, six seeds
  (``bench/README.md``): ``drift 1/3, 20%`` >= 10% found 130 -> 137 of 157 (false 7 ->
  12 of 1239), ``corner: storm`` 104 -> 114, ``drift 1/3, 3%`` 134 -> 139 (false 12 ->
  16); Liger's CI history and ``../shared/liger`` unchanged.  A few contrasts come
  mostly from calm sittings and say little of the shifted ones: on the grid of noise
  models (``bench/README.md``) GPUs with 2-29 contrasts, fitted at 0.15-0.5% against a true 3% in shifted
  sittings, raised the false findings of 13 of 17 models, 71 -> 169 in all
  (``1 baseline``: 3 -> 20 of 560); on Liger's CI history the H200's 12 contrasts
  gave 0.16%, and geglu forward an improvement of -7.9% +- 0.4%.

Hierarchy: every estimate is per GPU and metric, never pooled across GPUs, so judging
one GPU alone gives the same answer (``judge`` shards by GPU).  Levels, each the prior
centre of the next (prior sd of ``ln s``: 1.0 at the top, 0.5 below):

    workload: prior -> (gpu, metric, sampling) -> + kernel -> + provider
    sitting:  prior -> (gpu, metric)           -> + kernel
    contrast: prior -> (gpu, metric)           -> + kernel   (the sitting's prior)
    local:    prior -> (gpu, metric)           -> + kernel   (the sitting's prior)

The tails (``nu``) and the share of real changes are fitted at the top level (with at
least 40 samples; else the prior tails of :data:`PRIOR_TAIL`) and inherited.  The prior (:data:`PRIOR`) is fitted on the baselines' sitting pairs of
Liger's CI history (0.21% per sitting, 0.12% per workload, a t scale; 2% per workload
between single samples; memory kept at 0.25%); it matters only where a GPU has little data.
That fit's tails are a t1 (with a fifth of the workload steps real changes); the prior tail
stays t3: with t1, every hand-made series of a few sessions is inconclusive, and a GPU
with 40 samples fits its own tails anyway (docs/CALIBRATION.md).
Scales live on the grid of :mod:`kiana.stats.nullfit` (5% apart); the grid's ends
(0.001% and 100%) are the only bounds, and a scale at the upper end is marked
``bounded`` and said in the evidence.

The sitting states' link exponent (:mod:`kiana.stats.states`) is chosen on a grid
whose top, 2, is a bound too: a finding whose sitting factor is above 1 on a GPU whose
exponent sits there says so in its evidence (``sitting_link_top``), as for a scale at
the grid's end.

Decisions use the *normal-equivalent* sigma, ``scale * equivalent_factor(nu)``: heavy
tails raise the noise at the tail the separation tests (:func:`sigmas`).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from kiana.stats.nullfit import MIN_TAIL_SAMPLES, equivalent_factor
from kiana.stats.nullsamples import sampling_expr
from kiana.stats.states import EXPONENTS

#: Prior centres of each component's scale, per metric and sampling (module docstring).
#: Latency's median-sampled workload and sitting centres are the fit of Liger's CI
#: history (``bench/calibrate.py --ci``, :mod:`kiana.generate.priors`: the baselines'
#: sitting pairs of the first two thirds of its measured commits, docs/CALIBRATION.md);
#: ``tests/generate/test_priors.py`` fits them again.
PRIOR: dict[tuple[str, str, str], float] = {
    ("latency", "workload", "median"): 0.0012,
    ("latency", "workload", "single"): 0.02,
    ("latency", "sitting", ""): 0.0021,
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
#: The top of the sitting link's grid (:func:`sigmas`' ``sitting_link_top``).
LINK_TOP = EXPONENTS[-1]
#: Components whose Student-t tails are fitted.  The sitting component is normal within
#: a sitting state: its heavy tails across sittings are the scale mixture of
#: :mod:`kiana.stats.states` (a t is itself a scale mixture of normals).
TAILED = ("workload",)

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
    "samples": pl.Int64(), "bounded": pl.Boolean(), "workload_factor": pl.Float64(),
    "sitting_factor": pl.Float64(), "weight": pl.Float64(), "exponent": pl.Float64(),
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


def prior_center(metric: pl.Expr, component: str, sampling: pl.Expr | None) -> pl.Expr:
    """The prior centre of :data:`PRIOR` for each row (latency's for other metrics); the
    ``contrast`` component (a provider's own part of the sitting offset) has the
    sitting's."""
    component = "sitting" if component in ("contrast", "local") else component
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


def attach_scales(steps: pl.DataFrame, calibration: Calibration, *, component: str) -> pl.DataFrame:
    """Add ``{component}_scale``, ``_tail``, ``_share``, ``_samples``, ``_level`` and
    ``_var`` (squared scale) from the finest calibrated cell of each row (the prior
    where there is none: level ``prior``, 0 samples).  Rows are steps (their sampling
    from ``noise_source``) or samples (a ``sampling`` column)."""
    levels = WORKLOAD_LEVELS if component == "workload" else SITTING_LEVELS
    if "sampling" in steps.columns:
        sampling_of = pl.col("sampling")
    elif "noise_source" in steps.columns:
        sampling_of = sampling_expr()
    else:
        sampling_of = pl.lit(None, pl.String)
    frame = steps.with_columns(sampling_of.alias("_sampling_key"))
    rows = calibration.frame.filter(pl.col("component") == component)
    fields = ("scale", "tail", "share", "samples")
    found: list[str] = []
    for level, keys in reversed(levels):
        table = rows.filter(pl.col("level") == level).select(
            *(pl.col(k).alias(f"_k_{k}") for k in keys),
            *(pl.col(c).alias(f"_{level}_{c}") for c in fields),
        )
        on = [f"_k_{k}" for k in keys]
        frame = (
            frame.with_columns(
                *(pl.col("_sampling_key" if k == "sampling" else k).alias(f"_k_{k}") for k in keys)
            )
            .join(table, on=on, how="left", maintain_order="left")
            .drop(on)
        )
        found.append(level)
    sampling = pl.col("_sampling_key") if component == "workload" else None
    prior_tail: pl.Expr = pl.lit(PRIOR_TAIL["latency"])
    for metric, value in PRIOR_TAIL.items():
        prior_tail = pl.when(pl.col("metric") == metric).then(pl.lit(value)).otherwise(prior_tail)
    if component not in TAILED:
        prior_tail = pl.lit(math.inf)

    def first(field: str, otherwise: pl.Expr) -> pl.Expr:
        chain: Any = pl.when(pl.col(f"_{found[0]}_scale").is_not_null()).then(
            pl.col(f"_{found[0]}_{field}")
        )
        for lv in found[1:]:
            chain = chain.when(pl.col(f"_{lv}_scale").is_not_null()).then(pl.col(f"_{lv}_{field}"))
        result: pl.Expr = chain.otherwise(otherwise)
        return result

    scale = first("scale", prior_center(pl.col("metric"), component, sampling))
    tail = first("tail", pl.when(prior_tail.is_infinite()).then(None).otherwise(prior_tail))
    matched = first("scale", pl.lit(None)).is_not_null()
    level_name = pl.coalesce(
        *(pl.when(pl.col(f"_{lv}_scale").is_not_null()).then(pl.lit(lv)) for lv in found),
        pl.lit("prior"),
    )
    helpers = [f"_{lv}_{c}" for lv in found for c in fields]
    return frame.with_columns(
        scale.alias(f"{component}_scale"),
        tail.cast(pl.Float64).alias(f"{component}_tail"),
        first("share", pl.lit(None, pl.Float64)).alias(f"{component}_share"),
        pl.when(matched).then(first("samples", pl.lit(0, pl.Int64))).otherwise(0).cast(pl.Int64).alias(f"{component}_samples"),
        level_name.alias(f"{component}_level"),
        scale.pow(2).alias(f"{component}_var"),
    ).drop(*helpers, "_sampling_key")  # fmt: skip


def sigmas(
    steps: pl.DataFrame, calibration: Calibration, separation: float,
    factors: pl.DataFrame | None = None,
) -> pl.DataFrame:  # fmt: skip
    """Both components of every step (:func:`attach_scales`), their sitting-state
    factors (``workload_factor``, ``sitting_factor``: the root of ``factors``' ``f2w``
    and ``f2s`` of the step's ``_group``, 1 without) and their normal-equivalent sigmas at
    ``separation`` (``workload_sigma``, ``sitting_sigma``), and ``sitting_link_top``:
    the sitting factor is above 1 while its GPU's link exponent sits at the top of
    :data:`kiana.stats.states.EXPONENTS` (the data may want offsets to grow faster
    than the grid allows: this sitting's noise may be larger, said in the evidence)."""
    frame = attach_scales(steps, calibration, component="workload")
    frame = attach_scales(frame, calibration, component="sitting")
    if factors is not None and "_group" in frame.columns:
        frame = frame.join(
            factors.select("_group", "f2w", "f2s", pl.col("exponent").alias("_b")),
            on="_group", how="left", maintain_order="left",
        )  # fmt: skip
        frame = (
            frame.with_columns(
                pl.col("f2w").fill_null(1.0).sqrt().alias("workload_factor"),
                pl.col("f2s").fill_null(1.0).sqrt().alias("sitting_factor"),
            )
            .with_columns(
                ((pl.col("_b") >= LINK_TOP) & (pl.col("sitting_factor") > 1.0))
                .fill_null(False)
                .alias("sitting_link_top")
            )
            .drop("f2w", "f2s", "_b")
        )
    else:
        frame = frame.with_columns(
            pl.lit(1.0).alias("workload_factor"), pl.lit(1.0).alias("sitting_factor"),
            pl.lit(False).alias("sitting_link_top"),
        )  # fmt: skip
    for component in ("workload", "sitting"):
        tails = frame[f"{component}_tail"].drop_nulls().unique().to_list()
        table = {float(t): equivalent_factor(float(t), separation) for t in tails}
        eq = pl.col(f"{component}_tail").replace_strict(table, default=1.0, return_dtype=pl.Float64)
        frame = frame.with_columns(
            (pl.col(f"{component}_scale") * eq * pl.col(f"{component}_factor")).alias(
                f"{component}_sigma"
            )
        )
    return with_contrast(frame, calibration)


#: Contrasts a GPU (and metric) needs before its provider-specific part replaces the
#: whole sitting component in adjusted noise: the bar a workload cell must pass to fit
#: its own tails (:data:`kiana.stats.nullfit.MIN_TAIL_SAMPLES`), reused for a scale that
#: must cover shifted sittings as well as the calm ones most contrasts come from.
MIN_CONTRASTS = MIN_TAIL_SAMPLES


def with_contrast(frame: pl.DataFrame, calibration: Calibration) -> pl.DataFrame:
    """``contrast_sigma``: a provider's own part of its sitting offset (the ``contrast``
    rows, times the sitting factor), the sigma a control-adjusted change carries per
    provider; where the GPU has fewer than :data:`MIN_CONTRASTS` contrasts (none where no
    two providers share a sitting), the ``local`` rows times the sitting factor, never
    above ``sitting_sigma``, where the GPU has :data:`MIN_CONTRASTS` local samples (the
    machine's move of each release step removed, :func:`kiana.stats.nullsamples.local_samples`);
    else the whole ``sitting_sigma`` (conservative: it holds the machine's move too).
    ``frame`` carries the columns of :func:`sigmas`."""
    frame = attach_scales(frame, calibration, component="contrast")
    frame = attach_scales(frame, calibration, component="local")
    for component in ("contrast", "local"):
        gpu_counts = calibration.frame.filter(
            pl.col("component") == component, pl.col("level") == "gpu"
        ).select("gpu", "metric", pl.col("samples").alias(f"_{component}_n"))
        frame = frame.join(gpu_counts, on=["gpu", "metric"], how="left", maintain_order="left")
    # A GPU cell of MIN_CONTRASTS or more: the finest cell found is never the prior then.
    known = pl.col("_contrast_n").fill_null(0) >= MIN_CONTRASTS
    local = pl.col("_local_n").fill_null(0) >= MIN_CONTRASTS
    return frame.with_columns(
        pl.when(known)
        .then(pl.col("contrast_scale") * pl.col("sitting_factor"))
        .when(local)
        .then(pl.min_horizontal(pl.col("local_scale") * pl.col("sitting_factor"), "sitting_sigma"))
        .otherwise(pl.col("sitting_sigma"))
        .alias("contrast_sigma")
    ).drop(
        *(f"contrast_{part}" for part in ("scale", "tail", "share", "level", "var")),
        *(f"local_{part}" for part in ("scale", "tail", "share", "level", "var", "samples")),
        "_contrast_n", "_local_n",
    )  # fmt: skip
