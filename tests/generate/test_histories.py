"""Long histories (issue 16): many consecutive sessions, outlier sessions that come back at
once, level shifts that stay, and their truth rows (``outlier``, ``changepoint``).

Sessions are found from the runs alone by the contract's rule (``with_sessions``), as in
``tests/test_generate_sessions.py``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import polars as pl
import pytest

from kiana.errors import UsageError
from kiana.generate import Corpus, CorpusConfig, generate
from kiana.generate.catalog import resolve_gpu
from tests.generate.test_sessions import GROUP, noiseless, runs_of, with_sessions

LONG = CorpusConfig(
    seed=5,
    kernels=("rms_norm", "cross_entropy"),
    versions=("0.5.5", "0.6.0", "0.6.2"),
    sweep_size=3,
    histories=4,
    history_sessions=(30, 60),
)
#: No noise at all: medians move by exactly the planted factors.
QUIET = noiseless(LONG, history_noise=(0.0,))


@pytest.fixture(scope="module")
def long() -> Corpus:
    return generate(LONG)


def _history(truth: pl.DataFrame) -> pl.DataFrame:
    return truth.filter(pl.col("effect") == "changepoint").select(GROUP).unique()


def test_same_config_same_bytes_and_no_histories_changes_nothing(long: Corpus) -> None:
    def digest(corpus: Corpus) -> str:
        h = hashlib.sha256()
        for doc in corpus.documents():
            h.update(json.dumps(doc, sort_keys=True).encode())
        return h.hexdigest()

    assert digest(long) == digest(generate(LONG))
    assert long.truth.equals(generate(LONG).truth)
    without = generate(replace(LONG, histories=0))
    kept = long.truth.join(_history(long.truth), on=GROUP, how="anti")
    assert kept.equals(without.truth)


def test_each_history_is_one_long_group_on_a_gpu_of_its_own(long: Corpus) -> None:
    truth = long.truth
    histories = _history(truth)
    assert histories.height == LONG.histories
    used = {resolve_gpu(g).gpu.label for g in LONG.gpus}
    assert not set(histories["gpu"]) & used
    runs = with_sessions(runs_of(long)).join(histories, on=GROUP, how="semi")
    assert set(runs["provider"]) == {"liger", "huggingface"}
    per = runs.group_by(GROUP).agg(
        pl.col("session").n_unique().alias("sessions"),
        pl.col("version").n_unique().alias("labels"),
    )
    assert per["sessions"].is_between(*LONG.history_sessions).all()
    assert (per["sessions"] == per["labels"]).all(), "one label per session"
    assert runs["version"].str.contains(r"^main-\d{3}$").all()


def test_truth_rows_name_the_sessions_of_the_shape(long: Corpus) -> None:
    truth = long.truth
    sessions = long.sessions.join(_history(truth), on=GROUP, how="semi")
    at = sessions.select(*GROUP, "session", "position")
    for (kernel, pass_, gpu), rows in truth.join(_history(truth), on=GROUP).group_by(GROUP):
        assert sorted(rows["effect"]) == ["changepoint", "changepoint", "outlier", "outlier"]
        assert rows["workload"].is_null().all() and (rows["provider"] == "liger").all()
        mine = at.filter(pl.col("kernel") == kernel, pl.col("pass") == pass_, pl.col("gpu") == gpu)
        where = dict(zip(mine["session"], mine["position"], strict=True))
        last = mine["position"].max()
        for row in rows.iter_rows(named=True):
            to = where[row["to_session"]]
            if row["effect"] == "outlier":
                assert row["from_session"] == row["to_session"]
                assert 5 <= to <= last - 2 and abs(row["change"]) > 0.1
            else:
                assert where[row["from_session"]] == to - 1
                assert 6 <= to <= last - 5 and 0.07 < abs(row["change"]) < 0.26
        first_outlier = min(
            where[s] for s in rows.filter(pl.col("effect") == "outlier")["to_session"]
        )
        first_shift = min(
            where[s] for s in rows.filter(pl.col("effect") == "changepoint")["to_session"]
        )
        assert 2 <= first_shift - first_outlier <= 5, "the shift comes a few sessions after"


def test_medians_leave_and_come_back_and_shifts_stay() -> None:
    corpus = generate(QUIET)
    truth = corpus.truth
    runs = with_sessions(runs_of(corpus)).join(_history(truth), on=GROUP, how="semi")
    level = runs.group_by(*GROUP, "provider", "workload", "session").agg(pl.col("median").first())
    level = level.sort(*GROUP, "provider", "workload", "session").with_columns(
        (pl.col("median") / pl.col("median").shift(1).over(*GROUP, "provider", "workload")).alias(
            "ratio"
        )
    )
    control = level.filter(pl.col("provider") != "liger", pl.col("ratio").is_not_null())
    assert (control["ratio"] - 1).abs().max() < 1e-3, "the control stays flat"
    liger = level.filter(pl.col("provider") == "liger")
    for row in truth.join(_history(truth), on=GROUP).iter_rows(named=True):
        key = [pl.col(k) == row[k] for k in GROUP]
        into = liger.filter(*key, pl.col("session") == row["to_session"])["ratio"]
        assert ((into - (1 + row["change"])).abs() < 2e-3).all(), row
        if row["effect"] == "outlier":
            after = liger.filter(*key, pl.col("session") > row["to_session"]).sort("session")
            back = after.group_by("workload").agg(pl.col("ratio").first())["ratio"]
            assert ((back * (1 + row["change"]) - 1).abs() < 2e-3).all(), row


@pytest.mark.heavy
def test_zero_spread_and_noise_levels_vary_by_history(long: Corpus) -> None:
    notes = long.truth.filter(pl.col("effect") == "changepoint")["note"].unique().to_list()
    assert any("zero spread" in n for n in notes) and any("spread reported" in n for n in notes)
    assert len({n.split("noise ")[1].split(",")[0] for n in notes}) >= 2
    zero = [
        s for s in long.specs()
        if s.gpu.label in set(_history(long.truth)["gpu"]) and s.p20 == s.median == s.p80
    ]  # fmt: skip
    assert zero


@pytest.mark.parametrize(
    "changes",
    [
        {"histories": -1},
        {"history_sessions": (10, 20)},
        {"history_sessions": (60, 30)},
        {"history_noise": ()},
        {"history_outliers": (1.5,)},
    ],
)
def test_bad_history_settings_are_usage_errors(changes: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        CorpusConfig(**changes)  # type: ignore[arg-type]
