"""Liger-Kernel benchmark CSVs -> kernelindex.dev/v1alpha1 documents.

Liger-Kernel keeps its results in ``benchmark/data/*.csv`` (see ``../shared/FORMAT.md``,
"The Liger CSV").  Each row becomes one document, written by
:func:`kiana.documents.build_document`, so it has exactly the seeds' shape.

Column by column
================
``kernel_name``
    ``RunSpec.kernel``; the display title (``LayerNorm``, ``Fused linear + CPO loss``)
    comes from :data:`KERNEL_TITLES` (unknown kernels: the name, words capitalised).
``kernel_provider``
    ``RunSpec.provider`` (third segment of ``externalId``, middle of the title).  One
    rule renames: Liger writes one CSV per backend, ``all_benchmark_data_<backend>.csv``
    (``all_benchmark_data_cutile.csv``; ``all_benchmark_data.csv`` is Triton's), and some
    versions of a per-backend file name the backend's own rows plain ``liger``, like the
    Triton rows of ``all_benchmark_data.csv``.  So in a per-backend file (backend taken
    from the file name, see :func:`csv_backend`) a provider of exactly ``liger`` becomes
    ``liger_<backend>`` (``liger_cutile``), and the import warns once per file.  Every
    other provider keeps its name (``liger_triton`` rows of two backend files are the
    same Triton code and stay comparable; ``torch``, ``liger_cutile``, ... unchanged).
``kernel_operation_mode``
    the timed pass (``forward``, ``backward``, ``full``, ``no-grad-forward``, ...).
``metric_name`` / ``metric_unit``
    ``speed``/``ms`` -> a latency document (``timing.latencyNs.median`` and ``p20``/``p80``
    measurements in integer ns, round half to even, computed exactly from the decimal
    text); ``memory``/``MB`` -> a memory document (``p20``, ``median``, ``p80`` in MB,
    no ``timing``).  Any other pair is rejected.
``y_value_20`` / ``y_value_50`` / ``y_value_80``
    the quantiles; ``sourceNative.metrics`` keeps the harness's own floats
    (``ms_20``/``ms_50``/``ms_80`` or ``mb_20``/``mb_50``/``mb_80``).  Non-finite or
    negative values are rejected.
``x_name`` / ``x_value`` / ``extra_benchmark_config_str``
    the workload: the JSON config with the swept parameter ``x_name = x_value`` put in
    (it replaces a ``null`` placeholder of the same name).  The workload slug follows
    :func:`workload_slug`; the full parameter dict goes to the workload digest.
``x_label``
    a display label of the swept parameter only (``hidden size``); not carried.
``gpu_name``
    :func:`parse_gpu` -> :class:`kiana.documents.Gpu` (vendor, product, form factor,
    architecture).
``timestamp``
    ``observedAt`` (``2024-09-03 15:31:39`` -> ``2024-09-03T15:31:39.000Z``; taken as UTC).
``liger_version``
    ``run.metadata.labels.liger_version``.

Beside it, two provenance labels say where the row was recorded (later stages tell
benchmark sessions apart by them: one file at one commit):

``liger_csv``
    the CSV as Liger names it: ``benchmark/data/<name>.csv`` (its path in the repository)
    for git imports, the file's base name for CSV files given on the command line (never
    an absolute path: a run's id is the sha256 of its document, so one file imported from
    two folders must give identical documents).
``liger_commit``
    git imports only: the full sha of the commit whose version of the file holds the row,
    the first commit where that row's content appeared (rows are deduplicated keeping the
    oldest).

The workload slug rule
======================
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
6. Backstop: within one import, if two different parameter sets of one kernel still
   produced the same slug (only possible with exotic text values), every one of them
   gets ``-h`` + 8 hex digits of the sha256 of its full parameters, and the import
   reports a warning.  Nothing is ever merged silently.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from kiana.documents import Gpu, Metric, RunSpec, build_document, canonical_json, slugify
from kiana.errors import InputError, KianaError
from kiana.vocabulary import LIGER, LIGER_PREFIX

COLUMNS: tuple[str, ...] = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)

LigerMetric = Literal["speed", "memory"]

#: Provenance labels (``run.metadata.labels``) of every imported document.
LABEL_CSV = "liger_csv"
LABEL_COMMIT = "liger_commit"

#: metric_name -> (metric_unit it must carry, kiana metric)
METRICS: dict[str, tuple[str, Metric]] = {"speed": ("ms", "latency"), "memory": ("MB", "memory")}

#: Display titles of every kernel in Liger's benchmark CSVs.
KERNEL_TITLES: dict[str, str] = {
    "cross_entropy": "Cross entropy",
    "distill_cosine_loss": "Distillation cosine loss",
    "distill_jsd_loss": "Distillation JSD loss",
    "dyt": "DyT",
    "embedding": "Embedding",
    "fused_add_rms_norm": "Fused add + RMSNorm",
    "fused_linear_cpo_loss": "Fused linear + CPO loss",
    "fused_linear_cross_entropy": "Fused linear + cross entropy",
    "fused_linear_dpo_loss": "Fused linear + DPO loss",
    "fused_linear_grpo_loss": "Fused linear + GRPO loss",
    "fused_linear_grpo_loss_sequence": "Fused linear + GRPO loss (sequence level)",
    "fused_linear_grpo_loss_token": "Fused linear + GRPO loss (token level)",
    "fused_linear_jsd": "Fused linear + JSD",
    "fused_linear_orpo_loss": "Fused linear + ORPO loss",
    "fused_linear_simpo_loss": "Fused linear + SimPO loss",
    "fused_moe": "Fused MoE",
    "fused_neighborhood_attention": "Fused neighborhood attention",
    "geglu": "GEGLU",
    "group_norm": "GroupNorm",
    "jsd": "JSD",
    "kl_div": "KL divergence",
    "kto_loss": "KTO loss",
    "layer_norm": "LayerNorm",
    "llama4_rope": "Llama 4 RoPE",
    "megatron_cross_entropy": "Megatron cross entropy",
    "megatron_rms_norm": "Megatron RMSNorm",
    "megatron_swiglu": "Megatron SwiGLU",
    "multi_token_attention": "Multi-token attention",
    "poly_norm": "PolyNorm",
    "qwen2vl_mrope": "Qwen2-VL M-RoPE",
    "relu_squared": "Squared ReLU",
    "rms_norm": "RMSNorm",
    "rope": "RoPE",
    "softmax": "Softmax",
    "sparse_multi_token_attention": "Sparse multi-token attention",
    "sparsemax": "Sparsemax",
    "swiglu": "SwiGLU",
    "tiled_geglu": "Tiled GEGLU",
    "tiled_swiglu": "Tiled SwiGLU",
    "tvd": "TVD",
}

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


# ----------------------------------------------------------------------------- errors


class LigerRowError(KianaError):
    """One CSV row cannot become a document."""

    def __init__(self, source: str, line: int, column: str | None, reason: str) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.reason = reason
        where = f"{source}:{line}"
        if column is not None:
            index = COLUMNS.index(column) + 1 if column in COLUMNS else None
            where += f", column {index} ({column})" if index else f", column {column}"
        super().__init__(
            f"{where}: {reason}",
            hint="fix or delete the row; the other rows import regardless",
        )


# ----------------------------------------------------------------------------- GPUs

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


def kernel_title(kernel: str) -> str:
    """Display title: :data:`KERNEL_TITLES`, else ``fused_foo_bar`` -> ``Fused foo bar``."""
    return KERNEL_TITLES.get(kernel) or kernel.replace("_", " ").capitalize()


# ----------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    slug: str
    params: dict[str, Any]


def parse_scalar(text: str) -> int | float | str:
    """``x_value`` text -> int, else finite float, else the text itself."""
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        pass
    try:
        number = float(stripped)
    except ValueError:
        return stripped
    return number if math.isfinite(number) else stripped


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
    wanted: dict[str, str] = {k: PART_NAMES.get(k) or _key_name(k) for k in kept}
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


def _key_name(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower()) or "param"


def params_hash(params: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(dict(params)).encode()).hexdigest()[:8]


# ----------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Skipped:
    """A row that did not become a document, and why."""

    source: str
    line: int
    column: str | None
    reason: str

    def __str__(self) -> str:
        return str(LigerRowError(self.source, self.line, self.column, self.reason).message)


@dataclass(frozen=True)
class Row:
    """One CSV record: its cells by column name, and where it came from."""

    cells: dict[str, str]
    source: str
    line: int
    #: The file as Liger names it (``benchmark/data/<name>.csv`` in git, the base name
    #: of a file on disk); None when the caller did not say.
    csv: str | None = None
    #: The full sha of the commit whose version of the file holds the row (git imports).
    commit: str | None = None
    #: The provider the file wrote, when :func:`read_rows` renamed it (``liger`` in a
    #: per-backend file, see the module docstring).
    renamed_from: str | None = None

    @property
    def labels(self) -> dict[str, str]:
        """The provenance labels of the row's document (module docstring)."""
        labels: dict[str, str] = {}
        if self.csv is not None:
            labels[LABEL_CSV] = self.csv
        if self.commit is not None:
            labels[LABEL_COMMIT] = self.commit
        return labels

    @property
    def key(self) -> tuple[tuple[str, str], ...]:
        """The row's full content, independent of column order (dedupe key)."""
        return tuple(sorted(self.cells.items()))


def _decimal(row: Row, column: str) -> Decimal:
    text = row.cells[column].strip()
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise LigerRowError(row.source, row.line, column, f"not a number: {text!r}") from None
    if not value.is_finite():
        raise LigerRowError(row.source, row.line, column, f"not a finite number: {text!r}")
    if value < 0:
        raise LigerRowError(row.source, row.line, column, f"negative value: {text!r}")
    return value


def _ns(value: Decimal) -> int:
    return int((value * 1_000_000).to_integral_value(rounding=ROUND_HALF_EVEN))


def _timestamp(row: Row) -> datetime:
    text = row.cells["timestamp"].strip()
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise LigerRowError(
        row.source, row.line, "timestamp", f"not a timestamp 'YYYY-MM-DD HH:MM:SS': {text!r}"
    )


def _required(row: Row, column: str) -> str:
    value = row.cells.get(column)
    if value is None:
        raise LigerRowError(row.source, row.line, column, "missing column")
    if not value.strip():
        raise LigerRowError(row.source, row.line, column, "empty value")
    return value.strip()


def row_spec(row: Row) -> RunSpec:
    """One CSV row -> the :class:`RunSpec` of its document; raises :class:`LigerRowError`."""
    values = {column: _required(row, column) for column in COLUMNS if column != "x_label"}
    metric_name = values["metric_name"]
    if metric_name not in METRICS:
        raise LigerRowError(
            row.source, row.line, "metric_name", f"unknown metric {metric_name!r} (speed|memory)"
        )
    unit, metric = METRICS[metric_name]
    if values["metric_unit"] != unit:
        raise LigerRowError(
            row.source,
            row.line,
            "metric_unit",
            f"{metric_name} rows must be in {unit}, found {values['metric_unit']!r}",
        )
    try:
        config = json.loads(values["extra_benchmark_config_str"])
    except json.JSONDecodeError as exc:
        raise LigerRowError(
            row.source, row.line, "extra_benchmark_config_str", f"not JSON: {exc}"
        ) from None
    if not isinstance(config, dict):
        raise LigerRowError(row.source, row.line, "extra_benchmark_config_str", "not a JSON object")
    q20, q50, q80 = (_decimal(row, f"y_value_{q}") for q in (20, 50, 80))
    params = workload_params(values["x_name"], values["x_value"], config)
    if metric == "latency":
        median, p20, p80 = (float(_ns(q)) for q in (q50, q20, q80))
        native = {"ms_20": float(q20), "ms_50": float(q50), "ms_80": float(q80)}
    else:
        median, p20, p80 = float(q50), float(q20), float(q80)
        native = {"mb_20": p20, "mb_50": median, "mb_80": p80}
    kernel = values["kernel_name"]
    return RunSpec(
        kernel=kernel,
        kernel_title=kernel_title(kernel),
        pass_=values["kernel_operation_mode"],
        provider=values["kernel_provider"],
        gpu=parse_gpu(values["gpu_name"]),
        workload=workload_slug(values["x_name"], params),
        observed_at=_timestamp(row),
        liger_version=values["liger_version"],
        median=median,
        p20=p20,
        p80=p80,
        metric=metric,
        workload_params=params,
        native_metrics=native,
        labels=row.labels,
    )


def row_document(row: Row) -> dict[str, Any]:
    return build_document(row_spec(row))


# ----------------------------------------------------------------------------- CSV files

#: Liger's per-backend CSVs: ``all_benchmark_data_<backend>.csv``.
_PER_BACKEND = re.compile(r"^all_benchmark_data_(?P<backend>[A-Za-z0-9_]+)\.csv$")


def csv_backend(csv_name: str) -> str | None:
    """The backend a per-backend CSV is named after (``.../all_benchmark_data_cutile.csv``
    -> ``cutile``); None for ``all_benchmark_data.csv`` (Triton) and any other name."""
    match = _PER_BACKEND.match(csv_name.replace("\\", "/").rsplit("/", 1)[-1])
    return match["backend"] if match else None


def read_rows(
    text: str,
    source: str,
    *,
    csv_name: str | None = None,
    commit: str | None = None,
    defaults: Mapping[str, str] | None = None,
) -> Iterator[Row | Skipped]:
    """Records of one CSV text.  ``line`` is the 1-based line a record starts on.

    ``csv_name`` is the file as Liger names it (``benchmark/data/<name>.csv``, or a base
    name), each row's ``liger_csv`` label; in a per-backend file a provider of exactly
    ``liger`` becomes ``liger_<backend>`` (module docstring, ``kernel_provider``).
    ``commit`` (git imports) is each row's ``liger_commit`` label.  ``defaults`` fills
    columns the file lacks (the git importer passes the release version for CSVs written
    before Liger recorded ``liger_version``).
    """
    backend = csv_backend(csv_name) if csv_name is not None else None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        yield Skipped(source, 1, None, f"unreadable CSV header: {exc}")
        return
    header = [h.strip() for h in header]
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield Skipped(source, start, None, f"unreadable CSV record: {exc}")
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            yield Skipped(source, line, None, f"expected {len(header)} fields, found {len(cells)}")
            continue
        record = dict(defaults or {})
        record.update(zip(header, cells, strict=True))
        renamed_from = None
        provider = record.get("kernel_provider")
        if backend is not None and provider is not None and provider.strip() == LIGER:
            renamed_from = provider
            record["kernel_provider"] = f"{LIGER_PREFIX}{backend}"
        yield Row(record, source, line, csv=csv_name, commit=commit, renamed_from=renamed_from)


@dataclass(frozen=True)
class ImportResult:
    """Documents made from Liger rows, and every row that did not make one."""

    documents: tuple[dict[str, Any], ...]
    rows_read: int
    skipped: tuple[Skipped, ...] = ()
    warnings: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default=())

    @property
    def by_metric(self) -> dict[str, int]:
        counts = Counter(doc["run"]["spec"]["measurements"][0]["metric"] for doc in self.documents)
        return dict(sorted(counts.items()))

    @property
    def skipped_by_reason(self) -> dict[str, int]:
        counts = Counter(_reason_kind(s) for s in self.skipped)
        return dict(counts.most_common())


def _reason_kind(skipped: Skipped) -> str:
    reason = re.sub(r"'[^']*'|\d+", "…", skipped.reason.split(":")[0])
    return f"{skipped.column}: {reason}" if skipped.column else reason


def convert_rows(rows: Iterable[Row | Skipped], *, sources: Sequence[str] = ()) -> ImportResult:
    """Rows -> documents, with the slug-collision backstop (rule 6) over all of them."""
    converted: list[tuple[RunSpec, str]] = []
    skipped: list[Skipped] = []
    renamed: Counter[tuple[str, str]] = Counter()
    read = 0
    for item in rows:
        read += 1
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        if item.renamed_from is not None:
            renamed[(item.csv or item.source, item.cells["kernel_provider"])] += 1
        try:
            spec = row_spec(item)
        except LigerRowError as exc:
            skipped.append(Skipped(exc.source, exc.line, exc.column, exc.reason))
            continue
        x_name = item.cells["x_name"].strip()
        converted.append((spec, PART_NAMES.get(x_name) or _key_name(x_name)))
    warnings = [
        f"{csv}: {count} row(s) of provider {LIGER!r} imported as {provider!r} (in a "
        f"per-backend CSV the plain name is that backend's code, not Triton's)"
        for (csv, provider), count in sorted(renamed.items())
    ]
    specs, collisions = _separate_collisions(converted)
    warnings += collisions
    unknown = sorted({s.gpu.name for s in specs if not gpu_is_known(s.gpu)})
    warnings += [f"unknown GPU {name!r}: architecture recorded as 'unknown'" for name in unknown]
    return ImportResult(
        documents=tuple(build_document(s) for s in specs),
        rows_read=read,
        skipped=tuple(skipped),
        warnings=tuple(warnings),
        sources=tuple(sources),
    )


def _separate_collisions(
    converted: list[tuple[RunSpec, str]],
) -> tuple[list[RunSpec], list[str]]:
    """Rule 6: configs of one kernel that share a slug get ``-sweep-<x part>`` (the
    swept parameter tells apart one point shared by two sweeps), or ``-h<hash>`` when
    even that does not separate them."""

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
    for spec, slug in swept:
        if len(still[(spec.kernel, slug)]) > 1:
            slug = f"{spec.workload}-h{params_hash(spec.workload_params)}"
        out.append(spec if slug == spec.workload else replace(spec, workload=slug))
    warnings = [
        f"kernel {kernel}: {len(seen[(kernel, slug)])} different configs give workload "
        f"{slug!r} (one point of several sweeps); each got a -sweep-<parameter> suffix"
        for kernel, slug in sorted(clashing)
    ]
    return out, warnings


def read_csv_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file", hint="pass Liger CSVs, e.g. benchmark/data/*.csv"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{path}: cannot read: {exc}", hint="pass UTF-8 CSV files written by Liger"
        ) from None


def import_csvs(paths: Sequence[Path]) -> ImportResult:
    """Every row of the given CSV files -> documents (or skipped, with a reason)."""

    def rows() -> Iterator[Row | Skipped]:
        for path in paths:
            yield from read_rows(read_csv_file(path), str(path), csv_name=path.name)

    return convert_rows(rows(), sources=[str(p) for p in paths])
