"""One shard judged in a process of its own: ``python -m kiana.shards.worker JOB``.

:func:`run` writes the job (the shard's runs file, the options, the code changes, where
to write) to a pickle in the shards' own temporary folder, starts this module with the
same Python, and reads back what :func:`kiana.shards.results.write_judgement` wrote.
A fresh interpreter, not :mod:`multiprocessing`: its ``spawn`` start method imports the
caller's ``__main__`` again, so a script calling :func:`kiana.analyze` at its top level
(no ``if __name__ == "__main__":``) would fail on any database of more than one shard.
The process's memory goes back to the system when it ends, which is the point: in one
process, the allocator kept what each shard's judge freed.

A :class:`~kiana.errors.KianaError` in the worker comes back as the same error (exit 2:
the input's to fix); any other failure is a :class:`WorkerCrash` (exit 3: kiana's own), its
traceback printed with ``KIANA_TRACEBACK=1``.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiana.shards.results import Written
    from kiana.stats import CodeChanges, JudgeOptions


def run(
    path: Path, options: JudgeOptions, folder: Path, index: int, changes: CodeChanges | None
) -> Written:
    """Judge the shard whose runs ``path`` holds in a new process (module docstring)."""
    written: Written = _run("judgement", path, options, folder, index, changes)
    return written


def run_unit(
    path: Path, options: JudgeOptions, folder: Path, index: int, changes: CodeChanges | None
) -> dict[str, Path]:
    """:func:`run` for the stored judgement: the Parquet files of the shard's
    :class:`~kiana.shards.unit.Unit` (:func:`kiana.shards.tables.write_unit`)."""
    paths: dict[str, Path] = _run("unit", path, options, folder, index, changes)
    return paths


def _run(
    kind: str,
    path: Path,
    options: JudgeOptions,
    folder: Path,
    index: int,
    changes: CodeChanges | None,
) -> Any:
    job = folder / f"job-{index:05d}.pickle"
    done = folder / f"done-{index:05d}.pickle"
    job.write_bytes(pickle.dumps((kind, path, options, folder, index, changes, done)))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [_root(), os.environ.get("PYTHONPATH")])),
    }
    finished = subprocess.run(
        [sys.executable, "-m", "kiana.shards.worker", str(job)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    job.unlink(missing_ok=True)
    if finished.returncode != 0:
        raise WorkerCrash(index, finished.stderr)
    result = pickle.loads(done.read_bytes())
    done.unlink(missing_ok=True)
    if isinstance(result, Refused):  # a KianaError in the worker: the user's to fix
        from kiana.errors import KianaError

        raise KianaError(result.message, hint=result.hint)
    return result


class WorkerCrash(RuntimeError):
    """A worker process failed (an exception that is not a :class:`~kiana.errors.KianaError`,
    or the process was killed): kiana's own failure, exit 3 (:mod:`kiana.cli`), never a
    usage error.  The worker's standard error is kept; with ``KIANA_TRACEBACK=1`` it is
    printed (made inert: :func:`kiana.safe.terminal`, line by line) before the message."""

    def __init__(self, index: int, stderr: str) -> None:
        from kiana.safe import terminal

        lines = stderr.strip().splitlines() or ["no message (the process was killed?)"]
        super().__init__(
            f"judging shard {index} failed in its worker process: {terminal(lines[-1])[:300]}"
        )
        self.stderr = stderr
        if os.environ.get("KIANA_TRACEBACK"):
            sys.stderr.write("".join(f"worker {index}: {terminal(line)}\n" for line in lines))


@dataclass(frozen=True)
class Refused:
    """A :class:`~kiana.errors.KianaError` raised in a worker, sent back to be raised again."""

    message: str
    hint: str | None


def _root() -> str:
    """The folder kiana is imported from, so the worker imports the same code."""
    return str(Path(__file__).resolve().parents[2])


def main(job: str) -> None:
    import polars as pl

    from kiana.errors import KianaError
    from kiana.shards.inputs import judge_shard
    from kiana.shards.results import write_judgement

    kind, path, options, folder, index, changes, done = pickle.loads(Path(job).read_bytes())
    result: object
    try:
        if kind == "unit":
            from kiana.shards.tables import write_unit
            from kiana.shards.unit import judge_unit

            # The runs passed, not kept: judge_unit lets them go after its first stage.
            unit = judge_unit(pl.read_parquet(path), options, changes)[1]
            result = write_unit(unit, folder, index)
        else:
            runs = pl.read_parquet(path)
            result = write_judgement(
                judge_shard(runs, options, changes), runs.height, folder, index
            )
    except KianaError as exc:
        from kiana.shards import worker  # its own name: this runs as __main__

        result = worker.Refused(exc.message, exc.hint)
    done.write_bytes(pickle.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
