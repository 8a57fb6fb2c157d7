"""How often one workload of an unchanged sweep passes the lone rule's cut, and how often
a one-workload regression does: on its own step, against its control, and both.

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py --write DIR        # once: the corpora
    .venv/bin/python bench/lone_tails.py --read DIR [--seeds 0 1 ...]

The ``lone`` rule of :mod:`kiana.stats.sweeps` calls one workload a change when its
deviation from the rest of its sweep passes the Bonferroni cut
(:func:`kiana.stats.pooling.lone_cut`: 3.46 for five workloads at a separation of 3) on
*both* its own step and its step against its control (:mod:`kiana.stats.aggregate`).
The own step has less noise (no control's), so it alone would find more; this measures
what that costs.  For every Liger latency workload of a release unit of the realistic
corpora it takes the deviations exactly as :func:`kiana.stats.aggregate.aggregate` sees
them (the judge's own frame, caught on its way in) and prints, by the sitting noise kiana
assigned the step:

* unchanged units: the share of workloads beyond the cut on each basis.  Were the noise
  right, a workload would pass at the cut's nominal rate, ``2 (1 - Phi(3)) / 5`` =
  0.054% for five workloads;
* one-workload regressions of at least 10%: the share of true workloads beyond the cut
  on each basis (the rule asks both; its further conditions, a minority of the sweep and
  a move of at least the threshold, are left out here).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl
from detection import UNIT, judge_folder, read_seed, release_units
from misses import sitting_bins

import kiana.stats.aggregate as aggregate_module
import kiana.stats.sweeps as sweeps_module
from kiana.stats.pooling import deviation, lone_z

BASES = ("own", "adjusted", "both")


def _catch() -> list[tuple[pl.DataFrame, Any]]:
    """Wrap the judge's call of ``aggregate`` to keep each frame it is given."""
    caught: list[tuple[pl.DataFrame, Any]] = []
    original = aggregate_module.aggregate

    def keep(steps: pl.DataFrame, options: Any) -> pl.DataFrame:
        caught.append((steps, options))
        return original(steps, options)

    sweeps_module.aggregate = keep  # type: ignore[assignment]
    return caught


def deviations(steps: pl.DataFrame, options: Any) -> pl.DataFrame:
    """Each Liger latency workload's z on its own step and against its control, and the cut."""
    liger = steps.filter(pl.col("provider") == "liger", pl.col("metric") == "latency")
    frame = aggregate_module._lone_noise(aggregate_module._basis_columns(liger), options)
    adj, adj_se, k = deviation(pl.col("_y"), pl.col("_s_lone"))
    own, own_se, _ = deviation(pl.col("log_ratio"), aggregate_module._deep(pl.col("wnoise")))
    return frame.select(
        *UNIT, "workload", "sitting_sigma",
        (own / own_se).abs().alias("own"), (adj / adj_se).abs().alias("adjusted"),
        lone_z(k, options.separation).alias("cut"),
    ).drop_nulls(["own", "adjusted"])  # fmt: skip


def shares(frame: pl.DataFrame) -> pl.DataFrame:
    beyond = {b: pl.col(b) >= pl.col("cut") for b in ("own", "adjusted")}
    beyond["both"] = beyond["own"] & beyond["adjusted"]
    order = {
        f"sitting noise {b}": i for i, b in enumerate(("< 1%", "1-3%", "3-6%", ">= 6%", "unknown"))
    }
    return (
        frame.with_columns(sitting_bins("sitting_sigma").alias("sitting noise"))
        .group_by("sitting noise")
        .agg(pl.len().alias("n"), *(beyond[b].mean().alias(b) for b in BASES))
        .sort(pl.col("sitting noise").replace_strict(order))
    )


def _print(title: str, table: pl.DataFrame, digits: int) -> None:
    print(f"| {title} | n | " + " | ".join(f"beyond the cut: {b}" for b in BASES) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in BASES) + " |")
    for row in table.iter_rows(named=True):
        cells = " | ".join(f"{row[b]:.{digits}%}" for b in BASES)
        print(f"| {row['sitting noise']} | {row['n']:,} | {cells} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--read", type=Path, required=True, help="bench/detection.py --write DIR")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(60)))
    args = parser.parse_args()
    caught = _catch()
    parts = []
    for seed in args.seeds:
        folder = args.read / "realistic" / f"seed-{seed}"
        caught.clear()
        judge_folder(folder)
        truth, sessions = read_seed(folder)
        units = release_units(truth, sessions).select(*UNIT, "case", "true_workload", "change")
        for steps, options in caught:
            found = deviations(steps, options).join(units, on=UNIT, how="inner")
            parts.append(found.with_columns(pl.lit(seed).alias("seed")))
    every = pl.concat(parts).unique([*UNIT, "workload", "seed"])
    _print("unchanged units, workloads by sitting noise",
           shares(every.filter(pl.col("case") == "unchanged")), 3)  # fmt: skip
    one = every.filter(
        pl.col("case") == "one-workload regression",
        pl.col("workload") == pl.col("true_workload"),
        pl.col("change") >= 0.10,
    )
    _print(">= 10% one-workload regressions, the true workload", shares(one), 1)


if __name__ == "__main__":
    main()
