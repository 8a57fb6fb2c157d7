"""What a corpus depends on: :class:`CorpusConfig`, its defaults and presets."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from kiana.errors import UsageError
from kiana.generate.catalog import GPUS, KERNELS, RELEASES, KernelSpec, Pass, liger_versions
from kiana.generate.catalog import resolve_gpu as _resolve_gpu

DEFAULT_KERNELS: tuple[str, ...] = (
    "cross_entropy", "fused_linear_cross_entropy", "rms_norm", "layer_norm", "swiglu", "rope",
)  # fmt: skip
DEFAULT_GPUS: tuple[str, ...] = (
    "nvidia-h100-80gb-hbm3", "nvidia-h100-pcie", "nvidia-a100-sxm4-80gb",
)  # fmt: skip
DEFAULT_VERSIONS: tuple[str, ...] = (
    "0.3.1", "0.4.0", "0.4.2", "0.5.2", "0.5.5", "0.5.9", "0.6.0", "0.6.2",
)  # fmt: skip
ALL_NVIDIA: tuple[str, ...] = (
    "nvidia-h100-80gb-hbm3", "nvidia-h100-pcie", "nvidia-h100-nvl",
    "nvidia-a100-sxm4-80gb", "nvidia-a100-sxm4-40gb", "nvidia-a10g",
)  # fmt: skip

#: How run-to-run noise is drawn: ``spread`` (each run's p20-p80 spread predicts the
#: noise of its median) or ``realistic`` (calibrated on Liger's real CSVs, see
#: kiana.generate.realistic and docs/CALIBRATION.md).
Noise = Literal["spread", "realistic"]
NOISES: tuple[Noise, ...] = ("spread", "realistic")

#: The largest corpus :meth:`CorpusConfig.sized` plans (documents).
MAX_RUNS = 50_000_000

#: Seed of the bundled corpus (data/generated/), picked for a representative mix of effects.
SEED_BUNDLED = 108


@dataclass(frozen=True)
class CorpusConfig:
    """Everything a corpus depends on; the same config always gives the same corpus.

    Rates are probabilities: ``regression_rate``/``improvement_rate`` per Liger series
    group (kernel, pass, provider) and version step; ``drift_rate`` per GPU and version
    step; ``replicate_rate`` per benchmark session (re-run ``replicates`` times in all,
    minutes apart); ``rerun_rate`` per kernel, pass, GPU and version (a re-benchmark
    under the same label days later, with a code change in ``rerun_change_share`` of
    them); ``conflict_rate`` per session (a second implementation's runs under the
    provider name ``liger``, ``conflict_factors`` times slower or faster);
    ``outlier_rate`` per run.

    Sizes of version-step Liger effects: ``single_workload_share`` of the regressions
    hit one workload of the sweep by ``single_workload_changes`` (+20..40%); of the
    sweep-wide effects, ``small_shift_share`` are small (half exactly ``min_change``,
    half 4-5%), the rest log-uniform in [max(5%, ``min_change``), ``max_change``] and
    raised to at least ``min_noise_multiple`` times the typical relative p20-p80 spread
    of every series they touch.  Small shifts only go to series quiet enough (a 3% shift
    is never planted where 3% is under twice the spread).  ``session_noise`` is the
    run-to-run noise of a median in units of the within-run sigma estimated from the
    spread; ``machine_noise`` the relative noise shared by one whole round of runs.

    ``noise`` picks the model of run-to-run noise.  ``spread`` is the one above
    (``session_noise``, ``machine_noise``, ``zero_spread_share`` and ``slow_ns``
    apply).  ``realistic`` draws noise as Liger's real CSVs show it
    (:mod:`kiana.generate.realistic`: per-sitting provider offsets, heavy-tailed
    per-workload noise, spreads and single samples by latency; those four fields are
    then unused) and plans two more kinds of sessions: baseline code changes
    (``baseline_change_rate`` per kernel, pass, GPU and step without another effect:
    one baseline moves by ``baseline_changes``, Liger does not) and A/A pairs
    (``aa_rate`` per kernel, pass, GPU and version: the sitting measured again
    minutes later, recorded in another CSV, nothing changed).  Both rates apply to
    ``realistic`` only; with the same seed, both models plan the same groups,
    release sessions and environment shifts (Liger effects' sizes follow the spreads).
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
    #: Share of version-step Liger regressions that hit one workload of the sweep.
    single_workload_share: float = 0.15
    single_workload_changes: tuple[float, float] = (0.20, 0.40)
    #: Share of sweep-wide Liger effects that are small (min_change exactly, or 4-5%).
    small_shift_share: float = 0.5
    #: Share of Liger effects that hit every GPU (a code change) instead of one.
    all_gpus_share: float = 0.5
    drift_rate: float = 0.04
    drift_changes: tuple[float, float] = (0.05, 0.20)
    rerun_rate: float = 0.03
    rerun_change_share: float = 0.5
    conflict_rate: float = 0.005
    conflict_factors: tuple[float, float] = (2.0, 6.0)
    #: Share of slow runs (median >= slow_ns) reported with p20 = median = p80.
    zero_spread_share: float = 0.7
    slow_ns: float = 50e6
    outlier_rate: float = 0.001
    session_noise: float = 0.5
    machine_noise: float = 0.002
    noise: Noise = "spread"
    baseline_change_rate: float = 0.03
    baseline_changes: tuple[float, float] = (0.05, 0.30)
    aa_rate: float = 0.03
    #: Also write memory rows (metric memory, MB), one per latency run.
    memory: bool = False
    #: Force at least one of every kind of effect whose rate is > 0.
    guarantee_effects: bool = True
    #: Long histories: this many extra kernel, pass and GPU groups (``liger`` and one
    #: control) benchmarked at many consecutive dev-tree labels, each with outlier
    #: sessions and level shifts that stay (see kiana.generate, "Long histories").
    histories: int = 0
    #: Sessions per long history, drawn within this range.
    history_sessions: tuple[int, int] = (30, 100)
    #: Run-to-run noise of a history's medians (relative sigma), one level per history
    #: in turn.
    history_noise: tuple[float, ...] = (0.002, 0.005, 0.01, 0.02)
    #: Sizes of a history's outlier sessions (relative, either sign), one per history
    #: in turn.
    history_outliers: tuple[float, ...] = (0.15, 0.25, 0.41, 0.6)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise UsageError(
                "invalid corpus configuration: " + "; ".join(problems),
                hint="see kiana.generate.CorpusConfig (or kiana generate --help) "
                "for the accepted values",
            )

    @property
    def version_labels(self) -> tuple[str, ...]:
        return (*self.versions, self.head_label) if self.head_label else self.versions

    def estimated_runs(self) -> int:
        """Expected number of documents (exact but for replicates, re-benchmarks and
        conflicts, drawn at random)."""
        per_gpu_version = 0
        for name in self.kernels:
            kernel = KERNELS[name]
            per_gpu_version += (
                len(passes_of(kernel, self))
                * (1 + len(baselines_of(kernel, self)))
                * self.sweep_size
                * min(self.dtypes, len(kernel.dtypes))
            )
        rounds = 1 + self.replicate_rate * (self.replicates - 1) + self.conflict_rate / 3
        again = self.rerun_rate + (self.aa_rate if self.noise == "realistic" else 0.0)
        sessions = len(self.version_labels) * (1 + again)
        total = per_gpu_version * len(self.gpus) * sessions * rounds
        history = self.histories * 2 * self.sweep_size * sum(self.history_sessions) / 2
        return round((total + history) * (2 if self.memory else 1))

    @classmethod
    def sized(cls, target_runs: int, *, seed: int = 0, **changes: Any) -> CorpusConfig:
        """A config of about ``target_runs`` documents (10k, 100k, 1M...): more kernels,
        GPUs, sweep points and dtype variants first, then more versions (synthetic
        releases past the newest real one when needed)."""
        if not 1 <= target_runs <= MAX_RUNS:
            raise UsageError(
                f"cannot size a corpus of {target_runs:,} documents",
                hint=f"ask for --runs 1 to {MAX_RUNS:,}",
            )
        ladder: list[dict[str, Any]] = [
            {"kernels": DEFAULT_KERNELS, "gpus": DEFAULT_GPUS, "sweep_size": 5, "dtypes": 1},
            {"kernels": tuple(KERNELS), "gpus": DEFAULT_GPUS, "sweep_size": 6, "dtypes": 1},
            {"kernels": tuple(KERNELS), "gpus": ALL_NVIDIA, "sweep_size": 8, "dtypes": 1},
            {"kernels": tuple(KERNELS), "gpus": ALL_NVIDIA, "sweep_size": 8, "dtypes": 2},
            {"kernels": tuple(KERNELS), "gpus": ALL_NVIDIA, "sweep_size": 10, "dtypes": 2},
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
            rerun_rate=0.05,
            conflict_rate=0.01,
            outlier_rate=0.002,
            histories=1,
            history_sessions=(30, 30),
            history_noise=(0.002,),
            history_outliers=(0.41,),
        )


def _problems(config: CorpusConfig) -> list[str]:
    problems: list[str] = []
    unknown = [k for k in config.kernels if k not in KERNELS]
    if unknown:
        problems.append(f"unknown kernels {unknown} (known: {sorted(KERNELS)})")
    if len(set(config.kernels)) != len(config.kernels):
        problems.append("kernels must be distinct")
    slugs: set[str] = set()
    for key in config.gpus:
        try:
            slugs.add(_resolve_gpu(key).gpu.slug)
        except KeyError:
            problems.append(f"unknown GPU {key!r} (known: {sorted(GPUS)})")
    if not config.kernels or not config.gpus or not config.versions:
        problems.append("kernels, gpus and versions must not be empty")
    if len(slugs) != len(config.gpus) and not any("unknown GPU" in p for p in problems):
        problems.append("gpus must be distinct")
    if len(set(config.versions)) != len(config.versions) or config.head_label in config.versions:
        problems.append("versions must be distinct")
    if not 1 <= config.sweep_size <= 12:
        problems.append("sweep_size must be within 1..12")
    if config.dtypes < 1 or not 2 <= config.replicates <= 6:
        problems.append("dtypes must be >= 1 and replicates within 2..6")
    for f in fields(config):
        value = getattr(config, f.name)
        numbers = value if isinstance(value, tuple) else (value,)
        if any(isinstance(x, float) and not math.isfinite(x) for x in numbers):
            problems.append(f"{f.name} must be a finite number (got {value})")
            continue
        if f.name.endswith(("_rate", "_share")) and not 0 <= value <= 1:
            problems.append(f"{f.name} must be within 0..1 (got {value})")
    low, high = config.drift_changes
    one_low, one_high = config.single_workload_changes
    if not 0 < config.min_change <= config.max_change or not 0 < low <= high:
        problems.append("change ranges must be positive and ordered")
    if config.noise not in NOISES:
        problems.append(f"noise must be one of {', '.join(NOISES)} (got {config.noise!r})")
    if not 0 < config.baseline_changes[0] <= config.baseline_changes[1] < 1:
        problems.append("baseline_changes must be positive, ordered and below 1")
    if not 0 < one_low <= one_high:
        problems.append("single_workload_changes must be positive and ordered")
    if config.max_change >= 1 or high >= 1 or one_high >= 1:
        problems.append("changes must be below 1 (an improvement of 100% is free code)")
    if not 1 < config.conflict_factors[0] <= config.conflict_factors[1]:
        problems.append("conflict_factors must be > 1 and ordered")
    if config.histories < 0 or not 24 <= config.history_sessions[0] <= config.history_sessions[1]:
        problems.append("histories must be >= 0 and history_sessions ordered, from 24 up")
    elif config.history_sessions[1] > 1000:
        problems.append("history_sessions must be at most 1000")
    if not config.history_noise or any(x < 0 or x >= 0.2 for x in config.history_noise):
        problems.append("history_noise must hold levels within 0..0.2")
    if not config.history_outliers or any(not 0 < x < 1 for x in config.history_outliers):
        problems.append("history_outliers must hold sizes within 0..1 (exclusive)")
    if config.min_noise_multiple < 0 or config.session_noise < 0 or config.machine_noise < 0:
        problems.append("noise levels and min_noise_multiple must not be negative")
    return problems


def passes_of(kernel: KernelSpec, config: CorpusConfig) -> tuple[Pass, ...]:
    """The timed passes of ``kernel`` the config keeps."""
    if config.passes is None:
        return kernel.passes
    return tuple(p for p in kernel.passes if p in config.passes)


def baselines_of(kernel: KernelSpec, config: CorpusConfig) -> tuple[str, ...]:
    """The baseline providers of ``kernel`` the config keeps."""
    if config.providers is None:
        return kernel.baselines
    return tuple(p for p in kernel.baselines if p in config.providers)
