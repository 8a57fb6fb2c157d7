"""The ``realistic`` noise model: noise as Liger-Kernel's real benchmark CSVs show it.

Calibrated on ``../shared/liger`` (measured by :mod:`kiana.generate.calibration`,
printed by ``bench/calibrate.py``, written down with the numbers in
``docs/CALIBRATION.md``), never on kiana's own model of noise.  What the real data show,
and how the model draws it:

* **A run's p20-p80 spread is not the noise between sittings.**  Baselines' medians
  move between sittings by a median 0.6% and a 90th percentile of 8% while their
  runs report a median spread of 0.8% (``|change| / spread``: median 3, p90 15).
* **Per-sitting offsets.**  Every workload of one provider in one sitting shares an
  offset: in a *calm* sitting a few tenths of a percent (:attr:`calm_common`,
  :attr:`calm_provider`), in a *shifted* one (:attr:`shifted_share` of the sittings
  of one kernel and GPU) several percent, partly shared by every provider of the
  sitting (:attr:`shifted_common`) and partly the provider's own
  (:attr:`shifted_provider`: what a same-sitting control does not cancel).
* **Heavy-tailed per-workload noise.**  Beyond the offset, each workload of a
  provider's sitting moves by a Student t (:attr:`tail_df` degrees of freedom) of
  scale :attr:`calm_workload` (:attr:`shifted_workload` in a shifted sitting), shared
  by the sitting's rounds; each round adds :attr:`spread_share` times its own spread
  sigma (repeats within a sitting agree far better than sittings do).
* **Spread by latency.**  The median spread falls from ~5% for 10-30 us kernels to
  ~0.1-0.3% beyond a millisecond (:data:`SPREAD_BY_LATENCY`, interpolated in log-log),
  each series its own lognormal factor (:attr:`series_spread_sigma`).
* **Single samples.**  ``do_bench`` takes one timing of a slow kernel: p20 = median
  = p80 for none of the runs under 3 ms, 7% at 3-5 ms, about half at 5-50 ms and all
  beyond 50 ms (:data:`SINGLE_BY_LATENCY`).  Such a run's median is one draw of the
  timing distribution: its noise is the spread sigma a run with many samples would
  report, though it reports none.

Nothing here is random by itself: callers pass their seeded ``random.Random``.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

#: Median relative p20-p80 spread of runs that report one, by median latency
#: (milliseconds, the geometric middle of each bin of docs/CALIBRATION.md).
SPREAD_BY_LATENCY: tuple[tuple[float, float], ...] = (
    (0.017, 0.050), (0.055, 0.032), (0.17, 0.019), (0.55, 0.0078), (1.7, 0.0023),
    (3.9, 0.0010), (16.0, 0.0031),
)  # fmt: skip
#: Share of runs that are one sample (p20 = median = p80), by median latency: the
#: upper bound of each bin (milliseconds) and the share in it.
SINGLE_BY_LATENCY: tuple[tuple[float, float], ...] = (
    (3.0, 0.0), (5.0, 0.07), (50.0, 0.49), (math.inf, 1.0),
)  # fmt: skip
#: p80 - p20 of a normal distribution, in standard deviations.
SPREAD_SIGMAS = 1.683


def spread_at(latency_ns: float) -> float:
    """The median relative spread of a run of ``latency_ns`` (:data:`SPREAD_BY_LATENCY`,
    linear in log latency and log spread between the points, flat beyond them).

    >>> round(spread_at(550_000), 4)
    0.0078
    >>> round(spread_at(1e3), 6) == round(spread_at(1e4), 6) == 0.05
    True
    """
    x = math.log(max(latency_ns, 1.0) / 1e6)
    points = [(math.log(ms), math.log(s)) for ms, s in SPREAD_BY_LATENCY]
    if x <= points[0][0]:
        return math.exp(points[0][1])
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x <= x1:
            return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return math.exp(points[-1][1])


def single_share(latency_ns: float) -> float:
    """The share of runs of ``latency_ns`` that are one sample.

    >>> single_share(1e6), single_share(20e6), single_share(80e6)
    (0.0, 0.49, 1.0)
    """
    ms = latency_ns / 1e6
    return next(share for upper, share in SINGLE_BY_LATENCY if ms <= upper)


@dataclass(frozen=True)
class Sitting:
    """What one sitting of one kernel and GPU shares: shifted or calm, and the part of
    the offset every provider of it shares (log)."""

    shifted: bool
    common: float


@dataclass(frozen=True)
class RealisticNoise:
    """The parameters of the model (module docstring); defaults from docs/CALIBRATION.md."""

    shifted_share: float = 0.25
    calm_common: float = 0.002
    calm_provider: float = 0.0015
    shifted_common: float = 0.04
    shifted_provider: float = 0.03
    calm_workload: float = 0.002
    shifted_workload: float = 0.015
    tail_df: float = 3.0
    spread_share: float = 0.5
    series_spread_sigma: float = 0.6
    run_spread_sigma: float = 0.3

    def sitting(self, rng: random.Random) -> Sitting:
        """Draw one sitting's state and shared offset."""
        shifted = rng.random() < self.shifted_share
        return Sitting(shifted, rng.gauss(0, self.shifted_common if shifted else self.calm_common))

    def offset(self, rng: random.Random, sitting: Sitting) -> float:
        """One provider's offset in ``sitting`` (log), the shared part included."""
        own = self.shifted_provider if sitting.shifted else self.calm_provider
        return sitting.common + rng.gauss(0, own)

    def workload(self, rng: random.Random, sitting: Sitting) -> float:
        """One workload's noise in one provider's sitting beyond the offset (log)."""
        scale = self.shifted_workload if sitting.shifted else self.calm_workload
        return scale * student_t(rng, self.tail_df)

    def run(self, rng: random.Random, spread: float) -> float:
        """One round's own noise (log): a share of the run's spread sigma."""
        return rng.gauss(0, self.spread_share * spread / SPREAD_SIGMAS)


def student_t(rng: random.Random, df: float) -> float:
    """One draw of Student's t with ``df`` degrees of freedom (a normal over the root
    of a scaled chi-square, the chi-square a gamma of shape df / 2)."""
    chi2 = 2.0 * rng.gammavariate(df / 2.0, 1.0)
    return rng.gauss(0, 1) / math.sqrt(chi2 / df)
