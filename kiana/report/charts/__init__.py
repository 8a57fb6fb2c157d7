"""The report's charts as Vega-Lite JSON (plain dicts), one module per chart:

* :mod:`~kiana.report.charts.series`: one partition across versions, every provider;
* :mod:`~kiana.report.charts.sweep`: one finding's change at each workload;
* :mod:`~kiana.report.charts.speedup`: Liger over its same-run baselines;
* :mod:`~kiana.report.charts.overview`: a release's changes, kernel × GPU.

Each takes the polars frames kiana's API returns and aggregates them to a few hundred
rows at most (:mod:`kiana.report.frames`).  No Altair here: :mod:`kiana.charts` turns
the same specs into Altair charts for notebooks (``alt.LayerChart.from_dict``).
"""

from __future__ import annotations

from kiana.report.charts.colors import PROVIDER_COLORS, provider_color
from kiana.report.charts.overview import overview_spec
from kiana.report.charts.series import series_spec
from kiana.report.charts.spec import VERDICT_COLORS
from kiana.report.charts.speedup import speedup_spec
from kiana.report.charts.sweep import sweep_spec

__all__ = [
    "PROVIDER_COLORS",
    "VERDICT_COLORS",
    "overview_spec",
    "provider_color",
    "series_spec",
    "speedup_spec",
    "sweep_spec",
]
