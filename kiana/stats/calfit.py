"""Fitting the calibration: the components, then the sitting states, in turn.

The model, the samples and the levels are :mod:`kiana.stats.calibration`'s; this
module fits them: :func:`fit` runs :data:`ROUNDS` rounds of the hierarchical grid fit
of each component (:func:`_fit`, :mod:`kiana.stats.nullfit`) and of the sitting states
(:func:`state_factors`, :mod:`kiana.stats.states`), each given the other.

What it is fitted on: every step of a GPU up to :data:`FULL_STEPS` steps; beyond that,
the GPU's earliest steps (by the later of their two sessions' first runs), as many as
the largest rung of a ladder of octaves (``FULL_STEPS * 2**k``) that its steps reach
(:func:`prefix_size`): at least half of them, and never fewer than :data:`FULL_STEPS`.
So a GPU's calibration is a function of its data alone (whatever the order the data was
loaded in), and sessions added after its cut leave it exactly as it was until the
history doubles: a stored judgement (:mod:`kiana.shards.store`) then re-judges only what
the new sessions touch, instead of the whole GPU on every load (the noise samples
counted in the evidence, the state prior and every sitting group's posterior would
otherwise move with each new step).  Why octaves and not a finer ladder: each rung
reached judges the GPU again whole (about a twentieth of a full judge on 20 GPUs), and a
load growing a GPU's steps by a share ``g`` crosses a rung with probability ``log(1 + g)
/ log(r)`` for a ladder of ratio ``r``: 1.4% per GPU and +1% load with octaves, 2.9%
with half octaves (``bench/README.md``, issue 25, round 9).  What it costs: a GPU past
8,192 steps is calibrated on between half and all of them (at least 71% with half
octaves), its newest up to half not used until the history doubles.  Its GPU-level
scales rest on 8,192 steps or more either way (a sampling error under 1%, ``1/sqrt(2n)``
for a normal scale; finer cells have fewer steps and lean on it through the hierarchy),
and the sitting states of the newest sessions are still inferred from their own steps.
On the data kiana was validated on (``bench/detection.py``: up to ~2,200 steps per GPU;
Liger's own CSVs: fewer) every step is used.

>>> [prefix_size(n) for n in (10, 8192, 16383, 16384, 40000)]
[10, 8192, 8192, 16384, 32768]
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from kiana.stats import states
from kiana.stats.calibration import (
    CALIBRATION_SCHEMA,
    CHILD_SD,
    PRIOR_TAIL,
    SITTING_LEVELS,
    TAILED,
    TOP_SD,
    WORKLOAD_LEVELS,
    Calibration,
    attach_scales,
    prior_center,
)  # fmt: skip
from kiana.stats.nullfit import DEFAULT_SHARE, GRID, TAILS, fit_cells
from kiana.stats.nullsamples import (
    contrast_samples,
    local_samples,
    sitting_samples,
    workload_samples,
)

#: Rounds of fitting the components and the sitting states in turn.
ROUNDS = 2
#: Steps of a GPU the calibration always uses all of (see the module docstring).
FULL_STEPS = 8192


def prefix_size(n: int) -> int:
    """How many of a GPU's ``n`` steps (earliest first) its calibration rests on: all up
    to :data:`FULL_STEPS`, else the largest ``FULL_STEPS * 2**k`` not above ``n``."""
    if n <= FULL_STEPS:
        return n
    rung = FULL_STEPS
    while 2 * rung <= n:
        rung *= 2
    return rung


def step_time() -> pl.Expr:
    """The time that orders a GPU's steps for :func:`prefix_size`: the later of the
    first runs of its two sessions (a session appended later comes after every step
    before it)."""
    return pl.max_horizontal("from_observed_at", "to_observed_at")


def prefix_cut(times: pl.Series) -> tuple[int, int, object]:
    """``(n, size, cut)`` of one GPU's step times: its steps, :func:`prefix_size` of
    them and the time of the ``size``-th earliest (steps at or before it are fitted on;
    None when there are none)."""
    n = times.len()
    size = prefix_size(n)
    cut = times.sort(nulls_last=True)[size - 1] if size else None
    return n, size, cut


def earliest(steps: pl.DataFrame) -> pl.DataFrame:
    """The steps :func:`fit` calibrates each GPU on (the module docstring): all of a
    GPU's up to :data:`FULL_STEPS`, else those at or before its :func:`prefix_cut`."""
    counts = steps.group_by("gpu").len()
    if counts.height == 0 or int(counts["len"].max()) <= FULL_STEPS:  # type: ignore[arg-type]
        return steps
    timed = steps.select("gpu", step_time().alias("_t"))
    cuts = [(gpu, prefix_cut(part["_t"])[2]) for (gpu,), part in timed.group_by("gpu")]
    table = pl.DataFrame(
        cuts, schema={"gpu": timed.schema["gpu"], "_cut": timed.schema["_t"]}, orient="row"
    )
    joined = steps.join(table, on="gpu", how="left", maintain_order="left")
    return joined.filter(step_time() <= pl.col("_cut")).drop("_cut")


#: The order :func:`state_factors` and :func:`fit` take a GPU's steps in (a total order
#: of the steps, their values last): every sum over a sitting group's samples is then
#: taken in one order whatever the order the steps came in, so the factors are the same
#: to the bit whether a GPU's steps were judged alone, beside other GPUs' or in a
#: window of its newest sessions (:mod:`kiana.shards.incremental`).
CANONICAL = ("partition_id", "provider", "metric", "from_session", "to_session", "aa",
             "from_observed_at", "to_observed_at", "log_ratio", "from_measured", "to_measured")  # fmt: skip


#: The columns of a step that :func:`fit` and :func:`state_factors` read (after
#: :func:`kiana.stats.states.group_key`): they take only these, so that the sorts and
#: filters that copy the steps (:func:`canonical`, the samples) copy no more (a GPU of
#: 400k runs: 0.2 GiB less at the sitting states, issue 41).
READS: tuple[str, ...] = (
    *CANONICAL, "_group", "kernel", "pass", "gpu", "workload", "is_subject",
    "benchmark_changed", "noise_source", "sampling",
)  # fmt: skip


def read_columns(steps: pl.DataFrame) -> pl.DataFrame:
    """The :data:`READS` columns of ``steps``, in their order."""
    return steps.select(c for c in steps.columns if c in READS)


def canonical(steps: pl.DataFrame) -> pl.DataFrame:
    """``steps`` in the order :data:`CANONICAL` (the columns it has)."""
    keys = [c for c in CANONICAL if c in steps.columns]
    return steps.sort(keys, nulls_last=True, maintain_order=True) if keys else steps


def _fit(
    samples: pl.DataFrame, component: str, levels: tuple[tuple[str, tuple[str, ...]], ...],
    *, tails: bool = True,
) -> pl.DataFrame:  # fmt: skip
    """Fit every level of one component (:mod:`kiana.stats.calibration`); one row per
    cell.  Without ``tails``, the top cells keep the prior tails and the default share."""
    out: list[pl.DataFrame] = []
    parent: pl.DataFrame | None = None
    parent_keys: tuple[str, ...] = ()
    if samples.height == 0:
        return pl.DataFrame(schema=CALIBRATION_SCHEMA)
    for depth, (level, keys) in enumerate(levels):
        cells = samples.group_by(keys).agg(pl.len().alias("samples")).sort(keys)
        cells = cells.with_row_index("_cell")
        if parent is None:
            sampling = pl.col("sampling") if "sampling" in keys else None
            prior_tail = pl.lit(PRIOR_TAIL["latency"])
            for metric, value in PRIOR_TAIL.items():
                prior_tail = (
                    pl.when(pl.col("metric") == metric).then(pl.lit(value)).otherwise(prior_tail)
                )
            if component not in TAILED:
                prior_tail = pl.lit(math.inf)
            cells = cells.with_columns(
                prior_center(pl.col("metric"), component, sampling).alias("_center"),
                pl.lit(TOP_SD).alias("_sd"),
                prior_tail.alias("tail"),
                pl.lit(DEFAULT_SHARE).alias("share"),
            )
        else:
            up = parent.select(
                *parent_keys,
                pl.col("scale").alias("_center"),
                pl.col("tail"),
                pl.col("share"),
            )
            cells = cells.join(
                up, on=list(parent_keys), how="left", maintain_order="left"
            ).with_columns(pl.lit(CHILD_SD).alias("_sd"))
        indexed = samples.join(
            cells.select(*keys, "_cell"), on=list(keys), how="left", maintain_order="left"
        )
        cell = indexed["_cell"].to_numpy().astype(np.int64)
        nu = cells["tail"].fill_null(math.inf).to_numpy().astype(np.float64)
        share = cells["share"].fill_null(0.0).to_numpy().astype(np.float64)
        scale, nu, share = fit_cells(
            cell, cells.height, indexed["x"].to_numpy(), indexed["q2"].to_numpy(),
            indexed["c"].to_numpy(), indexed["may_change"].to_numpy(),
            cells["_center"].to_numpy(), cells["_sd"].to_numpy(),
            tails=depth == 0 and tails,
            candidates=TAILS if component in TAILED else (math.inf,),
            nu=nu, share=share,
        )  # fmt: skip
        fitted = cells.select(*keys, "samples").with_columns(
            pl.Series("scale", scale, dtype=pl.Float64),
            pl.Series("tail", np.where(np.isinf(nu), np.nan, nu), dtype=pl.Float64).fill_nan(None),
            pl.Series("share", share, dtype=pl.Float64),
        )
        out.append(fitted.with_columns(pl.lit(level).alias("level")))
        parent, parent_keys = fitted, keys
    frame = pl.concat([pl.DataFrame(schema=CALIBRATION_SCHEMA), *out], how="diagonal_relaxed")
    return frame.with_columns(
        pl.lit(component).alias("component"),
        (pl.col("scale") >= GRID[-1]).alias("bounded"),
    )


def _samples_with(samples: pl.DataFrame, f2: pl.DataFrame | None, column: str) -> pl.DataFrame:
    """``samples`` with ``c`` multiplied by their group's ``f2`` column (1 without)."""
    if f2 is None:
        return samples
    joined = samples.join(
        f2.select("_group", column), on="_group", how="left", maintain_order="left"
    )
    return joined.with_columns(pl.col("c") * pl.col(column).fill_null(1.0)).drop(column)


def _base(samples: pl.DataFrame, cells: pl.DataFrame, component: str) -> pl.DataFrame:
    """Each sample's base variance (``base``), ``tail`` and ``share`` (0 where it
    cannot be a change) from its finest cell of ``cells``."""
    scaled = attach_scales(samples, Calibration(cells), component=component)
    return scaled.with_columns(
        pl.col(f"{component}_var").alias("base"),
        pl.col(f"{component}_tail").alias("tail"),
        pl.when(pl.col("may_change")).then(pl.col(f"{component}_share").fill_null(0.0)).otherwise(0.0).alias("share"),
    )  # fmt: skip


def _with_workload_var(
    steps: pl.DataFrame, cells: pl.DataFrame, f2w: pl.DataFrame | None
) -> pl.DataFrame:
    frame = attach_scales(steps, Calibration(cells), component="workload")
    if f2w is not None:
        frame = (
            frame.join(f2w.select("_group", "f2w"), on="_group", how="left", maintain_order="left")
            .with_columns(pl.col("workload_var") * pl.col("f2w").fill_null(1.0))
            .drop("f2w")
        )
    return frame


def _slice_link(raw_ss: pl.DataFrame, groups: pl.Series, a: np.ndarray, weights: np.ndarray,
                top: pl.DataFrame, gpu: str, metric: str) -> tuple[float, np.ndarray]:  # fmt: skip
    """The exponent of one GPU and metric (:func:`kiana.stats.states.fit_link`) and the
    sitting samples' log likelihoods at it; the sitting scale is refitted (top level,
    prior :data:`PRIOR`) for each exponent tried."""
    post = states.posterior(a, np.zeros_like(a), weights)
    index = pl.DataFrame({"_group": groups}).with_row_index("_g")
    samples = raw_ss.join(index, on="_group", how="inner", maintain_order="left")
    rows = samples["_g"].to_numpy().astype(np.int64)
    found: dict[float, np.ndarray] = {}

    prior = prior_center(pl.lit(metric), "sitting", None)
    center = np.array([pl.select(prior).item()], dtype=np.float64)
    mine = (pl.col("level") == "gpu") & (pl.col("gpu") == gpu) & (pl.col("metric") == metric)
    share = top.filter(mine)["share"].fill_null(DEFAULT_SHARE)
    # Environment shifts and baselines' own changes are the alternative here: at least
    # the default share of them, whatever the last fit found.
    pi = max(float(share[0]) if share.len() else 0.0, DEFAULT_SHARE)
    x, q2 = samples["x"].to_numpy(), samples["q2"].to_numpy()
    may = samples["may_change"].to_numpy()

    def likelihood(exponent: float) -> np.ndarray:
        # The sitting scale refitted (top level, the share of the last fit) for this b.
        f2 = states.mean_f2(post, exponent)[rows] if rows.size else np.zeros(0)
        c = samples["c"].to_numpy() * f2
        scale, _, _ = fit_cells(
            np.zeros(rows.size, dtype=np.int64), 1, x, q2, c, may, center, np.array([TOP_SD]),
            tails=False, nu=np.array([math.inf]), share=np.array([pi]),
        )  # fmt: skip
        based = samples.drop("_g").with_columns(
            pl.lit(float(scale[0]) ** 2).alias("base"),
            pl.lit(None, pl.Float64).alias("tail"),
            pl.when(pl.col("may_change")).then(pl.lit(pi)).otherwise(0.0).alias("share"),
        )
        found[exponent] = states.factor_loglik(based, groups, exponent)
        return found[exponent]

    chosen = states.fit_link(a, weights, likelihood)
    return chosen, found[chosen]


def state_factors(
    steps: pl.DataFrame, workload: pl.DataFrame, sitting: pl.DataFrame,
    priors: pl.DataFrame | None, samples: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """``(factors, priors)``: per sitting group the posterior means ``f2w`` (of ``f^2``)
    and ``f2s`` (of ``f^2b``) (:mod:`kiana.stats.states`) and the ``exponent`` ``b``, and the state priors with their
    exponent, learned (NPMLE, :func:`kiana.stats.states.fit_link`) when ``priors`` is
    None, one set per GPU and metric; ``sitting`` gives the sitting samples' base scales
    when judging with given priors; ``samples``: the steps' workload samples, when the
    caller has them already, and then ``steps`` are in :func:`canonical` order already
    (:func:`fit` sorts them once for every round); without, they are sorted here: every
    sum over a group's samples is taken in that one order."""
    steps = read_columns(steps)
    if samples is None:
        steps = canonical(steps)
    raw_ws = workload_samples(steps) if samples is None else samples
    ws = _base(raw_ws.filter(~pl.col("history")), workload, "workload")
    keys = steps.select("_group", "gpu", "metric").unique().sort("_group")
    slices = list(keys.group_by("gpu", "metric", maintain_order=True))
    a_of: dict[tuple[str, str], np.ndarray] = {}
    learned: dict[tuple[str, str], tuple[np.ndarray, float]] = {}
    first: list[pl.DataFrame] = []
    for (gpu, metric), part in slices:
        key = (str(gpu), str(metric))
        a = a_of[key] = states.factor_loglik(ws, part["_group"])
        if priors is None:
            learned[key] = (states.npmle(a), 1.0)
        else:
            learned[key] = states.prior_of(
                priors.filter((pl.col("gpu") == gpu) & (pl.col("metric") == metric))
            )
        post = states.posterior(a, np.zeros_like(a), learned[key][0])
        first.append(pl.DataFrame({"_group": part["_group"], "f2w": states.mean_f2(post)}))
    f2w = (
        pl.concat(first) if first else pl.DataFrame(schema={"_group": pl.String, "f2w": pl.Float64})
    )
    raw_ss = sitting_samples(_with_workload_var(steps, workload, f2w))
    based_ss = _base(raw_ss, sitting, "sitting") if priors is not None else raw_ss
    out: list[pl.DataFrame] = []
    rows: list[pl.DataFrame] = []
    for (gpu, metric), part in slices:
        key, groups = (str(gpu), str(metric)), part["_group"]
        weights, exponent = learned[key]
        a = a_of[key]
        if priors is None:
            exponent, b = _slice_link(raw_ss.filter((pl.col("gpu") == gpu) & (pl.col("metric") == metric)),
                                      groups, a, weights, sitting, str(gpu), str(metric))  # fmt: skip
        else:
            b = states.factor_loglik(based_ss, groups, exponent)
        post = states.posterior(a, b, weights)
        out.append(
            pl.DataFrame({
                "_group": groups, "f2w": states.mean_f2(post), "f2s": states.mean_f2(post, exponent),
                "exponent": np.full(groups.len(), exponent),
            })
        )  # fmt: skip
        rows.append(states.prior_rows(weights, exponent, *key))
    schema = {c: pl.Float64 for c in ("f2w", "f2s", "exponent")} | {"_group": pl.String}
    f2 = pl.concat(out) if out else pl.DataFrame(schema=schema)
    return f2, (pl.concat(rows) if rows else pl.DataFrame())


def fit(steps: pl.DataFrame) -> Calibration:
    """Calibrate both components and the sitting states on ``steps`` (the steps of
    :func:`kiana.stats.steps.pair_points` with ``is_subject``, ``aa`` and
    ``benchmark_changed`` marked), in :data:`ROUNDS` rounds: components given the
    states, states given the components."""
    steps = canonical(read_columns(states.group_key(steps)))
    f2: pl.DataFrame | None = None
    workload = sitting = contrast = pl.DataFrame(schema=CALIBRATION_SCHEMA)
    priors = pl.DataFrame()
    raw_ws = workload_samples(steps)
    for _ in range(ROUNDS):
        workload = _fit(_samples_with(raw_ws, f2, "f2w"), "workload", WORKLOAD_LEVELS)
        f2, priors = state_factors(steps, workload, sitting, None, samples=raw_ws)
        with_var = _with_workload_var(steps, workload, f2)
        ss = _samples_with(sitting_samples(with_var), f2, "f2s")
        sitting = _fit(ss, "sitting", SITTING_LEVELS)
    # The provider-specific part of the sitting offset, from contrasts within a sitting
    # (:mod:`kiana.stats.calibration`), given the last round's states.
    cs = _samples_with(contrast_samples(with_var), f2, "f2s")
    contrast = _fit(cs, "contrast", SITTING_LEVELS)
    # The sitting offset without the machine's move in the GPU's release step: the
    # adjusted noise of a GPU with too few contrasts.
    local = _fit(_samples_with(local_samples(with_var), f2, "f2s"), "local", SITTING_LEVELS)
    state_rows = priors.with_columns(
        pl.lit("state").alias("component"), pl.lit("gpu").alias("level")
    ) if priors.height else pl.DataFrame(schema=CALIBRATION_SCHEMA)  # fmt: skip
    frame = pl.concat([workload, sitting, contrast, local, state_rows], how="diagonal_relaxed")
    return Calibration(frame.select(CALIBRATION_SCHEMA.keys()).cast(CALIBRATION_SCHEMA))  # type: ignore[arg-type]
