"""Change points in long series: a slow creep that no single step shows.

Ten releases that each add 1% never pass a 3% step threshold, yet the kernel got 10%
slower.  kiana looks for shifts in the *level* of a series of pooled log medians with
E-divisive means (Matteson & James 2014, "A nonparametric approach for multiple
change point analysis of multivariate data", JASA 109), the detector of MongoDB's
signal-processing service and Apache Otava (Daly et al. 2020, "The use of change
point detection to identify software performance regressions in a continuous
integration system", ICPE).

For a segment ``x[0:L]`` and a split ``tau`` into ``X = x[:tau]`` (m values) and
``Y = x[tau:]`` (k values), with alpha = 1:

    E(X, Y) = 2/(m k) sum|x_i - y_j| - 1/C(m,2) sum_{i<j}|x_i - x_j|
                                     - 1/C(k,2) sum_{i<j}|y_i - y_j|
    Q(tau)  = m k / (m + k) * E(X, Y)

The candidate split maximises Q (as in Otava, the right segment runs to the end of
the current segment).  Instead of Matteson & James's permutation test, the candidate
is accepted by a two-sample test between the two sides (p <=
``changepoint_max_pvalue``, default 0.001) -- deterministic and cheap.  Otava uses
Welch's t-test; kiana uses Yuen's trimmed-means test (Yuen 1974, "The two-sample
trimmed t for unequal population variances", Biometrika 61; Wilcox, "Introduction to
Robust Estimation and Hypothesis Testing", 5.3): Welch's test on the 20%-trimmed means
with 20%-winsorised variances.  One wild session (a one-run outlier) inflates a
side's variance enough to hide a real level shift from Welch's test; trimmed and
winsorised, it cannot.  A rank test (Mann-Whitney U, as asv uses) is as robust but
cannot reach p = 0.001 on the short segments Liger's histories have (two sides of 3
values give at least p = 0.1).  Each side's winsorised variance is floored by its
median per-session noise (the p20-p80 model), so a run of identical values does not
make any wiggle significant.  It must also be
practical: the medians of the two sides differ by at least ``threshold``.  Accepted
splits are searched again on both sides (binary segmentation), with segments of at
least ``changepoint_min_size`` versions, so a one-off outlier (one version) cannot
form a segment, and it barely moves a median.

Speed: segments of the same length are processed as one numpy batch (pairwise
distances, 2-D prefix sums, all splits at once), round by round, so thousands of
series take a few numpy calls per round.  :func:`best_split_reference` is the slow,
obviously correct version the tests compare against; :func:`yuen_p` is compared with
``scipy.stats.ttest_ind(trim=0.2, equal_var=False)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

from kiana.stats.options import JudgeOptions, series_window
from kiana.vocabulary import SERIES_KEYS, SERIES_LABELS

#: Cells (segments x L) of one batch of the search: its arrays are G x L each
#: (:func:`prefix_rows`, the split test), ~10 of them, so ~32 MB of float64.
_BATCH_CELLS = 400_000


def q_statistics(x: np.ndarray, min_size: int) -> np.ndarray:
    """Q(tau) for every segment (row of ``x``, shape G x L) and every split
    ``tau = min_size .. L - min_size``; shape G x (L - 2 min_size + 1)."""
    diag, last, _ = prefix_rows(x)
    length = x.shape[1]
    tau = np.arange(min_size, length - min_size + 1)
    m = tau.astype(np.float64)
    k = (length - tau).astype(np.float64)
    full = diag[:, length - 1][:, None]
    left = diag[:, tau - 1]  # sum over the m x m block, each pair twice
    between = last[:, tau - 1] - left
    right = full - left - 2.0 * between
    e = 2.0 * between / (m * k) - left / (m * (m - 1.0)) - right / (k * (k - 1.0))
    return np.asarray(m * k / (m + k) * e)


def prefix_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`q_statistics` reads of the 2-D prefix sums ``c[:, a, b]`` (the sum of
    ``|x_i - x_j|`` over ``i <= a``, ``j <= b``) of every segment (row of ``x``, G x L):
    ``(diag, last, rows)``, ``diag[:, a] = c[:, a, a]``, ``last[:, a] = c[:, a, L - 1]``
    and ``rows = c[:, L - 1, :]`` before its sum along the row.

    Built one ``a`` at a time, a running row per segment (``|x_a - x|`` added to it, then
    summed along it): the additions of the whole block, in the same order, so the same
    bits, in 5 G x L arrays instead of a G x L x L block (8 L^2 bytes a segment: 4.7 GiB
    for one series of 25,000 sessions, issue 41's one-workload clone).
    """
    count, length = x.shape
    diag, last = np.empty((count, length)), np.empty((count, length))
    run = np.zeros((count, length))
    d = np.empty((count, length))
    summed = np.empty((count, length))
    for a in range(length):
        np.subtract(x[:, a : a + 1], x, out=d)
        np.abs(d, out=d)
        if a == 0:
            run[:] = d
        else:
            np.add(run, d, out=run)
        np.cumsum(run, axis=1, out=summed)
        diag[:, a] = summed[:, a]
        last[:, a] = summed[:, length - 1]
    return diag, last, run


def best_split_reference(x: list[float], min_size: int) -> tuple[int, float]:
    """The best split of one segment by the definition, with plain loops."""
    best_tau, best_q = -1, float("-inf")
    n = len(x)
    for tau in range(min_size, n - min_size + 1):
        xs, ys = x[:tau], x[tau:]
        m, k = len(xs), len(ys)
        between = sum(abs(a - b) for a in xs for b in ys)
        within_x = sum(abs(xs[i] - xs[j]) for i in range(m) for j in range(i + 1, m))
        within_y = sum(abs(ys[i] - ys[j]) for i in range(k) for j in range(i + 1, k))
        e = 2 * between / (m * k) - within_x / (m * (m - 1) / 2) - within_y / (k * (k - 1) / 2)
        q = m * k / (m + k) * e
        if q > best_q + 1e-12:
            best_tau, best_q = tau, q
    return best_tau, best_q


#: Share of each side trimmed (and winsorised) at each end by Yuen's test.
TRIM = 0.2


def _side_stats(
    x: np.ndarray, mask: np.ndarray, trim: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, over the values where ``mask``: the trimmed mean, the winsorised
    variance (``ddof=1``) and the number of values left after trimming (``h``)."""
    n = mask.sum(axis=1)
    ordered = np.sort(np.where(mask, x, np.nan), axis=1)  # NaN last
    g = np.floor(trim * n).astype(np.int64)
    rows = np.arange(x.shape[0])
    low = ordered[rows, g]
    high = ordered[rows, np.maximum(n - g - 1, 0)]
    idx = np.arange(x.shape[1])[None, :]
    kept = (idx >= g[:, None]) & (idx < (n - g)[:, None])
    h = n - 2 * g
    trimmed_mean = np.where(kept, ordered, 0.0).sum(axis=1) / np.maximum(h, 1)
    clipped = np.clip(ordered, low[:, None], high[:, None])
    valid = idx < n[:, None]
    w_mean = np.where(valid, clipped, 0.0).sum(axis=1) / np.maximum(n, 1)
    w_var = np.where(valid, (clipped - w_mean[:, None]) ** 2, 0.0).sum(axis=1) / np.maximum(
        n - 1, 1
    )
    return trimmed_mean, w_var, h


def yuen_p(x: np.ndarray, floor: np.ndarray, tau: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """Two-sided p-values of Yuen's trimmed-means test (Welch's test on trimmed means
    with winsorised variances) between ``x[:, :tau]`` and ``x[:, tau:]`` per row, each
    side's winsorised variance floored by ``floor**2``."""
    from scipy.special import stdtr

    left = np.arange(x.shape[1])[None, :] < tau[:, None]
    n_l = left.sum(axis=1).astype(np.float64)
    n_r = x.shape[1] - n_l
    mean_l, var_l, h_l = _side_stats(x, left, trim)
    mean_r, var_r, h_r = _side_stats(x, ~left, trim)
    var_l = np.maximum(var_l, floor**2)
    var_r = np.maximum(var_r, floor**2)
    h_l = np.maximum(h_l, 2).astype(np.float64)
    h_r = np.maximum(h_r, 2).astype(np.float64)
    d_l = (n_l - 1) * var_l / (h_l * (h_l - 1))
    d_r = (n_r - 1) * var_r / (h_r * (h_r - 1))
    se2 = d_l + d_r
    diff = mean_r - mean_l
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se2 > 0, np.abs(diff) / np.sqrt(se2), np.where(diff != 0, np.inf, 0.0))
        df = se2**2 / (d_l**2 / (h_l - 1) + d_r**2 / (h_r - 1))
    df = np.where(np.isfinite(df) & (df > 0), df, np.maximum(h_l + h_r - 2, 1))
    p = 2.0 * stdtr(df, -t)
    return np.asarray(np.where(np.isfinite(t), p, 0.0))


def row_medians(a: np.ndarray) -> np.ndarray:
    """``np.nanmedian(a, axis=1)`` of a 2-D array, value for value (the middle value,
    or the mean of the two middle values, of each row's non-NaN values; NaN for a row
    without any), without its masked-array detour and warnings."""
    ordered = np.sort(a, axis=1)  # NaN sorts last
    n = np.count_nonzero(~np.isnan(a), axis=1)
    rows = np.arange(a.shape[0])
    high = ordered[rows, np.minimum(n // 2, a.shape[1] - 1)]
    low = ordered[rows, np.maximum(n // 2 - 1, 0)]
    with np.errstate(invalid="ignore"):
        even = (low + high) / 2.0
    return np.asarray(np.where(n == 0, np.nan, np.where(n % 2 == 1, high, even)))


def _median(values: list[float]) -> float:
    """``float(np.median(values))`` for a short non-empty list without NaN."""
    ordered = sorted(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[half]
    return (ordered[half - 1] + ordered[half]) / 2.0


def detect(
    values: list[np.ndarray], noise: list[np.ndarray], options: JudgeOptions
) -> list[list[tuple[int, float]]]:
    """Change points of each series: (index of the first point after the shift, p)."""
    min_size = options.changepoint_min_size
    found: list[list[tuple[int, float]]] = [[] for _ in values]
    active = [
        (s, 0, len(v)) for s, v in enumerate(values) if len(v) >= options.changepoint_min_points
    ]
    while active:
        by_length: dict[int, list[tuple[int, int, int]]] = {}
        for seg in active:
            if seg[2] - seg[1] >= 2 * min_size:
                by_length.setdefault(seg[2] - seg[1], []).append(seg)
        active = []
        for batch, x, nz in segment_batches(by_length, values, noise):
            tau, p, ok = split_test(x, nz, q_statistics(x, min_size), options)
            for (s, a, b), t, pv, good in zip(
                batch, tau.tolist(), p.tolist(), ok.tolist(), strict=True
            ):
                if good:
                    found[s].append((a + t, pv))
                    active.extend([(s, a, a + t), (s, a + t, b)])
    for cps in found:
        cps.sort()
    return found


def changepoints(points: pl.DataFrame, options: JudgeOptions) -> pl.DataFrame:
    """Change points of every long series, one row each (empty frame when none)."""
    usable = points.filter(pl.col("log_median").is_not_null())
    # points are sorted by series and version; a window count keeps that order.
    window = series_window(usable)
    usable = usable.filter(pl.len().over(window) >= options.changepoint_min_points)
    empty = _empty()
    if usable.height == 0:
        return empty_changepoints()
    ids = usable.select(pl.struct(window).rle_id())
    cuts = np.flatnonzero(np.diff(ids.to_series().to_numpy())) + 1
    starts = np.concatenate([[0], cuts]).tolist()
    all_values = usable["log_median"].to_numpy().astype(np.float64)
    all_noise = usable["sigma"].fill_null(np.nan).to_numpy().astype(np.float64)
    values = np.split(all_values, cuts)
    noise = np.split(all_noise, cuts)
    found = detect(values, noise, options)
    all_versions = usable["version"]
    labels = usable.select(*SERIES_KEYS, *SERIES_LABELS, "is_subject")
    rows: list[dict[str, object]] = []
    for s, cps in enumerate(found):
        if not cps:
            continue
        vals = values[s]
        listed: list[float] = vals.tolist()
        first = starts[s]
        bounds = [0, *(i for i, _ in cps), len(vals)]
        versions = all_versions.slice(first, len(vals)).to_list()
        head = labels.row(first, named=True)
        for j, (i, pv) in enumerate(cps):
            before = _median(listed[bounds[j] : i])
            after = _median(listed[i : bounds[j + 2]])
            rows.append(
                {
                    **head,
                    "from_version": versions[i - 1],
                    "to_version": versions[i],
                    "segment_start": versions[bounds[j]],
                    "segment_end": versions[bounds[j + 2] - 1],
                    "before_level": float(np.exp(before)),
                    "after_level": float(np.exp(after)),
                    "change": float(np.expm1(after - before)),
                    "p_value": pv,
                    "n_points": len(vals),
                }
            )
    if not rows:
        return empty_changepoints()
    frame = pl.DataFrame(rows, schema=empty.schema, strict=False)
    return _verdicts(frame.select(empty.columns))


def _verdicts(frame: pl.DataFrame) -> pl.DataFrame:
    subject = pl.col("is_subject")
    base = (
        frame.filter(~subject)
        .select(
            "partition_id",
            "metric",
            "to_version",
            (pl.col("change") > 0).alias("_up"),
            pl.col("provider").alias("_control"),
        )
        .unique(["partition_id", "metric", "to_version", "_up"], keep="first", maintain_order=True)
    )
    joined = frame.with_columns((pl.col("change") > 0).alias("_up")).join(
        base, on=["partition_id", "metric", "to_version", "_up"], how="left", maintain_order="left"
    )
    direction = (
        pl.when(pl.col("change") > 0).then(pl.lit("regression")).otherwise(pl.lit("improvement"))
    )
    verdict = (
        pl.when(~subject | pl.col("_control").is_not_null())
        .then(pl.lit("drift"))
        .otherwise(direction)
    )
    evidence = (
        pl.lit("level shift ")
        + (pl.col("change") * 100).round(1).cast(pl.String)
        + pl.lit("% between segments ")
        + pl.col("segment_start")
        + pl.lit("..")
        + pl.col("from_version")
        + pl.lit(" and ")
        + pl.col("to_version")
        + pl.lit("..")
        + pl.col("segment_end")
        + pl.when(~subject)
        .then(pl.lit("; baseline provider: drift indicator"))
        .when(pl.col("_control").is_not_null())
        .then(pl.lit("; control ") + pl.col("_control") + pl.lit(" shifted the same way"))
        .otherwise(pl.lit(""))
    )
    return joined.with_columns(
        verdict.alias("verdict"),
        pl.when(subject).then(pl.col("_control")).otherwise(None).alias("control_provider"),
        evidence.alias("evidence"),
    ).drop("_up", "_control")


def _empty() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "partition_id": pl.String,
            "provider": pl.String,
            "metric": pl.String,
            "kernel": pl.String,
            "pass": pl.String,
            "gpu": pl.String,
            "workload": pl.String,
            "is_subject": pl.Boolean,
            "from_version": pl.String,
            "to_version": pl.String,
            "segment_start": pl.String,
            "segment_end": pl.String,
            "before_level": pl.Float64,
            "after_level": pl.Float64,
            "change": pl.Float64,
            "p_value": pl.Float64,
            "n_points": pl.Int64,
        }
    )


def empty_changepoints() -> pl.DataFrame:
    """The change-point frame with no rows, verdict columns included."""
    return _empty().with_columns(
        pl.lit(None, pl.String).alias("verdict"),
        pl.lit(None, pl.String).alias("control_provider"),
        pl.lit(None, pl.String).alias("evidence"),
    )


def split_test(
    x: np.ndarray, noise: np.ndarray, q: np.ndarray, options: JudgeOptions
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The split (the arg max of ``q`` past the minimum size), its Yuen p-value and
    whether it is accepted (p at most ``changepoint_max_pvalue`` and a level change of at
    least the threshold), for each segment (a row of ``x`` and its ``noise``)."""
    min_size = options.changepoint_min_size
    fl = np.nan_to_num(row_medians(noise), nan=0.0)
    tau = np.argmax(q, axis=1) + min_size
    p = yuen_p(x, fl, tau)
    cols = np.arange(x.shape[1])[None, :] < tau[:, None]
    med_l = row_medians(np.where(cols, x, np.nan))
    med_r = row_medians(np.where(cols, np.nan, x))
    size = np.abs(np.expm1(med_r - med_l))
    ok = (p <= options.changepoint_max_pvalue) & (size >= options.threshold)
    return tau, p, ok


def segment_batches(
    by_length: dict[int, list[tuple[int, int, int]]],
    values: list[np.ndarray],
    noise: list[np.ndarray],
) -> Iterator[tuple[list[tuple[int, int, int]], np.ndarray, np.ndarray]]:
    """Segments ``(series, start, end)`` of each length in batches of at most
    ``_BATCH_CELLS`` cells of the search: each batch, its values and its noise, stacked."""
    for length, segs in by_length.items():
        step = max(1, _BATCH_CELLS // length)
        for lo in range(0, len(segs), step):
            batch = segs[lo : lo + step]
            x = np.stack([values[s][a:b] for s, a, b in batch])
            yield batch, x, np.stack([noise[s][a:b] for s, a, b in batch])
