"""cuTile Python kernels exported to TileIR bytecode at test time (a reusable corpus).

``export(name, path)`` writes kernel ``name`` as TileIR bytecode 13.4 (architecture
independent, ``gpu_code=None``) and returns the path; ``corpus_dir()`` /
``kernel_path(name)`` cache every kernel in one temporary folder per process.
Array parameters follow the visible corpus conventions (int32 index type, unit
last stride, 16-byte aligned base, non-negative strides, no aliasing).

Each entry of :data:`KERNELS` is ``name -> (kernel, parameters)`` where a
parameter is ``"f32[2]"`` (array dtype[rank], int32 shapes / strides), ``"f32[2]i64"``
(the same with the int64 index type: 64-bit shapes / strides in the kernel ABI),
``"f32"`` (runtime scalar) or a Python value (a ``ct.Constant``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import cuda.tile as ct
from cuda.tile.compilation import CallingConvention, KernelSignature, export_kernel

from tilecore.cutile.specialize import from_spelling

BYTECODE_VERSION = "13.4"


def _param(p):
    """A parameter of :data:`KERNELS` as cuTile takes it: a spelling (``"f32[2]"``, ``"f32[2]i64"``,
    ``"f32"``) is read by :func:`tilecore.cutile.specialize.from_spelling`, a value is a constant."""
    return from_spelling(p).constraint() if isinstance(p, str) else p


# ----------------------------------------------------------------------------------- kernels

@ct.kernel
def vadd_f32(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, index=(bid,), tile=ct.load(a, index=(bid,), shape=(TILE,)) + ct.load(b, index=(bid,), shape=(TILE,)))


@ct.kernel
def saxpy_f32(alpha, x, y, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    xt = ct.load(x, index=(bid,), shape=(TILE,))
    yt = ct.load(y, index=(bid,), shape=(TILE,))
    ct.store(out, index=(bid,), tile=alpha * xt + yt)


@ct.kernel
def relu_f16(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(TM, TN))
    ct.store(y, index=(i, j), tile=ct.maximum(t, 0))


@ct.kernel
def gelu_f16(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32)
    g = 0.5 * t * (1.0 + ct.tanh(0.7978845608 * (t + 0.044715 * t * t * t)))
    ct.store(y, index=(bid,), tile=ct.astype(g, ct.float16))


@ct.kernel
def row_softmax_f16(x, y, ROWS: ct.Constant[int], N: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid, 0), shape=(ROWS, N)), ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(bid, 0), tile=ct.astype(e / ct.sum(e, axis=1, keepdims=True), ct.float16))


@ct.kernel
def matmul_f32acc(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C = A @ B accumulated in f32, stored as C's dtype (f16 / bf16 / 8-bit float operands)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(i, j), tile=ct.astype(acc, C.dtype))


def _attention_tile(Q, K, V, Out, TM, TN, D, causal):
    """softmax(Q K^T) V for query tile ``ct.bid(0)`` by key tiles (K loaded transposed, online softmax); ``causal``:
    only keys j <= i count (a mask from index tiles meeting the scores' MMA fragment)."""
    z = ct.PaddingMode.ZERO
    i = ct.bid(0)
    q = ct.load(Q, index=(i, 0), shape=(TM, D), padding_mode=z)
    m = ct.full((TM, 1), -1e30, dtype=ct.float32)
    den = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    rows = ct.reshape(ct.arange(TM, dtype=ct.int32) + i * TM, (TM, 1))
    for j in range(ct.num_tiles(K, axis=0, shape=(TN, D))):
        kt = ct.load(K, index=(0, j), shape=(D, TN), order=(1, 0), padding_mode=z)
        v = ct.load(V, index=(j, 0), shape=(TN, D), padding_mode=z)
        s = ct.mma(q, kt, ct.full((TM, TN), 0.0, dtype=ct.float32))
        if causal:
            s = ct.where(rows >= ct.reshape(ct.arange(TN, dtype=ct.int32) + j * TN, (1, TN)), s, -1e30)
        m2 = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        alpha = ct.exp(m - m2)
        p = ct.exp(s - m2)
        den = den * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(ct.astype(p, Q.dtype), v, acc * alpha)
        m = m2
    ct.store(Out, index=(i, 0), tile=acc / den)


@ct.kernel
def attention(Q, K, V, Out, TM: ct.Constant[int], TN: ct.Constant[int], D: ct.Constant[int]):
    """Flash attention without masking; the zero-padded keys of a partial last tile count as scores of 0."""
    _attention_tile(Q, K, V, Out, TM, TN, D, False)


@ct.kernel
def causal_attention(Q, K, V, Out, TM: ct.Constant[int], TN: ct.Constant[int], D: ct.Constant[int]):
    """Flash attention with a causal mask (key j <= query i)."""
    _attention_tile(Q, K, V, Out, TM, TN, D, True)


@ct.kernel
def mma_loop(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """c = a @ b, accumulated in c's dtype (f16 accumulator when c is f16)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=c.dtype)
    for k in range(ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def mma_tf32_loop(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ct.astype(x, ct.tfloat32), ct.astype(y, ct.tfloat32), acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def mma_epilogue(a, b, bias, c, alpha, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """relu(alpha * (a @ b) + bias[None, :]) as f16: the epilogue runs on the accumulator's fragment layout,
    with the bias row converted to it; the loop also rescales the accumulator (online-softmax style: the
    accumulator is not a zero splat and not only used by the dot)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc * 0.5) + acc * 0.5  # = acc + x @ y
    row = ct.load(bias, index=(j,), shape=(TN,), padding_mode=ct.PaddingMode.ZERO)
    out = ct.maximum(acc * alpha + ct.reshape(row, (1, TN)), 0.0)
    ct.store(c, index=(i, j), tile=ct.astype(out, c.dtype))


@ct.kernel
def matmul_i8(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.int32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, index=(i, k), shape=(TM, TK)), ct.load(B, index=(k, j), shape=(TK, TN)), acc)
    ct.store(C, index=(i, j), tile=acc)


@ct.kernel
def transpose_f32(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(j, i), tile=ct.transpose(ct.load(x, index=(i, j), shape=(TM, TN))))


@ct.kernel
def rownorm_loop_if_f32(x, out, p, TM: ct.Constant[int], TN: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(TM, TN))):
        t = ct.load(x, index=(bid, j), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
        if p == 2:
            acc = acc + t * t
        else:
            acc = acc + ct.abs(t)
    s = ct.sum(acc, axis=1)
    if p == 2:
        s = ct.sqrt(s)
    ct.store(out, index=(bid,), tile=s)


@ct.kernel
def int_arith_i32(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,)) | 1
    r = (x + y) * (x - y)
    r = r + x // y + x % y
    r = r ^ (x & y) ^ (x << 2) ^ (y >> 1)
    r = ct.minimum(r, x) + ct.maximum(r, y) + ct.abs(-r)
    ct.store(c, index=(bid,), tile=r)


@ct.kernel
def uint_ops_u32(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,)) | 1
    r = x % y + (x >> 3) + ct.maximum(x, y)
    ct.store(c, index=(bid,), tile=ct.where(x < y, r, ct.minimum(x, y)))


@ct.kernel
def float_unary_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    r = ct.sin(t) + ct.cos(t) + ct.tan(t) + ct.sinh(t) + ct.cosh(t) + ct.tanh(t)
    r = r + ct.exp2(t) + ct.log(ct.abs(t) + 1.0) + ct.log2(ct.abs(t) + 1.0)
    r = r + ct.rsqrt(ct.abs(t) + 1.0) + ct.ceil(t) - ct.floor(t) + (-t)
    ct.store(y, index=(bid,), tile=r)


@ct.kernel
def float_binary_f32(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    r = ct.atan2(x, y) + ct.pow(ct.abs(x), y) + x % y + ct.minimum(x, y) - x / y
    ct.store(c, index=(bid,), tile=r)


@ct.kernel
def powi_f32(a, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=x ** ct.arange(TILE, dtype=ct.int32))


@ct.kernel
def casts_mixed(a, b, c, d, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))  # i8
    y = ct.load(b, index=(bid,), shape=(TILE,))  # f32
    xi = ct.astype(x, ct.int32)
    yi = ct.astype(y, ct.int32)
    ct.store(c, index=(bid,), tile=ct.astype(xi + yi, ct.int8))
    ct.store(d, index=(bid,), tile=ct.astype(xi, ct.float32) + ct.bitcast(yi, ct.float32))


@ct.kernel
def where_cmpf_f32(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    m = (x > y) & (x != 0.0) | ct.isnan(y)
    ct.store(c, index=(bid,), tile=ct.where(m, x, y))


@ct.kernel
def arange_iota_i32(c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, index=(bid,), tile=ct.arange(TILE, dtype=ct.int32) + bid * TILE)


@ct.kernel
def cumsum_scan_f32(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(TM, TN))
    ct.store(y, index=(bid, 0), tile=ct.cumsum(t, axis=1) + ct.cumprod(t, axis=1, reverse=True))


@ct.kernel
def cat_extract_insert_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    lo = ct.extract(t, index=(0,), shape=(TILE // 2,))
    hi = ct.extract(t, index=(1,), shape=(TILE // 2,))
    r = ct.cat((hi, lo), axis=0)
    r = ct.insert(r, index=(0,), value=lo * 2.0)
    ct.store(y, index=(bid,), tile=r)


@ct.kernel
def reshape_broadcast_f32(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TM,))
    r = ct.broadcast_to(ct.reshape(t, (TM, 1)), (TM, TN))
    ct.store(y, index=(bid, 0), tile=ct.permute(r, (0, 1)) + ct.expand_dims(t, axis=1))


@ct.kernel
def gather_scatter_f32(x, idx, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    i = ct.load(idx, index=(bid,), shape=(TILE,))
    g = ct.gather(x, i)
    ct.scatter(y, i, g * 2.0)


@ct.kernel
def atomics_i32(x, counts, TILE: ct.Constant[int]):
    i = ct.arange(TILE, dtype=ct.int32) + ct.bid(0) * TILE
    old = ct.atomic_add(counts, i, 1)
    ct.atomic_max(counts, i, old)
    ct.atomic_cas(counts, i, 0, 1)
    ct.atomic_xchg(x, i, old)


@ct.kernel
def atomic_red_view_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    y.tiled_view((TILE,)).atomic_store_add((0,), t)


@ct.kernel
def strided_view_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = x.tiled_view((TILE,), traversal_steps=(TILE // 2,)).load((bid,))
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def advanced_indexing_f32(x, idx, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bid = ct.bid(0)
    rows = ct.load(idx, index=(bid,), shape=(TM,))
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(0, TN)))
    ct.store_advanced_indexing(y, (rows, ct.Slice(0, TN)), t + 1.0)


@ct.kernel
def print_assert_f32(x, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.assert_(ct.sum(t) >= 0.0, "negative sum")
    ct.printf("block %d sum %f\n", bid, ct.sum(t))


@ct.kernel
def while_break_i32(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    k = 0
    while True:
        if k >= n:
            break
        t = t * 2
        k += 1
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def grid_queries_i32(y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    v = ct.full((TILE,), 0, dtype=ct.int32) + ct.num_blocks(0) * 1000 + ct.bid(1) + ct.num_blocks(2)
    ct.store(y, index=(bid,), tile=v)


@ct.kernel
def argmax_rows_f32(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(TM, TN))
    ct.store(out, index=(bid,), tile=ct.argmax(t, axis=1) + ct.argmin(t, axis=1))


@ct.kernel
def prod_min_reduce_f32(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(TM, TN))
    ct.store(out, index=(bid,), tile=ct.prod(t, axis=1) + ct.min(t, axis=1))


@ct.kernel
def pack_unpack_f16(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    b = ct.pack_to_bytes(t)
    ct.store(y, index=(bid,), tile=ct.unpack_from_bytes(b, ct.float16))


@ct.kernel
def mma_scaled(A, SA, B, SB, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
               BLOCK: ct.Constant[int]):
    """Block-scaled MMA, one scale per BLOCK elements of K."""
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(A, index=(i, 0), shape=(TM, TK))
    b = ct.load(B, index=(0, j), shape=(TK, TN))
    sa = ct.load(SA, index=(i, 0), shape=(TM, TK // BLOCK))
    sb = ct.load(SB, index=(0, j), shape=(TK // BLOCK, TN))
    acc = ct.mma_scaled(a, sa, b, sb, ct.full((TM, TN), 0, dtype=ct.float32))
    ct.store(C, index=(i, j), tile=acc)


@ct.kernel
def gdc_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.grid_dependency_control_wait()
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.grid_dependency_control_launch_dependents()
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def pointer_offset_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    i = ct.arange(TILE, dtype=ct.int32) + bid * TILE
    t = ct.gather(x, i, mask=i < 1000, padding_value=0.0)
    ct.scatter(y, i, t, mask=i < 1000)


@ct.kernel(num_ctas=ct.ByTarget(default=1, sm_100=2), occupancy=ct.ByTarget(default=2, sm_90=4))
def hinted_vadd_f32(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, index=(bid,), tile=ct.load(a, index=(bid,), shape=(TILE,), latency=3)
             + ct.load(b, index=(bid,), shape=(TILE,), allow_tma=False))


KERNELS: dict[str, tuple] = {
    "vadd_f32": (vadd_f32, ["f32[1]", "f32[1]", "f32[1]", 128]),
    "saxpy_f32": (saxpy_f32, ["f32", "f32[1]", "f32[1]", "f32[1]", 256]),
    "relu_f16": (relu_f16, ["f16[2]", "f16[2]", 16, 64]),
    "gelu_f16": (gelu_f16, ["f16[1]", "f16[1]", 256]),
    "row_softmax_f16": (row_softmax_f16, ["f16[2]", "f16[2]", 2, 512]),
    "matmul_f16": (matmul_f32acc, ["f16[2]", "f16[2]", "f16[2]", 128, 128, 64]),
    "matmul_i8": (matmul_i8, ["i8[2]", "i8[2]", "i32[2]", 64, 64, 32]),
    # rows of 16-byte multiples (cuTile's stride facts for aligned arrays): the K loop is pipelined only
    "matmul_f16_aligned": (matmul_f32acc, ["f16[2]/16", "f16[2]/16", "f16[2]/16", 128, 128, 32]),
    "matmul_bf16_aligned": (matmul_f32acc, ["bf16[2]/16", "bf16[2]/16", "f32[2]/16", 128, 64, 32]),
    "transpose_f32": (transpose_f32, ["f32[2]", "f32[2]", 32, 64]),
    "rownorm_loop_if_f32": (rownorm_loop_if_f32, ["f32[2]", "f32[1]", "i32", 4, 128]),
    "int_arith_i32": (int_arith_i32, ["i32[1]", "i32[1]", "i32[1]", 128]),
    "uint_ops_u32": (uint_ops_u32, ["u32[1]", "u32[1]", "u32[1]", 128]),
    "float_unary_f32": (float_unary_f32, ["f32[1]", "f32[1]", 128]),
    "float_binary_f32": (float_binary_f32, ["f32[1]", "f32[1]", "f32[1]", 128]),
    "powi_f32": (powi_f32, ["f32[1]", "f32[1]", 128]),
    "casts_mixed": (casts_mixed, ["i8[1]", "f32[1]", "i8[1]", "f32[1]", 128]),
    "where_cmpf_f32": (where_cmpf_f32, ["f32[1]", "f32[1]", "f32[1]", 128]),
    "arange_iota_i32": (arange_iota_i32, ["i32[1]", 128]),
    "cumsum_scan_f32": (cumsum_scan_f32, ["f32[2]", "f32[2]", 4, 64]),
    "cat_extract_insert_f32": (cat_extract_insert_f32, ["f32[1]", "f32[1]", 128]),
    "reshape_broadcast_f32": (reshape_broadcast_f32, ["f32[1]", "f32[2]", 16, 32]),
    "gather_scatter_f32": (gather_scatter_f32, ["f32[1]", "i32[1]", "f32[1]", 128]),
    "atomics_i32": (atomics_i32, ["i32[1]", "i32[1]", 64]),
    "atomic_red_view_f32": (atomic_red_view_f32, ["f32[1]", "f32[1]", 128]),
    "strided_view_f32": (strided_view_f32, ["f32[1]", "f32[1]", 128]),
    "advanced_indexing_f32": (advanced_indexing_f32, ["f32[2]", "i32[1]", "f32[2]", 8, 64]),
    "print_assert_f32": (print_assert_f32, ["f32[1]", 128]),
    "while_break_i32": (while_break_i32, ["i32[1]", "i32[1]", "i32", 128]),
    "grid_queries_i32": (grid_queries_i32, ["i32[1]", 128]),
    "argmax_rows_f32": (argmax_rows_f32, ["f32[2]", "i32[1]", 4, 64]),
    "prod_min_reduce_f32": (prod_min_reduce_f32, ["f32[2]", "f32[1]", 4, 64]),
    "pack_unpack_f16": (pack_unpack_f16, ["f16[1]", "f16[1]", 128]),
    "mma_scaled_f8": (mma_scaled, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 64, 64, 64, 32]),
    "gdc_f32": (gdc_f32, ["f32[1]", "f32[1]", 128]),
    "pointer_offset_f32": (pointer_offset_f32, ["f32[1]", "f32[1]", 128]),
    "hinted_vadd_f32": (hinted_vadd_f32, ["f32[1]", "f32[1]", "f32[1]", 128]),
}


def export(name: str, path: str, version: str = BYTECODE_VERSION) -> str:
    """Export kernel ``name`` of :data:`KERNELS` as TileIR bytecode to ``path``; returns ``path``.

    Versions before 13.3 cannot be architecture independent: they are exported for sm_90.
    """
    kernel, params = KERNELS[name]
    return export_spec(kernel, params, name, path, version)


def export_spec(kernel, params: list, symbol: str, path: str, version: str = BYTECODE_VERSION) -> str:
    """Export ``kernel`` with ``params`` (as in :data:`KERNELS`) under ``symbol`` to ``path``; returns ``path``."""
    sig = KernelSignature([_param(p) for p in params], CallingConvention.cutile_python_v1(), symbol=symbol)
    gpu_code = None if tuple(map(int, version.split("."))) >= (13, 3) else "sm_90"
    export_kernel(kernel, [sig], path, gpu_code=gpu_code, output_format="tileir_bytecode", bytecode_version=version)
    return path


def writer_kernel(version: str, multimem: bool = False) -> bytes:
    """A kernel written with cuTile's own bytecode writer, for what ``@ct.kernel`` never emits.

    It has a global (dense i32 data), a non-splat dense constant, ``get_global`` and, with
    ``multimem`` (13.5 only), a multimem load-reduce, store and reduce. Version "13.5" exercises the
    13.5 function header (hints always present, argument attributes).
    """
    import struct

    from cuda.tile import _bytecode as bc
    from cuda.tile._bytecode.debug_info import MISSING_DEBUG_ATTR_ID
    from cuda.tile._bytecode.type_base import PaddingValue, PtrAttr

    ver = {"13.1": bc.BytecodeVersion.V_13_1, "13.2": bc.BytecodeVersion.V_13_2, "13.3": bc.BytecodeVersion.V_13_3,
           "13.4": bc.BytecodeVersion.V_13_4, "13.5": bc.BytecodeVersion.V_13_5}[version]
    buf = bytearray()
    with bc.write_bytecode(1, buf, ver) as w:
        tt = w.type_table
        i32, tok = tt.tile(tt.I32, []), tt.Token
        t4 = tt.tile(tt.I32, [4])
        tv = tt.tensor_view(tt.F32, [bc.DYNAMIC_SHAPE], [1], PtrAttr.Missing)
        pv = tt.partition_view([16], tv, [0], PaddingValue.Zero)
        w.global_section.define_global("table", t4, struct.pack("<4i", 1, 2, 3, 4), alignment=16)
        params = [tt.tile(tt.pointer(tt.F32, PtrAttr.Missing), []), i32]
        with w.function("writer_kernel", params, [], True, {}, MISSING_DEBUG_ATTR_ID) as fb:
            cb = fb.code_builder
            base, n = fb.parameters
            token = bc.encode_MakeTokenOp(cb, tok)
            bc.encode_ConstantOp(cb, t4, struct.pack("<4i", 5, 6, 7, 8))
            bc.encode_GetGlobalOp(cb, tt.tile(tt.pointer(tt.I32, PtrAttr.Missing), []), "table")
            part = bc.encode_MakePartitionViewOp(cb, pv, bc.encode_MakeTensorViewOp(cb, tv, base, [n], []))
            zero = bc.encode_ConstantOp(cb, i32, struct.pack("<i", 0))
            if multimem:
                tile, t2 = bc.encode_MultimemLoadReduceViewTkoOp(
                    cb, tt.tile(tt.F32, [16]), tok, part, [zero], token, bc.MemoryOrderingSemantics.WEAK, None,
                    bc.MultimemReductionKind.ADD, [False])
                t3 = bc.encode_MultimemStoreViewTkoOp(cb, tok, part, tile, [zero], t2,
                                                      bc.MemoryOrderingSemantics.WEAK, None, [False])
                bc.encode_MultimemReduceViewTkoOp(cb, tok, part, tile, [zero], t3, bc.MemoryOrderingSemantics.RELAXED,
                                                  bc.MemoryScope.DEVICE, bc.MultimemReductionKind.MAX, [True])
            bc.encode_ReturnOp(cb, [])
    return bytes(buf)


_DIR: str | None = None


def corpus_dir() -> str:
    """The per-process cache folder of exported kernels."""
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="tilecore-cutile-")
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


def all_paths() -> list[str]:
    """Every kernel of :data:`KERNELS`, exported."""
    return [kernel_path(n) for n in KERNELS]


def kernel_path(name: str) -> str:
    """Path of kernel ``name`` as bytecode, exported on first use."""
    path = os.path.join(corpus_dir(), f"{name}.tileirbc")
    if not os.path.exists(path):
        export(name, path + ".part")
        os.replace(path + ".part", path)
    return path


def writer_ops_kernel() -> bytes:
    """Ops ``@ct.kernel`` code does not produce, written with cuTile's bytecode writer (13.4):
    mulhii, get_tensor_shape, ptr_to_int, int_to_ptr, ptr_to_ptr, memory_fence_alias_tko,
    get_num_tile_blocks, alloca."""
    from cuda.tile import _bytecode as bc
    from cuda.tile._bytecode.debug_info import MISSING_DEBUG_ATTR_ID
    from cuda.tile._bytecode.type_base import PtrAttr

    buf = bytearray()
    with bc.write_bytecode(1, buf, bc.BytecodeVersion.V_13_4) as w:
        tt = w.type_table
        i32, i64, tok = tt.tile(tt.I32, []), tt.tile(tt.I64, []), tt.Token
        pf = tt.tile(tt.pointer(tt.F32, PtrAttr.Missing), [])
        pi = tt.tile(tt.pointer(tt.I32, PtrAttr.Missing), [])
        tv = tt.tensor_view(tt.F32, [bc.DYNAMIC_SHAPE, 64], [bc.DYNAMIC_SHAPE, 1], PtrAttr.Missing)
        with w.function("writer_ops", [pf, i32, i32], [], True, {}, MISSING_DEBUG_ATTR_ID) as fb:
            cb = fb.code_builder
            base, n, s = fb.parameters
            token = bc.encode_MakeTokenOp(cb, tok)
            bc.encode_MulhiIOp(cb, i32, n, s)
            bc.encode_GetTensorShapeOp(cb, [i32, i32], bc.encode_MakeTensorViewOp(cb, tv, base, [n], [s]))
            ptr = bc.encode_IntToPtrOp(cb, pf, bc.encode_PtrToIntOp(cb, i64, base))
            bc.encode_PtrToPtrOp(cb, pi, ptr)
            bc.encode_MemoryFenceAliasTkoOp(cb, tok, token)
            bc.encode_GetNumTileBlocksOp(cb, i32, i32, i32)
            bc.encode_AllocaOp(cb, pf, 64, 16, False)
            bc.encode_ReturnOp(cb, [])
    return bytes(buf)


@ct.kernel
def print_narrow_ints(x, TILE: ct.Constant[int]):
    """printf of 8- / 16-bit integer tiles: vprintf reads them promoted to 32 bits (found by the random
    programs: they were passed 1 or 2 bytes wide)."""
    t = ct.load(x, index=(0,), shape=(TILE,))
    ct.printf("%d %u %x\n", t, t, t)


@ct.kernel
def batched_matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C[b] = A[b] @ B[b] accumulated in f32 over rank-3 tensors: (1, TM, TK) / (1, TK, TN) slices reshaped to
    the dot's 2-D tiles (batch = grid z); on sm_90a their K loop copies 3-D TMA boxes."""
    i, j, b = ct.bid(0), ct.bid(1), ct.bid(2)
    z = ct.PaddingMode.ZERO
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(1, TM, TK))):
        a = ct.reshape(ct.load(A, index=(b, i, k), shape=(1, TM, TK), padding_mode=z), (TM, TK))
        y = ct.reshape(ct.load(B, index=(b, k, j), shape=(1, TK, TN), padding_mode=z), (TK, TN))
        acc = ct.mma(a, y, acc)
    ct.store(C, index=(b, i, j), tile=ct.reshape(ct.astype(acc, C.dtype), (1, TM, TN)))
