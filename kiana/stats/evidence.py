"""The sentences of findings: what decided a finding, in words a maintainer reads.

:func:`evidence` reads the working columns of :func:`kiana.stats.sweeps.findings`
(``_basis``: outlier, sweep, lone, gross, unchanged or inconclusive; ``_pooled``; ``_agree``;
``_lone_n``) beside the finding's own columns.  :func:`fold_baselines` folds a
baseline provider's drift into the Liger finding of the same sitting that it explains.
"""

from __future__ import annotations

import polars as pl

from kiana.stats.options import JudgeOptions

#: The sitting a finding belongs to, whatever its provider.
SITTING: tuple[str, ...] = ("kernel", "pass", "gpu", "metric", "from_session", "to_session")


def pct(expr: pl.Expr, signed: bool = True) -> pl.Expr:
    """``+4.1%`` (or ``4.1%``) of a relative change; null stays null."""
    text = (expr * 100).round(1).cast(pl.String) + pl.lit("%")
    if not signed:
        return text
    return pl.when(expr > 0).then(pl.lit("+") + text).otherwise(text)


def evidence(options: JudgeOptions) -> pl.Expr:
    """One sentence per finding: the pooled estimate and what decided it."""
    basis = pl.col("_basis")
    n = pl.col("workloads_total").cast(pl.String)
    k = pl.col("workloads_with_noise").cast(pl.String)
    pooled = (
        pl.lit("pooled ")
        + pct(pl.col("_pooled"))
        + pl.lit(" ± ")
        + pct(pl.col("change_se"), signed=False)
        + pl.lit(" over ")
        + k
        + pl.lit(" workload(s), |z| ")
        + pl.col("severity").abs().round(1).cast(pl.String)
        + pl.lit(", scatter ")
        + pct(pl.col("scatter"), signed=False)
    )
    direction = (
        pl.col("_agree").cast(pl.String)
        + pl.lit("/")
        + n
        + pl.when(pl.col("change") > 0).then(pl.lit(" up")).otherwise(pl.lit(" down"))
    )
    control = (
        pl.when(pl.col("control_provider").is_not_null() & pl.col("control_change").is_not_null())
        .then(
            pl.lit("; raw ")
            + pct(pl.col("raw_change"))
            + pl.lit(", control ")
            + pl.col("control_provider")
            + pl.lit(" ")
            + pct(pl.col("control_change"))
        )
        .when(pl.col("is_liger"))
        .then(pl.lit("; no control"))
        .otherwise(pl.lit("; baseline provider: drift indicator"))
    )
    missing = (
        pl.when(pl.col("workloads_with_noise") < pl.col("workloads_total"))
        .then(
            pl.lit("; ")
            + (pl.col("workloads_total") - pl.col("workloads_with_noise")).cast(pl.String)
            + pl.lit(" workload(s) without noise information left out of the pooled estimate")
        )
        .otherwise(pl.lit(""))
    )
    t = f"{options.threshold:.0%}"
    text = (
        pl.when((basis == "sweep") & (pl.col("verdict") == "drift") & pl.col("is_liger"))
        .then(
            pl.lit("the machine moved, not the kernel: raw ")
            + pct(pl.col("raw_change"))
            + pl.lit(" with its control; adjusted ")
            + pooled
            + pl.lit("; ")
            + direction
        )
        .when(basis == "sweep")
        .then(pl.lit("the sweep moved: ") + pooled + pl.lit("; ") + direction)
        .when(basis == "lone")
        .then(
            pl.col("_lone_n").cast(pl.String)
            + pl.lit(" of ")
            + n
            + pl.lit(" workload(s) far beyond the noise (")
            + pl.col("workloads")
            + pl.lit(", ")
            + pct(pl.col("change"))
            + pl.lit("), the sweep did not move: ")
            + pooled.fill_null("no pooled estimate")
        )
        .when(basis == "gross")
        .then(
            pl.lit("no noise information; every workload moved ")
            + pl.lit(f">= {options.gross_change:.0%}")
            + pl.lit(" the same way: called on size alone")
        )
        .when(basis == "outlier")
        .then(
            pl.lit("every workload's step touches an outlier session (one session off its")
            + pl.lit(" neighbours and back at the next): not a change")
        )
        .when(basis == "unchanged")
        .then(pooled + pl.lit(f"; could have seen a change of {t}"))
        .otherwise(
            pl.when(pl.col("workloads_with_noise") == 0)
            .then(pl.lit("no noise information on any workload"))
            .otherwise(
                pooled
                + pl.lit(f"; too uncertain to rule out {t}")
                + pl.when(pl.col("reruns").is_not_null())
                .then(
                    pl.lit("; about ")
                    + pl.col("reruns").cast(pl.String)
                    + pl.lit(f" run(s) per session on each side would resolve a {t} change")
                )
                .otherwise(pl.lit("; the workloads disagree: reruns alone will not resolve it"))
            )
        )
    )
    return pl.concat_str([text.fill_null(""), control.fill_null(""), missing])


def fold_baselines(findings: pl.DataFrame) -> pl.DataFrame:
    """Set ``folded`` on baseline-provider drift findings whose sitting also has a Liger
    finding (they explain it, they are not news of their own), and name them in that
    Liger finding's evidence: "baselines moved too: huggingface -8.3%"."""
    keys = list(SITTING)
    baseline_drift = ~pl.col("is_liger") & (pl.col("verdict") == "drift")
    liger_sittings = findings.filter(pl.col("is_liger")).select(keys).unique()
    moved = (
        findings.filter(baseline_drift)
        .join(liger_sittings, on=keys, how="semi", nulls_equal=True)
        .group_by(keys)
        .agg(
            (pl.col("provider") + pl.lit(" ") + pct(pl.col("change")))
            .sort()
            .str.join(", ")
            .alias("_moved")
        )
    )
    joined = findings.join(moved, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return joined.with_columns(
        (baseline_drift & pl.col("_moved").is_not_null()).alias("folded"),
        pl.when(pl.col("is_liger") & pl.col("_moved").is_not_null())
        .then(pl.col("evidence") + pl.lit("; baselines moved too: ") + pl.col("_moved"))
        .otherwise(pl.col("evidence"))
        .alias("evidence"),
    ).drop("_moved")
