"""Findings: one version step of one kernel, pass, provider, GPU and metric across
the workloads of its sweep.

A real code regression usually shows across many workloads of a sweep (every hidden
size); noise hits one.  A finding counts its steps by verdict and summarises them:

* ``verdict``: the most common flagged verdict among the steps (regression, drift,
  improvement; ties in that order).  It stands when it covers at least half of the
  workloads or the sweep agrees on the direction with ``confidence >= 0.95``;
  otherwise the finding is ``inconclusive`` ("isolated": one workload of eight
  moved).  With no flagged step: ``unchanged`` when most steps are unchanged,
  else ``inconclusive``.
* ``workloads_affected`` / ``workloads_total``: steps with the finding's flagged
  verdict / all steps.
* ``median_change``, ``worst_change``: over all steps; worst = most positive for a
  regression or drift (more time or memory), most negative for an improvement.
* ``confidence``: agreement of the sweep, by the exact one-sided sign test
  (Dixon & Mood 1946; Conover, "Practical Nonparametric Statistics", 3.4): under
  "nothing systematic happened" each workload's change is up or down with
  probability 1/2, so with ``k`` of ``n`` non-zero changes in the finding's
  direction, ``confidence = 1 - P(Binomial(n, 1/2) >= k)``.  Eight of eight up
  gives 0.996; one workload alone gives 0.5, whatever its size.
* ``impact`` (for ranking): ``|median change of the affected steps| *
  workloads_affected / workloads_total * confidence``; zero when nothing is flagged.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

FINDING_KEYS: tuple[str, ...] = (
    "kernel",
    "pass",
    "provider",
    "gpu",
    "metric",
    "from_version",
    "to_version",
)


def sign_confidence(agree: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``1 - P(Binomial(total, 1/2) >= agree)`` elementwise; 0 where total is 0.

    Exact, computed once per distinct (agree, total) pair (sweeps are short)."""
    agree = np.asarray(agree, dtype=np.int64)
    total = np.asarray(total, dtype=np.int64)
    out = np.zeros(agree.shape, dtype=np.float64)
    if agree.size == 0:
        return out
    pairs, inverse = np.unique(np.stack([agree, total], axis=1), axis=0, return_inverse=True)
    values = np.zeros(len(pairs), dtype=np.float64)
    for i, (k, n) in enumerate(pairs.tolist()):
        if n <= 0:
            continue
        k = max(int(k), 0)
        tail = sum(math.comb(n, j) for j in range(k, n + 1)) / 2.0**n
        values[i] = min(1.0, max(0.0, 1.0 - tail))
    out[:] = values[np.asarray(inverse).reshape(-1)]
    return out


def findings(steps: pl.DataFrame) -> pl.DataFrame:
    """Group steps into findings (see the module docstring)."""
    v = pl.col("verdict")
    grouped = steps.group_by(FINDING_KEYS).agg(
        pl.len().alias("workloads_total"),
        (v == "regression").sum().alias("_reg"),
        (v == "drift").sum().alias("_drift"),
        (v == "improvement").sum().alias("_imp"),
        (v == "unchanged").sum().alias("_same"),
        pl.col("change").median().alias("median_change"),
        pl.col("change").max().alias("_max"),
        pl.col("change").min().alias("_min"),
        (pl.col("change") > 0).sum().alias("_up"),
        (pl.col("change") < 0).sum().alias("_down"),
        pl.col("change").filter(v == "regression").median().alias("_reg_med"),
        pl.col("change").filter(v == "drift").median().alias("_drift_med"),
        pl.col("change").filter(v == "improvement").median().alias("_imp_med"),
        pl.col("control_provider").drop_nulls().mode().sort().first().alias("control_provider"),
    )
    top = (
        pl.when((pl.col("_reg") >= pl.col("_drift")) & (pl.col("_reg") >= pl.col("_imp")))
        .then(pl.lit("regression"))
        .when(pl.col("_drift") >= pl.col("_imp"))
        .then(pl.lit("drift"))
        .otherwise(pl.lit("improvement"))
    )
    grouped = grouped.with_columns(top.alias("_top")).with_columns(
        pl.when(pl.col("_top") == "regression")
        .then(pl.col("_reg"))
        .when(pl.col("_top") == "drift")
        .then(pl.col("_drift"))
        .otherwise(pl.col("_imp"))
        .alias("workloads_affected"),
        pl.when(pl.col("_top") == "regression")
        .then(pl.col("_reg_med"))
        .when(pl.col("_top") == "drift")
        .then(pl.col("_drift_med"))
        .otherwise(pl.col("_imp_med"))
        .alias("_aff_med"),
    )
    # Direction of the finding: the sign of its flagged steps, else of the median.
    up = (
        pl.when(pl.col("workloads_affected") > 0)
        .then(pl.col("_aff_med") > 0)
        .otherwise(pl.col("median_change").fill_null(0.0) >= 0)
    )
    grouped = grouped.with_columns(
        up.alias("_upward"),
        pl.when(up).then(pl.col("_up")).otherwise(pl.col("_down")).alias("_agree"),
        (pl.col("_up") + pl.col("_down")).alias("_nonzero"),
    )
    confidence = sign_confidence(
        grouped["_agree"].to_numpy().astype(np.int64),
        grouped["_nonzero"].to_numpy().astype(np.int64),
    )
    grouped = grouped.with_columns(pl.Series("confidence", confidence, dtype=pl.Float64))
    share = pl.col("workloads_affected") / pl.col("workloads_total")
    stands = (pl.col("workloads_affected") > 0) & ((share >= 0.5) | (pl.col("confidence") >= 0.95))
    verdict = (
        pl.when(stands)
        .then(pl.col("_top"))
        .when(pl.col("workloads_affected") > 0)
        .then(pl.lit("inconclusive"))
        .when(pl.col("_same") * 2 > pl.col("workloads_total"))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("inconclusive"))
    )
    evidence = (
        pl.when(stands)
        .then(
            pl.col("workloads_affected").cast(pl.String)
            + pl.lit("/")
            + pl.col("workloads_total").cast(pl.String)
            + pl.lit(" workloads ")
            + pl.col("_top")
        )
        .when(pl.col("workloads_affected") > 0)
        .then(
            pl.lit("isolated: ")
            + pl.col("workloads_affected").cast(pl.String)
            + pl.lit("/")
            + pl.col("workloads_total").cast(pl.String)
            + pl.lit(" workloads ")
            + pl.col("_top")
            + pl.lit(", the sweep does not agree")
        )
        .otherwise(
            pl.col("_same").cast(pl.String)
            + pl.lit("/")
            + pl.col("workloads_total").cast(pl.String)
            + pl.lit(" workloads unchanged")
        )
    )
    worst = pl.when(pl.col("_upward")).then(pl.col("_max")).otherwise(pl.col("_min"))
    impact = (
        pl.when(pl.col("workloads_affected") > 0)
        .then(pl.col("_aff_med").abs() * share * pl.col("confidence"))
        .otherwise(0.0)
    )
    return (
        grouped.with_columns(
            verdict.alias("verdict"),
            worst.alias("worst_change"),
            impact.fill_null(0.0).alias("impact"),
            evidence.alias("evidence"),
        )
        .select(
            *FINDING_KEYS,
            "verdict",
            pl.col("workloads_affected").cast(pl.Int64),
            pl.col("workloads_total").cast(pl.Int64),
            "median_change",
            "worst_change",
            "confidence",
            "impact",
            "control_provider",
            "evidence",
        )
        .sort(["impact", *FINDING_KEYS], descending=[True] + [False] * len(FINDING_KEYS))
    )
