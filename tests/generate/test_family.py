"""The family of noise models (kiana.generate.family) and its oracle (kiana.generate.oracle)."""

from __future__ import annotations

import math
import random

import numpy as np
import polars as pl

from kiana.generate import oracle
from kiana.generate.family import NoiseModel, draw

TINY = {
    "kernels": ("rms_norm",), "gpus": ("nvidia-h100-80gb-hbm3",),
    "versions": ("0.4.0", "0.4.2", "0.5.2", "0.5.5"), "sweep_size": 3,
}  # fmt: skip


def truth(model: NoiseModel) -> pl.DataFrame:
    return draw(model, 0, **TINY).truth


def test_no_drift_rate_plants_no_drift() -> None:
    assert truth(NoiseModel(drift_rate=0.0)).filter(pl.col("effect") == "drift").height == 0


def test_drift_at_every_step_plants_drift_of_the_size_asked() -> None:
    sizes = (
        truth(NoiseModel(drift_rate=1.0, drift_changes=(0.2, 0.2)))
        .filter(pl.col("effect") == "drift")["change"]
        .to_list()
    )
    assert sizes
    assert all(abs(c - 0.2) < 1e-3 or abs(c + 0.2 / 1.2) < 1e-3 for c in sizes)


def test_t2_tails_are_heavier_than_normal_ones() -> None:
    def beyond(model: NoiseModel) -> float:
        rng = random.Random(0)
        scale = model.noise.calm_workload
        draws = [model.workload_noise(rng, shifted=False) / scale for _ in range(4000)]
        return sum(abs(x) > 4 for x in draws) / len(draws)

    assert beyond(NoiseModel(tail_df=2.0)) > 0.03 > 0.001 > beyond(NoiseModel(tail_df=math.inf))


def test_the_drawn_frame_is_the_documents() -> None:
    corpus = draw(NoiseModel(), 0, **TINY)
    docs = list(corpus.documents())
    assert corpus.drawn.height == len(docs)
    assert set(corpus.drawn["session"]) <= set(corpus.sessions["session"])


def test_session_scope_shares_a_state_across_kernels() -> None:
    corpus = draw(NoiseModel(scope="session"), 0, **{**TINY, "kernels": ("rms_norm", "rope")})
    list(corpus.documents())
    assert all(not key[0].startswith(("rms", "rope")) for key in corpus.sittings())


def test_one_baseline_and_no_single_samples() -> None:
    corpus = draw(NoiseModel(baselines=1, singles="none"), 0, **TINY)
    list(corpus.documents())
    assert set(corpus.drawn["provider"]) == {"liger", "huggingface"}
    assert not corpus.drawn["single"].any()


def test_slow_runs_are_one_sample_with_singles_slow() -> None:
    corpus = draw(
        NoiseModel(singles="slow"), 0, **{**TINY, "kernels": ("fused_linear_cross_entropy",)}
    )
    list(corpus.documents())
    slow = corpus.drawn.filter(pl.col("median") >= 1e6)
    assert slow.height and slow["single"].all()


def statistics(liger: float, common: float, model: NoiseModel) -> tuple[float, float, bool]:
    """The oracle on a hand-made finding: liger and one baseline, five workloads."""
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.002, size=10)
    d = np.array([common + liger] * 5 + [common] * 5) + noise
    v = np.full(10, 1e-6)
    providers = ["liger"] * 5 + ["huggingface"] * 5
    return oracle.statistics(d, v, providers, model, rng)


def test_the_oracle_finds_a_big_step_in_normal_noise() -> None:
    up, down, unchanged = statistics(math.log(1.2), 0.0, NoiseModel(tail_df=math.inf))
    assert up > 10 > down and not unchanged


def test_the_oracle_sees_no_move_where_nothing_moved() -> None:
    up, down, unchanged = statistics(0.0, 0.0, NoiseModel(tail_df=math.inf))
    assert up < 0 and down < 0 and unchanged


def test_the_oracle_cancels_a_move_of_every_provider() -> None:
    up, down, _ = statistics(0.0, math.log(1.2), NoiseModel(tail_df=3.0))
    assert up < 0 and down < 0
