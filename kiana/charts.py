"""Kiana's charts for notebooks: the same Altair charts as the HTML report.

Each takes the polars frames the API returns and gives an Altair chart::

    runs = kiana.load.runs(con)
    result = kiana.stats.judge(runs)
    row = result.findings.row(0, named=True)
    kiana.charts.finding(runs, result.steps, row)      # series + sweep side by side
    kiana.charts.series(runs, partition_id=..., step=("0.5.0", "0.6.0"))
    kiana.charts.sweep(result.steps, row)
    kiana.charts.speedup(runs)                          # Liger over its baselines
    kiana.charts.overview(result.findings)              # kernel x GPU heat map
"""

from __future__ import annotations

from kiana.report.charts import finding, overview, series, speedup, sweep, to_spec

__all__ = ["finding", "overview", "series", "speedup", "sweep", "to_spec"]
