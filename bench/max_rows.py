"""``kiana gate --max-rows`` on a work tree whose CSV holds millions of distinct rows.

Target: a 4.9M-row CSV in the work tree is stopped by ``--max-rows`` (exit 4) in under
10 s and under 500 MB peak (the gate's own ``VmHWM``), beside the gate on a 1,000-row
repo measured in the same run (issue 40, item 6).

    .venv/bin/python bench/max_rows.py            # 4.9M rows; --rows N for another size
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


def build(root: Path, rows: int) -> Path:
    """A git repo: the base commits 10 rows; the work tree holds ``rows`` distinct rows."""
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
    return root


def run_gate(repo: Path) -> tuple[int, float, float]:
    """The gate on ``repo``'s work tree: exit code, seconds, peak MiB of its process."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "gate", str(repo), "--base", "main"],
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
    args = parser.parse_args()
    small = build(OUT / "rows_1000", 1000)
    large = build(OUT / f"rows_{args.rows}", args.rows)
    code0, s0, m0 = run_gate(small)
    code1, s1, m1 = run_gate(large)
    print("| repo | exit | seconds | peak MiB |\n| --- | --- | --- | --- |")
    print(f"| 1,000 rows (baseline) | {code0} | {s0:.2f} | {m0:.0f} |")
    print(f"| {args.rows:,} rows | {code1} | {s1:.2f} | {m1:.0f} |")
    met = code1 == 4 and s1 < 10 and m1 * 1.048576 < 500
    print(f"target (exit 4, < 10 s, < 500 MB): {'met' if met else 'missed'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
