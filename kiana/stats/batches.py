"""The judge's steps decided a batch of whole kernels of a GPU at a time.

Between its measured steps and their findings the judge holds every step with some 80
columns (the sigmas, the controls, the verdicts, the evidence), several times over while
a stage joins them: on the B200 of the 1M-run long history (400k steps) that was the
largest worker's peak (issue 41, item 4).  :func:`kiana.stats.judge_stage` instead takes
the steps of :data:`JUDGE_CHUNK` of them at a time, whole kernels of a GPU together
(:func:`kernel_batches`), through the sigmas, the controls, the verdict, the outliers and
the findings, keeps only each batch's narrowed steps (:data:`kiana.stats.STEP_COLUMNS`),
its findings and its outlier rows, and puts the steps back in their order at the end
(:func:`restore`).

The same steps and findings, because what a step reads of *other* kernels is GPU-wide
and computed once, on all of them, before the batches:

* the calibration and the sitting states' factors (bound into the sigmas,
  :func:`kiana.stats._sigmas`), and the unstable series (:func:`kiana.stats.unstable.detect`
  reads every point);
* the GPU-wide fallback control (:func:`gpu_wide`, the median over every baseline step of
  the GPU, :func:`kiana.stats.controls.gpu_controls`).

Everything else is within one kernel of one GPU: the sigmas and :func:`~kiana.stats.steps.measure`
and :func:`~kiana.stats.steps.decide` are row by row; a step's control candidates are the
baselines of its own partition and the medoid is chosen within its sweep (kernel, pass,
GPU, metric, sessions: :mod:`kiana.stats.controls`); outliers compare a series' own steps
and its sweep's workloads (:mod:`kiana.stats.outliers`); a finding is one kernel's
(:func:`kiana.stats.sweeps.findings`, which aggregates whole kernels at a time already).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from kiana.stats.controls import GPU_KEYS, Sigmas, gpu_controls, with_days
from kiana.stats.packing import pack
from kiana.stats.steps import measure

#: Steps decided together (whole kernels of a GPU, a larger kernel alone).  Measured on
#: the B200 of ``clone-long-1m`` (400,756 runs, 399,263 steps; the worker's job alone,
#: ``/usr/bin/time -v``, bench/README "Issue 41, item 4"): see there for the peaks of
#: the sizes tried.  Used only on more than :data:`kiana.stats.sweeps.FINDING_CHUNK`
#: steps (where the findings are ordered whole whatever the batches).
JUDGE_CHUNK = 50_000
#: The position of a step among the judged steps, carried through a batch.
ROW = "_judged_row"
#: Columns of the narrowed steps that no stage of a batch changes (the series' keys and
#: labels, the sessions, none of them a float, which the judge's NaN-to-null would
#: touch): taken from the judged steps as they are rather than kept from each batch,
#: whose copies of them (16 bytes a row each) were 0.09 GiB at 400k steps.
KEPT: tuple[str, ...] = (
    "kernel", "pass", "provider", "gpu", "workload", "partition_id", "metric",
    "from_version", "to_version", "from_session", "to_session", "from_origin", "to_origin",
    "from_observed_at", "to_observed_at", "is_subject",
)  # fmt: skip
_KERNEL = ["gpu", "kernel"]


def kernel_batches(steps: pl.DataFrame, rows: int) -> list[pl.DataFrame]:
    """The (GPU, kernel) keys of ``steps`` cut into batches of at most ``rows`` steps
    together (a larger kernel alone), in name order; one batch of every key when
    ``steps`` are at most ``rows``.

    >>> steps = pl.DataFrame({"gpu": ["A"] * 4, "kernel": ["x", "y", "x", "z"]})
    >>> [b["kernel"].to_list() for b in kernel_batches(steps, 2)]
    [['x'], ['y', 'z']]
    """
    sizes = steps.group_by(_KERNEL).len().sort(_KERNEL)
    if steps.height <= rows:
        return [sizes.select(_KERNEL)]
    batches = pack((((g, k), n) for g, k, n in sizes.iter_rows()), rows)
    return [pl.DataFrame(keys, schema=_KERNEL, orient="row") for keys, _ in batches]


def batch(steps: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``steps`` of the kernels ``keys`` names, in their order."""
    return steps.join(keys, on=_KERNEL, how="semi", nulls_equal=True, maintain_order="left")


def gpu_wide(steps: pl.DataFrame, noise: Sigmas, batches: list[pl.DataFrame]) -> pl.DataFrame:
    """The GPU-wide fallback control (:func:`~kiana.stats.controls.gpu_controls`) of every
    step of ``steps`` (judged, not yet measured), measured a batch at a time: its baseline
    steps' log ratios and noise, as :func:`~kiana.stats.controls.attach_controls` would
    measure them on all of ``steps`` together."""
    read = [*GPU_KEYS, "log_ratio", "noise", "is_subject", "benchmark_changed"]
    parts = []
    for keys in batches:
        base = batch(steps, keys).filter(~pl.col("is_subject") & ~pl.col("benchmark_changed"))
        parts.append(with_days(measure(noise(base))).select(read))
    return gpu_controls(pl.concat(parts, how="vertical_relaxed"))


def restore(
    parts: list[pl.DataFrame], judged: pl.DataFrame, columns: Sequence[str]
) -> pl.DataFrame:
    """The batches' narrowed steps (each with :data:`ROW` and without :data:`KEPT`) put
    back in the order of the ``judged`` steps, :data:`KEPT` taken from them, as
    ``columns``.  ``parts`` is emptied: each column of the batches is let go once it is
    put in order, so that the steps are held once and one column twice (a sort of the
    batches' frames held two copies of every column: the B200 of ``clone-long-1m``'s
    worker peaked there, issue 41)."""
    names = [c for c in parts[0].columns if c != ROW]
    pieces = {name: [part.get_column(name) for part in parts] for name in names}
    rows = pl.concat([part.get_column(ROW) for part in parts], rechunk=False)
    parts.clear()
    order = rows.arg_sort()
    del rows
    rest = [pl.concat(pieces.pop(name), rechunk=False).gather(order) for name in names]
    return judged.select(KEPT).hstack(rest).select(columns)
