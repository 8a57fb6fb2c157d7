"""The noise of a control-adjusted change is the providers' own part of their sitting
offsets, measured from contrasts within a sitting: a machine that moves does not widen it
(issue 39)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from kiana.stats import judge
from kiana.stats.calibration import CALIBRATION_SCHEMA, MIN_CONTRASTS, Calibration, with_contrast
from kiana.stats.nullsamples import MIN_STEP_SWEEPS, contrast_samples, local_samples
from tests.stats_fixtures import frame, run

PROVIDERS = (("liger", 100.0), ("huggingface", 150.0), ("torch", 130.0))


def _two_gpus(seed: int, kernels: int = 5, workloads: int = 5, versions: int = 10,
              one_baseline: bool = False) -> pl.DataFrame:  # fmt: skip
    """Two GPUs with the same provider noise (one draw of every provider's sitting offset,
    RMS 1.1%, and workload noise, 0.5%): on the calm one the machine never moves, on the
    other it moves 2-6% (every provider alike) at a third of its steps.  With
    ``one_baseline``, each kernel has one baseline (huggingface and torch by turns): no
    two providers of a sitting make a contrast but A/A pairs, which these have none of."""
    rng = np.random.default_rng(seed)
    offsets = rng.normal(0.0, 0.011, size=(kernels, versions, len(PROVIDERS)))
    noise = rng.normal(0.0, 0.005, size=(kernels, versions, len(PROVIDERS), workloads))
    moves = np.zeros(versions)
    for i in range(1, versions):
        step = rng.choice([-1.0, 1.0]) * rng.uniform(0.02, 0.06) if i % 3 == 0 else 0.0
        moves[i] = moves[i - 1] + step
    rows = []
    for gpu, machine in (("calm GPU", np.zeros(versions)), ("moving GPU", moves)):
        for k, i, (j, (provider, base)), w in itertools.product(
            range(kernels), range(versions), enumerate(PROVIDERS), range(workloads)
        ):
            if one_baseline and j == 1 + k % 2:
                continue
            level = base * (w + 1) * math.exp(machine[i] + offsets[k, i, j] + noise[k, i, j, w])
            rows.append(
                run(f"0.{i + 1}.0", level, provider=provider, workload=f"w{w}", kernel=f"k{k}",
                    gpu=gpu, day=10 * i + 1, minute=10 * j + w)
            )  # fmt: skip
    return frame(rows)


@pytest.mark.heavy
@pytest.mark.parametrize("seed", [0, 1])
def test_a_moving_machine_does_not_widen_adjusted_standard_errors(seed: int) -> None:
    result = judge(_two_gpus(seed))
    steps = result.steps.filter(pl.col("is_subject"))
    adjusted = steps.group_by("gpu").agg(pl.col("adjusted_noise").median())
    by = dict(adjusted.iter_rows())
    assert by["moving GPU"] == pytest.approx(by["calm GPU"], rel=0.25)
    # The common part still enters the raw verdicts: the moving GPU's sitting noise is wider.
    raw = dict(steps.group_by("gpu").agg(pl.col("sitting_noise").median()).iter_rows())
    assert raw["moving GPU"] > 1.25 * raw["calm GPU"]
    # The findings' adjusted standard errors too.
    found = result.findings.filter(pl.col("is_subject") & pl.col("adjusted"))
    se = dict(found.group_by("gpu").agg(pl.col("change_se").median()).iter_rows())
    assert se["moving GPU"] == pytest.approx(se["calm GPU"], rel=0.25)


@pytest.mark.heavy
def test_a_moving_machine_does_not_widen_adjusted_noise_without_contrasts() -> None:
    # Too few contrasts to fit the providers' own part: the sitting offsets less the
    # machine's move of each release step (local_samples) stand in for it.
    result = judge(_two_gpus(0, kernels=8, one_baseline=True))
    steps = result.steps.filter(pl.col("is_subject"))
    adjusted = dict(steps.group_by("gpu").agg(pl.col("adjusted_noise").median()).iter_rows())
    assert adjusted["moving GPU"] == pytest.approx(adjusted["calm GPU"], rel=0.25)
    raw = dict(steps.group_by("gpu").agg(pl.col("sitting_noise").median()).iter_rows())
    assert raw["moving GPU"] > 1.25 * raw["calm GPU"]


def _matches(fast: pl.DataFrame, want: list[tuple[float, float, bool]], c: float) -> None:
    """The fast samples equal the reference's ``(x, q2, may_change)``, each of ``c``."""
    assert (fast["c"] == c).all()
    got = sorted(fast.select("x", "q2", "may_change").iter_rows())
    assert len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert g[0] == pytest.approx(w[0]) and g[1] == pytest.approx(w[1]) and g[2] == w[2]


def _local_reference(steps: pl.DataFrame) -> list[tuple[float, float, bool]]:
    """:func:`local_samples` with plain loops: ``(x, q2, may_change)`` sorted."""
    rows = [r for r in steps.iter_rows(named=True) if r["log_ratio"] is not None]
    rows = [r for r in rows if not r["benchmark_changed"] and (not r["is_subject"] or r["aa"])]
    sweeps: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for r in rows:
        key = (r["_group"], r["kernel"], r["pass"], r["gpu"], r["metric"], r["from_session"],
               r["to_session"], r["provider"], r["aa"])  # fmt: skip
        sweeps.setdefault(key, []).append(r)
    means = []
    for key, mine in sweeps.items():
        x = sum(float(r["log_ratio"]) for r in mine) / len(mine)  # type: ignore[arg-type]
        q2 = sum(float(r["from_measured"]) ** 2 + float(r["to_measured"]) ** 2  # type: ignore[arg-type]
                 + float(r["workload_var"]) for r in mine) / len(mine) ** 2  # type: ignore[arg-type]  # fmt: skip
        parts = str(key[0]).split("\x1f")
        release = (parts[0], parts[1], parts[3], parts[4])
        means.append((release, key[7], key[8], x, q2))
    out = []
    for release, provider, aa, x, q2 in means:
        others = sorted(o[3] for o in means if o[0] == release and o[1] != provider and not o[2])
        if len(others) >= MIN_STEP_SWEEPS:
            out.append((x - float(np.median(others)), q2, not aa))
    return sorted(out)


def test_local_samples_match_the_reference() -> None:
    rng = np.random.default_rng(5)
    rows = []
    for kernel, release, w, provider, aa in itertools.product(
        ("k1", "k2", "k3"), ("0.1", "0.2"), range(3), ("liger", "torch", "hf"), (False, True)
    ):
        if provider == "liger" and not aa:
            continue
        group = "\x1f".join(["G", "latency", kernel, release, release + "1", "", "", "d1", "d2"])
        rows.append({
            "_group": group, "kernel": kernel, "pass": "forward", "gpu": "G", "metric": "latency",
            "from_session": f"s{release}{aa}", "to_session": f"t{release}{aa}",
            "partition_id": f"p{kernel}{w}", "provider": provider, "is_subject": provider == "liger",
            "aa": aa, "log_ratio": float(rng.normal(0, 0.02)) if (w, kernel) != (2, "k3") else None,
            "benchmark_changed": provider == "hf" and kernel == "k2" and release == "0.2",
            "from_measured": float(rng.uniform(0, 0.01)), "to_measured": float(rng.uniform(0, 0.01)),
            "workload_var": 1e-5,
        })  # fmt: skip
    _matches(local_samples(pl.DataFrame(rows)), _local_reference(pl.DataFrame(rows)), 1.0)


def test_a_release_step_of_one_other_provider_gives_no_local_sample() -> None:
    # Two providers, each the other's only source: fewer than MIN_STEP_SWEEPS sweeps.
    rows = [{
        "_group": "\x1f".join(["G", "latency", "k", "0.1", "0.2", "", "", "d1", "d2"]),
        "kernel": "k", "pass": "forward", "gpu": "G", "metric": "latency", "from_session": "s",
        "to_session": "t", "partition_id": "p", "provider": provider, "is_subject": False,
        "aa": False, "log_ratio": 0.01, "benchmark_changed": False, "from_measured": 0.0,
        "to_measured": 0.0, "workload_var": 0.0,
    } for provider in ("hf", "torch")]  # fmt: skip
    assert local_samples(pl.DataFrame(rows)).height == 0


def _contrast_reference(steps: pl.DataFrame) -> list[tuple[float, float, bool]]:
    """:func:`contrast_samples` with plain loops: ``(x, q2, may_change)`` sorted."""
    out = []
    rows = [r for r in steps.iter_rows(named=True) if r["log_ratio"] is not None]
    rows = [r for r in rows if not r["benchmark_changed"] and (not r["is_subject"] or r["aa"])]
    keys = {(r["_group"], r["kernel"], r["pass"], r["gpu"], r["metric"], r["from_session"],
             r["to_session"], r["aa"]) for r in rows}  # fmt: skip
    for key in keys:
        mine = [r for r in rows if (r["_group"], r["kernel"], r["pass"], r["gpu"], r["metric"],
                                    r["from_session"], r["to_session"], r["aa"]) == key]  # fmt: skip
        providers = sorted({r["provider"] for r in mine})
        for a, b in itertools.combinations(providers, 2):
            diffs, q2 = [], 0.0
            for ra in (r for r in mine if r["provider"] == a):
                for rb in (r for r in mine if r["provider"] == b):
                    if ra["partition_id"] == rb["partition_id"]:
                        diffs.append(ra["log_ratio"] - rb["log_ratio"])
                        q2 += sum(r["from_measured"] ** 2 + r["to_measured"] ** 2
                                  + r["workload_var"] for r in (ra, rb))  # fmt: skip
            if diffs:
                out.append((sum(diffs) / len(diffs), q2 / len(diffs) ** 2, not key[-1]))
    return sorted(out)


def test_contrast_samples_match_the_reference() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for (w, session, provider), aa in itertools.product(
        itertools.product(range(3), range(2), ("liger", "torch", "hf", "apex")), (False, True)
    ):
        rows.append({
            "_group": "g", "kernel": "k", "pass": "forward", "gpu": "G", "metric": "latency",
            "from_session": f"s{session}{aa}", "to_session": f"t{session}{aa}",
            "partition_id": f"p{w}", "provider": provider, "is_subject": provider == "liger",
            "aa": aa, "log_ratio": float(rng.normal(0, 0.02)) if (w, provider) != (2, "apex") else None,
            "benchmark_changed": provider == "hf" and session == 1,
            "from_measured": float(rng.uniform(0, 0.01)), "to_measured": float(rng.uniform(0, 0.01)),
            "workload_var": 1e-5,
        })  # fmt: skip
    _matches(contrast_samples(pl.DataFrame(rows)), _contrast_reference(pl.DataFrame(rows)), 2.0)


def _contrast_sigma(contrasts: int, local: tuple[float, int] = (0.01, 0)) -> float:
    """The contrast sigma of one step on a GPU whose contrast cell was fitted on
    ``contrasts`` contrasts (0.2%), its sitting cell on 300 (1.5%), its local cell
    (scale, samples) as given."""
    cells = [
        {"component": "sitting", "level": "gpu", "gpu": "G", "metric": "latency",
         "scale": 0.015, "samples": 300},
        {"component": "contrast", "level": "gpu", "gpu": "G", "metric": "latency",
         "scale": 0.002, "samples": contrasts},
        {"component": "local", "level": "gpu", "gpu": "G", "metric": "latency",
         "scale": local[0], "samples": local[1]},
    ]  # fmt: skip
    calibration = Calibration(pl.DataFrame(cells, schema=CALIBRATION_SCHEMA))
    step = pl.DataFrame({"gpu": ["G"], "metric": ["latency"], "kernel": ["k"]}).with_columns(
        sitting_factor=pl.lit(1.0), sitting_sigma=pl.lit(0.015)
    )
    return float(with_contrast(step, calibration)["contrast_sigma"][0])


def test_a_gpu_with_few_contrasts_keeps_the_whole_sitting_noise() -> None:
    assert _contrast_sigma(MIN_CONTRASTS - 1) == pytest.approx(0.015)


def test_a_gpu_with_enough_contrasts_takes_their_scale() -> None:
    assert _contrast_sigma(MIN_CONTRASTS) == pytest.approx(0.002)


def test_a_gpu_with_few_contrasts_takes_the_local_part_when_smaller() -> None:
    assert _contrast_sigma(MIN_CONTRASTS - 1, (0.01, MIN_CONTRASTS)) == pytest.approx(0.01)


def test_the_local_part_never_exceeds_the_whole_sitting_noise() -> None:
    assert _contrast_sigma(MIN_CONTRASTS - 1, (0.02, MIN_CONTRASTS)) == pytest.approx(0.015)


def test_a_local_cell_of_few_samples_is_not_used() -> None:
    assert _contrast_sigma(MIN_CONTRASTS - 1, (0.01, MIN_CONTRASTS - 1)) == pytest.approx(0.015)
