"""Emulator time of a tensor-core matmul: the corpus ``matmul_f16`` (128 x 128 x 64 tiles) on M = N = K.

    python bench/matmul_emulate.py [--size 256] [--sm sm_80] [--repeat 1]

Three lowerings of the same kernel, each compiled once, then launched on the CPU emulator with
``(M / 128) x (N / 128)`` CTAs of 128 threads:

- ``pipelined``: the default (cp.async pipeline, ldmatrix, mma.sync through the cute atoms);
- ``unpipelined``: ``--option tileas.pipeline=off`` (operands through registers, same atoms);
- ``cuda-cores``: ``--option tileas.dot=fma``.

Prints compile (lowering + JIT) and launch seconds and the largest error against numpy (f32 product
of the f16 inputs, result rounded to f16). Issue 14's target: the 256^3 f16 matmul in under a minute.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tilecore import emulate  # noqa: E402
from tilecore.compiler import compile_file  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402

CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible")
VARIANTS = {"pipelined": {}, "unpipelined": {"tileas.pipeline": "off"}, "cuda-cores": {"tileas.dot": "fma"}}


def arr(a: np.ndarray) -> list:
    """matmul_f16's array ABI: pointer, shape (2), strides (2), in elements."""
    return [a, *[np.int32(d) for d in a.shape], *[np.int32(s // a.itemsize) for s in a.strides]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--sm", default="sm_80")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16).astype(np.float64)
    grid = (-(-n // 128), -(-n // 128), 1)
    print(f"matmul_f16 {n}x{n}x{n} on {args.sm}, grid {grid[0]}x{grid[1]} x 128 threads (CPU emulator)")
    print(f"{'variant':<12} {'compile s':>9} {'launch s':>9}  max |err|")
    for name, extra in VARIANTS.items():
        t0 = time.perf_counter()
        module = compile_file(os.path.join(CORPUS, "matmul_f16.tileirbc"), args.sm, CompileOptions(extra=extra),
                              stop_after="convert-nvgpu-and-gpu-to-nvvm").module
        kernel = emulate.compile_kernel(module, "matmul_f16")
        t1 = time.perf_counter()
        best = None
        for _ in range(args.repeat):
            c = np.zeros((n, n), np.float16)
            t2 = time.perf_counter()
            kernel.launch(grid, (128, 1, 1), arr(a) + arr(b) + arr(c))
            dt = time.perf_counter() - t2
            best = dt if best is None else min(best, dt)
        err = np.abs(c.astype(np.float64) - want).max()
        print(f"{name:<12} {t1 - t0:9.2f} {best:9.2f}  {err:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
