"""``kiana gate --max-rows`` on a work tree whose CSV holds millions of distinct rows.

Target: a 4.9M-row CSV in the work tree is stopped by ``--max-rows`` (exit 4) in under
10 s and under 500 MB peak (the gate's own ``VmHWM``), beside the gate on a 1,000-row
repo measured in the same run (issue 40, item 6).  The same target for 2M distinct rows
committed on a branch and judged with ``--head pr`` (a blob read from git; 2M rows are
229 MB, under the 256 MiB a CSV may hold: a bigger blob is refused, exit 3).

    .venv/bin/python bench/max_rows.py            # 4.9M rows; --rows N for another size
                                                  # (--head-rows N: the committed rows)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out" / "max_rows"
HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,"
    "x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,"
    "timestamp,liger_version\n"
)
ROW = (
    'rms_norm,liger,forward,speed,ms,H,hidden size,{x},{y:.3f},{y:.3f},{y:.3f},"{{}}",'
    "NVIDIA H100,2025-01-01 00:00:00,0.5.0\n"
)
#: Run inside the gate's process: its exit code and its own peak memory (``VmHWM``).
CHILD = (
    "import sys\n"
    "from kiana.cli import main\n"
    "try:\n    code = main(sys.argv[1:])\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "for line in open('/proc/self/status'):\n"
    "    if line.startswith('VmHWM:'):\n"
    "        print('VMHWM', int(line.split()[1]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def write_csv(path: Path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        out.write(HEADER)
        out.writelines(ROW.format(x=i, y=1.0 + i % 997 / 1000) for i in range(rows))


def build(root: Path, rows: int, *, commit: bool = False) -> Path:
    """A git repo: the base commits 10 rows; the work tree holds ``rows`` distinct rows
    (``commit``: and commits them on a branch ``pr``, for ``--head pr``)."""
    csv = root / "benchmark" / "data" / "all_benchmark_data.csv"
    if (root / ".git").is_dir() and csv.is_file() and csv.stat().st_size > 0:
        return root
    root.mkdir(parents=True, exist_ok=True)
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    write_csv(csv, 10)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    write_csv(csv, rows)
    if commit:
        subprocess.run([*git, "checkout", "-qb", "pr"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "pr"], check=True)
    return root


def run_gate(repo: Path, head: str | None = None) -> tuple[int, float, float]:
    """The gate on ``repo``'s work tree (or its commit ``head``): exit code, seconds,
    peak MiB of its process."""
    args = ["gate", str(repo), "--base", "main", *(["--head", head] if head else [])]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    peak = [ln for ln in done.stderr.splitlines() if ln.startswith("VMHWM ")]
    return done.returncode, seconds, int(peak[-1].split()[1]) / 1024 if peak else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_900_000)
    parser.add_argument("--head-rows", type=int, default=2_000_000)
    args = parser.parse_args()
    small = build(OUT / "rows_1000", 1000)
    large = build(OUT / f"rows_{args.rows}", args.rows)
    code0, s0, m0 = run_gate(small)
    code1, s1, m1 = run_gate(large)
    committed = build(OUT / f"rows_{args.head_rows}_head", args.head_rows, commit=True)
    code2, s2, m2 = run_gate(committed, "pr")
    print("| repo | exit | seconds | peak MiB |\n| --- | --- | --- | --- |")
    print(f"| 1,000 rows (baseline) | {code0} | {s0:.2f} | {m0:.0f} |")
    print(f"| {args.rows:,} rows | {code1} | {s1:.2f} | {m1:.0f} |")
    print(f"| {args.head_rows:,} rows committed (--head pr) | {code2} | {s2:.2f} | {m2:.0f} |")
    runs = ((code1, s1, m1), (code2, s2, m2))
    met = all(code == 4 and s < 10 and mib * 1.048576 < 500 for code, s, mib in runs)
    print(f"target (exit 4, < 10 s, < 500 MB): {'met' if met else 'missed'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
