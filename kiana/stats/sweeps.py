"""Findings: one kernel, pass, provider, GPU and metric between two sessions, judged on
the pooled evidence of every workload of its sweep.

The sweep is the evidence.  Six workloads that all moved 4% say more than any one of
them, even when none passes its own gate; one workload that moved 30% while the rest
stayed flat is a change of that workload.  Counting per-workload verdicts gets both
wrong, so a finding's verdict comes from one estimate of the common change.

Pooled estimate (random effects)
--------------------------------
For the ``k`` workloads with noise information, ``y_i`` is the step's log ratio
(control-adjusted for Liger providers with a control, :mod:`kiana.stats.controls`)
and ``s_i`` its noise.  The common change is the DerSimonian-Laird random-effects
mean (DerSimonian & Laird 1986, "Meta-analysis in clinical trials", Controlled
Clinical Trials 7; Borenstein et al. 2009, "Introduction to Meta-Analysis", ch. 12):

    w_i   = 1 / s_i^2,  mu_FE = sum w_i y_i / sum w_i
    Q     = sum w_i (y_i - mu_FE)^2,   C = sum w_i - sum w_i^2 / sum w_i
    tau^2 = max(0, (Q - (k - 1)) / C)          (workload-to-workload scatter)
    mu    = sum y_i / (s_i^2 + tau^2) / sum 1 / (s_i^2 + tau^2)
    se    = sqrt(1 / sum 1 / (s_i^2 + tau^2))

so the uncertainty includes both the noise of each step and the scatter between
workloads: a sweep that agrees pools to a tight estimate, a sweep that disagrees
does not.

Verdict
-------
* The sweep moved (``regression`` / ``improvement``) when ``|mu| / se >= separation``
  (default 3) and the change is practically relevant: ``|mu| + se >= ln(1 +
  threshold)``, i.e. a change of the threshold's size lies within one standard error
  of the estimate.  For Liger providers the drift rule of :mod:`kiana.stats.steps`
  applies to the pooled raw, adjusted and control estimates: a raw move that the
  control explains (adjusted not flagged the same way, control moved the same way by
  ``separation / 2`` of its own standard error) is ``drift``; a baseline provider's
  move is always ``drift`` (a drift indicator).
* Otherwise one workload far beyond its noise, while the sweep as a whole did not
  move, is a change of that workload: a step whose own verdict is flagged, with
  ``|z_i| >= z_k`` where ``z_k`` is the Bonferroni-corrected separation for ``k``
  workloads (the normal quantile of ``1 - p / 2k``, ``p`` the two-sided tail of
  ``separation``: 3.0 for one workload, 3.5 for six), names the finding's
  ``workloads`` and gives it its verdict.
* Otherwise ``unchanged`` when the pooled estimate could have separated a change of
  ``resolution * threshold`` (``separation * se <= ln(1 + resolution * threshold)``),
  else ``inconclusive``, with ``reruns``: how many runs per session (each side)
  would bring ``se`` down to ``ln(1 + threshold) / separation`` at the noise measured
  (noise shrinks with the square root of the runs; workload scatter does not, and
  then no number of reruns helps: ``reruns`` is null and the evidence says so).
* Without noise information on any workload, a finding is called on size alone only
  when every workload moved the same way by at least ``gross_change``.
* Steps into or out of an outlier session (:mod:`kiana.stats.outliers`) are no
  evidence: they leave the pooled estimate and the lone rule, and a finding whose every
  step touches one is ``inconclusive`` ("outlier session").

``workloads_affected`` counts the steps with the finding's verdict (votes, for
display only), ``confidence`` is the exact one-sided sign test of the sweep's
direction (Conover, "Practical Nonparametric Statistics", 3.4), ``impact`` ranks
findings of one verdict.  The pooling itself is in :mod:`kiana.stats.pooling`, with
its slow reference.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from kiana.stats.evidence import evidence, fold_baselines
from kiana.stats.options import JudgeOptions
from kiana.stats.pooling import KEYS, lone_z, pool, sign_confidence
from kiana.vocabulary import FINDING_KEYS, VERDICTS, source_rank, verdict_rank

#: The columns of ``Judgement.findings``, in order.
FINDING_COLUMNS: tuple[str, ...] = (
    *FINDING_KEYS,
    "from_origin",
    "to_origin",
    "from_observed_at",
    "to_observed_at",
    "verdict",
    "change",
    "change_se",
    "severity",
    "raw_change",
    "control_provider",
    "control_change",
    "scatter",
    "workloads",
    "workloads_affected",
    "workloads_total",
    "workloads_with_noise",
    "median_change",
    "worst_change",
    "confidence",
    "impact",
    "reruns",
    "noise_source",
    "is_liger",
    "single_run",
    "folded",
    "evidence",
)


def _rel(log: pl.Expr) -> pl.Expr:
    return log.exp() - 1.0


def _flagged(mu: str, se: str, options: JudgeOptions) -> pl.Expr:
    """Pooled two-gate rule: separated from zero and practically relevant."""
    practical = math.log1p(options.threshold)
    m, s = pl.col(mu), pl.col(se)
    return ((s > 0) & (m.abs() >= options.separation * s) & (m.abs() + s >= practical)).fill_null(
        False
    )


def _direction(mu: str) -> pl.Expr:
    return pl.when(pl.col(mu) > 0).then(pl.lit("regression")).otherwise(pl.lit("improvement"))


def findings(steps: pl.DataFrame, options: JudgeOptions | None = None) -> pl.DataFrame:
    """Group steps into findings judged on their pooled evidence (module docstring).

    ``steps`` are those of :func:`kiana.stats.steps.decide`, before the columns are
    narrowed: they still carry ``log_ratio``, ``noise``, ``adjusted_log_ratio``,
    ``adjusted_noise``, ``control_log_ratio`` and ``control_noise``."""
    options = options or JudgeOptions()
    if steps.height == 0:
        return pl.DataFrame(schema=_schema())
    # A step into or out of an outlier session (kiana.stats.outliers) is no evidence of
    # a change: it leaves the pooled estimates and the lone-workload rule.
    if "outlier" not in steps.columns:
        steps = steps.with_columns(pl.lit(False).alias("outlier"))
    steps = steps.with_columns(
        pl.when(pl.col("outlier")).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("log_ratio", "adjusted_log_ratio", "control_log_ratio")
    )
    has_adj = pl.col("adjusted_log_ratio").is_not_null()
    steps = steps.with_columns(
        pl.when(has_adj)
        .then(pl.col("adjusted_log_ratio"))
        .otherwise(pl.col("log_ratio"))
        .alias("_y"),
        pl.when(has_adj).then(pl.col("adjusted_noise")).otherwise(pl.col("noise")).alias("_s"),
    ).with_columns(
        pl.when(pl.col("_s") > 0).then(pl.col("_y") / pl.col("_s")).otherwise(None).alias("_z"),
        pl.len().over(KEYS).alias("_n"),
    )
    raw = pool(steps, pl.col("log_ratio"), pl.col("noise"), "raw")
    eff = pool(steps, pl.col("_y"), pl.col("_s"), "eff")
    ctl = pool(
        steps.filter(pl.col("is_liger")),
        pl.col("control_log_ratio"),
        pl.col("control_noise"),
        "ctl",
    )
    v = pl.col("verdict")
    lone = (
        v.is_in(["regression", "improvement", "drift"])
        & (pl.col("_z").abs() >= lone_z(pl.col("_n"), options.separation))
    ).fill_null(False)
    steps = steps.with_columns(lone.alias("_lone"), verdict_rank("verdict").alias("_vrank"))
    top_lone = pl.col("_vrank").filter(pl.col("_lone")).min()
    grouped = steps.group_by(KEYS).agg(
        pl.len().cast(pl.Int64).alias("workloads_total"),
        pl.col("from_origin").first(),
        pl.col("to_origin").first(),
        pl.col("from_observed_at").min(),
        pl.col("to_observed_at").min(),
        pl.col("change").median().alias("median_change"),
        pl.col("change").max().alias("_max"),
        pl.col("change").min().alias("_min"),
        pl.col("change").abs().min().alias("_min_abs"),
        (pl.col("change") > 0).sum().cast(pl.Int64).alias("_up"),
        (pl.col("change") < 0).sum().cast(pl.Int64).alias("_down"),
        pl.col("control_provider").drop_nulls().mode().sort().first().alias("control_provider"),
        pl.col("is_liger").first(),
        pl.col("outlier").sum().cast(pl.Int64).alias("_outliers"),
        *((v == name).sum().cast(pl.Int64).alias(f"_votes_{name}") for name in VERDICTS),
        pl.col("_vrank").filter(pl.col("_lone")).min().alias("_lone_rank"),
        pl.col("workload")
        .filter(pl.col("_lone") & (pl.col("_vrank") == top_lone))
        .sort()
        .str.join(", ")
        .alias("_lone_names"),
        pl.col("change")
        .filter(pl.col("_lone") & (pl.col("_vrank") == top_lone))
        .sort_by(pl.col("_z").abs().filter(pl.col("_lone") & (pl.col("_vrank") == top_lone)))
        .last()
        .alias("_lone_change"),
        (pl.col("_lone") & (pl.col("_vrank") == top_lone)).sum().cast(pl.Int64).alias("_lone_n"),
        pl.col("workload").filter(pl.col("change") > 0).sort().str.join(", ").alias("_up_names"),
        pl.col("workload").filter(pl.col("change") < 0).sort().str.join(", ").alias("_down_names"),
        pl.col("noise_source").sort_by(source_rank("noise_source")).last().alias("noise_source"),
        ((pl.col("from_n_runs") + pl.col("to_n_runs")) / 2.0).median().alias("_runs"),
        pl.col("_s").filter(pl.col("_s") > 0).pow(-2).sum().alias("_fe_w"),
    )
    joined = (
        grouped.join(raw, on=KEYS, how="left", nulls_equal=True)
        .join(eff, on=KEYS, how="left", nulls_equal=True)
        .join(ctl, on=KEYS, how="left", nulls_equal=True)
    )
    return _decide(joined, options)


def _decide(g: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """Verdict, numbers and evidence of every finding from its pooled estimates."""
    practical = math.log1p(options.threshold)
    raw_flag = _flagged("raw_mu", "raw_se", options)
    eff_flag = _flagged("eff_mu", "eff_se", options)
    same_way = (pl.col("raw_mu") > 0) == (pl.col("eff_mu") > 0)
    ctl_moved = (
        ((pl.col("ctl_mu") > 0) == (pl.col("raw_mu") > 0))
        & (pl.col("ctl_mu").abs() >= options.separation / 2.0 * pl.col("ctl_se"))
    ).fill_null(False)
    liger = pl.col("is_liger")
    sweep = (
        pl.when(~liger & raw_flag)
        .then(pl.lit("drift"))
        .when(liger & raw_flag & eff_flag & same_way)
        .then(_direction("raw_mu"))
        .when(liger & raw_flag & ctl_moved)
        .then(pl.lit("drift"))
        .when(liger & raw_flag)
        .then(_direction("raw_mu"))
        .when(liger & eff_flag)
        .then(_direction("eff_mu"))
        .otherwise(None)
    )
    lone = pl.col("_lone_rank").is_not_null()
    lone_verdict = pl.col("_lone_rank").replace_strict(
        {i: v for i, v in enumerate(VERDICTS)}, default=None, return_dtype=pl.String
    )
    no_noise = pl.col("eff_k").is_null()
    all_one_way = (pl.col("_up") == pl.col("workloads_total")) | (
        pl.col("_down") == pl.col("workloads_total")
    )
    gross = no_noise & all_one_way & (pl.col("_min_abs") >= options.gross_change)
    gross_verdict = pl.when(~liger).then(pl.lit("drift")).otherwise(_direction("median_change"))
    resolvable = (options.separation * pl.col("eff_se")) <= math.log1p(
        options.resolution * options.threshold
    )
    g = g.with_columns(
        sweep.alias("_sweep"),
        pl.when(pl.col("_outliers") == pl.col("workloads_total"))
        .then(pl.lit("outlier"))
        .when(sweep.is_not_null())
        .then(pl.lit("sweep"))
        .when(lone)
        .then(pl.lit("lone"))
        .when(gross)
        .then(pl.lit("gross"))
        .when(resolvable.fill_null(False))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("inconclusive"))
        .alias("_basis"),
    ).with_columns(
        pl.when(pl.col("_basis") == "sweep")
        .then(pl.col("_sweep"))
        .when(pl.col("_basis") == "lone")
        .then(lone_verdict)
        .when(pl.col("_basis") == "gross")
        .then(gross_verdict)
        .when(pl.col("_basis") == "outlier")
        .then(pl.lit("inconclusive"))
        .otherwise(pl.col("_basis"))
        .alias("verdict")
    )
    # Reruns: runs per side that bring the noise part of se to the target (docstring).
    target2 = (practical / options.separation) ** 2
    scatter2 = pl.col("eff_tau").pow(2) / pl.col("eff_k")
    noise2 = 1.0 / pl.col("_fe_w")
    reruns = (
        pl.when((pl.col("verdict") == "inconclusive") & (scatter2 < target2) & (noise2 > 0))
        .then((pl.col("_runs") * noise2 / (pl.lit(target2) - scatter2)).ceil())
        .otherwise(None)
    )
    change_log = (
        pl.when(pl.col("_basis") == "lone")
        .then(pl.col("_lone_change").log1p())
        .when(pl.col("_basis") == "gross")
        .then(pl.col("median_change").log1p())
        .when((pl.col("_basis") == "sweep") & (pl.col("verdict") == "drift"))
        .then(pl.col("raw_mu"))
        .otherwise(pl.col("eff_mu"))
    )
    upward = pl.col("verdict").is_in(["regression"]) | (
        (pl.col("verdict") == "drift") & (change_log > 0)
    )
    agree = pl.when(change_log > 0).then(pl.col("_up")).otherwise(pl.col("_down"))
    g = g.with_columns(
        _rel(change_log).alias("change"),
        pl.col("eff_se").alias("change_se"),
        (pl.col("eff_mu") / pl.col("eff_se")).alias("severity"),
        _rel(pl.col("raw_mu")).alias("raw_change"),
        _rel(pl.col("ctl_mu")).alias("control_change"),
        pl.col("eff_tau").alias("scatter"),
        _rel(pl.col("eff_mu")).alias("_pooled"),
        pl.coalesce(
            *(
                pl.when(pl.col("verdict") == name).then(pl.col(f"_votes_{name}"))
                for name in VERDICTS
            )
        ).alias("workloads_affected"),
        pl.when(pl.col("_basis") == "lone")
        .then(pl.col("_lone_names"))
        .when(pl.col("_basis").is_in(["sweep", "gross"]))
        .then(pl.when(change_log > 0).then(pl.col("_up_names")).otherwise(pl.col("_down_names")))
        .otherwise(None)
        .alias("workloads"),
        pl.col("eff_k").fill_null(0).cast(pl.Int64).alias("workloads_with_noise"),
        pl.when(upward).then(pl.col("_max")).otherwise(pl.col("_min")).alias("worst_change"),
        agree.alias("_agree"),
        (pl.col("_up") + pl.col("_down")).alias("_nonzero"),
        reruns.cast(pl.Int64).alias("reruns"),
    )
    confidence = sign_confidence(
        g["_agree"].fill_null(0).to_numpy().astype(np.int64),
        g["_nonzero"].to_numpy().astype(np.int64),
    )
    flagged = pl.col("verdict").is_in(["regression", "improvement", "drift"])
    share = (
        pl.when(pl.col("_basis") == "lone")
        .then(pl.col("_lone_n") / pl.col("workloads_total"))
        .otherwise(1.0)
    )
    g = g.with_columns(
        pl.Series("confidence", confidence, dtype=pl.Float64),
        pl.when(flagged).then(pl.col("change").abs() * share).otherwise(0.0).alias("impact"),
    )
    carried = (
        pl.when(pl.col("_basis") == "lone")
        .then(pl.col("_lone_n"))
        .otherwise(pl.col("workloads_total"))
    )
    g = g.with_columns(((carried == 1) & (pl.col("_runs") <= 1)).alias("single_run"))
    single = (
        pl.when(pl.col("single_run") & (pl.col("verdict") != "unchanged"))
        .then(pl.lit("; rests on a single run on each side: a rerun would confirm it"))
        .otherwise(pl.lit(""))
    )
    g = fold_baselines(g.with_columns((evidence(options) + single).alias("evidence")))
    return (
        g.with_columns(verdict_rank("verdict").alias("_rank"))
        .sort(
            ["_rank", "is_liger", "impact", *KEYS],
            descending=[False, True, True] + [False] * len(KEYS),
        )
        .select(FINDING_COLUMNS)
    )


def _schema() -> dict[str, pl.DataType]:
    strings = {
        *FINDING_KEYS,
        "verdict",
        "control_provider",
        "workloads",
        "noise_source",
        "evidence",
    }
    ints = {"workloads_affected", "workloads_total", "workloads_with_noise", "reruns"}
    schema: dict[str, pl.DataType] = {}
    for name in FINDING_COLUMNS:
        if name in strings:
            schema[name] = pl.String()
        elif name in ints:
            schema[name] = pl.Int64()
        elif name in ("is_liger", "single_run", "folded"):
            schema[name] = pl.Boolean()
        elif name.endswith("observed_at"):
            schema[name] = pl.Datetime("us")
        else:
            schema[name] = pl.Float64()
    return schema
