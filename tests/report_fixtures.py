"""Hand-made frames with the contract's columns (docs/ARCHITECTURE.md), for the report's
tests; no tests here.  ``hostile=True`` puts attack strings into every name."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import polars as pl

from kiana.harness import LIGER
from kiana.load.schema import RUN_COLUMNS

PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>alert(2)</script>",
    "javascript:alert(3)",
    "rtl\u202eevil\u2028line",
)
VERSIONS = ("0.4.0", "0.5.0", "0.5.10", "0.6.0")
WORKLOADS = ("hidden512-fp32", "hidden1024-fp32", "hidden2048-fp32", "hidden4096-fp32")


def names(hostile: bool) -> dict[str, str]:
    if not hostile:
        return {"kernel": "layer_norm", "provider": "liger", "base": "huggingface",
                "gpu": "NVIDIA H100 80GB HBM3", "version": "0.6.0"}  # fmt: skip
    return {"kernel": f"layer_norm{PAYLOADS[0]}", "provider": f"liger_{PAYLOADS[1]}",
            "base": PAYLOADS[2], "gpu": f"NVIDIA {PAYLOADS[4]}", "version": PAYLOADS[3]}  # fmt: skip


def sample_runs(hostile: bool = False) -> pl.DataFrame:
    """Two passes x 4 workloads x 2 providers x 4 versions; the Liger provider's
    backward pass gets 15% slower at the last version on the big workloads."""
    n = names(hostile)
    versions = (*VERSIONS[:-1], n["version"])
    rows = []
    start = datetime(2025, 1, 1)
    for p_i, pass_ in enumerate(("forward", "backward")):
        for w_i, workload in enumerate(WORKLOADS):
            partition = f"liger_kernel_bench|{n['kernel']}|{pass_}|{workload}|{n['gpu']}"
            for v_i, version in enumerate(versions):
                for provider in (n["provider"], n["base"]):
                    base = 100_000.0 * (w_i + 1) * (1 + p_i)
                    value = base * (0.6 if provider == n["provider"] else 1.0)
                    if provider == n["provider"] and pass_ == "backward" and v_i == 3 and w_i >= 1:
                        value *= 1.15
                    if provider == n["provider"] and pass_ == "forward" and w_i == 0:
                        value *= 2.0  # slower than the baseline: a flip below 1x
                    run_id = hashlib.sha256(f"{partition}{version}{provider}".encode()).hexdigest()
                    rows.append({
                        "run_id": run_id, "partition_id": partition,
                        "family": "liger_kernel_bench", "kernel": n["kernel"], "pass": pass_,
                        "provider": provider, "workload": workload, "gpu": n["gpu"],
                        "vendor": "nvidia", "product": "NVIDIA H100", "form_factor": "80GB HBM3",
                        "architecture": "sm_90", "version": version,
                        "harness": LIGER.name, "role": LIGER.role(provider),
                        "observed_at": start + timedelta(days=30 * v_i), "status": "passed",
                        "metric": "latency", "unit": "ns", "median": value,
                        "p20": value * 0.99, "p80": value * 1.01, "median_ns": int(value),
                        "p20_ns": int(value * 0.99), "p80_ns": int(value * 1.01),
                        "protocol_digest": "sha256:p", "workload_digest": "sha256:w",
                        "environment_digest": "sha256:e", "implementation_digest": "sha256:i",
                        "benchmark": f"{n['kernel']}/{pass_}",
                        "external_id": f"{n['kernel']}/{pass_}/{provider}",
                        "name": f"run {provider}", "title": f"LayerNorm · {provider} · {pass_}",
                        "source": "sample.json", "load_id": 1,
                    })  # fmt: skip
    frame = pl.DataFrame(rows)
    return frame.select([name for name, _ in RUN_COLUMNS])


def sample_steps(hostile: bool = False) -> pl.DataFrame:
    """The steps of the Liger provider's backward pass from 0.5.10 to the last version."""
    n = names(hostile)
    rows = []
    for w_i, workload in enumerate(WORKLOADS):
        change = 0.15 if w_i >= 1 else 0.002
        rows.append({
            "kernel": n["kernel"], "pass": "backward", "provider": n["provider"],
            "gpu": n["gpu"], "workload": workload,
            "partition_id": f"liger_kernel_bench|{n['kernel']}|backward|{workload}|{n['gpu']}",
            "metric": "latency", "from_version": "0.5.10", "to_version": n["version"],
            "from_median_ns": 1e5, "to_median_ns": 1e5 * (1 + change), "change": change,
            "verdict": "regression" if w_i >= 1 else "unchanged",
            "control_provider": n["base"], "control_change": 0.001,
            "adjusted_change": change - 0.001, "severity": change, "noise": 0.01,
            "noise_source": "spread", "evidence": "p20-p80 spread separates",
        })  # fmt: skip
    return pl.DataFrame(rows)


def sample_findings(hostile: bool = False) -> pl.DataFrame:
    n = names(hostile)
    return pl.DataFrame([
        {"kernel": n["kernel"], "pass": "backward", "provider": n["provider"], "gpu": n["gpu"],
         "metric": "latency", "from_version": "0.5.10", "to_version": n["version"],
         "verdict": "regression", "workloads_affected": 3, "workloads_total": 4,
         "median_change": 0.15, "worst_change": 0.15, "confidence": 0.99, "impact": 0.45,
         "control_provider": n["base"], "is_subject": True},
        {"kernel": n["kernel"], "pass": "forward", "provider": n["provider"], "gpu": n["gpu"],
         "metric": "latency", "from_version": "0.5.10", "to_version": n["version"],
         "verdict": "unchanged", "workloads_affected": 0, "workloads_total": 4,
         "median_change": 0.0, "worst_change": 0.001, "confidence": 0.9, "impact": 0.0,
         "control_provider": n["base"], "is_subject": True},
    ])  # fmt: skip


def sample_documents(hostile: bool = False) -> list[dict[str, object]]:
    """Documents (kiana.documents.build_document) for the same story as sample_runs:
    2 passes x 4 workloads x 3 providers x 5 versions (one not PEP 440, ``main``),
    the Liger backward pass 15% slower at the last PEP 440 step.  ``hostile=True`` puts
    attack strings into the kernel, provider, GPU, version and title, and adds a
    document the loader rejects with an attack string in its reason."""
    from kiana.documents import Gpu, RunSpec, build_document

    kernel = 'layer_norm"><img src=x onerror=alert(1)>' if hostile else "layer_norm"
    liger = "liger" if not hostile else "liger_<svg onload=alert(2)>"
    baselines = ("huggingface", "javascript:alert(3)" if hostile else "torch_compile")
    product = "NVIDIA H100</script><script>alert(4)</script>" if hostile else "NVIDIA H100"
    gpu = Gpu("nvidia", product, "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3")
    versions = ["0.4.0", "0.5.0", "0.5.10", "0.6.0", "main"]
    if hostile:
        versions[3] = "0.6.0</script><script>alert(5)</script>\u202e"
    title = "LayerNorm\u202e<script>alert(6)</script>" if hostile else "LayerNorm"
    docs: list[dict[str, object]] = []
    start = datetime(2025, 1, 1)
    for p_i, pass_ in enumerate(("forward", "backward")):
        for w_i, workload in enumerate(WORKLOADS):
            for v_i, version in enumerate(versions):
                for provider in (liger, *baselines):
                    value = 100_000.0 * (w_i + 1) * (1 + p_i)
                    if provider == baselines[1]:
                        value *= 1.3
                    if provider == liger:
                        value *= 2.0 if (pass_ == "forward" and w_i == 0) else 0.6
                        if pass_ == "backward" and v_i >= 3 and w_i >= 1:
                            value *= 1.15
                    wobble = 1 + 0.001 * ((w_i + v_i + len(provider)) % 3)
                    docs.append(build_document(RunSpec(
                        kernel=kernel, kernel_title=title, pass_=pass_, provider=provider,
                        gpu=gpu, workload=workload,
                        observed_at=start + timedelta(days=30 * v_i, minutes=w_i),
                        version=version, median=value * wobble, p20=value * 0.995,
                        p80=value * 1.005, workload_params={"hidden": 512 << w_i},
                    )))  # fmt: skip
    if hostile:
        bad = build_document(RunSpec(
            kernel="x", kernel_title="x", pass_="forward", provider="y", gpu=gpu,
            workload="w", observed_at=start, version="0.4.0", median=1.0, p20=1.0, p80=1.0,
        ))  # fmt: skip
        spec = bad["run"]["spec"]  # type: ignore[index]
        spec["sourceNative"]["externalId"] = "</script><script>alert(7)</script>"
        docs.append(bad)
    return docs


def sample_database(directory: object, hostile: bool = False) -> object:
    """An in-memory kiana database loaded with :func:`sample_documents`."""
    import json
    from pathlib import Path

    from kiana import load

    path = Path(str(directory)) / ("hostile.jsonl" if hostile else "sample.jsonl")
    path.write_text("".join(json.dumps(d) + "\n" for d in sample_documents(hostile)))
    con = load.connect(None)
    load.load(con, [path])
    return con


NOW = datetime(2025, 1, 2)


def build_page(con: object, command_line: str = "kiana report test", **judge: object) -> str:
    """The page of a database, through the CLI's pipeline (``collect``) and ``render``."""
    from kiana.commands.report import collect
    from kiana.report import ReportOptions, render
    from kiana.stats import JudgeOptions

    options = ReportOptions(command_line=command_line)
    data = collect(con, JudgeOptions(**judge), options, generated_at=NOW)  # type: ignore[arg-type]
    return render(data)
