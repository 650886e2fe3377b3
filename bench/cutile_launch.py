"""tilecore.cutile.launch on the CPU path: first call (specialise, cuTile export, tilecore compile, JIT,
run) against cached calls (specialise, look up, run), for vadd and matmul.

    python bench/cutile_launch.py [-n 20]

Each row's first call is the first for its specialisation in this process (imports are done before:
``import cuda.tile`` and tilecore's plugins are timed apart; the 1M vector add is a second
specialisation of vadd, whose lowered module the emulator's JIT cache may already hold). Cached
calls: median and min of n; "run only" is ``CompiledKernel.run_bound`` (no binding / look-up). What the
compile costs once cuTile and tilecore are warm: the same specialisation compiled again for another
target (export + lower) and the emulator's JIT of that; the rest of a first call is one-time
warm-up of cuTile's and tilecore's own machinery.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "plugins", "tileas", "tests"))


def cdiv(a, b):
    return -(-a // b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20)
    a = ap.parse_args()

    t0 = time.perf_counter()
    import cutile_kernels as ck  # cuda.tile and the kernels

    import tilecore.cutile as tc
    from tilecore.plugins import get_plugin_manager

    get_plugin_manager().targets()
    print(f"imports (cuda.tile, tilecore.cutile, plugins): {time.perf_counter() - t0:.2f} s")
    rng = np.random.default_rng(0)
    m, n, k = 128, 128, 128  # one 128x128 tile block, two K steps (mma.sync: the emulator's slow path)
    cases = [
        ("vadd_f32 1000", ck.vadd_f32, cdiv(1000, 128),
         lambda: (rng.random(1000, np.float32), rng.random(1000, np.float32), np.zeros(1000, np.float32), 128)),
        ("vadd_f32 1M", ck.vadd_f32, cdiv(1 << 20, 128),  # another specialisation (extents divisible by 16)
         lambda: (rng.random(1 << 20, np.float32), rng.random(1 << 20, np.float32), np.zeros(1 << 20, np.float32),
                  128)),
        (f"matmul_f16 {m}x{n}x{k}", ck.matmul_f32acc, (cdiv(m, 128), cdiv(n, 128)),
         lambda: (rng.random((m, k)).astype(np.float16), rng.random((k, n)).astype(np.float16),
                  np.zeros((m, n), np.float16), 128, 128, 64)),
    ]
    print(f"{'kernel':24s} {'first call s':>12s} {'warm export+lower s':>19s} {'warm JIT s':>10s} "
          f"{'cached median ms':>16s} {'cached min ms':>13s} {'run only ms':>11s}")
    for name, kernel, grid, make in cases:
        args = make()
        t = time.perf_counter()
        tc.launch(None, grid, kernel, args)
        first = time.perf_counter() - t
        reps = a.n if "matmul" not in name else min(a.n, 5)  # the mma kernel runs ~1 s per call in the emulator
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            tc.launch(None, grid, kernel, args)
            times.append(time.perf_counter() - t)
        ck_ = tc.compile(kernel, args)
        values = ck_.bind(args)
        run = []
        for _ in range(reps):
            t = time.perf_counter()
            ck_.run_bound(None, grid, values, "cpu")
            run.append(time.perf_counter() - t)
        t = time.perf_counter()
        other = tc.compile(kernel, args, gpu_name="sm_90a")  # same specialisation, another target: export + lower
        lower = time.perf_counter() - t
        t = time.perf_counter()
        other.emulated()
        jit = time.perf_counter() - t
        print(f"{name:24s} {first:12.2f} {lower:19.2f} {jit:10.2f} {statistics.median(times) * 1e3:16.2f} "
              f"{min(times) * 1e3:13.2f} {statistics.median(run) * 1e3:11.2f}")


if __name__ == "__main__":
    main()
