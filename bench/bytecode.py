"""TileIR bytecode read + verify time per kernel, against NVIDIA's tileirdisasm on the same file.

Usage: python bench/bytecode.py [-n 20] [--cutile]

For every kernel of the visible corpus (and, with ``--cutile``, the kernels of
plugins/tileas/tests/cutile_kernels.py) prints the median of N runs of:

* ``read+verify``: the tileas reader in-process (container, decode, IR build,
  IRDL + cuda_tile verifier) into an MLIR context that already has the dialects
  loaded (as ``tilecore compile`` does);
* ``tileirdisasm``: NVIDIA's disassembler on the same file, a whole process
  (it reads, verifies and prints; there is no in-process API to time);
* ``ratio`` = read+verify / tileirdisasm (below 1: faster).

Also prints the one-off cost of a context with the dialects loaded and the
geometric mean of the ratios.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import statistics
import subprocess
import sys
import time

VISIBLE_CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared", "corpus", "visible")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kernels(with_cutile: bool) -> list[str]:
    paths = sorted(glob.glob(os.path.join(VISIBLE_CORPUS, "*.tileirbc")))
    if with_cutile:
        sys.path.insert(0, os.path.join(ROOT, "plugins", "tileas", "tests"))
        import cutile_kernels

        paths += [cutile_kernels.kernel_path(n) for n in sorted(cutile_kernels.KERNELS)]
    return paths


def median_time(fn, n: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--cutile", action="store_true")
    a = ap.parse_args()

    from tilecore_tileas.bytecode import read_tileir

    from tilecore.plugins import get_plugin_manager
    from tilecore.serialize import find_nvidia_tool

    pm = get_plugin_manager()
    t0 = time.perf_counter()
    ctx = pm.make_context()
    ctx_s = time.perf_counter() - t0
    disasm = find_nvidia_tool("tileirdisasm")

    print(f"context with dialects loaded: {ctx_s * 1000:.1f} ms (once per compile)")
    print(f"{'kernel':<28} {'bytes':>6} {'ops':>5} {'read+verify ms':>15} {'tileirdisasm ms':>16} {'ratio':>6}")
    ratios = []
    for path in kernels(a.cutile):
        with open(path, "rb") as fh:
            data = fh.read()
        module = read_tileir(data, path, ctx)
        nops = sum(1 for _ in _walk(module))
        ours = median_time(lambda d=data, p=path: read_tileir(d, p, ctx), a.n)
        theirs = median_time(lambda p=path: subprocess.run([disasm, p], capture_output=True, check=True), a.n)
        ratios.append(ours / theirs)
        name = os.path.basename(path).split(".")[0]
        print(f"{name:<28} {len(data):>6} {nops:>5} {ours * 1000:>15.2f} {theirs * 1000:>16.2f} {ours / theirs:>6.2f}")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean ratio (read+verify / tileirdisasm) over {len(ratios)} kernels: {geo:.2f}")


def _walk(module):
    stack = [op.operation for op in module.body.operations]
    while stack:
        op = stack.pop()
        yield op
        stack += [o.operation for r in op.regions for b in r.blocks for o in b.operations]


if __name__ == "__main__":
    main()
