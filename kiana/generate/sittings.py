"""What only the ``realistic`` model plans: A/A pairs and baseline code changes.

* **A/A pairs** (``aa_rate`` per kernel, pass, GPU and version without a same-label
  re-benchmark): the sitting is measured again 1-20 minutes after its last round,
  under the same label, and recorded in another CSV (``liger_csv`` label
  :data:`AA_CSV`), as when Liger's ``all_benchmark_data.csv`` and a backend's
  ``all_benchmark_data_cutile.csv`` both time torch's jsd 107 s apart.  Nothing
  changes between the two: whatever differs is noise.  Truth: effect ``aa``, one row
  per provider, change 0.
* **Baseline code changes** (``baseline_change_rate`` per kernel, pass, GPU and step
  that no other effect ends in, and that is no A/A pair): one baseline provider of
  the group (its reference implementation or the benchmark script's code for it)
  moves by a factor log-uniform in ``baseline_changes``, either sign, on every
  workload, from that session on; Liger's provider does not move.  Truth: effect
  ``baseline_change``, that provider, workload null.  A Liger finding of that step
  is ``unchanged``: a control whose own code changed is no control.

Both are drawn from the realistic model's own generator (see :mod:`kiana.generate.plan`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kiana.generate.config import CorpusConfig
from kiana.generate.model import Change, Group, Point, Round, loguniform

#: The CSV an A/A pair's second sitting is recorded in; every other realistic run is
#: recorded in :data:`MAIN_CSV`.
MAIN_CSV = "all_benchmark_data.csv"
AA_CSV = "all_benchmark_data_cutile.csv"


def plan_aa(
    config: CorpusConfig, rng: random.Random, groups: list[Group], rounds: list[Round],
    aa: set[tuple[int, Point]], record: Callable[..., Any],
) -> None:  # fmt: skip
    """Add A/A sittings: to ``groups``' sessions, ``rounds``, ``aa`` and the truth
    (through ``record``, the planner's)."""
    last: dict[tuple[int, Point], Round] = {}
    for r in rounds:
        key = (r.group, (r.version, r.rerun))
        if key not in last or r.at > last[key].at:
            last[key] = r
    picked: list[tuple[int, int]] = []
    for index, group in enumerate(groups):
        for point in sorted(group.sessions):
            v, rerun = point
            if rerun == 0 and (v, 1) not in group.sessions and rng.random() < config.aa_rate:
                picked.append((index, v))
    if not picked and config.guarantee_effects and config.aa_rate > 0:
        free = [
            (index, point[0]) for index, group in enumerate(groups)
            for point in sorted(group.sessions)
            if point[1] == 0 and (point[0], 1) not in group.sessions
        ]  # fmt: skip
        picked = [rng.choice(free)] if free else []
    for number, (index, v) in enumerate(picked, 1):
        group = groups[index]
        at = last[(index, (v, 0))].at + timedelta(seconds=rng.randint(60, 1200))
        group.sessions[(v, 1)] = at
        rounds.append(Round(index, v, 1, 0, at))
        aa.add((index, (v, 1)))
        note = f"A/A pair #{number}: the sitting measured again in {AA_CSV}, nothing changed"
        for provider in dict.fromkeys(s.provider for s in group.series):
            record(index, provider, None, (v, 0), (v, 1), "aa", 0.0, note)


def plan_baseline_changes(
    config: CorpusConfig, rng: random.Random, groups: list[Group],
    stepped: set[tuple[int, Point]], step: Callable[..., Any],
) -> None:  # fmt: skip
    """Plant baseline code changes in ``groups`` on steps no effect ends in
    (``stepped``), through ``step`` (the planner's: it records the truth and marks the
    step)."""
    candidates = [
        (index, point) for index, group in enumerate(groups)
        for point in sorted(group.sessions)[1:]
        if (index, point) not in stepped and len({s.provider for s in group.series}) > 1
    ]  # fmt: skip
    picked = [c for c in candidates if rng.random() < config.baseline_change_rate]
    if not picked and config.guarantee_effects and config.baseline_change_rate > 0 and candidates:
        picked = [rng.choice(candidates)]
    for number, (index, point) in enumerate(picked, 1):
        group = groups[index]
        baselines = [p for p in dict.fromkeys(s.provider for s in group.series) if p != "liger"]
        provider = rng.choice(baselines)
        size = loguniform(rng, *config.baseline_changes)
        change = round(size if rng.random() < 0.5 else -size / (1 + size), 4)
        group.changes.append(Change(point, 1 + change, provider, None))
        note = f"baseline change #{number}: {provider}'s own code changed, Liger's did not"
        step(index, provider, None, point, "baseline_change", change, note)
