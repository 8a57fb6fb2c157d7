"""Renamed workloads: a config key added at one value keeps the series
(kiana.stats.renames)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from kiana.stats import judge, renames
from kiana.stats.series import judgeable
from tests.stats_fixtures import frame, run

KERNEL = "megatron_cross_entropy"
VOCABS = (4096, 8192, 16384, 32768, 65536, 131072)
LEVELS = {"liger": 1.0, "megatron-unfused": 3.0}


def sitting(day: int, part: str | None, *, change: float = 0.0, vocabs: Any = VOCABS) -> list[Any]:
    """One sitting of the sweep, every workload's slug with ``part`` (or without)."""
    rows = []
    for i, v in enumerate(vocabs):
        slug = f"batch4-seq2048-{part}-vocab{v}" if part else f"batch4-seq2048-vocab{v}"
        for provider, level in LEVELS.items():
            moved = change if provider == "liger" else 0.0
            median = level * (i + 1) * (1 + moved)
            rows.append(run("0.8.0", median, provider=provider, kernel=KERNEL, workload=slug,
                            day=day, minute=i))  # fmt: skip
    return rows


def found(rows: list[Any]) -> pl.DataFrame:
    return renames.find(judgeable(frame(rows)))


def test_a_key_added_at_one_value_continues_the_series_and_judges_its_step() -> None:
    judged = judge(frame(sitting(1, None) + sitting(6, "tp1", change=0.40)))
    liger = judged.findings.filter(pl.col("provider") == "liger").row(0, named=True)
    assert (liger["verdict"], round(liger["change"], 2)) == ("regression", 0.40)
    control = judged.findings.filter(pl.col("provider") == "megatron-unfused")
    assert control["verdict"].to_list() == ["unchanged"]
    assert judged.coverage.not_compared == {}
    assert judged.coverage.renamed == {f"{KERNEL} +tp1": 12}


def test_the_joined_series_takes_the_later_slug() -> None:
    judged = judge(frame(sitting(1, None) + sitting(6, "tp1")))
    assert set(judged.steps["workload"]) == {f"batch4-seq2048-tp1-vocab{v}" for v in VOCABS}


def test_the_coverage_sentence_names_the_rename() -> None:
    cov = judge(frame(sitting(1, None) + sitting(6, "tp1"))).coverage
    assert cov.sentence() == (
        "compared 12 of 12 series (6 of 6 partitions); "
        f"workload renamed: 12 series continued ({KERNEL} +tp1)"
    )


def test_a_key_removed_at_one_value_continues_the_series_too() -> None:
    rows = found(sitting(1, "tp1") + sitting(6, None))
    assert rows["added"].to_list() == [False] * len(VOCABS)
    assert set(rows["to_workload"]) == {f"batch4-seq2048-vocab{v}" for v in VOCABS}


def test_a_key_added_at_two_values_does_not_join() -> None:
    later = sitting(6, "tp1", vocabs=VOCABS[:3]) + sitting(6, "tp2", vocabs=VOCABS[3:])
    data = frame(sitting(1, None) + later)
    assert renames.find(judgeable(data)).height == 0
    cov = judge(data).coverage
    assert (cov.renamed, cov.not_compared) == ({}, {"one session only": 24})


def test_the_old_form_beside_the_new_in_one_session_does_not_join() -> None:
    rows = sitting(1, None) + sitting(6, None) + sitting(6, "tp1") + sitting(9, "tp1")
    assert found(rows).height == 0
    assert judge(frame(rows)).coverage.renamed == {}


def test_a_key_at_another_value_beside_the_old_form_does_not_join() -> None:
    rows = sitting(1, None) + sitting(6, None) + sitting(6, "tp2") + sitting(9, "tp1")
    assert found(rows).height == 0


def test_a_sweep_that_changed_its_points_at_the_rename_does_not_join() -> None:
    assert found(sitting(1, None) + sitting(6, "tp1", vocabs=VOCABS[:5])).height == 0


def test_a_form_that_comes_back_does_not_join() -> None:
    assert found(sitting(1, None) + sitting(6, "tp1") + sitting(9, None)).height == 0


def test_a_rename_is_per_gpu() -> None:
    other = [{**r, "gpu": "NVIDIA B200", "partition_id": r["partition_id"] + "|b200"}
             for r in sitting(6, "tp1")]  # fmt: skip
    assert found(sitting(1, None) + other).height == 0


def test_the_sentence_escapes_a_kernel_name() -> None:
    from kiana.stats.coverage import Coverage

    cov = Coverage(1, 1, 1, 1, 0, 0, renamed={"k\n::error::x +tp1": 1})
    assert "k\\n::error::x +tp1" in cov.sentence()
    assert "\n" not in cov.sentence()


def test_related_slugs_are_one_part_apart() -> None:
    assert renames.related("batch4-tp1-vocab8", "batch4-vocab8")
    assert not renames.related("batch4-vocab8", "batch4-vocab16")
    assert not renames.related("default", "default")


#: The fetched Liger-Kernel repository (bare): KIANA_LIGER_REPO or the mirror.
LIGER_REPO = Path(os.environ.get("KIANA_LIGER_REPO", "/work/.mirror/linkedin+Liger-Kernel/repo"))


@pytest.mark.heavy  # ~25 s: the git import reads Liger's CI history too
def test_real_history_compares_megatron_cross_entropy_across_tp1() -> None:
    """In Liger's history ``"TP": 1`` joined megatron_cross_entropy's config between the
    2026-06-10 and 2026-06-15 sittings (commits 0400d313 and 80f19ad7): Liger's forward
    moved +40% at V = 131072, megatron-unfused stayed within 1.5%."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not (LIGER_REPO / "HEAD").exists():
        pytest.skip(
            f"{LIGER_REPO} is absent (fetch github:linkedin/Liger-Kernel, or set KIANA_LIGER_REPO)"
        )
    import kiana.load
    from kiana.importers.git import import_git
    from kiana.load.judged import judged_runs

    history = import_git(LIGER_REPO, rev="8ef203a4..80f19ad7")
    con = kiana.load.connect(None)
    kiana.load.load_documents(con, history.result.documents)
    runs = judged_runs(con).filter(pl.col("kernel") == KERNEL)
    judged = judge(runs)
    steps = judged.steps.filter(
        (pl.col("pass") == "forward") & (pl.col("metric") == "latency")
        & (pl.col("workload") == "batch4-seq2048-tp1-vocab131072")
    )  # fmt: skip
    change = dict(steps.select("provider", "change").iter_rows())
    assert steps["from_session"].str.slice(0, 10).unique().to_list() == ["2026-06-10"]
    assert 0.35 < change["liger"] < 0.45 and abs(change["megatron-unfused"]) < 0.015
    assert judged.coverage.renamed[f"{KERNEL} +tp1"] > 0


def test_two_slugs_that_give_one_do_not_join() -> None:
    rows = [run("0.8.0", 1.0, kernel=KERNEL, workload="a-b", day=1)]
    rows += [run("0.8.0", 1.0, kernel=KERNEL, workload=w, day=6, minute=i)
             for i, w in enumerate(("x-a-b", "a-b-x"))]  # fmt: skip
    assert found(rows).height == 0
