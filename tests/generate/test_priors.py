"""The judge's noise priors are the fit of Liger's CI history (:mod:`kiana.generate.priors`):
a fit on made-up pairs recovers their scale, and the fit on ``../shared/liger-ci`` gives
:data:`kiana.stats.calibration.PRIOR`."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import polars as pl
import pytest

from kiana.generate import priors
from kiana.stats.calibration import PRIOR

CI = Path(__file__).resolve().parents[3] / "shared" / "liger-ci"
#: How far a refit may land from the constants (the grid is 5% apart).
TOLERANCE = 1.25


def _steps(scale: float, n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` sitting pairs of one baseline, four workloads each: per-sitting offsets and
    per-workload noise both normal of ``scale`` per sitting (a step carries two)."""
    rng = random.Random(seed)
    rows = []
    for pair in range(n):
        offset = rng.gauss(0, scale * math.sqrt(2))
        for w in range(4):
            rows.append({"kernel": "k", "pass": "forward", "gpu": "g", "provider": "torch",
                         "from_sitting": pair, "sitting": pair + 1, "workload": str(w),
                         "offset": offset, "residual": rng.gauss(0, scale * math.sqrt(2))})  # fmt: skip
    return pl.DataFrame(rows)


def test_the_fit_recovers_a_known_scale() -> None:
    fitted = {f.component: f for f in priors.fit(_steps(0.004, 400))}
    assert fitted["sitting"].n == 400 and fitted["workload"].n == 1600
    for f in fitted.values():
        assert 0.004 / TOLERANCE < f.scale < 0.004 * TOLERANCE, f


def test_the_split_follows_the_measured_order() -> None:
    found = pl.DataFrame({"rank": [0, 1, 2, None]}, schema={"rank": pl.Int64})
    parts = priors.split(found, ["a", "b", "c"])
    assert (parts["fit"].height, parts["held out"].height, parts["all"].height) == (2, 1, 4)


@pytest.mark.heavy  # imports the 77,648 runs of the CI history
@pytest.mark.skipif(not (CI / "benchmarks").is_dir(), reason="../shared/liger-ci is absent")
def test_the_priors_are_the_fit_of_the_ci_history() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from calibrate import ci_runs

    order = priors.commit_order(CI / "benchmarks" / "commits.txt")
    found = priors.split(priors.baseline_steps(ci_runs(CI), order), order)["fit"]
    fitted = {f.component: f for f in priors.fit(found)}
    assert fitted["sitting"].n > 1000
    for component, key in (("sitting", ("latency", "sitting", "")),
                           ("workload", ("latency", "workload", "median"))):  # fmt: skip
        assert PRIOR[key] / TOLERANCE < fitted[component].scale < PRIOR[key] * TOLERANCE
