"""The model of latency and noise: series and their groups, true latency, what a run reports.

Nothing here is random by itself: the callers pass their seeded ``random.Random``.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kiana.generate.catalog import DTYPE_BYTES, PASS_COST, GpuSpec, KernelSpec, Pass

#: p80 - p20 of a normal distribution, in standard deviations.
SPREAD_SIGMAS = 1.683
#: CUDA event timings come in multiples of 32 ns and as float32 milliseconds.
TICK_NS = 32
_F32 = struct.Struct("<f")


@dataclass(frozen=True)
class Workload:
    slug: str
    params: dict[str, Any]
    elements: float
    dtype: str


@dataclass(frozen=True)
class Series:
    """One provider on one workload of a kernel, pass and GPU; ``spread`` is its
    typical relative p20-p80 spread."""

    provider: str
    workload: Workload
    base_ns: float
    spread: float
    memory_mb: float


Point = tuple[int, int]

#: A session id: the first run's time, UTC, whole seconds.
SESSION_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class Change:
    """A step in the true latency from session ``at`` on."""

    at: Point
    factor: float
    provider: str | None  # None: every provider (an environment shift)
    workload: str | None  # None: every workload


@dataclass(frozen=True)
class Round:
    """One pass over a session's sweep, all runs stamped ``at``: replicate 0 is the
    session's first, later replicates follow minutes apart; ``backend`` (a factor on
    the true latency) marks the ``liger`` runs of another implementation."""

    group: int
    version: int
    rerun: int
    replicate: int
    at: datetime
    backend: float | None = None


@dataclass
class Group:
    """One kernel, pass and GPU: the providers x workloads timed in one session."""

    kernel: KernelSpec
    pass_: Pass
    gpu: GpuSpec
    series: list[Series]
    changes: list[Change] = field(default_factory=list)
    #: The time of each session's first run, by point.
    sessions: dict[Point, datetime] = field(default_factory=dict)

    def factor(self, series: Series, point: Point) -> float:
        result = 1.0
        for change in self.changes:
            if (
                change.at <= point
                and change.provider in (None, series.provider)
                and change.workload in (None, series.workload.slug)
            ):
                result *= change.factor
        return result

    def previous(self, point: Point) -> Point:
        """The session before ``point`` in (version, time) order."""
        return max(p for p in self.sessions if p < point)

    def session_id(self, point: Point) -> str:
        return self.sessions[point].strftime(SESSION_FORMAT)

    def liger_spread(self, workload: str | None = None) -> float:
        return max(
            s.spread
            for s in self.series
            if s.provider == "liger" and workload in (None, s.workload.slug)
        )


def workloads(kernel: KernelSpec, sweep_size: int, dtypes: int) -> list[Workload]:
    """The sweep points of a kernel: x doubling from ``x_start``, one sweep per dtype.
    Slugs are the parameters in name order, then the dtype (``hidden4096-rows4096-fp32``)."""
    result: list[Workload] = []
    for dtype in kernel.dtypes[:dtypes]:
        for i in range(sweep_size):
            params: dict[str, Any] = dict(kernel.fixed)
            params[kernel.x_name] = kernel.x_start * 2**i
            slug = "-".join(f"{k}{params[k]}" for k in sorted(params)) + f"-{dtype}"
            params = {k: params[k] for k in sorted(params)}
            params["dtype"] = dtype
            elements = math.prod(float(params[k]) for k in kernel.elements)
            result.append(Workload(slug, params, elements, dtype))
    return result


def base_ns(kernel: KernelSpec, pass_: Pass, provider: str, gpu: GpuSpec, w: Workload) -> float:
    """The true latency of one provider on one workload, before personality and effects."""
    if kernel.bound == "memory":
        work = kernel.per_element * w.elements * DTYPE_BYTES[w.dtype] / gpu.bandwidth
    else:
        work = kernel.per_element * w.elements / gpu.flops * (4.0 if w.dtype == "fp32" else 1.0)
    cost = dict(kernel.baseline_cost).get(provider, 1.0)
    if provider != "liger" and pass_ != "forward":
        cost *= 1.15  # eager backward passes keep more intermediates
    launches = 1.0 if provider == "liger" else 1.3 if provider == "torch_compile" else 2.5
    return PASS_COST[pass_] * (gpu.launch_ns * launches + work * cost)


def memory_mb(kernel: KernelSpec, pass_: Pass, provider: str, w: Workload) -> float:
    """Peak memory of one provider on one workload, MB (deterministic)."""
    cost = dict(kernel.baseline_cost).get(provider, 1.0)
    mb = w.elements * DTYPE_BYTES[w.dtype] * kernel.memory_tensors
    mb *= (1 + 0.5 * (cost - 1)) * (1.0 if pass_ == "forward" else 1.5)
    return round(mb / 2**20 * 1024) / 1024


def plan_series(
    rng: random.Random, kernel: KernelSpec, pass_: Pass, gpu: GpuSpec,
    providers: tuple[str, ...], sweep: list[Workload],
    spread_of: Callable[[float], float] | None = None, spread_sigma: float = 0.3,
) -> list[Series]:  # fmt: skip
    """The series of one kernel, pass and GPU: each provider gets a personality factor
    (lognormal, sigma 8%) and a noisiness (lognormal, ``spread_sigma``, 0.3), each
    workload a small factor (3%).  ``spread_of`` gives a latency's typical spread
    (:func:`typical_spread` by default); the draws are the same whatever it is."""
    series: list[Series] = []
    spread_of = spread_of or typical_spread
    for provider in providers:
        personality = math.exp(rng.gauss(0, 0.08))
        draw = rng.gauss(0, 0.3)
        noisiness = math.exp(draw if spread_sigma == 0.3 else draw * spread_sigma / 0.3)
        for w in sweep:
            base = base_ns(kernel, pass_, provider, gpu, w)
            base *= personality * math.exp(rng.gauss(0, 0.03))
            spread = spread_of(base) * noisiness
            series.append(Series(provider, w, base, spread, memory_mb(kernel, pass_, provider, w)))
    return series


def typical_spread(latency_ns: float) -> float:
    """Typical relative p20-p80 spread of a do_bench run: ~2-3% for kernels of a few
    microseconds, ~1% at 200 us, ~0.3-0.4% for tens of milliseconds."""
    return 0.003 + 0.025 * math.sqrt(20_000 / (latency_ns + 20_000))


def loguniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def f32_ms(ns: float) -> float:
    """A latency as the harness reports it: 32 ns ticks, float32 milliseconds."""
    ticks = max(1, round(ns / TICK_NS))
    value: float = _F32.unpack(_F32.pack(ticks * TICK_NS / 1e6))[0]
    return value
