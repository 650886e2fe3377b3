"""Stage 6 throughput: ``convert-nvgpu-and-gpu-to-nvvm`` on synthetic modules of 10k and 100k gpu / nvgpu ops.

Usage: python bench/stage6.py [--sizes 10000,100000] [--repeat 3] [--mix gpu,nvgpu]

Each module is one kernel whose body repeats a group of ops the stage lowers, each feeding a
store so nothing is dead. Mix ``gpu`` (sm_80): index queries, barrier, shuffle, subgroup
reduction, libdevice math (8 gpu ops per group). Mix ``nvgpu`` (sm_90a): the gpu group plus
nvgpu.rcp, two nvgpu.ldmatrix, nvgpu.mma.sync, mbarrier arrive + test.wait (14 ops per group).
Prints, per mix and size: ops lowered, the best wall time of the whole stage (patterns +
upstream native passes + legality + verify), ops/s; the large/small time ratio (linear = size
ratio); and the same modules without the subgroup reductions (upstream cannot lower f32
reductions) through upstream's C++ passes alone (``convert-nvgpu-to-nvvm``,
``convert-gpu-to-nvvm``) as a ratio. Targets (issue 3): >= 20,000 ops/s, 100k/10k ratio <= 11.
"""

from __future__ import annotations

import argparse
import json
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

# The nvgpu part of a group: 6 nvgpu ops (rcp, ldmatrix x2, mma.sync, mbarrier arrive + test.wait).
NVGPU_GROUP = """      %x{i} = vector.broadcast %q{i} : f32 to vector<4xf32>
      %rc{i} = nvgpu.rcp %x{i} {{rounding = approx, ftz}} : vector<4xf32>
      llvm.store %rc{i}, %vout : vector<4xf32>, !llvm.ptr<1>
      %la{i} = nvgpu.ldmatrix %sm[%z, %z] {{transpose = false, numTiles = 4 : i32}} : memref<128x128xf16, 3> -> vector<4x2xf16>
      %lb{i} = nvgpu.ldmatrix %sm[%z, %z] {{transpose = true, numTiles = 2 : i32}} : memref<128x128xf16, 3> -> vector<2x2xf16>
      %mm{i} = nvgpu.mma.sync (%la{i}, %lb{i}, %acc) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %mr{i} = vector.extract %mm{i}[1] : vector<2xf32> from vector<2x2xf32>
      llvm.store %mr{i}, %vout : vector<2xf32>, !llvm.ptr<1>
      %tk{i} = nvgpu.mbarrier.arrive %bar[%z] : !bar -> !nvgpu.mbarrier.token
      %dn{i} = nvgpu.mbarrier.test.wait %bar[%z], %tk{i} : !bar, !nvgpu.mbarrier.token
      llvm.store %dn{i}, %bout : i1, !llvm.ptr<1>
"""
NVGPU_OPS_PER_GROUP = 6
MIXES = {"gpu": ("sm_80", GPU_OPS_PER_GROUP), "nvgpu": ("sm_90a", GPU_OPS_PER_GROUP + NVGPU_OPS_PER_GROUP)}


def module_text(groups: int, with_reduce: bool = True, mix: str = "gpu") -> str:
    group = GROUP if with_reduce else GROUP.replace(
        "      %u{i} = gpu.subgroup_reduce add %r{i} : (f32) -> f32\n", "").replace("%u{i}, %out", "%r{i}, %out")
    if mix == "nvgpu":
        group += NVGPU_GROUP
    body = "".join(group.format(i=i) for i in range(groups))
    prologue = ""
    aliases = ""
    wg = ""
    if mix == "nvgpu":
        aliases = "!bar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>\n"
        wg = " workgroup(%sm : memref<128x128xf16, 3>)"
        prologue = ("      %z = arith.constant 0 : index\n      %acc = arith.constant dense<0.0> : vector<2x2xf32>\n"
                    "      %bar = nvgpu.mbarrier.create -> !bar\n")
    return f"""{aliases}module attributes {{gpu.container_module}} {{
  gpu.module @m {{
    gpu.func @k(%out: !llvm.ptr<1>, %iout: !llvm.ptr<1>, %vout: !llvm.ptr<1>, %bout: !llvm.ptr<1>){wg} kernel {{
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
{prologue}{body}      gpu.return
    }}
  }}
}}"""


def time_stage(pm, text: str, repeat: int, gpu: str = "sm_80") -> float:
    target = resolve_target(gpu, pm.targets())
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
        run_native_pipeline(m.operation, "gpu.module(convert-nvgpu-to-nvvm,convert-gpu-to-nvvm)", ctx)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="ops per module (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mix", default="gpu,nvgpu", help="module kinds: gpu, nvgpu (comma-separated)")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    a = ap.parse_args()
    pm = PluginManager(disabled=["thirdparty"])
    sizes = [int(s) for s in a.sizes.split(",")]
    report = {"sizes": sizes, "repeat": a.repeat, "mixes": {}}
    for mix in a.mix.split(","):
        gpu, per_group = MIXES[mix]
        rows = []
        print(f"mix {mix} ({gpu}, {per_group} ops per group)")
        print(f"{'ops':>8} {'stage s':>9} {'ops/s':>9} | without subgroup_reduce: {'stage s':>8} "
              f"{'upstream C++ s':>15} {'stage/upstream':>15}")
        for n in sizes:
            groups = max(1, n // per_group)
            ops = groups * per_group
            t = time_stage(pm, module_text(groups, mix=mix), a.repeat, gpu)
            common = module_text(groups, with_reduce=False, mix=mix)
            tc = time_stage(pm, common, a.repeat, gpu)
            u = time_upstream(pm, common, a.repeat)
            rows.append({"ops": ops, "stage_s": t, "ops_per_s": ops / t, "no_reduce_stage_s": tc,
                         "upstream_s": u, "stage_over_upstream": tc / u})
            print(f"{ops:8d} {t:9.3f} {ops / t:9.0f} | {'':>24} {tc:8.3f} {u:15.3f} {tc / u:15.2f}")
        entry = {"rows": rows}
        if len(rows) >= 2:
            r0, r1 = rows[0], rows[-1]
            entry["time_ratio"] = r1["stage_s"] / r0["stage_s"]
            print(f"time ratio {r1['ops']}/{r0['ops']} ops: {entry['time_ratio']:.2f} "
                  f"(linear would be {r1['ops'] / r0['ops']:.1f}; target <= 11)")
        report["mixes"][mix] = entry
    print("target: >= 20,000 ops/s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
