"""What a change needs where nothing beside it confirms it: the floors and supports of
the rules of :mod:`kiana.stats.rules` that judge a subject's own move against its
control's, or one workload against its sweep, and the bases of the findings that miss
them (``inconclusive`` each, with no reruns promised: :data:`kiana.stats.sweeps.FLOORED`).

A flagged estimate is separated from its noise; these ask more of a finding whose
evidence is one number that nothing else measured: the subject's own change beside a
control that did not move with it (:func:`raw_floor`, :func:`raw_apart`), one workload
off a sweep that did not move (:func:`lone_floor`), an adjusted change whose subject
moved the other way on its own (:data:`OPPOSED`).  Each was measured on the grid of
noise models (``bench/detection.py --grid``, ``bench/README.md``) and on Liger's CI
history before it was kept.
"""

from __future__ import annotations

import math

import polars as pl

from kiana.stats.options import JudgeOptions

#: The basis of a ``raw`` move under :func:`raw_floor`.
SMALL_RAW = "raw_small"

#: The basis of an adjusted change whose subject moved the other way on its own: +4%
#: on its own beside a control at +12% reads -7% adjusted.  Either the machine moved 12%
#: and the kernel improved, or the control moved by itself (its sitting, its code) and
#: the kernel regressed; one control cannot tell, so the finding is ``inconclusive``.
#: On the grid of noise models (``bench/detection.py --grid``, seeds 0 1) this shape
#: held 3 ``adjusted`` findings, none a change the right way: one unchanged group, one
#: drift group, and a +3% regression called an improvement of -4.5% (``shifted 0.05``:
#: huggingface +7.9% alone in a shifted sitting); the realistic corpora's drift groups
#: called a change 9 -> 7, nothing else moved, nor on Liger's CI history.
OPPOSED = "opposed"

#: The basis of a ``lone`` workload under :func:`lone_floor`.
SMALL_LONE = "lone_small"


def raw_floor(raw: pl.Expr, has_adj: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """The ``raw`` rule's size floor: with a control, the subject's own change must reach
    ``resolution * threshold`` (9%), what the judge promises to resolve.

    The ``raw`` rule comes after ``adjusted``: with a control it decides only where the
    control-adjusted change is not flagged, on the subject's own change, whose standard
    error leaves out the control's noise.  Where the control stayed flat, that change is
    the machine's move plus the subject's own sitting offset, with nothing beside it to
    confirm that the offset was small (the grid's models draw it at 3% in a shifted
    sitting, the realistic model's share of a quarter).  On the grid of noise models
    (``bench/detection.py --grid``, 17 models, seeds 0 1) the 36 false findings of this
    rule with a control sat at a median |change| of 8.3% and a median sitting noise of
    1.5%, the 88 regressions of 10% or more it found at 20.7% and 4.7%; with the floor the
    grid's false findings fall 73 -> 55 and those regressions found 876 -> 875; on the
    realistic corpora of ``bench/detection.py`` (seeds 0-59) false findings 161 -> 102 of
    17,459, regressions of 10% or more found 610 -> 608 of 678, of 3% 51 -> 42 of 94
    (under the floor by construction); on Liger's CI history 6 regressions and
    improvements of 2.5-9.0% on the H200 become ``raw_small``.  Without a control there is nothing else to
    judge by, and no floor.  As for the ``lone`` rule on its own step
    (:func:`kiana.stats.aggregate._noisy_control`), without the control's support a
    finding's size is part of its evidence."""
    return ~has_adj | (raw.abs() >= math.log1p(options.resolution * options.threshold))


#: How many of its own standard errors the control must stay from the subject's move
#: for the ``raw`` rule (:func:`raw_apart`).
RAW_APART_Z = 2.0


def raw_apart(raw: pl.Expr, ctl: pl.Expr, ctl_se: pl.Expr, has_adj: pl.Expr) -> pl.Expr:
    """The ``raw`` rule beside a control: the control stayed at least
    :data:`RAW_APART_Z` of its own standard errors short of the subject's move (``(raw -
    ctl)``, in the subject's direction).

    The ``raw`` rule reads the subject's own change as the kernel's because its control
    did not move with it (:func:`kiana.stats.controls.control_moved`: the same way, at
    least half as far, and beyond half the separation of its own noise).  A control that
    moved a third to a half of the way, within two of its standard errors of the whole
    move, neither confirms that the machine moved nor rules it out: the machine may have
    moved both (then the subject's change is the machine's), or the subject alone.  Such
    a finding is ``inconclusive`` (basis ``raw_small``) and leans the subject's way.  On
    the grid of noise models (``bench/detection.py --grid``, seeds 0 1) these were 3 of the
    4 drift groups the ``raw`` rule called a change and 2 of its 18 false findings, and 2
    of its 80 regressions of 10% or more found, each of them with a drift of the machine
    beside it (their raw change 1.4-1.5 times the true one)."""
    apart = pl.when(raw > 0).then(raw - ctl).otherwise(ctl - raw) >= RAW_APART_Z * ctl_se
    return (~has_adj | apart | ctl_se.is_null() | ctl.is_null()).fill_null(True)


def lone_floor(lone: pl.Expr, options: JudgeOptions) -> pl.Expr:
    """The ``lone`` rule's size floor: one workload off the rest of a sweep that did not
    move must be off by ``resolution * threshold`` (9%), what the judge promises to
    resolve.

    A lone workload is one draw judged at the deep tail of the per-workload noise (the
    Bonferroni-corrected :func:`kiana.stats.pooling.lone_z`), the part of the noise model
    its fit determines least: a GPU whose workload tail is fitted t10 while the truth is
    t2 passes single workloads 8-48% off their sweep (``bench/README.md``, the grid's
    ``t2 tails``), and no other workload of the sweep confirms the move.  So, as for the
    ``raw`` rule beside a control (:func:`raw_floor`) and the lone rule on its own step
    (:func:`kiana.stats.aggregate._noisy_control`), its size is part of its evidence.  On
    the grid of noise models (``bench/detection.py --grid``, 17 models, seeds 0 1) 9 of
    the 24 false ``lone`` findings were under 9% (3.4-8.9%), while the 122 regressions of
    10% or more it found were all 19% or more.  Under the floor the finding is
    ``inconclusive`` with basis ``lone_small``."""
    return (lone.abs() >= math.log1p(options.resolution * options.threshold)).fill_null(False)
