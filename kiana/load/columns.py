"""The columns of a checked document, computed once for the full check and the fast path.

Both paths parse a document into the same structure of raw JSON leaves (``d``: see
:data:`kiana.load.validate.STRUCTURE`; ``env``: the environment), then compute the same
derived columns (:func:`derived`) and hand the writer the same normalised columns
(:func:`normal`): typed strings and numbers, the four digests, a hash of the protocol
and of the environment content.  They differ only in how a string leaf becomes text:
``json_extract_string`` in the full check (:data:`FLAT_SQL`, any document), or
dropping the quotes in the fast path (documents without a backslash only, where
that is the same text).
"""

from __future__ import annotations

from collections.abc import Callable

from kiana.harness import harness_sql, role_label_sql, role_sql, version_sql
from kiana.load.validate import (
    CONTAINERS,
    ENV_STRUCTURE,
    REJECT_PATH,
    REJECT_REASON,
    STRUCTURE,
    numeric,
)
from kiana.vocabulary import GPU_LABEL_SQL, partition_id_sql


def json_text(expr: str) -> str:
    """A raw JSON string leaf -> its text, or NULL when it is not a string."""
    return f"CASE WHEN starts_with({expr}, '\"') THEN json_extract_string({expr}, '$') END"


def plain_text(expr: str) -> str:
    """:func:`json_text` for documents without a backslash: a string leaf's text is the leaf
    without its quotes (no escapes to decode), so no JSON parse is needed.  Without a
    backslash no quote can be escaped, so the leaf's only quotes are its first and last
    character: removing every quote (a byte scan) is cheaper than a character slice."""
    return f"CASE WHEN starts_with({expr}, '\"') THEN replace({expr}, '\"', '') END"


StringOf = Callable[[str], str]


def derived(s: StringOf, measurements: str, source: str, first: str = "") -> str:
    """The columns computed from the parsed leaves ``d`` and ``env``, shared by the full
    check and the fast path (:mod:`kiana.load.fast`) so that both mean the same: CTEs
    ``f1`` ... ``f`` over CTE ``source`` (``f`` holds them all).  ``s`` turns a raw
    string leaf into its text, ``measurements`` is the list of ``{metric, statistic,
    value, unit}`` raw leaves (or NULL), ``first`` more columns for ``f1``.

    One CTE per dependency level: DuckDB gives a column that names another column of
    the same ``SELECT`` a copy of that column's whole expression, so a chain of such
    references (the median depends on the metric, which depends on the parsed
    measurements) would be bound and computed again at every use; in layers each
    column is computed once."""
    return f"""f1 AS (
    SELECT *, {first}
        {s("d.run.apiVersion")} AS api,
        {s("d.run.kind")} AS rkind,
        {s("pj[1]")} AS papi,
        {s("env.apiVersion")} AS eapi,
        {s("d.run.spec.status")} AS status,
        try_cast(replace({s("d.run.spec.observedAt")}, 'Z', '+00:00') AS TIMESTAMPTZ)
            AT TIME ZONE 'UTC' AS observed_at,
        {s("d.run.spec.sourceNative.benchmark")} AS benchmark,
        {s("d.run.spec.sourceNative.externalId")} AS external_id,
        json_type(d.run.metadata.labels) AS labels_type,
        d.run.spec.sourceNative.source AS source_raw,
        {s("d.run.spec.sourceNative.source")} AS native_source,
        {s("pj[2]")} AS family
    FROM {source}
), f2 AS (
    SELECT *,
        {harness_sql("native_source")} AS harness,
        string_split(benchmark, '/') AS bench_parts,
        string_split(external_id, '/') AS id_parts,
        {measurements} AS meas
    FROM f1
), f3 AS (
    SELECT *,
        coalesce(list_position(list_transform(meas, lambda m: coalesce(
            starts_with(m.metric, '"') AND starts_with(m.statistic, '"')
            AND {numeric("m.value")}
            AND isfinite(try_cast(m.value AS DOUBLE)), false)), false), 0) AS bad_measurement,
        list_transform(meas, lambda m: {{'metric': {s("m.metric")},
            'statistic': {s("m.statistic")}, 'value': try_cast(m.value AS DOUBLE),
            'unit': {s("m.unit")}}}) AS ms,
        {version_sql("harness", "d.run.metadata.labels")} AS version_raw,
        {role_label_sql("harness", "d.run.metadata.labels")} AS role_raw
    FROM f2
), f4 AS (
    SELECT *,
        {s("version_raw")} AS version,
        {s("role_raw")} AS role_said,
        CASE WHEN d.run.spec.timing.latencyNs.median IS NOT NULL
             OR NOT list_contains(list_transform(ms, lambda m: m.metric), 'memory')
             THEN 'latency' ELSE 'memory' END AS metric
    FROM f3
), f5 AS (
    SELECT *,
        CASE WHEN metric = 'latency' THEN d.run.spec.timing.latencyNs.median
             ELSE list_filter(meas, lambda m: {s("m.metric")} = 'memory'
                  AND {s("m.statistic")} = 'median')[1].value END AS median_raw,
        CASE WHEN metric = 'latency' THEN '$.run.spec.timing.latencyNs.median'
             ELSE '$.run.spec.measurements[memory median].value' END AS median_path,
        list_filter(ms, lambda m: m.metric = metric AND m.statistic = 'p20')[1].value AS p20,
        list_filter(ms, lambda m: m.metric = metric AND m.statistic = 'p80')[1].value AS p80,
        CASE WHEN metric = 'latency' THEN 'ns'
             ELSE coalesce(list_filter(ms, lambda m: m.metric = 'memory')[1].unit, 'MB') END AS unit
    FROM f4
), f AS (
    SELECT *,
        CASE WHEN {numeric("median_raw")}
             THEN try_cast(median_raw AS DOUBLE) END AS median_val
    FROM f5
)"""


#: The protocol fields the checks read, as a list of raw leaves ``pj`` (one parse).
PROTOCOL_PATHS = "['$.apiVersion', '$.spec.comparability.family']"

#: The environment and the two protocol fields, from small second parses of the
#: parsed document ``d`` of CTE ``t``; the same step in the fast and the full check.
SIDE_PARTS = f"""SELECT *, json_transform(d.environment, '{ENV_STRUCTURE}') AS env,
           json_extract(d.protocol, {PROTOCOL_PATHS}) AS pj
    FROM t"""

#: The hash of a protocol or environment (a JSON leaf, or stored ``content``) that the
#: digest-consistency check compares: the same text gives the same hash.
CONTENT_HASH = "hash(({})::VARCHAR)"

#: ``source`` as shown in runs and rejects: file, ``:line`` for JSONL, ``[i]`` in arrays.
SOURCE = (
    "source || CASE WHEN line IS NOT NULL THEN ':' || line ELSE '' END"
    " || CASE WHEN item_index IS NOT NULL THEN '[' || item_index || ']' ELSE '' END"
)


def normal(s: StringOf, keys: str = "rec, item, source") -> str:
    """The columns of a checked row, the same for the full check and the fast path;
    the writer (:mod:`kiana.load.store`) reads only these (``keys``: the columns that
    say which record a row is; the fast path run as a batch is read gives others).
    Narrow on purpose: every column crosses into Arrow once per batch, so the document
    itself stays behind (``run_id`` is hashed from stage 1's copy) and the protocol and
    environment come as a 64-bit ``hash`` of their JSON text, enough to tell content
    behind one digest apart; the content of a *new* digest is taken again from its first
    document."""
    return f"""{keys}, status, observed_at, benchmark, external_id,
        bench_parts[1] AS kernel, bench_parts[2] AS "pass", id_parts[3] AS provider,
        id_parts[5] AS workload, harness, version, role_said, family, metric, unit, median_val,
        p20, p80, ms,
        {s("d.run.spec.protocolDigest")} AS protocol_digest,
        {s("d.run.spec.workloadDigest")} AS workload_digest,
        {s("d.run.spec.environmentDigest")} AS environment_digest,
        {s("d.run.spec.implementationDigest")} AS implementation_digest,
        {s("d.run.metadata.name")} AS name, {s("d.run.metadata.title")} AS title,
        d.run.metadata.labels AS labels, d.run.spec.sourceNative.metrics AS native_metrics,
        {CONTENT_HASH.format("d.protocol")} AS protocol_hash,
        {CONTENT_HASH.format("d.environment")} AS environment_hash,
        {s("env.spec.hardware.vendor")} AS vendor, {s("env.spec.hardware.product")} AS product,
        {s("env.spec.hardware.formFactor")} AS form_factor,
        {s("env.spec.hardware.architecture")} AS architecture"""


def finished(rows: str) -> str:
    """The query ``rows`` (checked rows of :func:`normal`) with the columns the writer
    derives from them: ``gpu`` (the GPU label), ``partition_id``, ``role`` (by the run's
    harness profile, :func:`kiana.harness.role_sql`) and ``ms50`` (the ``ms_50`` of the
    source's metrics, compared with the median).  Computed here, with the checks, so
    that the storing (the load's one serial stage) only copies them."""
    return f"""SELECT *, {partition_id_sql()} AS partition_id FROM (
    SELECT *, {GPU_LABEL_SQL} AS gpu, {role_sql("harness", "provider", "role_said")} AS role,
        try_cast(json_extract(native_metrics, '$.ms_50') AS DOUBLE) AS ms50
    FROM ({rows})
)"""


_FLAT_DERIVED = derived(
    json_text,
    "CASE WHEN meas_type = 'ARRAY' THEN json_transform(d.run.spec.measurements, "
    '\'[{"metric": "JSON", "statistic": "JSON", "value": "JSON", "unit": "JSON"}]\') END',
    "t2",
    "json_type(d.run.spec.measurements) AS meas_type,",
)

#: The full check: candidate documents (the relation ``documents``: rec, item, source,
#: line, item_index, doc) -> flattened rows, each with the first failing check's path
#: and reason (NULL when the document is good).
FLAT_SQL = f"""
WITH t AS (
    SELECT rec, item, {SOURCE} AS source,
           doc, strlen(doc::VARCHAR) AS doc_bytes, json_type(doc) AS doc_type,
           json_type(doc, {list(CONTAINERS)!r}) AS types,
           json_transform(doc, '{STRUCTURE}') AS d
    FROM documents
), t2 AS (
    {SIDE_PARTS}
), {_FLAT_DERIVED}
{finished(f"SELECT {normal(json_text)}, {REJECT_PATH} AS reject_path, {REJECT_REASON} AS reject_reason FROM f")}
"""
