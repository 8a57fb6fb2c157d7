"""CodeChanges: a control whose own code changed between two sessions is no control."""

from __future__ import annotations

import polars as pl
import pytest

from kiana.errors import UsageError
from kiana.stats import judge
from tests.stats_fixtures import frame, sweep_rows


class Fake:
    """Says the benchmark of ``kernel`` changed; records what it was asked."""

    def __init__(self, kernel: str = "layer_norm") -> None:
        self.kernel = kernel
        self.asked: list[pl.DataFrame] = []

    def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
        self.asked.append(pairs)
        changed = pl.col("kernel") == self.kernel
        return pairs.with_columns(
            changed.alias("baseline_changed"),
            pl.when(changed)
            .then(pl.lit("benchmark_layer_norm.py changed in abc123def456"))
            .alias("baseline_note"),
        )


def rows_with(
    liger: float, torch: float, origins: tuple[str, str] = ("c1:a.csv", "c2:a.csv")
) -> pl.DataFrame:
    rows = sweep_rows([liger] * 4, spread=0.005) + sweep_rows(
        [torch] * 4, spread=0.005, provider="torch", base=50.0
    )
    data = frame(rows)
    return data.with_columns(
        pl.when(pl.col("version") == "0.7.0")
        .then(pl.lit(origins[0]))
        .otherwise(pl.lit(origins[1]))
        .alias("origin")
    )


def test_it_is_asked_once_per_distinct_pair() -> None:
    fake = Fake()
    judge(rows_with(0.0, 0.0), code_changes=fake)
    assert len(fake.asked) == 1
    asked = fake.asked[0]
    assert asked.columns == ["kernel", "from_origin", "to_origin"]
    assert asked.rows() == [("layer_norm", "c1:a.csv", "c2:a.csv")]


def test_a_changed_benchmark_sets_the_control_aside() -> None:
    # torch moved 10% because its code changed: liger's flat sweep is not a 10% speed-up.
    data = rows_with(0.0, 0.10)
    without = judge(data).findings.filter(pl.col("provider") == "liger").row(0, named=True)
    assert without["basis"] == "control_alone"
    result = judge(data, code_changes=Fake())
    liger = result.findings.filter(pl.col("provider") == "liger").row(0, named=True)
    torch = result.findings.filter(pl.col("provider") == "torch").row(0, named=True)
    assert liger["verdict"] == "unchanged" and liger["control_provider"] is None
    assert torch["verdict"] == "regression" and torch["basis"] == "benchmark"  # not drift
    assert (
        "benchmark changed between sessions: benchmark_layer_norm.py changed in abc123def456"
        in torch["evidence"]
    )
    steps = result.steps.filter(pl.col("provider") == "liger")
    assert steps["benchmark_changed"].all() and steps["control_provider"].is_null().all()


@pytest.mark.heavy
def test_the_gpu_wide_fallback_is_set_aside_too() -> None:
    liger = sweep_rows([0.10] * 3, spread=0.005, kernel="solo")
    others = [dict(r, kernel="other", partition_id="o" + str(r["partition_id"]))
              for r in sweep_rows([0.10] * 4, spread=0.005, provider="torch")]  # fmt: skip
    data = frame(liger + others).with_columns(pl.lit(None, pl.String).alias("origin"))
    assert judge(data).findings.filter(pl.col("kernel") == "solo")["verdict"][0] == "drift"
    row = (
        judge(data, code_changes=Fake("solo"))
        .findings.filter(pl.col("kernel") == "solo")
        .row(0, named=True)
    )
    assert row["control_provider"] is None and row["verdict"] == "regression"


def test_an_answer_without_its_columns_is_a_usage_error() -> None:
    class Broken:
        def baseline_changed(self, pairs: pl.DataFrame) -> pl.DataFrame:
            return pairs

    with pytest.raises(UsageError, match="baseline_changed"):
        judge(rows_with(0.0, 0.0), code_changes=Broken())


UTILS = """import os

def run_benchmarks(bench_test_fn, kernel_name, x_values):
    data = []
    for x in x_values:
        data.append(bench_test_fn(x))
    print_benchmark_data(data)
    update_benchmark_data_csv(data, filename="all_benchmark_data.csv")
"""


def test_a_utils_change_that_routes_output_keeps_the_control() -> None:
    # Liger #1228 (2026-05-28): run_benchmarks' CSV name, after its measuring loop.
    from kiana.culprits.hunks import mattering_hunks

    routed = UTILS.replace(
        'filename="all_benchmark_data.csv"',
        'filename=os.environ.get("IMPL", "all_benchmark_data.csv")',
    )
    assert mattering_hunks("utils.py", UTILS, routed) == []


def test_a_utils_change_before_the_measurement_voids_it_and_is_named() -> None:
    from kiana.culprits.hunks import mattering_hunks

    changed = UTILS.replace("for x in x_values:", "for x in x_values[::2]:")
    assert mattering_hunks("utils.py", UTILS, changed) == [
        "utils.py @@ -5,1 +5,1 @@ (run_benchmarks)"
    ]
    module_level = UTILS.replace("import os", "import os\nQUANTILES = [0.5, 0.1, 0.9]")
    assert mattering_hunks("utils.py", UTILS, module_level) != []
