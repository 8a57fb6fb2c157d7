"""The deterministic corpus generator, and its ground truth.

``generate(CorpusConfig(seed=...))`` plans a corpus of Liger-Kernel benchmark runs
(kernelindex.dev/v1alpha1 documents of the seeds' shape, made by
:func:`kiana.documents.build_document`) with known injected effects;
``Corpus.documents()`` streams the documents, ``Corpus.truth`` lists the effects,
``Corpus.sessions`` the sessions, and ``write_corpus`` puts documents and truth on
disk.  Same config, same bytes, on any machine: all randomness comes from
``random.Random`` seeded by the config (the plan) and by ``(seed, round index)`` (the
noise of each round of runs), nothing depends on the clock, on hash order or on the
platform's float formatting.

Modules: :mod:`~kiana.generate.catalog` (kernels, GPUs, releases),
:mod:`~kiana.generate.config` (:class:`CorpusConfig`), :mod:`~kiana.generate.model`
(latency and noise), :mod:`~kiana.generate.plan` (sessions, effects, truth),
:mod:`~kiana.generate.realistic` and :mod:`~kiana.generate.sittings` (the realistic
model and what only it plans), :mod:`~kiana.generate.calibration` (noise measured alike
on real and generated runs),
:mod:`~kiana.generate.histories` (long histories),
:mod:`~kiana.generate.corpus` (runs and documents), :mod:`~kiana.generate.truth`
and :mod:`~kiana.generate.output` (files).

Sessions
--------
A *session* is one kernel, timed pass and GPU benchmarked at one Liger version label:
every provider (``liger`` and its baselines ``huggingface``, ``torch``,
``torch_compile``) on every workload of the sweep, in one or more *rounds* each
stamped with its own time.  A session's replicates (``replicate_rate``) are further
rounds minutes after the first (4-9 minutes apart, the whole session within ~45
minutes); different sessions of one kernel, pass and GPU are at least a day apart.
So the rule of :mod:`kiana.stats` (runs of one kernel, pass, GPU, metric and label,
sorted by time; a gap of more than an hour starts a new session) finds exactly the
planned sessions, and a session's id is its first run's ``observedAt`` as
``YYYY-MM-DDTHH:MM:SSZ``.  Each version is benchmarked once within days of its
release; with ``rerun_rate`` a kernel, pass and GPU is benchmarked again *under the
same label* 2+ days later (a development tree still reporting the last release),
with a code change in ``rerun_change_share`` of those re-benchmarks and none in the
others.  Sessions are ordered by (version, time).

Model of latency
----------------
The true latency of one provider on one workload is

    base = passes * (launch overhead * launches + work / GPU throughput * provider cost)

where work is bytes moved (memory-bound kernels: norms, activations, losses over the
vocabulary) or flops (fused linear losses), so latency grows with the swept parameter;
baselines cost 1.1x-2.8x Liger's and launch more kernels; each series gets a fixed
personality factor (lognormal, sigma 8%) and each workload a small one (3%).  In a
session the true latency is ``base`` times every effect injected up to that session.

Injected effects
----------------
* Liger code changes between releases (``liger`` only; one GPU or all of them):
  sweep-wide regressions and improvements, of which ``small_shift_share`` are small
  (exactly ``min_change``, 3%, or 4-5%, and only where that is at least
  ``min_noise_multiple`` times every Liger spread of the group), the rest log-uniform
  in [5%, ``max_change``] and at least ``min_noise_multiple`` times the spread; and
  one-workload regressions (``single_workload_share`` of the regressions: one workload
  of the sweep +20..40%, the others flat);
* code changes between a release's session and a same-label re-benchmark (sweep-wide,
  regression or improvement, >= 5%); the other re-benchmarks change nothing;
* environment shifts (``drift``: every provider on one GPU, all kernels, by the same
  factor, at a release step); Liger changes are never planted on a step and GPU that
  drifted;
* conflicts (``conflict_rate`` per session, in sessions no other effect touches):
  another implementation's runs under the provider name ``liger`` (every workload,
  2x-6x slower or faster than the Triton runs) minutes after the session's own
  rounds, as when a backend's CSV names its rows ``liger``;
* outliers: one run (not a step) off by +15..80% (or -10..30%);
* long histories (below): outlier *sessions* and level shifts that stay.

Long histories
--------------
With ``histories = N`` (default 0; the bundled corpus holds one of 30 sessions,
``bench/detection.py`` plans six per corpus), N extra kernel, pass and GPU groups are
benchmarked many times (``history_sessions``, 30..100 by default), each sitting under
its own development-tree label ``main-001``, ``main-002``, ... (not PEP 440: kiana
orders them by time; one label per session, so a change point's ``to_version`` names
its session).  A history runs on a GPU the corpus does not otherwise use (else with a
kernel it does not), with ``liger`` and one control provider, one round per session,
1-3 days apart.  Its shape is the one of issue 16: an outlier session (every ``liger``
workload off by the history's outlier size, ``history_outliers`` in turn, either sign;
back at the next session), a level shift of 8-16% 2-5 sessions later that stays, a
second shift of 10-25% at least 8 sessions on, and a second outlier session between or
after the shifts (never the last two sessions).  Each history has its own run-to-run
noise of the medians (``history_noise`` in turn: 0.2%, 0.5%, 1%, 2%) and, every other
history, runs that report p20 = median = p80 (zero spread).  Histories are planned
last, from a generator of their own, so a config with ``histories = 0`` gives the same
corpus as before they existed.

Model of noise
--------------
Each series has a typical relative p20-p80 spread ``s`` (``typical_spread``: ~2-3%
for kernels of a few microseconds, ~1% at 200 us, ~0.3% beyond 10 ms, times a
lognormal series factor, sigma 0.3).  Per run:

* the median is the true latency times a session factor shared by all providers of
  the session (``machine_noise``, sigma 0.2%: what same-session controls cancel) and
  a run factor with sigma ``session_noise * s / 1.683`` (p80 - p20 of a normal is
  1.683 sigma, so the spread predicts the run-to-run noise of the median);
* the run's own spread is ``s`` times a lognormal jitter (sigma 0.25), split
  asymmetrically around the median (40-55% below);
* runs of slow kernels (median >= ``slow_ns``, 50 ms) report p20 = median = p80 with
  probability ``zero_spread_share``, as do_bench does with few repetitions: the
  noise is still there, the document just does not show it;
* numbers are quantized like CUDA events: 32 ns ticks, float32 milliseconds
  (``sourceNative.metrics``), integer nanoseconds in ``timing`` and ``measurements``.

Realistic noise
---------------
``CorpusConfig(noise="realistic")`` (``kiana generate --noise realistic``) replaces the
model above by one calibrated on Liger's real CSVs (:mod:`~kiana.generate.realistic`;
the numbers and commands in ``docs/CALIBRATION.md``, measured by
:mod:`~kiana.generate.calibration`): per-sitting offsets of each provider (a quarter of
the sittings shifted by several percent, partly shared by every provider of the
sitting), heavy-tailed per-workload noise (Student t) shared by a sitting's rounds,
spreads and single samples (p20 = median = p80) by median latency as the real runs
show them.  It also plans (:mod:`~kiana.generate.sittings`) A/A pairs (a sitting
measured again minutes later in another CSV, label ``liger_csv``, nothing changed) and
baseline code changes (one baseline moves, Liger does not).  Every realistic run
carries a ``liger_csv`` label, so an A/A pair's two sittings stay two sessions.

Memory rows (``memory=True``) are deterministic (p20 = median = p80, MB) and carry no
effects.

Ground truth (``Corpus.truth``, ``truth.csv``)
---------------------------------------------
One row per injected effect and series group, columns :data:`TRUTH_COLUMNS`:

* ``kernel``, ``pass``, ``provider``, ``gpu`` (the GPU label, ``NVIDIA H100 PCIe``),
  ``metric`` (always ``latency``);
* ``workload``: the one workload that moved, or null for the whole sweep;
* ``from_version``, ``to_version``: the labels of the two sessions (equal for a
  same-label re-benchmark, a conflict and an outlier);
* ``from_session``, ``to_session``: the session ids (``YYYY-MM-DDTHH:MM:SSZ``, the
  earliest ``observedAt`` of any provider's and workload's run of that kernel, pass,
  GPU and label sitting); ``from_session`` is the session just before
  ``to_session`` in (version, time) order, and both are the same session for a
  ``conflict`` or an ``outlier``;
* ``effect``: ``regression`` | ``improvement`` (the ``liger`` provider; a same-label
  change has ``from_version = to_version``), ``drift`` (a row for every provider of
  every kernel and pass on the shifted GPU), ``conflict`` (provider ``liger``,
  workload null: the session holds another implementation's runs), ``outlier`` (the
  single run's provider and workload, in the session named; in a long history,
  provider ``liger`` and workload null: the whole session is off and the next is
  back, ``from_session = to_session`` = that session), ``changepoint`` (long
  histories only: provider ``liger``, workload null, a level shift that stays;
  ``from_session``/``to_session`` the sessions on each side of it; its step is not
  repeated as a ``regression``/``improvement`` row); realistic corpora only:
  ``baseline_change`` (a baseline provider, workload null: its own code changed at
  ``to_session``, Liger's did not: a Liger finding of that step is ``unchanged``) and
  ``aa`` (one row per provider, change 0: ``to_session`` repeats ``from_session``
  minutes later in another CSV, same label, nothing changed);
* ``change``: relative, +0.10 = 10% slower, exactly the factor applied (``1 +
  change``; for a conflict the other implementation's factor on the true latency);
* ``note``: what was planted, for people (a long history's rows name its noise level
  and whether its runs report zero spread).

Session pairs not named are unchanged; ``Corpus.sessions`` lists every session (same
-label re-benchmarks without a change included, ``rerun`` = 1).
"""

from __future__ import annotations

from kiana.generate.catalog import GPUS, KERNELS, RELEASES, GpuSpec, KernelSpec, liger_versions
from kiana.generate.config import (
    DEFAULT_GPUS,
    DEFAULT_KERNELS,
    DEFAULT_VERSIONS,
    SEED_BUNDLED,
    CorpusConfig,
)
from kiana.generate.corpus import SESSION_COLUMNS, Corpus, generate
from kiana.generate.model import typical_spread
from kiana.generate.output import LAYOUTS, Layout, Written, write_corpus
from kiana.generate.truth import (
    EFFECTS,
    TRUTH_COLUMNS,
    TRUTH_FILE,
    Effect,
    read_truth,
    write_truth,
)

__all__ = [
    "DEFAULT_GPUS",
    "DEFAULT_KERNELS",
    "DEFAULT_VERSIONS",
    "EFFECTS",
    "GPUS",
    "KERNELS",
    "LAYOUTS",
    "RELEASES",
    "SEED_BUNDLED",
    "SESSION_COLUMNS",
    "TRUTH_COLUMNS",
    "TRUTH_FILE",
    "Corpus",
    "CorpusConfig",
    "Effect",
    "GpuSpec",
    "KernelSpec",
    "Layout",
    "Written",
    "generate",
    "liger_versions",
    "read_truth",
    "typical_spread",
    "write_corpus",
    "write_truth",
]
