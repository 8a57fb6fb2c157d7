"""No bound may hide what was measured: a sitting link at its grid's top is said."""

from __future__ import annotations

import polars as pl
import pytest

from kiana.stats import calibrate, judge
from kiana.stats.calibration import Calibration, sigmas
from kiana.stats.states import EXPONENTS, FACTORS
from tests.stats_fixtures import frame, run

CLAUSE = "link to the scatter is at its grid's upper end"


def _steps(groups: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "gpu": ["g"] * len(groups), "metric": ["latency"] * len(groups),
            "kernel": ["k"] * len(groups), "provider": ["liger"] * len(groups),
            "noise_source": ["spread"] * len(groups), "_group": groups,
        }
    )  # fmt: skip


def _factors(exponent: float, f2s: float) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "_group": ["a"],
            "f2w": [1.0],
            "f2s": [f2s],
            "exponent": [exponent],
        }
    )


@pytest.mark.parametrize(
    ("exponent", "f2s", "said"),
    [(EXPONENTS[-1], 16.0, True), (EXPONENTS[-2], 16.0, False), (EXPONENTS[-1], 0.25, False)],
)
def test_a_shifted_sitting_at_the_link_top_is_marked(
    exponent: float, f2s: float, said: bool
) -> None:
    got = sigmas(_steps(["a", "b"]), Calibration.empty(), 3.0, _factors(exponent, f2s))
    assert got["sitting_link_top"].to_list() == [said, False]  # "b": no factors, no mark


def _runs() -> pl.DataFrame:
    rows = []
    for provider, moved in (("liger", 1.10), ("huggingface", 1.0)):
        for i, base in enumerate((1.0, 1.2, 1.5, 2.0)):
            rows.append(run("0.1.0", base, provider=provider, workload=f"w{i}", day=1))
            rows.append(run("0.2.0", base * moved, provider=provider, workload=f"w{i}", day=9))
    return frame(rows)


def _with_state(cal: Calibration, exponent: float) -> Calibration:
    """``cal`` with every sitting group's state a shift of factor 4 (the prior's only
    mass), its link exponent ``exponent``."""
    keep = cal.frame.filter(pl.col("component") != "state")
    state = pl.DataFrame(
        {
            "component": ["state"],
            "level": ["gpu"],
            "gpu": ["NVIDIA H100 80GB HBM3"],
            "metric": ["latency"],
            "workload_factor": [4.0],
            "sitting_factor": [4.0**exponent],
            "weight": [1.0],
            "exponent": [exponent],
        }
    )
    return Calibration(pl.concat([keep, state], how="diagonal_relaxed").select(keep.columns))


@pytest.mark.parametrize(("exponent", "said"), [(EXPONENTS[-1], True), (1.0, False)])
def test_the_evidence_says_the_sitting_noise_may_be_larger(exponent: float, said: bool) -> None:
    runs = _runs()
    assert 4.0 in FACTORS.round(6).tolist()
    found = judge(runs, calibration=_with_state(calibrate(runs), exponent)).findings
    liger = found.filter(pl.col("provider") == "liger").row(0, named=True)
    assert (CLAUSE in liger["evidence"]) is said
    assert liger["noise_bounded"] is said
