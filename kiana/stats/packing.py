"""Packing keys of known sizes into consecutive batches of a bounded size: the shards'
GPUs (:func:`kiana.shards.runs.plan`), the stored steps' series
(:func:`kiana.shards.stored.series_batches`) and the findings' kernels
(:func:`kiana.stats.sweeps.kernel_chunks`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

K = TypeVar("K")


def pack(sized: Iterable[tuple[K, int]], limit: int) -> list[tuple[list[K], int]]:
    """The keys of ``sized`` (key, size), in their order, cut into batches of at most
    ``limit`` together (a larger key alone): each batch's keys and total size.

    >>> pack([("a", 2), ("b", 1), ("c", 1), ("d", 5), ("e", 0)], 2)
    [(['a'], 2), (['b', 'c'], 2), (['d'], 5), (['e'], 0)]
    >>> pack([], 2)
    []
    """
    batches: list[tuple[list[K], int]] = []
    keys: list[K] = []
    size = 0
    for key, n in sized:
        if keys and size + n > limit:
            batches.append((keys, size))
            keys, size = [], 0
        keys.append(key)
        size += n
    if keys:
        batches.append((keys, size))
    return batches
