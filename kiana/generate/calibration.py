"""What real benchmark noise looks like, measured the same way on real and generated runs.

:func:`measure` reads runs (the columns of :func:`kiana.load.judged.judged_runs`:
kernel, pass, gpu, provider, workload, metric, version, role, observed_at, median,
p20, p80, origin) and returns a :class:`Calibration`: the numbers
``kiana generate --noise realistic`` is calibrated to (``docs/CALIBRATION.md``,
``bench/calibrate.py`` prints them for ``../shared/liger``), and the numbers its
reproduction test compares a generated corpus with.  It uses no model of noise at
all, only the runs' own medians and quantiles, so it can check a generator against
real data without agreeing with kiana's statistics by construction.

Definitions:

* a *sitting* is the runs of one kernel, pass, GPU, metric, version label and origin
  (file at commit) with no gap over two hours (the rule of :mod:`kiana.stats.sessions`);
* a *point* is one provider's median on one workload in one sitting (the median of
  its runs there); a *step* is two consecutive points of one series (kernel, pass,
  GPU, provider, workload) in time order, its change ``ln(to / from)``;
* a step's *offset* is the median change of every workload of its provider and
  sitting pair (at least three workloads), the part a whole sweep shares; its
  *residual* is the change minus that offset, the per-workload part;
* *spread* is a run's relative p20-p80 spread ``(p80 - p20) / median``; a *single
  sample* is a run with p20 = median = p80 (``do_bench`` took one timing);
* a *repeat* is a second measurement of one workload within one sitting: in Liger's
  CSVs a sweep point that two sweeps share (the importer names them
  ``<workload>-sweep-<parameter>``), in generated corpora a replicate round;
* *baselines* are the providers of role ``baseline`` (the Liger profile's rule,
  :mod:`kiana.harness`: every provider but ``liger`` and ``liger_*``).

Scales are robust: ``robust_sd`` is 1.4826 times the median absolute deviation from
the median (the sd of a normal), ``p90`` the 90th percentile of absolute values, both
of log changes (``0.01`` ~ 1%).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from kiana.vocabulary import subject_expr

if TYPE_CHECKING:
    from kiana.documents import RunSpec
    from kiana.generate.config import CorpusConfig

#: A gap longer than this between two runs of one scope starts a new sitting.
SITTING_GAP = timedelta(hours=2)
#: Latency bins (upper bounds, milliseconds) for spread and single samples.
LATENCY_BINS_MS: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0, 5.0, 50.0, 500.0)
_SCOPE = ["kernel", "pass", "gpu", "metric", "version", "origin"]
#: A series, with its provider's role (one per provider: it rides along for the baselines' split).
_SERIES = ["kernel", "pass", "gpu", "provider", "role", "workload"]
MAD_TO_SD = 1.4826


@dataclass(frozen=True)
class Scale:
    """Size of a set of log changes: count, robust sd, median and 90th percentile of
    their absolute values (null where there are none)."""

    n: int
    robust_sd: float | None
    median_abs: float | None
    p90_abs: float | None

    def line(self) -> str:
        def pct(x: float | None) -> str:
            return "-" if x is None else f"{x:.2%}"

        return (
            f"n {self.n}, robust sd {pct(self.robust_sd)}, median |change| "
            f"{pct(self.median_abs)}, p90 |change| {pct(self.p90_abs)}"
        )


@dataclass(frozen=True)
class LatencyBin:
    """Runs of one latency bin: how many, the share of single samples, and the median
    spread of the others (null when every run is a single sample)."""

    upper_ms: float
    runs: int
    single_share: float
    median_spread: float | None


@dataclass(frozen=True)
class Calibration:
    """The numbers of the module docstring, for latency runs."""

    runs: int
    sittings: int
    #: Median relative p20-p80 spread of runs that report one (not single samples).
    median_spread: float | None
    bins: tuple[LatencyBin, ...]
    #: Steps of baselines (raw changes), their offsets (one per provider and sitting
    #: pair) and residuals; the same for Liger's providers (code changes included).
    baseline_steps: Scale
    baseline_offsets: Scale
    baseline_residuals: Scale
    liger_steps: Scale
    #: Share of baseline offsets beyond 2% (a shifted sitting).
    shifted_share: float | None
    #: Per baseline step with a spread on both sides: |change| / mean spread.
    change_to_spread_median: float | None
    change_to_spread_p90: float | None
    #: Repeats within one sitting: baselines and Liger.
    repeats_baseline: Scale
    repeats_liger: Scale
    #: Baseline steps per GPU label.
    baseline_steps_by_gpu: tuple[tuple[str, Scale], ...]


def scale(values: pl.Series) -> Scale:
    """The :class:`Scale` of ``values`` (log changes; nulls and NaNs dropped)."""
    clean = values.drop_nulls().drop_nans()
    if clean.len() == 0:
        return Scale(0, None, None, None)
    mad = _float((clean - clean.median()).abs().median())
    absolute = clean.abs()
    return Scale(
        clean.len(),
        None if mad is None else mad * MAD_TO_SD,
        _float(absolute.median()),
        _float(absolute.quantile(0.9, "linear")),
    )


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def sittings(runs: pl.DataFrame, gap: timedelta = SITTING_GAP) -> pl.DataFrame:
    """``runs`` with ``sitting`` (the time of the sitting's first run, a datetime)."""
    frame = runs if "origin" in runs.columns else runs.with_columns(origin=pl.lit(None))
    frame = frame.sort([*_SCOPE, "observed_at"], nulls_last=True)
    new = (pl.col("observed_at").diff().over(_SCOPE) > pl.lit(gap)).fill_null(True)
    number = new.cum_sum().over(_SCOPE)
    return frame.with_columns(pl.col("observed_at").min().over([*_SCOPE, number]).alias("sitting"))


def steps(runs: pl.DataFrame) -> pl.DataFrame:
    """Consecutive points of each series (module docstring): the series keys, ``origin``
    of both ends, ``change`` (log), ``offset``, ``residual`` and both spreads."""
    latency = sittings(runs.filter(pl.col("metric") == "latency"))
    spread = (pl.col("p80") - pl.col("p20")) / pl.col("median")
    points = (
        latency.group_by([*_SERIES, "sitting", "origin"])
        .agg(pl.col("median").median(), spread.median().alias("spread"))
        .sort([*_SERIES, "sitting"])
    )
    before = [pl.col(c).shift(1).over(_SERIES).alias(f"from_{c}") for c in
              ("sitting", "median", "spread")]  # fmt: skip
    moved = points.with_columns(before).filter(pl.col("from_median").is_not_null())
    moved = moved.with_columns((pl.col("median") / pl.col("from_median")).log().alias("change"))
    sweep = ["kernel", "pass", "gpu", "provider", "from_sitting", "sitting"]
    offset = pl.when(pl.len().over(sweep) >= 3).then(pl.col("change").median().over(sweep))
    return moved.with_columns(offset.alias("offset")).with_columns(
        (pl.col("change") - pl.col("offset")).alias("residual")
    )


def repeats(runs: pl.DataFrame) -> pl.DataFrame:
    """Second measurements of one workload within a sitting: ``change`` (log) of each
    run against the first of its workload (shared sweep points or replicates)."""
    latency = sittings(runs.filter(pl.col("metric") == "latency"))
    latency = latency.with_columns(pl.col("workload").str.replace(r"-sweep-.*$", "").alias("_w"))
    keys = ["kernel", "pass", "gpu", "provider", "_w", "sitting", "origin"]
    ordered = latency.sort([*keys, "observed_at", "workload"], nulls_last=True)
    first = pl.col("median").first().over(keys)
    return (
        ordered.with_columns((pl.col("median") / first).log().alias("change"),
                             pl.int_range(pl.len()).over(keys).alias("_i"))
        .filter(pl.col("_i") > 0)
        .select(*_SERIES, "sitting", "change")
    )  # fmt: skip


#: The columns :func:`measure` reads.
RUN_COLUMNS: tuple[str, ...] = (
    "kernel", "pass", "gpu", "provider", "workload", "metric", "version", "role",
    "observed_at", "median", "p20", "p80", "origin",
)  # fmt: skip


def frame_of(specs: Iterable[RunSpec]) -> pl.DataFrame:
    """Generated runs (:meth:`kiana.generate.Corpus.specs`) as the frame :func:`measure`
    reads, without a database (``origin`` is the run's ``liger_csv`` label)."""
    rows = [
        (s.kernel, s.pass_, s.gpu.label, s.provider, s.workload, s.metric, s.version,
         s.harness.role(s.provider, s.labels), s.observed_at, s.median, s.p20, s.p80,
         s.labels.get("liger_csv"))
        for s in specs
    ]  # fmt: skip
    schema: dict[str, Any] = {c: pl.String for c in RUN_COLUMNS}
    schema.update(observed_at=pl.Datetime("us"), median=pl.Float64, p20=pl.Float64,
                  p80=pl.Float64)  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")


def measure_generated(
    config: CorpusConfig, seeds: Iterable[int], step_min_ms: float = 0.3
) -> Calibration:
    """One :class:`Calibration` over the corpora of ``config`` with each of ``seeds``
    (the kernels of each corpus keep series of their own)."""
    from dataclasses import replace

    from kiana.generate.corpus import generate

    frames = [
        frame_of(generate(replace(config, seed=seed)).specs()).with_columns(
            pl.col("kernel") + f"@{seed}"
        )
        for seed in seeds
    ]
    return measure(pl.concat(frames), step_min_ms=step_min_ms)


def _bins(latency: pl.DataFrame) -> tuple[LatencyBin, ...]:
    ms = pl.col("median") / 1e6
    single = (pl.col("p20") == pl.col("median")) & (pl.col("p80") == pl.col("median"))
    spread = (pl.col("p80") - pl.col("p20")) / pl.col("median")
    out: list[LatencyBin] = []
    lower = 0.0
    for upper in (*LATENCY_BINS_MS, math.inf):
        part = latency.filter(ms > lower, ms <= upper)
        lower = upper
        if part.height == 0:
            continue
        spread_of = part.filter(~single).select(spread.median()).item()
        share = float(part.select(single.mean()).item())
        out.append(LatencyBin(upper, part.height, share, _float(spread_of)))
    return tuple(out)


def measure(runs: pl.DataFrame, step_min_ms: float = 0.0) -> Calibration:
    """The :class:`Calibration` of ``runs`` (see the module docstring); steps and
    repeats only of workloads whose median is at least ``step_min_ms`` on both sides
    (Liger's CSVs hold steps of 0.3-50 ms kernels only: compare like with like)."""
    latency = runs.filter(pl.col("metric") == "latency", pl.col("median") > 0)
    single = (pl.col("p20") == pl.col("median")) & (pl.col("p80") == pl.col("median"))
    spread = ((pl.col("p80") - pl.col("p20")) / pl.col("median")).alias("spread")
    median_spread = latency.filter(~single).select(spread.median()).item()
    floor = step_min_ms * 1e6
    moved = steps(latency).filter(pl.col("median") >= floor, pl.col("from_median") >= floor)
    base, liger = moved.filter(~subject_expr()), moved.filter(subject_expr())
    offsets = base.unique(["kernel", "pass", "gpu", "provider", "from_sitting", "sitting"])
    offsets = offsets.filter(pl.col("offset").is_not_null())
    shifted = offsets.select((pl.col("offset").abs() > 0.02).mean()).item()
    both = base.filter(pl.col("spread") > 0, pl.col("from_spread") > 0)
    ratio = both.select(
        (pl.col("change").abs() / ((pl.col("spread") + pl.col("from_spread")) / 2)).alias("r")
    )["r"]
    again = repeats(latency.filter(pl.col("median") >= floor))
    by_gpu = tuple(
        (str(gpu), scale(part["change"]))
        for (gpu,), part in sorted(base.group_by("gpu"), key=lambda item: str(item[0]))
    )
    return Calibration(
        runs=latency.height,
        sittings=sittings(latency).select(pl.struct(*_SCOPE, "sitting").n_unique()).item(),
        median_spread=_float(median_spread),
        bins=_bins(latency),
        baseline_steps=scale(base["change"]),
        baseline_offsets=scale(offsets["offset"]),
        baseline_residuals=scale(base["residual"]),
        liger_steps=scale(liger["change"]),
        shifted_share=_float(shifted),
        change_to_spread_median=_float(ratio.median()) if ratio.len() else None,
        change_to_spread_p90=_float(ratio.quantile(0.9, "linear")) if ratio.len() else None,
        repeats_baseline=scale(again.filter(~subject_expr())["change"]),
        repeats_liger=scale(again.filter(subject_expr())["change"]),
        baseline_steps_by_gpu=by_gpu,
    )


def report(calibration: Calibration) -> str:
    """The calibration as the lines ``bench/calibrate.py`` prints."""
    c = calibration

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.2%}"

    lines = [
        f"latency runs {c.runs}, sittings {c.sittings}",
        f"median p20-p80 spread (runs with a spread): {pct(c.median_spread)}",
        "by median latency: up to ms | runs | single samples | median spread",
    ]
    lines += [
        f"  {b.upper_ms:>6g} | {b.runs:>5} | {b.single_share:>6.1%} | {pct(b.median_spread)}"
        for b in c.bins
    ]
    lines += [
        f"baseline steps: {c.baseline_steps.line()}",
        f"  per-sitting offsets: {c.baseline_offsets.line()}; beyond 2%: {pct(c.shifted_share)}",
        f"  residuals beyond the offset: {c.baseline_residuals.line()}",
    ]
    r50, r90 = c.change_to_spread_median, c.change_to_spread_p90
    lines.append(
        "  |change| / spread: median "
        + ("-" if r50 is None else f"{r50:.1f}")
        + ", p90 "
        + ("-" if r90 is None else f"{r90:.1f}")
    )
    lines += [f"  on {gpu}: {s.line()}" for gpu, s in c.baseline_steps_by_gpu]
    lines += [
        f"liger steps (code changes included): {c.liger_steps.line()}",
        f"repeats within a sitting, baselines: {c.repeats_baseline.line()}",
        f"repeats within a sitting, liger: {c.repeats_liger.line()}",
    ]
    return "\n".join(lines)
