"""The workload slug of a Liger CSV row: its benchmark config and swept parameter ->
a short, stable name (``hidden4096-rows4096-fp32``).

The rule
========
1. Parameters = the config plus ``x_name = x_value`` (``x_value`` read as an int, else a
   float, else kept as text).  Parameters whose value is ``null`` are dropped (Liger writes
   ``null`` for the swept dimension's placeholder).
2. Run parameters that do not change what is computed are left out **while they hold
   their usual value**: ``eps`` = 1e-6, ``mode`` = ``forward`` (the pass is
   ``kernel_operation_mode``), ``sweep_dim`` = ``x_name``.  With any other value they are
   written like every other parameter, so configs that differ in them never share a slug.
3. Each remaining parameter gets a part name from :data:`PART_NAMES` (``B``, ``bsz``,
   ``batch_size`` -> ``batch``; ``T``, ``seq_len``, ``L``, ``S`` -> ``seq``; ``N``, ``H``,
   ``hidden_size`` -> ``hidden``; ``M`` -> ``rows``; ``V``, ``vocab_size`` -> ``vocab``; ...);
   other keys use the key itself, lower-cased, letters and digits only.  When two keys of
   one workload share a part name, the swept parameter keeps it and the others fall back
   to their own key (``T`` swept with ``seq_len`` in the config: ``seq1024`` and
   ``seqlen8192``).
4. Values: integers as digits (negative: ``neg1``); booleans as the name alone (true) or
   ``no`` + name (false); floats as their ``repr`` with ``.`` -> ``p``, ``-`` -> ``m``
   (``0.5`` -> ``0p5``); text as the slug of the value alone (``gelu_pytorch_tanh`` ->
   ``gelu-pytorch-tanh``); lists of scalars joined by ``x``; anything else nested as the
   name + ``h`` + 8 hex digits of its canonical-JSON sha256.
5. Parts are sorted by part name (then key) and joined with ``-``; ``dtype`` comes last,
   short (``torch.float32`` -> ``fp32``, ``torch.bfloat16`` -> ``bf16``, ...).
   Seeds: ``N=4096, M=4096, fp32, eps`` -> ``hidden4096-rows4096-fp32``;
   ``B=4, T=1024, H=4096, V=128256, bf16, mode`` -> ``batch4-hidden4096-seq1024-vocab128256-bf16``.
6. Backstop (:func:`separate_collisions`): within one import, when different parameter
   sets of one kernel still produce the same slug (one point shared by two sweeps: the
   ``T = 8192`` point of an ``E`` sweep and the ``E = 128`` point of a ``T`` sweep; or
   exotic text values), every row of that slug gets ``-sweep-`` + the part name of its
   swept parameter (rule 3 for ``x_name``): ``experts128-seq8192-sweep-seq`` and
   ``experts128-seq8192-sweep-experts``.  Where different parameter sets still share a
   slug after that, each of them gets ``-h`` + 8 hex digits of the sha256 of its full
   parameters (canonical JSON) instead of the ``-sweep-`` part.  The import reports a
   warning per clashing slug.  Nothing is ever merged silently.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from kiana.documents import RunSpec, canonical_json, slugify

#: Config key -> slug part name (rule 3 of the module docstring).
PART_NAMES: dict[str, str] = {
    "B": "batch",
    "bsz": "batch",
    "batch_size": "batch",
    "T": "seq",
    "seq_len": "seq",
    "L": "seq",
    "S": "seq",
    "BT": "tokens",
    "N": "hidden",
    "H": "hidden",
    "hidden_size": "hidden",
    "M": "rows",
    "V": "vocab",
    "vocab_size": "vocab",
    "D": "embed",
    "C": "channels",
    "C_in": "cin",
    "C_out": "cout",
    "E": "experts",
    "K": "k",
    "intermediate_size": "inter",
    "intermediate_dim": "inter",
    "ffn_local": "ffn",
    "num_heads": "heads",
    "num_attention_heads": "heads",
    "num_q_heads": "qheads",
    "num_kv_heads": "kvheads",
    "num_key_value_heads": "kvheads",
    "kernel_size": "kernel",
    "channels_per_group": "chpergroup",
    "num_shards": "shards",
    "hidden_act": "act",
    "activation_type": "glu",
    "importance_sampling_level": "islevel",
    "model_config": "model",
    "ignore_index": "ignore",
    "weight_hard_loss": "whard",
    "weight_soft_loss": "wsoft",
    "TP": "tp",
}

#: Run parameters left out of the slug while they hold this value (rule 2).
#: ``sweep_dim``'s usual value is the row's ``x_name`` (``None`` here stands for that).
USUAL_VALUES: dict[str, object] = {"eps": 1e-6, "mode": "forward", "sweep_dim": None}

DTYPES: dict[str, str] = {
    "float32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float64": "fp64",
    "double": "fp64",
    "float8_e4m3fn": "fp8e4m3",
    "float8_e5m2": "fp8e5m2",
    "int8": "int8",
    "int32": "int32",
}


def parse_scalar(text: str) -> int | float | str:
    """``x_value`` text -> int, else finite float, else the text itself.  A float with
    an integral value reads as the int (``1024.0`` is the workload ``1024``).

    >>> parse_scalar("1024.0"), parse_scalar("0.5"), parse_scalar("qwen2.5_7b")
    (1024, 0.5, 'qwen2.5_7b')
    """
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        pass
    try:
        number = float(stripped)
    except ValueError:
        return stripped
    if not math.isfinite(number):
        return stripped
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _dtype_short(value: object) -> str:
    text = str(value).removeprefix("torch.")
    return DTYPES.get(text, slugify(text))


def _render_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return name if value else f"no{name}"
    if isinstance(value, int):
        return f"{name}{value}" if value >= 0 else f"{name}neg{-value}"
    if isinstance(value, float):
        return name + repr(value).replace("-", "m").replace(".", "p").replace("+", "")
    if isinstance(value, str):
        return slugify(value) or f"{name}empty"
    if isinstance(value, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    ):
        return name + "x".join(_render_value("", v) for v in value)
    return name + "h" + hashlib.sha256(canonical_json(value).encode()).hexdigest()[:8]


def _is_usual(key: str, value: Any, x_name: str) -> bool:
    if key not in USUAL_VALUES:
        return False
    usual = x_name if key == "sweep_dim" else USUAL_VALUES[key]
    return type(value) is type(usual) and value == usual


def workload_params(x_name: str, x_value: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Config plus the swept parameter (which replaces a placeholder of the same name)."""
    params = dict(config)
    params[x_name] = parse_scalar(x_value)
    return params


def workload_slug(x_name: str, params: Mapping[str, Any]) -> str:
    """The slug of one workload (rules 1-5 of the module docstring)."""
    kept = {
        k: v
        for k, v in params.items()
        if v is not None and k != "dtype" and not _is_usual(k, v, x_name)
    }
    wanted: dict[str, str] = {k: part_name(k) for k in kept}
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for key, name in wanted.items():
        by_name[name].append(key)
    for keys in by_name.values():
        if len(keys) > 1:
            for key in keys:
                if key != x_name:
                    wanted[key] = _key_name(key)
    parts = [
        _render_value(wanted[key], kept[key]) for key in sorted(kept, key=lambda k: (wanted[k], k))
    ]
    if params.get("dtype") is not None:
        parts.append(_dtype_short(params["dtype"]))
    return "-".join(parts) or "default"


def part_name(key: str) -> str:
    """A parameter's part name (rule 3): :data:`PART_NAMES`, else :func:`_key_name`."""
    return PART_NAMES.get(key) or _key_name(key)


def _key_name(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower()) or "param"


def params_hash(params: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(dict(params)).encode()).hexdigest()[:8]


def separate_collisions(
    converted: list[tuple[RunSpec, str]],
) -> tuple[list[RunSpec], list[str]]:
    """Rule 6 over (spec, part name of its swept parameter) pairs: configs of one kernel
    that share a slug get ``-sweep-<x part>`` (the swept parameter tells apart one point
    shared by two sweeps), or ``-h<hash>`` when even that does not separate them.
    Returns the specs (in order, renamed where needed) and one warning per clash."""

    def variants(pairs: Iterable[tuple[str, str, RunSpec]]) -> dict[tuple[str, str], set[str]]:
        found: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
        for kernel, slug, spec in pairs:
            found[(kernel, slug)].add(canonical_json(spec.workload_params))
        return found

    seen = variants((s.kernel, s.workload, s) for s, _ in converted)
    clashing = {key for key, found in seen.items() if len(found) > 1}
    if not clashing:
        return [s for s, _ in converted], []
    swept = [
        (s, f"{s.workload}-sweep-{x_part}" if (s.kernel, s.workload) in clashing else s.workload)
        for s, x_part in converted
    ]
    still = variants((s.kernel, slug, s) for s, slug in swept)
    out: list[RunSpec] = []
    hashed: set[tuple[str, str]] = set()
    for spec, slug in swept:
        if len(still[(spec.kernel, slug)]) > 1:
            hashed.add((spec.kernel, spec.workload))
            slug = f"{spec.workload}-h{params_hash(spec.workload_params)}"
        out.append(spec if slug == spec.workload else replace(spec, workload=slug))
    warnings = [
        f"kernel {kernel}: {len(seen[(kernel, slug)])} different configs give workload "
        f"{slug!r} (one point of several sweeps); each got a -sweep-<parameter> suffix"
        + (
            ", or -h<hash of its parameters> where that still clashed"
            if (kernel, slug) in hashed
            else ""
        )
        for kernel, slug in sorted(clashing)
    ]
    return out, warnings
