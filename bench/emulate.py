"""CPU emulator speed: emulated threads per second, and the 1M-element vector add.

    python bench/emulate.py [--threads 8192] [--repeat 3] [--opt-level N]
    python bench/emulate.py --tests NODEID [NODEID ...] [--opt-level N]

1. A fixed collective kernel (warp shuffle-xor sum, barrier, per-warp partials in
   shared memory, barrier, thread 0 sums them) at 128, 256 and 1024 threads per
   CTA over the same total number of threads: threads run concurrently (one host
   thread per GPU thread), so this is the slow path.
2. The same count through the sequential fast path (vector add, no collectives).
3. A chain of CTAs each waiting for the NEXT one (llvm dialect: every thread spins on an
   atomic acquire load of flag[b + 1]): the cooperative path (tilecore/emulate/ctasched.py),
   16 CTAs x 32 threads (the threads/s column counts GPU threads).
4. The bundled vector add (tilecore/data/vadd_gpu.mlir) on 1,000,000 elements:
   lowering, JIT and launch wall times, with and without bounds checks.

Prints threads/s for each and the ratio fast path / collective path, and the JIT time of each kernel.

``--tests``: instead, runs each pytest node id in this process and prints its wall time split into the
emulator's JIT (its steps: translate, optimise, codegen, link; :mod:`tilecore.emulate.jit`), the launches and
the rest (cuTile export, tilecore's lowering, numpy). ``--opt-level``: the JIT level
(``TILECORE_EMU_OPT_LEVEL``, :data:`tilecore.emulate.jit.LEVELS`; default 1).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tilecore.compiler import compile_module, read_input  # noqa: E402
from tilecore.emulate import compile_kernel  # noqa: E402
from tilecore.mlir import ir  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402
from tilecore.plugins import get_plugin_manager  # noqa: E402
from tilecore.targets import resolve_target  # noqa: E402

REDUCE = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cta_sum(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>) workgroup(%part : memref<32xf32, 3>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %w32 = arith.constant 32 : i32
      %base = arith.muli %bid, %bdim : index
      %gi = arith.addi %base, %tid : index
      %g = arith.index_cast %gi : index to i32
      %px = llvm.getelementptr %x[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s = gpu.all_reduce add %v uniform {} : (f32) -> f32
      %o16 = arith.constant 16 : i32
      %r1, %k1 = gpu.shuffle xor %v, %o16, %w32 : f32
      %a1 = arith.addf %v, %r1 : f32
      %lane = arith.remui %tid, %c32 : index
      %warp = arith.divui %tid, %c32 : index
      %is0 = arith.cmpi eq, %lane, %c0 : index
      cf.cond_br %is0, ^store, ^sync
    ^store:
      memref.store %a1, %part[%warp] : memref<32xf32, 3>
      cf.br ^sync
    ^sync:
      gpu.barrier
      %t0 = arith.cmpi eq, %tid, %c0 : index
      cf.cond_br %t0, ^write, ^exit
    ^write:
      %b32 = arith.index_cast %bid : index to i32
      %po = llvm.getelementptr %out[%b32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %s, %po : f32, !llvm.ptr<1>
      cf.br ^exit
    ^exit:
      gpu.return
    }
  }
}
"""


WAIT_CHAIN = """
gpu.module @m {
llvm.func @chain(%flag: !llvm.ptr<1>) attributes {nvvm.kernel} {
  %b = nvvm.read.ptx.sreg.ctaid.x : i32
  %n = nvvm.read.ptx.sreg.nctaid.x : i32
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %b1 = llvm.add %b, %one : i32
  %last = llvm.icmp "sge" %b1, %n : i32
  llvm.cond_br %last, ^done(%zero : i32), ^spin
^spin:
  %p = llvm.getelementptr %flag[%b1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  %v = llvm.load %p atomic acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
  %unset = llvm.icmp "eq" %v, %zero : i32
  llvm.cond_br %unset, ^spin, ^done(%v : i32)
^done(%got: i32):
  %is0 = llvm.icmp "eq" %t, %zero : i32
  llvm.cond_br %is0, ^publish, ^end
^publish:
  %mine = llvm.getelementptr %flag[%b] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  %next = llvm.add %got, %one : i32
  llvm.store %next, %mine atomic release {alignment = 4 : i64} : i32, !llvm.ptr<1>
  llvm.br ^end
^end:
  llvm.return
}
}
"""


def lower(pm, module):
    res = compile_module(module, resolve_target("sm_80", pm.targets()), CompileOptions(emit="mlir"), pm,
                         stages=["convert-nvgpu-and-gpu-to-nvvm"])
    return res.module


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class JitRunSplit:
    """Adds up, while installed, the JIT seconds (and their steps) of every kernel the emulator compiles and the
    seconds of every launch."""

    def __init__(self):
        self.jit, self.run, self.kernels, self.steps = 0.0, 0.0, 0, {}

    def __enter__(self):
        from tilecore.emulate.engine import EmulatedKernel

        self._init, self._launch = EmulatedKernel.__init__, EmulatedKernel.launch
        split = self

        def init(kern, *a, **k):
            split._init(kern, *a, **k)
            split.jit += kern.jit_seconds
            split.kernels += 1
            for step, sec in kern.engine.timings.items():
                split.steps[step] = split.steps.get(step, 0.0) + sec

        def launch(kern, *a, **k):
            t0 = time.perf_counter()
            try:
                return split._launch(kern, *a, **k)
            finally:
                split.run += time.perf_counter() - t0

        EmulatedKernel.__init__, EmulatedKernel.launch = init, launch
        return self

    def __exit__(self, *exc):
        from tilecore.emulate.engine import EmulatedKernel

        EmulatedKernel.__init__, EmulatedKernel.launch = self._init, self._launch


def run_tests(nodes) -> int:
    """Each pytest node in this process: total, JIT (steps), launch and other seconds."""
    import pytest

    print(f"JIT level {os.environ.get('TILECORE_EMU_OPT_LEVEL', '1')}; seconds (wall)")
    failed = 0
    for node in nodes:
        with JitRunSplit() as split:
            t0 = time.perf_counter()
            rc = pytest.main(["-p", "no:cacheprovider", "-q", "--no-header", node])
            total = time.perf_counter() - t0
        failed |= int(rc)
        steps = " ".join(f"{k} {v:.2f}" for k, v in split.steps.items())
        print(f"{node}\n  {'passed' if rc == 0 else f'FAILED ({rc})'}: total {total:.1f}  jit {split.jit:.1f} "
              f"({split.kernels} kernels: {steps})  run {split.run:.1f}  other {total - split.jit - split.run:.1f}",
              flush=True)
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8192, help="total threads per measurement (default 8192)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is kept (default 3)")
    ap.add_argument("--opt-level", type=int, choices=(0, 1, 2, 3), help="the emulator's JIT level (default 1)")
    ap.add_argument("--tests", nargs="+", metavar="NODEID", help="time these pytest nodes instead: JIT / run split")
    args = ap.parse_args()
    if args.opt_level is not None:
        os.environ["TILECORE_EMU_OPT_LEVEL"] = str(args.opt_level)
    if args.tests:
        return run_tests(args.tests)
    pm = get_plugin_manager()
    with pm.make_context():
        reduce_mod = lower(pm, ir.Module.parse(REDUCE))
    vadd_mod = lower(pm, read_input(os.path.join(ROOT, "tilecore", "data", "vadd_gpu.mlir"), pm)[0])
    with JitRunSplit() as split:
        k = compile_kernel(reduce_mod, "cta_sum")
        vadd = compile_kernel(vadd_mod, "vadd")
    total = args.threads
    x = np.random.default_rng(0).random(total, dtype=np.float32)
    print(f"CPU emulator, {total} threads per figure, best of {args.repeat} ({os.cpu_count()} host cores), "
          f"JIT level {os.environ.get('TILECORE_EMU_OPT_LEVEL', '1')}: cta_sum + vadd JIT {split.jit:.3f} s")
    print(f"{'kernel':<28}{'threads/CTA':>12}{'CTAs':>7}{'seconds':>10}{'threads/s':>12}")
    coll = {}
    for bs in (128, 256, 1024):
        out = np.zeros(total // bs, np.float32)
        t = best(lambda bs=bs, out=out: k.launch(total // bs, bs, [x, out]), args.repeat)
        np.testing.assert_allclose(out, x.reshape(-1, bs).sum(axis=1), rtol=1e-4)
        coll[bs] = total / t
        print(f"{'cta_sum (concurrent)':<28}{bs:>12}{total // bs:>7}{t:>10.3f}{total / t:>12,.0f}")
    c = np.zeros(total, np.float32)
    t = best(lambda: vadd.launch(total // 256, 256, [x, x, c, total]), args.repeat)
    seq = total / t
    print(f"{'vadd (sequential)':<28}{256:>12}{total // 256:>7}{t:>10.4f}{seq:>12,.0f}")
    print(f"ratio sequential / concurrent at 256 threads/CTA: {seq / coll[256]:,.0f}x")
    chain = compile_kernel(WAIT_CHAIN, "chain")
    flags = np.zeros(16, np.int32)
    t = best(lambda: chain.launch(16, 32, [flags]), args.repeat)
    np.testing.assert_array_equal(chain.launch(16, 32, [flags]).outputs[0], 16 - np.arange(16))
    print(f"{'wait chain (cooperative)':<28}{32:>12}{16:>7}{t:>10.3f}{16 * 32 / t:>12,.0f}")

    n = 1_000_000
    a = np.random.default_rng(1).random(n, dtype=np.float32)
    b = np.random.default_rng(2).random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    t0 = time.perf_counter()
    m = lower(pm, read_input(os.path.join(ROOT, "tilecore", "data", "vadd_gpu.mlir"), pm)[0])
    t1 = time.perf_counter()
    from tilecore.emulate.engine import EmulatedKernel
    from tilecore.emulate.hostmodule import build

    for checked in (True, False):
        t1 = time.perf_counter()
        kern = EmulatedKernel(build(m, "vadd", check_bounds=checked), int(os.environ.get("TILECORE_EMU_OPT_LEVEL", 1)))
        t2 = time.perf_counter()
        kern.launch((n + 255) // 256, 256, [a, b, c, n])
        t3 = time.perf_counter()
        np.testing.assert_array_equal(c, a + b)
        print(f"vadd 1M elements, bounds checks {'on ' if checked else 'off'}: lower {t1 - t0:.3f} s, "
              f"rewrite + JIT {t2 - t1:.3f} s, launch {t3 - t2:.3f} s ({n / (t3 - t2):,.0f} threads/s)")
        t0 = t1 = time.perf_counter()
    return 0


if __name__ == "__main__":
    sys.exit(main())
