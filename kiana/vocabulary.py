"""kiana's words, each defined once: verdicts, roles, noise sources, the keys of a
series, a session and a finding, the partition recipe and the GPU label.

Every other module imports these; none writes its own copy.  This module imports
nothing of kiana's and no third-party package at import time (the CLI imports it
while starting), so anything may depend on it.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from collections.abc import Mapping

    import polars as pl

# --------------------------------------------------------------------------- verdicts

Verdict = Literal["regression", "improvement", "unchanged", "inconclusive", "drift"]
#: Every verdict, in the order a maintainer reads them: what needs action first.
VERDICTS: tuple[Verdict, ...] = ("regression", "improvement", "drift", "inconclusive", "unchanged")
#: Verdicts that say "something moved" (beyond the noise and the threshold).
FLAGGED: tuple[Verdict, ...] = ("regression", "improvement", "drift")
#: Verdicts ``--fail-on`` accepts.
FAILABLE: tuple[Verdict, ...] = ("regression", "improvement", "drift", "inconclusive")
assert set(VERDICTS) == set(get_args(Verdict))
#: The basis of a finding between two sessions that are not consecutive, across one too
#: noisy to place a change in (kiana.stats.bridges): it has no step of its own.
BRIDGE = "bridge"


#: The basis of a finding that moved with every untouched kernel of its provider
#: between the same sittings (kiana.stats.toolchain): ``drift``.
TOOLCHAIN = "toolchain"
#: The basis of a finding, and the ``quality`` kind, of a series that alternates between
#: levels across sessions without a change of its code (kiana.stats.unstable): its
#: findings are ``inconclusive``, "could not judge".
UNSTABLE = "unstable"
#: The kinds of ``Judgement.quality`` rows: sessions or series not judged, and why.
QualityKind = Literal["conflict", "outlier", "rerun", "unstable"]
QUALITY_KINDS: tuple[QualityKind, ...] = get_args(QualityKind)


def is_unstable(finding: Mapping[str, Any]) -> bool:
    """Whether a finding (a row as a mapping) is of an unstable series (:data:`UNSTABLE`)."""
    return finding.get("basis") == UNSTABLE


def is_bridge(finding: Mapping[str, Any]) -> bool:
    """Whether a finding (a row as a mapping) is a bridge (:data:`BRIDGE`)."""
    return finding.get("basis") == BRIDGE


def verdict_rank(column: str = "verdict") -> pl.Expr:
    """Rank of a verdict column in :data:`VERDICTS` order (0 = regression)."""
    import polars as pl

    return pl.col(column).replace_strict(
        {v: i for i, v in enumerate(VERDICTS)}, default=len(VERDICTS), return_dtype=pl.Int8
    )


# --------------------------------------------------------------------------- roles

#: A provider's role in a run: ``subject``, the code under test, or ``baseline``, the
#: code it is measured beside.  The loader decides it by the run's harness profile
#: (:mod:`kiana.harness`) and stores it in ``runs.role``; nothing else reads names.
Role = Literal["subject", "baseline"]
ROLES: tuple[Role, ...] = get_args(Role)


def subject_expr(column: str = "role") -> pl.Expr:
    """Whether a ``role`` column says ``subject``, as a polars expression."""
    import polars as pl

    return pl.col(column) == "subject"


# --------------------------------------------------------------------------- noise

#: What a step's measured noise (the part inside one session) comes from, best first:
#: ``spread`` (the runs' p20-p80), ``replicates`` (several runs of the session),
#: ``exact`` (memory with p20 = p80: deterministic), ``single`` (a latency run with
#: p20 = median = p80: ``do_bench`` took one sample, nothing was measured), ``none``
#: (nothing measured and calibration off).  The session-to-session part comes from the
#: calibration (:mod:`kiana.stats.calibration`) whatever the source.
NoiseSource = Literal["spread", "replicates", "exact", "single", "none"]
#: From best to worst: a step's noise source is the worse of its two sides.
NOISE_SOURCES: tuple[NoiseSource, ...] = get_args(NoiseSource)


def source_rank(column: str) -> pl.Expr:
    """Rank of a noise-source column in :data:`NOISE_SOURCES` (0 = best)."""
    import polars as pl

    return pl.col(column).replace_strict(
        {s: i for i, s in enumerate(NOISE_SOURCES)},
        default=len(NOISE_SOURCES) - 1,
        return_dtype=pl.Int8,
    )


# --------------------------------------------------------------------------- keys

#: The columns that identify a series: one provider in one partition, one metric.
SERIES_KEYS: tuple[str, ...] = ("partition_id", "provider", "metric")
#: Descriptive columns carried along with every series.
SERIES_LABELS: tuple[str, ...] = ("kernel", "pass", "gpu", "workload")
#: The runs-table columns the statistics read (kiana.stats.judge, kiana.load.judged).
JUDGED_COLUMNS: tuple[str, ...] = (
    *SERIES_KEYS,
    *SERIES_LABELS,
    "harness",
    "version",
    "role",
    "observed_at",
    "status",
    "median",
    "p20",
    "p80",
)
#: A benchmark session is found among the runs of one kernel, pass, GPU, metric, version
#: label and harness (every provider and workload of the sweep): see kiana.stats.sessions.
SESSION_SCOPE: tuple[str, ...] = ("kernel", "pass", "gpu", "metric", "version", "harness")
#: A finding: one kernel, pass, provider, GPU and metric between two sessions.
FINDING_KEYS: tuple[str, ...] = (
    "kernel",
    "pass",
    "provider",
    "gpu",
    "metric",
    "from_version",
    "to_version",
    "from_session",
    "to_session",
)

# --------------------------------------------------------------------------- partitions

#: What must be equal for two runs to be compared (kiana.group).
PARTITION_FIELDS: tuple[str, ...] = ("family", "kernel", "pass", "workload", "gpu")
#: Version of the partition-id recipe; part of every id.
PARTITION_RECIPE = "v1"


def partition_id(family: str, kernel: str, pass_: str, workload: str, gpu: str) -> str:
    """The partition id: 16 hex digits of the sha256 of the recipe and the fields,
    joined by the unit separator (U+001F)."""
    text = "\x1f".join([PARTITION_RECIPE, family, kernel, pass_, workload, gpu])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def partition_id_sql(gpu: str = "gpu") -> str:
    """:func:`partition_id` as a DuckDB expression over columns of the same names
    (``gpu``: the SQL expression of the GPU label)."""
    return (
        f"left(sha256(concat_ws(chr(31), '{PARTITION_RECIPE}', family, kernel, \"pass\", "
        f"workload, {gpu})), 16)"
    )


def gpu_label(vendor: str, product: str, form_factor: str | None) -> str:
    """``NVIDIA H100`` + ``80GB HBM3`` -> ``NVIDIA H100 80GB HBM3``; the vendor is
    prefixed only when the product does not already start with it.  Exactly what
    :data:`GPU_LABEL_SQL` computes (the loader stores that), whitespace included."""
    base = product if product.lower().startswith(vendor.lower()) else f"{vendor} {product}"
    return f"{base} {form_factor}" if form_factor else base


#: :func:`gpu_label` as a DuckDB expression over ``vendor``, ``product``, ``form_factor``.
GPU_LABEL_SQL = (
    "CASE WHEN starts_with(lower(product), lower(vendor)) THEN product "
    "ELSE vendor || ' ' || product END "
    "|| CASE WHEN coalesce(form_factor, '') <> '' THEN ' ' || form_factor ELSE '' END"
)
