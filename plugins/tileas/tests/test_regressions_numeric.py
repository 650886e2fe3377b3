"""Regression tests for miscompiles (wrong numbers, no error) found on cuTile kernels written by others.

Every kernel runs in ``tilecore.emulate`` on sizes that are not tile multiples (partial
tiles, padding, bounds masks) and is compared with numpy, compiled for sm_80, sm_90a and
sm_100a (the three copy / MMA paths). Launch contract: grid = tile blocks, block = (128, 1, 1).

1. ``order=`` loads / stores (a partition view's ``dim_map``) were accessed as if the view
   were not permuted: a transposed K tile in online-softmax attention read K untransposed.
   The minimal kernels (a transposed load, store, 3-D permutations, a tiled view) are here
   besides the attention kernel itself; a transposed store of 4-bit codes also wrote register
   pairs as whole bytes though they are not adjacent in memory.
2. ``load_advanced_indexing`` / ``store_advanced_indexing`` with a ``ct.Slice(start, n)``:
   the start is an element offset, but it was scaled by the tile size as if it were a tile
   index (a run-time start other than 0 read zeros, or past the array's edge).
"""

from __future__ import annotations

import math

import cuda.tile as ct
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv

from tilecore.narrow_floats import decode, encode

ARCHS = ("sm_80", "sm_90a", "sm_100a")
RNG = np.random.default_rng(20261123)
f16, f32, i32 = np.float16, np.float32, np.int32
ZERO = ct.PaddingMode.ZERO
NEG_INF = ct.PaddingMode.NEG_INF


# ------------------------------------------------------------------------------ kernels
@ct.kernel
def attention_kt(Q, K, V, Out, scale, TM: ct.Constant[int], TN: ct.Constant[int], D: ct.Constant[int]):
    """Online-softmax attention; K (S_k, D) read transposed through order=: kt[d, n] = K[j * TN + n, d]."""
    i = ct.bid(0)
    q = ct.load(Q, index=(i, 0), shape=(TM, D), padding_mode=ZERO)
    m_i = ct.full((TM,), -math.inf, dtype=ct.float32)
    l_i = ct.full((TM,), 0, dtype=ct.float32)
    acc = ct.full((TM, D), 0, dtype=ct.float32)
    n_keys = K.shape[0]
    for j in range(ct.cdiv(n_keys, TN)):
        kt = ct.load(K, index=(0, j), shape=(D, TN), order=(1, 0), padding_mode=ZERO)
        qk = ct.mma(q, kt, ct.full((TM, TN), 0, dtype=ct.float32)) * scale
        cols = ct.reshape(j * TN + ct.arange(TN, dtype=ct.int32), (1, TN))
        qk = ct.where(cols < n_keys, qk, -math.inf)
        m_new = ct.maximum(m_i, ct.max(qk, axis=1))
        p = ct.exp(qk - m_new[:, None])
        alpha = ct.exp(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1)
        v = ct.load(V, index=(j, 0), shape=(TN, D), padding_mode=ZERO)
        acc = acc * alpha[:, None] + ct.mma(ct.astype(p, V.dtype), v, ct.full((TM, D), 0, dtype=ct.float32))
        m_i = m_new
    ct.store(Out, index=(i, 0), tile=acc / l_i[:, None])


@ct.kernel
def attention_k_rows(Q, KT, V, Out, scale, TM: ct.Constant[int], TN: ct.Constant[int], D: ct.Constant[int]):
    """Online-softmax attention; K stored transposed, KT (D, S_k), its rows read through order= as
    k[n, d] = KT[d, j * TN + n] (the trip count from num_tiles with the same order); the rescaled
    accumulator is the second mma's accumulator."""
    i = ct.bid(0)
    q = ct.load(Q, index=(i, 0), shape=(TM, D), padding_mode=ZERO)
    m_i = ct.full((TM,), -math.inf, dtype=ct.float32)
    l_i = ct.full((TM,), 0, dtype=ct.float32)
    acc = ct.full((TM, D), 0, dtype=ct.float32)
    n_keys = KT.shape[1]
    for j in range(ct.num_tiles(KT, axis=0, shape=(TN, D), order=(1, 0))):
        k = ct.load(KT, index=(j, 0), shape=(TN, D), order=(1, 0), padding_mode=ZERO)
        qk = ct.mma(q, ct.transpose(k), ct.full((TM, TN), 0, dtype=ct.float32)) * scale
        cols = ct.reshape(j * TN + ct.arange(TN, dtype=ct.int32), (1, TN))
        qk = ct.where(cols < n_keys, qk, -math.inf)
        m_new = ct.maximum(m_i, ct.max(qk, axis=1))
        p = ct.exp(qk - ct.reshape(m_new, (TM, 1)))
        alpha = ct.exp(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1)
        v = ct.load(V, index=(j, 0), shape=(TN, D), padding_mode=ZERO)
        acc = ct.mma(ct.astype(p, V.dtype), v, acc * ct.reshape(alpha, (TM, 1)))
        m_i = m_new
    ct.store(Out, index=(i, 0), tile=acc / ct.reshape(l_i, (TM, 1)))


@ct.kernel
def load_order_t(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y = x^T tile by tile, through a transposed load (order=(1, 0))."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(i, j), tile=ct.load(x, index=(i, j), shape=(TM, TN), order=(1, 0), padding_mode=ZERO))


@ct.kernel
def load_order_f(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """The same through order="F"."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(i, j), tile=ct.load(x, index=(i, j), shape=(TM, TN), order="F", padding_mode=ZERO))


@ct.kernel
def store_order_t(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y = x^T through a transposed store."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(i, j), tile=ct.load(x, index=(i, j), shape=(TM, TN)), order=(1, 0))


@ct.kernel
def store_order_t_e2m1(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y = x^T quantised to E2M1 (two codes per byte) through a transposed store."""
    i, j = ct.bid(0), ct.bid(1)
    t = ct.astype(ct.load(x, index=(i, j), shape=(TM, TN)), ct.float4_e2m1fn)
    ct.store(y, index=(i, j), tile=t, order=(1, 0))


@ct.kernel
def load_order_t_e2m1(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y = x^T widened from E2M1 through a transposed load."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(i, j), tile=ct.astype(ct.load(x, index=(i, j), shape=(TM, TN), order=(1, 0)), ct.float32))


@ct.kernel
def load_order_3d(x, y, A: ct.Constant[int], B: ct.Constant[int], C: ct.Constant[int]):
    """y = x.transpose(2, 0, 1): tile axis k reads array axis order[k]."""
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    t = ct.load(x, index=(i, j, k), shape=(A, B, C), order=(2, 0, 1), padding_mode=ZERO)
    ct.store(y, index=(i, j, k), tile=t)


@ct.kernel
def store_order_3d(x, y, A: ct.Constant[int], B: ct.Constant[int], C: ct.Constant[int]):
    """y.transpose(1, 2, 0) = x: a permuted 3-D store."""
    i, j, k = ct.bid(0), ct.bid(1), ct.bid(2)
    ct.store(y, index=(i, j, k), tile=ct.load(x, index=(i, j, k), shape=(A, B, C)), order=(1, 2, 0))


@ct.kernel
def mma_order_loop(a, bt, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """c = a @ bt^T with the B tile read transposed through order= (one mma per step)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        y = ct.load(bt, index=(k, j), shape=(TK, TN), order=(1, 0), padding_mode=ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def scale_rows_loop(x, s, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """acc = acc * alpha[:, None] + tile, loop-carried: the broadcast of the attention kernel alone."""
    i = ct.bid(0)
    alpha = ct.load(s, index=(i,), shape=(TM,), padding_mode=ZERO)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for j in range(ct.cdiv(x.shape[1], TN)):
        acc = acc * alpha[:, None] + ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=ZERO)
    ct.store(y, index=(i, 0), tile=acc)


@ct.kernel
def tiled_view_order(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """A tiled view's load / store next to an order= load of the same tile (y = x^T + x^T)."""
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(TM, TN), order=(1, 0), padding_mode=ZERO)
    yv = y.tiled_view((TM, TN), padding_mode=ZERO)
    yv.store((i, j), t + ct.transpose(x.tiled_view((TN, TM), padding_mode=ZERO).load((j, i))))


@ct.kernel
def adv_load_cols(x, idx, y, col0, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y[r, :] = x[idx[r], col0 : col0 + TN] (padding past the edge), col0 a run-time scalar."""
    bid = ct.bid(0)
    rows = ct.load(idx, index=(bid,), shape=(TM,), padding_mode=ZERO)
    ct.store(y, index=(bid, 0), tile=ct.load_advanced_indexing(x, (rows, ct.Slice(col0, TN)), padding_mode=ZERO))


@ct.kernel
def adv_load_bid_cols(x, idx, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y[:, j*TN : (j+1)*TN] = x[idx, j*TN : ...], the slice start computed from ct.bid."""
    j = ct.bid(0)
    rows = ct.load(idx, index=(0,), shape=(TM,), padding_mode=ZERO)
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(j * TN, TN)), padding_mode=ZERO)
    ct.store(y, index=(0, j), tile=t)


@ct.kernel
def adv_store_cols(x, idx, y, col0, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y[idx[r], col0 : col0 + TN] = x[r, :] (out-of-bounds columns dropped)."""
    bid = ct.bid(0)
    rows = ct.load(idx, index=(bid,), shape=(TM,), padding_mode=ZERO)
    ct.store_advanced_indexing(y, (rows, ct.Slice(col0, TN)), ct.load(x, index=(bid, 0), shape=(TM, TN)))


@ct.kernel
def adv_load_rows_gather_cols(x, idx, y, row0, TM: ct.Constant[int], TN: ct.Constant[int]):
    """The index tile on the last axis: y[r, c] = x[row0 + r, idx[c]]."""
    cols = ct.load(idx, index=(0,), shape=(TN,), padding_mode=ZERO)
    ct.store(y, index=(0, 0), tile=ct.load_advanced_indexing(x, (ct.Slice(row0, TM), cols), padding_mode=ZERO))


@ct.kernel
def adv_store_rows_scatter_cols(x, idx, y, row0, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y[row0 + r, idx[c]] = x[r, c]."""
    cols = ct.load(idx, index=(0,), shape=(TN,), padding_mode=ZERO)
    ct.store_advanced_indexing(y, (ct.Slice(row0, TM), cols), ct.load(x, index=(0, 0), shape=(TM, TN)))


@ct.kernel
def adv_load_3d(x, idx, y, r0, c0, TB: ct.Constant[int], TM: ct.Constant[int], TN: ct.Constant[int]):
    """The index tile on the middle axis of a 3-D array, run-time slices on the other two."""
    rows = ct.load(idx, index=(0,), shape=(TM,), padding_mode=ZERO)
    t = ct.load_advanced_indexing(x, (ct.Slice(r0, TB), rows, ct.Slice(c0, TN)), padding_mode=ZERO)
    ct.store(y, index=(0, 0, 0), tile=t)


KERNELS = {
    "attention_kt_f32": (attention_kt, ["f32[2]", "f32[2]", "f32[2]", "f32[2]", "f32", 16, 16, 32]),
    "attention_kt_f16": (attention_kt, ["f16[2]", "f16[2]", "f16[2]", "f32[2]", "f32", 16, 32, 32]),
    "attention_k_rows_f32": (attention_k_rows, ["f32[2]", "f32[2]", "f32[2]", "f32[2]", "f32", 16, 16, 32]),
    "attention_k_rows_f16": (attention_k_rows, ["f16[2]", "f16[2]", "f16[2]", "f32[2]", "f32", 16, 32, 32]),
    "load_order_t": (load_order_t, ["f32[2]", "f32[2]", 16, 32]),
    "load_order_f": (load_order_f, ["f16[2]", "f16[2]", 16, 32]),
    "store_order_t": (store_order_t, ["f32[2]", "f32[2]", 16, 32]),
    "store_order_t_e2m1": (store_order_t_e2m1, ["f32[2]", "f4[2]", 4, 16]),
    "load_order_t_e2m1": (load_order_t_e2m1, ["f4[2]", "f32[2]", 4, 16]),
    "load_order_3d": (load_order_3d, ["f32[3]", "f32[3]", 2, 4, 8]),
    "store_order_3d": (store_order_3d, ["f32[3]", "f32[3]", 2, 4, 8]),
    "mma_order_loop_f16": (mma_order_loop, ["f16[2]", "f16[2]", "f32[2]", 16, 16, 32]),
    "mma_order_loop_f32": (mma_order_loop, ["f32[2]", "f32[2]", "f32[2]", 16, 16, 16]),
    "scale_rows_loop": (scale_rows_loop, ["f32[2]", "f32[1]", "f32[2]", 16, 32]),
    "tiled_view_order": (tiled_view_order, ["f32[2]", "f32[2]", 16, 32]),
    "adv_load_cols": (adv_load_cols, ["f32[2]", "i32[1]", "f32[2]", "i32", 16, 32]),
    "adv_load_bid_cols": (adv_load_bid_cols, ["f16[2]", "i32[1]", "f16[2]", 16, 32]),
    "adv_store_cols": (adv_store_cols, ["f32[2]", "i32[1]", "f32[2]", "i32", 16, 32]),
    "adv_load_rows_gather_cols": (adv_load_rows_gather_cols, ["f32[2]", "i32[1]", "f32[2]", "i32", 8, 32]),
    "adv_store_rows_scatter_cols": (adv_store_rows_scatter_cols, ["f32[2]", "i32[1]", "f32[2]", "i32", 8, 32]),
    "adv_load_3d": (adv_load_3d, ["f32[3]", "i32[1]", "f32[3]", "i32", "i32", 2, 8, 16]),
}
_KERNELS = KernelSet(KERNELS, "tileas-regressions-")
compiled, run = _KERNELS.compiled, _KERNELS.run


def close(got, ref, tol=0.0):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=tol, atol=tol)


def rand(shape, dtype=f32):
    return RNG.standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------ 1. order=
def attention_ref(q, k, v, scale):
    s = q.astype(np.float64) @ k.astype(np.float64).T * scale
    p = np.exp(s - s.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("kind", ["kt", "k_rows"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_attention_online_softmax_with_transposed_k(sm, kind, dt):
    sq, sk, d = 37, 75, 32  # partial query tile, partial key tile (masked to -inf)
    dtype = f16 if dt == "f16" else f32
    q, k, v = rand((sq, d), dtype), rand((sk, d), dtype), rand((sk, d), dtype)
    o, scale = np.zeros((sq, d), f32), f32(1 / math.sqrt(d))
    kmem = k if kind == "kt" else np.ascontiguousarray(k.T)
    run(f"attention_{kind}_{dt}", sm, (cdiv(sq, 16), 1, 1), arr(q) + arr(kmem) + arr(v) + arr(o) + [scale])
    ref = attention_ref(q, k, v, scale)
    if dt == "f16":  # p is rounded to f16 before the second mma
        close(o, ref, 2e-2)
    else:
        close(o, ref, 1e-4)


@pytest.mark.parametrize("sm", ARCHS)
def test_transposed_load(sm):
    x = rand((45, 20))  # the view x^T is 20 x 45: tiles of 16 x 32, both partial
    y = np.zeros((20, 45), f32)
    run("load_order_t", sm, (cdiv(20, 16), cdiv(45, 32), 1), arr(x) + arr(y))
    close(y, x.T)


@pytest.mark.parametrize("sm", ARCHS)
def test_transposed_load_order_f(sm):
    x = rand((45, 20), f16)
    y = np.zeros((20, 45), f16)
    run("load_order_f", sm, (cdiv(20, 16), cdiv(45, 32), 1), arr(x) + arr(y))
    close(y, x.T)


@pytest.mark.parametrize("sm", ARCHS)
def test_transposed_store(sm):
    x = rand((20, 45))
    y = np.full((45, 20), 7.0, f32)  # out-of-bounds rows / columns of the tiles are not stored
    run("store_order_t", sm, (cdiv(20, 16), cdiv(45, 32), 1), arr(x) + arr(y))
    close(y, x.T)


def test_transposed_e2m1_store_and_load():
    """4-bit codes packed two per byte (sm_100a only): a transposed store's register pairs are not
    adjacent in memory, so each code updates its own half byte (the pair used to be one byte)."""
    x = rand((7, 33)) * 3
    packed = np.zeros((33 * 7 + 1) // 2, np.uint8)
    y_abi = [packed, i32(33), i32(7), i32(7), i32(1)]  # y = x^T: 33 x 7 codes, row-major
    run("store_order_t_e2m1", "sm_100a", (cdiv(7, 4), cdiv(33, 16), 1), arr(x) + y_abi)
    codes = [encode(float(v), "f4E2M1FN") for v in x.T.reshape(-1)]
    assert [int(packed[i // 2] >> (4 * (i % 2)) & 15) for i in range(33 * 7)] == codes
    back = np.zeros((7, 33), f32)  # and back: back = (x^T)^T, decoded
    run("load_order_t_e2m1", "sm_100a", (cdiv(7, 4), cdiv(33, 16), 1), y_abi + arr(back))
    close(back, np.array([decode(c, "f4E2M1FN") for c in codes]).reshape(33, 7).T)


@pytest.mark.parametrize("sm", ARCHS)
def test_permuted_3d_load(sm):
    x = rand((7, 3, 5))  # the view x.transpose(2, 0, 1) is 5 x 7 x 3: tiles of 2 x 4 x 8
    y = np.zeros((5, 7, 3), f32)
    run("load_order_3d", sm, (cdiv(5, 2), cdiv(7, 4), cdiv(3, 8)), arr(x) + arr(y))
    close(y, x.transpose(2, 0, 1))


@pytest.mark.parametrize("sm", ARCHS)
def test_permuted_3d_store(sm):
    x = rand((5, 7, 3))
    y = np.full((3, 5, 7), 7.0, f32)  # y.transpose(1, 2, 0) is 5 x 7 x 3
    run("store_order_3d", sm, (cdiv(5, 2), cdiv(7, 4), cdiv(3, 8)), arr(x) + arr(y))
    close(y.transpose(1, 2, 0), x)


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_mma_fed_by_a_transposed_load(sm, dt):
    m, n, k = 40, 24, 72
    dtype = f16 if dt == "f16" else f32
    a, bt, c = rand((m, k), dtype), rand((n, k), dtype), np.zeros((m, n), f32)
    run(f"mma_order_loop_{dt}", sm, (cdiv(m, 16), cdiv(n, 16), 1), arr(a) + arr(bt) + arr(c))
    close(c, a.astype(np.float64) @ bt.astype(np.float64).T, 1e-4)


@pytest.mark.parametrize("sm", ARCHS)
def test_loop_carried_row_broadcast(sm):
    m, n = 20, 70
    x, s, y = rand((m, n)), rand(m), np.zeros((m, 32), f32)
    run("scale_rows_loop", sm, (cdiv(m, 16), 1, 1), arr(x) + arr(s) + arr(y))
    xp = np.zeros((m, 96), np.float64)
    xp[:, :n] = x
    ref = np.zeros((m, 32))
    for j in range(3):
        ref = ref * s[:, None] + xp[:, 32 * j:32 * j + 32]
    close(y, ref, 1e-5)


@pytest.mark.parametrize("sm", ARCHS)
def test_tiled_view_next_to_a_transposed_load(sm):
    x = rand((45, 20))
    y = np.zeros((20, 45), f32)
    run("tiled_view_order", sm, (cdiv(20, 16), cdiv(45, 32), 1), arr(x) + arr(y))
    close(y, 2 * x.T)


# ------------------------------------------------------------------------------ 2. advanced indexing
def slice_cols(x: np.ndarray, col0: int, n: int) -> np.ndarray:
    """x[:, col0 : col0 + n] with zeros where the columns fall outside x (either side)."""
    out = np.zeros((x.shape[0], n), x.dtype)
    lo, hi = max(col0, 0), min(col0 + n, x.shape[1])
    out[:, lo - col0:hi - col0] = x[:, lo:hi]
    return out


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("col0", [0, 5, 20, 33, -3])  # 33 / -3: the slice runs past the right / left edge
def test_advanced_indexing_load_runtime_slice(sm, col0):
    x = rand((30, 50))
    idx = RNG.permutation(30)[:20].astype(i32)  # 20 rows: the second block's index tile is padded
    y = np.full((32, 32), 7.0, f32)
    run("adv_load_cols", sm, (2, 1, 1), arr(x) + arr(idx) + arr(y) + [i32(col0)])
    rows = np.concatenate([idx, np.zeros(12, i32)])  # the padded index tile holds row 0
    close(y, slice_cols(x[rows], col0, 32))


@pytest.mark.parametrize("sm", ARCHS)
def test_advanced_indexing_load_slice_from_bid(sm):
    x = rand((30, 70), f16)  # 3 column blocks of 32, the last one partial (padding)
    idx = RNG.permutation(30)[:16].astype(i32)
    y = np.zeros((16, 70), f16)
    run("adv_load_bid_cols", sm, (3, 1, 1), arr(x) + arr(idx) + arr(y))
    close(y, x[idx])


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("col0", [0, 5, 33])
def test_advanced_indexing_store_runtime_slice(sm, col0):
    x = rand((16, 32))
    idx = RNG.permutation(30)[:16].astype(i32)
    y = np.zeros((30, 50), f32)
    run("adv_store_cols", sm, (1, 1, 1), arr(x) + arr(idx) + arr(y) + [i32(col0)])
    ref = np.zeros((30, 50), f32)
    w = min(32, 50 - col0)
    ref[idx, col0:col0 + w] = x[:, :w]
    close(y, ref)


@pytest.mark.parametrize("sm", ARCHS)
@pytest.mark.parametrize("row0", [0, 3, 15])  # 15: rows past the edge (20 rows)
def test_advanced_indexing_index_tile_on_the_last_axis(sm, row0):
    x = rand((20, 40))
    idx = RNG.permutation(40)[:32].astype(i32)
    y = np.full((8, 32), 7.0, f32)
    run("adv_load_rows_gather_cols", sm, (1, 1, 1), arr(x) + arr(idx) + arr(y) + [i32(row0)])
    ref = np.zeros((8, 32), f32)
    h = min(8, 20 - row0)
    ref[:h] = x[row0:row0 + h][:, idx]
    close(y, ref)
    src = rand((8, 32))
    z = np.zeros((20, 40), f32)
    run("adv_store_rows_scatter_cols", sm, (1, 1, 1), arr(src) + arr(idx) + arr(z) + [i32(row0)])
    ref = np.zeros((20, 40), f32)
    ref[row0:row0 + h, idx] = src[:h]
    close(z, ref)


@pytest.mark.parametrize("sm", ARCHS)
def test_advanced_indexing_3d_middle_axis(sm):
    x = rand((3, 12, 20))
    idx = RNG.permutation(12)[:8].astype(i32)
    y = np.full((2, 8, 16), 7.0, f32)
    r0, c0 = 2, 9  # one batch and 11 columns in bounds
    run("adv_load_3d", sm, (1, 1, 1), arr(x) + arr(idx) + arr(y) + [i32(r0), i32(c0)])
    ref = np.zeros((2, 8, 16), f32)
    ref[:1, :, :11] = x[r0:r0 + 1][:, idx, c0:c0 + 11]
    close(y, ref)


@pytest.mark.parametrize("sm", ARCHS)
def test_advanced_indexing_indices_outside_the_array(sm):
    """Index values past either end of the sparse axis read the padding / store nothing."""
    x = rand((30, 50))
    idx = np.array([3, 35, 29, 30, -1, 0, 7, 100, 1, 2, 13, 4, 5, 6, 17, 8, 9, 10, 11, 12], i32)
    valid = np.where((idx >= 0) & (idx < 30), idx, 30)  # row 30: a row of zeros (the padding)
    y = np.full((32, 32), 7.0, f32)
    run("adv_load_cols", sm, (2, 1, 1), arr(x) + arr(idx) + arr(y) + [i32(5)])
    rows = np.concatenate([valid, np.zeros(12, i32)])
    close(y, slice_cols(np.vstack([x, np.zeros((1, 50), f32)])[rows], 5, 32))
    src, z = rand((16, 32)), np.zeros((30, 50), f32)
    run("adv_store_cols", sm, (1, 1, 1), arr(src) + arr(idx[:16].copy()) + arr(z) + [i32(-3)])
    ref = np.zeros((31, 50), f32)
    ref[valid[:16], :29] = src[:, 3:]
    close(z, ref[:30])
