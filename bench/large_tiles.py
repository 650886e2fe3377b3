"""Large tiles through layout conversions: which ones tilecore and tileiras accept, and the shared memory each uses.

Each case is a small cuTile kernel whose tile is large (256 x 256 f32 = 256 KiB, 512 x 128, 128 x 512, f16 / bf16,
3-D tiles) moved between layouts: a transpose, a 3-D permute, a reduction along either axis, a reshape, a cat of two
big tiles, an extract, a broadcast, a big MMA accumulator stored transposed or reduced. For every case and SM the
script prints whether tilecore compiles it (and the bytes of shared memory its kernel declares: the scratch buffer,
static or dynamic) and whether NVIDIA's tileiras compiles the same bytecode (and the shared memory its cubin uses,
``cuobjdump --dump-resource-usage``).

    python bench/large_tiles.py [--sm sm_90a ...] [--case transpose ...] [--no-tileiras]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import cuda.tile as ct
import numpy as np

import tilecore.cutile as tc
from tilecore.errors import TilecoreError

ConstInt = ct.Constant[int]
BIN = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages", "nvidia",
                   "cu13", "bin")
TILEIRAS_GPU = {"sm_80": "sm_80", "sm_90a": "sm_90", "sm_100a": "sm_100"}


@ct.kernel
def transpose(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0, 0), ct.transpose(ct.load(X, (0, 0), (M, N))))


@ct.kernel
def transpose_bf16(X, Y, M: ConstInt, N: ConstInt):
    t = ct.transpose(ct.bitcast(ct.load(X, (0, 0), (M, N)), ct.bfloat16))
    ct.store(Y, (0, 0), ct.bitcast(t, ct.uint16))


@ct.kernel
def permute3(X, Y, A: ConstInt, B: ConstInt, C: ConstInt):
    ct.store(Y, (0, 0, 0), ct.permute(ct.load(X, (0, 0, 0), (A, B, C)), (2, 0, 1)))


@ct.kernel
def sum_axis0(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0,), ct.sum(ct.load(X, (0, 0), (M, N)), axis=0))


@ct.kernel
def sum_axis1(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0,), ct.sum(ct.load(X, (0, 0), (M, N)), axis=1))


@ct.kernel
def cumsum_axis0(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0, 0), ct.cumsum(ct.load(X, (0, 0), (M, N)), axis=0))


@ct.kernel
def reshape(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0, 0), ct.reshape(ct.load(X, (0, 0), (M, N)), (N, M)))


@ct.kernel
def cat(X, Y, M: ConstInt, N: ConstInt):
    a = ct.load(X, (0, 0), (M, N))
    b = ct.load(X, (1, 0), (M, N))
    ct.store(Y, (0, 0), ct.cat((a, b), 0))


@ct.kernel
def extract(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0, 0), ct.extract(ct.load(X, (0, 0), (M, N)), (1, 0), (M // 2, N)))


@ct.kernel
def broadcast(X, Y, M: ConstInt, N: ConstInt):
    t = ct.reshape(ct.load(X, (0, 0), (M, N)), (M, 1, N))
    ct.store(Y, (0, 0, 0), ct.broadcast_to(t, (M, 2, N)))


@ct.kernel
def mma_transposed(A, B, Y, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    acc = ct.mma(ct.load(A, (0, 0), (M, K)), ct.load(B, (0, 0), (K, N)), acc)
    ct.store(Y, (0, 0), ct.transpose(acc))


@ct.kernel
def mma_sum_axis0(A, B, Y, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    acc = ct.mma(ct.load(A, (0, 0), (M, K)), ct.load(B, (0, 0), (K, N)), acc)
    ct.store(Y, (0,), ct.sum(acc, axis=0))


def _z(shape, dt):
    return np.zeros(shape, dt)


def cases():
    """(name, kernel, args) per case."""
    out = []
    for dt in (np.float32, np.float16, "bfloat16"):
        d = _dtype(dt)
        tag = np.dtype(d).name if dt != "bfloat16" else "bf16"
        for m, n in ((256, 256), (512, 128), (128, 512)):
            out.append((f"transpose {m}x{n} {tag}", transpose_bf16 if tag == "bf16" else transpose, (_z((m, n), d), _z((n, m), d), m, n)))
    f = np.float32
    out += [
        ("permute3 16x64x64 f32", permute3, (_z((16, 64, 64), f), _z((64, 16, 64), f), 16, 64, 64)),
        ("sum axis0 256x256 f32", sum_axis0, (_z((256, 256), f), _z((256,), f), 256, 256)),
        ("sum axis1 256x256 f32", sum_axis1, (_z((256, 256), f), _z((256,), f), 256, 256)),
        ("cumsum axis0 256x256 f32", cumsum_axis0, (_z((256, 256), f), _z((256, 256), f), 256, 256)),
        ("reshape 256x256 f32", reshape, (_z((256, 256), f), _z((256, 256), f), 256, 256)),
        ("cat 2x128x256 f32", cat, (_z((256, 256), f), _z((256, 256), f), 128, 256)),
        ("extract 256x256 f32", extract, (_z((256, 256), f), _z((128, 256), f), 256, 256)),
        ("broadcast 128x256 f32 x2", broadcast, (_z((128, 256), f), _z((128, 2, 256), f), 128, 256)),
    ]
    h = np.float16
    for m, n in ((256, 256), (128, 256)):
        out.append((f"mma {m}x{n} f32 acc transposed", mma_transposed,
                    (_z((m, 32), h), _z((32, n), h), _z((n, m), f), m, n, 32)))
    out.append(("mma 256x256 f32 acc sum axis0", mma_sum_axis0,
                (_z((256, 32), h), _z((32, 256), h), _z((256,), f), 256, 256, 32)))
    return out


def _dtype(dt):
    return np.uint16 if dt == "bfloat16" else dt  # bf16 tiles: bit patterns (transpose_bf16)


def tilecore_smem(kernel, args, sm):
    """(accepted, bytes of shared memory or the error's first line, seconds)."""
    t0 = time.perf_counter()
    try:
        k = tc.compile(kernel, args, gpu_name=sm)
    except TilecoreError as e:
        why = re.sub(r"^error: \S+:\d+:\d+: ", "", str(e).splitlines()[0])
        return False, re.sub(r"kernel '\w+' needs (\d+) bytes of shared memory.*", r"needs \1 B smem", why)[:60], \
            time.perf_counter() - t0, None
    text = str(k.module)
    static = sum(int(n) for n in re.findall(r"llvm\.mlir\.global internal @\w*smem\w*\(\S*\)[^\n]*?!llvm\.array<(\d+) x i8>"
                                            r"[^\n]*addr_space = 3", text))
    static += sum(int(n) for n in re.findall(r"llvm\.mlir\.global internal @\w*smem\w*\([^\n]*addr_space = 3[^\n]*"
                                             r"!llvm\.array<(\d+) x i8>", text))
    return True, max(static, k.contract.shared_bytes), time.perf_counter() - t0, k.bytecode


def tileiras_smem(bytecode, sm):
    """(accepted, bytes of shared memory the cubin uses or the error's last line, seconds)."""
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.tileirbc"), os.path.join(d, "k.cubin")
        with open(src, "wb") as fh:
            fh.write(bytecode)
        t0 = time.perf_counter()
        r = subprocess.run([os.path.join(BIN, "tileiras"), f"--gpu-name={TILEIRAS_GPU[sm]}", "--opt-level=3",
                            f"--output-file={cubin}", src], capture_output=True, text=True, timeout=600)
        dt = time.perf_counter() - t0
        if r.returncode:
            lines = [x for x in (r.stderr + r.stdout).splitlines() if x.strip()]
            return False, lines[-1][:60] if lines else f"exit {r.returncode}", dt
        u = subprocess.run([os.path.join(BIN, "cuobjdump"), "--dump-resource-usage", cubin], capture_output=True,
                           text=True).stdout
        m = re.search(r"SHARED:(\d+)", u)
        return True, int(m.group(1)) if m else "?", dt


def export(kernel, args):
    from tilecore.cutile.kernel import export_bytecode
    from tilecore.cutile.specialize import bind, kernel_name

    specs = bind(kernel, args)[0]
    return export_bytecode(kernel, specs, kernel_name(kernel))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sm", nargs="*", default=["sm_80", "sm_90a", "sm_100a"])
    ap.add_argument("--case", nargs="*", default=None, help="substrings of case names")
    ap.add_argument("--no-tileiras", action="store_true")
    a = ap.parse_args(argv)
    print(f"{'case':30} {'sm':8} {'tilecore':>30} {'tileiras':>30}")
    for name, kernel, args in cases():
        if a.case and not any(s in name for s in a.case):
            continue
        for sm in a.sm:
            ok, smem, t1, _ = tilecore_smem(kernel, args, sm)
            tl = f"yes {smem} B ({t1:.0f} s)" if ok else f"no: {smem}"
            if a.no_tileiras:
                ti = "-"
            else:
                ok2, smem2, t2 = tileiras_smem(export(kernel, args), sm)
                ti = f"yes {smem2} B ({t2:.0f} s)" if ok2 else f"no: {smem2}"
            print(f"{name:30} {sm:8} {tl:>30} {ti:>30}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
