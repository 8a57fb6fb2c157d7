"""What a kernelindex.dev/v1alpha1 document is, and how kiana writes one.

A document holds three objects (see ``../shared/FORMAT.md``):

* ``run`` (``BenchmarkRun``): one measurement of one kernel, timed pass, provider,
  workload and GPU at one version of the code under test;
* ``protocol`` (``BenchmarkProtocol``): how it was timed, and its comparability family;
* ``environment`` (``ExecutionEnvironment``): the GPU.

:func:`build_document` writes documents of exactly the shape of the two real seeds;
the Liger importer and the corpus generator both use it, so everything kiana makes
loads through the same validation as what it receives.  A run's harness profile
(:class:`RunSpec.harness <RunSpec>`, :mod:`kiana.harness`; Liger's by default) names
its source, its version label and its role label, and the protocol's family and names
(Liger's documents are the seeds' byte for byte).

Digest recipe (kiana's own; the upstream recipe is not published): each digest is
``"sha256:" + sha256(canonical_json(fields))`` where ``canonical_json`` is
``json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` of

* protocol: the whole ``protocol`` object;
* environment: the whole ``environment`` object;
* workload: ``{"kernel", "workload", "params"}`` (the workload slug and its parameters);
* implementation: ``{"kernel", "provider", <version label>}`` (the code under test;
  Liger's version label is ``liger_version``).

The same inputs therefore always give the same ids, on any machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from kiana.harness import LIGER, Harness
from kiana.vocabulary import Role, gpu_label

API_VERSION = "kernelindex.dev/v1alpha1"
SOURCE = LIGER.name
FAMILY = "liger_kernel_bench"
HARNESS_NAME = "Liger-Kernel benchmark scripts"
HARNESS_REPOSITORY = "https://github.com/linkedin/Liger-Kernel"
NAME_LIMIT = 100

Metric = Literal["latency", "memory"]

#: What each timed pass times, in the words of the protocol notes.
PASS_DESCRIPTIONS: dict[str, str] = {
    "forward": "the forward pass of the module",
    "backward": "the backward pass of the module output given a random upstream gradient",
    "full": "the forward pass plus the backward pass",
    "no-grad-forward": "the forward pass of the module with gradients disabled",
}

_NOTES_TAIL = (
    ", via triton.testing.do_bench with quantiles 0.5/0.2/0.8 (median with p20/p80 "
    "spread). The upstream CSV records no CUDA, driver, or torch version; the {display} "
    "release rides each run's labels. Comparable only within one kernel, workload, "
    "timed pass, and GPU."
)


@dataclass(frozen=True)
class Producer:
    """What a harness writes into its protocol and names: Liger's are the seeds'; another
    harness's follow from its profile (family and names from its source)."""

    harness: Harness
    harness_name: str
    repository: str | None
    family: str
    prefix: str  #: of every metadata name: ``liger-bench-do-bench-forward``

    @classmethod
    def of(cls, harness: Harness) -> Producer:
        if harness == LIGER:
            return cls(harness, HARNESS_NAME, HARNESS_REPOSITORY, FAMILY, "liger")
        slug = slugify(harness.name) or "harness"
        return cls(harness, harness.display, None, slug.replace("-", "_"), slug)


@dataclass(frozen=True)
class Gpu:
    """One GPU model as the environment describes it.

    ``name`` is the harness's own name (``torch.cuda.get_device_name()``), e.g.
    ``NVIDIA A100-SXM4-80GB``; ``product`` and ``form_factor`` split it.
    """

    vendor: str
    product: str
    form_factor: str
    architecture: str
    name: str

    @property
    def label(self) -> str:
        """Full GPU identity used by kiana's partitions, e.g. ``NVIDIA H100 80GB HBM3``."""
        return gpu_label(self.vendor, self.product, self.form_factor)

    @property
    def slug(self) -> str:
        return slugify(self.name)


@dataclass(frozen=True)
class RunSpec:
    """Everything needed to write one document."""

    kernel: str
    kernel_title: str
    pass_: str
    provider: str
    gpu: Gpu
    workload: str
    observed_at: datetime
    version: str
    median: float
    p20: float
    p80: float
    metric: Metric = "latency"
    status: str = "passed"
    workload_params: dict[str, Any] = field(default_factory=dict)
    native_metrics: dict[str, float] | None = None
    #: Further ``run.metadata.labels`` beside the version (e.g. the importer's
    #: ``liger_csv`` and ``liger_commit``: where the row was recorded).
    labels: dict[str, str] = field(default_factory=dict)
    #: Whose conventions the document follows (:mod:`kiana.harness`).
    harness: Harness = LIGER
    #: Written as the harness's role label, for a harness that reads one (Liger does
    #: not: its role follows from the provider's name).
    role: Role | None = None


def slugify(text: str) -> str:
    """Lower-case, runs of anything but letters and digits become one ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def timestamp_z(moment: datetime) -> str:
    """ISO-8601 UTC with milliseconds and ``Z``, as in the seeds."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def protocol_document(pass_: str, harness: Harness = LIGER) -> dict[str, Any]:
    description = PASS_DESCRIPTIONS.get(pass_, f"the {pass_} pass")
    made = Producer.of(harness)
    notes = f"Timed: {description}{_NOTES_TAIL.format(display=harness.display)}"
    return {
        "kind": "BenchmarkProtocol",
        "spec": {
            "harness": {"name": made.harness_name, "repository": made.repository},
            "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
            "comparability": {"notes": notes, "family": made.family},
        },
        "metadata": {
            "name": f"{made.prefix}-bench-do-bench-{pass_}",
            "title": f"{harness.display} benchmark harness · {pass_} pass",
        },
        "apiVersion": API_VERSION,
    }


def environment_document(gpu: Gpu, harness: Harness = LIGER) -> dict[str, Any]:
    short = gpu.name.removeprefix(gpu.vendor.upper() + " ").removeprefix("NVIDIA ")
    prefix, display = Producer.of(harness).prefix, harness.display
    return {
        "kind": "ExecutionEnvironment",
        "spec": {
            "hardware": {
                "vendor": gpu.vendor,
                "product": gpu.product,
                "formFactor": gpu.form_factor,
                "architecture": gpu.architecture,
            },
            "software": {},
        },
        "metadata": {
            "name": f"{prefix}-bench-{gpu.slug}",
            "title": f"{display} benchmark host · {short}",
        },
        "apiVersion": API_VERSION,
    }


def measurement_parts(spec: RunSpec) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The ``measurements`` array and the harness's ``sourceNative.metrics`` of a run:
    latency p20/p80 in whole ns (the median rides ``timing``), or memory p20, median
    and p80 in MB."""
    if spec.metric == "latency":
        unit = "ns"
        quantiles: list[tuple[str, float]] = [("p20", round(spec.p20)), ("p80", round(spec.p80))]
        native = spec.native_metrics or {
            "ms_20": spec.p20 / 1e6,
            "ms_50": spec.median / 1e6,
            "ms_80": spec.p80 / 1e6,
        }
    else:
        unit = "MB"
        quantiles = [("p20", spec.p20), ("median", spec.median), ("p80", spec.p80)]
        native = spec.native_metrics or {"mb_20": spec.p20, "mb_50": spec.median, "mb_80": spec.p80}
    measurements = [
        {"unit": unit, "value": value, "metric": spec.metric, "statistic": statistic}
        for statistic, value in quantiles
    ]
    return measurements, native


def _role(spec: RunSpec) -> dict[str, str]:
    label = spec.harness.role_label
    return {label: spec.role} if label and spec.role else {}


def build_document(spec: RunSpec) -> dict[str, Any]:
    """One kernelindex document of the seeds' shape (key order included)."""
    stamp = spec.observed_at.strftime("%Y-%m-%d-%H-%M-%S")
    external_id = "/".join(
        [spec.kernel, spec.pass_, spec.provider, spec.gpu.slug, spec.workload, stamp]
    )
    harness = spec.harness
    protocol = protocol_document(spec.pass_, harness)
    environment = environment_document(spec.gpu, harness)
    run_spec: dict[str, Any] = {"status": spec.status}
    if spec.metric == "latency":
        median = round(spec.median)
        run_spec["timing"] = {"latencyNs": {"median": median}, "primaryStatistic": "median"}
    measurements, native = measurement_parts(spec)
    run_spec["observedAt"] = timestamp_z(spec.observed_at)
    run_spec["measurements"] = measurements
    run_spec["sourceNative"] = {
        "source": harness.name,
        "metrics": native,
        "benchmark": f"{spec.kernel}/{spec.pass_}",
        "externalId": external_id,
    }
    run_spec["protocolDigest"] = digest(protocol)
    run_spec["workloadDigest"] = digest(
        {"kernel": spec.kernel, "workload": spec.workload, "params": spec.workload_params}
    )
    run_spec["environmentDigest"] = digest(environment)
    run_spec["implementationDigest"] = digest(
        {"kernel": spec.kernel, "provider": spec.provider, harness.version_label: spec.version}
    )
    name = f"{Producer.of(harness).prefix}-" + slugify(
        "-".join([spec.kernel, spec.pass_, spec.provider, spec.gpu.slug, spec.workload, stamp])
    )
    run = {
        "kind": "BenchmarkRun",
        "spec": run_spec,
        "metadata": {
            "name": name[:NAME_LIMIT],
            "title": f"{spec.kernel_title} · {spec.provider} · {spec.pass_}",
            "labels": {harness.version_label: spec.version, **_role(spec), **spec.labels},
        },
        "apiVersion": API_VERSION,
    }
    return {"run": run, "protocol": protocol, "environment": environment}
