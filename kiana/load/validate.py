"""Validation and flattening of documents, in DuckDB SQL, one batch at a time.

Every check is one line of :data:`CHECKS`: a SQL condition that is true when the
document is *wrong*, the JSON path it is about, and a reason a person understands.
The first failing check (in the order of the table) becomes the reject's reason.
Running them as one vectorised ``CASE`` keeps the loader near DuckDB's own JSON
parsing speed: each document is parsed once by ``json_transform`` into a fixed
structure whose leaves are raw JSON, so a wrong type never fails the batch or
widens a column (as ``read_json`` auto-detection would): it fails one check.

The SQL that computes the checked columns and runs the full check lives in
:mod:`kiana.load.columns`; most documents pass through the cheaper fast path of
:mod:`kiana.load.fast` and reach the full check only when they are not clean.

Raw JSON leaves are typed by their first character: ``"`` is a string, a digit,
``-``, ``N`` (NaN) or ``I`` (Infinity) a number.
"""

from __future__ import annotations

from kiana.harness import missing_version_sql, role_key_sql, version_label_sql
from kiana.vocabulary import ROLES

API_VERSION = "kernelindex.dev/v1alpha1"

#: Latencies are stored as BIGINT nanoseconds: anything from here up is rejected
#: (9e18 ns is about 285 years; a larger number is a unit error, not a timing).
MAX_LATENCY_NS = 9_000_000_000_000_000_000
#: The largest document: a JSONL line or a .json file over it is rejected by the readers
#: (:mod:`kiana.load.sources`, :mod:`kiana.load.native`) before any parsing, one element
#: of a .json array over it by :data:`CHECKS`.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


def structure(measurements: str) -> str:
    """The fixed structure each document is parsed into (leaves are raw JSON text), with
    ``measurements`` as the structure of ``run.spec.measurements``."""
    return f"""{{
  "run": {{"apiVersion": "JSON", "kind": "JSON",
    "spec": {{"status": "JSON", "observedAt": "JSON",
      "timing": {{"latencyNs": {{"median": "JSON"}}}},
      "measurements": {measurements},
      "sourceNative": {{"source": "JSON", "metrics": "JSON", "benchmark": "JSON",
                       "externalId": "JSON"}},
      "protocolDigest": "JSON", "workloadDigest": "JSON", "environmentDigest": "JSON",
      "implementationDigest": "JSON"}},
    "metadata": {{"name": "JSON", "title": "JSON", "labels": "JSON"}}}},
  "protocol": "JSON",
  "environment": "JSON"
}}"""


#: The structure of the full check: the measurements as one raw leaf (parsed again only
#: when they are an array).
STRUCTURE = structure('"JSON"')

#: The environment is small: parsed a second time on its own, so that its raw JSON
#: (for the digest-consistency check) and its fields both come cheaply.
ENV_STRUCTURE = """{"apiVersion": "JSON", "kind": "JSON",
  "spec": {"hardware": {"vendor": "JSON", "product": "JSON", "formFactor": "JSON",
                        "architecture": "JSON"}}}"""

#: Containers whose JSON type is checked before their fields (one parse for all).
CONTAINERS = (
    "$.run",
    "$.run.spec",
    "$.run.metadata",
    "$.protocol",
    "$.protocol.spec",
    "$.environment",
    "$.environment.spec",
    "$.environment.spec.hardware",
)


Check = tuple[str, str, str]


def _container(index: int) -> Check:
    path = CONTAINERS[index]
    got = f"coalesce(lower(types[{index + 1}]), 'nothing')"
    return (
        f"types[{index + 1}] IS DISTINCT FROM 'OBJECT'",
        f"'{path}'",
        f"'{path} must be a JSON object (got ' || {got} || ')'",
    )


def _string(expr: str, path: str, *, optional: bool = False) -> Check:
    missing = f"({expr} IS NULL OR {expr} = 'null')"
    wrong = f"'{path} must be a string (got ' || {expr}[:40] || ')'"
    if optional:
        return (f"NOT {missing} AND NOT starts_with({expr}, '\"')", f"'{path}'", wrong)
    return (
        f"{missing} OR NOT starts_with({expr}, '\"')",
        f"'{path}'",
        f"CASE WHEN {missing} THEN '{path} is missing' ELSE {wrong} END",
    )


def _api(column: str, path: str) -> Check:
    return (
        f"{column} IS DISTINCT FROM '{API_VERSION}'",
        f"'{path}'",
        f"CASE WHEN {column} IS NULL THEN '{path} is missing' ELSE 'unknown apiVersion ' || "
        f"{column} || ' (kiana reads {API_VERSION})' END",
    )


def _digest(name: str) -> Check:
    leaf = f"d.run.spec.{name}"
    return (
        f"NOT coalesce(starts_with({leaf}, '\"sha256:'), false)",
        f"'$.run.spec.{name}'",
        f"CASE WHEN {leaf} IS NULL THEN '$.run.spec.{name} is missing' "
        f"ELSE '$.run.spec.{name} must be a \"sha256:...\" string' END",
    )


#: The first characters of a raw JSON leaf that is not a number.
NOT_NUMBER_START = ('"', "{", "[", "t", "f", "n")


def numeric(expr: str) -> str:
    """Whether the raw JSON leaf ``expr`` starts like a number (NULL stays NULL): byte
    tests, not a character slice nor an ``IN`` list (which DuckDB plans as a join)."""
    return "NOT (" + " OR ".join(f"starts_with({expr}, '{c}')" for c in NOT_NUMBER_START) + ")"


#: (wrong-when, JSON path, reason) as SQL expressions, checked in this order.
CHECKS: tuple[Check, ...] = (
    (
        f"doc_bytes > {MAX_DOCUMENT_BYTES}",
        "'$'",
        f"'document is ' || (doc_bytes >> 20) || ' MiB, over the {MAX_DOCUMENT_BYTES >> 20} MiB limit for one document'",
    ),
    (
        "doc_type <> 'OBJECT'",
        "'$'",
        "'a document must be a JSON object (got ' || lower(doc_type) || ')'",
    ),
    _container(0),
    _container(3),
    _container(5),
    _api("api", "$.run.apiVersion"),
    _api("papi", "$.protocol.apiVersion"),
    _api("eapi", "$.environment.apiVersion"),
    (
        "rkind IS DISTINCT FROM 'BenchmarkRun'",
        "'$.run.kind'",
        "'$.run.kind must be BenchmarkRun (got ' || coalesce(rkind, 'nothing') || ')'",
    ),
    _container(1),
    _container(2),
    _container(4),
    _container(6),
    _container(7),
    _string("d.run.spec.status", "$.run.spec.status"),
    _string("d.run.spec.observedAt", "$.run.spec.observedAt"),
    (
        "observed_at IS NULL",
        "'$.run.spec.observedAt'",
        "'$.run.spec.observedAt ' || d.run.spec.observedAt || ' is not an ISO-8601 time'",
    ),
    _string("d.run.spec.sourceNative.benchmark", "$.run.spec.sourceNative.benchmark"),
    (
        "len(bench_parts) <> 2 OR list_contains(bench_parts, '')",
        "'$.run.spec.sourceNative.benchmark'",
        "'benchmark must be <kernel>/<pass> (got ' || benchmark || ')'",
    ),
    _string("d.run.spec.sourceNative.externalId", "$.run.spec.sourceNative.externalId"),
    (
        "len(id_parts) <> 6 OR list_contains(id_parts, '')",
        "'$.run.spec.sourceNative.externalId'",
        "'externalId must be <kernel>/<pass>/<provider>/<gpu>/<workload>/<time> (got ' || external_id || ')'",
    ),
    (
        "id_parts[1] <> bench_parts[1] OR id_parts[2] <> bench_parts[2]",
        "'$.run.spec.sourceNative.externalId'",
        "'externalId names ' || id_parts[1] || '/' || id_parts[2] || ' but benchmark is ' || benchmark",
    ),
    _string("d.run.spec.sourceNative.source", "$.run.spec.sourceNative.source", optional=True),
    (
        "labels_type IS DISTINCT FROM 'OBJECT'",
        "'$.run.metadata.labels'",
        f"'$.run.metadata.labels must be an object holding ' || {version_label_sql('harness')}",
    ),
    (
        "version IS NULL OR trim(version) = ''",
        f"'$.run.metadata.labels.' || {version_label_sql('harness')}",
        missing_version_sql("harness"),
    ),
    (
        "role_raw IS NOT NULL AND role_raw <> 'null' AND coalesce(role_said NOT IN "
        f"({', '.join(repr(r) for r in ROLES)}), true)",
        f"'$.run.metadata.labels.' || {role_key_sql('harness')}",
        f"'$.run.metadata.labels.' || {role_key_sql('harness')} || ' must be "
        f"{' or '.join(ROLES)} (got ' || role_raw[:40] || ')'",
    ),
    _digest("protocolDigest"),
    _digest("workloadDigest"),
    _digest("environmentDigest"),
    _digest("implementationDigest"),
    (
        "family IS NULL",
        "'$.protocol.spec.comparability.family'",
        "'$.protocol.spec.comparability.family is missing: kiana compares only within one family'",
    ),
    _string("env.spec.hardware.vendor", "$.environment.spec.hardware.vendor"),
    _string("env.spec.hardware.product", "$.environment.spec.hardware.product"),
    _string(
        "env.spec.hardware.formFactor", "$.environment.spec.hardware.formFactor", optional=True
    ),
    _string(
        "env.spec.hardware.architecture", "$.environment.spec.hardware.architecture", optional=True
    ),
    (
        "meas_type IS NOT NULL AND meas_type NOT IN ('ARRAY', 'NULL')",
        "'$.run.spec.measurements'",
        "'$.run.spec.measurements must be an array'",
    ),
    (
        "bad_measurement > 0",
        "'$.run.spec.measurements[' || (bad_measurement - 1) || ']'",
        "'each measurement needs a string metric and statistic and a finite number value'",
    ),
    (
        "median_raw IS NOT NULL AND median_raw <> 'null' AND median_val IS NULL",
        "median_path",
        "median_path || ' must be a number (got ' || median_raw[:40] || ')'",
    ),
    (
        "NOT isfinite(median_val)",
        "median_path",
        "median_path || ' must be finite (got ' || median_raw || ')'",
    ),
    (
        "median_val <= 0",
        "median_path",
        "median_path || ' must be positive (got ' || median_raw || ')'",
    ),
    (
        f"metric = 'latency' AND median_val >= {MAX_LATENCY_NS}",
        "median_path",
        f"median_path || ' is too large (got ' || median_raw || '; kiana stores latencies up to {MAX_LATENCY_NS:.0e} ns)'",
    ),
    (
        "metric = 'latency' AND median_val <> round(median_val)",
        "median_path",
        "'the median latency must be a whole number of nanoseconds (got ' || median_raw || ')'",
    ),
    (
        "median_val IS NULL AND status = 'passed'",
        "'$.run.spec.timing.latencyNs.median'",
        "'a passed run needs a median: $.run.spec.timing.latencyNs.median is missing'",
    ),
    (
        "p20 <= 0 OR NOT isfinite(p20)",
        "'$.run.spec.measurements'",
        "'p20 must be a positive finite number (got ' || p20 || ')'",
    ),
    (
        "p80 <= 0 OR NOT isfinite(p80)",
        "'$.run.spec.measurements'",
        "'p80 must be a positive finite number (got ' || p80 || ')'",
    ),
    (
        f"metric = 'latency' AND greatest(p20, p80) >= {MAX_LATENCY_NS}",
        "'$.run.spec.measurements'",
        f"'p20/p80 is too large (got ' || greatest(p20, p80) || '; kiana stores latencies up to {MAX_LATENCY_NS:.0e} ns)'",
    ),
    (
        "p20 > median_val",
        "'$.run.spec.measurements'",
        "'p20 (' || p20 || ') is above the median (' || median_val || ')'",
    ),
    (
        "median_val > p80",
        "'$.run.spec.measurements'",
        "'the median (' || median_val || ') is above p80 (' || p80 || ')'",
    ),
)


def _first_failing(part: int) -> str:
    whens = "\n".join(f"    WHEN coalesce({c[0]}, false) THEN {c[part]}" for c in CHECKS)
    return f"CASE\n{whens}\n  END"


#: The JSON path and the reason of a document's first failing check (NULL: none fails).
REJECT_PATH = _first_failing(1)
REJECT_REASON = _first_failing(2)
