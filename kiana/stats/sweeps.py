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
``adjusted``        the control-adjusted change is flagged: the subject's change
``drift``           the subject moved by at least the threshold and its control moved with it
                    (:func:`kiana.stats.controls.control_moved`), the adjusted change is
                    not flagged: the machine moved
``raw``             the subject moved and its control did not move with it (or none)
``lone``            the sweep did not move, one workload far beyond the rest of it did
                    (:func:`kiana.stats.pooling.lone`; a minority: at most
                    ``max(1, (k - 1) // 2)`` of the ``k >= 3`` workloads with noise
                    information; of two, either may have left the other): a change of
                    that workload; against its control, or on its own step where the
                    control is too noisy there to adjust by, the sitting calm and the
                    move at least ``resolution * threshold`` (9%)
                    (:mod:`kiana.stats.aggregate`)
``gross``           no noise information, every workload moved ``gross_change`` (25%)
                    the same way: called on size alone
``unchanged``       the data rule out the threshold (the equivalence rule below), and
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
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from kiana.stats.aggregate import aggregate
from kiana.stats.controls import control_moved
from kiana.stats.evidence import control_clause, finding_noise, fold_baselines, pct
from kiana.stats.options import JudgeOptions
from kiana.stats.pooling import KEYS, sign_confidence
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
    span = math.log1p(options.resolution * options.threshold)
    resolvable = (options.separation * basis["se"] <= span).fill_null(False) & equivalent(
        basis["change"], basis["se"], options
    )
    raw_resolvable = (options.separation * pl.col("raw_se") <= span).fill_null(False) & equivalent(
        raw, pl.col("raw_se"), options
    )
    who, control = pl.col("provider"), pl.col("control_provider")
    machine = ~subject & ~memory & ~changed  # a baseline whose move is the machine's

    def drift_or(mu: pl.Expr) -> pl.Expr:
        return pl.when(machine).then(pl.lit("drift")).otherwise(_direction(mu))

    lone = pl.col("_lone_mu")
    t = f"{options.threshold:.0%}"
    shown = _smallest_flagged(basis["se"], options)
    gross = f"no noise information; every workload moved >= {options.gross_change:.0%} the same way: called on size alone"
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
        Rule("adjusted", subject & A, _direction(adj), **_on("adj"),
             sentence=_text(who, " moved ", adj_est, " against its control ", control, " (", pct(ctl.exp() - 1.0), ")")),
        Rule("drift", subject & has_adj & R & (raw.abs() >= math.log1p(options.threshold)) & moved_with, pl.lit("drift"), **_on("raw"),
             sentence=_text("the machine moved, not the kernel: ", who, " ", raw_est, " and its control ", control, " ", ctl_est,
                            " (adjusted ", adj_est, ")")),
        Rule("raw", R & ~(has_adj & moved_with), _direction(raw), **_on("raw"),
             sentence=_text(who, " moved ", raw_est,
                            pl.when(has_adj).then(_text(" while its control ", control, " did not move with it (", pct(ctl.exp() - 1.0), ")"))
                            .otherwise(pl.lit(" over the sweep (no control measured the machine)")))),
        Rule("lone", pl.col("_lone_n") > 0, drift_or(lone), change=lone, se=pl.col("_lone_se"),
             adjusted=pl.col("_lone_adjusted"), workloads=pl.col("_lone_names"),
             sentence=_lone_sentence(_est(basis["change"], basis["se"]), control)),
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
                              _lean_clause(basis["change"], basis["se"])))),
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


def _pick(table: tuple[Rule, ...], field: str) -> pl.Expr:
    """The ``field`` of the first rule whose condition holds, row by row."""

    def value(rule: Rule) -> pl.Expr:
        found = getattr(rule, field)
        return pl.lit(found) if isinstance(found, str) else found

    chain: Any = pl.when(table[0].when).then(value(table[0]))
    for rule in table[1:]:
        chain = chain.when(rule.when).then(value(rule))
    result: pl.Expr = chain.otherwise(None)
    return result


def findings(steps: pl.DataFrame, options: JudgeOptions | None = None) -> pl.DataFrame:
    """Group steps into findings judged on their pooled evidence (module docstring);
    ``steps`` are those of :func:`kiana.stats.steps.decide` after the outliers, before
    their columns are narrowed."""
    options = options or JudgeOptions()
    if steps.height == 0:
        return pl.DataFrame(schema=_schema())
    g = finding_marks(aggregate(steps, options), steps)
    table = rules(options)
    g = g.with_columns(
        _pick(table, "name").alias("basis"),
        _pick(table, "verdict").alias("verdict"),
        _pick(table, "change").alias("_log"),
        _pick(table, "se").alias("change_se"),
        _pick(table, "adjusted").alias("adjusted"),
        _pick(table, "workloads").alias("workloads"),
        _pick(table, "sentence").alias("_sentence"),
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
    return (
        pl.when((pl.col("verdict") == "inconclusive") & (pl.col("basis") != "unstable")
                & (fixed2 < target2) & (noise2 > 0))
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
