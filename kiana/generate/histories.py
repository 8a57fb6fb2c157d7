"""Long histories: many consecutive sessions with outlier sessions and level shifts.

Each history is an extra kernel, pass and GPU group (``liger`` and one control) on a
GPU the corpus does not otherwise use (else a kernel it does not), benchmarked after the
newest release by a development tree that labels each sitting (``main-001``,
``main-002``, ...: not PEP 440, so kiana orders them by time and no release comparison
sees them; one label per session, so a change point's version names its session), one
round per session, 1-3 days apart.  Its shape is the one of issue 16: an outlier session (every
``liger`` workload off by the history's outlier size, either sign, back at the next
session), a level shift of 8-16% 2-5 sessions later that stays, a second shift of
10-25% at least 8 sessions on, and a second outlier session between or after them.
Noise: each history its own run-to-run sigma of the medians (``history_noise``, in
turn) and, every other history, runs reporting p20 = median = p80.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kiana.generate.catalog import GPUS, KERNELS, release_dates, resolve_gpu
from kiana.generate.config import CorpusConfig, baselines_of, passes_of
from kiana.generate.model import Change, Group, Point, plan_series, workloads


@dataclass(frozen=True)
class History:
    """How the runs of a long history are drawn: the relative sigma of a median's
    run-to-run noise, and whether runs report p20 = median = p80."""

    noise: float
    zero_spread: bool


def plan_histories(
    config: CorpusConfig,
    rng: random.Random,
    versions: tuple[str, ...],
    groups: list[Group],
    add_round: Callable[[int, Point, datetime], None],
    set_versions: Callable[[tuple[str, ...]], None],
    record: Callable[..., Any],
    histories: dict[int, History],
    session_factors: dict[tuple[int, Point], float],
) -> None:
    """Add ``config.histories`` long histories to ``groups`` (their rounds through
    ``add_round``, the labels with the histories' through ``set_versions``, their
    truth through ``record``)."""
    if config.histories == 0:
        return
    used = {resolve_gpu(g).gpu.slug for g in config.gpus}
    free = [k for k in GPUS if k.startswith("nvidia") and GPUS[k].gpu.slug not in used]
    picks = [
        (kernel, gpu, pass_) for gpu in free for kernel in config.kernels
        for pass_ in passes_of(KERNELS[kernel], config) or KERNELS[kernel].passes
    ]  # fmt: skip
    rng.shuffle(picks)
    picks += [
        (kernel, config.gpus[0], pass_) for kernel in KERNELS if kernel not in config.kernels
        for pass_ in KERNELS[kernel].passes
    ]  # fmt: skip
    picks = picks[: config.histories]
    lengths = [rng.randint(*config.history_sessions) for _ in picks]
    first = len(versions)
    versions = (*versions, *(f"main-{i:03d}" for i in range(1, max(lengths, default=0) + 1)))
    set_versions(versions)
    start = release_dates(versions[:first])[-1] + timedelta(days=10)
    offsets = [rng.randrange(len(config.history_noise)), rng.randrange(2)]
    offsets.append(rng.randrange(len(config.history_outliers)))
    for number, ((name, gpu_key, pass_), n) in enumerate(zip(picks, lengths, strict=True)):
        kernel = KERNELS[name]
        gpu = resolve_gpu(gpu_key)
        providers = ("liger", *baselines_of(kernel, config)[:1])
        sweep = workloads(kernel, config.sweep_size, 1)
        index = len(groups)
        groups.append(Group(kernel, pass_, gpu, plan_series(rng, kernel, pass_, gpu, providers, sweep)))  # fmt: skip
        at = start + timedelta(hours=rng.randint(8, 15), minutes=rng.randint(0, 59))
        for i in range(n):
            point = (first + i, 0)
            groups[index].sessions[point] = at
            add_round(index, point, at)
            at += timedelta(days=rng.randint(1, 3), hours=rng.randint(-3, 3))
            at += timedelta(minutes=rng.randint(0, 59), seconds=rng.randint(0, 59))
        noise = config.history_noise[(number + offsets[0]) % len(config.history_noise)]
        zero = (number + offsets[1]) % 2 == 0
        histories[index] = History(noise, zero)
        ladder = config.history_outliers
        size = ladder[(number + offsets[2]) % len(ladder)]
        second = ladder[(number + offsets[2] + 1) % len(ladder)]
        outlier = rng.randint(5, max(5, n // 5))
        shift = outlier + rng.randint(2, 5)
        shift2 = rng.randint(shift + 8, n - 6)
        if rng.random() < 0.5:
            outlier2 = rng.randint(shift + 3, shift2 - 3)
        else:
            outlier2 = rng.randint(shift2 + 3, n - 3)
        what = f"noise {noise:.1%}, {'zero spread' if zero else 'spread reported'}"
        for at_, magnitude in ((outlier, size), (outlier2, second)):
            change = round(magnitude if rng.random() < 0.5 else -magnitude, 4)
            point = (first + at_, 0)
            session_factors[(index, point)] = 1 + change
            note = f"history #{number + 1} ({what}): one session off, back at the next"
            record(index, "liger", None, point, point, "outlier", change, note)
        for at_, low, high in ((shift, 0.08, 0.16), (shift2, 0.10, 0.25)):
            size_ = rng.uniform(low, high)
            change = round(size_ if rng.random() < 0.5 else -size_ / (1 + size_), 4)
            point = (first + at_, 0)
            groups[index].changes.append(Change(point, 1 + change, "liger", None))
            note = f"history #{number + 1} ({what}): level shift that stays"
            before = (first + at_ - 1, 0)
            record(index, "liger", None, before, point, "changepoint", change, note)
