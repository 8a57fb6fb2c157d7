"""Unstable series: a kernel that alternates between two levels is data quality, not
two changes.

Some kernels run at one of two speeds from one sitting to the next whatever their code
(autotuning picking another configuration, a launch configuration chosen by a race):
Liger's ``softmax`` forward on the H100 of its CI history runs at about 8.7 µs, then
50.7 µs for a week, 8.6 µs for three, 48-58 µs for three and 8.6 µs again, while
``torch`` in the same sittings stays at 10.7-11.3 µs.  Judged step by step that is
"+480%", "-83%", "+570%", ...: each step real, none a change of the kernel's.

A *sweep series* (kernel, pass, provider, GPU and metric: the unit of the findings,
:mod:`kiana.stats.sweeps`) is ``unstable`` when all of these hold:

* **Two levels.**  Each session's sweep level is the median over its workloads of the
  workload's log median minus that workload's median over the series' sessions (so a
  workload missing from a session does not move the level, and one small workload's
  noise does not make a sweep of flat ones look bimodal).  The sessions are split
  into two groups by two-means clustering of these levels (the split of the sorted
  levels with the least within-group sum of squares, each group at least
  :data:`MIN_SESSIONS` sessions: Fisher's optimal 1-D partition, Fisher 1958, "On
  grouping for maximum homogeneity", JASA 53:789).
* **Far apart relative to the noise within each.**  Ashman's D of the two groups,
  ``D = sqrt(2) |mu_high - mu_low| / sqrt(s_high^2 + s_low^2)`` (Ashman, Bird & Zepf
  1994, "Detecting bimodality in astronomical datasets", AJ 108:2348), is at least
  :data:`MIN_D`.  Ashman et al. call ``D > 2`` a clean separation of the components of a
  fitted mixture; a two-means split of one normal sample already gives ``D ~ 2.7`` (its
  halves' means are +-0.80 sigma apart, each half's sd 0.60 sigma), so the bar here is
  higher.  Each group's ``s`` is at least the series' own session noise (the median over
  its sessions of ``sqrt(mean sigma^2 / k + sitting_sigma^2)``: the measured and
  calibrated noise of a sweep of ``k`` workloads), so two levels that happen to be tight
  in a short series are not called apart on that alone; and the levels are at least
  ``resolution * threshold`` (9%) apart.
* **It comes back.**  In session order the series switches level at least
  :data:`MIN_SWITCHES` times without a commit touching the kernel (its code for the code
  under test, its benchmark for a baseline) between the two sessions of the switch.
  What tells this from a regression later reverted is the commit: a revert touches the
  kernel.  Where it is not known for every switch (no git provenance, the usual case of
  plain CSVs), the series must visit each level at least twice and switch at least
  :data:`MIN_UNKNOWN_SWITCHES` times (``low high low high low``), which a change and its
  revert (``low high low``) does not, nor a change, its revert and its re-land (``low
  high low high``: in the spread corpora of ``bench/detection.py``, 5 of 767 regressions
  of 5% or more were lost to an unstable mark of that shape, on the grid of noise models
  8 of 10% or more).
* **Against its baselines too.**  The code under test's levels are judged a second time
  less the median of its baselines' in the same session and workload (each centred as
  above), and the series is unstable only when both readings pass every test above: a
  move of the machine that every provider shares is no switch of the kernel's.  Without
  it, two regressions with a machine move between them read as two levels visited twice
  (the grid's ``3 workloads``, ``bench/README.md``: layer_norm forward on the H100,
  +18%, then every provider about 9% faster, then +22%: raw levels ``low high low
  high``, less the control a climb), and neither regression was reported.  The raw
  reading stays required: a steady kernel beside an alternating baseline alternates
  against it, and is not the unstable one.

A series is ``unstable`` too when its findings at the same code move both ways
(:mod:`kiana.stats.restless`).

Such a series gets one ``quality`` row (kind ``unstable``: its two levels, the sessions
at each and its switches), no ``outlier`` rows (a session at its other level is one of
its levels), its steps and findings become ``inconclusive`` with a sentence naming the
levels (the ``unstable`` rule of :mod:`kiana.stats.sweeps`), and coverage
counts its workload series as not compared, ``unstable``.  The kernel's speed cannot be
judged from such a series: only rerunning it enough to know which level is which, or
pinning the configuration, can.

Code changes come from the :class:`~kiana.stats.CodeChanges` a judge is given: a
baseline's from its ``benchmark_changed`` steps, the code under test's from its
``kernel_changed`` method where it has one (:class:`KernelChanges`).
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import polars as pl

from kiana.stats.options import JudgeOptions
from kiana.stats.outliers import mark_outliers
from kiana.stats.quality import shaped
from kiana.vocabulary import FINDING_KEYS, UNSTABLE

#: The sweep series: what a finding's verdict is about, sessions aside.
SWEEP: tuple[str, ...] = ("kernel", "pass", "provider", "gpu", "metric")
#: Sessions each level holds, at least.
MIN_SESSIONS = 2
#: Ashman's D of the two levels, at least (module docstring).
MIN_D = 4.0
#: Switches of level without a commit touching the kernel, at least.
MIN_SWITCHES = 2
#: Without code changes known for every switch: stints of each level, at least.
MIN_STINTS = 2
#: Without code changes known for every switch: switches of level, at least (a change,
#: its revert and its re-land switch three times).
MIN_UNKNOWN_SWITCHES = 4

#: The columns of :func:`detect`'s frame, in order.
UNSTABLE_COLUMNS: tuple[str, ...] = (
    *SWEEP, "partition_id", "sessions", "low", "high", "low_sessions", "high_sessions",
    "switches", "ashman_d", "levels", "note",
)  # fmt: skip


@runtime_checkable
class KernelChanges(Protocol):
    """A :class:`~kiana.stats.CodeChanges` that also knows the code under test's."""

    def kernel_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """``pairs`` (``kernel, from_origin, to_origin``) plus ``kernel_changed``: a
        commit between the two origins touches the kernel's code (null: not known)."""
        ...


def mark_kernel_changes(steps: pl.DataFrame, code_changes: object | None) -> pl.DataFrame:
    """``steps`` with ``kernel_changed`` (null: not known): for a baseline, its benchmark
    changed (:mod:`kiana.stats.codechanges`, known where both origins are); for the code
    under test, what ``code_changes.kernel_changed`` answers (:class:`KernelChanges`)."""
    unknown = pl.lit(None, pl.Boolean)
    if code_changes is None or steps.height == 0:
        return steps.with_columns(unknown.alias("kernel_changed"))
    known = pl.col("from_origin").is_not_null() & pl.col("to_origin").is_not_null()
    baseline = pl.when(known).then(pl.col("benchmark_changed")).otherwise(unknown)
    if not isinstance(code_changes, KernelChanges):
        return steps.with_columns(
            pl.when(pl.col("is_subject")).then(unknown).otherwise(baseline).alias("kernel_changed")
        )
    keys = ["kernel", "from_origin", "to_origin"]
    pairs = (
        steps.filter(pl.col("is_subject"))
        .select(pl.col(c).cast(pl.String) for c in keys)
        .unique()
        .sort(keys, nulls_last=True)
    )
    answer = code_changes.kernel_changed(pairs).select(
        *(pl.col(c).cast(pl.String) for c in keys),
        pl.col("kernel_changed").cast(pl.Boolean).alias("_kc"),
    )
    joined = steps.join(
        answer.unique(keys, keep="first"), on=keys, how="left", nulls_equal=True,
        maintain_order="left",
    )  # fmt: skip
    return joined.with_columns(
        pl.when(pl.col("is_subject"))
        .then(pl.col("_kc"))
        .otherwise(baseline)
        .alias("kernel_changed")
    ).drop("_kc")


def session_levels(points: pl.DataFrame, *, controlled: bool = False) -> pl.DataFrame:
    """One row per sweep series and session, in session order: ``z`` (the sweep's level,
    module docstring), ``noise2`` (its variance), ``level`` (the median of its workloads'
    medians), ``k`` (workloads), ``partition_id`` (its first).  ``controlled``: each
    workload's centred log median of the code under test less the median of its
    baselines' in the same session (where it has one; the baselines' own levels raw)."""
    window = ["partition_id", "provider", "metric"]
    pts = points.filter(pl.col("log_median").is_not_null())
    sitting = pl.col("sitting_sigma") if "sitting_sigma" in pts.columns else pl.lit(0.0)
    sigma = pl.col("sigma") if "sigma" in pts.columns else pl.lit(0.0)
    centered = pl.col("log_median") - pl.col("log_median").median().over(window)
    pts = pts.with_columns(centered.alias("_c"))
    if controlled and "is_subject" in pts.columns:
        cell = ["partition_id", "metric", "session"]
        common = (
            pts.filter(~pl.col("is_subject"))
            .group_by(cell)
            .agg(pl.col("_c").median().alias("_common"))
        )
        pts = pts.join(common, on=cell, how="left", maintain_order="left").with_columns(
            pl.when(pl.col("is_subject") & pl.col("_common").is_not_null())
            .then(pl.col("_c") - pl.col("_common"))
            .otherwise(pl.col("_c"))
            .alias("_c")
        )
    return (
        pts.with_columns(sigma.fill_null(0.0).alias("_s"), sitting.fill_null(0.0).alias("_sit"))
        .group_by(*SWEEP, "session", maintain_order=True)
        .agg(
            pl.col("_c").median().alias("z"),
            pl.len().alias("k"),
            (pl.col("_s").pow(2).mean() / pl.len() + pl.col("_sit").median().pow(2)).alias("noise2"),
            pl.col("median").median().alias("level"),
            pl.col("partition_id").min(),
            pl.col("version_rank").min().alias("_rank"),
            pl.col("first_observed_at").min().alias("_at"),
        )
        .sort(*SWEEP, "_rank", "_at")
    )  # fmt: skip


def _split(levels: pl.DataFrame) -> pl.DataFrame:
    """Per sweep series, the cut between its two levels: Fisher's optimal split of the
    sorted ``z`` (least within-group sum of squares, each group at least
    :data:`MIN_SESSIONS`)."""
    by = list(SWEEP)
    z = pl.col("z")
    s = levels.sort(*by, "z").with_columns(
        pl.len().over(by).alias("_n"),
        pl.int_range(1, pl.len() + 1).over(by).alias("_j"),
        z.cum_sum().over(by).alias("_c1"),
        z.pow(2).cum_sum().over(by).alias("_c2"),
        z.sum().over(by).alias("_t1"),
        z.pow(2).sum().over(by).alias("_t2"),
        z.shift(-1).over(by).alias("_next"),
    )
    j, n = pl.col("_j"), pl.col("_n")
    left = pl.col("_c2") - pl.col("_c1").pow(2) / j
    right = (pl.col("_t2") - pl.col("_c2")) - (pl.col("_t1") - pl.col("_c1")).pow(2) / (n - j)
    valid = (j >= MIN_SESSIONS) & (n - j >= MIN_SESSIONS)
    s = s.with_columns(pl.when(valid).then(left + right).alias("_sse"))
    return (
        s.filter(pl.col("_sse").is_not_null())
        .sort(*by, "_sse", "_j")
        .group_by(by, maintain_order=True)
        .agg(((pl.col("z") + pl.col("_next")) / 2.0).first().alias("_cut"))
    )


def detect(points: pl.DataFrame, steps: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """One row per unstable sweep series (module docstring; columns
    :data:`UNSTABLE_COLUMNS`).  ``points``: the judged session points with their noise
    (``sigma``, ``sitting_sigma``); ``steps``: with ``kernel_changed``
    (:func:`mark_kernel_changes`) where code changes are known."""
    if points.height == 0 or options.baseline is not None:
        return empty()
    by = list(SWEEP)
    changed = _changed_at(steps)
    found = _found(session_levels(points), changed, options)
    if found.height == 0:
        return found
    # The same rule on the levels less the baselines' (a move of the machine that every
    # provider shares is no switch of the kernel's): both must find the series unstable.
    cells = points.join(found.select(by), on=by, how="semi").select("partition_id", "metric")
    near = points.join(cells.unique(), on=["partition_id", "metric"], how="semi")
    controlled = session_levels(near, controlled=True).join(found.select(by), on=by, how="semi")
    again = _found(controlled, changed, options)
    return found.join(again.select(by), on=by, how="semi", maintain_order="left")


def _found(levels: pl.DataFrame, changed: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """The rule of the module docstring on one set of session ``levels``."""
    by = list(SWEEP)
    levels = levels.filter(pl.len().over(by) >= 2 * MIN_SESSIONS)
    if levels.height == 0:
        return empty()
    high = pl.col("z") > pl.col("_cut")
    framed = (
        levels.join(_split(levels), on=by, how="inner", maintain_order="left")
        .with_columns(high.alias("_high"))
        .with_columns(
            (pl.col("_high") != pl.col("_high").shift(1).over(by)).alias("_switch"),
            pl.col("session").shift(1).over(by).alias("_from"),
        )
    )
    framed = framed.join(
        changed, left_on=[*by, "_from", "session"], right_on=[*by, "from_session", "to_session"],
        how="left", maintain_order="left",
    )  # fmt: skip
    return _judge(framed, options)


def _changed_at(steps: pl.DataFrame) -> pl.DataFrame:
    """Per sweep series and pair of sessions: a commit touched the kernel (null: not
    known for every workload's step)."""
    by = [*SWEEP, "from_session", "to_session"]
    if "kernel_changed" not in steps.columns or steps.height == 0:
        schema = {**dict.fromkeys(by, pl.String()), "_kc": pl.Boolean()}
        return pl.DataFrame(schema=schema)
    kc = pl.col("kernel_changed")
    return steps.group_by(by).agg(
        pl.when(kc.any()).then(True).when(kc.is_not_null().all()).then(False).alias("_kc")
    )


def _judge(framed: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """The rule of the module docstring over the sessions of each sweep series."""
    by = list(SWEEP)
    hi, z = pl.col("_high"), pl.col("z")
    switch = pl.col("_switch").fill_null(False)
    stint = switch | pl.col("_switch").is_null()
    g = framed.group_by(by, maintain_order=True).agg(
        pl.col("partition_id").min(),
        pl.len().alias("sessions"),
        z.filter(~hi).mean().alias("_mu_lo"),
        z.filter(hi).mean().alias("_mu_hi"),
        z.filter(~hi).std().fill_null(0.0).alias("_sd_lo"),
        z.filter(hi).std().fill_null(0.0).alias("_sd_hi"),
        pl.col("noise2").median().sqrt().alias("_floor"),
        pl.col("level").filter(~hi).median().alias("low"),
        pl.col("level").filter(hi).median().alias("high"),
        (~hi).sum().cast(pl.Int64).alias("low_sessions"),
        hi.sum().cast(pl.Int64).alias("high_sessions"),
        switch.sum().cast(pl.Int64).alias("switches"),
        (switch & ~pl.col("_kc").fill_null(False)).sum().cast(pl.Int64).alias("_free"),
        (switch & pl.col("_kc").is_not_null()).sum().alias("_known"),
        (stint & ~hi).sum().alias("_stints_lo"),
        (stint & hi).sum().alias("_stints_hi"),
    )
    s_lo = pl.max_horizontal("_sd_lo", "_floor")
    s_hi = pl.max_horizontal("_sd_hi", "_floor")
    gap = pl.col("_mu_hi") - pl.col("_mu_lo")
    g = g.with_columns(
        (math.sqrt(2.0) * gap / (s_lo.pow(2) + s_hi.pow(2)).sqrt()).alias("ashman_d"),
        gap.alias("_gap"),
    )
    known = pl.col("_known") == pl.col("switches")
    comes_back = (pl.col("_free") >= MIN_SWITCHES) & (
        known
        | ((pl.col("_stints_lo") >= MIN_STINTS) & (pl.col("_stints_hi") >= MIN_STINTS)
           & (pl.col("switches") >= MIN_UNKNOWN_SWITCHES))
    )  # fmt: skip
    found = g.filter(
        (pl.col("ashman_d") >= MIN_D)
        & (pl.col("_gap") >= math.log1p(options.resolution * options.threshold))
        & comes_back
    )
    return found.with_columns(_levels().alias("levels")).with_columns(
        _note(known).alias("note")
    ).select(UNSTABLE_COLUMNS)  # fmt: skip


def amount(value: pl.Expr) -> pl.Expr:
    """A level in its unit: ``8.7 µs`` (latency, stored in ns) or ``512.0 MB``.

    >>> levels = pl.DataFrame({"metric": ["latency", "latency", "memory"], "v": [8700.0, 2.5e6, 512.0]})
    >>> levels.select(amount(pl.col("v")))["v"].to_list()
    ['8.7 µs', '2.5 ms', '512.0 MB']
    """
    latency = pl.col("metric") == "latency"
    ns = value
    return (
        pl.when(~latency).then(value.round(1).cast(pl.String) + pl.lit(" MB"))
        .when(ns >= 1e6).then((ns / 1e6).round(2).cast(pl.String) + pl.lit(" ms"))
        .when(ns >= 1e3).then((ns / 1e3).round(1).cast(pl.String) + pl.lit(" µs"))
        .otherwise(ns.round(0).cast(pl.Int64).cast(pl.String) + pl.lit(" ns"))
    )  # fmt: skip


def _levels() -> pl.Expr:
    """``8.7 µs (22 sessions) and 53.3 µs (5 sessions)``."""
    return (
        amount(pl.col("low")) + pl.lit(" (") + pl.col("low_sessions").cast(pl.String)
        + pl.lit(" sessions) and ") + amount(pl.col("high")) + pl.lit(" (")
        + pl.col("high_sessions").cast(pl.String) + pl.lit(" sessions)")
    )  # fmt: skip


def _note(known: pl.Expr) -> pl.Expr:
    """The sentence every unstable step, finding and quality row says."""
    why = (
        pl.when(known)
        .then(pl.lit("with no commit touching the kernel between them"))
        .otherwise(pl.lit("each level visited more than once"))
    )
    return (
        pl.lit("unstable series: alternates between ") + pl.col("levels") + pl.lit(", ")
        + (pl.col("high") / pl.col("low")).round(1).cast(pl.String) + pl.lit("x apart (Ashman's D ")
        + pl.col("ashman_d").round(1).cast(pl.String) + pl.lit("), switching level ")
        + pl.col("switches").cast(pl.String) + pl.lit(" times, ") + why
        + pl.lit(": not a change of the kernel's, could not judge")
    )  # fmt: skip


def empty() -> pl.DataFrame:
    """:func:`detect`'s frame without rows."""
    schema: dict[str, pl.DataType] = {c: pl.String() for c in UNSTABLE_COLUMNS}
    for c in ("sessions", "low_sessions", "high_sessions", "switches"):
        schema[c] = pl.Int64()
    for c in ("low", "high", "ashman_d"):
        schema[c] = pl.Float64()
    return pl.DataFrame(schema=schema)


def mark_outliers_and_unstable(
    steps: pl.DataFrame, found: pl.DataFrame, options: JudgeOptions
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`kiana.stats.outliers.mark_outliers` of the steps outside the unstable series
    ``found`` (a session of an unstable series at its other level is one of its levels, not
    an outlier), then :func:`mark`; the steps in their order, and the outliers' quality
    rows."""
    if found.height == 0:
        marked, outliers = mark_outliers(steps, options)
        return mark(marked, found), outliers
    keys = found.select(SWEEP)
    rows = steps.with_row_index("_row")
    rest, outliers = mark_outliers(rows.join(keys, on=list(SWEEP), how="anti"), options)
    hit = rows.join(keys, on=list(SWEEP), how="semi").with_columns(pl.lit(False).alias("outlier"))
    both = pl.concat([rest, hit], how="diagonal_relaxed").sort("_row").drop("_row")
    return mark(both, found), outliers


def mark(steps: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``steps`` with ``unstable`` and ``unstable_note``; the steps of an unstable series
    are ``inconclusive``, their evidence led by its note."""
    table = found.select(
        *SWEEP, pl.lit(True).alias("unstable"), pl.col("note").alias("unstable_note")
    )
    marked = steps.drop("unstable", "unstable_note", strict=False).join(
        table, on=list(SWEEP), how="left", maintain_order="left"
    )
    hit = pl.col("unstable").fill_null(False)
    return marked.with_columns(
        hit.alias("unstable"),
        pl.when(hit).then(pl.lit("inconclusive")).otherwise(pl.col("verdict")).alias("verdict"),
        pl.when(hit).then(pl.col("unstable_note") + pl.lit("; ") + pl.col("evidence"))
        .otherwise(pl.col("evidence")).alias("evidence"),
    )  # fmt: skip


def quality(found: pl.DataFrame) -> pl.DataFrame:
    """One ``quality`` row (kind ``unstable``) per unstable sweep series: ``runs`` its
    sessions, ``ratio`` high over low, ``levels`` and ``switches``."""
    return found.with_columns(
        pl.lit(UNSTABLE).alias("kind"),
        pl.lit(None, pl.String).alias("workload"),
        pl.lit(None, pl.String).alias("version"),
        pl.lit(None, pl.String).alias("session"),
        pl.col("sessions").cast(pl.Int64).alias("runs"),
        (pl.col("high") / pl.col("low")).alias("ratio"),
        pl.col("note").alias("message"),
    ).pipe(shaped)


def finding_marks(grouped: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """``grouped`` (one row per finding, :func:`kiana.stats.aggregate.aggregate`) with
    ``_unstable`` and ``_unstable_note`` of its series, which the ``unstable`` rule of
    :mod:`kiana.stats.sweeps` reads (from :func:`mark` on its steps; none unmarked)."""
    keys = list(FINDING_KEYS)
    if "unstable" not in steps.columns:
        return grouped.with_columns(
            pl.lit(False).alias("_unstable"), pl.lit(None, pl.String).alias("_unstable_note")
        )
    marks = (
        steps.filter(pl.col("unstable"))
        .group_by(keys)
        .agg(pl.col("unstable_note").first().alias("_unstable_note"))
    )
    joined = grouped.join(marks, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return joined.with_columns(pl.col("_unstable_note").is_not_null().alias("_unstable"))
