"""Options and vocabulary of :func:`kiana.stats.judge`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from kiana.errors import UsageError
from kiana.stats.sessions import SESSION_GAP
from kiana.vocabulary import SERIES_KEYS

if TYPE_CHECKING:
    import polars as pl


def series_window(points: pl.DataFrame) -> list[str]:
    """The columns that tell the series of ``points`` apart: the integer
    ``series_id`` of :func:`kiana.stats.series.points` when present, else the keys."""
    return ["series_id"] if "series_id" in points.columns else list(SERIES_KEYS)


@dataclass(frozen=True)
class JudgeOptions:
    """How :func:`kiana.stats.judge` decides.

    threshold
        Practical minimum: a step is flagged only when ``|change| >= threshold``
        (relative, 0.03 = 3%).
    separation
        Statistical minimum: ``|ln(to/from)| / noise >= separation`` (a z-like score,
        see :mod:`kiana.stats.noise`).
    baseline
        None: consecutive sessions (also under one version label).  A version: every
        other session against that version's last session.
    gross_change
        With no noise information at all, a change this large (default 25%) is still
        called, because it exceeds the run-to-run variation of GPU kernel timings.
    resolution
        A step that is not separated is ``inconclusive`` rather than ``unchanged`` when
        the smallest change it could have separated (``separation * noise``) exceeds
        ``resolution * threshold``: we could not have seen a regression that matters.
    memory_noise_floor
        With the calibration off only: the relative noise assumed for a memory point
        without any spread (peak allocations are deterministic up to allocator rounding).
    calibrate
        Measure the session-to-session noise on the runs judged
        (:mod:`kiana.stats.calibration`) and add it to what the spreads and replicates
        measured; off: trust the spreads as they are (the old model, for tests and for
        comparison).
    changepoint_min_points, changepoint_min_size, changepoint_max_pvalue
        Change points are searched in series of at least ``min_points`` sessions,
        with segments of at least ``min_size`` sessions, accepted at ``max_pvalue``.
    session_gap
        Runs of one sitting further apart than this start a new session
        (:mod:`kiana.stats.sessions`).
    bridge_separation
        The separation a *bridge* needs (two sessions compared across one too noisy
        to place a change in, :mod:`kiana.stats.bridges`): a second look, so a higher
        bar (default twice ``separation``; ``inf``: no bridges).
    """

    threshold: float = 0.03
    separation: float = 3.0
    baseline: str | None = None
    gross_change: float = 0.25
    resolution: float = 3.0
    memory_noise_floor: float = 0.005
    calibrate: bool = True
    changepoints: bool = True
    changepoint_min_points: int = 6
    changepoint_min_size: int = 3
    changepoint_max_pvalue: float = 0.001
    session_gap: timedelta = SESSION_GAP
    bridge_separation: float = 6.0

    def __post_init__(self) -> None:
        checks = [
            ("threshold", self.threshold, 0.0 <= self.threshold <= 1.0),
            ("separation", self.separation, self.separation > 0.0),
            ("gross_change", self.gross_change, self.gross_change > 0.0),
            ("resolution", self.resolution, self.resolution > 0.0),
            ("bridge_separation", self.bridge_separation, self.bridge_separation > 0.0),
            ("memory_noise_floor", self.memory_noise_floor, self.memory_noise_floor > 0.0),
            ("changepoint_min_size", self.changepoint_min_size, self.changepoint_min_size >= 1),
            (
                "changepoint_min_points",
                self.changepoint_min_points,
                self.changepoint_min_points >= 2 * self.changepoint_min_size,
            ),
            (
                "changepoint_max_pvalue",
                self.changepoint_max_pvalue,
                0.0 < self.changepoint_max_pvalue < 1.0,
            ),
        ]
        for name, value, ok in checks:
            if not ok or value != value:  # value != value: NaN
                raise UsageError(
                    f"invalid {name}: {value!r}",
                    hint="threshold is a fraction (0.03 = 3%); the other options are positive",
                )
