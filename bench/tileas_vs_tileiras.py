"""Compile time, SASS size and registers: tilecore vs tileiras on the visible corpus.

Usage: python bench/tileas_vs_tileiras.py [--sms sm_80,sm_90a,sm_100a] [--repeat 3] [KERNEL ...]

Both compilers run as CLIs on the same TileIR bytecode (best of ``--repeat`` wall times,
start-up included for both); the cubins are inspected with ``cuobjdump -sass`` (instruction
count) and ``cuobjdump -res-usage`` (registers). tileiras takes ``sm_90`` / ``sm_100`` for
the ``a`` variants. Prints one row per kernel and SM and the time ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from tilecore.serialize import find_nvidia_tool

CORPUS = "/work/shared/corpus/visible"
KERNELS = ["vadd_f32", "saxpy_f32", "relu_f16", "gelu_f16", "rowsum_f32", "row_softmax_f16", "transpose_f32",
           "rownorm_loop_if_f32"]


def _time(cmd, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            return None, (p.stderr or p.stdout).strip().splitlines()[:1]
        best = dt if best is None else min(best, dt)
    return best, None


def _sass_stats(cubin):
    cuobjdump = find_nvidia_tool("cuobjdump")
    env = dict(os.environ, PATH=os.path.dirname(cuobjdump) + os.pathsep + os.environ.get("PATH", ""))
    sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, env=env).stdout
    n = len(re.findall(r"^\s+/\*[0-9a-f]{4}\*/\s+\S", sass, re.M))
    res = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+)", res)
    return n, int(m.group(1)) if m else None


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*", default=KERNELS)
    ap.add_argument("--sms", default="sm_80,sm_90a,sm_100a")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    tileiras = find_nvidia_tool("tileiras")
    tilecore = os.path.join(os.path.dirname(sys.executable), "tilecore")
    print(f"{'kernel':22} {'sm':8} {'tilecore s':>10} {'tileiras s':>10} {'ratio':>6} "
          f"{'sass tc':>8} {'sass ti':>8} {'reg tc':>6} {'reg ti':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.kernels:
            src = os.path.join(CORPUS, f"{k}.tileirbc")
            for sm in args.sms.split(","):
                a, b = os.path.join(tmp, f"{k}.{sm}.tc.cubin"), os.path.join(tmp, f"{k}.{sm}.ti.cubin")
                t_tc, err_tc = _time([tilecore, "compile", src, "--gpu-name", sm, "-o", a], args.repeat)
                t_ti, err_ti = _time([tileiras, f"--gpu-name={sm.rstrip('a')}", "--opt-level=3",
                                      f"--output-file={b}", src], args.repeat)
                s_tc = _sass_stats(a) if t_tc else (None, None)
                s_ti = _sass_stats(b) if t_ti else (None, None)
                ratio = f"{t_tc / t_ti:6.2f}" if t_tc and t_ti else "   n/a"
                fmt = lambda v, w: f"{v:>{w}.3f}" if isinstance(v, float) else f"{'fail':>{w}}"  # noqa: E731
                print(f"{k:22} {sm:8} {fmt(t_tc, 10)} {fmt(t_ti, 10)} {ratio} {s_tc[0] or '-':>8} "
                      f"{s_ti[0] or '-':>8} {s_tc[1] or '-':>6} {s_ti[1] or '-':>6}")
                for e in (err_tc or []) + (err_ti or []):
                    print(f"    {e}")


if __name__ == "__main__":
    main()
