"""End to end numbers: cuTile kernels compiled for sm_80 run on random inputs and match numpy.

Sizes are chosen so that the last tile is partial (bounds masks and padding are
exercised). Kernels run in ``tilecore.emulate`` when it is installed, otherwise in the
stage-4 reference interpreter (:mod:`stage4_interpreter`) on the output of
``convert-tileas-to-llvm``. Launch contract: grid = tile blocks, block = (128, 1, 1).
Besides the corpus kernels and those of :mod:`cutile_kernels`, this module defines its
own (layernorm, column reduction, column softmax, dynamic loop with if).
"""

from __future__ import annotations

import math
import os
import tempfile

import cuda.tile as ct
import cutile_kernels as ck
import numpy as np
import pytest
from stage4_interpreter import Interpreter
from tileas_test_paths import VISIBLE_CORPUS

from tilecore.compiler import compile_file

CORPUS = VISIBLE_CORPUS
BLOCK = (128, 1, 1)
RNG = np.random.default_rng(1234)
f16, f32, i32 = np.float16, np.float32, np.int32


# ------------------------------------------------------------------------------ own kernels
@ct.kernel
def layernorm_f32(x, w, b, y, TM: ct.Constant[int], N: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(TM, N))
    mean = ct.sum(t, axis=1, keepdims=True) / N
    d = t - mean
    var = ct.sum(d * d, axis=1, keepdims=True) / N
    g = ct.reshape(ct.load(w, index=(0,), shape=(N,)), (1, N))
    h = ct.reshape(ct.load(b, index=(0,), shape=(N,)), (1, N))
    ct.store(y, index=(bid, 0), tile=d * ct.rsqrt(var + 1e-5) * g + h)


@ct.kernel
def colsum_f32(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    j = ct.bid(0)
    acc = ct.full((TN,), 0, dtype=ct.float32)
    for i in range(ct.cdiv(x.shape[0], TM)):
        acc = acc + ct.sum(ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO), axis=0)
    ct.store(out, index=(j,), tile=acc)


@ct.kernel
def col_softmax_f32(x, y, M: ct.Constant[int], TN: ct.Constant[int]):
    j = ct.bid(0)
    t = ct.load(x, index=(0, j), shape=(M, TN))
    e = ct.exp(t - ct.max(t, axis=0, keepdims=True))
    ct.store(y, index=(0, j), tile=e / ct.sum(e, axis=0, keepdims=True))


@ct.kernel
def clamp_loop_if_f32(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    for k in range(n):
        if k % 2 == 0:
            t = t * 1.5
        else:
            t = ct.minimum(t, 4.0)
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def broadcast_outer_f16(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    u = ct.reshape(ct.load(a, index=(i,), shape=(TM,)), (TM, 1))
    v = ct.reshape(ct.load(b, index=(j,), shape=(TN,)), (1, TN))
    ct.store(c, index=(i, j), tile=ct.astype(ct.astype(u, ct.float32) * ct.astype(v, ct.float32), ct.float16))


@ct.kernel
def cumsum_cols_f32(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    j = ct.bid(0)
    ct.store(y, index=(0, j), tile=ct.cumsum(ct.load(x, index=(0, j), shape=(TM, TN)), axis=0))


@ct.kernel
def permute3d_f32(x, y, A: ct.Constant[int], B: ct.Constant[int], C: ct.Constant[int]):
    t = ct.load(x, index=(0, 0, 0), shape=(A, B, C))
    ct.store(y, index=(0, 0, 0), tile=ct.permute(t, (2, 0, 1)))


@ct.kernel
def axpy_f64_i64(a, x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    k = ct.astype(ct.load(n, index=(bid,), shape=(TILE,)), ct.float64)
    ct.store(y, index=(bid,), tile=a * t + k)


@ct.kernel
def max_min_rows_f64(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    """f64 max / min reductions: their identities (-inf / +inf) are 65-bit varints in the bytecode."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(TM, TN))
    ct.store(out, index=(bid,), tile=ct.max(t, axis=1) * 1000.0 + ct.min(t, axis=1))


OWN = {
    "mma_f32": (ck.mma_loop, ["f32[2]", "f32[2]", "f32[2]", 32, 16, 16]),
    # tensor cores (mma.sync) on sm_80: 16x16 tiles (2 blocks per slab, warps 2 and 3 idle); bf16 64x32 tiles
    "mma_f16_f32acc": (ck.mma_loop, ["f16[2]", "f16[2]", "f32[2]", 16, 16, 32]),
    "mma_bf16_f32acc": (ck.mma_loop, ["bf16[2]", "bf16[2]", "f32[2]", 64, 32, 16]),
    "mma_u8": (ck.mma_loop, ["u8[2]", "u8[2]", "i32[2]", 32, 16, 64]),  # mma.sync m16n8k32 u8
    # scans whose rows span 8 threads (4 rows per warp) / 64 threads (too wide for a warp: shared memory)
    "scan_rows_16x16": (ck.cumsum_scan_f32, ["f32[2]", "f32[2]", 16, 16]),
    "scan_rows_2x256": (ck.cumsum_scan_f32, ["f32[2]", "f32[2]", 2, 256]),
    "mma_i8": (ck.mma_loop, ["i8[2]", "i8[2]", "i32[2]", 16, 32, 32]),
    "cumsum_cols_f32": (cumsum_cols_f32, ["f32[2]", "f32[2]", 16, 32]),
    "permute3d_f32": (permute3d_f32, ["f32[3]", "f32[3]", 4, 8, 16]),
    "max_min_rows_f64": (max_min_rows_f64, ["f64[2]", "f64[1]", 4, 64]),
    "axpy_f64_i64": (axpy_f64_i64, ["f64", "f64[1]", "f64[1]", "i64[1]", 128]),
    "layernorm_f32": (layernorm_f32, ["f32[2]", "f32[1]", "f32[1]", "f32[2]", 2, 256]),
    "colsum_f32": (colsum_f32, ["f32[2]", "f32[1]", 16, 32]),
    "col_softmax_f32": (col_softmax_f32, ["f32[2]", "f32[2]", 64, 16]),
    "clamp_loop_if_f32": (clamp_loop_if_f32, ["f32[1]", "f32[1]", "i32", 128]),
    "broadcast_outer_f16": (broadcast_outer_f16, ["f16[1]", "f16[1]", "f16[2]", 16, 32]),
}
_DIR = tempfile.mkdtemp(prefix="tileas-e2e-")


def _path(name: str) -> str:
    if os.path.exists(os.path.join(CORPUS, f"{name}.tileirbc")):
        return os.path.join(CORPUS, f"{name}.tileirbc")
    if name in ck.KERNELS:
        return ck.kernel_path(name)
    path = os.path.join(_DIR, f"{name}.tileirbc")
    return path if os.path.exists(path) else ck.export_spec(*OWN[name], name, path)


def arr(a: np.ndarray) -> list:
    """An array parameter in the kernel ABI: pointer, shape, strides (in elements)."""
    return [a, *[i32(d) for d in a.shape], *[i32(s // a.itemsize) for s in a.strides]]


def run(name, grid, args, printed=None, path=None):
    """Compile ``name`` for sm_80 and run it; returns the arrays of ``args`` after the launch
    (and appends the device printf lines to ``printed``).

    The kernel runs in ``tilecore.emulate`` (the fully lowered module) when it is installed,
    else (or with ``TILEAS_TEST_INTERPRETER=1``) in the stage-4 reference interpreter."""
    try:
        from tilecore import emulate
    except ImportError:
        emulate = None
    if emulate is not None and hasattr(emulate, "launch") and os.environ.get("TILEAS_TEST_INTERPRETER", "") != "1":
        res = compile_file(path or _path(name), "sm_80")
        result = emulate.launch(res.module, name, grid, BLOCK, args)  # results are copied into the arrays
        if printed is not None:
            printed.extend(line for line in result.printf.splitlines() if line)
        return [a for a in args if isinstance(a, np.ndarray)]
    res = compile_file(path or _path(name), "sm_80", stop_after="convert-tileas-to-llvm")
    it = Interpreter(res.module, name)
    out = it.launch(grid, BLOCK, args)
    if printed is not None:
        printed.extend(it.printed)
    return out


def cdiv(a, b):
    return -(-a // b)


def close(got, ref, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64), rtol=rtol,
                               atol=atol)


def rand(shape, dtype=f32, lo=None, hi=None):
    if lo is not None:
        return RNG.uniform(lo, hi, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------ corpus
def test_vadd_f32():
    a, b, c = rand(1000), rand(1000), np.zeros(1000, f32)
    out = run("vadd_f32", (cdiv(1000, 128), 1, 1), arr(a) + arr(b) + arr(c))
    close(out[2], a + b, 0, 0)


def test_saxpy_f32():
    x, y, o = rand(1000), rand(1000), np.zeros(1000, f32)
    out = run("saxpy_f32", (cdiv(1000, 256), 1, 1), [f32(2.5)] + arr(x) + arr(y) + arr(o))
    close(out[2], f32(2.5) * x + y, 1e-6, 1e-6)


def test_relu_f16():
    x, y = rand((20, 100), f16), np.zeros((20, 100), f16)
    out = run("relu_f16", (cdiv(20, 16), cdiv(100, 64), 1), arr(x) + arr(y))
    close(out[1], np.maximum(x, 0), 0, 0)


def test_gelu_f16():
    x, y = rand(600, f16), np.zeros(600, f16)
    out = run("gelu_f16", (cdiv(600, 256), 1, 1), arr(x) + arr(y))
    t = x.astype(f32)
    ref = (0.5 * t * (1 + np.tanh(f32(0.7978845608) * (t + f32(0.044715) * t * t * t)))).astype(f16)
    close(out[1], ref, 2e-3, 2e-3)


def test_rowsum_f32():
    x, o = rand((20, 256)), np.zeros(20, f32)
    out = run("rowsum_f32", (cdiv(20, 8), 1, 1), arr(x) + arr(o))
    close(out[1], x.sum(1), 1e-5, 1e-4)


def test_row_softmax_f16():
    x, y = rand((5, 512), f16), np.zeros((5, 512), f16)
    out = run("row_softmax_f16", (cdiv(5, 2), 1, 1), arr(x) + arr(y))
    t = x.astype(f32)
    e = np.exp(t - t.max(1, keepdims=True))
    close(out[1], (e / e.sum(1, keepdims=True)).astype(f16), 1e-2, 1e-4)


def test_transpose_f32():
    x, y = rand((40, 70)), np.zeros((70, 40), f32)
    out = run("transpose_f32", (cdiv(40, 32), cdiv(70, 64), 1), arr(x) + arr(y))
    close(out[1], x.T, 0, 0)


@pytest.mark.parametrize("p", [2, 1])
def test_rownorm_loop_if_f32(p):
    x, o = rand((10, 300)), np.zeros(10, f32)
    out = run("rownorm_loop_if_f32", (cdiv(10, 4), 1, 1), arr(x) + arr(o) + [i32(p)])
    ref = np.sqrt((x * x).sum(1)) if p == 2 else np.abs(x).sum(1)
    close(out[1], ref, 1e-5, 1e-4)


# ------------------------------------------------------------------------------ matrix multiply (dot)
def test_matmul_f16_partial_tiles():
    m, n, k = 200, 150, 100  # two K steps of 64 (the second one padded), partial M and N tiles
    a, b, c = rand((m, k), f16), rand((k, n), f16), np.zeros((m, n), f16)
    out = run("matmul_f16", (cdiv(m, 128), cdiv(n, 128), 1), arr(a) + arr(b) + arr(c))
    close(out[2], (a.astype(f32) @ b.astype(f32)).astype(f16), 1e-2, 1e-2)


def test_mma_f32():
    m, n, k = 40, 20, 40
    a, b, c = rand((m, k)), rand((k, n)), np.zeros((m, n), f32)
    out = run("mma_f32", (cdiv(m, 32), cdiv(n, 16), 1), arr(a) + arr(b) + arr(c))
    close(out[2], a @ b, 1e-4, 1e-4)


def test_mma_f16_on_tensor_cores_small_tiles():
    m, n, k = 40, 24, 72  # partial tiles in M, N and K
    a, b, c = rand((m, k), f16), rand((k, n), f16), np.zeros((m, n), f32)
    out = run("mma_f16_f32acc", (cdiv(m, 16), cdiv(n, 16), 1), arr(a) + arr(b) + arr(c))
    close(out[2], a.astype(f32) @ b.astype(f32), 1e-4, 1e-4)


def test_mma_bf16_on_tensor_cores():
    def to_bf16(x):  # round to nearest even, as raw bits (numpy has no bfloat16)
        u = x.astype(f32).view(np.uint32)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

    def from_bf16(bits):
        return (bits.astype(np.uint32) << 16).view(f32)

    m, n, k = 70, 40, 40
    a, b, c = to_bf16(rand((m, k))), to_bf16(rand((k, n))), np.zeros((m, n), f32)
    out = run("mma_bf16_f32acc", (cdiv(m, 64), cdiv(n, 32), 1), arr(a) + arr(b) + arr(c))
    close(out[2], from_bf16(a) @ from_bf16(b), 1e-4, 1e-4)


def test_mma_u8_on_tensor_cores():
    m, n, k = 40, 20, 130
    a = RNG.integers(0, 256, (m, k), dtype=np.uint8)
    b = RNG.integers(0, 256, (k, n), dtype=np.uint8)
    c = np.zeros((m, n), i32)
    out = run("mma_u8", (cdiv(m, 32), cdiv(n, 16), 1), arr(a) + arr(b) + arr(c))
    close(out[2], a.astype(np.int64) @ b.astype(np.int64), 0, 0)


def test_mma_i8():
    m, n, k = 20, 40, 70
    a = RNG.integers(-128, 128, (m, k), dtype=np.int8)
    b = RNG.integers(-128, 128, (k, n), dtype=np.int8)
    c = np.zeros((m, n), i32)
    out = run("mma_i8", (cdiv(m, 16), cdiv(n, 32), 1), arr(a) + arr(b) + arr(c))
    close(out[2], a.astype(np.int64) @ b.astype(np.int64), 0, 0)


# ------------------------------------------------------------------------------ generated
def test_int_arith_i32():
    n = 200
    a, b, c = rand(n, i32, 0, 1000), rand(n, i32, 1, 100), np.zeros(n, i32)
    out = run("int_arith_i32", (cdiv(n, 128), 1, 1), arr(a) + arr(b) + arr(c))
    x, y = a.astype(np.int64), (b | 1).astype(np.int64)
    r = (x + y) * (x - y)
    r = r + x // y + x % y
    r = r ^ (x & y) ^ (x << 2) ^ (y >> 1)
    r = np.minimum(r, x) + np.maximum(r, y) + np.abs(-r)
    close(out[2], ((r + 2**31) % 2**32 - 2**31).astype(i32), 0, 0)


def test_uint_ops_u32():
    n = 200
    a = RNG.integers(0, 2**32 - 1, n, dtype=np.uint32)
    b = RNG.integers(0, 2**32 - 1, n, dtype=np.uint32)
    c = np.zeros(n, np.uint32)
    out = run("uint_ops_u32", (cdiv(n, 128), 1, 1), arr(a) + arr(b) + arr(c))
    x, y = a.astype(np.uint64), (b | 1).astype(np.uint64)
    r = (x % y + (x >> 3) + np.maximum(x, y)) % 2**32
    close(out[2], np.where(x < y, r, np.minimum(x, y)), 0, 0)


def test_float_unary_f32():
    x, y = rand(200, f32, -1.5, 1.5), np.zeros(200, f32)
    out = run("float_unary_f32", (2, 1, 1), arr(x) + arr(y))
    t = x.astype(np.float64)
    r = np.sin(t) + np.cos(t) + np.tan(t) + np.sinh(t) + np.cosh(t) + np.tanh(t)
    r = r + np.exp2(t) + np.log(np.abs(t) + 1) + np.log2(np.abs(t) + 1)
    r = r + 1 / np.sqrt(np.abs(t) + 1) + np.ceil(t) - np.floor(t) - t
    close(out[1], r, 1e-4, 1e-4)


def test_float_binary_f32():
    a, b, c = rand(200, f32, 0.5, 3), rand(200, f32, 0.5, 3), np.zeros(200, f32)
    out = run("float_binary_f32", (2, 1, 1), arr(a) + arr(b) + arr(c))
    x, y = a.astype(np.float64), b.astype(np.float64)
    close(out[2], np.arctan2(x, y) + np.abs(x) ** y + np.fmod(x, y) + np.minimum(x, y) - x / y, 1e-4, 1e-4)


def test_powi_f32():
    a, c = rand(128, f32, 0.9, 1.1), np.zeros(128, f32)
    out = run("powi_f32", (1, 1, 1), arr(a) + arr(c))
    close(out[1], a.astype(np.float64) ** np.arange(128), 1e-4, 1e-6)


def test_casts_mixed():
    n = 150
    a, b = rand(n, np.int8, -100, 100), rand(n, f32, -50, 50)
    c, d = np.zeros(n, np.int8), np.zeros(n, f32)
    out = run("casts_mixed", (2, 1, 1), arr(a) + arr(b) + arr(c) + arr(d))
    xi, yi = a.astype(i32), b.astype(i32)  # toward zero, like C
    close(out[2], (xi + yi).astype(np.int8), 0, 0)
    close(out[3], xi.astype(f32) + yi.view(f32), 0, 0)


def test_where_cmpf_f32():
    a, b, c = rand(150), rand(150), np.zeros(150, f32)
    a[::7] = 0
    b[::11] = np.nan
    out = run("where_cmpf_f32", (2, 1, 1), arr(a) + arr(b) + arr(c))
    m = (a > b) & (a != 0) | np.isnan(b)
    close(out[2], np.where(m, a, b), 0, 0)


def test_arange_iota_i32():
    c = np.zeros(300, i32)
    out = run("arange_iota_i32", (3, 1, 1), arr(c))
    close(out[0], np.arange(300), 0, 0)


def test_cumsum_scan_f32():
    x, y = rand((6, 64), f32, 0.5, 1.5), np.zeros((6, 64), f32)
    out = run("cumsum_scan_f32", (2, 1, 1), arr(x) + arr(y))
    ref = np.cumsum(x, 1) + np.cumprod(x[:, ::-1], 1)[:, ::-1]
    close(out[1], ref, 1e-4, 1e-4)


@pytest.mark.parametrize("name,tm,tn", [("scan_rows_16x16", 16, 16), ("scan_rows_2x256", 2, 256)])
def test_row_scans_narrow_and_wide(name, tm, tn):
    x, y = rand((2 * tm, tn), f32, 0.9, 1.1), np.zeros((2 * tm, tn), f32)
    out = run(name, (2, 1, 1), arr(x) + arr(y))
    ref = np.cumsum(x, 1) + np.cumprod(x[:, ::-1], 1)[:, ::-1]
    close(out[1], ref, 1e-4, 1e-4)


def test_cat_extract_insert_f32():
    x, y = rand(256), np.zeros(256, f32)
    out = run("cat_extract_insert_f32", (2, 1, 1), arr(x) + arr(y))
    ref = []
    for blk in x.reshape(2, 128):
        lo, hi = blk[:64], blk[64:]
        r = np.concatenate([hi, lo])
        r[:64] = lo * 2
        ref.append(r)
    close(out[1], np.concatenate(ref), 0, 0)


def test_reshape_broadcast_f32():
    x, y = rand(40), np.zeros((40, 32), f32)
    out = run("reshape_broadcast_f32", (cdiv(40, 16), 1, 1), arr(x) + arr(y))
    close(out[1], np.broadcast_to(x[:, None], (40, 32)) * 2, 0, 0)


def test_gather_scatter_f32():
    x, y = rand(256), np.zeros(256, f32)
    idx = RNG.permutation(256).astype(i32)
    out = run("gather_scatter_f32", (2, 1, 1), arr(x) + arr(idx) + arr(y))
    ref = np.zeros(256, f32)
    ref[idx] = x[idx] * 2
    close(out[2], ref, 0, 0)


def test_atomics_i32():
    x = np.zeros(128, i32)
    counts = RNG.integers(-1, 3, 128).astype(i32)
    old = counts.copy()  # the emulator updates the arrays in place
    out = run("atomics_i32", (2, 1, 1), arr(x) + arr(counts))
    new = np.maximum(old + 1, old)
    new = np.where(new == 0, 1, new)
    close(out[0], old, 0, 0)
    close(out[1], new, 0, 0)


def test_atomic_red_view_f32():
    x, y = rand(384), np.zeros(128, f32)
    out = run("atomic_red_view_f32", (3, 1, 1), arr(x) + arr(y))
    close(out[1], x.reshape(3, 128).sum(0), 1e-5, 1e-5)


def test_strided_view_f32():
    x, y = rand(300), np.zeros(384, f32)
    out = run("strided_view_f32", (3, 1, 1), arr(x) + arr(y))
    ref = np.zeros(384, f32)
    for b in range(3):
        seg = x[b * 64:b * 64 + 128]
        ref[b * 128:b * 128 + len(seg)] = seg
    close(out[1], ref, 0, 0)


def test_grid_queries_i32():
    y = np.zeros(384, i32)
    out = run("grid_queries_i32", (3, 1, 1), arr(y))
    close(out[0], np.full(384, 3000 + 0 + 1), 0, 0)


def test_argmax_rows_f32():
    x, o = rand((5, 64)), np.zeros(5, i32)
    out = run("argmax_rows_f32", (cdiv(5, 4), 1, 1), arr(x) + arr(o))
    close(out[1], x.argmax(1) + x.argmin(1), 0, 0)


def test_argmax_rows_f32_ties_take_the_first_index():
    """Two-operand reduce (value, index) through the warp-shuffle atom: with many equal values the
    first index wins, as in numpy (the butterfly keeps element order)."""
    x, o = RNG.integers(0, 3, (7, 64)).astype(f32), np.zeros(7, i32)
    out = run("argmax_rows_f32", (cdiv(7, 4), 1, 1), arr(x) + arr(o))
    close(out[1], x.argmax(1) + x.argmin(1), 0, 0)


def test_prod_min_reduce_f32():
    x, o = rand((10, 64), f32, 0.9, 1.1), np.zeros(10, f32)
    out = run("prod_min_reduce_f32", (cdiv(10, 4), 1, 1), arr(x) + arr(o))
    close(out[1], x.astype(np.float64).prod(1) + x.min(1), 1e-5, 1e-5)


@pytest.mark.parametrize("n", [0, 3])
def test_while_break_i32(n):
    x, y = rand(200, i32, -50, 50), np.zeros(200, i32)
    out = run("while_break_i32", (2, 1, 1), arr(x) + arr(y) + [i32(n)])
    close(out[1], x * 2**n, 0, 0)


def test_pointer_offset_f32():
    x, y = rand(1000), np.zeros(1000, f32)
    out = run("pointer_offset_f32", (8, 1, 1), arr(x) + arr(y))
    close(out[1], x, 0, 0)


def test_print_assert_f32():
    x = rand(256, f32, 0, 1)
    printed = []
    run("print_assert_f32", (2, 1, 1), arr(x), printed)
    sums = x.reshape(2, 128).sum(1)
    assert len(printed) == 2
    for line, b in zip(sorted(printed), range(2)):
        head, val = line.rsplit(" ", 1)
        assert head == f"block {b} sum"
        assert math.isclose(float(val), sums[b], rel_tol=1e-5)


# ------------------------------------------------------------------------------ own
def test_layernorm_f32():
    x, w, b, y = rand((5, 256)), rand(256), rand(256), np.zeros((5, 256), f32)
    out = run("layernorm_f32", (cdiv(5, 2), 1, 1), arr(x) + arr(w) + arr(b) + arr(y))
    t = x.astype(np.float64)
    mean = t.mean(1, keepdims=True)
    var = ((t - mean) ** 2).mean(1, keepdims=True)
    close(out[3], (t - mean) / np.sqrt(var + 1e-5) * w + b, 1e-4, 1e-4)


def test_colsum_f32():
    x, o = rand((50, 70)), np.zeros(70, f32)
    out = run("colsum_f32", (cdiv(70, 32), 1, 1), arr(x) + arr(o))
    close(out[1], x.sum(0), 1e-5, 1e-4)


def test_col_softmax_f32():
    x, y = rand((64, 20)), np.zeros((64, 20), f32)
    out = run("col_softmax_f32", (cdiv(20, 16), 1, 1), arr(x) + arr(y))
    e = np.exp(x - x.max(0, keepdims=True))
    close(out[1], e / e.sum(0, keepdims=True), 1e-5, 1e-6)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_clamp_loop_if_f32(n):
    x, y = rand(200), np.zeros(200, f32)
    out = run("clamp_loop_if_f32", (2, 1, 1), arr(x) + arr(y) + [i32(n)])
    ref = x.copy()
    for k in range(n):
        ref = ref * f32(1.5) if k % 2 == 0 else np.minimum(ref, f32(4.0))
    close(out[1], ref, 0, 0)


def test_broadcast_outer_f16():
    a, b, c = rand(20, f16), rand(40, f16), np.zeros((20, 40), f16)
    out = run("broadcast_outer_f16", (cdiv(20, 16), cdiv(40, 32), 1), arr(a) + arr(b) + arr(c))
    close(out[2], (a.astype(f32)[:, None] * b.astype(f32)[None, :]).astype(f16), 0, 0)


def test_pack_unpack_f16():
    x, y = rand(200, f16), np.zeros(200, f16)
    out = run("pack_unpack_f16", (2, 1, 1), arr(x) + arr(y))
    close(out[1], x, 0, 0)


def test_gdc_f32():
    x, y = rand(200), np.zeros(200, f32)
    out = run("gdc_f32", (2, 1, 1), arr(x) + arr(y))
    close(out[1], x, 0, 0)


def test_advanced_indexing_f32():
    x, y = rand((30, 64)), np.zeros((30, 64), f32)
    idx = RNG.permutation(30)[:16].astype(i32)
    out = run("advanced_indexing_f32", (2, 1, 1), arr(x) + arr(idx) + arr(y))
    ref = np.zeros((30, 64), f32)
    ref[idx] = x[idx] + 1
    close(out[2], ref, 0, 0)


def test_global_and_non_splat_constant(tmp_path):
    """A module-level global read through get_global + offset, plus a non-splat tile constant
    (a constant table in global memory); cuda_tile MLIR text, as no @ct.kernel emits these."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "global_const.cuda_tile.mlir")
    res = compile_file(src, "sm_80", stop_after="convert-tileas-to-llvm")
    assert "llvm.mlir.global internal @table(dense<[10, 20, 30, 40]>" in str(res.module)
    (out,) = run("cst_global", (1, 1, 1), [np.zeros(8, i32)], path=src)
    close(out, np.array([10, 20, 30, 40] * 2) + np.array([3, 1, 4, 1, 5, 9, 2, 6]), 0, 0)
    for sm in ("sm_80", "sm_90a", "sm_100a"):
        assert compile_file(src, sm).artifacts["cubin"][:4] == b"\x7fELF"


def test_pointer_casts():
    """ptr_to_int, integer address arithmetic, int_to_ptr and ptr_to_ptr (cuda_tile MLIR text)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ptr_casts.cuda_tile.mlir")
    res = compile_file(src, "sm_80", stop_after="convert-tileas-to-llvm")
    text = str(res.module)
    assert "llvm.ptrtoint" in text and "llvm.inttoptr" in text
    x = rand(8)
    _, out = run("ptr_casts", (1, 1, 1), [x, np.zeros(8, f32)], path=src)
    close(out, x, 0, 0)


def test_cumsum_cols_f32():
    x, y = rand((16, 70)), np.zeros((16, 70), f32)
    out = run("cumsum_cols_f32", (cdiv(70, 32), 1, 1), arr(x) + arr(y))
    close(out[1], np.cumsum(x, 0), 1e-5, 1e-5)


def test_permute3d_f32():
    x, y = rand((4, 8, 16)), np.zeros((16, 4, 8), f32)
    out = run("permute3d_f32", (1, 1, 1), arr(x) + arr(y))
    close(out[1], np.transpose(x, (2, 0, 1)), 0, 0)


def test_max_min_rows_f64():
    """4-row tiles over 10 rows (the last tile partial); all-positive and all-negative rows."""
    x = rand((10, 64), np.float64)
    x[3] = np.abs(x[3]) + 1.0
    x[4] = -np.abs(x[4]) - 1.0
    out = np.zeros(10)
    run("max_min_rows_f64", (cdiv(10, 4), 1, 1), arr(x) + arr(out))
    close(out, x.max(axis=1) * 1000.0 + x.min(axis=1), 1e-15, 0)


def test_axpy_f64_i64():
    x, n, y = rand(200, np.float64), RNG.integers(-10**12, 10**12, 200).astype(np.int64), np.zeros(200)
    out = run("axpy_f64_i64", (2, 1, 1), [np.float64(1.5)] + arr(x) + arr(y) + arr(n))
    close(out[1], 1.5 * x + n.astype(np.float64), 1e-15, 0)
