"""A family of noise models, one :class:`NoiseModel` per grid point, for testing judges.

**For testing only.**  These models are not fitted to anything and must never enter a
calibration kiana runs on real data: ``kiana.stats`` does not import this module, and
no calibration reads its corpora.  A judge tuned to one model of noise fails on the
next; ``bench/grid.py`` judges kiana (and :mod:`kiana.generate.oracle`, a judge that
knows the model) on each point of the family.

Every model is the ``realistic`` model (:mod:`kiana.generate.realistic`: per-sitting
provider offsets, calm or shifted sittings, Student-t per-workload noise, spreads and
single samples by latency) with some of its choices moved:

* ``drift_rate`` / ``drift_changes``: environment shifts per GPU and release step
  (every provider of the GPU moves alike), 0 to a third of the steps, 3-20%;
* ``shifted_share``: the share of shifted sittings (0.05-0.5);
* ``scope``: ``sitting`` (as in the realistic model: a kernel's sitting draws its
  state and common part, each pass its providers' offsets) or ``session`` (one GPU
  session, every kernel and pass of it, shares its state, common part and each
  provider's offset);
* ``tail_df``: the per-workload noise's degrees of freedom (``math.inf``: normal);
* ``sweep_size`` (3-12 workloads), ``baselines`` (``None``: each kernel's own; 1:
  one per kernel; 2: only the kernels with two);
* ``singles``: ``real`` (one do_bench sample by latency, as Liger's CSVs show),
  ``none``, or ``slow`` (every run of 1 ms or more is one sample).

:func:`draw` returns the corpus (documents, truth, sessions, as
:func:`kiana.generate.generate`'s, so ``bench/detection.py``'s scoring applies) and a
runs frame with what only the generator knows: each run's session id and whether it
is one sample, and each series' true spread (the oracle's input).  The planning is
:mod:`kiana.generate.plan`'s, with the same seed the same groups, sessions and effects.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kiana.documents import RunSpec
from kiana.generate.config import CorpusConfig
from kiana.generate.corpus import Corpus
from kiana.generate.model import SPREAD_SIGMAS, Round, f32_ms
from kiana.generate.realistic import RealisticNoise, Sitting, single_share, student_t
from kiana.generate.sittings import AA_CSV, MAIN_CSV

if TYPE_CHECKING:
    import polars as pl

Scope = Literal["sitting", "session"]
Singles = Literal["real", "none", "slow"]
#: Kernels with two baselines in the catalog (``baselines=2``).
TWO_BASELINES: tuple[str, ...] = ("rms_norm", "dyt")
#: A run of this latency or more is one sample with ``singles="slow"``.
SLOW_NS = 1e6


@dataclass(frozen=True)
class NoiseModel:
    """One point of the family (module docstring); the defaults are the realistic model."""

    name: str = "base"
    drift_rate: float = 0.04
    drift_changes: tuple[float, float] = (0.05, 0.20)
    shifted_share: float = 0.25
    scope: Scope = "sitting"
    tail_df: float = 3.0
    sweep_size: int = 5
    baselines: Literal[1, 2] | None = None
    singles: Singles = "real"
    noise: RealisticNoise = field(default_factory=RealisticNoise)

    @property
    def realistic(self) -> RealisticNoise:
        """The realistic model's parameters with this model's shifted share and tails."""
        return RealisticNoise(
            **{**self.noise.__dict__, "shifted_share": self.shifted_share, "tail_df": self.tail_df}
        )

    def config(self, seed: int, **changes: object) -> CorpusConfig:
        """The corpus this model is drawn on: more effects than the default corpus, so
        two seeds give enough of each; no long histories nor conflicts."""
        kernels = TWO_BASELINES if self.baselines == 2 else CorpusConfig.kernels
        providers = ("huggingface", "torch") if self.baselines == 1 else None
        settings: dict[str, object] = {
            "seed": seed, "noise": "realistic", "kernels": kernels, "providers": providers,
            "sweep_size": self.sweep_size, "drift_rate": self.drift_rate,
            "drift_changes": self.drift_changes, "regression_rate": 0.20,
            "improvement_rate": 0.06, "small_shift_share": 0.2, "conflict_rate": 0.0,
            "rerun_rate": 0.05, "histories": 0,
        }  # fmt: skip
        if self.baselines == 2:  # two kernels only: more GPUs for as many groups
            settings["gpus"] = (*CorpusConfig.gpus, "nvidia-h100-nvl", "nvidia-a10g")
        settings.update(changes)
        return CorpusConfig(**settings)  # type: ignore[arg-type]

    def workload_noise(self, rng: random.Random, shifted: bool) -> float:
        """One workload's noise beyond the offset (log): t of ``tail_df``, or normal."""
        noise = self.noise
        scale = noise.shifted_workload if shifted else noise.calm_workload
        if math.isinf(self.tail_df):
            return scale * rng.gauss(0, 1)
        return scale * student_t(rng, self.tail_df)

    def is_single(self, rng: random.Random, median_ns: float) -> bool:
        """Whether a run of ``median_ns`` is one do_bench sample."""
        if self.singles == "none":
            return False
        if self.singles == "slow" and median_ns >= SLOW_NS:
            return True
        return rng.random() < single_share(median_ns)


class FamilyCorpus(Corpus):
    """A corpus of one :class:`NoiseModel`: the plan of :class:`Corpus`, the runs drawn
    by the model.  :attr:`drawn` holds, once :meth:`specs` ran, one row per run of what
    the generator knows (see :func:`draw`)."""

    def __init__(self, model: NoiseModel, seed: int, **changes: object) -> None:
        super().__init__(model.config(seed, **changes))
        self.model = model
        self._rows: list[tuple[object, ...]] = []
        self._sittings: dict[tuple[str, ...], Sitting] = {}
        self._offsets: dict[tuple[str, ...], float] = {}
        self._own: dict[tuple[object, ...], float] = {}

    def specs(self) -> Iterator[RunSpec]:
        """Every run, round by round (one seeded generator per round, as
        :meth:`Corpus.specs`); what a sitting or session shares from generators seeded
        by it."""
        plan, seed = self._plan, self.config.seed
        self._rows = []
        for index, r in enumerate(plan.rounds):
            rng = random.Random(f"kiana-family:{self.model.name}:{seed}:{index}")
            group = plan.groups[r.group]
            point = (r.version, r.rerun)
            csv = AA_CSV if (r.group, point) in plan.aa else MAIN_CSV
            session = group.session_id(point)
            for position, series in enumerate(group.series):
                median = series.base_ns * group.factor(series, point)
                median *= math.exp(self._noise(r, csv, series.provider, series.workload.slug))
                median *= math.exp(rng.gauss(0, self.model.noise.spread_share * series.spread
                                             / SPREAD_SIGMAS))  # fmt: skip
                median *= plan.outliers.get((index, position), 1.0)
                spread = series.spread * math.exp(rng.gauss(0, self.model.noise.run_spread_sigma))
                single = self.model.is_single(rng, median)
                if single:
                    median *= math.exp(rng.gauss(0, spread / SPREAD_SIGMAS))
                    quantiles = (f32_ms(median),) * 3
                else:
                    lower = rng.uniform(0.4, 0.55)
                    quantiles = (
                        f32_ms(median * (1 - lower * spread)),
                        f32_ms(median),
                        f32_ms(median * (1 + (1 - lower) * spread)),
                    )
                self._rows.append(
                    (group.kernel.name, group.pass_, group.gpu.gpu.label, series.provider,
                     series.workload.slug, session, r.replicate, quantiles[1] * 1e6, single,
                     series.spread)
                )  # fmt: skip
                yield RunSpec(
                    kernel=group.kernel.name, kernel_title=group.kernel.title, pass_=group.pass_,
                    provider=series.provider, gpu=group.gpu.gpu, workload=series.workload.slug,
                    observed_at=r.at, version=self.versions[r.version],
                    median=quantiles[1] * 1e6, p20=quantiles[0] * 1e6, p80=quantiles[2] * 1e6,
                    workload_params=series.workload.params,
                    native_metrics=dict(zip(("ms_20", "ms_50", "ms_80"), quantiles, strict=True)),
                    labels={"liger_csv": csv},
                )  # fmt: skip

    def _key(self, r: Round, csv: str) -> tuple[str, ...]:
        """What shares a state and offsets: a kernel's sitting (that day's run of its
        benchmark script) or, with scope ``session``, the GPU's whole session."""
        group = self._plan.groups[r.group]
        day = group.sessions[(r.version, r.rerun)].date().isoformat()
        label = self.versions[r.version]
        if self.model.scope == "session":
            return (group.gpu.gpu.slug, label, str(r.rerun), day if r.rerun else "", csv)
        return (group.kernel.name, group.gpu.gpu.slug, label, day, csv)

    def _noise(self, r: Round, csv: str, provider: str, workload: str) -> float:
        """Offset (shared part included) plus the workload's own noise, in log."""
        key = self._key(r, csv)
        noise, tag = self.model.realistic, f"{self.model.name}:{self.config.seed}"
        if key not in self._sittings:
            self._sittings[key] = noise.sitting(random.Random(f"family-sitting:{tag}:{key}"))
        sitting = self._sittings[key]
        # A kernel's sitting: each pass its own offsets (as the realistic model); a
        # GPU session: one offset per provider for every kernel and pass of it.
        own = (*key, provider) if self.model.scope == "session" else (*key, str(r.group), provider)
        if own not in self._offsets:
            self._offsets[own] = noise.offset(random.Random(f"family-offset:{tag}:{own}"), sitting)
        cell = (r.group, r.version, r.rerun, provider, workload)
        if cell not in self._own:
            rng = random.Random(f"family-workload:{tag}:{cell}")
            self._own[cell] = self.model.workload_noise(rng, sitting.shifted)
        return self._offsets[own] + self._own[cell]

    def sittings(self) -> dict[tuple[str, ...], Sitting]:
        """The states drawn so far (after :meth:`specs`), by sitting or session key."""
        return dict(self._sittings)

    @property
    def drawn(self) -> pl.DataFrame:
        """One row per latency run of :meth:`specs` (the last iteration): kernel, pass,
        gpu, provider, workload, session (the generator's id), replicate, median (ns),
        single (one sample), spread (the series' true relative p20-p80 spread)."""
        import polars as pl

        schema = {
            "kernel": pl.String, "pass": pl.String, "gpu": pl.String, "provider": pl.String,
            "workload": pl.String, "session": pl.String, "replicate": pl.Int64,
            "median": pl.Float64, "single": pl.Boolean, "spread": pl.Float64,
        }  # fmt: skip
        return pl.DataFrame(self._rows, schema=schema, orient="row")


def draw(model: NoiseModel, seed: int, **changes: object) -> FamilyCorpus:
    """The corpus of ``model`` and ``seed`` (``changes``: fields of its
    :class:`CorpusConfig`); iterate :meth:`FamilyCorpus.documents` once, then
    :attr:`FamilyCorpus.drawn` holds the runs with what only the generator knows."""
    return FamilyCorpus(model, seed, **changes)


__all__ = ["FamilyCorpus", "NoiseModel", "draw"]
