"""The corpus plan: configuration, series, sessions, injected effects and truth.

:func:`generate` draws everything that the ground truth depends on up front (series
and their noise levels, effects, outliers) with one ``random.Random(seed)`` in a fixed
order, and keeps it in a compact plan.  The per-run noise is drawn later, while
:meth:`Corpus.specs` streams, from one ``random.Random`` per benchmark session
seeded by ``(seed, session index)``: iterating twice gives the same runs, and a
corpus of a million runs is never held in memory.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from kiana.documents import Gpu, RunSpec
from kiana.errors import UsageError
from kiana.generate.catalog import (
    DTYPE_BYTES,
    GPUS,
    KERNELS,
    PASS_COST,
    RELEASES,
    GpuSpec,
    KernelSpec,
    Pass,
    liger_versions,
    release_dates,
    resolve_gpu,
)

if TYPE_CHECKING:
    import polars as pl

Effect = Literal["regression", "improvement", "drift", "outlier"]

#: Columns of :attr:`Corpus.truth`, in order (see docs/ARCHITECTURE.md).
TRUTH_COLUMNS: tuple[str, ...] = (
    "kernel", "pass", "provider", "gpu", "workload", "metric",
    "from_version", "to_version", "effect", "change", "note",
)  # fmt: skip

DEFAULT_KERNELS: tuple[str, ...] = (
    "cross_entropy", "fused_linear_cross_entropy", "rms_norm", "layer_norm", "swiglu", "rope",
)  # fmt: skip
DEFAULT_GPUS: tuple[str, ...] = (
    "nvidia-h100-80gb-hbm3", "nvidia-h100-pcie", "nvidia-a100-sxm4-80gb",
)  # fmt: skip
DEFAULT_VERSIONS: tuple[str, ...] = (
    "0.3.1", "0.4.0", "0.4.2", "0.5.2", "0.5.5", "0.5.9", "0.6.0", "0.6.2",
)  # fmt: skip

#: Seed of the bundled corpus (data/generated/), picked for a representative mix of effects.
SEED_BUNDLED = 108

#: p80 - p20 of a normal distribution, in standard deviations.
SPREAD_SIGMAS = 1.683
#: CUDA event timings come in multiples of 32 ns and as float32 milliseconds.
TICK_NS = 32
_F32 = struct.Struct("<f")


@dataclass(frozen=True)
class CorpusConfig:
    """Everything a corpus depends on; the same config always gives the same corpus.

    Rates are probabilities: ``regression_rate``/``improvement_rate`` per Liger series
    group (kernel, pass, provider) and version step; ``drift_rate`` per GPU and version
    step; ``replicate_rate`` per benchmark session (re-run ``replicates`` times in all);
    ``outlier_rate`` per run.  Effect sizes are drawn log-uniformly in
    [``min_change``, ``max_change``] and raised to at least ``min_noise_multiple`` times
    the typical relative p20-p80 spread of every series they touch.  ``session_noise``
    is the run-to-run noise of a median in units of the within-run sigma estimated from
    the spread; ``machine_noise`` the relative noise shared by one whole session.
    """

    seed: int = 0
    kernels: tuple[str, ...] = DEFAULT_KERNELS
    gpus: tuple[str, ...] = DEFAULT_GPUS
    versions: tuple[str, ...] = DEFAULT_VERSIONS
    #: A non-PEP-440 label (e.g. ``main``) benchmarked after the newest version.
    head_label: str | None = None
    #: Timed passes to keep (None: each kernel's own).
    passes: tuple[Pass, ...] | None = None
    #: Baseline providers to keep (None: each kernel's own); ``liger`` is always kept.
    providers: tuple[str, ...] | None = None
    sweep_size: int = 5
    #: Dtype variants per kernel, each its own sweep (1 = the kernel's main dtype).
    dtypes: int = 1
    replicate_rate: float = 0.05
    replicates: int = 3
    regression_rate: float = 0.03
    improvement_rate: float = 0.03
    min_change: float = 0.03
    max_change: float = 0.40
    min_noise_multiple: float = 2.0
    #: Share of Liger effects that hit one workload of the sweep instead of all.
    single_workload_share: float = 0.15
    #: Share of Liger effects that hit every GPU (a code change) instead of one.
    all_gpus_share: float = 0.5
    drift_rate: float = 0.04
    drift_changes: tuple[float, float] = (0.05, 0.20)
    #: Share of slow runs (median >= slow_ns) reported with p20 = median = p80.
    zero_spread_share: float = 0.7
    slow_ns: float = 50e6
    outlier_rate: float = 0.001
    session_noise: float = 0.5
    machine_noise: float = 0.002
    #: Also write memory rows (metric memory, MB), one per latency run.
    memory: bool = False
    #: Force at least one regression, improvement and drift when their rate is > 0.
    guarantee_effects: bool = True

    def __post_init__(self) -> None:
        problems: list[str] = []
        unknown = [k for k in self.kernels if k not in KERNELS]
        if unknown:
            problems.append(f"unknown kernels {unknown} (known: {sorted(KERNELS)})")
        slugs: set[str] = set()
        for key in self.gpus:
            try:
                slugs.add(resolve_gpu(key).gpu.slug)
            except KeyError:
                problems.append(f"unknown GPU {key!r} (known: {sorted(GPUS)})")
        if not self.kernels or not self.gpus or not self.versions:
            problems.append("kernels, gpus and versions must not be empty")
        if len(slugs) != len(self.gpus) and not any("unknown GPU" in p for p in problems):
            problems.append("gpus must be distinct")
        if len(set(self.versions)) != len(self.versions) or self.head_label in self.versions:
            problems.append("versions must be distinct")
        if not 1 <= self.sweep_size <= 12:
            problems.append("sweep_size must be within 1..12")
        if self.dtypes < 1 or self.replicates < 2:
            problems.append("dtypes must be >= 1 and replicates >= 2")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith(("_rate", "_share")) and not 0 <= value <= 1:
                problems.append(f"{f.name} must be within 0..1")
        low, high = self.drift_changes
        if not 0 < self.min_change <= self.max_change or not 0 < low <= high:
            problems.append("change ranges must be positive and ordered")
        if self.max_change >= 1 or high >= 1:
            problems.append("changes must be below 1 (an improvement of 100% is free code)")
        if problems:
            raise UsageError(
                "invalid corpus configuration: " + "; ".join(problems),
                hint="see kiana.generate.CorpusConfig for the accepted values",
            )

    @property
    def version_labels(self) -> tuple[str, ...]:
        return (*self.versions, self.head_label) if self.head_label else self.versions

    def estimated_runs(self) -> int:
        """Expected number of documents (exact but for replicates, drawn at random)."""
        per_gpu_version = 0
        for name in self.kernels:
            kernel = KERNELS[name]
            per_gpu_version += (
                len(_passes(kernel, self))
                * (1 + len(_baselines(kernel, self)))
                * self.sweep_size
                * min(self.dtypes, len(kernel.dtypes))
            )
        sessions = 1 + self.replicate_rate * (self.replicates - 1)
        total = per_gpu_version * len(self.gpus) * len(self.version_labels) * sessions
        return round(total * (2 if self.memory else 1))

    @classmethod
    def sized(cls, target_runs: int, *, seed: int = 0, **changes: Any) -> CorpusConfig:
        """A config of about ``target_runs`` documents (10k, 100k, 1M...): more kernels,
        GPUs, sweep points and dtype variants first, then more versions (synthetic
        releases past the newest real one when needed)."""
        if target_runs < 1:
            raise UsageError("target_runs must be >= 1")
        ladder: list[dict[str, Any]] = [
            {"kernels": DEFAULT_KERNELS, "gpus": DEFAULT_GPUS, "sweep_size": 5, "dtypes": 1},
            {"kernels": tuple(KERNELS), "gpus": DEFAULT_GPUS, "sweep_size": 6, "dtypes": 1},
            {"kernels": tuple(KERNELS), "gpus": _ALL_NVIDIA, "sweep_size": 8, "dtypes": 1},
            {"kernels": tuple(KERNELS), "gpus": _ALL_NVIDIA, "sweep_size": 8, "dtypes": 2},
            {"kernels": tuple(KERNELS), "gpus": _ALL_NVIDIA, "sweep_size": 10, "dtypes": 2},
        ]
        probe = cls(seed=seed, **changes)
        for level, step in enumerate(ladder):
            candidate = replace(probe, **step, versions=liger_versions(2))
            per_version = candidate.estimated_runs() / len(candidate.version_labels)
            count = round(target_runs / per_version)
            if level == 0 and count < 6:
                kernels = list(DEFAULT_KERNELS)
                while len(kernels) > 1 and count < 6:
                    kernels.pop()
                    candidate = replace(candidate, kernels=tuple(kernels))
                    per_version = candidate.estimated_runs() / len(candidate.version_labels)
                    count = round(target_runs / per_version)
            if count <= len(RELEASES) or level == len(ladder) - 1:
                return replace(candidate, versions=liger_versions(max(2, count)))
        raise AssertionError("unreachable")  # pragma: no cover

    @classmethod
    def bundled(cls) -> CorpusConfig:
        """The corpus bundled in ``data/generated/``."""
        return cls(
            seed=SEED_BUNDLED,
            kernels=("cross_entropy", "rms_norm", "layer_norm", "fused_linear_cpo_loss"),
            gpus=DEFAULT_GPUS,
            versions=("0.4.0", "0.4.2", "0.5.2", "0.5.5", "0.6.0", "0.6.2"),
            passes=("forward", "full"),
            sweep_size=4,
            replicate_rate=0.05,
            regression_rate=0.06,
            improvement_rate=0.05,
            drift_rate=0.06,
            outlier_rate=0.002,
        )


_ALL_NVIDIA: tuple[str, ...] = (
    "nvidia-h100-80gb-hbm3", "nvidia-h100-pcie", "nvidia-h100-nvl",
    "nvidia-a100-sxm4-80gb", "nvidia-a100-sxm4-40gb", "nvidia-a10g",
)  # fmt: skip


def _passes(kernel: KernelSpec, config: CorpusConfig) -> tuple[Pass, ...]:
    if config.passes is None:
        return kernel.passes
    return tuple(p for p in kernel.passes if p in config.passes)


def _baselines(kernel: KernelSpec, config: CorpusConfig) -> tuple[str, ...]:
    if config.providers is None:
        return kernel.baselines
    return tuple(p for p in kernel.baselines if p in config.providers)


@dataclass(frozen=True)
class Workload:
    slug: str
    params: dict[str, Any]
    elements: float
    dtype: str


@dataclass(frozen=True)
class Series:
    """One provider on one workload of a session group; ``spread`` is its typical
    relative p20-p80 spread."""

    provider: str
    workload: Workload
    base_ns: float
    spread: float
    memory_mb: float


@dataclass(frozen=True)
class Change:
    """A step in a series' true latency from version index ``at`` on."""

    at: int
    factor: float
    provider: str | None  # None: every provider (an environment shift)
    workload: str | None  # None: every workload


@dataclass
class Group:
    """One kernel, pass and GPU: the providers x workloads timed in one session."""

    kernel: KernelSpec
    pass_: Pass
    gpu: GpuSpec
    series: list[Series]
    changes: list[Change] = field(default_factory=list)

    def factor(self, series: Series, version: int) -> float:
        result = 1.0
        for change in self.changes:
            if (
                change.at <= version
                and change.provider in (None, series.provider)
                and change.workload in (None, series.workload.slug)
            ):
                result *= change.factor
        return result


@dataclass(frozen=True)
class Session:
    group: int
    version: int
    replicate: int
    at: datetime


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


def _base_ns(kernel: KernelSpec, pass_: Pass, provider: str, gpu: GpuSpec, w: Workload) -> float:
    if kernel.bound == "memory":
        work = kernel.per_element * w.elements * DTYPE_BYTES[w.dtype] / gpu.bandwidth
    else:
        work = kernel.per_element * w.elements / gpu.flops * (4.0 if w.dtype == "fp32" else 1.0)
    cost = dict(kernel.baseline_cost).get(provider, 1.0)
    if provider != "liger" and pass_ != "forward":
        cost *= 1.15  # eager backward passes keep more intermediates
    launches = 1.0 if provider == "liger" else 1.3 if provider == "torch_compile" else 2.5
    return PASS_COST[pass_] * (gpu.launch_ns * launches + work * cost)


def typical_spread(latency_ns: float) -> float:
    """Typical relative p20-p80 spread of a do_bench run: ~2-3% for kernels of a few
    microseconds, ~1% at 200 us, ~0.3-0.4% for tens of milliseconds."""
    return 0.003 + 0.025 * math.sqrt(20_000 / (latency_ns + 20_000))


def _loguniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _f32_ms(ns: float) -> float:
    """A latency as the harness reports it: 32 ns ticks, float32 milliseconds."""
    ticks = max(1, round(ns / TICK_NS))
    value: float = _F32.unpack(_F32.pack(ticks * TICK_NS / 1e6))[0]
    return value


class Corpus:
    """A planned corpus: :meth:`documents` streams it, :attr:`truth` says what was
    injected.  Build it with :func:`generate`."""

    def __init__(self, config: CorpusConfig) -> None:
        self.config = config
        self.versions = config.version_labels
        self._groups: list[Group] = []
        self._sessions: list[Session] = []
        self._outliers: dict[tuple[int, int], float] = {}
        self._truth_rows: list[dict[str, Any]] = []
        self._truth_frame: pl.DataFrame | None = None
        self._drifted: set[tuple[str, int]] = set()
        rng = random.Random(config.seed)
        self._plan_groups(rng)
        self._plan_sessions(rng)
        self._plan_drift(rng)
        self._plan_liger_effects(rng)
        self._plan_outliers(rng)

    # -- plan ---------------------------------------------------------------------------
    def _plan_groups(self, rng: random.Random) -> None:
        config = self.config
        for name in config.kernels:
            kernel = KERNELS[name]
            sweep = workloads(kernel, config.sweep_size, config.dtypes)
            for gpu_key in config.gpus:
                gpu = resolve_gpu(gpu_key)
                for pass_ in _passes(kernel, config):
                    series: list[Series] = []
                    for provider in ("liger", *_baselines(kernel, config)):
                        personality = math.exp(rng.gauss(0, 0.08))
                        noisiness = math.exp(rng.gauss(0, 0.3))
                        for w in sweep:
                            base = _base_ns(kernel, pass_, provider, gpu, w)
                            base *= personality * math.exp(rng.gauss(0, 0.03))
                            cost = dict(kernel.baseline_cost).get(provider, 1.0)
                            mb = w.elements * DTYPE_BYTES[w.dtype] * kernel.memory_tensors
                            mb *= (1 + 0.5 * (cost - 1)) * (1.0 if pass_ == "forward" else 1.5)
                            mb = round(mb / 2**20 * 1024) / 1024
                            spread = typical_spread(base) * noisiness
                            series.append(Series(provider, w, base, spread, mb))
                    self._groups.append(Group(kernel, pass_, gpu, series))

    def _plan_sessions(self, rng: random.Random) -> None:
        config = self.config
        dates = release_dates(self.versions)
        by_gpu: dict[str, list[int]] = {}
        for index, group in enumerate(self._groups):
            by_gpu.setdefault(group.gpu.gpu.slug, []).append(index)
        for v, date in enumerate(dates):
            gap = (dates[v + 1] - date).days if v + 1 < len(dates) else 7
            for gpu_slug in by_gpu:
                day = date + timedelta(days=rng.randint(0, max(0, min(5, gap - 2))))
                start = day + timedelta(hours=rng.randint(8, 17), minutes=rng.randint(0, 59))
                for index in by_gpu[gpu_slug]:
                    start += timedelta(minutes=rng.randint(2, 7), seconds=rng.randint(0, 59))
                    repeats = config.replicates if rng.random() < config.replicate_rate else 1
                    for replicate in range(repeats):
                        at = start + timedelta(hours=3 * replicate, minutes=rng.randint(0, 30))
                        self._sessions.append(Session(index, v, replicate, at))
        self._sessions.sort(key=lambda s: (s.version, s.at, s.group, s.replicate))

    def _steps(self) -> range:
        return range(1, len(self.versions))

    def _plan_drift(self, rng: random.Random) -> None:
        config = self.config
        if len(self.versions) < 2 or config.drift_rate == 0:
            return
        events: list[tuple[str, int]] = [
            (gpu, step)
            for step in self._steps()
            for gpu in config.gpus
            if rng.random() < config.drift_rate
        ]
        if not events and config.guarantee_effects:
            events.append((rng.choice(config.gpus), rng.choice(self._steps())))
        for number, (gpu_key, step) in enumerate(events, 1):
            gpu = resolve_gpu(gpu_key)
            size = _loguniform(rng, *config.drift_changes)
            change = round(size if rng.random() < 0.6 else -size / (1 + size), 4)
            self._drifted.add((gpu.gpu.slug, step))
            note = f"environment shift #{number} on {gpu.gpu.label}: every provider moved"
            for group in self._groups:
                if group.gpu == gpu:
                    group.changes.append(Change(step, 1 + change, None, None))
                    for provider in dict.fromkeys(s.provider for s in group.series):
                        self._record(group, provider, None, step - 1, step, "drift", change, note)

    def _plan_liger_effects(self, rng: random.Random) -> None:
        config = self.config
        if len(self.versions) < 2:
            return
        families: dict[tuple[str, str], list[Group]] = {}
        for group in self._groups:
            families.setdefault((group.kernel.name, group.pass_), []).append(group)
        events: list[tuple[tuple[str, str], int, Effect]] = []
        for key in families:
            for step in self._steps():
                u = rng.random()
                if u < config.regression_rate:
                    events.append((key, step, "regression"))
                elif u < config.regression_rate + config.improvement_rate:
                    events.append((key, step, "improvement"))
        for effect in ("regression", "improvement"):
            rate = config.regression_rate if effect == "regression" else config.improvement_rate
            if rate > 0 and config.guarantee_effects and not any(e[2] == effect for e in events):
                events.append((rng.choice(list(families)), rng.choice(self._steps()), effect))
        for number, (key, step, effect) in enumerate(events, 1):
            groups = [g for g in families[key] if (g.gpu.gpu.slug, step) not in self._drifted]
            if not groups:
                continue
            if rng.random() >= config.all_gpus_share:
                groups = [rng.choice(groups)]
            single = rng.random() < config.single_workload_share
            slugs = list(dict.fromkeys(s.workload.slug for s in groups[0].series))
            workload = rng.choice(slugs) if single else None
            size = _loguniform(rng, config.min_change, config.max_change)
            scope = f"workload {workload}" if workload else "every workload of the sweep"
            for group in groups:
                touched = [
                    s.spread
                    for s in group.series
                    if s.provider == "liger" and workload in (None, s.workload.slug)
                ]
                local = max(size * rng.uniform(0.85, 1.15), config.min_change)
                local = max(local, config.min_noise_multiple * max(touched))
                change = round(local if effect == "regression" else -min(local, 0.9), 4)
                group.changes.append(Change(step, 1 + change, "liger", workload))
                note = f"Liger change #{number} ({len(groups)} GPU(s)), {scope}"
                self._record(group, "liger", workload, step - 1, step, effect, change, note)

    def _plan_outliers(self, rng: random.Random) -> None:
        config = self.config
        per_session = [len(self._groups[s.group].series) for s in self._sessions]
        count = round(sum(per_session) * config.outlier_rate)
        for _ in range(count):
            index = rng.randrange(len(self._sessions))
            position = rng.randrange(per_session[index])
            size = rng.uniform(0.15, 0.8) if rng.random() < 0.8 else -rng.uniform(0.1, 0.3)
            change = round(size, 4)
            if (index, position) in self._outliers:
                continue
            self._outliers[(index, position)] = 1 + change
            session = self._sessions[index]
            group = self._groups[session.group]
            series = group.series[position]
            note = f"one run off (replicate {session.replicate}, {session.at.isoformat()})"
            self._record(
                group, series.provider, series.workload.slug, session.version,
                session.version, "outlier", change, note,
            )  # fmt: skip

    def _record(
        self, group: Group, provider: str, workload: str | None, from_version: int,
        to_version: int, effect: Effect, change: float, note: str,
    ) -> None:  # fmt: skip
        self._truth_rows.append(
            {
                "kernel": group.kernel.name,
                "pass": group.pass_,
                "provider": provider,
                "gpu": group.gpu.gpu.label,
                "workload": workload,
                "metric": "latency",
                "from_version": self.versions[from_version],
                "to_version": self.versions[to_version],
                "effect": effect,
                "change": change,
                "note": note,
            }
        )

    # -- public -------------------------------------------------------------------------
    @property
    def truth(self) -> pl.DataFrame:
        """One row per injected effect; see :data:`TRUTH_COLUMNS` and docs/ARCHITECTURE.md."""
        if self._truth_frame is None:
            import polars as pl

            schema = {c: pl.Float64 if c == "change" else pl.String for c in TRUTH_COLUMNS}
            order = {v: i for i, v in enumerate(self.versions)}
            rows = sorted(
                self._truth_rows,
                key=lambda r: (
                    order[r["to_version"]], r["effect"], r["gpu"], r["kernel"], r["pass"],
                    r["provider"], r["workload"] or "", r["note"],
                ),
            )  # fmt: skip
            self._truth_frame = pl.DataFrame(rows, schema=schema)
        return self._truth_frame

    @property
    def run_count(self) -> int:
        """Number of documents :meth:`documents` yields."""
        runs = sum(len(self._groups[s.group].series) for s in self._sessions)
        return runs * (2 if self.config.memory else 1)

    @property
    def gpus(self) -> list[Gpu]:
        return [resolve_gpu(key).gpu for key in self.config.gpus]

    def specs(self) -> Iterator[RunSpec]:
        """Every run as a :class:`kiana.documents.RunSpec`, session by session."""
        config = self.config
        seed = config.seed
        sigma_scale = config.session_noise / SPREAD_SIGMAS
        memory_offset = timedelta(minutes=20)
        for index, session in enumerate(self._sessions):
            rng = random.Random(f"kiana-generate:{seed}:{index}")
            gauss, uniform, rand = rng.gauss, rng.uniform, rng.random
            group = self._groups[session.group]
            kernel, pass_, gpu = group.kernel, group.pass_, group.gpu.gpu
            version = self.versions[session.version]
            machine = math.exp(gauss(0, config.machine_noise)) if config.machine_noise else 1.0
            for position, series in enumerate(group.series):
                median = series.base_ns * group.factor(series, session.version) * machine
                median *= math.exp(gauss(0, sigma_scale * series.spread))
                median *= self._outliers.get((index, position), 1.0)
                spread = series.spread * math.exp(gauss(0, 0.25))
                lower = uniform(0.4, 0.55)
                flat = rand() < config.zero_spread_share and median >= config.slow_ns
                if flat:
                    ms_20 = ms_50 = ms_80 = _f32_ms(median)
                else:
                    ms_20 = _f32_ms(median * (1 - lower * spread))
                    ms_50 = _f32_ms(median)
                    ms_80 = _f32_ms(median * (1 + (1 - lower) * spread))
                yield RunSpec(
                    kernel=kernel.name,
                    kernel_title=kernel.title,
                    pass_=pass_,
                    provider=series.provider,
                    gpu=gpu,
                    workload=series.workload.slug,
                    observed_at=session.at,
                    liger_version=version,
                    median=ms_50 * 1e6,
                    p20=ms_20 * 1e6,
                    p80=ms_80 * 1e6,
                    workload_params=series.workload.params,
                    native_metrics={"ms_20": ms_20, "ms_50": ms_50, "ms_80": ms_80},
                )
            if config.memory:
                at = session.at + memory_offset
                for series in group.series:
                    mb = series.memory_mb
                    yield RunSpec(
                        kernel=kernel.name,
                        kernel_title=kernel.title,
                        pass_=pass_,
                        provider=series.provider,
                        gpu=gpu,
                        workload=series.workload.slug,
                        observed_at=at,
                        liger_version=version,
                        median=mb,
                        p20=mb,
                        p80=mb,
                        metric="memory",
                        workload_params=series.workload.params,
                    )

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every run as a kernelindex document (exactly ``build_document(spec)``),
        streamed: a fresh iterator each call, the same documents each time."""
        from kiana.generate.output import DocumentFactory

        build = DocumentFactory().build
        for spec in self.specs():
            yield build(spec)


def generate(config: CorpusConfig | None = None) -> Corpus:
    """Plan the corpus of ``config`` (default: :class:`CorpusConfig()`); cheap: the
    documents are made when :meth:`Corpus.documents` is iterated."""
    return Corpus(config or CorpusConfig())
