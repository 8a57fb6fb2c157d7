"""The sweep numbers the rules read (kiana.stats.aggregate)."""

from __future__ import annotations

import polars as pl
import pytest

from kiana.stats import JudgeOptions
from kiana.stats.aggregate import _noisy_control
from kiana.stats.pooling import deviation, lone
from kiana.vocabulary import FINDING_KEYS


def sweep(sitting_sigma: float) -> pl.DataFrame:
    """One finding's five workloads: w2 +30% on the subject's own step (noise 1%), its
    control flat with 20% noise per workload, the sitting noise given."""
    own = [0.0, 0.001, 0.262, -0.001, 0.002]
    return pl.DataFrame(
        {
            **{k: ["x"] * 5 for k in FINDING_KEYS},
            "log_ratio": own,
            "wnoise": [0.01] * 5,
            "control_log_ratio": [0.0, -0.01, 0.02, 0.01, 0.0],
            "control_noise": [0.2] * 5,
            "sitting_sigma": [sitting_sigma] * 5,
            "_has_adj": [True] * 5,
            "_s": [0.2] * 5,
            "_s_lone": [0.2] * 5,
        }
    )


@pytest.mark.parametrize(("sitting", "expected"), [(0.002, True), (0.02, False)])
def test_the_own_step_decides_only_in_a_calm_sitting(sitting: float, expected: bool) -> None:
    # 3 x 2% sitting noise is over the 3% threshold: a shifted sitting, where one
    # provider's per-workload noise runs heavier than its calibrated sigma.
    options = JudgeOptions()
    own = lone(pl.col("log_ratio"), pl.col("wnoise"), options.separation, options.threshold)
    own_dev = deviation(pl.col("log_ratio"), pl.col("wnoise"))[0]
    marked = sweep(sitting).select(_noisy_control(own, own_dev, options))["_has_adj"].to_list()
    assert marked == [False, False, expected, False, False]
