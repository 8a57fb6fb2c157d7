"""GPU names as Liger's CSVs record them (``torch.cuda.get_device_name()``) ->
:class:`kiana.documents.Gpu`: vendor, product, form factor, architecture."""

from __future__ import annotations

import re

from kiana.documents import Gpu

#: Known models: model token -> (architecture, datacenter part?).  Datacenter parts
#: split into product (``NVIDIA H100``) and form factor (``80GB HBM3``); consumer and
#: workstation cards keep the whole name as product.
GPU_MODELS: dict[str, str] = {
    "V100": "sm_70",
    "T4": "sm_75",
    "A100": "sm_80",
    "A800": "sm_80",
    "A30": "sm_80",
    "A10": "sm_86",
    "A10G": "sm_86",
    "A40": "sm_86",
    "A6000": "sm_86",
    "L4": "sm_89",
    "L40": "sm_89",
    "L40S": "sm_89",
    "H100": "sm_90",
    "H800": "sm_90",
    "H20": "sm_90",
    "H200": "sm_90",
    "GH200": "sm_90",
    "B100": "sm_100",
    "B200": "sm_100",
    "GB200": "sm_100",
    "B300": "sm_103",
    "GB300": "sm_103",
    "RTX 3080": "sm_86",
    "RTX 3090": "sm_86",
    "RTX 4080": "sm_89",
    "RTX 4090": "sm_89",
    "RTX 5080": "sm_120",
    "RTX 5090": "sm_120",
    "MI210": "gfx90a",
    "MI250": "gfx90a",
    "MI250X": "gfx90a",
    "MI300A": "gfx942",
    "MI300X": "gfx942",
    "MI325X": "gfx942",
    "MI355X": "gfx950",
}
UNKNOWN_ARCHITECTURE = "unknown"

_VENDORS = {"nvidia": "nvidia", "amd": "amd", "intel": "intel"}
#: First words that name an NVIDIA product line without the vendor.
_NVIDIA_LINES = {"tesla", "quadro", "geforce"}
_DATACENTER = re.compile(r"^(?:Tesla )?(?P<model>[A-Z]{1,2}\d{1,4}[A-Z]?)(?:[- ](?P<form>.+))?$")
_CONSUMER = re.compile(r"(?P<model>RTX \d{4}|MI\d{3}[A-Z]?)")


def parse_gpu(name: str) -> Gpu:
    """``torch.cuda.get_device_name()`` -> :class:`Gpu`.

    ``NVIDIA A100-SXM4-80GB`` -> product ``NVIDIA A100``, form factor ``SXM4-80GB``,
    ``sm_80``; ``NVIDIA H100 80GB HBM3`` -> ``NVIDIA H100``, ``80GB HBM3``, ``sm_90``;
    ``NVIDIA B200`` -> ``NVIDIA B200``, no form factor, ``sm_100``;
    ``NVIDIA GeForce RTX 4090`` -> the whole name as product, ``sm_89``.
    Unknown models keep the whole name as product and architecture ``unknown`` (see
    :func:`gpu_is_known`); an unknown vendor becomes the first word, lower-cased.
    """
    original = " ".join(name.split())
    text = original
    if text.split(" ")[0].lower() in _NVIDIA_LINES:
        text = f"NVIDIA {text}"
    first, _, rest = text.partition(" ")
    vendor = _VENDORS.get(first.lower(), first.lower() or "unknown")
    brand = first if first.lower() in _VENDORS else ""
    body = rest if brand else text
    match = _DATACENTER.match(body)
    if match and match["model"] in GPU_MODELS:
        model = match["model"]
        product = f"{brand} {model}".strip()
        return Gpu(vendor, product, match["form"] or "", GPU_MODELS[model], original)
    consumer = _CONSUMER.search(body)
    architecture = GPU_MODELS.get(consumer["model"], "") if consumer else ""
    return Gpu(vendor, text, "", architecture or UNKNOWN_ARCHITECTURE, original)


def gpu_is_known(gpu: Gpu) -> bool:
    return gpu.architecture != UNKNOWN_ARCHITECTURE
