"""Run tilecore's cubins on a real GPU and compare with numpy (the emulator's checks, on hardware).

Two halves, so the GPU machine needs neither MLIR nor tilecore:

    python scripts/gpu_check.py build DIR [--gpu-name sm_90a]   # here: compile the kernels to DIR/*.cubin
    python scripts/gpu_check.py run DIR                         # there: CuPy launches, numpy references
    python scripts/gpu_check.py cutile                          # there: tilecore.cutile.launch on CuPy arrays

``run`` also runs the generated cuTile kernels of plugins/tileas/tests/cutile_kernels.py differentially:
ours and tileiras' cubins on the same random inputs (each kernel in its own process, so a fault stays
contained), every array compared after the launch.

``cutile`` (on the GPU machine, with tilecore and cuda-core installed there: ``pip install tilecore[cuda]``)
launches cuTile kernels through ``tilecore.cutile.launch`` on CuPy arrays (PyTorch tensors when CuPy is
missing): compiled there for the device, cubin loaded and launched by cuda-core with tilecore's launch
contract, results compared with numpy; then the first call and the cached call are timed.

``run`` prints one line per kernel (max error, verdict, median kernel time over 50 launches) and exits 1
if any kernel is wrong. Where ``build`` finds NVIDIA's ``tileiras`` it also compiles the corpus kernels with
it (``--gpu-name=sm_90 --opt-level=3``) and ``run`` checks and times those cubins too, for the ratio.
Kernels: the visible corpus (../shared/corpus/visible) and gpu-dialect kernels of the nvgpu
lowering (cp.async, ldmatrix, mma.sync, mbarrier), with the launch shapes of the emulator tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "corpus", "visible")
f16, f32, i32 = np.float16, np.float32, np.int32


def cdiv(a, b):
    return -(-a // b)


# An nvgpu kernel (one warp): cp.async A (16x16 f16) and B^T (8x16 f16) into shared memory, wait,
# ldmatrix the fragments (A x4, B x2), mma.sync m16n8k16 f32 accumulate, store D row-major (16x8 f32)
# with the m16n8 accumulator layout (row = lane/4 [+8], col = 2*(lane%4) [+1]).
MMA_KERNEL = """module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @mma_ldmatrix_cp_async(%a: memref<16x16xf16, 1>, %bt: memref<8x16xf16, 1>, %d: memref<16x8xf32, 1>)
        workgroup(%sa : memref<16x16xf16, 3>, %sb : memref<8x16xf16, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %lane = gpu.thread_id x
      // 32 lanes copy 16 bytes (8 f16) each: A is 16 rows x 2 chunks, B^T 8 rows x 2 chunks
      %row = arith.divui %lane, %c2 : index
      %half = arith.remui %lane, %c2 : index
      %col = arith.muli %half, %c8 : index
      %t0 = nvgpu.device_async_copy %a[%row, %col], %sa[%row, %col], 8 : memref<16x16xf16, 1> to memref<16x16xf16, 3>
      %is_b = arith.cmpi ult, %lane, %c16 : index
      %brow = arith.remui %row, %c8 : index
      %t1 = nvgpu.device_async_copy %bt[%brow, %col], %sb[%brow, %col], 8 : memref<8x16xf16, 1> to memref<8x16xf16, 3>
      %g = nvgpu.device_async_create_group %t0, %t1
      nvgpu.device_async_wait %g {numGroups = 0 : i32}
      gpu.barrier
      // ldmatrix addresses: lane l points at row (l % 16), column 8 * (l / 16) of A; row (l % 8), column 8 * ((l / 8) % 2) of B^T
      %arow = arith.remui %lane, %c16 : index
      %ahalf = arith.divui %lane, %c16 : index
      %acol = arith.muli %ahalf, %c8 : index
      %fa = nvgpu.ldmatrix %sa[%arow, %acol] {numTiles = 4 : i32, transpose = false} : memref<16x16xf16, 3> -> vector<4x2xf16>
      %brow2 = arith.remui %lane, %c8 : index
      %bq = arith.divui %lane, %c8 : index
      %bh = arith.remui %bq, %c2 : index
      %bcol = arith.muli %bh, %c8 : index
      %fb = nvgpu.ldmatrix %sb[%brow2, %bcol] {numTiles = 2 : i32, transpose = false} : memref<8x16xf16, 3> -> vector<2x2xf16>
      %zero = arith.constant dense<0.0> : vector<2x2xf32>
      %acc = nvgpu.mma.sync (%fa, %fb, %zero) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %r0 = arith.divui %lane, %c4 : index
      %r1 = arith.addi %r0, %c8 : index
      %q = arith.remui %lane, %c4 : index
      %k0 = arith.muli %q, %c2 : index
      %k1 = arith.addi %k0, %c1 : index
      %d00 = vector.extract %acc[0, 0] : f32 from vector<2x2xf32>
      %d01 = vector.extract %acc[0, 1] : f32 from vector<2x2xf32>
      %d10 = vector.extract %acc[1, 0] : f32 from vector<2x2xf32>
      %d11 = vector.extract %acc[1, 1] : f32 from vector<2x2xf32>
      memref.store %d00, %d[%r0, %k0] : memref<16x8xf32, 1>
      memref.store %d01, %d[%r0, %k1] : memref<16x8xf32, 1>
      memref.store %d10, %d[%r1, %k0] : memref<16x8xf32, 1>
      memref.store %d11, %d[%r1, %k1] : memref<16x8xf32, 1>
      gpu.return
    }
  }
}
"""

# An mbarrier kernel (one CTA of 128 threads): thread 0 inits a barrier for 128 arrivals, every
# thread arrives and spins on test.wait; each thread then writes 1 (the phase completed).
MBARRIER_KERNEL = """!bar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @mbarrier_phase(%out: memref<128xi32, 1>) kernel {
      %c0 = arith.constant 0 : index
      %n = arith.constant 128 : index
      %true = arith.constant true
      %tid = gpu.thread_id x
      %bar = nvgpu.mbarrier.create -> !bar
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        nvgpu.mbarrier.init %bar[%c0], %n : !bar
      }
      gpu.barrier
      %tok = nvgpu.mbarrier.arrive %bar[%c0] : !bar -> !nvgpu.mbarrier.token
      scf.while : () -> () {
        %ok = nvgpu.mbarrier.test.wait %bar[%c0], %tok : !bar, !nvgpu.mbarrier.token
        %again = arith.xori %ok, %true : i1
        scf.condition(%again)
      } do {
        scf.yield
      }
      %v = arith.constant 1 : i32
      memref.store %v, %out[%tid] : memref<128xi32, 1>
      gpu.return
    }
  }
}
"""


# A TMA kernel (one CTA): thread 0 initialises an mbarrier for one arrival, arrives with expect_tx (4096
# bytes) and issues a 2-D TMA load of a 32x32 f32 box at (16, 8) of the source through the tensor map;
# everyone waits on phase 0 with try_wait.parity, then copies the box out. (TMA needs a 128-byte aligned
# shared destination; the lowering raises the workgroup buffer's alignment, none is declared here.)
TMA_KERNEL = """!bar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!tm = !nvgpu.tensormap.descriptor<tensor = memref<32x32xf32, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @tma_box(%tmap: !tm, %src: memref<64x64xf32, 1>, %out: memref<32x32xf32, 1>)
        workgroup(%buf : memref<32x32xf32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %bytes = arith.constant 4096 : index
      %ticks = arith.constant 1000000 : index
      %false = arith.constant false
      %tid = gpu.thread_id x
      %bar = nvgpu.mbarrier.create -> !bar
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !bar
      }
      gpu.barrier
      scf.if %first {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %bytes : !bar
        nvgpu.tma.async.load %tmap[%c16, %c8], %bar[%c0] to %buf : !tm, !bar -> memref<32x32xf32, 3>
      }
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !bar
      %n = arith.constant 1024 : index
      scf.for %e = %tid to %n step %c128 {
        %r = arith.divui %e, %c32 : index
        %c = arith.remui %e, %c32 : index
        %v = memref.load %buf[%r, %c] : memref<32x32xf32, 3>
        memref.store %v, %out[%r, %c] : memref<32x32xf32, 1>
      }
      gpu.return
    }
  }
}
"""


# A WGMMA kernel (one warpgroup): A (64x64 f16) and B^T (8x64 f16) arrive pre-swizzled (128-byte
# swizzle, as TMA would leave them) and are copied to shared memory (1024-byte aligned by the lowering); after a
# generic -> async proxy fence, warpgroup.mma computes D = A[:, :16] @ B^T[:, :16]^T (m64n8k16) and
# warpgroup.mma.store writes the 64x8 f32 result.
WGMMA_KERNEL = """!tmA = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!tmB = !nvgpu.tensormap.descriptor<tensor = memref<8x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!dA = !nvgpu.warpgroup.descriptor<tensor = memref<64x16xf16, 3>>
!dB = !nvgpu.warpgroup.descriptor<tensor = memref<16x8xf16, 3>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x8xf32>>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @wgmma_m64n8k16(%tA: !tmA, %tB: !tmB, %a: memref<4096xf16, 1>, %b: memref<512xf16, 1>,
                             %d: memref<64x8xf32, 1>)
        workgroup(%sa : memref<64x64xf16, 3>,
                  %sb : memref<8x64xf16, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %c512 = arith.constant 512 : index
      %c4096 = arith.constant 4096 : index
      %tid = gpu.thread_id x
      scf.for %e = %tid to %c4096 step %c128 {
        %r = arith.divui %e, %c64 : index
        %c = arith.remui %e, %c64 : index
        %v = memref.load %a[%e] : memref<4096xf16, 1>
        memref.store %v, %sa[%r, %c] : memref<64x64xf16, 3>
      }
      scf.for %e = %tid to %c512 step %c128 {
        %r = arith.divui %e, %c64 : index
        %c = arith.remui %e, %c64 : index
        %v = memref.load %b[%e] : memref<512xf16, 1>
        memref.store %v, %sb[%r, %c] : memref<8x64xf16, 3>
      }
      llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "" : () -> ()
      gpu.barrier
      %dA = nvgpu.warpgroup.generate.descriptor %sa, %tA : memref<64x64xf16, 3>, !tmA -> !dA
      %dB = nvgpu.warpgroup.generate.descriptor %sb, %tB : memref<8x64xf16, 3>, !tmB -> !dB
      %z = nvgpu.warpgroup.mma.init.accumulator -> !acc
      %r = nvgpu.warpgroup.mma %dA, %dB, %z : !dA, !dB, !acc -> !acc
      nvgpu.warpgroup.mma.store %r, %d : !acc to memref<64x8xf32, 1>
      gpu.return
    }
  }
}
"""


def swizzle128(x):
    """Rows of 128 bytes with their 16-byte chunks permuted as TMA's 128B swizzle stores them."""
    rows = x.reshape(x.shape[0], -1).view(np.uint8).reshape(x.shape[0], 8, 16)
    out = np.empty_like(rows)
    for r in range(rows.shape[0]):
        for c in range(8):
            out[r, c ^ (r % 8)] = rows[r, c]
    return out.reshape(-1).view(x.dtype)


def arr(name):
    """An array parameter in the cuTile kernel ABI: pointer, shape, strides (elements)."""
    return {"array": name, "abi": "cutile"}


# name -> (source, grid, inputs {name: (shape, dtype)}, args, outputs, reference expression, tolerance)
CASES = {
    "vadd_f32": ("corpus", [cdiv(1000, 128), 1, 1], {"a": ([1000], "f32"), "b": ([1000], "f32"), "c": ([1000], "f32=0")},
                 [arr("a"), arr("b"), arr("c")], "c", "a + b", 0),
    "saxpy_f32": ("corpus", [cdiv(1000, 256), 1, 1], {"x": ([1000], "f32"), "y": ([1000], "f32"), "o": ([1000], "f32=0")},
                  [{"f32": 2.5}, arr("x"), arr("y"), arr("o")], "o", "np.float32(2.5) * x + y", 1e-6),
    "relu_f16": ("corpus", [cdiv(20, 16), cdiv(100, 64), 1], {"x": ([20, 100], "f16"), "y": ([20, 100], "f16=0")},
                 [arr("x"), arr("y")], "y", "np.maximum(x, 0)", 0),
    "gelu_f16": ("corpus", [cdiv(600, 256), 1, 1], {"x": ([600], "f16"), "y": ([600], "f16=0")}, [arr("x"), arr("y")],
                 "y", "(0.5 * x.astype(np.float32) * (1 + np.tanh(np.float32(0.7978845608) * (x.astype(np.float32) + "
                      "np.float32(0.044715) * x.astype(np.float32) ** 3)))).astype(np.float16)", 2e-3),
    "rowsum_f32": ("corpus", [cdiv(20, 8), 1, 1], {"x": ([20, 256], "f32"), "o": ([20], "f32=0")}, [arr("x"), arr("o")],
                   "o", "x.sum(1)", 1e-4),
    "row_softmax_f16": ("corpus", [cdiv(5, 2), 1, 1], {"x": ([5, 512], "f16"), "y": ([5, 512], "f16=0")},
                        [arr("x"), arr("y")], "y",
                        "(lambda e: (e / e.sum(1, keepdims=True)).astype(np.float16))(np.exp(x.astype(np.float32) - "
                        "x.astype(np.float32).max(1, keepdims=True)))", 1e-2),
    "transpose_f32": ("corpus", [cdiv(40, 32), cdiv(70, 64), 1], {"x": ([40, 70], "f32"), "y": ([70, 40], "f32=0")},
                      [arr("x"), arr("y")], "y", "x.T", 0),
    "rownorm_loop_if_f32": ("corpus", [cdiv(10, 4), 1, 1], {"x": ([10, 300], "f32"), "o": ([10], "f32=0")},
                            [arr("x"), arr("o"), {"i32": 2}], "o", "np.sqrt((x * x).sum(1))", 1e-4),
    "matmul_f16": ("corpus", [2, 2, 1], {"a": ([200, 100], "f16"), "b": ([100, 150], "f16"), "c": ([200, 150], "f16=0")},
                   [arr("a"), arr("b"), arr("c")], "c",
                   "(a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)", 1e-2),
    # bandwidth-sized problems of the same kernels (for the timings)
    "vadd_f32@16M": ("corpus", [cdiv(1 << 24, 128), 1, 1], {"a": ([1 << 24], "f32"), "b": ([1 << 24], "f32"),
                                                          "c": ([1 << 24], "f32=0")},
                     [arr("a"), arr("b"), arr("c")], "c", "a + b", 0),
    "row_softmax_f16@8192x512": ("corpus", [cdiv(8192, 2), 1, 1], {"x": ([8192, 512], "f16"),
                                                                    "y": ([8192, 512], "f16=0")},
                                 [arr("x"), arr("y")], "y",
                                 "(lambda e: (e / e.sum(1, keepdims=True)).astype(np.float16))(np.exp("
                                 "x.astype(np.float32) - x.astype(np.float32).max(1, keepdims=True)))", 1e-2),
    "transpose_f32@4096": ("corpus", [cdiv(4096, 32), cdiv(4096, 64), 1], {"x": ([4096, 4096], "f32"),
                                                                           "y": ([4096, 4096], "f32=0")},
                           [arr("x"), arr("y")], "y", "x.T", 0),
    # the same kernel on a problem big enough to time (M = N = K = 2048)
    "matmul_f16@2048": ("corpus", [16, 16, 1], {"a": ([2048, 2048], "f16"), "b": ([2048, 2048], "f16"),
                                                "c": ([2048, 2048], "f16=0")}, [arr("a"), arr("b"), arr("c")], "c",
                        "(a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)", 1e-2),
    "mma_ldmatrix_cp_async": ("mma", [1, 1, 1], {"a": ([16, 16], "f16"), "bt": ([8, 16], "f16"), "d": ([16, 8], "f32=0")},
                              [{"array": "a", "abi": "memref"}, {"array": "bt", "abi": "memref"},
                               {"array": "d", "abi": "memref"}], "d",
                              "a.astype(np.float32) @ bt.astype(np.float32).T", 1e-3),
    "tma_box": ("tma", [1, 1, 1], {"src": ([64, 64], "f32"), "out": ([32, 32], "f32=0")},
                [{"tensormap": "src", "box": [32, 32]}, {"array": "src", "abi": "memref"},
                 {"array": "out", "abi": "memref"}], "out", "src[8:40, 16:48]", 0),
    "wgmma_m64n8k16": ("wgmma", [1, 1, 1], {"a": ([64, 64], "f16"), "bt": ([8, 64], "f16"),
                                            "d": ([64, 8], "f32=0")},
                       [{"pointer": "d"}, {"pointer": "d"}, {"swizzled": "a"}, {"swizzled": "bt"},
                        {"array": "d", "abi": "memref"}], "d",
                       "a[:, :16].astype(np.float32) @ bt[:, :16].astype(np.float32).T", 1e-3),
    "mbarrier_phase": ("mbarrier", [1, 1, 1], {"out": ([128], "i32=0")}, [{"array": "out", "abi": "memref"}], "out",
                       "np.ones(128, np.int32)", 0),
}
BLOCK = {"mma_ldmatrix_cp_async": [32, 1, 1]}  # (the others: 128 threads, one warpgroup)
FMA_VARIANTS = {"matmul_f16"}  # also built with --option tileas.dot=fma ("tc-fma" rows)


# generated kernels compared against tileiras (not numpy): the launch-independent ones of the e2e tests
GENERATED = ["int_arith_i32", "uint_ops_u32", "float_unary_f32", "float_binary_f32", "powi_f32", "casts_mixed",
             "where_cmpf_f32", "arange_iota_i32", "cumsum_scan_f32", "cat_extract_insert_f32",
             "reshape_broadcast_f32", "gather_scatter_f32", "atomics_i32", "strided_view_f32", "grid_queries_i32",
             "prod_min_reduce_f32", "while_break_i32", "argmax_rows_f32", "pack_unpack_f16", "matmul_i8"]
GEN_SHAPES = {1: [300], 2: [40, 70], 3: [4, 8, 16]}
GEN_GRID = [8, 8, 1]
# where the defaults make a kernel's result depend on the launch order: racing atomics across the 8
# CTAs of one column, or matmul tiles partly outside unpadded operands
GEN_OVERRIDES = {"atomics_i32": {"grid": [5, 1, 1]},
                 "matmul_i8": {"grid": [2, 2, 1], "shapes": [[128, 64], [64, 128], [128, 128]]}}


def _build_generated(out_dir, gpu, tileiras, specs) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plugins", "tileas", "tests"))
    import cutile_kernels as ck

    from tilecore.compiler import compile_file

    for name in GENERATED:
        path = ck.kernel_path(name)
        res = compile_file(path, gpu)
        with open(os.path.join(out_dir, f"{name}.cubin"), "wb") as fh:
            fh.write(res.artifacts["cubin"])
        _record_tensor_maps(out_dir, f"{name}.cubin", res)
        subprocess.run([tileiras, f"--gpu-name={gpu.rstrip('a')}", "--opt-level=3",
                        f"--output-file={os.path.join(out_dir, name + '.tileiras.cubin')}", path], check=True)
        specs[name] = [p for p in ck.KERNELS[name][1] if isinstance(p, str)]  # ints are compile-time constants
        print(f"built {name} (ours and tileiras)")


def build(out_dir: str, gpu: str) -> None:
    sys.path.insert(0, os.path.dirname(HERE))
    from tilecore.compiler import compile_file, compile_module
    from tilecore.mlir import ir
    from tilecore.options import CompileOptions
    from tilecore.plugins import get_plugin_manager
    from tilecore.targets import resolve_target

    os.makedirs(out_dir, exist_ok=True)
    pm = get_plugin_manager()
    target = resolve_target(gpu, pm.targets())
    for name, case in CASES.items():
        if "@" in name:  # another problem size of a kernel built above
            continue
        if case[0] == "corpus":
            res = compile_file(os.path.join(CORPUS, f"{name}.tileirbc"), gpu)
        else:
            text = {"mma": MMA_KERNEL, "mbarrier": MBARRIER_KERNEL, "tma": TMA_KERNEL, "wgmma": WGMMA_KERNEL}[case[0]]
            with pm.make_context():
                m = ir.Module.parse(text)
            res = compile_module(m, target, CompileOptions(), pm)
        cubin = res.artifacts["cubin"]
        cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
        with open(os.path.join(out_dir, f"{name}.cubin"), "wb") as fh:
            fh.write(cubin)
        _record_tensor_maps(out_dir, f"{name}.cubin", res)
        print(f"built {name}.cubin ({len(cubin)} bytes) for {gpu}")
        if name in FMA_VARIANTS:  # the same kernel with its dots on the CUDA cores, to time both paths
            fma = compile_file(os.path.join(CORPUS, f"{name}.tileirbc"), gpu,
                               CompileOptions(extra={"tileas.dot": "fma"})).artifacts["cubin"]
            with open(os.path.join(out_dir, f"{name}.fma.cubin"), "wb") as fh:
                fh.write(fma)
            print(f"built {name}.fma.cubin ({len(fma)} bytes, --option tileas.dot=fma) for {gpu}")
        tileiras = _tileiras()
        if case[0] == "corpus" and tileiras:
            ti_gpu = gpu.rstrip("a")  # tileiras has no arch-specific spelling
            subprocess.run([tileiras, f"--gpu-name={ti_gpu}", "--opt-level=3",
                            f"--output-file={os.path.join(out_dir, name + '.tileiras.cubin')}",
                            os.path.join(CORPUS, f"{name}.tileirbc")], check=True)
            print(f"built {name}.tileiras.cubin with tileiras for {ti_gpu}")
    generated = {}
    if _tileiras():
        _build_generated(out_dir, gpu, _tileiras(), generated)
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump({"gpu": gpu, "cases": CASES, "block": BLOCK, "generated": generated}, fh)


def _record_tensor_maps(out_dir: str, cubin: str, res) -> None:
    """Keep the kernels' launch contract (tilecore compile --emit metadata: tensor-map recipes, trailing
    parameters the launcher encodes, and dynamic shared memory) next to the cubins, in launch.json."""
    from tilecore.batch import kernel_metadata

    path = os.path.join(out_dir, "launch.json")
    known = json.load(open(path)) if os.path.exists(path) else {}
    if not res.artifacts.get("ptx"):
        return
    known[cubin] = {k["name"]: k for k in kernel_metadata(res)["kernels"]}
    with open(path, "w") as fh:
        json.dump(known, fh)


def _launch_contract(out_dir: str, cubin: str, name: str) -> dict:
    path = os.path.join(out_dir, "launch.json")
    return (json.load(open(path)).get(cubin, {}).get(name, {}) if os.path.exists(path) else {})


def _with_tensor_maps(out_dir: str, cubin: str, name: str, params: list) -> list:
    """``params`` (the cuTile parameters) followed by the kernel's tensor maps, encoded by the driver from them
    (the launch contract of tilecore.tensormaps), each passed by value as a 128-byte record."""
    from tilecore.tensormaps import MAP_BYTES, TensorMapRecipe, append_maps, cuda_map

    recipes = _launch_contract(out_dir, cubin, name).get("tensor_maps", [])
    if not recipes:
        return params
    record = np.dtype([("bytes", np.uint8, MAP_BYTES)], align=True)

    def as_int(v):
        return int(v.data.ptr) if hasattr(v, "data") and hasattr(v.data, "ptr") else int(v)

    def encode(recipe, ps):
        ints = [as_int(v) for v in ps]
        return np.frombuffer(cuda_map(recipe, ints, ints[recipe.tensor]), record)[0]

    return append_maps([TensorMapRecipe.from_json(r) for r in recipes], params, encode)


def _tileiras() -> str | None:
    import sysconfig

    path = os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "cu13", "bin", "tileiras")
    return path if os.path.exists(path) else shutil.which("tileiras")


def _array(spec, rng):
    shape, dtype = spec
    kind, _, fill = dtype.partition("=")
    np_type = {"f16": f16, "f32": f32, "i32": i32}[kind]
    if fill:
        return np.full(shape, float(fill), np_type).astype(np_type)
    return rng.standard_normal(shape).astype(np_type)


def _tensor_map(cp, dev, host, box):
    """A CUtensorMap (cuTensorMapEncodeTiled, f32, no swizzle) for the 2-D array, copied to device memory."""
    import ctypes

    cuda = ctypes.CDLL("libcuda.so.1")
    tmap = (ctypes.c_uint64 * 16)()
    rank = host.ndim
    dims = (ctypes.c_uint64 * rank)(*reversed(host.shape))  # innermost first
    strides = (ctypes.c_uint64 * (rank - 1))(*reversed(host.strides[:-1]))  # bytes, dims 1..rank-1
    boxes = (ctypes.c_uint32 * rank)(*box)
    ones = (ctypes.c_uint32 * rank)(*([1] * rank))
    err = cuda.cuTensorMapEncodeTiled(tmap, 7, rank, ctypes.c_void_p(dev.data.ptr), dims, strides, boxes, ones,
                                      0, 0, 0, 0)
    if err:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed: {err}")
    return cp.asarray(np.frombuffer(bytes(tmap), np.uint8))


def _launch(cp, path, name, grid, block, params, shared: int = 0):
    """Launch once, synchronise, then time 50 launches with CUDA events; median milliseconds. ``shared``:
    dynamic shared memory per CTA (the kernel's launch contract)."""
    kernel = cp.RawModule(path=path).get_function(name)
    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    kernel(tuple(grid), tuple(block), tuple(params), shared_mem=shared)
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(50):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel(tuple(grid), tuple(block), tuple(params), shared_mem=shared)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def run(out_dir: str) -> int:
    import cupy as cp

    with open(os.path.join(out_dir, "manifest.json")) as fh:
        manifest = json.load(fh)
    rng = np.random.default_rng(7)
    failures = 0
    print(f"{'kernel':24s} {'compiler':9s} {'max rel err':>11s} {'verdict':7s} {'median ms':>9s}")
    for case_name, (_, grid, inputs, args, out_name, ref, tol) in manifest["cases"].items():
        name = case_name.split("@")[0]  # the kernel (its cubin and symbol)
        host = {k: _array(v, rng) for k, v in inputs.items()}
        want = np.asarray(eval(ref, {"np": np}, host), dtype=np.float64)  # noqa: S307 - our own table
        builds = [("tilecore", f"{name}.cubin"), ("tc-fma", f"{name}.fma.cubin"),
                  ("tileiras", f"{name}.tileiras.cubin")]
        for compiler, file in builds:
            path = os.path.join(out_dir, file)
            if not os.path.exists(path):
                continue
            dev = {k: cp.asarray(v) for k, v in host.items()}
            params, keep = [], []
            for a in args:
                if "array" in a:
                    h, d = host[a["array"]], dev[a["array"]]
                    if a["abi"] == "cutile":  # pointer, shape (i32 each), strides in elements (i32 each)
                        params += [d, *[i32(s) for s in h.shape], *[i32(s // h.itemsize) for s in h.strides]]
                    else:  # gpu.func memref argument: allocated, aligned, offset, sizes, strides (i64)
                        params += [d, d, np.int64(0), *[np.int64(s) for s in h.shape],
                                   *[np.int64(s // h.itemsize) for s in h.strides]]
                elif "pointer" in a:  # an unused tensor-map operand: any pointer
                    params.append(dev[a["pointer"]])
                elif "swizzled" in a:  # a 1-D memref argument holding the array pre-swizzled
                    flat = cp.asarray(swizzle128(host[a["swizzled"]]))
                    keep.append(flat)
                    params += [flat, flat, np.int64(0), np.int64(flat.size), np.int64(1)]
                elif "tensormap" in a:
                    params.append(_tensor_map(cp, dev[a["tensormap"]], host[a["tensormap"]], a["box"]))
                elif "f32" in a:
                    params.append(f32(a["f32"]))
                else:
                    params.append(i32(a["i32"]))
            if compiler != "tileiras":
                params = _with_tensor_maps(out_dir, file, name, params)
            shared = _launch_contract(out_dir, file, name).get("dynamic_shared_bytes", 0)
            ms = _launch(cp, path, name, grid, manifest["block"].get(name, [128, 1, 1]), params, shared)
            got = cp.asnumpy(dev[out_name]).astype(np.float64)
            err = float(np.max(np.abs(got - want) / (np.abs(want) + 1.0)))
            ok = err <= tol
            failures += not ok
            print(f"{case_name:24s} {compiler:9s} {err:11.2e} {'ok' if ok else 'WRONG':7s} {ms:9.4f}")
    return 1 if failures else 0


def run_generated(out_dir: str, name: str) -> int:
    """One generated kernel, ours against tileiras' cubin on the same inputs (grid 8 x 8 x 1 unless
    overridden, 128 threads)."""
    import cupy as cp

    with open(os.path.join(out_dir, "manifest.json")) as fh:
        specs = json.load(fh)["generated"][name]
    types = {"f16": f16, "f32": f32, "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": i32,
             "i64": np.int64, "u32": np.uint32, "bf16": None}
    rng = np.random.default_rng(11)
    override = GEN_OVERRIDES.get(name, {})
    shapes = iter(override.get("shapes", []))
    host = []
    for p in specs:
        if "[" in p:
            dt, rank = p[:-1].split("[")
            shape = next(shapes, None) or GEN_SHAPES[int(rank)]
            t = types[dt]
            a = rng.integers(0, 10, shape).astype(t) if np.issubdtype(t, np.integer) else \
                rng.uniform(0.5, 2.0, shape).astype(t)
            host.append(a)
        else:
            host.append(types[p](3 if np.issubdtype(types[p], np.integer) else 1.5))
    outs = {}
    for compiler, file in (("tilecore", f"{name}.cubin"), ("tileiras", f"{name}.tileiras.cubin")):
        dev = [cp.asarray(h) if isinstance(h, np.ndarray) else h for h in host]
        params = []
        for h, d in zip(host, dev):
            if isinstance(h, np.ndarray):
                params += [d, *[i32(x) for x in h.shape], *[i32(x // h.itemsize) for x in h.strides]]
            else:
                params.append(d)
        shared = _launch_contract(out_dir, file, name).get("dynamic_shared_bytes", 0)
        if compiler == "tilecore":
            params = _with_tensor_maps(out_dir, file, name, params)
        kernel = cp.RawModule(path=os.path.join(out_dir, file)).get_function(name)
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        kernel(tuple(override.get("grid", GEN_GRID)), (128, 1, 1), tuple(params), shared_mem=shared)
        cp.cuda.runtime.deviceSynchronize()
        outs[compiler] = [cp.asnumpy(d).astype(np.float64) for h, d in zip(host, dev) if isinstance(h, np.ndarray)]
    err = max(float(np.max(np.abs(a - b) / (np.abs(b) + 1.0), initial=0.0))
              for a, b in zip(outs["tilecore"], outs["tileiras"]))
    ok = err <= 1e-3
    print(f"{name:24s} {'vs tileiras':21s} {err:11.2e} {'ok' if ok else 'DIFFERS'}")
    return 0 if ok else 1


def run_all_generated(out_dir: str) -> int:
    with open(os.path.join(out_dir, "manifest.json")) as fh:
        names = list(json.load(fh).get("generated", {}))
    failures = 0
    for name in names:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "rungen", out_dir, "--kernel", name],
                              capture_output=True, text=True)
        line = proc.stdout.strip() or f"{name:24s} {'vs tileiras':21s} {'-':>11s} FAULT ({proc.stderr.strip()[-120:]})"
        print(line, flush=True)
        failures += proc.returncode != 0
    return failures


def _device_module():
    """(module name, to_device, to_host, a non-default stream, stream synchronize) for CuPy, else PyTorch."""
    try:
        import cupy as cp

        return "cupy", cp.asarray, cp.asnumpy, cp.cuda.Stream(non_blocking=True), lambda s: s.synchronize()
    except ImportError:
        import torch

        return ("torch", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy(), torch.cuda.Stream(),
                lambda s: s.synchronize())


def run_cutile() -> int:
    """cuTile kernels through tilecore.cutile.launch on device arrays (the GPU path of issue 17)."""
    import time

    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plugins", "tileas", "tests"))
    import cutile_kernels as ck

    import tilecore.cutile as tc

    try:
        lib, dev, host, stream, sync = _device_module()
    except ImportError:
        print("error: gpu_check.py cutile needs CuPy or PyTorch (with CUDA) for the device arrays", file=sys.stderr)
        return 1
    rng = np.random.default_rng(3)

    def r(shape, dt=f32):
        return rng.standard_normal(shape).astype(dt)

    a, b = r(100_000), r(100_000)
    x2, x16 = r((40, 70)), r((5, 512), f16)
    ma, mb = r((200, 100), f16), r((100, 150), f16)
    e = np.exp(x16.astype(f32) - x16.astype(f32).max(1, keepdims=True))
    # name, kernel, grid, host inputs, args builder (device arrays in, by position), output position, want, tol
    cases = [
        ("vadd_f32", ck.vadd_f32, cdiv(100_000, 128), [a, b, np.zeros_like(a)], lambda d: (*d, 128), 2, a + b, 0),
        ("saxpy_f32", ck.saxpy_f32, cdiv(100_000, 256), [a, b, np.zeros_like(a)],
         lambda d: (f32(2.5), *d, 256), 2, f32(2.5) * a + b, 1e-6),
        ("transpose_f32", ck.transpose_f32, (cdiv(40, 32), cdiv(70, 64)), [x2, np.zeros((70, 40), f32)],
         lambda d: (*d, 32, 64), 1, x2.T, 0),
        ("row_softmax_f16", ck.row_softmax_f16, cdiv(5, 2), [x16, np.zeros_like(x16)], lambda d: (*d, 2, 512), 1,
         (e / e.sum(1, keepdims=True)).astype(f16), 1e-2),
        ("matmul_f16", ck.matmul_f32acc, (2, 2), [ma, mb, np.zeros((200, 150), f16)], lambda d: (*d, 128, 128, 64), 2,
         (ma.astype(f32) @ mb.astype(f32)).astype(f16), 1e-2),
    ]
    failures = 0
    print(f"tilecore.cutile.launch with {lib} arrays")
    print(f"{'kernel':20s} {'max rel err':>11s} {'verdict':7s} {'first call s':>12s} {'cached call ms':>14s}")
    for name, kernel, grid, inputs, build_args, out, want, tol in cases:
        d = [dev(h) for h in inputs]
        args = build_args(d)
        t = time.perf_counter()
        tc.launch(stream, grid, kernel, args)
        sync(stream)
        first = time.perf_counter() - t
        t = time.perf_counter()
        tc.launch(stream, grid, kernel, args)
        sync(stream)
        cached = time.perf_counter() - t
        got = host(d[out]).astype(np.float64)
        err = float(np.max(np.abs(got - np.asarray(want, np.float64)) / (np.abs(np.asarray(want, np.float64)) + 1)))
        ok = err <= tol
        failures += not ok
        print(f"{name:20s} {err:11.2e} {'ok' if ok else 'WRONG':7s} {first:12.3f} {cached * 1e3:14.3f}")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["build", "run", "rungen", "cutile"])
    ap.add_argument("dir", nargs="?", default=".")
    ap.add_argument("--gpu-name", default="sm_90a")
    ap.add_argument("--kernel", help="rungen: the generated kernel to run")
    a = ap.parse_args()
    if a.mode == "build":
        build(a.dir, a.gpu_name)
        return 0
    if a.mode == "rungen":
        return run_generated(a.dir, a.kernel)
    if a.mode == "cutile":
        return run_cutile()
    bad = run(a.dir)
    bad += run_all_generated(a.dir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
