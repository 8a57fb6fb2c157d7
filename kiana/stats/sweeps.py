"""Findings: one kernel, pass, provider, GPU and metric between two sessions, judged on
the pooled evidence of every workload of its sweep.

The sweep is the evidence.  Six workloads that all moved 4% say more than any one of
them, even when none passes its own gate; one workload that moved 30% while the rest
stayed flat is a change of that workload.  Counting per-workload verdicts gets both
wrong, so a finding's verdict comes from pooled estimates (:mod:`kiana.stats.pooling`):

* ``raw``: the provider's own log ratios, DerSimonian-Laird pooled, with the
  calibrated sitting offset in its standard error (:mod:`kiana.stats.calibration`);
* ``adj``: the same of the control-adjusted log ratios (the code under test with a control,
  :mod:`kiana.stats.controls`), with both providers' own parts of their sitting offsets (the contrast
  component; the machine's common move cancels);
* ``ctl``: the control's own.

The verdict is the first rule of the table of :mod:`kiana.stats.rules` whose
condition holds (its docstring: the rules in order, and the equivalence rule of
``unchanged``).

One basis lies outside the table: ``bridge``, a finding between two sessions that are
not consecutive, across one too noisy to place a change in (:mod:`kiana.stats.bridges`:
the same rules judge the two sessions as one step, at a higher separation).

Steps into or out of an outlier session are no evidence: they leave every estimate.
``workloads`` lists the workloads whose step (on the finding's basis) moved the
finding's way, ``workloads_affected`` counts them (0 for ``unchanged`` and
``inconclusive``); ``worst_change`` is the step farthest that way (for ``unchanged``
and ``inconclusive``: farthest from zero), on the same basis as ``change``;
``confidence`` is the exact one-sided sign test of the sweep's direction (Conover,
"Practical Nonparametric Statistics", 3.4); ``impact`` ranks findings of one verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import polars as pl

from kiana.stats.aggregate import aggregate
from kiana.stats.evidence import control_clause, finding_noise, fold_baselines
from kiana.stats.floors import OPPOSED, SMALL_LONE, SMALL_RAW
from kiana.stats.options import JudgeOptions
from kiana.stats.packing import pack
from kiana.stats.pooling import KEYS, sign_confidence
from kiana.stats.rules import pick_rule, rules, split
from kiana.stats.unstable import finding_marks
from kiana.vocabulary import FINDING_KEYS, verdict_rank

#: The columns of ``Judgement.findings``, in order.
FINDING_COLUMNS: tuple[str, ...] = (
    *FINDING_KEYS, "from_origin", "to_origin", "from_observed_at", "to_observed_at",
    "verdict", "basis", "change", "change_se", "severity", "adjusted", "raw_change",
    "control_provider", "control_change", "scatter", "workloads", "workloads_affected",
    "workloads_total", "workloads_with_noise", "median_change", "worst_change",
    "confidence", "impact", "reruns", "noise_source", "workload_noise",
    "workload_noise_samples", "workload_noise_tail", "sitting_noise",
    "sitting_noise_samples", "sitting_noise_tail", "noise_bounded", "single_samples",
    "benchmark_changed", "benchmark_note", "is_subject", "single_run", "folded", "evidence",
)  # fmt: skip


#: The judge's order of findings: verdict (its rank, ``_rank``), the code under test
#: first, impact, then the finding keys, each with whether it sorts descending.
FINDING_ORDER: tuple[tuple[str, bool], ...] = (
    ("_rank", False), ("is_subject", True), ("impact", True), *((k, False) for k in KEYS),
)  # fmt: skip


def order_findings(findings: pl.DataFrame) -> pl.DataFrame:
    """Findings in the judge's order (:data:`FINDING_ORDER`)."""
    if findings.height == 0:
        return findings
    return (
        findings.with_columns(verdict_rank("verdict").alias("_rank"))
        .sort([c for c, _ in FINDING_ORDER], descending=[d for _, d in FINDING_ORDER])
        .drop("_rank")
    )


#: Steps aggregated at once by :func:`findings` (whole kernels of a GPU together, a
#: larger kernel alone): the aggregation holds several copies of what it reads, and a
#: GPU of 400k runs (Liger's history cloned, issue 41) peaked there, 0.19 GiB over the
#: rest of its judge, when its 399k steps went in at once.
FINDING_CHUNK = 100_000


def findings(steps: pl.DataFrame, options: JudgeOptions | None = None) -> pl.DataFrame:
    """Group steps into findings judged on their pooled evidence (module docstring);
    ``steps`` are those of :func:`kiana.stats.steps.decide` after the outliers, before
    their columns are narrowed.  The same findings, in the same order, whatever
    :data:`FINDING_CHUNK` is: a finding's steps, and the baselines' findings of its
    sitting (:func:`~kiana.stats.evidence.fold_baselines`), are of one kernel and GPU,
    and :func:`order_findings` is a total order (the finding keys end it)."""
    options = options or JudgeOptions()
    if steps.height == 0:
        return pl.DataFrame(schema=_schema())
    parts = [_findings(part, options) for part in kernel_chunks(steps, FINDING_CHUNK)]
    return parts[0] if len(parts) == 1 else order_findings(pl.concat(parts))


def kernel_chunks(steps: pl.DataFrame, rows: int) -> Iterator[pl.DataFrame]:
    """``steps`` cut into frames of whole kernels of a GPU, at most ``rows`` together
    (a larger kernel alone), each in the order of ``steps``, made one at a time.

    >>> steps = pl.DataFrame({"gpu": ["A"] * 4, "kernel": ["x", "y", "x", "z"]})
    >>> [part["kernel"].to_list() for part in kernel_chunks(steps, 2)]
    [['x', 'x'], ['y', 'z']]
    """
    if steps.height <= rows:
        yield steps
        return
    sizes = steps.group_by("gpu", "kernel").len().sort("gpu", "kernel")
    for batch, _ in pack((((g, k), n) for g, k, n in sizes.iter_rows()), rows):
        keys = pl.DataFrame(batch, schema=["gpu", "kernel"], orient="row")
        yield steps.join(
            keys, on=["gpu", "kernel"], how="semi", nulls_equal=True, maintain_order="left"
        )


def _findings(steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """:func:`findings` of steps of whole kernels."""
    g = finding_marks(aggregate(steps, options), steps)
    table = rules(options)
    g = g.with_columns(
        pick_rule(table, "name").alias("basis"),
        pick_rule(table, "verdict").alias("verdict"),
        pick_rule(table, "change").alias("_log"),
        pick_rule(table, "se").alias("change_se"),
        pick_rule(table, "adjusted").alias("adjusted"),
        pick_rule(table, "workloads").alias("workloads"),
        pick_rule(table, "sentence").alias("_sentence"),
    )
    return _numbers(g, options)


def _numbers(g: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """The finding's numbers and evidence from its rule's choices."""
    flagged = pl.col("verdict").is_in(["regression", "improvement", "drift"])
    up = pl.col("_log") > 0
    basis = pl.when(pl.col("adjusted")).then(pl.lit("adj")).otherwise(pl.lit("raw"))

    def pick(a: str, r: str) -> pl.Expr:
        return pl.when(basis == "adj").then(pl.col(a)).otherwise(pl.col(r))

    worst = (
        pl.when(flagged & up).then(pick("_adj_max", "_raw_max"))
        .when(flagged).then(pick("_adj_min", "_raw_min"))
        .otherwise(pick("_adj_absmax", "_raw_absmax"))
    )  # fmt: skip
    g = g.with_columns(
        (pl.col("_log").exp() - 1.0).alias("change"),
        (pl.col("_log") / pl.col("change_se")).alias("severity"),
        (pl.col("raw_mu").exp() - 1.0).alias("raw_change"),
        (pl.col("ctl_mu").exp() - 1.0).alias("control_change"),
        pl.when(pl.col("adjusted")).then(pl.col("adj_tau")).otherwise(pl.col("raw_tau")).alias("scatter"),
        pl.when(flagged).then(pl.col("workloads")).otherwise(None).alias("workloads"),
        (worst.exp() - 1.0).alias("worst_change"),
        pl.when(up).then(pick("_adj_up", "_raw_up")).otherwise(pick("_adj_down", "_raw_down")).alias("_agree"),
        (pick("_adj_up", "_raw_up") + pick("_adj_down", "_raw_down")).alias("_nonzero"),
    ).with_columns(
        pl.when(flagged).then(pl.col("workloads").str.split(", ").list.len()).otherwise(0)
        .fill_null(0).cast(pl.Int64).alias("workloads_affected"),
    )  # fmt: skip
    confidence = sign_confidence(
        g["_agree"].fill_null(0).to_numpy().astype(np.int64),
        g["_nonzero"].fill_null(0).to_numpy().astype(np.int64),
    )
    share = pl.col("workloads_affected") / pl.col("workloads_total")
    g = g.with_columns(
        pl.Series("confidence", confidence, dtype=pl.Float64),
        pl.when(flagged).then(pl.col("change").abs() * pl.when(pl.col("basis") == "lone").then(share).otherwise(1.0))
        .otherwise(0.0).alias("impact"),
        _reruns(options).cast(pl.Int64).alias("reruns"),
    )  # fmt: skip
    carried = (
        pl.when(pl.col("basis") == "lone")
        .then(pl.col("_lone_n"))
        .otherwise(pl.col("workloads_total"))
    )
    g = g.with_columns(((carried == 1) & (pl.col("_runs") <= 1)).alias("single_run"))
    g = g.with_columns(_evidence(options).alias("evidence"))
    g = fold_baselines(g)
    return order_findings(g.select(FINDING_COLUMNS))


#: Bases whose ``inconclusive`` no rerun of the subject resolves, with what the evidence
#: says instead of reruns: its own change is separated already, and what it lacks is its
#: control's support, the size a change needs without it, or a second control
#: (:func:`kiana.stats.floors.raw_floor`, :func:`~kiana.stats.floors.raw_apart`,
#: :func:`~kiana.stats.floors.lone_floor`, :data:`~kiana.stats.floors.OPPOSED`).
FLOORED: dict[str, str] = {
    SMALL_RAW: "; more runs of the kernel alone will not resolve it: more of its control's, or a second baseline, would",
    OPPOSED: "; more runs will not resolve it: a second baseline would",
    SMALL_LONE: "; reruns alone will not resolve it",
}  # fmt: skip


def _reruns(options: JudgeOptions) -> pl.Expr:
    """Runs per session (each side) that bring the noise part of ``change_se`` to
    ``ln(1 + threshold) / separation`` (module docstring)."""
    target2 = (math.log1p(options.threshold) / options.separation) ** 2
    fixed2 = pl.when(pl.col("adjusted")).then(pl.col("adj_fixed2")).otherwise(pl.col("raw_fixed2"))
    noise2 = (
        pl.when(pl.col("adjusted"))
        .then(pl.col("_adj_measured2"))
        .otherwise(pl.col("_raw_measured2"))
    )
    # Workloads that disagree (the median beyond the margin) are not resolved by reruns.
    median = (
        pl.when(pl.col("adjusted")).then(pl.col("_adj_median_log")).otherwise(pl.col("_median_log"))
    )
    return (
        pl.when((pl.col("verdict") == "inconclusive") & ~pl.col("basis").is_in(["unstable", *FLOORED])
                & (fixed2 < target2) & (noise2 > 0) & ~split(median, pl.col("_log"), options))
        .then((pl.col("_runs") * noise2 / (pl.lit(target2) - fixed2)).ceil())
        .otherwise(None)
    )  # fmt: skip


def _evidence(options: JudgeOptions) -> pl.Expr:
    t = f"{options.threshold:.0%}"
    below = (
        pl.when(pl.col("verdict").is_in(["regression", "improvement"]) & (pl.col("change").abs() < options.threshold))
        .then(pl.lit(f" ({t} lies within one standard error)"))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    reruns = (
        pl.when(pl.col("reruns").is_not_null())
        .then(pl.lit("; about ") + pl.col("reruns").cast(pl.String) + pl.lit(f" run(s) per session on each side would resolve a {t} change"))
        .when(pl.col("basis").is_in(list(FLOORED)))
        .then(pl.col("basis").replace_strict(FLOORED, default=None, return_dtype=pl.String))
        .when((pl.col("verdict") == "inconclusive") & (pl.col("basis") != "unstable"))
        .then(pl.lit("; the workloads or the sittings scatter too much: reruns alone will not resolve it"))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    missing = (
        pl.when(pl.col("workloads_with_noise") < pl.col("workloads_total"))
        .then(pl.lit("; ") + (pl.col("workloads_total") - pl.col("workloads_with_noise")).cast(pl.String)
              + pl.lit(" workload(s) without noise information left out of the pooled estimate"))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    single = (
        pl.when(pl.col("single_run") & (pl.col("verdict") != "unchanged"))
        .then(pl.lit("; rests on a single run on each side: a rerun would confirm it"))
        .otherwise(pl.lit(""))
    )
    return pl.concat_str(
        [pl.col("_sentence").fill_null(""), below, reruns, finding_noise(), control_clause().fill_null(""), missing, single]
    )  # fmt: skip


def _schema() -> dict[str, pl.DataType]:
    strings = {*FINDING_KEYS, "verdict", "basis", "control_provider", "workloads", "noise_source",
               "benchmark_note", "evidence"}  # fmt: skip
    ints = {"workloads_affected", "workloads_total", "workloads_with_noise", "reruns",
            "workload_noise_samples", "sitting_noise_samples", "single_samples"}  # fmt: skip
    bools = {"is_subject", "single_run", "folded", "adjusted", "noise_bounded", "benchmark_changed"}
    schema: dict[str, pl.DataType] = {}
    for name in FINDING_COLUMNS:
        if name in strings:
            schema[name] = pl.String()
        elif name in ints:
            schema[name] = pl.Int64()
        elif name in bools:
            schema[name] = pl.Boolean()
        elif name.endswith("observed_at"):
            schema[name] = pl.Datetime("us")
        else:
            schema[name] = pl.Float64()
    return schema
