"""The realistic noise model: it reproduces what Liger's real CSVs show (docs/CALIBRATION.md)."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from scipy import stats

from kiana.cli import main
from kiana.generate import KERNELS, CorpusConfig, generate, read_truth
from kiana.generate.calibration import Calibration, measure, measure_generated
from kiana.generate.plan import plan
from kiana.generate.realistic import single_share, spread_at, student_t
from kiana.generate.sittings import AA_CSV, MAIN_CSV

ROOT = Path(__file__).resolve().parents[2]
LIGER = ROOT.parent / "shared" / "liger"

#: What ``bench/calibrate.py`` prints for ../shared/liger (upstream commit ead96b61),
#: recorded in docs/CALIBRATION.md: the targets of the reproduction test.
REAL = {
    "baseline_steps.robust_sd": 0.0058,
    "baseline_steps.median_abs": 0.0060,
    "baseline_steps.p90_abs": 0.0811,
    "baseline_residuals.robust_sd": 0.0034,
    "baseline_residuals.median_abs": 0.0023,
    "baseline_residuals.p90_abs": 0.0264,
    "shifted_share": 0.4286,
    "change_to_spread_median": 3.2,
    "repeats_baseline.p90_abs": 0.0090,
}
#: Single-sample shares by latency bin (upper bound, ms) and median spreads.
REAL_SINGLE = {0.03: 0.016, 0.1: 0.0, 0.3: 0.0, 1.0: 0.0, 3.0: 0.0, 5.0: 0.069, 50.0: 0.488,
               500.0: 1.0}  # fmt: skip
REAL_SPREAD = {0.03: 0.0505, 0.1: 0.0319, 0.3: 0.0188, 1.0: 0.0078, 3.0: 0.0023, 5.0: 0.0009,
               50.0: 0.0031}  # fmt: skip
#: How far a generated number may be from the real one: a factor (ratios) or, for
#: shares, an absolute difference.  The real numbers rest on 28 baseline steps of
#: 7 sweeps: the tolerances are that wide, and no wider.
FACTOR = {
    "baseline_steps.robust_sd": 2.5, "baseline_steps.median_abs": 2.0,
    "baseline_steps.p90_abs": 1.35, "baseline_residuals.robust_sd": 2.0,
    "baseline_residuals.median_abs": 2.0, "baseline_residuals.p90_abs": 1.5,
    "change_to_spread_median": 2.0, "repeats_baseline.p90_abs": 2.0,
}  # fmt: skip
SHARE_TOLERANCE = 0.2

#: Fifteen kernels on three GPUs, three seeds: ~35k runs, ~2,600 sittings
#: (``bench/calibrate.py --generated 0 1 2``).
CORPUS = CorpusConfig(noise="realistic", kernels=tuple(KERNELS))


def _value(calibration: Calibration, name: str) -> float:
    part, _, field = name.partition(".")
    value = getattr(calibration, part)
    value = getattr(value, field) if field else value
    assert value is not None, name
    return float(value)


def _pooled(config: CorpusConfig, seeds: tuple[int, ...] = (0, 1, 2)) -> Calibration:
    return measure_generated(config, seeds, step_min_ms=0.3)


@pytest.fixture(scope="module")
def realistic() -> Calibration:
    return _pooled(CORPUS)


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(FACTOR))
def test_realistic_corpus_reproduces_the_real_scale(realistic: Calibration, name: str) -> None:
    ratio = _value(realistic, name) / REAL[name]
    assert 1 / FACTOR[name] <= ratio <= FACTOR[name], (name, _value(realistic, name))


@pytest.mark.heavy
def test_realistic_corpus_shifts_as_many_sittings(realistic: Calibration) -> None:
    assert abs(_value(realistic, "shifted_share") - REAL["shifted_share"]) <= SHARE_TOLERANCE


@pytest.mark.heavy
def test_realistic_corpus_takes_single_samples_of_slow_kernels(realistic: Calibration) -> None:
    shares = {b.upper_ms: b.single_share for b in realistic.bins}
    for upper, share in REAL_SINGLE.items():
        assert abs(shares[upper] - share) <= 0.05, (upper, shares[upper])


def test_realistic_corpus_spreads_as_real_runs(realistic: Calibration) -> None:
    spreads = {b.upper_ms: b.median_spread for b in realistic.bins}
    for upper, spread in REAL_SPREAD.items():
        generated = spreads[upper]
        assert generated is not None and 1 / 1.5 <= generated / spread <= 1.5, (upper, generated)


def test_repeats_within_a_sitting_agree_better_than_sittings(realistic: Calibration) -> None:
    repeats, sittings = realistic.repeats_baseline.p90_abs, realistic.baseline_steps.p90_abs
    assert repeats is not None and sittings is not None and repeats * 5 < sittings


def test_the_spread_model_does_not_reproduce_real_noise() -> None:
    """The check can fail: the default model's sittings move by their spread only."""
    spread = _pooled(replace(CORPUS, noise="spread"), seeds=(0,))
    p90 = _value(spread, "baseline_steps.p90_abs")
    assert p90 * FACTOR["baseline_steps.p90_abs"] < REAL["baseline_steps.p90_abs"]


@pytest.mark.heavy
@pytest.mark.skipif(not LIGER.is_dir(), reason=f"Liger's CSVs are not at {LIGER}")
def test_recorded_numbers_are_the_ones_real_data_shows() -> None:
    """REAL (and docs/CALIBRATION.md) is what bench/calibrate.py measures today."""
    from kiana.importers.liger import import_csvs
    from kiana.load import connect, load_documents
    from kiana.load.judged import judged_runs

    con = connect(None)
    load_documents(con, import_csvs(sorted(LIGER.glob("*.csv"))).documents, source="test")
    real = measure(judged_runs(con), step_min_ms=0.3)
    for name, value in REAL.items():
        assert _value(real, name) == pytest.approx(value, rel=0.02, abs=5e-5), name
    for b in real.bins:
        assert b.single_share == pytest.approx(REAL_SINGLE.get(b.upper_ms, 1.0), abs=1e-3)


def test_same_config_same_realistic_documents() -> None:
    config = replace(CorpusConfig(noise="realistic"), kernels=("rms_norm",), versions=("0.5.0",
                     "0.5.5", "0.6.0"))  # fmt: skip
    first, second = generate(config), generate(config)
    assert list(first.documents()) == list(second.documents())
    assert first.truth.equals(second.truth)


def _tiny() -> CorpusConfig:
    return CorpusConfig(
        seed=3, noise="realistic", kernels=("rms_norm", "fused_linear_cpo_loss"),
        versions=("0.5.0", "0.5.5", "0.6.0", "0.6.2"), aa_rate=0.2, baseline_change_rate=0.2,
    )  # fmt: skip


def test_aa_pairs_repeat_a_sitting_minutes_later_in_another_csv() -> None:
    corpus = generate(_tiny())
    aa = corpus.truth.filter(pl.col("effect") == "aa")
    assert aa.height > 0 and aa["change"].unique().to_list() == [0.0]
    for row in aa.iter_rows(named=True):
        assert row["from_version"] == row["to_version"]
        start, end = (datetime.fromisoformat(row[k][:-1]) for k in ("from_session", "to_session"))
        assert 0 < (end - start).total_seconds() < 3600
    csv = {(s.kernel, s.pass_, s.gpu.label, s.observed_at.strftime("%Y-%m-%dT%H:%M:%SZ")):
           s.labels["liger_csv"] for s in corpus.specs()}  # fmt: skip
    for row in aa.iter_rows(named=True):
        assert csv[(row["kernel"], row["pass"], row["gpu"], row["to_session"])] == AA_CSV
        assert csv[(row["kernel"], row["pass"], row["gpu"], row["from_session"])] == MAIN_CSV


def test_nothing_else_happens_in_an_aa_pair() -> None:
    truth = generate(_tiny()).truth
    aa = truth.filter(pl.col("effect") == "aa").select("kernel", "pass", "gpu", "to_session")
    other = truth.filter(~pl.col("effect").is_in(["aa", "outlier"]))
    assert other.join(aa, on=["kernel", "pass", "gpu", "to_session"], how="semi").is_empty()


def test_a_baseline_change_moves_that_baseline_alone() -> None:
    config = _tiny()
    planned = plan(config)
    rows = [r for r in planned.truth if r["effect"] == "baseline_change"]
    assert rows
    for row in rows:
        group = next(
            g for g in planned.groups
            if (g.kernel.name, g.pass_, g.gpu.gpu.label) == (row["kernel"], row["pass"], row["gpu"])
        )  # fmt: skip
        by_id = {g: p for p, g in ((p, group.session_id(p)) for p in group.sessions)}
        before, after = by_id[row["from_session"]], by_id[row["to_session"]]
        for series in group.series:
            moved = group.factor(series, after) / group.factor(series, before)
            expected = 1 + row["change"] if series.provider == row["provider"] else 1.0
            assert moved == pytest.approx(expected), series.provider
        assert row["provider"] != "liger"
        others = [r for r in planned.truth if r["effect"] not in ("baseline_change", "outlier")
                  and (r["kernel"], r["pass"], r["gpu"], r["to_session"]) ==
                  (row["kernel"], row["pass"], row["gpu"], row["to_session"])]  # fmt: skip
        assert others == []


def test_slow_runs_are_single_samples_and_fast_ones_never() -> None:
    for spec in generate(_tiny()).specs():
        single = spec.p20 == spec.median == spec.p80
        if spec.median >= 50e6:
            assert single
        elif spec.median <= 3e6:
            assert not single


def test_spread_and_single_share_follow_the_calibration_table() -> None:
    assert spread_at(0.3e6) > spread_at(1e6) > spread_at(3e6)
    assert single_share(4e6) == 0.07 and single_share(5e9) == 1.0


def test_student_t_has_the_tails_of_scipys() -> None:
    rng = random.Random(0)
    draws = sorted(abs(student_t(rng, 3.0)) for _ in range(40_000))
    for q in (0.5, 0.9, 0.99):
        assert draws[int(q * len(draws))] == pytest.approx(stats.t.ppf((1 + q) / 2, 3), rel=0.06)


def test_spread_corpus_has_no_realistic_effects() -> None:
    truth = generate(replace(_tiny(), noise="spread")).truth
    assert not truth["effect"].is_in(["aa", "baseline_change"]).any()


def test_cli_writes_a_realistic_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "corpus"
    assert main(["generate", str(out), "--noise", "realistic", "--versions", "3",
                 "--kernels", "rms_norm", "--aa-rate", "0.3"]) == 0  # fmt: skip
    truth = read_truth(out / "truth.csv")
    assert {"aa", "baseline_change"} <= set(truth["effect"])
    assert "baseline_change" in capsys.readouterr().out
    assert math.isfinite(truth["change"].sum())


def test_sessions_name_the_aa_sittings() -> None:
    corpus = generate(_tiny())
    listed = corpus.sessions.filter("aa").select("kernel", "pass", "gpu", "session")
    truth = corpus.truth.filter(pl.col("effect") == "aa").select(
        "kernel", "pass", "gpu", pl.col("to_session").alias("session")
    )
    assert listed.sort(listed.columns).equals(truth.unique().sort(listed.columns))
    assert (
        listed.height > 0 and corpus.sessions.filter("aa")["rerun"].to_list() == [1] * listed.height
    )


def test_memory_rows_of_a_realistic_corpus_name_their_csv() -> None:
    specs = list(generate(replace(_tiny(), memory=True)).specs())
    memory = [s for s in specs if s.metric == "memory"]
    assert memory and {s.labels.get("liger_csv") for s in memory} == {MAIN_CSV, AA_CSV}
