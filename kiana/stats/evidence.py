"""The words of steps and findings: what decided them, in words a maintainer reads.

Every sentence is built from public columns: a step's own (:func:`noise_clause`), a
finding's (:func:`finding_noise`, :func:`control_clause`); the first clause of a
finding's evidence is its rule's sentence in :data:`kiana.stats.sweeps.RULES`.
:func:`fold_baselines` folds a baseline provider's finding into the subject's finding of
the same sitting that it explains.
"""

from __future__ import annotations

import polars as pl

#: The sitting a finding belongs to, whatever its provider.
SITTING: tuple[str, ...] = ("kernel", "pass", "gpu", "metric", "from_session", "to_session")


def pct(expr: pl.Expr, signed: bool = True) -> pl.Expr:
    """``+4.1%`` (or ``4.1%``) of a relative change; null stays null."""
    text = (expr * 100).round(1).cast(pl.String) + pl.lit("%")
    if not signed:
        return text
    return pl.when(expr > 0).then(pl.lit("+") + text).otherwise(text)


def _tail(column: str) -> pl.Expr:
    return (
        pl.when(pl.col(column).is_not_null())
        .then(pl.lit(", t") + pl.col(column).round(0).cast(pl.Int64).cast(pl.String))
        .otherwise(pl.lit(""))
    )


def _calibrated(sigma: str, samples: str, tail: str, what: str) -> pl.Expr:
    """``per workload 1.2% (t3, 24 samples)`` or ``per workload 0.5% (prior)``."""
    basis = (
        pl.when(pl.col(samples) > 0)
        .then(
            pl.col(samples).cast(pl.String)
            + pl.when(pl.col(samples) == 1).then(pl.lit(" sample")).otherwise(pl.lit(" samples"))
        )
        .otherwise(pl.lit("prior: no data"))
    )
    return (
        pl.lit(f"{what} ") + pct(pl.col(sigma), signed=False)
        + pl.lit(" (") + basis + _tail(tail).str.replace(r"^, ", "; ") + pl.lit(")")
    )  # fmt: skip


def noise_clause() -> pl.Expr:
    """``noise 1.6% (measured 0.6% from spread; session per workload 1.0% (24
    samples), per sitting 1.0% (prior: no data)), |z|=2.4`` of a step."""
    measured = (
        pl.when(pl.col("noise_source").is_in(["single", "exact", "none"]))
        .then(pl.lit("nothing measured (") + pl.col("noise_source") + pl.lit(")"))
        .otherwise(
            pl.lit("measured ") + pct(pl.col("q2").sqrt(), signed=False)
            + pl.lit(" from ") + pl.col("noise_source")
        )
    )  # fmt: skip
    calibrated = (
        pl.when(pl.col("workload_sigma") > 0)
        .then(
            pl.lit("; session ")
            + _calibrated("workload_sigma", "workload_samples", "workload_tail", "per workload")
            + pl.lit(", ")
            + _calibrated("sitting_sigma", "sitting_samples", "sitting_tail", "per sitting")
        )
        .otherwise(pl.lit("; not calibrated"))
    )
    return (
        pl.when(pl.col("noise").is_null())
        .then(pl.lit("no noise information (") + pl.col("noise_source") + pl.lit(", not calibrated)"))
        .otherwise(
            pl.lit("noise ") + pct(pl.col("noise"), signed=False) + pl.lit(" (") + measured
            + calibrated + pl.lit("), |z|=") + pl.col("severity").abs().round(1).cast(pl.String)
        )
    )  # fmt: skip


def finding_noise() -> pl.Expr:
    """The noise a finding rests on: ``noise per workload 1.2% (t3, 24 samples), per
    sitting 2.0% (16 samples)``, and the single samples it holds."""
    single = (
        pl.when(pl.col("single_samples") > 0)
        .then(pl.lit("; ") + pl.col("single_samples").cast(pl.String)
              + pl.lit(" workload(s) rest on single samples (p20 = median = p80)"))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    bounded = (
        pl.when(pl.col("_link_top"))
        .then(pl.lit(" (a shifted sitting, whose link to the scatter is at its grid's upper"
                     " end: the noise may be larger)"))
        .when(pl.col("noise_bounded"))
        .then(pl.lit(" (at the calibration grid's upper end: the noise may be larger)"))
        .otherwise(pl.lit(""))
    )  # fmt: skip
    return (
        pl.when(pl.col("workload_noise").is_not_null() & (pl.col("workload_noise") > 0))
        .then(
            pl.lit("; noise ")
            + _calibrated(
                "workload_noise", "workload_noise_samples", "workload_noise_tail", "per workload"
            )
            + pl.lit(", ")
            + _calibrated(
                "sitting_noise", "sitting_noise_samples", "sitting_noise_tail", "per sitting"
            )
            + bounded
        )
        .otherwise(pl.lit("; noise as measured (not calibrated)"))
        + single
    )


def control_clause() -> pl.Expr:
    """``; raw -10.3%, control torch +0.3%`` (or why there is none)."""
    return (
        pl.when(pl.col("benchmark_changed"))
        .then(pl.lit(""))
        .when(pl.col("control_provider").is_not_null() & pl.col("control_change").is_not_null())
        .then(pl.lit("; raw ") + pct(pl.col("raw_change")) + pl.lit(", control ")
              + pl.col("control_provider") + pl.lit(" ") + pct(pl.col("control_change")))
        .when(pl.col("is_subject"))
        .then(pl.lit("; no control"))
        .otherwise(pl.lit(""))
    )  # fmt: skip


def fold_baselines(findings: pl.DataFrame) -> pl.DataFrame:
    """Set ``folded`` on baseline-provider findings that moved (drift, or a benchmark
    change) in a sitting that also has a finding of the code under test (they explain
    it, they are not news of their own), and name those that are not its control in its
    evidence: "other baselines moved: huggingface -8.3%"."""
    keys = list(SITTING)
    moved_baseline = ~pl.col("is_subject") & pl.col("verdict").is_in(
        ["drift", "regression", "improvement"]
    )
    subject = findings.filter(pl.col("is_subject")).select(*keys, "control_provider").unique(keys)
    moved = findings.filter(moved_baseline).join(
        subject.select(keys), on=keys, how="semi", nulls_equal=True
    )
    named = (
        moved.join(
            subject.rename({"control_provider": "_control"}), on=keys, how="left", nulls_equal=True
        )
        .filter(pl.col("provider").ne_missing(pl.col("_control")))
        .group_by(keys)
        .agg(
            (pl.col("provider") + pl.lit(" ") + pct(pl.col("change")))
            .sort()
            .str.join(", ")
            .alias("_moved")
        )
    )
    joined = findings.join(
        moved.select(*keys, "provider").with_columns(pl.lit(True).alias("_fold")),
        on=[*keys, "provider"],
        how="left",
        nulls_equal=True,
        maintain_order="left",
    ).join(named, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return joined.with_columns(
        pl.col("_fold").fill_null(False).alias("folded"),
        pl.when(pl.col("is_subject") & pl.col("_moved").is_not_null())
        .then(pl.col("evidence") + pl.lit("; other baselines moved: ") + pl.col("_moved"))
        .otherwise(pl.col("evidence"))
        .alias("evidence"),
    ).drop("_moved", "_fold")  # fmt: skip
