"""The code under test's common move: every kernel of one provider moving together
between two sittings that no commit touched.

Liger's CI measures every kernel in one sitting per measured commit (each run's
``origin`` names it, :mod:`kiana.importers.ci`).  Between some pairs of sittings the
Liger kernels moved together while the baselines beside them did not: on the H100 of
its CI history, from 2026-01-16 to 01-23 the median of the 17 Liger kernels no commit
touched moved +2.6%, then -2.9% to 01-30, +3.8% from 02-06 to 02-12, -1.3% from 02-20
to 02-27.  A baseline control cannot see such a move (the baselines run PyTorch's
code, not Triton's): it is the toolchain the code under test is built with (Triton,
its autotuner, the driver) or the machine as only those kernels feel it.  Judged
against its baseline alone, each kernel that moved with the others is a regression
or an improvement of its own; 22 of the 47 such findings on the held-out third of
that history were this (``bench/ci_holdout.py``).

The rule (a second control, as a difference-in-differences takes the change of an
untreated group: Angrist and Pischke 2009, *Mostly Harmless Econometrics*, ch. 5):

* **The common move.**  For a finding of the code under test between two sittings
  known by origin, the other kernels of the same provider, GPU and metric between the
  same two origins whose code no commit touched (known from the code changes: the git
  provenance of ``kiana import liger --git``) each give their median change over their
  passes; the common move ``c`` is the median of these, from at least
  :data:`MIN_KERNELS` kernels.  Its standard error is ``1.2533 * 1.4826 MAD / sqrt(n)``
  (the sample median's asymptotic standard error for a normal sample, ``sqrt(pi / 2)``
  times the mean's).  The finding's own kernel is never among them, so a kernel that
  moved alone does not move its own control.
* **Beyond it.**  A ``regression`` or ``improvement`` stays one when its change beyond
  the common move, ``mu - c`` (logs), is still flagged the way the rule table flags an
  estimate (:mod:`kiana.stats.rules`: separated from zero by ``separation`` standard
  errors, ``sqrt(se^2 + se_c^2)``, reaching the threshold within one) and points the
  same way.  Otherwise it becomes ``drift`` (basis ``toolchain``) where the change
  beyond the common move is ruled out to the threshold by the rule table's equivalence
  rule (``|mu - c| + EQUIVALENCE_Z * se < ln(1 + threshold)``: the machine moved, not
  the kernel), and ``inconclusive`` (basis ``toolchain``, the way it leans said) where
  it is not: what is left may still be the kernel's.  The evidence says how far the
  provider's other kernels moved and what is left.

Nothing else changes: without origins, without code changes, or with fewer than
:data:`MIN_KERNELS` untouched kernels, findings stay as the rule table left them.  A
commit that touches every kernel (a shared module) leaves none untouched, so its own
move is never taken for the toolchain's.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.evidence import pct
from kiana.stats.floors import SMALL_RAW
from kiana.stats.options import JudgeOptions
from kiana.stats.rules import EQUIVALENCE_Z
from kiana.vocabulary import FINDING_KEYS, TOOLCHAIN

#: Untouched kernels of the same provider and sittings the common move needs, at least.
MIN_KERNELS = 5
#: The median's standard error over the mean's, for a normal sample: sqrt(pi / 2).
_MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2.0)
#: What identifies two sittings of one provider on one GPU.
_PAIR = ("gpu", "provider", "metric", "from_origin", "to_origin")


def finding_changes(steps: pl.DataFrame) -> pl.DataFrame:
    """Per finding (``FINDING_KEYS``), ``kernel_changed``: a commit touched the kernel
    (null: not known for every workload's step)."""
    keys = list(FINDING_KEYS)
    if "kernel_changed" not in steps.columns or steps.height == 0:
        schema = {**dict.fromkeys(keys, pl.String()), "kernel_changed": pl.Boolean()}
        return pl.DataFrame(schema=schema)
    kc = pl.col("kernel_changed")
    return steps.group_by(keys).agg(
        pl.when(kc.any())
        .then(True)
        .when(kc.is_not_null().all())
        .then(False)
        .alias("kernel_changed")
    )


def common_moves(findings: pl.DataFrame, changes: pl.DataFrame) -> pl.DataFrame:
    """Per flagged finding of the code under test (``FINDING_KEYS``), the common move of
    the other untouched kernels of its provider and sittings: ``_c`` (log), ``_c_se``
    and ``_c_n`` (module docstring); only where ``_c_n >= MIN_KERNELS``."""
    keys = list(FINDING_KEYS)
    known = findings.filter(
        pl.col("is_subject"), pl.col("from_origin").is_not_null(),
        pl.col("to_origin").is_not_null(), pl.col("change").is_not_null(),
    ).join(changes, on=keys, how="left", nulls_equal=True)  # fmt: skip
    quiet = (
        known.filter(pl.col("kernel_changed") == False)  # noqa: E712
        .group_by(*_PAIR, "kernel")
        .agg(pl.col("change").log1p().median().alias("_k"))
        .rename({"kernel": "_other"})
    )
    # A raw move under its floor (floors.raw_floor) is a move the toolchain may explain too.
    moved = pl.col("verdict").is_in(["regression", "improvement"]) | (pl.col("basis") == SMALL_RAW)
    flagged = known.filter(moved).select(*keys, "from_origin", "to_origin")
    if flagged.height == 0 or quiet.height == 0:
        schema = {k: findings.schema[k] for k in keys}
        return pl.DataFrame(
            schema={**schema, "_c": pl.Float64, "_c_se": pl.Float64, "_c_n": pl.UInt32}
        )
    pairs = flagged.join(quiet, on=list(_PAIR), how="inner").filter(
        pl.col("_other") != pl.col("kernel")
    )
    mad = (pl.col("_k") - pl.col("_k").median()).abs().median() * 1.4826
    return (
        pairs.group_by(keys)  # one finding: its keys name its sittings
        .agg(
            pl.col("_k").median().alias("_c"),
            (mad * _MEDIAN_EFFICIENCY / pl.len().sqrt()).alias("_c_se"),
            pl.len().alias("_c_n"),
        )
        .filter(pl.col("_c_n") >= MIN_KERNELS)
    )


def adjust(findings: pl.DataFrame, steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """``findings`` with each regression or improvement (or ``raw`` move under its floor,
    basis :data:`kiana.stats.floors.SMALL_RAW`) that moved with its provider's untouched
    kernels made ``drift`` (module docstring); the rows in their order."""
    if findings.height == 0:
        return findings
    moves = common_moves(findings, finding_changes(steps))
    if moves.height == 0:
        return findings
    keys = list(FINDING_KEYS)
    joined = findings.join(moves, on=keys, how="left", nulls_equal=True, maintain_order="left")
    mu = pl.col("change").log1p()
    beyond = mu - pl.col("_c")
    se = (pl.col("change_se").pow(2) + pl.col("_c_se").pow(2)).sqrt()
    still = (
        (se > 0)
        & (beyond.abs() >= options.separation * se)
        & (beyond.abs() + se >= math.log1p(options.threshold))
        & (beyond.sign() == mu.sign())
    )
    hit = pl.col("_c").is_not_null() & ~still.fill_null(False)
    ruled_out = beyond.abs() + EQUIVALENCE_Z * se < math.log1p(options.threshold)
    lean = (
        pl.when(beyond > 0)
        .then(pl.lit(": leans regression"))
        .otherwise(pl.lit(": leans improvement"))
    )
    note = (
        pl.col("provider") + pl.lit("'s other ") + pl.col("_c_n").cast(pl.String)
        + pl.lit(" kernels no commit touched moved ") + pct(pl.col("_c").exp() - 1.0)
        + pl.lit(" between the same sittings (their median): the toolchain or the machine moved;"
                 " beyond it this kernel moved ")
        + pct(beyond.exp() - 1.0) + pl.lit(" ± ") + pct(se, signed=False)
        + pl.when(ruled_out).then(pl.lit("")).otherwise(lean) + pl.lit("; ")
    )  # fmt: skip
    verdict = pl.when(ruled_out).then(pl.lit("drift")).otherwise(pl.lit("inconclusive"))
    return joined.with_columns(
        pl.when(hit).then(verdict).otherwise(pl.col("verdict")).alias("verdict"),
        pl.when(hit).then(pl.lit(TOOLCHAIN)).otherwise(pl.col("basis")).alias("basis"),
        pl.when(hit)
        .then(note + pl.col("evidence"))
        .otherwise(pl.col("evidence"))
        .alias("evidence"),
    ).drop("_c", "_c_se", "_c_n")
