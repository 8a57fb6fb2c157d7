"""One colour per provider, the same in every chart (report and notebooks).

The providers under test (role ``subject``: Liger's ``liger``, ``liger_*``) are blues
and purples, drawn solid; baselines are warm and neutral colours, drawn dashed.  No red: red marks the flagged
step and regressions.  The providers of Liger-Kernel's benchmarks have fixed colours;
any other name takes one from its family's palette by a stable hash of the name, so it
too keeps its colour from chart to chart (unless two such names of one chart hash to
one colour: the second takes the next free one).
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Sequence

#: Colours of Liger's providers (blues and purples), ``liger`` first.
LIGER_PALETTE: tuple[str, ...] = (
    "#0969da", "#8250df", "#0550ae", "#a475f9", "#1b7c83", "#6639ba", "#218bff", "#54aeff",
)  # fmt: skip
#: Colours of baseline providers (warm and neutral; no red).
BASELINE_PALETTE: tuple[str, ...] = (
    "#e16f24", "#57606a", "#116329", "#bf3989", "#4d2d00", "#953800", "#9a6700", "#8c959f",
)  # fmt: skip

#: The providers of Liger-Kernel's benchmark CSVs and kiana's generator.
PROVIDER_COLORS: dict[str, str] = {
    "liger": LIGER_PALETTE[0],
    "liger_triton": LIGER_PALETTE[1],
    "liger_cutile": LIGER_PALETTE[2],
    "liger_tiled": LIGER_PALETTE[3],
    "liger_cutedsl": LIGER_PALETTE[4],
    "liger_rms_norm": LIGER_PALETTE[5],
    "liger_fused_add_rms_norm": LIGER_PALETTE[6],
    "liger_in_place": LIGER_PALETTE[7],
    "huggingface": BASELINE_PALETTE[0],
    "torch": BASELINE_PALETTE[1],
    "torch_compile": BASELINE_PALETTE[2],
    "deepspeed_tiled": BASELINE_PALETTE[3],
    "megatron": BASELINE_PALETTE[4],
    "megatron-fused": BASELINE_PALETTE[5],
    "megatron-unfused": BASELINE_PALETTE[6],
    "apex": BASELINE_PALETTE[7],
}

#: Line styles (Vega ``strokeDash``): the code under test solid, baselines dashed.
SOLID: list[int] = [1, 0]
DASHED: list[int] = [5, 3]


def _palette(subject: bool) -> tuple[str, ...]:
    return LIGER_PALETTE if subject else BASELINE_PALETTE


def provider_color(provider: str, subject: bool = False) -> str:
    """The colour of ``provider`` in every chart (see the module docstring); ``subject``:
    it is under test (the palette of a name without a fixed colour)."""
    fixed = PROVIDER_COLORS.get(provider)
    if fixed is not None:
        return fixed
    palette = _palette(subject)
    return palette[zlib.crc32(provider.encode("utf-8")) % len(palette)]


def provider_colors(providers: Sequence[str], subjects: Collection[str] = ()) -> list[str]:
    """The colours of one chart's ``providers``, in their order (``subjects``: those
    under test): each its own :func:`provider_color`; a hashed colour another provider
    of the chart already has moves on to the next free colour of its palette."""
    taken = {PROVIDER_COLORS[p] for p in providers if p in PROVIDER_COLORS}
    colors: list[str] = []
    for provider in providers:
        color = provider_color(provider, provider in subjects)
        if provider not in PROVIDER_COLORS:
            palette = _palette(provider in subjects)
            start = palette.index(color)
            free = [palette[(start + i) % len(palette)] for i in range(len(palette))]
            color = next((c for c in free if c not in taken), color)
            taken.add(color)
        colors.append(color)
    return colors


def provider_dashes(providers: Sequence[str], subjects: Collection[str]) -> list[list[int]]:
    """The line style of each provider: under test (in ``subjects``) solid, baselines
    dashed."""
    return [list(SOLID if p in subjects else DASHED) for p in providers]
