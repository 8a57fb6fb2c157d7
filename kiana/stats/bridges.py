"""Bridges: a change across a session too noisy to place it.

A *shifted* sitting (:mod:`kiana.stats.states`) moves each provider by its own offset
of several percent, which a same-sitting control does not cancel.  Both steps through
such a session carry that offset: a 10% regression between two calm sittings ``P``
and ``N`` with a shifted ``S`` between them is two ``inconclusive`` findings, ``P ->
S`` and ``S -> N``, each with a standard error of 4-8%.  No judge of one step can do
better (``bench/ceiling.py``: even an oracle that knows each sitting's state finds
such a change about a third of the time).  The evidence outside the pair can: ``P``
and ``N`` themselves, compared directly, do not carry ``S``'s offset.

So for every session ``S`` of a series whose two steps (``P -> S``, ``S -> N``) are
neither flagged (regression, improvement, drift) and one of them is
``inconclusive``, the sessions ``P`` and ``N`` are judged as one step, the *bridge*,
by the judge itself: every provider's points of ``P`` and ``N`` paired, the sitting
state of that pair of sittings from its own scatter, the same-sitting control, the
pooled sweep and the rules of :mod:`kiana.stats.sweeps`, with the calibration of the
GPU (a bridge is a step of the series without ``S``).  A bridge that the rules call a
regression or an improvement of the code under test is a finding between ``P`` and
``N`` with ``basis`` ``bridge``, for a provider whose own two steps through ``S`` were
such (one whose step there is flagged has placed its change already): the change
happened in one of the two steps, and the finding says it cannot tell which ("across S, a session too noisy to place the change
in").  Its culprits are the commits between ``P`` and ``N``.

A bridge spans two steps, so what its control did across it cannot be told apart: a
machine that drifted in one step and a baseline whose own code changed in the other
leave the control adjusted change of an unchanged kernel far from zero.  A bridge is
therefore kept only where its control held still (the control's own bridge is not a
regression, improvement or drift).  And it is a second look at sessions already
judged, at the places where the first look failed, so its bar is raised: its estimate
must be separated from zero by
:attr:`~kiana.stats.options.JudgeOptions.bridge_separation` standard errors (default
twice ``separation``), on its own rule's basis.  On the realistic corpora
(``bench/detection.py``; ``bench/README.md``, "Round 5"), a bar of 4 found one more
regression of 10% or more on the tuned seeds for about 8 more falsely charged groups,
and none on the held-out seeds for about 11; at 6, with the control held still, the
bridges of 20 corpora found 10 more of 204 regressions of 10% or more, and one
unchanged group was charged to a false one.

That the change lies somewhere between two sessions rather than in one step is the
method of interval-censored change location (the change is known to lie in an
interval, not at a point: Turnbull 1976, "The empirical distribution function with
arbitrarily grouped, censored and truncated data", JRSS B 38), applied to one change
between two calm observations.
"""

from __future__ import annotations

import polars as pl

from kiana.stats.options import JudgeOptions
from kiana.stats.sessions import session_label
from kiana.vocabulary import BRIDGE, FLAGGED, SERIES_KEYS

#: What a bridge is of: one kernel, pass, GPU and metric, across one session.
SCOPE: tuple[str, ...] = ("kernel", "pass", "gpu", "metric")


def candidates(findings: pl.DataFrame) -> pl.DataFrame:
    """The sessions to bridge (module docstring): one row per ``SCOPE`` and ``S``, with
    ``P``, ``N`` and the version labels of the three.  ``findings`` are the judge's,
    before bridges.

    >>> import polars as pl
    >>> f = pl.DataFrame({
    ...     "kernel": ["k"] * 3, "pass": ["full"] * 3, "gpu": ["g"] * 3,
    ...     "metric": ["latency"] * 3, "provider": ["liger"] * 3, "is_subject": [True] * 3,
    ...     "from_version": ["1", "2", "3"], "to_version": ["2", "3", "4"],
    ...     "from_session": ["a", "b", "c"], "to_session": ["b", "c", "d"],
    ...     "verdict": ["unchanged", "inconclusive", "regression"],
    ...     "basis": ["unchanged", "inconclusive", "adjusted"]})
    >>> candidates(f).select("P", "S", "N").rows()
    [('a', 'b', 'c')]
    """
    steps = findings.filter(pl.col("is_subject"), pl.col("basis").is_not_null())
    # Every pair of a provider's steps through one session (a session may start two steps
    # of one provider: sittings of two files), each step's verdict beside it.
    into = steps.select(
        *SCOPE, "provider", pl.col("from_session").alias("P"), pl.col("to_session").alias("S"),
        pl.col("from_version").alias("P_version"), pl.col("to_version").alias("S_version"),
        "verdict", "basis",
    )  # fmt: skip
    out = steps.select(
        *SCOPE, "provider", pl.col("from_session").alias("S"), pl.col("to_session").alias("N"),
        pl.col("to_version").alias("N_version"), pl.col("verdict").alias("_next_verdict"),
        pl.col("basis").alias("_next_basis"),
    )  # fmt: skip
    pairs = into.join(out, on=[*SCOPE, "provider", "S"], how="inner")
    # A flagged step places a change there already.
    unplaced = ~pl.col("verdict").is_in(FLAGGED) & ~pl.col("_next_verdict").is_in(FLAGGED)
    unresolved = (pl.col("basis") == "inconclusive") | (pl.col("_next_basis") == "inconclusive")
    # One bridge per session, the nearest sessions on either side first: the same choice
    # whatever order the rows came in (a tie left to that order moved with every load).
    order = [*SCOPE, "S", "P", "N", "provider"]
    picked = (
        pairs.filter(unplaced & unresolved)
        .select(*SCOPE, "provider", "P", "S", "N", "P_version", "S_version", "N_version")
        .sort(order, descending=[c == "P" for c in order])
    )
    # Whose own steps could not place it: a provider with a flagged step there has placed
    # its change already, and its bridge would report that change a second time.
    providers = picked.group_by(*SCOPE, "P", "S", "N").agg(
        pl.col("provider").unique().alias("providers")
    )
    return (
        picked.drop("provider")
        .unique([*SCOPE, "S"], keep="first", maintain_order=True)
        .join(providers, on=[*SCOPE, "P", "S", "N"], how="left", maintain_order="left")
    )


def bridge_points(points: pl.DataFrame, cands: pl.DataFrame) -> pl.DataFrame:
    """The points of every provider and workload of each candidate's ``P`` and ``N``,
    each candidate its own series (``series_id``), in series and session order: what
    :func:`kiana.stats.steps.pair_points` pairs into the bridges' steps."""
    ends = pl.concat(
        [cands.select(*SCOPE, pl.col(end).alias("session"), "S") for end in ("P", "N")]
    )
    picked = points.join(ends, on=[*SCOPE, "session"], how="inner")
    series = pl.struct(*SERIES_KEYS, "S").rank("dense").cast(pl.Int64) - 1
    return picked.with_columns(series.alias("series_id")).sort("series_id", "position").drop("S")


def mark(steps: pl.DataFrame, judged: pl.DataFrame, cands: pl.DataFrame) -> pl.DataFrame:
    """Add ``aa`` (never: a bridge spans a session), ``benchmark_changed`` and
    ``benchmark_note`` to the bridges' ``steps``: a benchmark changed across a bridge
    when it changed in either of its steps (``judged``: the judge's own steps)."""
    keyed = steps.join(
        cands.select(
            *SCOPE, pl.col("P").alias("from_session"), pl.col("N").alias("to_session"), "S"
        ),
        on=[*SCOPE, "from_session", "to_session"],
        how="left",
        maintain_order="left",
    )
    changed = judged.select(
        *SERIES_KEYS, "from_session", "to_session", "benchmark_changed", "benchmark_note"
    )
    halves = [
        keyed.select(*SERIES_KEYS, "from_session", "to_session", pl.col(a).alias("_a"), pl.col(b).alias("_b"))
        .join(
            changed.rename({"from_session": "_a", "to_session": "_b"}),
            on=[*SERIES_KEYS, "_a", "_b"],
            how="inner",
        )
        .drop("_a", "_b")
        for a, b in (("from_session", "S"), ("S", "to_session"))
    ]  # fmt: skip
    either = (
        pl.concat(halves)
        .group_by(*SERIES_KEYS, "from_session", "to_session")
        .agg(
            pl.col("benchmark_changed").any(),
            pl.col("benchmark_note").filter(pl.col("benchmark_changed")).drop_nulls().first(),
        )
    )
    return (
        keyed.drop("S")
        .join(
            either,
            on=[*SERIES_KEYS, "from_session", "to_session"],
            how="left",
            maintain_order="left",
        )
        .with_columns(pl.lit(False).alias("aa"), pl.col("benchmark_changed").fill_null(False))
    )


def mark_outliers(steps: pl.DataFrame, outliers: pl.DataFrame) -> pl.DataFrame:
    """Add ``outlier`` to the bridges' ``steps``: a workload whose ``P`` or ``N`` is an
    outlier session of its partition (the judge's ``outlier`` quality rows, any
    provider: one session off its neighbours and back, :mod:`kiana.stats.outliers`) is
    no evidence, as in the judge's own steps; the session a bridge crosses may be one."""
    off = outliers.select("partition_id", "session").unique()
    marked = pl.concat(
        [
            steps.join(
                off, left_on=["partition_id", end], right_on=["partition_id", "session"], how="semi"
            ).select("partition_id", "from_session", "to_session")
            for end in ("from_session", "to_session")
        ]
    ).unique()
    return steps.join(
        marked.with_columns(pl.lit(True).alias("outlier")),
        on=["partition_id", "from_session", "to_session"],
        how="left",
        maintain_order="left",
    ).with_columns(pl.col("outlier").fill_null(False))


def keep(found: pl.DataFrame, cands: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """The bridges' findings that report a change: the code under test's regressions
    and improvements separated by ``bridge_separation`` whose control held still, as
    ``basis`` ``bridge`` findings whose evidence first names the session they span."""
    flagged = found.filter(
        pl.col("is_subject"),
        pl.col("verdict").is_in(["regression", "improvement"]),
        (pl.col("severity").abs() >= options.bridge_separation).fill_null(False),
    )
    # A control that moved across the bridge (the machine, its own code, or both: a bridge
    # spans two steps and cannot tell them apart) is no control of it.
    moved = found.filter(~pl.col("is_subject"), pl.col("verdict").is_in(FLAGGED)).select(
        *SCOPE, pl.col("provider").alias("control_provider"), "from_session", "to_session"
    )
    flagged = flagged.join(
        moved, on=[*SCOPE, "control_provider", "from_session", "to_session"], how="anti"
    )
    across = cands.select(
        *SCOPE,
        pl.col("P").alias("from_session"),
        pl.col("N").alias("to_session"),
        session_label(pl.col("S_version"), pl.col("S")).alias("_across"),
        pl.col("providers").alias("provider"),
    ).explode("provider")
    joined = flagged.join(
        across,
        on=[*SCOPE, "provider", "from_session", "to_session"],
        how="inner",
        maintain_order="left",
    )
    sentence = pl.concat_str(
        pl.lit("across "), pl.col("_across"),
        pl.lit(", a session too noisy to place the change in (neither step through it could"
               " place it), the two sessions compared directly: "),
        pl.col("evidence"),
    )  # fmt: skip
    return joined.with_columns(pl.lit(BRIDGE).alias("basis"), sentence.alias("evidence")).select(
        found.columns
    )
