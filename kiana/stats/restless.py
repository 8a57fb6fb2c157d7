"""Restless series: a kernel whose findings at the same code go both ways is unstable.

A sweep series (kernel, pass, provider, GPU and metric) is ``unstable`` when, between
sessions no commit touched the kernel (its code for the code under test, its benchmark
for a baseline; known only with code changes, the git provenance of ``kiana import
liger --git``), it was found to regress at least :data:`MIN_MOVES` times and to improve
at least as often: each a finding of its own, past its control and its provider's
common move (:mod:`kiana.stats.toolchain`), on the noise kiana measured.  Such a series
has no level to step from.  Liger's ``dpo_loss`` backward on the H100 of its CI history
moved +7.6%, -7.2%, +5.7% and -6.3% between sittings no commit of Liger's touched,
while ``huggingface`` beside it moved under 2%; ``dyt`` backward +42%, -42%, +22%,
-21%.  Each move is real for the measurement and none is a change of the code.

A move is a finding of its own, a ``raw`` move under that rule's floor (basis
``raw_small``, :func:`kiana.stats.floors.raw_floor`: dpo_loss's moves above are such),
or a step whose sweep's *median* workload moved by at least ``resolution * threshold``
(9%) past its control's median while the finding stayed unflagged: the pooled estimate is led by the most precise workloads, and a kernel whose
small workloads sit at a floor of launch overhead moves there while its large ones stay
(:func:`kiana.stats.rules.settled`).  Liger's ``layer_norm`` backward on the H100 of its
CI history: its four small workloads sit at 160-270 µs (huggingface takes 60-340 µs
over the same sweep) and moved +52%, -19%, -58% and +110% between sittings no commit
touched, while hidden16384 stayed at 520 µs and every step was ``inconclusive`` or a
``lone`` finding.

This is the two-level rule's empirical counterpart (:mod:`kiana.stats.unstable`): two
levels need not be far apart in Ashman's sense for a series to come and go (one that
wanders over several levels has a small D), but its own moves at the same code show
it, as repeated executions show the variation a single one hides (Kalibera and Jones
2013, "Rigorous benchmarking in reasonable time", ISMM).  A change and its revert each
need a commit, so they never count; a kernel the toolchain moves once, or the same way
twice, is not restless.  Without code changes known for a step, its finding does not
count: from plain CSVs only the two-level rule applies.

A restless series is marked as the two-level rule marks one (its quality row, its steps
and findings ``inconclusive`` with its sentence, coverage ``in an unstable sweep``);
its row's ``levels`` names the moves, ``ashman_d``, ``low`` and ``high`` are null.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.floors import SMALL_RAW
from kiana.stats.options import JudgeOptions
from kiana.stats.toolchain import finding_changes
from kiana.stats.unstable import SWEEP, UNSTABLE_COLUMNS, empty
from kiana.vocabulary import FINDING_KEYS, TOOLCHAIN, UNSTABLE

#: Regressions, and as many improvements, at the same code, at least.
MIN_MOVES = 2


def median_move(options: JudgeOptions) -> tuple[pl.Expr, pl.Expr]:
    """``(up, down)``: a finding is a move of its series (module docstring), as a
    regression or an improvement, as a ``raw`` move under its floor (basis
    :data:`kiana.stats.floors.SMALL_RAW`: flagged on the subject's own change beside a
    control that stayed, under ``resolution * threshold``), or, unflagged, by its sweep's median workload past its
    control's median by at least ``resolution * threshold``; a change every untouched
    kernel made (``toolchain``) or the machine's (``drift``) is none.  The second of the
    pair is the move's size (relative), null for none."""
    net = (pl.col("median_change") + 1.0).log() - (
        pl.col("control_change").fill_null(0.0) + 1.0
    ).log()
    span = math.log1p(options.resolution * options.threshold)
    unflagged = pl.col("verdict").is_in(["inconclusive", "unchanged"]) & (
        pl.col("basis") != TOOLCHAIN
    )
    small = pl.col("basis") == SMALL_RAW
    up = (pl.col("verdict") == "regression") | (small & (pl.col("change") > 0))
    up = up | (unflagged & ~small & (net >= span))
    down = (pl.col("verdict") == "improvement") | (small & (pl.col("change") < 0))
    down = down | (unflagged & ~small & (net <= -span))
    size = (
        pl.when(pl.col("verdict").is_in(["regression", "improvement"]) | small)
        .then(pl.col("change").abs())
        .when(up | down)
        .then((net.exp() - 1.0).abs())
        .otherwise(None)
    )
    direction = pl.when(up).then(pl.lit(1)).when(down).then(pl.lit(-1)).otherwise(pl.lit(0))
    return direction, size


def restless(
    findings: pl.DataFrame, steps: pl.DataFrame, known: pl.DataFrame, options: JudgeOptions
) -> pl.DataFrame:
    """One row per restless sweep series (module docstring; :data:`UNSTABLE_COLUMNS`)
    not already in ``known`` (the two-level rule's rows); ``steps``: with
    ``kernel_changed`` and ``partition_id``."""
    by = list(SWEEP)
    if findings.height == 0 or "kernel_changed" not in steps.columns:
        return empty()
    quiet = findings.join(finding_changes(steps), on=list(FINDING_KEYS), how="inner",
                          nulls_equal=True).filter(pl.col("kernel_changed") == False)  # noqa: E712  # fmt: skip
    direction, size = median_move(options)
    moves = (
        quiet.join(known.select(by), on=by, how="anti")
        .with_columns(direction.alias("_dir"), size.alias("_size"))
        .group_by(by, maintain_order=True)
        .agg(
            (pl.col("_dir") == 1).sum().cast(pl.Int64).alias("_ups"),
            (pl.col("_dir") == -1).sum().cast(pl.Int64).alias("_downs"),
            pl.col("_size").filter(pl.col("_dir") != 0).max().alias("_reach"),
        )
        .filter((pl.col("_ups") >= MIN_MOVES) & (pl.col("_downs") >= MIN_MOVES))
    )  # fmt: skip
    if moves.height == 0:
        return empty()
    series = steps.group_by(by).agg(
        pl.col("partition_id").min(), pl.col("to_session").n_unique().cast(pl.Int64).alias("_n")
    )
    moves = moves.join(series, on=by, how="left", maintain_order="left")
    switches = pl.col("_ups") + pl.col("_downs")
    levels = (
        switches.cast(pl.String) + pl.lit(" moves at the same code (") + pl.col("_ups").cast(pl.String)
        + pl.lit(" up, ") + pl.col("_downs").cast(pl.String) + pl.lit(" down)")
    )  # fmt: skip
    note = (
        pl.lit("unstable series: moved ") + switches.cast(pl.String)
        + pl.lit(" times with no commit touching the kernel (") + pl.col("_ups").cast(pl.String)
        + pl.lit(" up, ") + pl.col("_downs").cast(pl.String) + pl.lit(" down, by up to ")
        + (pl.col("_reach") * 100).round(0).cast(pl.Int64).cast(pl.String)
        + pl.lit("%): not a change of the kernel's, could not judge")
    )  # fmt: skip
    none = pl.lit(None, pl.Float64)
    return moves.select(
        *by, "partition_id", (pl.col("_n") + 1).alias("sessions"), none.alias("low"),
        none.alias("high"), pl.lit(None, pl.Int64).alias("low_sessions"),
        pl.lit(None, pl.Int64).alias("high_sessions"), switches.alias("switches"),
        none.alias("ashman_d"), levels.alias("levels"), note.alias("note"),
    ).select(UNSTABLE_COLUMNS)  # fmt: skip


def mark_steps(steps: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``steps`` with the steps of the series ``found`` marked unstable (their verdict
    ``inconclusive``, evidence led by the series' sentence); the others as they were."""
    if found.height == 0:
        return steps
    joined, hit, marked = _noted(steps, found)
    return joined.with_columns((pl.col("unstable") | hit).alias("unstable"), *marked).drop("_note")


def mark_findings(findings: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``findings`` with those of the series ``found`` ``inconclusive``, basis
    ``unstable``, their evidence led by the series' sentence."""
    if found.height == 0:
        return findings
    joined, hit, marked = _noted(findings, found)
    basis = pl.when(hit).then(pl.lit(UNSTABLE)).otherwise(pl.col("basis")).alias("basis")
    return joined.with_columns(*marked, basis).drop("_note")


def _noted(frame: pl.DataFrame, found: pl.DataFrame) -> tuple[pl.DataFrame, pl.Expr, list[pl.Expr]]:
    """``frame`` with each row's series sentence (``_note``, null outside ``found``), the
    mark of those rows, and their verdict and evidence as marked."""
    table = found.select(*SWEEP, pl.col("note").alias("_note"))
    joined = frame.join(table, on=list(SWEEP), how="left", maintain_order="left")
    hit = pl.col("_note").is_not_null()
    marked = [
        pl.when(hit).then(pl.lit("inconclusive")).otherwise(pl.col("verdict")).alias("verdict"),
        pl.when(hit).then(pl.col("_note") + pl.lit("; ") + pl.col("evidence"))
        .otherwise(pl.col("evidence")).alias("evidence"),
    ]  # fmt: skip
    return joined, hit, marked
