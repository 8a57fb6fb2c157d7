"""Validation and flattening of documents, in DuckDB SQL, one batch at a time.

Every check is one line of :data:`CHECKS`: a SQL condition that is true when the
document is *wrong*, the JSON path it is about, and a reason a person understands.
The first failing check (in the order of the table) becomes the reject's reason.
Running them as one vectorised ``CASE`` keeps the loader near DuckDB's own JSON
parsing speed: each document is parsed once by ``json_transform`` into a fixed
structure whose leaves are raw JSON, so a wrong type never fails the batch or
widens a column (as ``read_json`` auto-detection would): it fails one check.

Raw JSON leaves are typed by their first character: ``"`` is a string, a digit,
``-``, ``N`` (NaN) or ``I`` (Infinity) a number.
"""

from __future__ import annotations

API_VERSION = "kernelindex.dev/v1alpha1"

#: Latencies are stored as BIGINT nanoseconds: anything from here up is rejected
#: (9e18 ns is about 285 years; a larger number is a unit error, not a timing).
MAX_LATENCY_NS = 9_000_000_000_000_000_000
#: One document (a JSONL line, a .json file, or one element of a .json array).
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024

#: The fixed structure each document is parsed into (leaves are raw JSON text).
STRUCTURE = """{
  "run": {"apiVersion": "JSON", "kind": "JSON",
    "spec": {"status": "JSON", "observedAt": "JSON",
      "timing": {"latencyNs": {"median": "JSON"}},
      "measurements": "JSON",
      "sourceNative": {"source": "JSON", "metrics": "JSON", "benchmark": "JSON",
                       "externalId": "JSON"},
      "protocolDigest": "JSON", "workloadDigest": "JSON", "environmentDigest": "JSON",
      "implementationDigest": "JSON"},
    "metadata": {"name": "JSON", "title": "JSON", "labels": "JSON"}},
  "protocol": "JSON",
  "environment": "JSON"
}"""

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
        return (f"NOT {missing} AND left({expr}, 1) <> '\"'", f"'{path}'", wrong)
    return (
        f"{missing} OR left({expr}, 1) <> '\"'",
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


_NUMBER_START = "('\"', '{', '[', 't', 'f', 'n')"

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
    (
        "labels_type IS DISTINCT FROM 'OBJECT'",
        "'$.run.metadata.labels'",
        "'$.run.metadata.labels must be an object holding liger_version'",
    ),
    (
        "liger_version IS NULL OR trim(liger_version) = ''",
        "'$.run.metadata.labels.liger_version'",
        "'$.run.metadata.labels.liger_version is missing or not a string: every run needs its Liger release'",
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


def _case(part: int) -> str:
    whens = "\n".join(f"    WHEN coalesce({c[0]}, false) THEN {c[part]}" for c in CHECKS)
    return f"CASE\n{whens}\n  END"


def _j(expr: str) -> str:
    """A raw JSON string leaf -> its text, or NULL when it is not a string."""
    return f"CASE WHEN left({expr}, 1) = '\"' THEN json_extract_string({expr}, '$') END"


#: Stage 1: raw records -> one row per candidate document (arrays expanded).
ITEMS_SQL = """
CREATE OR REPLACE TEMP TABLE _items AS
WITH b AS (
    SELECT rec, source, line, text, problem,
           CASE WHEN problem IS NULL AND json_valid(text) THEN json(text) END AS j
    FROM _batch
)
SELECT rec, 0 AS item, source, line, NULL AS item_index, j AS doc,
       CASE WHEN problem IS NOT NULL THEN problem
            WHEN j IS NULL THEN 'invalid JSON'
            WHEN json_type(j) = 'ARRAY' AND json_array_length(j) = 0
                THEN 'empty array: no document in it' END AS problem,
       CASE WHEN problem IS NULL AND j IS NULL THEN text[:200] END AS excerpt
FROM b WHERE j IS NULL OR json_type(j) <> 'ARRAY' OR json_array_length(j) = 0
UNION ALL
SELECT rec, unnest(range(json_array_length(j)::BIGINT)) AS item, source, line,
       unnest(range(json_array_length(j)::BIGINT)) AS item_index,
       unnest(json_extract(j, '$[*]')) AS doc, NULL, NULL
FROM b WHERE json_type(j) = 'ARRAY' AND json_array_length(j) > 0
"""


#: Stage 2: candidate documents -> flattened, checked rows.
FLAT_SQL = f"""
CREATE OR REPLACE TEMP TABLE _flat AS
WITH t AS (
    SELECT rec, item, source || CASE WHEN line IS NOT NULL THEN ':' || line ELSE '' END
               || CASE WHEN item_index IS NOT NULL THEN '[' || item_index || ']' ELSE '' END AS source,
           doc, strlen(doc::VARCHAR) AS doc_bytes, json_type(doc) AS doc_type,
           json_type(doc, {list(CONTAINERS)!r}) AS types,
           json_transform(doc, '{STRUCTURE}') AS d
    FROM _items WHERE problem IS NULL
), t2 AS (
    SELECT *, json_transform(d.environment, '{ENV_STRUCTURE}') AS env,
           d.environment AS environment_content
    FROM t
), f AS (
    SELECT *,
        {_j("d.run.apiVersion")} AS api,
        {_j("d.run.kind")} AS rkind,
        {_j("d.protocol->'$.apiVersion'")} AS papi,
        {_j("env.apiVersion")} AS eapi,
        {_j("d.run.spec.status")} AS status,
        try_cast(replace({_j("d.run.spec.observedAt")}, 'Z', '+00:00') AS TIMESTAMPTZ)
            AT TIME ZONE 'UTC' AS observed_at,
        {_j("d.run.spec.sourceNative.benchmark")} AS benchmark,
        {_j("d.run.spec.sourceNative.externalId")} AS external_id,
        string_split(benchmark, '/') AS bench_parts,
        string_split(external_id, '/') AS id_parts,
        json_type(d.run.metadata.labels) AS labels_type,
        {_j("d.run.metadata.labels->'$.liger_version'")} AS liger_version,
        {_j("d.protocol->'$.spec.comparability.family'")} AS family,
        json_type(d.run.spec.measurements) AS meas_type,
        CASE WHEN json_type(d.run.spec.measurements) = 'ARRAY' THEN
            json_transform(d.run.spec.measurements,
                '[{{"metric": "JSON", "statistic": "JSON", "value": "JSON", "unit": "JSON"}}]')
        END AS meas,
        coalesce(list_position(list_transform(meas, lambda m: coalesce(
            left(m.metric, 1) = '"' AND left(m.statistic, 1) = '"'
            AND left(m.value, 1) NOT IN {_NUMBER_START}
            AND isfinite(try_cast(m.value AS DOUBLE)), false)), false), 0) AS bad_measurement,
        list_transform(meas, lambda m: {{'metric': json_extract_string(m.metric, '$'),
            'statistic': json_extract_string(m.statistic, '$'),
            'value': try_cast(m.value AS DOUBLE),
            'unit': CASE WHEN left(m.unit, 1) = '"' THEN json_extract_string(m.unit, '$') END}})
            AS ms,
        CASE WHEN d.run.spec.timing.latencyNs.median IS NOT NULL
             OR NOT list_contains(list_transform(ms, lambda m: m.metric), 'memory')
             THEN 'latency' ELSE 'memory' END AS metric,
        CASE WHEN metric = 'latency' THEN d.run.spec.timing.latencyNs.median
             ELSE list_filter(meas, lambda m: json_extract_string(m.metric, '$') = 'memory'
                  AND json_extract_string(m.statistic, '$') = 'median')[1].value END AS median_raw,
        CASE WHEN metric = 'latency' THEN '$.run.spec.timing.latencyNs.median'
             ELSE '$.run.spec.measurements[memory median].value' END AS median_path,
        CASE WHEN left(median_raw, 1) NOT IN {_NUMBER_START}
             THEN try_cast(median_raw AS DOUBLE) END AS median_val,
        list_filter(ms, lambda m: m.metric = metric AND m.statistic = 'p20')[1].value AS p20,
        list_filter(ms, lambda m: m.metric = metric AND m.statistic = 'p80')[1].value AS p80,
        CASE WHEN metric = 'latency' THEN 'ns'
             ELSE coalesce(list_filter(ms, lambda m: m.metric = 'memory')[1].unit, 'MB') END AS unit
    FROM t2
)
SELECT *, {_case(1)} AS reject_path, {_case(2)} AS reject_reason FROM f
"""
