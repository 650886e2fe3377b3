"""Stage 6 throughput: ``convert-nvgpu-and-gpu-to-nvvm`` on synthetic gpu modules of 10k and 100k ops.

Usage: python bench/stage6.py [--sizes 10000,100000] [--repeat 3]

Each module is one kernel whose body repeats a mix of gpu ops that the stage's Python
patterns lower (index queries, barriers, shuffles, subgroup reductions, libdevice math),
each feeding a store so nothing is dead. Prints, per size: source ops lowered, the best
wall time of the whole stage (patterns + upstream native passes + legality + verify),
ops/s, then the large/small time ratio (linear scaling = size ratio) and the same modules
through upstream's C++ ``convert-gpu-to-nvvm`` alone, as a ratio. Targets (issue 3):
>= 20,000 ops/s and a 100k/10k time ratio <= 11.
"""

from __future__ import annotations

import argparse
import time

from tilecore.compiler import compile_module
from tilecore.conversion import run_native_pipeline
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.targets import resolve_target

STAGE = "convert-nvgpu-and-gpu-to-nvvm"

# One group: 8 gpu ops (index query x2, shuffle, subgroup_reduce, math x2, barrier, lane id).
GROUP = """      %t{i} = gpu.thread_id x
      %b{i} = gpu.block_id y
      %s{i} = arith.addi %t{i}, %b{i} : index
      %v{i} = arith.index_cast %s{i} : index to i32
      %f{i} = arith.sitofp %v{i} : i32 to f32
      %e{i} = math.exp %f{i} : f32
      %q{i} = math.sqrt %e{i} : f32
      %r{i}, %ok{i} = gpu.shuffle xor %q{i}, %c1, %c32 : f32
      %u{i} = gpu.subgroup_reduce add %r{i} : (f32) -> f32
      %l{i} = gpu.lane_id
      %li{i} = arith.index_cast %l{i} : index to i32
      gpu.barrier
      llvm.store %u{i}, %out : f32, !llvm.ptr<1>
      llvm.store %li{i}, %iout : i32, !llvm.ptr<1>
"""
GPU_OPS_PER_GROUP = 8


def module_text(groups: int, with_reduce: bool = True) -> str:
    group = GROUP if with_reduce else GROUP.replace(
        "      %u{i} = gpu.subgroup_reduce add %r{i} : (f32) -> f32\n", "").replace("%u{i}, %out", "%r{i}, %out")
    body = "".join(group.format(i=i) for i in range(groups))
    return f"""module attributes {{gpu.container_module}} {{
  gpu.module @m {{
    gpu.func @k(%out: !llvm.ptr<1>, %iout: !llvm.ptr<1>) kernel {{
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
{body}      gpu.return
    }}
  }}
}}"""


def time_stage(pm, text: str, repeat: int) -> float:
    target = resolve_target("sm_80", pm.targets())
    best = None
    for _ in range(repeat):
        ctx = pm.make_context()
        with ctx:
            from tilecore.mlir import ir

            m = ir.Module.parse(text)
        t0 = time.perf_counter()
        compile_module(m, target, CompileOptions(emit="mlir"), pm, stages=[STAGE])
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def time_upstream(pm, text: str, repeat: int) -> float:
    from tilecore.mlir import ir

    best = None
    for _ in range(repeat):
        ctx = pm.make_context()
        with ctx:
            m = ir.Module.parse(text)
        t0 = time.perf_counter()
        run_native_pipeline(m.operation, "gpu.module(convert-gpu-to-nvvm)", ctx)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="gpu ops per module (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    pm = PluginManager(disabled=["thirdparty"])
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = []
    print(f"{'gpu ops':>8} {'stage s':>9} {'ops/s':>9} | same module minus subgroup_reduce (upstream cannot "
          f"lower f32 reductions): {'stage s':>8} {'upstream C++ s':>15} {'stage/upstream':>15}")
    for n in sizes:
        groups = max(1, n // GPU_OPS_PER_GROUP)
        ops = groups * GPU_OPS_PER_GROUP
        t = time_stage(pm, module_text(groups), a.repeat)
        common = module_text(groups, with_reduce=False)
        tc = time_stage(pm, common, a.repeat)
        u = time_upstream(pm, common, a.repeat)
        rows.append((ops, t))
        print(f"{ops:8d} {t:9.3f} {ops / t:9.0f} | {'':>63} {tc:8.3f} {u:15.3f} {tc / u:15.2f}")
    if len(rows) >= 2:
        (n0, t0), (n1, t1) = rows[0], rows[-1]
        print(f"time ratio {n1}/{n0} ops: {t1 / t0:.2f} (linear would be {n1 / n0:.1f}; target <= 11)")
    print("target: >= 20,000 ops/s")


if __name__ == "__main__":
    main()
