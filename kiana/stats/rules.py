"""The rule table of findings: the first rule whose condition holds decides a finding's
verdict (:func:`kiana.stats.sweeps.findings` applies it to the pooled estimates of a sweep).

An estimate is *flagged* when it is separated from zero (``|mu| >= separation * se``)
and reaches the threshold within one standard error (``|mu| + se >= ln(1 +
threshold)``).  The verdict is the first rule of :func:`rules` whose condition holds;
each rule also says which change the verdict rests on (``change``, ``change_se``,
``adjusted``), which workloads carry it (``workloads``) and the first clause of the
evidence, in plain words.  The *subject* is a provider of role ``subject`` (the code
under test, :mod:`kiana.harness`: Liger's ``liger``, ``liger_*``), a *baseline* any
other.  In order:

==================  =====================================================================
``unstable``        the sweep series alternates between two levels without a change of
                    its code (:mod:`kiana.stats.unstable`): ``inconclusive``, its levels said
``outlier``         every step touches an outlier session (:mod:`kiana.stats.outliers`):
                    ``inconclusive``
``benchmark``       a baseline whose benchmark changed (:mod:`kiana.stats.codechanges`)
                    moved: its own regression or improvement, never ``drift``
``baseline_memory`` a baseline's memory moved: the benchmark changed (memory does not
                    move with the machine), never ``drift``
``baseline``        a baseline's latency moved: ``drift`` (a drift indicator)
``memory``          the subject's memory moved: its change, whatever the control did
``unguarded``       the subject moved and its benchmark changed: judged without a control
``control_alone``   the adjusted change is flagged but the subject's own is not, and
                    the control moved the other way: the baseline changed, not the
                    subject (``unchanged`` or ``inconclusive`` on its own change)
``opposed``         the control-adjusted change is flagged and the subject's own change is
                    too, at least the threshold the other way (:data:`~kiana.stats.floors.OPPOSED`):
                    ``inconclusive``
``adjusted``        the control-adjusted change is flagged: the subject's change
``drift``           the subject moved by at least the threshold and its control moved with it
                    (:func:`kiana.stats.controls.control_moved`), the adjusted change is
                    not flagged: the machine moved
``raw``             the subject moved and its control did not move with it (or none);
                    with a control, by at least ``resolution * threshold`` (9%,
                    :func:`~kiana.stats.floors.raw_floor`)
``raw_small``       the ``raw`` rule's move under its floor: ``inconclusive`` on the
                    subject's own change (a move of a restless series,
                    :mod:`kiana.stats.restless`)
``lone``            the sweep did not move, one workload far beyond the rest of it did
                    (:func:`kiana.stats.pooling.lone`; a minority: at most
                    ``max(1, (k - 1) // 2)`` of the ``k >= 3`` workloads with noise
                    information; of two, either may have left the other): a change of
                    that workload; against its control, or on its own step where the
                    control is too noisy there to adjust by, the sitting calm and the
                    move at least ``resolution * threshold`` (9%)
                    (:mod:`kiana.stats.aggregate`); either way off the rest by at least
                    that 9% (:func:`~kiana.stats.floors.lone_floor`); against its
                    control it moved at least as far as the rest did (it left them:
                    one that stayed while they moved is far off them too); of several
                    lone workloads the one farthest off the rest, in standard errors,
                    gives the direction
``lone_small``      the ``lone`` rule's workload under its floor: ``inconclusive``
``gross``           no noise information, every workload moved ``gross_change`` (25%)
                    the same way: called on size alone
``unchanged``       the data rule out the threshold (the equivalence rule below), the
                    sweep's median workload stays inside it too (:func:`settled`), and
                    the estimate could have separated ``resolution * threshold`` (9%);
                    the sentence gives the smallest change it would have flagged,
                    ``max(threshold, exp(separation * se) - 1)``
``inconclusive``    otherwise, with ``reruns``: runs per session (each side) that would
                    bring the noise part of the standard error to ``ln(1 + threshold) /
                    separation`` (null when the scatter between workloads or the sitting
                    offset alone is too large: reruns will not resolve it); the sentence
                    says which way the data lean (:func:`leaning`)
==================  =====================================================================

The equivalence rule (``unchanged``, and ``control_alone``'s ``unchanged``): the two
one-sided tests of Schuirmann (1987, "A comparison of the two one-sided tests procedure
and the power approach for assessing the equivalence of average bioavailability",
Journal of Pharmacokinetics and Biopharmaceutics 15): a change is ruled out to the margin
``Δ = ln(1 + threshold)`` when both ``H0: μ >= Δ`` and ``H0: μ <= -Δ`` are rejected,
i.e. when the interval ``mu ± z se`` lies inside ``(-Δ, Δ)``, here with ``z =``
:data:`EQUIVALENCE_Z` (1: the one standard error within which a flagged finding must
reach the threshold, so no estimate is both flagged and ruled out, and none whose own
estimate, or its one-standard-error interval, reaches the threshold is ``unchanged``).
The Liger case that asked for it (issue 39): jsd/full on the H100 PCIe, 0.3.0 -> 0.3.1,
"+5.8% ± 2.3%" was ``unchanged`` (3 x 2.3% resolves 9%); it is ``inconclusive``, "leans
regression", with the reruns that would settle it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from kiana.stats.controls import control_moved
from kiana.stats.evidence import pct
from kiana.stats.floors import (
    OPPOSED,
    SMALL_LONE,
    SMALL_RAW,
    lone_floor,
    raw_apart,
    raw_floor,
)
from kiana.stats.options import JudgeOptions


@dataclass(frozen=True)
class Rule:
    """One basis of a finding: a row of the table of :func:`rules` (in the shape of
    :data:`kiana.load.validate.CHECKS`: the first row whose condition holds decides)."""

    name: str
    when: pl.Expr  #: the condition; the first rule that holds decides
    verdict: pl.Expr
    change: pl.Expr  #: the log change the verdict rests on
    se: pl.Expr  #: its standard error
    adjusted: pl.Expr  #: whether that change is control-adjusted
    workloads: pl.Expr  #: the workloads that carry it (comma-separated), null for none
    sentence: pl.Expr  #: the first clause of the evidence


#: The equivalence rule's ``z`` (module docstring): ``unchanged`` needs ``|mu| + z se <
#: ln(1 + threshold)``.
EQUIVALENCE_Z = 1.0


def equivalent(mu: pl.Expr, se: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """The data rule out the threshold: Schuirmann's two one-sided tests at
    :data:`EQUIVALENCE_Z` (module docstring)."""
    return (mu.abs() + EQUIVALENCE_Z * se < math.log1p(options.threshold)).fill_null(False)


def leaning(verdict: pl.Expr, change: pl.Expr, se: pl.Expr) -> pl.Expr:
    """Which way an ``inconclusive`` finding's data lean: ``regression`` or ``improvement``
    when its estimate (``change``, relative; ``se``, log) is at least one standard error
    from zero, else null (as for every other verdict)."""
    mu = change.log1p()
    return (
        pl.when((verdict == "inconclusive") & (se > 0) & (mu.abs() >= se))
        .then(_direction(mu))
        .otherwise(pl.lit(None, pl.String))
    )


def _flag(mu: str, se: str, options: JudgeOptions) -> pl.Expr:
    """Separated from zero and reaching the threshold within one standard error."""
    m, s = pl.col(mu), pl.col(se)
    practical = m.abs() + s >= math.log1p(options.threshold)
    return ((s > 0) & (m.abs() >= options.separation * s) & practical).fill_null(False)


def _direction(mu: pl.Expr) -> pl.Expr:
    return pl.when(mu > 0).then(pl.lit("regression")).otherwise(pl.lit("improvement"))


def _smallest_flagged(se: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """The smallest change (log) an estimate of standard error ``se`` would have
    flagged: the threshold, or the separation times ``se`` where that is larger."""
    return pl.max_horizontal(pl.lit(math.log1p(options.threshold)), options.separation * se)


def _est(mu: pl.Expr, se: pl.Expr) -> pl.Expr:
    """``-10.6% ± 0.9%`` of a log estimate and its standard error."""
    return pct(mu.exp() - 1.0) + pl.lit(" ± ") + pct(se, signed=False)


def _text(*parts: str | pl.Expr) -> pl.Expr:
    """A sentence of literal strings and expressions."""
    return pl.concat_str([pl.lit(p) if isinstance(p, str) else p for p in parts])


def _on(basis: str) -> dict[str, pl.Expr]:
    """The change, standard error, ``adjusted`` flag and carrying workloads of a rule
    that rests on the ``raw`` or ``adj`` pooled estimate."""
    mu = pl.col(f"{basis}_mu")
    names = (
        pl.when(mu > 0).then(pl.col(f"_{basis}_up_names")).otherwise(pl.col(f"_{basis}_down_names"))
    )
    return {
        "change": mu,
        "se": pl.col(f"{basis}_se"),
        "adjusted": pl.lit(basis == "adj"),
        "workloads": names,
    }


def rules(options: JudgeOptions) -> tuple[Rule, ...]:
    """The rule table (module docstring), for these options."""
    raw, adj, ctl = pl.col("raw_mu"), pl.col("adj_mu"), pl.col("ctl_mu")
    raw_est, adj_est = _est(raw, pl.col("raw_se")), _est(adj, pl.col("adj_se"))
    ctl_est = _est(ctl, pl.col("ctl_se"))
    R, A = _flag("raw_mu", "raw_se", options), _flag("adj_mu", "adj_se", options)
    subject, memory = pl.col("is_subject"), pl.col("metric") == "memory"
    changed, has_adj = pl.col("benchmark_changed"), adj.is_not_null()
    moved_with = control_moved(ctl, pl.col("ctl_se"), raw, options)
    moved_alone = control_moved(ctl, pl.col("ctl_se"), -adj, options)
    basis = {
        "change": pl.when(has_adj).then(adj).otherwise(raw),
        "se": pl.when(has_adj).then(pl.col("adj_se")).otherwise(pl.col("raw_se")),
        "adjusted": has_adj, "workloads": pl.lit(None, pl.String),
    }  # fmt: skip
    median = pl.when(has_adj).then(pl.col("_adj_median_log")).otherwise(pl.col("_median_log"))
    resolvable = _ruled_out(basis["change"], basis["se"], median, options)
    raw_resolvable = _ruled_out(raw, pl.col("raw_se"), pl.col("_median_log"), options)
    who, control = pl.col("provider"), pl.col("control_provider")
    machine = ~subject & ~memory & ~changed  # a baseline whose move is the machine's

    def drift_or(mu: pl.Expr) -> pl.Expr:
        return pl.when(machine).then(pl.lit("drift")).otherwise(_direction(mu))

    lone = pl.col("_lone_mu")
    t = f"{options.threshold:.0%}"
    shown = _smallest_flagged(basis["se"], options)
    gross = f"no noise information; every workload moved >= {options.gross_change:.0%} the same way: called on size alone"
    said = _move_sentences(options, _est(basis["change"], basis["se"]))
    return (
        Rule("unstable", pl.col("_unstable"), pl.lit("inconclusive"), **basis, sentence=pl.col("_unstable_note")),
        Rule("outlier", pl.col("_outliers") == pl.col("workloads_total"), pl.lit("inconclusive"), **basis,
             sentence=_text("every workload's step touches an outlier session (one session off its neighbours and back at the next): not a change")),
        Rule("benchmark", ~subject & changed & R, _direction(raw), **_on("raw"),
             sentence=_text(who, " moved ", raw_est, " and its benchmark changed between sessions: ", pl.col("benchmark_note").fill_null(""))),
        Rule("baseline_memory", ~subject & memory & R, _direction(raw), **_on("raw"),
             sentence=_text(who, "'s memory moved ", raw_est, ": a baseline's memory does not move with the machine, so its benchmark changed")),
        Rule("baseline", ~subject & R, pl.lit("drift"), **_on("raw"),
             sentence=_text(who, " moved ", raw_est, " over the sweep: a baseline's move is the machine's (a drift indicator)")),
        Rule("memory", subject & memory & R, _direction(raw), **_on("raw"),
             sentence=_text(who, "'s memory moved ", raw_est, " over the sweep",
                            pl.when(moved_with).then(_text("; its control ", control, " moved ", pct(ctl.exp() - 1.0),
                                                           " too: memory does not move with the machine, so the benchmark may have changed"))
                            .otherwise(pl.lit("")))),
        Rule("unguarded", subject & changed & R, _direction(raw), **_on("raw"),
             sentence=_text(who, " moved ", raw_est, "; benchmark changed between sessions: ",
                            pl.col("benchmark_note").fill_null(""), ", so its baselines are no control")),
        Rule("control_alone", subject & A & ~R & moved_alone,
             pl.when(raw_resolvable).then(pl.lit("unchanged")).otherwise(pl.lit("inconclusive")),
             **(_on("raw") | {"workloads": pl.lit(None, pl.String)}),
             sentence=_text("its control ", control, " moved alone (", ctl_est, ") while ", who, " stayed flat (", raw_est,
                            "): a change of the baseline, not of ", who)),
        Rule(OPPOSED, subject & A & R & ((adj > 0) != (raw > 0)) & (raw.abs() >= math.log1p(options.threshold)),
             pl.lit("inconclusive"), **_on("adj"), sentence=said[OPPOSED]),
        Rule("adjusted", subject & A, _direction(adj), **_on("adj"),
             sentence=_text(who, " moved ", adj_est, " against its control ", control, " (", pct(ctl.exp() - 1.0), ")")),
        Rule("drift", subject & has_adj & R & (raw.abs() >= math.log1p(options.threshold)) & moved_with, pl.lit("drift"), **_on("raw"),
             sentence=_text("the machine moved, not the kernel: ", who, " ", raw_est, " and its control ", control, " ", ctl_est,
                            " (adjusted ", adj_est, ")")),
        Rule("raw", R & ~(has_adj & moved_with) & raw_floor(raw, has_adj, options)
             & raw_apart(raw, ctl, pl.col("ctl_se"), has_adj), _direction(raw), **_on("raw"), sentence=said["raw"]),
        Rule(SMALL_RAW, R & ~(has_adj & moved_with), pl.lit("inconclusive"), **_on("raw"), sentence=said[SMALL_RAW]),
        Rule("lone", (pl.col("_lone_n") > 0) & lone_floor(lone, options), drift_or(lone), change=lone,
             se=pl.col("_lone_se"), adjusted=pl.col("_lone_adjusted"), workloads=pl.col("_lone_names"),
             sentence=_lone_sentence(_est(basis["change"], basis["se"]), control)),
        Rule(SMALL_LONE, pl.col("_lone_n") > 0, pl.lit("inconclusive"), change=lone, se=pl.col("_lone_se"),
             adjusted=pl.col("_lone_adjusted"), workloads=pl.col("_lone_names"), sentence=said[SMALL_LONE]),
        Rule("gross", pl.col("_gross"), drift_or(pl.col("_median_log")), change=pl.col("_median_log"),
             se=pl.lit(None, pl.Float64), adjusted=pl.lit(False),
             workloads=pl.when(pl.col("_median_log") > 0).then(pl.col("_raw_up_names")).otherwise(pl.col("_raw_down_names")),
             sentence=_text(gross)),
        Rule("unchanged", resolvable, pl.lit("unchanged"), **basis,
             sentence=_text("no change beyond the noise: ", _est(basis["change"], basis["se"]),
                            pl.when(has_adj).then(_text(" against its control ", control)).otherwise(pl.lit("")),
                            "; a change of ", pct(shown.exp() - 1.0, signed=False), " would have shown")),
        Rule("inconclusive", pl.lit(True), pl.lit("inconclusive"), **basis,
             sentence=pl.when(pl.col("workloads_with_noise") == 0).then(pl.lit("no noise information on any workload"))
             .otherwise(_text("too uncertain: ", _est(basis["change"], basis["se"]), f" cannot rule out a {t} change",
                              _lean_clause(basis["change"], basis["se"]), _split_clause(median, basis["change"], options)))),
    )  # fmt: skip


def _move_sentences(options: JudgeOptions, sweep: pl.Expr) -> dict[str, pl.Expr]:
    """The first clauses of the rules that weigh the subject's own move against its
    control's (``opposed``, ``raw``, ``raw_small``, ``lone_small``); ``sweep``: the
    finding's pooled estimate, as the lone sentence shows it."""
    raw, ctl, has_adj = pl.col("raw_mu"), pl.col("ctl_mu"), pl.col("adj_mu").is_not_null()
    raw_est, ctl_est = _est(raw, pl.col("raw_se")), _est(ctl, pl.col("ctl_se"))
    who, control, floor = (
        pl.col("provider"),
        pl.col("control_provider"),
        options.resolution * options.threshold,
    )
    flat = _text(
        " while its control ", control, " did not move with it (", pct(ctl.exp() - 1.0), ")"
    )
    return {
        OPPOSED: _text(who, " moved ", _est(pl.col("adj_mu"), pl.col("adj_se")), " against its control ", control,
                       " (", ctl_est, ") but ", raw_est, " on its own: the two point opposite ways, and its"
                       " control alone cannot tell whether the machine moved or the control did"),
        "raw": _text(who, " moved ", raw_est, pl.when(has_adj).then(flat)
                     .otherwise(pl.lit(" over the sweep (no control measured the machine)"))),
        SMALL_RAW: pl.when(raw_floor(raw, has_adj, options))
        .then(_text(who, " moved ", raw_est, " and its control ", control, " ", ctl_est,
                    ": too near to rule out that the machine moved both"))
        .otherwise(_text(who, " moved ", raw_est, flat, f": under the {floor:.0%} a change must reach"
                         " without its control's support")),
        SMALL_LONE: _text(_lone_sentence(sweep, control), f": under the {floor:.0%} one workload must reach"
                          " beside a sweep that did not move"),
    }  # fmt: skip


def _ruled_out(mu: pl.Expr, se: pl.Expr, median: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """The ``unchanged`` rule's condition (module docstring): the estimate could have
    separated ``resolution * threshold``, it is equivalent to no change, and the sweep's
    median workload is settled."""
    span = math.log1p(options.resolution * options.threshold)
    return (
        (options.separation * se <= span).fill_null(False)
        & equivalent(mu, se, options)
        & settled(median, options)
    )


def settled(median: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """True where the sweep's median workload (its log ratio, on the finding's basis) stays
    inside the equivalence margin ``ln(1 + threshold)``, or where there is none.

    The pooled estimate weighs each workload by ``1 / (s_i^2 + tau^2)``, and
    DerSimonian-Laird's ``tau^2`` is known to fall short when the workloads' noises are
    unequal (Veroniki et al. 2016, "Methods to estimate the between-study variance and
    its uncertainty in meta-analysis", Research Synthesis Methods 7): a few precise
    workloads that stayed then outweigh the many that moved.  Liger's CI history has 70
    such findings that were ``unchanged`` with the median workload 10% or more away, for
    example llama4_rope backward on the H100, 2025-10-17 -> 10-24: "-0.2% ± 1.7%",
    median workload +46%.  The data do not rule out the threshold there; the median
    (breakdown point one half) says so without a model of the scatter.

    >>> import polars as pl
    >>> from kiana.stats.options import JudgeOptions
    >>> pl.select(settled(pl.lit(0.38), JudgeOptions())).item()
    False
    >>> pl.select(settled(pl.lit(0.01), JudgeOptions())).item()
    True
    """
    return (median.abs() < math.log1p(options.threshold)).fill_null(True)


def split(median: pl.Expr, mu: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """True where the workloads disagree with their pooled estimate ``mu``: it lies inside
    the margin and the median workload beyond it (:func:`settled`).  More runs of each
    workload do not bring them together: no reruns are promised there."""
    return ~settled(median, options) & (mu.abs() < math.log1p(options.threshold)).fill_null(False)


def _split_clause(median: pl.Expr, mu: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """``; its median workload moved +46%: the workloads disagree, ...`` where they do
    (:func:`split`), empty otherwise."""
    return (
        pl.when(~split(median, mu, options))
        .then(pl.lit(""))
        .otherwise(_text("; its median workload moved ", pct(median.exp() - 1.0),
                         ": the workloads disagree, the most precise ones stayed"))
    )  # fmt: skip


def _lean_clause(mu: pl.Expr, se: pl.Expr) -> pl.Expr:
    """``: leans regression`` (or improvement) where the estimate is a standard error or
    more from zero (:func:`leaning`), ``: leans neither way`` otherwise."""
    lean = leaning(pl.lit("inconclusive"), mu.exp() - 1.0, se)
    return (
        pl.when(lean.is_not_null())
        .then(pl.lit(": leans ") + lean)
        .otherwise(pl.lit(": leans neither way"))
    )


def _lone_sentence(sweep: pl.Expr, control: pl.Expr) -> pl.Expr:
    """The ``lone`` rule's sentence: the workloads, their move against the rest of the
    sweep and their own, the ``sweep``'s estimate, and where the own step decided
    (:func:`kiana.stats.aggregate._noisy_control`) why."""
    own_step = _text("; judged on its own step: its control ", control,
                     " is too noisy in that workload to adjust by and did not move with it")  # fmt: skip
    return _text(
        pl.col("_lone_n").cast(pl.String), " of ", pl.col("workloads_total").cast(pl.String),
        " workload(s) moved far beyond the rest of the sweep: ", pl.col("_lone_names"), " ",
        _est(pl.col("_lone_mu"), pl.col("_lone_se")), " against the others (its own change ",
        pct(pl.col("_lone_own").exp() - 1.0), "); the sweep as a whole did not move (", sweep, ")",
        pl.when(pl.col("_lone_noisy_control").fill_null(False)).then(own_step).otherwise(pl.lit("")),
    )  # fmt: skip


def pick_rule(table: tuple[Rule, ...], field: str) -> pl.Expr:
    """The ``field`` of the first rule whose condition holds, row by row."""

    def value(rule: Rule) -> pl.Expr:
        found = getattr(rule, field)
        return pl.lit(found) if isinstance(found, str) else found

    chain: Any = pl.when(table[0].when).then(value(table[0]))
    for rule in table[1:]:
        chain = chain.when(rule.when).then(value(rule))
    result: pl.Expr = chain.otherwise(None)
    return result
