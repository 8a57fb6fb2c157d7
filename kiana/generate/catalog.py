"""What the generator knows about the real world: Liger kernels, GPUs, releases.

Every number here is a rough, public-spec-level figure chosen so that generated
latencies land where Liger's own benchmark CSVs put them (the two seeds included:
LayerNorm backward, huggingface, H100 SXM, hidden 4096 x rows 4096 fp32 ~ 179 us;
fused linear + CPO loss, full pass, A100 SXM4 ~ 77 ms).  Nothing here is random:
the randomness lives in :mod:`kiana.generate.plan` and :mod:`kiana.generate.corpus`, seeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from kiana.documents import Gpu, slugify
from kiana.errors import UsageError

Pass = Literal["forward", "backward", "full"]
Bound = Literal["memory", "compute"]

#: Bytes per element of each dtype as it appears in workload slugs.
DTYPE_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp32": 4}

#: Cost of a pass relative to the forward pass (the backward of most Liger kernels
#: reads the input, the upstream gradient and often recomputes: about twice the work).
PASS_COST: dict[str, float] = {"forward": 1.0, "backward": 2.0, "full": 3.0}


@dataclass(frozen=True)
class KernelSpec:
    """One Liger kernel and the sweep its benchmark script runs.

    The workload of one sweep point is ``fixed`` plus ``x_name = x``, where x runs over
    ``x_start * 2**i``.  ``elements`` names the parameters whose product is the element
    count; the forward pass moves ``bytes_per_element * elements * dtype bytes`` (memory
    bound) or does ``flops_per_element * elements`` (compute bound).
    """

    name: str
    title: str
    passes: tuple[Pass, ...]
    x_name: str
    x_start: int
    fixed: tuple[tuple[str, int], ...]
    dtypes: tuple[str, ...]
    elements: tuple[str, ...]
    bound: Bound
    per_element: float
    #: How much slower than Liger each baseline typically is (forward, backward).
    baseline_cost: tuple[tuple[str, float], ...]

    @property
    def baselines(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.baseline_cost)

    #: Peak memory of Liger in tensor-sized units, and of the baselines relative to it.
    memory_tensors: float = 4.0


# fmt: off
KERNELS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec(
            "cross_entropy", "CrossEntropy", ("forward", "full"),
            "vocab", 4096, (("batch", 8), ("seq", 2048)), ("bf16", "fp32"),
            ("batch", "seq", "vocab"), "memory", 2.0, (("huggingface", 1.6),), 3.0,
        ),
        KernelSpec(
            "fused_linear_cross_entropy", "Fused linear + CrossEntropy", ("forward", "full"), "bt", 1024, (("hidden", 4096), ("vocab", 128256)), ("bf16",),
            ("bt", "hidden", "vocab"), "compute", 2.0, (("huggingface", 1.25),), 2.0,
        ),
        KernelSpec(
            "rms_norm", "RMSNorm", ("forward", "backward", "full"), "hidden", 1024, (("rows", 2048),),
            ("bf16", "fp32"), ("hidden", "rows"), "memory", 2.0,
            (("huggingface", 2.4), ("torch_compile", 1.1)), 3.0,
        ),
        KernelSpec(
            "layer_norm", "LayerNorm", ("forward", "backward", "full"),
            "hidden", 1024, (("rows", 4096),), ("fp32", "bf16"), ("hidden", "rows"), "memory",
            2.0, (("huggingface", 1.7),), 3.0,
        ),
        KernelSpec(
            "swiglu", "SwiGLU", ("forward", "backward", "full"), "seq", 1024,
            (("batch", 4), ("hidden", 4096), ("inter", 11008)), ("bf16",),
            ("batch", "seq", "inter"), "memory", 3.0, (("huggingface", 1.5),), 4.0,
        ),
        KernelSpec(
            "geglu", "GEGLU", ("forward", "backward", "full"), "seq", 1024,
            (("batch", 4), ("hidden", 4096), ("inter", 11008)), ("bf16",),
            ("batch", "seq", "inter"), "memory", 3.0, (("huggingface", 1.6),), 4.0,
        ),
        KernelSpec(
            "rope", "RoPE", ("forward", "backward", "full"), "seq", 1024,
            (("batch", 1), ("heads", 32), ("hidden", 8192), ("kvheads", 8)), ("bf16",),
            ("batch", "seq", "hidden"), "memory", 2.5, (("huggingface", 2.8),), 2.0,
        ),
        KernelSpec(
            "fused_linear_jsd", "Fused linear + JSD", ("forward", "full"), "bt",
            1024, (("hidden", 4096), ("vocab", 128256)), ("bf16",), ("bt", "hidden", "vocab"),
            "compute", 4.0, (("torch", 1.3),), 2.0,
        ),
        KernelSpec(
            "kl_div", "KL divergence", ("forward", "backward", "full"), "vocab",
            4096, (("batch", 8), ("seq", 512)), ("fp32",), ("batch", "seq", "vocab"), "memory",
            3.0, (("torch", 1.9),), 3.0,
        ),
        KernelSpec(
            "jsd", "JSD", ("forward", "full"), "vocab", 4096,
            (("batch", 4), ("seq", 512)), ("bf16", "fp32"), ("batch", "seq", "vocab"),
            "memory", 4.0, (("torch", 2.2),), 4.0,
        ),
        KernelSpec(
            "group_norm", "GroupNorm", ("forward", "backward", "full"),
            "channels", 64, (("batch", 32), ("groups", 8), ("hidden", 4096)), ("fp32",),
            ("batch", "channels", "hidden"), "memory", 2.0, (("huggingface", 2.0),), 3.0,
        ),
        KernelSpec(
            "embedding", "Embedding", ("forward", "backward", "full"),
            "vocab", 1024, (("batch", 8), ("dim", 768), ("seq", 2048)), ("fp32",),
            ("batch", "seq", "dim"), "memory", 2.0, (("huggingface", 1.2),), 2.0,
        ),
        KernelSpec(
            "fused_linear_cpo_loss", "Fused linear + CPO loss", ("forward", "full"), "batch", 2, (("hidden", 4096), ("seq", 1024), ("vocab", 128256)),
            ("bf16",), ("batch", "seq", "hidden", "vocab"), "compute", 2.0,
            (("huggingface", 1.35),), 2.0,
        ),
        KernelSpec(
            "fused_linear_dpo_loss", "Fused linear + DPO loss", ("forward", "full"), "batch", 2, (("hidden", 4096), ("seq", 1024), ("vocab", 128256)),
            ("bf16",), ("batch", "seq", "hidden", "vocab"), "compute", 2.0,
            (("huggingface", 1.4),), 2.0,
        ),
        KernelSpec(
            "dyt", "DyT", ("forward", "backward", "full"), "hidden",
            1024, (("bt", 4096),), ("bf16",), ("bt", "hidden"), "memory", 2.0,
            (("torch", 2.6), ("torch_compile", 1.15)), 3.0,
        ),
    )
}
# fmt: on


@dataclass(frozen=True)
class GpuSpec:
    """A GPU model and what it sustains: bandwidth in bytes/ns (= GB/s / 1), dense
    bf16 throughput in flop/ns, and a per-launch overhead in ns."""

    gpu: Gpu
    bandwidth: float
    flops: float
    launch_ns: float


def _nvidia(product: str, form: str, arch: str, name: str) -> Gpu:
    return Gpu("nvidia", f"NVIDIA {product}", form, arch, name)


#: Keyed by the slug of the harness's device name (``Gpu.slug``).
GPUS: dict[str, GpuSpec] = {
    spec.gpu.slug: spec
    for spec in (
        GpuSpec(_nvidia("H100", "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3"), 2800, 620e3, 4500),
        GpuSpec(_nvidia("H100", "PCIe", "sm_90", "NVIDIA H100 PCIe"), 1700, 450e3, 5000),
        GpuSpec(_nvidia("A100", "SXM4-80GB", "sm_80", "NVIDIA A100-SXM4-80GB"), 1700, 230e3, 5500),
        GpuSpec(_nvidia("H100", "NVL", "sm_90", "NVIDIA H100 NVL"), 3200, 560e3, 4500),
        GpuSpec(_nvidia("A100", "SXM4-40GB", "sm_80", "NVIDIA A100-SXM4-40GB"), 1350, 230e3, 5500),
        GpuSpec(_nvidia("A10G", "PCIe", "sm_86", "NVIDIA A10G"), 520, 62e3, 6500),
        GpuSpec(
            Gpu("amd", "AMD Instinct MI300X", "OAM", "gfx942", "AMD Instinct MI300X"),
            3900,
            700e3,
            7000,
        ),
    )
}

#: Liger-Kernel releases with (approximate) release dates, oldest first.
RELEASES: tuple[tuple[str, datetime], ...] = tuple(
    (version, datetime.fromisoformat(day))
    for version, day in (
        ("0.3.0", "2024-09-13"),
        ("0.3.1", "2024-09-27"),
        ("0.4.0", "2024-11-06"),
        ("0.4.1", "2024-11-13"),
        ("0.4.2", "2024-11-21"),
        ("0.5.0", "2024-12-18"),
        ("0.5.1", "2025-01-06"),
        ("0.5.2", "2025-01-29"),
        ("0.5.3", "2025-02-14"),
        ("0.5.4", "2025-02-27"),
        ("0.5.5", "2025-03-20"),
        ("0.5.6", "2025-04-04"),
        ("0.5.7", "2025-04-11"),
        ("0.5.8", "2025-04-22"),
        ("0.5.9", "2025-05-05"),
        ("0.5.10", "2025-05-22"),
        ("0.6.0", "2025-07-03"),
        ("0.6.1", "2025-07-23"),
        ("0.6.2", "2025-08-22"),
    )
)

#: Days between synthetic releases past the last real one.
SYNTHETIC_GAP = timedelta(days=14)


#: The most versions :func:`liger_versions` makes up (a corpus per version is large).
MAX_VERSIONS = 1000


def liger_versions(count: int) -> tuple[str, ...]:
    """``count`` PEP 440 Liger versions in release order: the newest real releases, and
    when more are asked than exist, synthetic later ones (0.6.3, 0.6.4, ... 0.7.0 ...)."""
    if not 1 <= count <= MAX_VERSIONS:
        raise UsageError(
            f"cannot pick {count} Liger versions",
            hint=f"ask for 1 to {MAX_VERSIONS:,} versions (e.g. --versions 3), or name them",
        )
    real = [version for version, _ in RELEASES]
    if count <= len(real):
        return tuple(real[-count:])
    extra: list[str] = []
    minor, patch = 6, 2
    while len(real) + len(extra) < count:
        patch += 1
        if patch == 10:
            minor, patch = minor + 1, 0
        extra.append(f"0.{minor}.{patch}")
    return (*real, *extra)


def release_dates(versions: tuple[str, ...]) -> list[datetime]:
    """A release date per version: real dates where known; unknown labels (synthetic
    releases, ``main``) follow the previous one by :data:`SYNTHETIC_GAP`."""
    known = dict(RELEASES)
    dates: list[datetime] = []
    for version in versions:
        date = known.get(version)
        if date is None or (dates and date <= dates[-1]):
            date = (dates[-1] if dates else RELEASES[0][1]) + SYNTHETIC_GAP
        dates.append(date)
    return dates


def resolve_gpu(key: str) -> GpuSpec:
    """A catalog GPU from its slug or its device name (``NVIDIA H100 PCIe``); KeyError
    for an unknown one."""
    spec = GPUS.get(slugify(key))
    if spec is None:
        for candidate in GPUS.values():
            if slugify(candidate.gpu.label) == slugify(key):
                return candidate
        raise KeyError(key)
    return spec
