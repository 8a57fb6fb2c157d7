"""kiana told every sitting's state: how much a per-sitting state inference could give.

Run by hand (not part of the tests)::

    .venv/bin/python bench/detection.py --write DIR        # once: the corpora
    .venv/bin/python bench/known_states.py --read DIR [detection.py's options]

kiana infers how noisy a *pair* of sittings was from that pair's own samples
(:mod:`kiana.stats.states`): a posterior over the scale factor of each sitting group,
whose root mean square the decisions use.  Rounds 3, 7 and 10 (``bench/README.md``)
named the next lever: a state per *sitting*, inferred along the series, since the step
into a shifted sitting and the step out of it both see it.  No such inference can know
more than the states themselves, so this runs ``bench/detection.py`` on the realistic
corpora with kiana told them (the generator's draws, replayed as
:func:`ceiling.states` does): each latency sitting group's posterior is replaced by the
posterior of every group of its GPU and metric with the same number of shifted
sittings (0, 1 or 2) pooled, so each group gets its class's factor.  Everything else,
the prior, the link, the components and the rules, is kiana's own.  The long histories
(their own draws) keep kiana's posterior.

Thin wraps, no copy of the judge: :func:`replace_posterior` (the posterior where it
combines both kinds of samples, the one the decisions use, pooled by class here), and
:func:`kiana.stats.calfit.state_factors` noting the steps (for the groups' sessions).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ceiling
import detection
import numpy as np
import polars as pl

import kiana.stats as stats_package
import kiana.stats.calfit as calfit
from kiana.stats import states

SWEEP_SIZE = 5
NOTED: dict[str, Any] = {}


def classes(steps: pl.DataFrame, table: pl.DataFrame) -> dict[str, int]:
    """The number of shifted sittings of each latency sitting group of ``steps``."""
    pairs = steps.filter(pl.col("metric") == "latency").select(
        "_group", "kernel", "pass", "gpu", "from_session", "to_session"
    )
    for end in ("from", "to"):
        pairs = pairs.join(
            table.select("kernel", "pass", "gpu", pl.col("session").alias(f"{end}_session"),
                         pl.col("shifted").cast(pl.Int64).alias(f"{end}_shifted")),
            on=["kernel", "pass", "gpu", f"{end}_session"], how="inner",
        )  # fmt: skip
    known = pairs.group_by("_group").agg((pl.col("from_shifted") + pl.col("to_shifted")).first())
    return dict(zip(known["_group"].to_list(), known["from_shifted"].to_list(), strict=True))


#: A replacement of a slice's posterior: ``(groups, a, b, weights)`` -> the posterior
#: (rows: groups, columns: factors), or None for kiana's own.
Replacement = Callable[[list[str], np.ndarray, np.ndarray, np.ndarray], "np.ndarray | None"]


def replace_posterior(replacement: Replacement) -> None:
    """Wrap :mod:`kiana.stats.states` so that where the judge combines both kinds of
    samples of a slice's sitting groups (``posterior(a, b, weights)``, computed right
    after the likelihoods of those groups, which ``factor_loglik`` notes),
    ``replacement`` gives the posterior; everywhere else, and where it gives None,
    kiana's own (``bench/sitting_states.py`` uses it too)."""
    factor_loglik, posterior = states.factor_loglik, states.posterior
    noted: dict[str, pl.Series] = {}

    def factor_loglik_noting(samples: pl.DataFrame, groups: pl.Series, *args: Any) -> np.ndarray:
        noted["groups"] = groups
        return factor_loglik(samples, groups, *args)

    def posterior_replaced(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> np.ndarray:
        groups = noted.get("groups")
        if b.any() and groups is not None and groups.len() == a.shape[0]:
            post = replacement(groups.to_list(), a, b, weights)
            if post is not None:
                return post
        return posterior(a, b, weights)

    states.factor_loglik, states.posterior = factor_loglik_noting, posterior_replaced


def _wrap() -> None:
    judge_folder, state_factors = detection.judge_folder, calfit.state_factors
    posterior = states.posterior

    def judge_folder_told(folder: Path) -> Any:
        NOTED["table"] = ceiling.states(int(folder.name.split("-")[1]), SWEEP_SIZE)
        return judge_folder(folder)

    def state_factors_told(steps: pl.DataFrame, *args: Any, **kwargs: Any) -> Any:
        NOTED["classes"] = classes(states.group_key(steps) if "_group" not in steps.columns
                                   else steps, NOTED["table"])  # fmt: skip
        return state_factors(steps, *args, **kwargs)

    def told(groups: list[str], a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> np.ndarray:
        post = posterior(a, b, weights)
        classes_of = np.array([NOTED["classes"].get(g, -1) for g in groups])
        for value in (0, 1, 2):
            (rows,) = np.nonzero(classes_of == value)
            if rows.size:
                pooled = (a[rows] + b[rows]).sum(axis=0, keepdims=True)
                post[rows] = posterior(pooled, np.zeros_like(pooled), weights)[0]
        return post

    detection.judge_folder = judge_folder_told
    calfit.state_factors = stats_package.state_factors = state_factors_told  # type: ignore[attr-defined]
    replace_posterior(told)


if __name__ == "__main__":
    _wrap()
    sys.argv = ["detection.py", "--noise", "realistic", *sys.argv[1:]]
    detection.main()
