"""The corpus plan: series groups, sessions and their rounds, injected effects, truth.

:func:`plan` draws everything that the ground truth depends on up front with one
``random.Random(seed)`` in a fixed order (series, sessions, environment shifts, Liger
effects, same-label re-benchmarks, conflicts, outliers) and keeps it compact: the
per-run noise is drawn later, while :class:`kiana.generate.Corpus` streams.

A *point* ``(version index, rerun)`` orders the sessions of one group: ``rerun`` 0 is
the release's benchmark, 1 a re-benchmark under the same label days later.  An effect
applies from its point on, so a same-label code change stays in later releases.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from kiana.generate.catalog import KERNELS, release_dates, resolve_gpu
from kiana.generate.config import CorpusConfig, baselines_of, passes_of
from kiana.generate.histories import History, plan_histories
from kiana.generate.model import Change, Group, Point, Round, loguniform, plan_series, workloads
from kiana.generate.realistic import RealisticNoise, spread_at
from kiana.generate.sittings import plan_aa, plan_baseline_changes
from kiana.generate.truth import Effect

Kind = Literal["workload", "small3", "small45", "large"]


@dataclass
class Plan:
    config: CorpusConfig
    versions: tuple[str, ...]
    groups: list[Group] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    #: (round index, series position) -> factor of a run that is off.
    outliers: dict[tuple[int, int], float] = field(default_factory=dict)
    truth: list[dict[str, Any]] = field(default_factory=list)
    #: Long histories: group index -> its noise (how its runs are drawn).
    histories: dict[int, History] = field(default_factory=dict)
    #: (group index, point) -> factor on every ``liger`` run of an outlier session.
    session_factors: dict[tuple[int, Point], float] = field(default_factory=dict)
    #: Sessions that repeat the one before them minutes later, nothing changed (A/A).
    aa: set[tuple[int, Point]] = field(default_factory=set)


def plan(config: CorpusConfig) -> Plan:
    """Plan the corpus of ``config``; same config, same plan."""
    return _Planner(config).plan


class _Planner:
    def __init__(self, config: CorpusConfig) -> None:
        self.config = config
        self.plan = Plan(config, config.version_labels)
        self.groups = self.plan.groups
        self.rounds = self.plan.rounds
        self.drifted: set[tuple[str, int]] = set()
        self.touched: set[tuple[int, Point]] = set()
        #: (group, point) of every step an effect ends in.
        self.stepped: set[tuple[int, Point]] = set()
        rng = random.Random(config.seed)
        # What only the realistic model plans comes from a generator of its own, so
        # both models plan the same groups, sessions and effects for one seed.
        realistic = random.Random(f"kiana-generate-realistic:{config.seed}")
        self._groups(rng)
        self._sessions(rng)
        if config.noise == "realistic":
            plan_aa(config, realistic, self.groups, self.rounds, self.plan.aa, self._record)
            self.touched |= self.plan.aa
        self._drift(rng)
        self._liger_effects(rng)
        self._rerun_effects(rng)
        if config.noise == "realistic":
            stepped = self.stepped | self.plan.aa
            plan_baseline_changes(config, realistic, self.groups, stepped, self._step)
        self._conflicts(rng)
        self.rounds.sort(key=lambda r: (r.version, r.at, r.group, r.replicate))
        self._outliers(rng)
        # Drawn last, from their own generator: a corpus without histories is unchanged.
        self._histories(random.Random(f"kiana-generate-histories:{config.seed}"))

    @property
    def steps(self) -> range:
        return range(1, len(self.plan.versions))

    def _groups(self, rng: random.Random) -> None:
        config = self.config
        spreads: tuple[Callable[[float], float] | None, float] = (None, 0.3)
        if config.noise == "realistic":
            spreads = (spread_at, RealisticNoise().series_spread_sigma)
        for name in config.kernels:
            kernel = KERNELS[name]
            sweep = workloads(kernel, config.sweep_size, config.dtypes)
            providers = ("liger", *baselines_of(kernel, config))
            for gpu_key in config.gpus:
                gpu = resolve_gpu(gpu_key)
                for pass_ in passes_of(kernel, config):
                    series = plan_series(rng, kernel, pass_, gpu, providers, sweep, *spreads)
                    self.groups.append(Group(kernel, pass_, gpu, series))

    def _sessions(self, rng: random.Random) -> None:
        """Each GPU benchmarks every group once per version, a few minutes apart, within
        days of the release; some groups again under the same label days later."""
        config = self.config
        dates = release_dates(self.plan.versions)
        by_gpu: dict[str, list[int]] = {}
        for index, group in enumerate(self.groups):
            by_gpu.setdefault(group.gpu.gpu.slug, []).append(index)
        candidates: list[tuple[int, int, datetime, int]] = []
        for v, date in enumerate(dates):
            gap = (dates[v + 1] - date).days if v + 1 < len(dates) else 7
            for indices in by_gpu.values():
                offset = rng.randint(0, max(0, min(2, gap - 4)))
                start = date + timedelta(days=offset)
                start += timedelta(hours=rng.randint(8, 15), minutes=rng.randint(0, 59))
                room = gap - 2 - offset  # days left for a same-label re-benchmark
                for index in indices:
                    start += timedelta(minutes=rng.randint(2, 7), seconds=rng.randint(0, 59))
                    self._session(rng, index, (v, 0), start)
                    if room >= 2:
                        candidates.append((index, v, start, room))
                        if rng.random() < config.rerun_rate:
                            self._rerun(rng, index, v, start, room)
        reruns = sum(1 for g in self.groups for _, r in g.sessions if r)
        if config.guarantee_effects and config.rerun_rate > 0:
            free = [c for c in candidates if (c[1], 1) not in self.groups[c[0]].sessions]
            while reruns < 2 and free:
                index, v, start, room = free.pop(rng.randrange(len(free)))
                self._rerun(rng, index, v, start, room)
                reruns += 1

    def _rerun(self, rng: random.Random, index: int, v: int, start: datetime, room: int) -> None:
        later = timedelta(days=rng.randint(2, room), hours=rng.randint(-3, 3))
        self._session(rng, index, (v, 1), start + later + timedelta(minutes=rng.randint(0, 59)))

    def _session(self, rng: random.Random, index: int, point: Point, start: datetime) -> None:
        """One session: a round, and with ``replicate_rate`` more rounds minutes apart
        (back-to-back re-runs: the whole session stays within ~45 minutes)."""
        config = self.config
        self.groups[index].sessions[point] = start
        repeats = config.replicates if rng.random() < config.replicate_rate else 1
        at = start
        for replicate in range(repeats):
            if replicate:
                at += timedelta(minutes=rng.randint(4, 8), seconds=rng.randint(0, 59))
            self.rounds.append(Round(index, point[0], point[1], replicate, at))

    def _drift(self, rng: random.Random) -> None:
        config = self.config
        if len(self.plan.versions) < 2 or config.drift_rate == 0:
            return
        events = [
            (gpu, step) for step in self.steps for gpu in config.gpus
            if rng.random() < config.drift_rate
        ]  # fmt: skip
        if not events and config.guarantee_effects:
            events.append((rng.choice(config.gpus), rng.choice(self.steps)))
        for number, (gpu_key, step) in enumerate(events, 1):
            gpu = resolve_gpu(gpu_key)
            size = loguniform(rng, *config.drift_changes)
            change = round(size if rng.random() < 0.6 else -size / (1 + size), 4)
            self.drifted.add((gpu.gpu.slug, step))
            note = f"environment shift #{number} on {gpu.gpu.label}: every provider moved"
            for index, group in enumerate(self.groups):
                if group.gpu == gpu:
                    group.changes.append(Change((step, 0), 1 + change, None, None))
                    for provider in dict.fromkeys(s.provider for s in group.series):
                        self._step(index, provider, None, (step, 0), "drift", change, note)

    def _kind(self, rng: random.Random, effect: Effect) -> Kind:
        config = self.config
        if effect == "regression" and rng.random() < config.single_workload_share:
            return "workload"
        u = rng.random()
        if u < config.small_shift_share / 2:
            return "small3"
        return "small45" if u < config.small_shift_share else "large"

    def _quiet(self, index: int, size: float) -> bool:
        """Whether a sweep-wide shift of ``size`` is at least the noise multiple of
        every Liger series of the group's spread."""
        return self.config.min_noise_multiple * self.groups[index].liger_spread() <= size

    def _liger_effects(self, rng: random.Random) -> None:
        """Code changes between releases: ``liger`` only, one GPU or all of them."""
        config = self.config
        if len(self.plan.versions) < 2:
            return
        families: dict[tuple[str, str], list[int]] = {}
        for index, group in enumerate(self.groups):
            families.setdefault((group.kernel.name, group.pass_), []).append(index)
        events: list[tuple[tuple[str, str], int, Effect, Kind]] = []
        for key in families:
            for step in self.steps:
                u = rng.random()
                if u < config.regression_rate:
                    events.append((key, step, "regression", self._kind(rng, "regression")))
                elif u < config.regression_rate + config.improvement_rate:
                    events.append((key, step, "improvement", self._kind(rng, "improvement")))
        if config.guarantee_effects:
            wanted: list[tuple[Effect, Kind, float]] = [
                ("regression", "small3", config.regression_rate * config.small_shift_share),
                ("regression", "large", config.regression_rate),
                ("regression", "workload", config.regression_rate * config.single_workload_share),
                ("improvement", "large", config.improvement_rate),
            ]
            for effect, kind, rate in wanted:
                if rate == 0 or any(e[2] == effect and e[3] == kind for e in events):
                    continue
                used = {(e[0], e[1]) for e in events}
                free = [
                    (key, step) for key in families for step in self.steps
                    if (key, step) not in used and any(
                        (self.groups[i].gpu.gpu.slug, step) not in self.drifted
                        and (kind != "small3" or self._quiet(i, config.min_change))
                        for i in families[key]
                    )
                ]  # fmt: skip
                if free:
                    events.append((*rng.choice(free), effect, kind))
        for number, (key, step, effect, kind) in enumerate(events, 1):
            self._liger_event(rng, number, families[key], step, effect, kind)

    def _liger_event(
        self, rng: random.Random, number: int, family: list[int], step: int,
        effect: Effect, kind: Kind,
    ) -> None:  # fmt: skip
        config = self.config
        indices = [i for i in family if (self.groups[i].gpu.gpu.slug, step) not in self.drifted]
        size = 0.0
        if kind in ("small3", "small45"):
            size = config.min_change
            if kind == "small45":
                size = max(round(rng.uniform(0.04, 0.05), 4), config.min_change)
            quiet = [i for i in indices if self._quiet(i, size)]
            kind, indices = (kind, quiet) if quiet else ("large", indices)
        if not indices:
            return
        if rng.random() >= config.all_gpus_share:
            indices = [rng.choice(indices)]
        workload = None
        if kind == "workload":
            slugs = list(dict.fromkeys(s.workload.slug for s in self.groups[indices[0]].series))
            workload = rng.choice(slugs)
            size = rng.uniform(*config.single_workload_changes)
        elif kind == "large":
            low = max(0.05, config.min_change)
            size = loguniform(rng, low, max(low, config.max_change))
        scope = f"workload {workload}" if workload else "every workload of the sweep"
        label = {"small3": "small shift", "small45": "small shift"}.get(kind, "change")
        note = f"Liger {label} #{number} ({len(indices)} GPU(s)), {scope}"
        for index in indices:
            local = size
            if kind == "large":  # each GPU its own size, never under 5% nor the noise floor
                local = max(size * rng.uniform(0.85, 1.15), config.min_change, 0.05)
                local = max(local, config.min_noise_multiple * self.groups[index].liger_spread())
            change = round(local if effect == "regression" else -min(local, 0.9), 4)
            self.groups[index].changes.append(Change((step, 0), 1 + change, "liger", workload))
            self._step(index, "liger", workload, (step, 0), effect, change, note)

    def _rerun_effects(self, rng: random.Random) -> None:
        """A code change between a release's session and a same-label re-benchmark, in
        ``rerun_change_share`` of the re-benchmarks; the others change nothing."""
        config = self.config
        reruns = [
            (index, point) for index, group in enumerate(self.groups)
            for point in sorted(group.sessions)
            if point[1] == 1 and (index, point) not in self.plan.aa
        ]  # fmt: skip
        changed = [rng.random() < config.rerun_change_share for _ in reruns]
        if config.guarantee_effects and len(reruns) >= 2:
            if config.rerun_change_share > 0 and not any(changed):
                changed[rng.randrange(len(reruns))] = True
            if config.rerun_change_share < 1 and all(changed):
                changed[rng.randrange(len(reruns))] = False
        for number, ((index, point), change_it) in enumerate(zip(reruns, changed, strict=True), 1):
            if not change_it:
                continue
            group = self.groups[index]
            effect: Effect = "regression" if rng.random() < 0.5 else "improvement"
            low = max(0.05, config.min_change)
            size = loguniform(rng, low, max(low, config.max_change))
            size = max(size, config.min_noise_multiple * group.liger_spread())
            change = round(size if effect == "regression" else -min(size, 0.9), 4)
            group.changes.append(Change(point, 1 + change, "liger", None))
            note = f"same-label re-benchmark #{number}: a code change under one label"
            self._step(index, "liger", None, point, effect, change, note)

    def _conflicts(self, rng: random.Random) -> None:
        """Another implementation's runs under the provider name ``liger``, minutes after
        a session's own rounds, in sessions no other effect touches."""
        config = self.config
        last: dict[tuple[int, Point], Round] = {}
        for r in self.rounds:
            last[(r.group, (r.version, r.rerun))] = r
        candidates = [key for key in last if key not in self.touched]
        picked = [key for key in candidates if rng.random() < config.conflict_rate]
        if config.guarantee_effects and config.conflict_rate > 0 and not picked and candidates:
            picked.append(rng.choice(candidates))
        for number, (index, point) in enumerate(picked, 1):
            factor = loguniform(rng, *config.conflict_factors)
            change = round((factor if rng.random() < 0.5 else 1 / factor) - 1, 4)
            previous = last[(index, point)]
            at = previous.at + timedelta(minutes=rng.randint(3, 9), seconds=rng.randint(0, 59))
            self.rounds.append(
                Round(index, point[0], point[1], previous.replicate + 1, at, 1 + change)
            )
            note = f"conflict #{number}: another implementation's runs named liger"
            self._record(index, "liger", None, point, point, "conflict", change, note)

    def _outliers(self, rng: random.Random) -> None:
        """Single runs off by +15..80% (or -10..30%), in the rounds of the sweep itself."""
        config = self.config
        rounds = [i for i, r in enumerate(self.rounds) if r.backend is None]
        sizes = [len(self.groups[self.rounds[i].group].series) for i in rounds]
        count = round(sum(sizes) * config.outlier_rate)
        for _ in range(count):
            pick = rng.randrange(len(rounds))
            index, position = rounds[pick], rng.randrange(sizes[pick])
            size = rng.uniform(0.15, 0.8) if rng.random() < 0.8 else -rng.uniform(0.1, 0.3)
            change = round(size, 4)
            if (index, position) in self.plan.outliers:
                continue
            self.plan.outliers[(index, position)] = 1 + change
            r = self.rounds[index]
            series = self.groups[r.group].series[position]
            note = f"one run off (replicate {r.replicate}, {r.at.isoformat()})"
            point = (r.version, r.rerun)
            self._record(
                r.group, series.provider, series.workload.slug, point, point, "outlier",
                change, note,
            )  # fmt: skip

    def _histories(self, rng: random.Random) -> None:
        """Long histories, planned by :func:`kiana.generate.histories.plan_histories`."""
        plan = self.plan

        def add_round(index: int, point: Point, at: datetime) -> None:
            self.rounds.append(Round(index, point[0], point[1], 0, at))

        def set_versions(versions: tuple[str, ...]) -> None:
            plan.versions = versions

        plan_histories(
            self.config, rng, plan.versions, self.groups, add_round, set_versions,
            self._record, plan.histories, plan.session_factors,
        )  # fmt: skip

    def _step(
        self, index: int, provider: str, workload: str | None, to: Point, effect: Effect,
        change: float, note: str,
    ) -> None:  # fmt: skip
        start = self.groups[index].previous(to)
        self.touched.update({(index, start), (index, to)})
        self.stepped.add((index, to))
        self._record(index, provider, workload, start, to, effect, change, note)

    def _record(
        self, index: int, provider: str, workload: str | None, start: Point, to: Point,
        effect: Effect, change: float, note: str,
    ) -> None:  # fmt: skip
        group = self.groups[index]
        self.plan.truth.append(
            {
                "kernel": group.kernel.name,
                "pass": group.pass_,
                "provider": provider,
                "gpu": group.gpu.gpu.label,
                "workload": workload,
                "metric": "latency",
                "from_version": self.plan.versions[start[0]],
                "to_version": self.plan.versions[to[0]],
                "from_session": group.session_id(start),
                "to_session": group.session_id(to),
                "effect": effect,
                "change": change,
                "note": note,
            }
        )
