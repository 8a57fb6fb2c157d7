"""The numbers ``kiana generate --noise realistic`` is calibrated to, from real data.

Run by hand (not part of the tests)::

    .venv/bin/python bench/calibrate.py                 # ../shared/liger/*.csv
    .venv/bin/python bench/calibrate.py --corpus DIR    # the same numbers for a generated corpus
    .venv/bin/python bench/calibrate.py --generated 0 1 2   # realistic corpora of every kernel
    .venv/bin/python bench/calibrate.py --ci            # ../shared/liger-ci: the judge's priors

Target: the realistic generator reproduces the noise of Liger's real benchmarks
(``tests/generate/test_realistic.py``), and kiana's noise priors are the fit of Liger's CI
history's sitting pairs (``tests/generate/test_priors.py``; ``bench/README.md``'s table).

Liger-Kernel's benchmark CSVs (``../shared/liger``, outside the repository) are imported
with :mod:`kiana.importers` into an in-memory database, and
:func:`kiana.generate.calibration.measure` prints the noise they show (definitions in its
module docstring; the numbers are written down in ``docs/CALIBRATION.md``).  With
``--corpus DIR``, the documents of a generated corpus (``kiana generate DIR --noise
realistic``) are measured the same way, for a side-by-side look; with ``--generated
SEED...``, the corpora ``tests/generate/test_realistic.py`` compares with the real numbers
(``CorpusConfig(noise="realistic")`` with every catalog kernel, one per seed, pooled).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from kiana.generate.calibration import measure, report
from kiana.load import connect, load
from kiana.load.judged import judged_runs

ROOT = Path(__file__).resolve().parents[1]
LIGER = ROOT.parent / "shared" / "liger"


def real_runs() -> pl.DataFrame:
    """The runs of ``../shared/liger``, imported into memory; exits when it is absent."""
    from kiana.importers.liger import import_csvs
    from kiana.load import load_documents

    files = sorted(LIGER.glob("*.csv"))
    if not files:
        sys.exit(f"no Liger CSVs at {LIGER}: nothing to calibrate on (see docs/CALIBRATION.md)")
    con = connect(None)
    load_documents(con, import_csvs(files).documents, source="liger-import")
    return judged_runs(con)


def ci_runs(folder: Path = LIGER.parent / "liger-ci") -> pl.DataFrame:
    """The runs of ``../shared/liger-ci`` (a checkout of Liger's gh-pages), in memory."""
    from kiana.importers import ci
    from kiana.importers.liger import convert_rows
    from kiana.load import load_documents

    if not (folder / "benchmarks").is_dir():
        sys.exit(f"no CI history at {folder}: nothing to fit the priors on")
    con = connect(None)
    documents = convert_rows(ci.from_dir(folder).rows, sources=[str(folder)]).documents
    load_documents(con, documents, source="liger-import")
    return judged_runs(con)


def ci_report(folder: Path = LIGER.parent / "liger-ci") -> None:
    """The baselines' sitting pairs of the CI history and the priors fitted on them."""
    from kiana.generate import priors

    order = priors.commit_order(folder / "benchmarks" / "commits.txt")
    parts = priors.split(priors.baseline_steps(ci_runs(folder), order), order)
    for name, found in parts.items():
        print(f"\n### {name}: {priors.pairs(found).height:,} baseline sitting pairs, "
              f"{found.height:,} steps")  # fmt: skip
        fits = [*priors.fit(found), *priors.fit(found, "gpu"), *priors.fit(found, "provider")]
        print(priors.markdown(fits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--corpus", type=Path, metavar="DIR", help="a generated corpus folder")
    source.add_argument("--ci", action="store_true", help="fit the priors on ../shared/liger-ci")
    source.add_argument(
        "--generated", type=int, nargs="+", metavar="SEED",
        help="realistic corpora of every kernel, one per seed, pooled",
    )  # fmt: skip
    parser.add_argument(
        "--step-min-ms", type=float, default=0.3, metavar="MS",
        help="steps and repeats of workloads of at least MS on both sides (default 0.3: "
        "the fastest step Liger's CSVs hold)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.ci:
        ci_report()
        return
    if args.generated:
        from kiana.generate import KERNELS, CorpusConfig
        from kiana.generate.calibration import measure_generated

        config = CorpusConfig(noise="realistic", kernels=tuple(KERNELS))
        print(f"realistic corpora of every kernel, seeds {args.generated}")
        print(f"steps and repeats of workloads >= {args.step_min_ms:g} ms")
        print(report(measure_generated(config, args.generated, args.step_min_ms)))
        return
    if args.corpus:
        con = connect(None)
        load(con, [args.corpus])
        runs = judged_runs(con)
        print(f"generated corpus {args.corpus}")
    else:
        runs = real_runs()
        print(f"Liger-Kernel's CSVs in {LIGER}")
    print(f"steps and repeats of workloads >= {args.step_min_ms:g} ms")
    print(report(measure(runs, args.step_min_ms)))


if __name__ == "__main__":
    main()
