"""Start-up cost of the CLI: wall time of `tilecore --help`, `tilecore plugins` and `tilecore pipeline`.

Usage: python bench/startup.py [-n 5]
Prints the median and min of N runs of each command (whole process, this machine).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["--help"],
    ["plugins"],
    ["plugins", "--json"],
    ["pipeline", "--gpu-name", "sm_90a"],
]


def measure(args: list[str], n: int) -> list[float]:
    times = []
    cmd = [sys.executable, "-m", "tilecore", *args]
    subprocess.run(cmd, capture_output=True)  # warm the file cache
    for _ in range(n):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"tilecore {' '.join(args)} failed: {proc.stderr.decode()[:200]}")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5)
    a = ap.parse_args()
    print(f"{'command':<36} {'median s':>9} {'min s':>7}  (n={a.n}, target < 0.5 s)")
    for args in COMMANDS:
        t = measure(args, a.n)
        print(f"{'tilecore ' + ' '.join(args):<36} {statistics.median(t):9.3f} {min(t):7.3f}")


if __name__ == "__main__":
    main()
