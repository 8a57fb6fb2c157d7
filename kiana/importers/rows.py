"""One Liger CSV row -> the :class:`kiana.documents.RunSpec` of its document.

What each column becomes is told in :mod:`kiana.importers.liger` ("Column by column");
the workload slug in :mod:`kiana.importers.workloads`; GPU names in
:mod:`kiana.importers.gpus`.  A row that cannot become a document raises
:class:`LigerRowError` (file, line, column, reason), which the importer turns into a
:class:`Skipped` row.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from kiana.documents import Metric, RunSpec, build_document
from kiana.errors import KianaError
from kiana.importers.gpus import parse_gpu
from kiana.importers.workloads import workload_params, workload_slug
from kiana.safe import excerpt, terminal

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


def kernel_title(kernel: str) -> str:
    """Display title: :data:`KERNEL_TITLES`, else ``fused_foo_bar`` -> ``Fused foo bar``."""
    return KERNEL_TITLES.get(kernel) or kernel.replace("_", " ").capitalize()


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


# ----------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Skipped:
    """A row that did not become a document, and why."""

    source: str
    line: int
    column: str | None
    reason: str

    def __str__(self) -> str:
        """The message, one inert line (file names and cells come from the data)."""
        return terminal(LigerRowError(self.source, self.line, self.column, self.reason).message)


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
    #: The provider the file wrote, when :func:`kiana.importers.liger.read_rows` renamed
    #: it (``liger`` in a per-backend file, see ``kernel_provider`` there).
    renamed_from: str | None = None

    @property
    def labels(self) -> dict[str, str]:
        """The provenance labels of the row's document (``liger_csv``, ``liger_commit``:
        see :mod:`kiana.importers.liger`)."""
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


#: The largest quantile a row may carry (ms or MB): 1e9 ms is 11.6 days, 1e9 MB a
#: petabyte.  Beyond it a number is a typo or an attack (``1e308`` overflows the
#: nanosecond columns), not a measurement.
MAX_VALUE = Decimal("1e9")
#: The timestamps a row may carry: [1970-01-01, 2100-01-01).  ``9999-12-31`` or
#: ``0001-01-01`` would overflow the date arithmetic of sessions and culprit windows.
TIME_RANGE = (datetime(1970, 1, 1), datetime(2100, 1, 1))
#: How deep a benchmark config may nest (Liger's are flat).
MAX_CONFIG_DEPTH = 16


#: Identity cells read in one spelling: lower case, inner whitespace one space.  Liger
#: writes them so (every row of its real CSVs); ``Forward`` or ``Liger `` in a pull
#: request's rows would otherwise start a series of its own and be compared with nothing.
IDENTITY_CELLS: tuple[str, ...] = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
)
_UNITS = {"ms": "ms", "mb": "MB"}


def normalise(cells: dict[str, str]) -> dict[str, str]:
    """``cells`` with the identity cells in Liger's spelling (:data:`IDENTITY_CELLS`
    lower-cased, units ``ms``/``MB`` in any case, GPU names with single spaces); every
    other cell as written.  The swept value ``1024.0`` reads as ``1024``
    (:func:`kiana.importers.workloads.parse_scalar`).

    >>> normalise({"kernel_operation_mode": " Forward ", "metric_unit": "MS"})
    {'kernel_operation_mode': 'forward', 'metric_unit': 'ms'}
    """
    out = dict(cells)
    for column in IDENTITY_CELLS:
        if column in out:
            out[column] = " ".join(out[column].split()).lower()
    if "metric_unit" in out:
        unit = out["metric_unit"].strip()
        out["metric_unit"] = _UNITS.get(unit.lower(), unit)
    if "gpu_name" in out:
        out["gpu_name"] = " ".join(out["gpu_name"].split())
    return out


def _decimal(row: Row, column: str) -> Decimal:
    text = row.cells[column].strip()
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise LigerRowError(
            row.source, row.line, column, f"not a number: {excerpt(text)}"
        ) from None
    if not value.is_finite():
        raise LigerRowError(row.source, row.line, column, f"not a finite number: {excerpt(text)}")
    if value < 0:
        raise LigerRowError(row.source, row.line, column, f"negative value: {excerpt(text)}")
    if value > MAX_VALUE:
        raise LigerRowError(
            row.source, row.line, column, f"out of range (above 1e9): {excerpt(text)}"
        )
    return value


def _ns(value: Decimal) -> int:
    return int((value * 1_000_000).to_integral_value(rounding=ROUND_HALF_EVEN))


def _timestamp(row: Row) -> datetime:
    text = row.cells["timestamp"].strip()
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
        if not TIME_RANGE[0] <= parsed < TIME_RANGE[1]:
            raise LigerRowError(
                row.source, row.line, "timestamp", f"out of range (1970-2099): {excerpt(text)}"
            )
        return parsed
    raise LigerRowError(
        row.source,
        row.line,
        "timestamp",
        f"not a timestamp 'YYYY-MM-DD HH:MM:SS': {excerpt(text)}",
    )


def _depth(value: Any) -> int:
    """How deep ``value`` nests (iteratively: a hostile config must not recurse)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_CONFIG_DEPTH:
            break
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")  # NaN, Infinity, -Infinity only


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a number past float range")
    return value


def _config(row: Row, text: str) -> dict[str, Any]:
    column = "extra_benchmark_config_str"
    try:
        config = json.loads(text, parse_constant=_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise LigerRowError(
            row.source, row.line, column, f"not JSON: {exc.msg} at {exc.pos}"
        ) from None
    except ValueError as exc:  # NaN, Infinity, past float range, too many digits
        why = "an integer of too many digits" if "digits" in str(exc) else str(exc)
        raise LigerRowError(row.source, row.line, column, f"not a JSON number: {why}") from None
    except RecursionError:
        raise LigerRowError(row.source, row.line, column, "JSON nested too deeply") from None
    if not isinstance(config, dict):
        raise LigerRowError(row.source, row.line, column, "not a JSON object")
    if _depth(config) > MAX_CONFIG_DEPTH:
        raise LigerRowError(
            row.source, row.line, column, f"JSON nested deeper than {MAX_CONFIG_DEPTH} levels"
        )
    return config


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
            row.source,
            row.line,
            "metric_name",
            f"unknown metric {excerpt(metric_name)} (speed|memory)",
        )
    unit, metric = METRICS[metric_name]
    if values["metric_unit"] != unit:
        raise LigerRowError(
            row.source,
            row.line,
            "metric_unit",
            f"{metric_name} rows must be in {unit}, found {excerpt(values['metric_unit'])}",
        )
    config = _config(row, values["extra_benchmark_config_str"])
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
        version=values["liger_version"],
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
