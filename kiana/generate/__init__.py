"""The deterministic corpus generator, and its ground truth.

``generate(CorpusConfig(seed=...))`` plans a corpus of Liger-Kernel benchmark runs
(kernelindex.dev/v1alpha1 documents of the seeds' shape) with known injected effects;
``Corpus.documents()`` streams the documents, ``Corpus.truth`` lists the effects and
``write_corpus`` puts both on disk.  Same config, same bytes, on any machine: all
randomness comes from ``random.Random`` seeded by the config (the plan) and by
``(seed, session index)`` (the noise of each benchmark session), nothing depends on
the clock, on hash order or on the platform's float formatting.

Model of latency
----------------
A *session* is one kernel, timed pass and GPU benchmarked at one Liger version: every
provider (``liger`` and its baselines ``huggingface``, ``torch``, ``torch_compile``)
on every workload of the sweep, all stamped with the session's time.  The true
latency of one provider on one workload is

    base = passes * (launch overhead * launches + work / GPU throughput * provider cost)

where work is bytes moved (memory-bound kernels: norms, activations, losses over the
vocabulary) or flops (fused linear losses), so latency grows with the swept parameter;
baselines cost 1.1x-2.8x Liger's and launch more kernels; each series gets a fixed
personality factor (lognormal, sigma 8%) and each workload a small one (3%).  Across
versions the true latency is ``base`` times every injected step up to that version:
Liger regressions and improvements (``liger`` only; one workload or the whole sweep;
one GPU or all of them) and environment shifts (``drift``: every provider on one GPU,
all kernels, by the same factor).

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
* outliers multiply one run (not a step) by +15..80% (or -10..30%);
* numbers are quantized like CUDA events: 32 ns ticks, float32 milliseconds
  (``sourceNative.metrics``), integer nanoseconds in ``timing`` and ``measurements``.

Injected effect sizes are log-uniform in [``min_change``, ``max_change``] and never
smaller than ``min_noise_multiple`` times the typical spread of any Liger series they
touch, so a benchmark can ask for "regressions of at least 3% and 2x the spread".
Memory rows (``memory=True``) are deterministic (p20 = median = p80, MB) and carry no
effects.

Ground truth (``Corpus.truth``, ``truth.csv``)
---------------------------------------------
One row per injected effect and series group, columns :data:`TRUTH_COLUMNS`:
``regression``/``improvement`` rows name the Liger provider and, when only one
workload moved, the workload (else null); ``drift`` rows are written for every
(kernel, pass, provider) on the shifted GPU, workload null; ``outlier`` rows name the
single run's provider and workload, with ``from_version = to_version`` = the version
of the run that is off.  ``change`` is relative (+0.10 = 10% slower) and is exactly
the factor applied (``1 + change``).  Version steps not named are unchanged.
"""

from __future__ import annotations

from kiana.generate.catalog import GPUS, KERNELS, RELEASES, GpuSpec, KernelSpec, liger_versions
from kiana.generate.model import (
    DEFAULT_GPUS,
    DEFAULT_KERNELS,
    DEFAULT_VERSIONS,
    TRUTH_COLUMNS,
    Corpus,
    CorpusConfig,
    Effect,
    generate,
    typical_spread,
)
from kiana.generate.output import (
    LAYOUTS,
    TRUTH_FILE,
    DocumentFactory,
    Layout,
    Written,
    read_truth,
    write_corpus,
    write_truth,
)

__all__ = [
    "DEFAULT_GPUS",
    "DEFAULT_KERNELS",
    "DEFAULT_VERSIONS",
    "GPUS",
    "KERNELS",
    "LAYOUTS",
    "RELEASES",
    "TRUTH_COLUMNS",
    "TRUTH_FILE",
    "Corpus",
    "CorpusConfig",
    "DocumentFactory",
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
