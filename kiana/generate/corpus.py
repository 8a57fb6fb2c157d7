"""A planned corpus: its runs streamed as specs or documents, its truth and sessions."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kiana.documents import Gpu, RunSpec, build_document
from kiana.generate.catalog import resolve_gpu
from kiana.generate.config import CorpusConfig
from kiana.generate.model import SESSION_FORMAT, SPREAD_SIGMAS, Point, Round, Series, f32_ms
from kiana.generate.plan import plan
from kiana.generate.realistic import RealisticNoise, Sitting, single_share
from kiana.generate.sittings import AA_CSV, MAIN_CSV
from kiana.generate.truth import truth_frame

if TYPE_CHECKING:
    import polars as pl

#: Columns of :attr:`Corpus.sessions`, in order.
SESSION_COLUMNS: tuple[str, ...] = (
    "kernel", "pass", "gpu", "liger_version", "session", "position", "rerun", "rounds",
    "conflict", "aa",
)  # fmt: skip

#: Memory rows are stamped this long after their round's latency runs.
MEMORY_OFFSET = timedelta(minutes=20)


class Corpus:
    """A planned corpus: :meth:`documents` streams it, :attr:`truth` says what was
    injected, :attr:`sessions` lists its latency sessions.  Build it with
    :func:`generate`."""

    def __init__(self, config: CorpusConfig) -> None:
        self.config = config
        self._plan = plan(config)
        #: Every label, long histories' dev-tree labels (main-001, ...) included, in order.
        self.versions = self._plan.versions
        self._truth_frame: pl.DataFrame | None = None

    @property
    def truth(self) -> pl.DataFrame:
        """One row per injected effect; see :data:`kiana.generate.TRUTH_COLUMNS`."""
        if self._truth_frame is None:
            order = {v: i for i, v in enumerate(self.versions)}
            rows = sorted(
                self._plan.truth,
                key=lambda r: (
                    order[r["to_version"]], r["to_session"], r["effect"], r["gpu"], r["kernel"],
                    r["pass"], r["provider"], r["workload"] or "", r["note"],
                ),
            )  # fmt: skip
            self._truth_frame = truth_frame(rows)
        return self._truth_frame

    @property
    def sessions(self) -> pl.DataFrame:
        """One row per latency session (kernel, pass, GPU, label, sitting): its id, its
        ``position`` in the group's (version, time) order, ``rerun`` (1: a same-label
        re-benchmark or an A/A sitting), its number of rounds, whether a conflict was
        planted in it and whether it repeats the session before it (``aa``: an A/A
        pair's second sitting, realistic corpora only)."""
        import polars as pl

        rounds: dict[tuple[int, int, int], int] = {}
        conflicts: set[tuple[int, int, int]] = set()
        for r in self._plan.rounds:
            key = (r.group, r.version, r.rerun)
            rounds[key] = rounds.get(key, 0) + 1
            if r.backend is not None:
                conflicts.add(key)
        rows = []
        for index, group in enumerate(self._plan.groups):
            for position, point in enumerate(sorted(group.sessions)):
                key = (index, *point)
                rows.append(
                    (
                        group.kernel.name, group.pass_, group.gpu.gpu.label,
                        self.versions[point[0]], group.sessions[point].strftime(SESSION_FORMAT),
                        position, point[1], rounds[key], key in conflicts,
                        (index, point) in self._plan.aa,
                    )
                )  # fmt: skip
        types: dict[str, Any] = {"position": pl.Int64, "rerun": pl.Int64, "rounds": pl.Int64}
        types["conflict"] = types["aa"] = pl.Boolean
        schema = {c: types.get(c, pl.String) for c in SESSION_COLUMNS}
        return pl.DataFrame(rows, schema=schema, orient="row")

    @property
    def run_count(self) -> int:
        """Number of documents :meth:`documents` yields."""
        runs = memory = 0
        for r in self._plan.rounds:
            series = self._plan.groups[r.group].series
            if r.backend is None:
                runs += len(series)
                memory += len(series)
            else:
                runs += sum(1 for s in series if s.provider == "liger")
        return runs + (memory if self.config.memory else 0)

    @property
    def gpus(self) -> list[Gpu]:
        return [resolve_gpu(key).gpu for key in self.config.gpus]

    def specs(self) -> Iterator[RunSpec]:
        """Every run as a :class:`kiana.documents.RunSpec`, round by round; the noise of
        each round comes from ``random.Random`` seeded by (seed, round index), what a
        realistic sitting shares from one seeded by the sitting."""
        config = self.config
        realistic = _RealisticDraws(self) if config.noise == "realistic" else None
        for index, r in enumerate(self._plan.rounds):
            rng = random.Random(f"kiana-generate:{config.seed}:{index}")
            group = self._plan.groups[r.group]
            kernel, pass_, gpu = group.kernel, group.pass_, group.gpu.gpu
            version = self.versions[r.version]
            labels: dict[str, str] = {}
            if realistic is not None and r.group not in self._plan.histories:
                labels = {"liger_csv": realistic.csv(r)}
                numbers = realistic.round(rng, index, r)
            else:
                numbers = self._spread_round(rng, index, r)
            for series, (ms_20, ms_50, ms_80) in numbers:
                yield RunSpec(
                    kernel=kernel.name,
                    kernel_title=kernel.title,
                    pass_=pass_,
                    provider=series.provider,
                    gpu=gpu,
                    workload=series.workload.slug,
                    observed_at=r.at,
                    version=version,
                    median=ms_50 * 1e6,
                    p20=ms_20 * 1e6,
                    p80=ms_80 * 1e6,
                    workload_params=series.workload.params,
                    native_metrics={"ms_20": ms_20, "ms_50": ms_50, "ms_80": ms_80},
                    labels=labels,
                )
            if config.memory and r.backend is None:
                yield from self._memory(r.group, version, r.at + MEMORY_OFFSET, labels)

    def _spread_round(
        self, rng: random.Random, index: int, r: Round
    ) -> Iterator[tuple[Series, tuple[float, float, float]]]:
        """The ``spread`` model: one round's runs as (series, (ms_20, ms_50, ms_80))."""
        config = self.config
        gauss, uniform, rand = rng.gauss, rng.uniform, rng.random
        group = self._plan.groups[r.group]
        point = (r.version, r.rerun)
        machine = math.exp(gauss(0, config.machine_noise)) if config.machine_noise else 1.0
        history = self._plan.histories.get(r.group)
        off = self._plan.session_factors.get((r.group, point), 1.0)
        sigma_scale = config.session_noise / SPREAD_SIGMAS
        for position, series in enumerate(group.series):
            if r.backend is not None and series.provider != "liger":
                continue
            median = series.base_ns * group.factor(series, point) * machine
            median *= r.backend or 1.0
            sigma = history.noise if history else sigma_scale * series.spread
            median *= math.exp(gauss(0, sigma))
            median *= self._plan.outliers.get((index, position), 1.0)
            if series.provider == "liger":
                median *= off
            spread = series.spread * math.exp(gauss(0, 0.25))
            lower = uniform(0.4, 0.55)
            zero = rand() < config.zero_spread_share and median >= config.slow_ns
            if history.zero_spread if history else zero:
                yield series, (f32_ms(median),) * 3
            else:
                yield series, _quantiles(median, spread, lower)

    def _memory(
        self, index: int, version: str, at: datetime, labels: dict[str, str]
    ) -> Iterator[RunSpec]:
        group = self._plan.groups[index]
        for series in group.series:
            mb = series.memory_mb
            yield RunSpec(
                kernel=group.kernel.name,
                kernel_title=group.kernel.title,
                pass_=group.pass_,
                provider=series.provider,
                gpu=group.gpu.gpu,
                workload=series.workload.slug,
                observed_at=at,
                version=version,
                median=mb,
                p20=mb,
                p80=mb,
                metric="memory",
                workload_params=series.workload.params,
                labels=labels,
            )

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every run as a kernelindex document (:func:`kiana.documents.build_document`),
        streamed: a fresh iterator each call, the same documents each time."""
        for spec in self.specs():
            yield build_document(spec)


def _quantiles(median: float, spread: float, lower: float) -> tuple[float, float, float]:
    """p20, median and p80 as the harness reports them: ``lower`` of the spread below."""
    return (
        f32_ms(median * (1 - lower * spread)),
        f32_ms(median),
        f32_ms(median * (1 + (1 - lower) * spread)),
    )


class _RealisticDraws:
    """The ``realistic`` model's runs (:mod:`kiana.generate.realistic`): a sitting's
    state and each provider's offset are drawn once per sitting from generators seeded
    by it, so every round and workload of the sitting shares them."""

    def __init__(self, corpus: Corpus) -> None:
        self.plan = corpus._plan
        self.seed = corpus.config.seed
        self.noise = RealisticNoise()
        self.versions = corpus.versions
        self._sittings: dict[tuple[str, ...], Sitting] = {}
        self._offsets: dict[tuple[int, Point, str], tuple[float, dict[str, float]]] = {}

    def csv(self, r: Round) -> str:
        return AA_CSV if (r.group, (r.version, r.rerun)) in self.plan.aa else MAIN_CSV

    def sitting(self, r: Round) -> Sitting:
        """Shared by every pass of one kernel and GPU timed on the same day (one run of
        the benchmark script) under one label and CSV."""
        group = self.plan.groups[r.group]
        day = group.sessions[(r.version, r.rerun)].date().isoformat()
        key = (group.kernel.name, group.gpu.gpu.slug, self.versions[r.version], day, self.csv(r))
        if key not in self._sittings:
            rng = random.Random("kiana-generate-sitting:" + ":".join((str(self.seed), *key)))
            self._sittings[key] = self.noise.sitting(rng)
        return self._sittings[key]

    def offset(self, r: Round, provider: str, workload: str) -> float:
        """The provider's offset in the sitting plus the workload's own part of it."""
        key = (r.group, (r.version, r.rerun), provider)
        if key not in self._offsets:
            name = f"kiana-generate-offset:{self.seed}:{r.group}:{r.version}:{r.rerun}:{provider}"
            rng, sitting = random.Random(name), self.sitting(r)
            offset = self.noise.offset(rng, sitting)
            own = {
                s.workload.slug: self.noise.workload(rng, sitting)
                for s in self.plan.groups[r.group].series if s.provider == provider
            }  # fmt: skip
            self._offsets[key] = (offset, own)
        offset, own = self._offsets[key]
        return offset + own[workload]

    def round(
        self, rng: random.Random, index: int, r: Round
    ) -> Iterator[tuple[Series, tuple[float, float, float]]]:
        """One round's runs as (series, (ms_20, ms_50, ms_80))."""
        group = self.plan.groups[r.group]
        point = (r.version, r.rerun)
        for position, series in enumerate(group.series):
            if r.backend is not None and series.provider != "liger":
                continue
            median = series.base_ns * group.factor(series, point) * (r.backend or 1.0)
            noise = self.offset(r, series.provider, series.workload.slug)
            noise += self.noise.run(rng, series.spread)
            median *= math.exp(noise) * self.plan.outliers.get((index, position), 1.0)
            spread = series.spread * math.exp(rng.gauss(0, self.noise.run_spread_sigma))
            lower = rng.uniform(0.4, 0.55)
            if rng.random() < single_share(median):
                # One timing: a draw of the timing distribution, reported without a spread.
                one = median * math.exp(rng.gauss(0, spread / SPREAD_SIGMAS))
                yield series, (f32_ms(one),) * 3
            else:
                yield series, _quantiles(median, spread, lower)


def generate(config: CorpusConfig | None = None) -> Corpus:
    """Plan the corpus of ``config`` (default: :class:`CorpusConfig()`); cheap: the
    documents are made when :meth:`Corpus.documents` is iterated."""
    return Corpus(config or CorpusConfig())
