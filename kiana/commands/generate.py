"""``kiana generate OUT``: write a deterministic synthetic corpus and its ground truth."""

from __future__ import annotations

import argparse
from typing import Any

HELP = "write a deterministic synthetic Liger benchmark corpus and its ground truth (truth.csv)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", metavar="OUT", help="folder to write (created if missing)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    parser.add_argument(
        "--preset",
        choices=("default", "bundled"),
        default="default",
        help="start from the default config or the one of the bundled data/generated corpus",
    )
    parser.add_argument(
        "--noise",
        choices=("spread", "realistic"),
        default=None,
        help="spread (default): a run's p20-p80 spread predicts its noise; realistic: "
        "noise as Liger's real CSVs show it (per-sitting provider offsets, heavy tails, "
        "single samples of slow kernels), plus baseline code changes and A/A pairs "
        "(truth effects baseline_change and aa; docs/CALIBRATION.md)",
    )
    parser.add_argument(
        "--runs", type=int, metavar="N", help="about N documents (picks kernels, GPUs, versions)"
    )
    parser.add_argument("--kernels", nargs="+", metavar="KERNEL", help="Liger kernel names")
    parser.add_argument("--gpus", nargs="+", metavar="GPU", help="GPU slugs or device names")
    parser.add_argument(
        "--versions",
        nargs="+",
        metavar="VERSION",
        help="Liger versions in order, or one number: that many of the newest releases",
    )
    parser.add_argument(
        "--head-label", metavar="LABEL", help="a newest non-PEP-440 version, e.g. main"
    )
    parser.add_argument("--sweep-size", type=int, metavar="N", help="workloads per sweep (1-12)")
    for name, text in (
        ("replicate-rate", "share of sessions benchmarked several times"),
        ("regression-rate", "Liger regressions per kernel, pass and version step"),
        ("improvement-rate", "Liger improvements per kernel, pass and version step"),
        ("drift-rate", "environment shifts per GPU and version step"),
        ("rerun-rate", "same-label re-benchmarks per kernel, pass, GPU and version"),
        ("conflict-rate", "sessions holding another implementation's runs named liger"),
        ("outlier-rate", "one-off outliers per run"),
        ("zero-spread-share", "share of slow runs with p20 = median = p80"),
        ("min-change", "smallest injected effect (relative, 0.03 = 3%%)"),
        ("min-noise-multiple", "smallest injected effect in units of the series' spread"),
        ("baseline-change-rate", "realistic only: baseline code changes per group and step"),
        ("aa-rate", "realistic only: A/A pairs per kernel, pass, GPU and version"),
    ):
        parser.add_argument(f"--{name}", type=float, metavar="X", help=text)
    parser.add_argument(
        "--histories",
        type=int,
        metavar="N",
        help="N long histories (30-100 consecutive sessions each) with outlier sessions "
        "and level shifts (truth effects outlier and changepoint)",
    )
    parser.add_argument("--memory", action="store_true", help="also write memory (MB) rows")
    parser.add_argument(
        "--layout",
        choices=("files", "jsonl", "jsonl.gz"),
        default="jsonl",
        help="one .json per run, or OUT/documents.jsonl[.gz] (default jsonl)",
    )
    parser.add_argument(
        "--force", action="store_true", help="write into OUT even when it is not empty"
    )


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from kiana.errors import InputError, UsageError
    from kiana.generate import CorpusConfig, generate, liger_versions, write_corpus

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder", hint="give a folder path")
    try:
        occupied = out.is_dir() and any(out.iterdir())
    except OSError as exc:
        raise InputError(
            f"cannot read {out}: {exc.strerror or exc}", hint="check the path"
        ) from exc
    if occupied and not args.force:
        raise UsageError(
            f"{out} is not empty",
            hint="choose an empty folder, or pass --force to overwrite the files it writes",
        )
    changes: dict[str, Any] = {}
    if args.seed is not None:
        changes["seed"] = args.seed
    for name in (
        "replicate_rate", "regression_rate", "improvement_rate", "drift_rate", "outlier_rate",
        "rerun_rate", "conflict_rate",
        "zero_spread_share", "min_change", "min_noise_multiple", "sweep_size", "head_label",
        "histories", "noise", "baseline_change_rate", "aa_rate",
    ):  # fmt: skip
        if getattr(args, name) is not None:
            changes[name] = getattr(args, name)
    if args.memory:
        changes["memory"] = True
    if args.kernels:
        changes["kernels"] = tuple(args.kernels)
    if args.gpus:
        changes["gpus"] = tuple(args.gpus)
    if args.versions:
        if len(args.versions) == 1 and args.versions[0].isdigit():
            changes["versions"] = liger_versions(int(args.versions[0]))
        else:
            changes["versions"] = tuple(args.versions)
    base = CorpusConfig.bundled() if args.preset == "bundled" else CorpusConfig()
    if args.runs is not None:
        shaped = [k for k in ("kernels", "gpus", "versions", "sweep_size") if k in changes]
        if shaped:
            raise UsageError(
                f"--runs picks kernels, GPUs, versions and sweep size itself: drop {shaped}",
                hint="use either --runs N or the explicit shape options",
            )
        seed = changes.pop("seed", base.seed)
        config = CorpusConfig.sized(args.runs, seed=seed, **changes)
    else:
        config = replace(base, **changes)
    corpus = generate(config)
    try:
        written = write_corpus(corpus, out, layout=args.layout)
    except OSError as exc:
        raise InputError(
            f"cannot write the corpus to {out}: {exc.strerror or exc}",
            hint="choose a folder you can write to, on a disk with room",
        ) from exc
    truth = corpus.truth
    kinds = ", ".join(
        f"{count} {effect}"
        for effect, count in truth.group_by("effect").len().sort("effect").iter_rows()
    )
    print(
        f"wrote {written.documents} documents ({args.layout}, {written.files} file(s)) "
        f"and {truth.height} truth rows ({kinds or 'none'}) to {out}"
    )
    return 0
