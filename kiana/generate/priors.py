"""The noise priors of kiana's judge, fitted on the sitting pairs of Liger's CI history.

kiana falls back on :data:`kiana.stats.calibration.PRIOR` (the centre of each noise
component's scale) where a GPU has little data of its own.  Those centres are fitted
here, offline, on real observations only: the baselines' sitting pairs of
``../shared/liger-ci`` (Liger's ``gh-pages`` history, one sitting per measured commit),
measured as :mod:`kiana.generate.calibration` measures them (a step's *offset* is the
median change of its provider's workloads between two sittings, its *residual* the rest).

Each component is fitted with kiana's own two-groups model (:func:`kiana.stats.nullfit.
fit_cells`: a Student-t null of scale ``s`` per sitting, a share of real changes, ``c = 2``
since a step's change carries two sittings' noise; Efron 2008), per cell: every pair, per
GPU, per provider.  The fit uses the first two thirds of the measured commits in
``commits.txt``'s order (:func:`split`); the last third is held out
(``bench/ci_holdout.py`` judges it).  ``bench/calibrate.py --ci`` prints the table;
``docs/CALIBRATION.md`` gives its numbers and what changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from kiana.generate.calibration import steps
from kiana.stats.nullfit import fit_cells

#: ``benchmarks/<commit>[-v<release>]/benchmark.csv`` in a run's origin.
_FOLDER = r"benchmarks/([0-9a-f]{7,40})(?:-v[^/]*)?/benchmark\.csv"
#: A step's change carries the noise of two sittings.
COPIES = 2.0
#: Cells with fewer samples are not printed.
MIN_CELL = 40


@dataclass(frozen=True)
class Fitted:
    """One cell's fit: which component and cell, how many samples, the t scale ``s`` (per
    sitting), its degrees of freedom, the share of real changes, and the shares of
    absolute changes beyond 2%, 5% and 10%."""

    component: str  #: ``sitting`` (offsets) or ``workload`` (residuals)
    cell: str  #: ``all``, a GPU or a provider
    n: int
    scale: float
    tail: float
    share: float
    beyond: tuple[float, float, float]

    def row(self) -> str:
        """One Markdown row."""
        b2, b5, b10 = self.beyond
        return (
            f"| {self.component} | {self.cell} | {self.n:,} | {self.scale:.2%} | t{self.tail:g} "
            f"| {self.share:.2f} | {b2:.1%} | {b5:.1%} | {b10:.1%} |"
        )


def commit_order(path: Path) -> list[str]:
    """The measured commits of ``commits.txt`` in order (7-character prefixes)."""
    return [c.strip()[:7] for c in path.read_text(encoding="utf-8").split() if c.strip()]


def baseline_steps(runs: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """The baselines' latency steps with an offset (:func:`kiana.generate.calibration.
    steps`), each with ``rank``: its later sitting's measured commit in ``order`` (null
    for a commit not listed)."""
    rank = {c: i for i, c in enumerate(order)}
    found = steps(runs).filter((pl.col("role") == "baseline") & pl.col("offset").is_not_null())
    commit = pl.col("origin").str.extract(_FOLDER).str.slice(0, 7)
    return found.with_columns(commit.replace_strict(rank, default=None, return_dtype=pl.Int64)
                              .alias("rank"))  # fmt: skip


def split(found: pl.DataFrame, order: list[str]) -> dict[str, pl.DataFrame]:
    """``fit`` (the first two thirds of ``order``), ``held out`` (the rest) and ``all``."""
    cut = len(order) * 2 // 3
    return {
        "fit": found.filter(pl.col("rank") < cut),
        "held out": found.filter(pl.col("rank") >= cut),
        "all": found,
    }


def pairs(found: pl.DataFrame) -> pl.DataFrame:
    """One row per sitting pair of a provider (kernel, pass, GPU): its offset."""
    keys = ["kernel", "pass", "gpu", "provider", "from_sitting", "sitting"]
    return found.group_by(keys, maintain_order=True).agg(pl.col("offset").first())


def fit(found: pl.DataFrame, by: str | None = None) -> list[Fitted]:
    """Both components fitted per cell of ``by`` (None: one cell of every sample)."""
    out: list[Fitted] = []
    for component, frame, column in (
        ("sitting", pairs(found), "offset"),
        ("workload", found, "residual"),
    ):
        out += _fit_cells(component, frame, column, by)
    return out


def _fit_cells(component: str, frame: pl.DataFrame, column: str, by: str | None) -> list[Fitted]:
    frame = frame.filter(pl.col(column).is_not_null())
    if frame.height == 0:
        return []
    names = ["all"] if by is None else sorted(frame[by].unique().to_list())
    index = {name: i for i, name in enumerate(names)}
    cells = np.array(
        [0] * frame.height if by is None else [index[v] for v in frame[by].to_list()],
        dtype=np.int64,
    )
    x = frame[column].to_numpy().astype(np.float64)
    n = len(names)
    scale, tail, share = fit_cells(
        cells, n, x, np.zeros_like(x), np.full_like(x, COPIES), np.ones(x.size, dtype=bool),
        np.full(n, 0.005), np.full(n, 3.0), tails=True, nu=np.full(n, 3.0),
        share=np.full(n, 0.1),
    )  # fmt: skip
    counts = np.bincount(cells, minlength=n)
    out = []
    for i, name in enumerate(names):
        if counts[i] < MIN_CELL:
            continue
        size = np.abs(x[cells == i])
        beyond = tuple(float((size > np.log1p(t)).mean()) for t in (0.02, 0.05, 0.10))
        out.append(Fitted(component, str(name), int(counts[i]), float(scale[i]),
                          float(tail[i]), float(share[i]), beyond))  # type: ignore[arg-type]  # fmt: skip
    return out


def markdown(fits: list[Fitted]) -> str:
    """The fits as one Markdown table."""
    head = (
        "| component | cell | n | scale (per sitting) | tail | share of changes "
        "| > 2% | > 5% | > 10% |\n| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
    )
    return "\n".join([head, *(f.row() for f in fits)])


def measured_folder(origin: str) -> str | None:
    """The measured commit of a CI origin.

    >>> measured_folder("7705dcc9:benchmarks/7705dcc-v0.6.1/benchmark.csv")
    '7705dcc'
    """
    found = re.search(_FOLDER, origin)
    return found.group(1)[:7] if found else None
