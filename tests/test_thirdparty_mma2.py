"""Round 4b of kernels written the way an outside cuTile author writes them: the matmul / attention family in
the style of NVIDIA's TileGym kernels (LLM workloads): 2-D swizzled block ids, static persistent loops over
``ct.num_blocks``, batched / grouped GEMMs (lists of arrays walked by ``ct.static_iter``), split-K with a
reduce kernel, fused epilogues (bias, activation, scales, casts to f16 / bf16 / f8), flash attention with
``exp2`` and ``qk_scale * log2(e)``, masking of the last partial K tile, GQA heads, split-KV decode with a
combine kernel, MLA-style decode (two products into one score tile), backward attention, chunked linear
attention, block-scaled FP8 through gathers, ``ct.mma`` into several accumulator types, ``@``, operands
transposed in registers (``ct.transpose`` / ``ct.permute`` of loaded tiles), kernel hints (``occupancy``,
``num_ctas``, ``ct.ByTarget``) and ``latency`` / ``allow_tma`` on loads and stores.

Each kernel is this file's own code. Each runs on sm_80 / sm_90a / sm_100a in the CPU emulator
(``tilecore.cutile.launch`` on numpy arrays) against a float64 numpy reference, on sizes that are not tile
multiples; where the dtypes allow, the test also asserts the tensor-core path of each target in the PTX
(``mma.sync`` on sm_80, ``wgmma.mma_async`` on sm_90a, ``tcgen05.mma`` on sm_100a). A kernel that found a
bug says so in its test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

import tilecore.cutile as tc  # noqa: E402
from tilecore.narrow_floats import decode, encode  # noqa: E402

SMS = ["sm_80", "sm_90a", "sm_100a"]
Z = ct.PaddingMode.ZERO
ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]
LOG2E = 1.0 / math.log(2.0)
MMA_OP = {"sm_80": "mma.sync", "sm_90a": "wgmma.mma_async", "sm_100a": "tcgen05.mma"}


def _rng(seed):
    return np.random.default_rng(seed)


def _run(sm, grid, kernel, args, rows=64):
    """Launch ``kernel`` in the emulator for ``sm``; unless ``rows`` is None, assert the target's tensor-core op
    in its PTX (``rows``: the M of its products; a wgmma is 64 rows, sm_90a keeps narrower tiles on mma.sync)."""
    tc.launch(None, grid, kernel, args, gpu_name=sm)
    if rows is not None:
        op = "mma.sync" if sm == "sm_90a" and rows < 64 else MMA_OP[sm]
        ptx = tc.compile(kernel, args, gpu_name=sm).ptx
        assert op in ptx, f"{sm}: no {op} in the PTX of {kernel}"


def _close(got, want, dtype):
    """assert_allclose with tolerances by the operand / output dtype."""
    tol = {"f32": (1e-4, 1e-4), "tf32": (2e-2, 3e-2), "f16": (5e-3, 5e-3), "bf16": (2e-2, 3e-2),
           "f8": (6e-2, 1e-1), "f64": (1e-10, 1e-10)}[dtype]
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol[0], atol=tol[1])


def _bf16_bits(x):
    """float ``x`` rounded to nearest-even bf16, as uint16 codes."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _f8_codes(x, fmt="f8E4M3FN"):
    return np.vectorize(lambda v: encode(float(v), fmt), otypes=[np.uint8])(x)


def _f8_value(codes, fmt="f8E4M3FN"):
    return np.vectorize(lambda c: decode(int(c), fmt), otypes=[np.float64])(codes)


def _f16(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def _swizzled(tile_id, M, N, TM: int, TN: int, GROUP: int):
    """Tile ``tile_id`` of an M x N output in grouped (L2-friendly) order: GROUP row-tiles per column sweep."""
    rows = ct.cdiv(M, TM)
    per_group = GROUP * ct.cdiv(N, TN)
    first = (tile_id // per_group) * GROUP
    height = ct.minimum(rows - first, GROUP)
    return first + tile_id % height, (tile_id % per_group) // height


def _swizzled_ref(tile_id, M, N, TM, TN, GROUP):
    rows = -(-M // TM)
    per_group = GROUP * -(-N // TN)
    first = (tile_id // per_group) * GROUP
    height = min(rows - first, GROUP)
    return first + tile_id % height, (tile_id % per_group) // height


# ------------------------------------------------------------------------------ swizzled matmul, load latencies, f16 out
@ct.kernel(occupancy=2)
def mm_swizzled(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, GROUP: ConstInt):
    bm, bn = _swizzled(ct.bid(0), A.shape[0], B.shape[1], TM, TN, GROUP)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=Z, latency=3)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=Z, latency=5)
        acc = ct.mma(a, b, acc=acc)
    ct.store(C, index=(bm, bn), tile=ct.astype(acc, C.dtype), latency=2)


@pytest.mark.parametrize("sm", SMS)
def test_swizzled_matmul_with_latency_hints(sm):
    rng = _rng(1)
    m, n, k = 136, 40, 100
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    c = np.zeros((m, n), np.float16)
    tiles = -(-m // 64) * -(-n // 32)
    assert sorted(_swizzled_ref(t, m, n, 64, 32, 2) for t in range(tiles)) == [(i, j) for i in range(3) for j in range(2)]
    _run(sm, (tiles,), mm_swizzled, (a, b, c, 64, 32, 32, 2))
    _close(c, a.astype(np.float64) @ b, "f16")


# ------------------------------------------------------------------------------ static persistent, operands transposed
@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, default=1))
def mm_persistent_t(A, B, C, M: int, N: int, K: int, TM: ConstInt, TN: ConstInt, TK: ConstInt,
                    TRANS_A: ConstBool, TRANS_B: ConstBool):
    tiles = ct.cdiv(M, TM) * ct.cdiv(N, TN)
    for t in range(ct.bid(0), tiles, ct.num_blocks(0)):
        bm, bn = _swizzled(t, M, N, TM, TN, 2)
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(ct.cdiv(K, TK)):
            if TRANS_A:  # A stored K x M
                a = ct.transpose(ct.load(A, index=(k, bm), shape=(TK, TM), padding_mode=Z, latency=4))
            else:
                a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=Z)
            if TRANS_B:  # B stored N x K (a weight matrix)
                b = ct.transpose(ct.load(B, index=(bn, k), shape=(TN, TK), padding_mode=Z, latency=4))
            else:
                b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=Z)
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_persistent_matmul_with_operands_transposed_in_registers(sm, ta, tb):
    rng = _rng(2)
    m, n, k = 72, 40, 100
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    c = np.zeros((m, n), np.float32)
    aa = np.ascontiguousarray(a.T) if ta else a
    bb = np.ascontiguousarray(b.T) if tb else b
    args = (aa, bb, c, m, n, k, 64, 32, 32, ta, tb)
    _run(sm, (3,), mm_persistent_t, args)
    _close(c, a.astype(np.float64) @ b, "f16")
    # num_ctas=ByTarget(sm_100=2): a cluster of two CTAs per tile block on sm_100a, one elsewhere
    assert tc.compile(mm_persistent_t, args, gpu_name=sm).contract.cluster == ((2, 1, 1) if sm == "sm_100a" else (1, 1, 1))


# ------------------------------------------------------------------------------ batched matmul: 3-D tiles, permute of B
@ct.kernel
def bmm_persistent(A, B, C, BATCH: int, TM: ConstInt, TN: ConstInt, TK: ConstInt, TRANS_B: ConstBool):
    M, N, K = A.shape[1], C.shape[2], A.shape[2]
    per_batch = ct.cdiv(M, TM) * ct.cdiv(N, TN)
    for t in range(ct.bid(0), BATCH * per_batch, ct.num_blocks(0)):
        q = t // per_batch
        bm, bn = _swizzled(t % per_batch, M, N, TM, TN, 4)
        acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
        for k in range(ct.cdiv(K, TK)):
            a3 = ct.load(A, index=(q, bm, k), shape=(1, TM, TK), order=(0, 1, 2), padding_mode=Z, latency=3)
            if TRANS_B:
                b3 = ct.permute(ct.load(B, index=(q, bn, k), shape=(1, TN, TK), padding_mode=Z, latency=3), (0, 2, 1))
            else:
                b3 = ct.load(B, index=(q, k, bn), shape=(1, TK, TN), padding_mode=Z, latency=3)
            acc = ct.mma(ct.reshape(a3, (TM, TK)), ct.reshape(b3, (TK, TN)), acc=acc)
        out = ct.reshape(ct.astype(acc, C.dtype), (1, TM, TN))
        ct.store(C, index=(q, bm, bn), tile=out, order=(0, 1, 2), latency=3)


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("tb", [False, True])
def test_persistent_bmm_with_3d_tiles(sm, tb):
    rng = _rng(3)
    q, m, n, k = 3, 40, 24, 72
    a = rng.standard_normal((q, m, k)).astype(np.float16)
    b = rng.standard_normal((q, k, n)).astype(np.float16)
    c = np.zeros((q, m, n), np.float16)
    bb = np.ascontiguousarray(np.swapaxes(b, 1, 2)) if tb else b
    _run(sm, (4,), bmm_persistent, (a, bb, c, q, 32, 16, 32, tb), rows=32)
    _close(c, a.astype(np.float64) @ b, "f16")


# ------------------------------------------------------------------------------ grouped GEMM over lists of arrays
@ct.kernel
def group_gemm(As, Bs, Cs, G: ConstInt, TM: ConstInt, TN: ConstInt, TK: ConstInt, PROGRAMS: ConstInt, TRANS_B: ConstBool):
    tile = ct.bid(0)
    done = 0
    for g in ct.static_iter(range(G)):  # cuTile 1.x: no len() of a list argument
        a_g, b_g, c_g = As[g], Bs[g], Cs[g]
        rows = ct.num_tiles(a_g, 0, (TM, TK))
        ks = ct.num_tiles(a_g, 1, (TM, TK))
        if TRANS_B:
            cols = ct.num_tiles(b_g, 0, (TN, TK))
        else:
            cols = ct.num_tiles(b_g, 1, (TK, TN))
        count = rows * cols
        while tile >= done and tile < done + count:
            local = tile - done
            i, j = local // cols, local % cols
            acc = ct.zeros((TM, TN), dtype=ct.float32)
            for kk in range(ks):
                ta = ct.load(a_g, (i, kk), shape=(TM, TK), padding_mode=Z)
                if TRANS_B:
                    tb = ct.transpose(ct.load(b_g, (j, kk), shape=(TN, TK), padding_mode=Z))
                else:
                    tb = ct.load(b_g, (kk, j), shape=(TK, TN), padding_mode=Z)
                acc = ct.mma(ta, tb, acc)
            ct.store(c_g, (i, j), tile=ct.astype(acc, c_g.dtype))
            tile += PROGRAMS
        done = done + count


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("tb", [False, True])
def test_grouped_gemm_over_lists_of_arrays(sm, tb):
    rng = _rng(4)
    shapes = [(40, 24, 50), (20, 40, 36), (33, 17, 70)]  # (M, N, K) per group, none a tile multiple
    As = [_f16(rng, m, k) for m, n, k in shapes]
    Bs = [_f16(rng, k, n) for m, n, k in shapes]
    Cs = [np.zeros((m, n), np.float32) for m, n, k in shapes]
    Bk = [np.ascontiguousarray(b.T) for b in Bs] if tb else Bs
    programs = 3
    _run(sm, (programs,), group_gemm, (As, Bk, Cs, len(As), 32, 16, 32, programs, tb), rows=32)
    for a, b, c in zip(As, Bs, Cs):
        _close(c, a.astype(np.float64) @ b, "f16")


# ------------------------------------------------------------------------------ split-K into a workspace + reduce kernel
@ct.kernel
def mm_split_k_partial(A, B, W, TM: ConstInt, TN: ConstInt, TK: ConstInt, K_PER_SPLIT: ConstInt):
    bm, bn, s = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    first = s * (K_PER_SPLIT // TK)
    last = ct.minimum(first + K_PER_SPLIT // TK, ct.cdiv(A.shape[1], TK))
    for k in range(first, last):
        acc = ct.mma(ct.load(A, (bm, k), (TM, TK), padding_mode=Z), ct.load(B, (k, bn), (TK, TN), padding_mode=Z),
                     acc)
    ct.store(W, (s, bm, bn), acc.reshape((1, TM, TN)))


@ct.kernel
def split_k_reduce_epilogue(W, Bias, C, SPLITS: ConstInt, TM: ConstInt, TN: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    parts = ct.load(W, (0, bm, bn), (SPLITS, TM, TN), padding_mode=Z)
    acc = ct.sum(parts, axis=0)
    bias = ct.load(Bias, (bn,), (TN,), padding_mode=Z)
    y = ct.maximum(acc + bias[None, :], 0.0)
    ct.store(C, (bm, bn), ct.astype(y, ct.float16))


@pytest.mark.parametrize("sm", SMS)
def test_split_k_workspace_and_reduce_kernel(sm):
    rng = _rng(5)
    m, n, k = 72, 40, 100
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    bias = rng.standard_normal(n).astype(np.float32)
    splits, per = 2, 64
    w = np.full((splits, m, n), np.nan, np.float32)
    c = np.zeros((m, n), np.float16)
    _run(sm, (2, 2, splits), mm_split_k_partial, (a, b, w, 64, 32, 32, per))
    want_parts = [a[:, s * per:(s + 1) * per].astype(np.float64) @ b[s * per:(s + 1) * per] for s in range(splits)]
    _close(w, np.stack(want_parts), "f16")
    _run(sm, (2, 2), split_k_reduce_epilogue, (w, bias, c, splits, 64, 32), rows=None)
    _close(c, np.maximum(a.astype(np.float64) @ b + bias, 0), "f16")


# ------------------------------------------------------------------------------ attention references
def _softmax_rows(s):
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def _attention_ref(q, k, v, scale, causal, offset=0):
    """softmax(q k^T * scale) v in float64 over the last two axes; causal: query i (at position i + offset) sees
    keys 0 .. i + offset."""
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) * scale
    if causal:
        i = np.arange(s.shape[-2])[:, None] + offset
        s = np.where(np.arange(s.shape[-1])[None, :] <= i, s, -np.inf)
    return _softmax_rows(s) @ v.astype(np.float64), s


# ------------------------------------------------------------------------------ flash attention forward (exp2, GQA, LSE)
@ct.kernel(occupancy=2)
def fmha_fwd(Q, K, V, Out, Lse, qk_scale: float, input_pos: int, D: ConstInt, H: ConstInt, TM: ConstInt,
             TN: ConstInt, GROUP: ConstInt, CAUSAL: ConstBool, EVEN_K: ConstBool):
    bx, bhz = ct.bid(0), ct.bid(1)
    batch, head = bhz // H, bhz % H
    kv_head = head // GROUP
    scale2 = qk_scale * LOG2E
    rows = (bx * TM + ct.arange(TM, dtype=ct.int32) + input_pos)[:, None]
    cols0 = ct.arange(TN, dtype=ct.int32)[None, :]
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    q = ct.load(Q, index=(batch, head, bx, 0), shape=(1, 1, TM, D), padding_mode=Z).reshape((TM, D))
    n_keys = K.shape[2]
    if CAUSAL:
        last = ct.minimum(input_pos + (bx + 1) * TM, n_keys)
        first_masked = ct.minimum((input_pos + bx * TM) // TN, n_keys // TN)
    else:
        last = n_keys
        first_masked = n_keys // TN
    for j in range(0, ct.cdiv(last, TN)):
        kt = ct.load(K, index=(batch, kv_head, 0, j), shape=(1, 1, D, TN), order=(0, 1, 3, 2), padding_mode=Z,
                     latency=2).reshape((D, TN))
        s = ct.mma(q, kt, ct.full((TM, TN), 0.0, dtype=ct.float32))
        if (CAUSAL or not EVEN_K) and j >= first_masked:
            cols = j * TN + cols0
            keep = ct.full((TM, TN), True, dtype=ct.bool_)
            if not EVEN_K:
                keep = keep & (cols < n_keys)
            if CAUSAL:
                keep = keep & (rows >= cols)
            s = s + ct.where(keep, 0.0, -math.inf)
        m_new = ct.maximum(m_i, ct.max(s, axis=-1, keepdims=True) * scale2)
        p = ct.exp2(s * scale2 - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        v = ct.load(V, index=(batch, kv_head, j, 0), shape=(1, 1, TN, D), padding_mode=Z, latency=4).reshape((TN, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m_i = m_new
    out = ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, index=(batch, head, bx, 0), tile=out.reshape((1, 1, TM, D)).astype(Out.dtype))
    lse = (m_i + ct.log2(l_i)).reshape((TM,))
    at = (batch * H + head) * Q.shape[2] + bx * TM + ct.arange(TM, dtype=ct.int32)
    ct.scatter(Lse, at, lse, mask=(bx * TM + ct.arange(TM, dtype=ct.int32)) < Q.shape[2])


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_forward_exp2_gqa(sm, causal):
    rng = _rng(10)
    b, h, hkv, s, d = 1, 4, 2, 72, 32
    q = _f16(rng, b, h, s, d)
    k = _f16(rng, b, hkv, s, d)
    v = _f16(rng, b, hkv, s, d)
    out = np.zeros((b, h, s, d), np.float16)
    lse = np.full(b * h * s, 7.0, np.float32)
    scale = 1 / math.sqrt(d)
    _run(sm, (-(-s // 64), b * h), fmha_fwd, (q, k, v, out, lse, scale, 0, d, h, 64, 32, h // hkv, causal, s % 32 == 0))
    kk, vv = np.repeat(k, h // hkv, 1), np.repeat(v, h // hkv, 1)
    want, logits = _attention_ref(q, kk, vv, scale, causal)
    _close(out, want, "f16")
    want_lse = np.log2(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1) * LOG2E
    np.testing.assert_allclose(lse, want_lse.reshape(-1), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("sm", SMS)
def test_flash_attention_prefill_with_cached_prefix(sm):
    """Queries at positions input_pos .. input_pos + S - 1 over input_pos + S keys (a KV cache prefix)."""
    rng = _rng(11)
    b, h, s, pos, d = 2, 1, 40, 30, 16
    q = _f16(rng, b, h, s, d)
    k = _f16(rng, b, h, s + pos, d)
    v = _f16(rng, b, h, s + pos, d)
    out = np.zeros((b, h, s, d), np.float32)
    lse = np.zeros(b * h * s, np.float32)
    _run(sm, (1, b * h), fmha_fwd, (q, k, v, out, lse, 0.3, pos, d, h, 64, 32, 1, True, False))
    want, _ = _attention_ref(q, k, v, 0.3, True, offset=pos)
    _close(out, want, "f16")


# ------------------------------------------------------------------------------ split-KV decode + LSE combine kernel
@ct.kernel
def decode_split_kv(Q, K, V, Mid, MidLse, sm_scale: float, S_KV: int, D: ConstInt, TN: ConstInt,
                    PER_SPLIT: ConstInt, QPK: ConstInt, G: ConstInt):
    b, kvh, split = ct.bid(0), ct.bid(1), ct.bid(2)
    scale2 = sm_scale * LOG2E
    # the QPK query heads of this KV head, padded to G rows; the product is kept transposed: (D, G)
    q = ct.transpose(ct.load(Q, index=(b, kvh, 0, 0), shape=(1, 1, G, D), padding_mode=Z).reshape((G, D)))
    start = split * PER_SPLIT
    stop = ct.minimum(start + PER_SPLIT, S_KV)
    m_i = ct.full((G,), -math.inf, dtype=ct.float32)
    l_i = ct.full((TN, G), 0.0, dtype=ct.float32)
    acc = ct.zeros((D, G), dtype=ct.float32)
    offs = ct.arange(TN, dtype=ct.int32)
    if stop > start:
        for t in range(ct.cdiv(PER_SPLIT, TN)):
            tile = start // TN + t
            kt = ct.load(K, index=(b, kvh, tile, 0), shape=(1, 1, TN, D), padding_mode=Z, allow_tma=True)
            s = ct.matmul(kt.reshape((TN, D)), q)  # (TN, G)
            if tile * TN + TN > stop:
                s = ct.where((tile * TN + offs[:, None]) < stop, s, -1.0e6)
            s = s * scale2
            m_new = ct.maximum(m_i, ct.max(s, 0))
            p = ct.exp2(s - m_new[None, :])
            alpha = ct.exp2(m_i - m_new)
            l_i = l_i * alpha[None, :] + p
            vt = ct.transpose(ct.load(V, index=(b, kvh, tile, 0), shape=(1, 1, TN, D), padding_mode=Z).reshape((TN, D)))
            acc = ct.mma(vt, p.astype(q.dtype), acc=acc * alpha[None, :])
            m_i = m_new
    l_sum = ct.sum(l_i, 0)
    out = ct.transpose(ct.truediv(acc, l_sum[None, :], flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX))
    heads = ct.arange(G, dtype=ct.int32)[:, None]
    dims = ct.arange(D, dtype=ct.int32)[None, :]
    ct.scatter(Mid, (b, kvh * QPK + heads, split, dims), out.astype(Mid.dtype), mask=heads < QPK, latency=1)
    g1 = ct.arange(G, dtype=ct.int32)
    ct.scatter(MidLse, (b, kvh * QPK + g1, split), m_i + ct.log2(l_sum), mask=g1 < QPK, latency=1)


@ct.kernel(occupancy=ct.ByTarget(sm_80=2, default=4))
def decode_combine(Mid, MidLse, Out, SPLITS_P2: ConstInt, TD: ConstInt, USE_MMA: ConstBool):
    b, h, dt = ct.bid(0), ct.bid(1), ct.bid(2)
    parts = ct.load(Mid, (b, h, 0, dt), shape=(1, 1, SPLITS_P2, TD), padding_mode=Z, latency=2, allow_tma=True)
    parts = parts.reshape((SPLITS_P2, TD)).astype(ct.float32)
    lse = ct.gather(MidLse, (b, h, ct.arange(SPLITS_P2, dtype=ct.int32)), padding_value=-math.inf)
    w = ct.exp2(lse - ct.max(lse))
    if USE_MMA:  # a one-row product: (1, SPLITS) x (SPLITS, TD)
        num = ct.extract(ct.mma(w[None, :], parts, ct.zeros((1, TD), dtype=ct.float32)), (0, 0), shape=(1, TD))
        num = num.reshape((TD,))
    else:
        num = ct.sum(parts * w.reshape((SPLITS_P2, 1)), axis=0)
    ct.store(Out, index=(b, h, dt), tile=(num / ct.sum(w)).astype(Out.dtype).reshape((1, 1, TD)), latency=2)


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("use_mma", [False, True])
def test_split_kv_decode_and_combine(sm, use_mma):
    rng = _rng(12)
    b, hq, hkv, s, d = 2, 6, 2, 100, 32
    qpk, g, tn, per = hq // hkv, 8, 16, 32
    splits = -(-s // per)
    q = _f16(rng, b, hq, d)
    k = _f16(rng, b, hkv, s, d)
    v = _f16(rng, b, hkv, s, d)
    mid = np.zeros((b, hq, splits, d), np.float32)
    mid_lse = np.zeros((b, hq, splits), np.float32)
    scale = 1 / math.sqrt(d)
    _run(sm, (b, hkv, splits), decode_split_kv,
         (q.reshape(b, hkv, qpk, d), k, v, mid, mid_lse, scale, s, d, tn, per, qpk, g), rows=None)
    kk, vv = np.repeat(k, qpk, 1), np.repeat(v, qpk, 1)
    for sp in range(splits):
        part, logits = _attention_ref(q[:, :, None], kk[:, :, sp * per:(sp + 1) * per], vv[:, :, sp * per:(sp + 1) * per],
                                      scale, False)
        _close(mid[:, :, sp], part[:, :, 0], "f16")
        lse = np.log(np.exp(logits).sum(-1))[:, :, 0] * LOG2E
        np.testing.assert_allclose(mid_lse[:, :, sp], lse, rtol=1e-3, atol=1e-3)
    out = np.zeros((b, hq, d), np.float16)
    _run(sm, (b, hq, 1), decode_combine, (mid, mid_lse, out, 4, d, use_mma), rows=None)
    want, _ = _attention_ref(q[:, :, None], kk, vv, scale, False)
    _close(out, want[:, :, 0], "f16")


# ------------------------------------------------------------------------------ MLA decode: two products into one score
@ct.kernel(occupancy=2)
def mla_decode(Q, QPE, KV, KPE, Out, sm_scale: float, S_KV: int, TD: ConstInt, TH: ConstInt, TN: ConstInt,
               TPE: ConstInt, EVEN_N: ConstBool):
    hx, b = ct.bid(0), ct.bid(1)
    scale2 = sm_scale * LOG2E
    q = ct.load(Q, index=(b, 0, hx), shape=(1, TD, TH), order=(0, 2, 1), padding_mode=Z, latency=2).reshape((TD, TH))
    qpe = ct.load(QPE, index=(b, 0, hx), shape=(1, TPE, TH), order=(0, 2, 1), padding_mode=Z).reshape((TPE, TH))
    m_i = ct.full((TH,), -math.inf, dtype=ct.float32)
    l_i = ct.full((TN, TH), 0.0, dtype=ct.float32)
    acc = ct.zeros((TD, TH), dtype=ct.float32)
    offs = ct.arange(TN, dtype=ct.int32)
    full_end = S_KV // TN * TN
    tile = 0
    for n0 in range(0, S_KV, TN):
        kv = ct.load(KV, index=(b, tile, 0), shape=(1, TN, TD), padding_mode=Z, latency=2).reshape((TN, TD))
        s = ct.mma(kv, q, ct.full((TN, TH), 0.0, dtype=ct.float32))
        kpe = ct.load(KPE, index=(b, tile, 0), shape=(1, TN, TPE), padding_mode=Z).reshape((TN, TPE))
        s = ct.mma(kpe, qpe, s)
        if not EVEN_N and n0 >= full_end:
            s = ct.where((n0 + offs[:, None]) < S_KV, s, -1.0e6)
        m_new = ct.maximum(m_i, ct.max(s, 0) * scale2)
        p = ct.exp2(s * scale2 - m_new[None, :])
        alpha = ct.exp2(m_i - m_new)
        l_i = l_i * alpha[None, :] + p
        # the values are the same latent rows, read as (TN, 1, TD) through a (S, B, D) order
        v = ct.load(KV, index=(tile, b, 0), shape=(TN, 1, TD), order=(1, 0, 2), padding_mode=Z).reshape((TN, TD))
        acc = ct.mma(ct.transpose(v, axis0=1, axis1=0), p.astype(Q.dtype), acc * alpha[None, :])
        m_i = m_new
        tile += 1
    out = ct.transpose(acc / ct.sum(l_i, 0)[None, :])
    ct.store(Out, index=(b, hx, 0), tile=out.astype(Out.dtype).reshape((1, TH, TD)))


@pytest.mark.parametrize("sm", SMS)
def test_mla_decode_two_products_one_score(sm):
    rng = _rng(13)
    b, heads, s, d, pe = 2, 12, 50, 32, 16
    q, qpe = _f16(rng, b, heads, d), _f16(rng, b, heads, pe)
    kv, kpe = _f16(rng, b, s, d), _f16(rng, b, s, pe)
    out = np.zeros((b, heads, d), np.float32)
    scale = 1 / math.sqrt(d + pe)
    _run(sm, (-(-heads // 16), b), mla_decode, (q, qpe, kv, kpe, out, scale, s, d, 16, 32, pe, s % 32 == 0),
         rows=32)
    logits = (q.astype(np.float64) @ np.swapaxes(kv, 1, 2) + qpe.astype(np.float64) @ np.swapaxes(kpe, 1, 2)) * scale
    _close(out, _softmax_rows(logits) @ kv.astype(np.float64), "f16")


# ------------------------------------------------------------------------------ attention backward: dK / dV (GQA group loop)
@ct.kernel(occupancy=2)
def fmha_bwd_dkdv(Q, K, V, dO, dK, dV, Lse, Delta, qk_scale: float, D: ConstInt, HQ: ConstInt, S: ConstInt,
                  TM: ConstInt, TN: ConstInt, GROUP: ConstInt, CAUSAL: ConstBool):
    bn, kvh = ct.bid(0), ct.bid(1)
    scale2 = qk_scale * LOG2E
    dk = ct.full((TN, D), 0.0, dtype=ct.float32)
    dv = ct.full((TN, D), 0.0, dtype=ct.float32)
    k = ct.load(K, index=(0, kvh, bn, 0), shape=(1, 1, TN, D), padding_mode=Z, latency=2).reshape((TN, D))
    v = ct.load(V, index=(0, kvh, bn, 0), shape=(1, 1, TN, D), padding_mode=Z, latency=2).reshape((TN, D))
    key_pos = (bn * TN + ct.arange(TN, dtype=ct.int32))[:, None]
    start = bn * TN // TM if CAUSAL else 0
    for g in range(GROUP):
        qh = kvh * GROUP + g
        for mi in range(start, ct.cdiv(S, TM)):
            q = ct.load(Q, index=(0, qh, mi, 0), shape=(1, 1, TM, D), padding_mode=Z).reshape((TM, D))
            do = ct.load(dO, index=(0, qh, mi, 0), shape=(1, 1, TM, D), padding_mode=Z, latency=3).reshape((TM, D))
            at = qh * S + mi * TM + ct.arange(TM, dtype=ct.int32)
            inside = (mi * TM + ct.arange(TM, dtype=ct.int32)) < S
            lse = ct.gather(Lse, at, mask=inside, padding_value=math.inf)
            delta = ct.gather(Delta, at, mask=inside)
            st = ct.mma(k, q.permute((1, 0)), ct.full((TN, TM), 0.0, dtype=ct.float32))  # S^T
            pt = ct.exp2(st * scale2 - lse[None, :], flush_to_zero=True)
            if CAUSAL:
                q_pos = (mi * TM + ct.arange(TM, dtype=ct.int32))[None, :]
                pt = ct.where(key_pos <= q_pos, pt, 0.0)
            dv = ct.mma(pt.astype(Q.dtype), do, dv)
            dpt = ct.mma(v, do.permute((1, 0)), ct.full((TN, TM), 0.0, dtype=ct.float32))
            dst = pt * (dpt - delta[None, :])
            dk = ct.mma(dst.astype(Q.dtype), q, dk)
    ct.store(dK, index=(0, kvh, bn, 0), tile=(dk * qk_scale).reshape((1, 1, TN, D)).astype(dK.dtype))
    ct.store(dV, index=(0, kvh, bn, 0), tile=dv.reshape((1, 1, TN, D)).astype(dV.dtype))


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_dk_dv(sm, causal):
    rng = _rng(14)
    h, hkv, s, d = 2, 1, 40, 16
    q, k, v, do = _f16(rng, 1, h, s, d), _f16(rng, 1, hkv, s, d), _f16(rng, 1, hkv, s, d), _f16(rng, 1, h, s, d)
    scale = 1 / math.sqrt(d)
    kk, vv = np.repeat(k, h, 1).astype(np.float64), np.repeat(v, h, 1).astype(np.float64)
    o, logits = _attention_ref(q, kk, vv, scale, causal)
    lse = (np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)) * LOG2E
    delta = (o * do).sum(-1)
    dk, dv = np.zeros((1, hkv, s, d), np.float32), np.zeros((1, hkv, s, d), np.float32)
    _run(sm, (-(-s // 32), hkv), fmha_bwd_dkdv,
         (q, k, v, do, dk, dv, lse.reshape(-1).astype(np.float32), delta.reshape(-1).astype(np.float32), scale, d, h,
          s, 32, 32, h // hkv, causal), rows=32)
    p = _softmax_rows(logits)
    dp = do.astype(np.float64) @ np.swapaxes(vv, -1, -2)
    ds = p * (dp - delta[..., None])
    want_dv = (np.swapaxes(p, -1, -2) @ do.astype(np.float64)).sum(1, keepdims=True)
    want_dk = (np.swapaxes(ds, -1, -2) @ q.astype(np.float64)).sum(1, keepdims=True) * scale
    np.testing.assert_allclose(dv, want_dv, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(dk, want_dk, rtol=2e-2, atol=2e-2)


# ------------------------------------------------------------------------------ ct.mma into every accumulator type
@ct.kernel
def mma_acc_types(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, OPERAND: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=Z)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=Z)
        if OPERAND == 1:  # f32 arrays into tf32 operands
            a, b = a.astype(ct.tfloat32), b.astype(ct.tfloat32)
        elif OPERAND == 2:  # uint8 codes read as e4m3
            a, b = ct.bitcast(a, ct.float8_e4m3fn), ct.bitcast(b, ct.float8_e4m3fn)
        elif OPERAND == 3:  # uint8 codes read as e5m2
            a, b = ct.bitcast(a, ct.float8_e5m2), ct.bitcast(b, ct.float8_e5m2)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


def _f8_operand(rng, shape, fmt="f8E4M3FN"):
    vals = np.round(rng.uniform(-4, 4, shape) * 2) / 2  # exact in e4m3 and e5m2
    return _f8_codes(vals, fmt), vals


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("case", ["f16-f16", "f16-f32", "tf32-f32", "i8-i32", "u8-i32", "f64-f64", "e4m3-f32",
                                  "e4m3-f16", "e5m2-f16"])
def test_mma_into_each_accumulator_type(sm, case):
    """e4m3 / e5m2 x e4m3 / e5m2 into an f16 accumulator (``e4m3-f16``, ``e5m2-f16``) found that sm_90a had no
    wgmma atom for it (``wgmma.mma_async ... m64nNk32.f16.e4m3.e4m3`` exists in the PTX ISA) and fell back to
    CUDA-core FMAs: the right numbers without the tensor cores. Now ``mma.sm90a.m64nNk32.f8.f16``."""
    rng = _rng(15)
    m, n, k = 72, 40, 100
    operand, accum = case.split("-")
    code = {"tf32": 1, "e4m3": 2, "e5m2": 3}.get(operand, 0)
    if operand in ("f16", "f64", "tf32"):
        dt = {"f16": np.float16, "f64": np.float64, "tf32": np.float32}[operand]
        a, b = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)
        av, bv = a.astype(np.float64), b.astype(np.float64)
    elif operand in ("e4m3", "e5m2"):
        if sm == "sm_80":
            pytest.skip("8-bit float MMA needs sm_89+")
        fmt = "f8E4M3FN" if operand == "e4m3" else "f8E5M2"
        (a, av), (b, bv) = _f8_operand(rng, (m, k), fmt), _f8_operand(rng, (k, n), fmt)
    else:
        dt = np.int8 if operand == "i8" else np.uint8
        lo, hi = (-128, 128) if operand == "i8" else (0, 256)
        a, b = rng.integers(lo, hi, (m, k)).astype(dt), rng.integers(-128, 128, (k, n)).astype(np.int8)
        if operand == "u8":
            b = rng.integers(0, 256, (k, n)).astype(np.uint8)
        av, bv = a.astype(np.int64), b.astype(np.int64)
    c = np.zeros((m, n), {"f16": np.float16, "f32": np.float32, "i32": np.int32, "f64": np.float64}[accum])
    rows = None if operand == "f64" else 64
    _run(sm, (2, 2), mma_acc_types, (a, b, c, 64, 32, 32, code), rows=rows)
    if operand == "f64":  # DMMA on every target, as tileiras
        assert "mma.sync.aligned.m8n8k4.row.col.f64" in tc.compile(mma_acc_types, (a, b, c, 64, 32, 32, code),
                                                                   gpu_name=sm).ptx
    want = av @ bv
    if accum == "i32":
        np.testing.assert_array_equal(c, want)
    elif accum == "f16":
        np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=0.25)
    else:
        _close(c, want, {"f16": "f16", "tf32": "tf32", "f64": "f64", "e4m3": "f32"}[operand])


# ------------------------------------------------------------------------------ the @ operator on tf32, result cast back
def _mm_tf32(a, b):
    """a @ b on the tensor cores for f32 tiles (tf32 operands), as f32."""
    if a.dtype == ct.float32:
        a = ct.astype(a, ct.tfloat32)
    if b.dtype == ct.float32:
        b = ct.astype(b, ct.tfloat32)
    return ct.astype(a @ b, ct.float32)


@ct.kernel
def tril_inverse(A, Out, N: ConstInt, STEPS: ConstInt):
    """(I - L)^-1 of a strictly lower-triangular L (nilpotent) by Neumann products: prod (I + L^(2^j))."""
    b = ct.bid(0)
    low = ct.load(A, (b, 0, 0), (1, N, N), padding_mode=Z).reshape((N, N))
    i = ct.arange(N, dtype=ct.int32)
    eye = ct.where(ct.expand_dims(i, axis=1) == ct.expand_dims(i, axis=0), 1.0, 0.0)
    low = ct.where(ct.expand_dims(i, axis=1) > ct.expand_dims(i, axis=0), low, 0.0)
    prod = eye + low
    power = low
    for _ in range(1, STEPS):
        power = _mm_tf32(power, power)
        prod = _mm_tf32(prod, eye + power)
    ct.store(Out, (b, 0, 0), prod.reshape((1, N, N)))


@pytest.mark.parametrize("sm", SMS)
def test_tril_inverse_by_repeated_tf32_matmuls(sm):
    rng = _rng(16)
    n = 32
    a = (rng.standard_normal((2, n, n)) * 0.1).astype(np.float32)
    out = np.zeros_like(a)
    _run(sm, (2,), tril_inverse, (a, out, n, 5), rows=32)
    for x, got in zip(a, out):
        low = np.tril(x.astype(np.float64), -1)
        np.testing.assert_allclose(got, np.linalg.inv(np.eye(n) - low), rtol=1e-2, atol=1e-2)


# ------------------------------------------------------------------------------ chunked linear attention (state recurrence)
@ct.kernel
def chunked_linear_attention(Q, K, V, G, Out, State, CHUNKS: int, H: ConstInt, C: ConstInt, DK: ConstInt,
                             DV: ConstInt):
    """Gated linear attention per (batch * head, V block): o_t = sum_{s<=t} exp(g_t - g_s) (q_t . k_s) v_s, with
    the inter-chunk part through the running state S (DK x DV): o += exp(g) q S; S = exp(g_last) S + k^T v."""
    bh, vb = ct.bid(0), ct.bid(1)
    b, h = bh // H, bh % H
    state = ct.zeros((DK, DV), dtype=ct.float32)
    i = ct.arange(C, dtype=ct.int32)
    causal = ct.expand_dims(i, axis=1) >= ct.expand_dims(i, axis=0)
    for c in range(CHUNKS):
        q = ct.load(Q, index=(b, c, h, 0), shape=(1, C, 1, DK), padding_mode=Z).reshape((C, DK)).astype(ct.float32)
        k = ct.load(K, index=(b, c, h, 0), shape=(1, C, 1, DK), padding_mode=Z).reshape((C, DK)).astype(ct.float32)
        v = ct.load(V, index=(b, c, h, vb), shape=(1, C, 1, DV), padding_mode=Z).reshape((C, DV)).astype(ct.float32)
        g = ct.cumsum(ct.load(G, index=(b, c, h), shape=(1, C, 1), padding_mode=Z).reshape((C,)), axis=0)
        g_last = ct.load(G, index=(b, c, h), shape=(1, C, 1), padding_mode=Z).reshape((C,))
        g_last = ct.sum(g_last)
        inter = _mm_tf32(q * ct.expand_dims(ct.exp(g), axis=1), state)
        decay = ct.where(causal, ct.exp(ct.expand_dims(g, axis=1) - ct.expand_dims(g, axis=0)), 0.0)
        scores = _mm_tf32(q, ct.transpose(k)) * decay
        out = inter + _mm_tf32(scores, v)
        ct.store(Out, index=(b, h, c, 0, vb), tile=out.reshape((1, 1, 1, C, DV)))
        k_w = k * ct.expand_dims(ct.exp(g_last - g), axis=1)
        state = state * ct.exp(g_last) + _mm_tf32(ct.transpose(k_w), v)
    ct.store(State, index=(b, h, 0, vb), tile=state.reshape((1, 1, DK, DV)))


def _linear_attention_ref(q, k, v, g):
    b, t, h, dk = q.shape
    dv = v.shape[-1]
    out = np.zeros((b, h, t, dv))
    state = np.zeros((b, h, dk, dv))
    for s in range(t):
        decay = np.exp(g[:, s, :])[:, :, None, None]
        state = state * decay + k[:, s, :, :, None].astype(np.float64) * v[:, s, :, None, :]
        out[:, :, s] = np.einsum("bhk,bhkv->bhv", q[:, s].astype(np.float64), state)
    return out, state


@pytest.mark.parametrize("sm", SMS)
def test_chunked_linear_attention_state_recurrence(sm):
    rng = _rng(17)
    b, t, h, dk, dv, c = 1, 40, 2, 16, 32, 16
    chunks = -(-t // c)
    q, k = _f16(rng, b, t, h, dk, scale=0.5), _f16(rng, b, t, h, dk, scale=0.5)
    v = _f16(rng, b, t, h, 2 * dv)
    g = -rng.uniform(0.01, 0.2, (b, t, h)).astype(np.float32)
    out = np.zeros((b, h, chunks, c, 2 * dv), np.float32)
    state = np.zeros((b, h, dk, 2 * dv), np.float32)
    _run(sm, (b * h, 2), chunked_linear_attention, (q, k, v, g, out, state, chunks, h, c, dk, dv), rows=16)
    want, want_state = _linear_attention_ref(q, k, v, g)
    got = out.reshape(b, h, chunks * c, 2 * dv)[:, :, :t]
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=3e-2)
    np.testing.assert_allclose(state, want_state, rtol=2e-2, atol=3e-2)


# ------------------------------------------------------------------------------ W8A8 block-scaled FP8 through gathers
@ct.kernel
def w8a8_block_fp8(A, B, C, As, Bs, M: ConstInt, N: ConstInt, K: ConstInt, TM: ConstInt, TN: ConstInt,
                   TK: ConstInt, OUT: ConstInt, SWAP_AB: ConstBool):
    """C = (A * As) @ (B * Bs)^T with A (M, K) e4m3 scaled per row and K block, B (N, K) e4m3 scaled per
    (N block, K block): one scale per tile, so TN / TK are the quantisation blocks."""
    pm, pn = _swizzled(ct.bid(0), M, N, TM, TN, 2)
    rows = pm * TM + ct.arange(TM, dtype=ct.int32)
    cols = pn * TN + ct.arange(TN, dtype=ct.int32)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for kt in range(ct.cdiv(K, TK)):
        ks = kt * TK + ct.arange(TK, dtype=ct.int32)
        a = ct.bitcast(ct.gather(A, (rows[:, None], ks[None, :])), ct.float8_e4m3fn)  # uint8 codes: numpy has no e4m3
        b = ct.bitcast(ct.gather(B, (cols[:, None], ks[None, :])), ct.float8_e4m3fn)
        a_s = ct.gather(As, (rows, kt), padding_value=0.0, latency=4)
        b_s = ct.gather(Bs, (pn, kt), padding_value=0.0)
        if SWAP_AB:
            part = ct.permute(ct.mma(b, ct.permute(a, (1, 0)), acc=ct.zeros((TN, TM), dtype=ct.float32)), (1, 0))
        else:
            part = ct.mma(a, ct.permute(b, (1, 0)), acc=ct.zeros((TM, TN), dtype=ct.float32))
        acc = acc + part * (a_s[:, None] * b_s)
    if OUT == 1:
        out = ct.astype(acc, ct.float16)
    elif OUT == 2:
        out = ct.bitcast(ct.astype(acc, ct.bfloat16), ct.uint16)
    else:
        out = acc
    ct.scatter(C, (rows[:, None], cols[None, :]), out)


@pytest.mark.parametrize("sm", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("swap,out", [(False, 0), (True, 1), (False, 2), (True, 2)])
def test_w8a8_block_fp8_gathers(sm, swap, out):
    rng = _rng(18)
    m, n, k, tm, tn, tk = 72, 40, 100, 64, 32, 32
    (a, av), (b, bv) = _f8_operand(rng, (m, k)), _f8_operand(rng, (n, k))
    a_s = rng.uniform(0.5, 2, (m, -(-k // tk))).astype(np.float32)
    b_s = rng.uniform(0.5, 2, (-(-n // tn), -(-k // tk))).astype(np.float32)
    c = np.zeros((m, n), [np.float32, np.float16, np.uint16][out])
    tiles = -(-m // tm) * -(-n // tn)
    _run(sm, (tiles,), w8a8_block_fp8, (a, b, c, a_s, b_s, m, n, k, tm, tn, tk, out, swap), rows=tn if swap else tm)
    blocks = np.arange(k) // tk
    want = (av * a_s[:, blocks]) @ (bv * b_s[np.arange(n) // tn][:, blocks]).T
    got = _bf16_value(c) if out == 2 else c
    _close(got, want, {0: "f32", 1: "f16", 2: "bf16"}[out])


# ------------------------------------------------------------------------------ bf16 attention: 128-row tiles, MQA
@ct.kernel
def attention_bf16(Q, K, V, Out, qk_scale: float, S: int, TM: ConstInt, TN: ConstInt, D: ConstInt, CAUSAL: ConstBool):
    """Q, K, V, Out hold bf16 codes (uint16); every query head reads the one KV head (MQA)."""
    bx, h = ct.bid(0), ct.bid(1)
    q = ct.bitcast(ct.load(Q, (h, bx, 0), (1, TM, D), padding_mode=Z).reshape((TM, D)), ct.bfloat16)
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((TM, 1), dtype=ct.float32)
    acc = ct.zeros((TM, D), dtype=ct.float32)
    rows = bx * TM + ct.arange(TM, dtype=ct.int32)[:, None]
    end = ct.minimum((bx + 1) * TM, S) if CAUSAL else S
    for j in range(ct.cdiv(end, TN)):
        kt = ct.bitcast(ct.load(K, (j, 0), (TN, D), padding_mode=Z), ct.bfloat16)
        s = (q @ ct.transpose(kt)).astype(ct.float32) * (qk_scale * LOG2E)
        cols = j * TN + ct.arange(TN, dtype=ct.int32)[None, :]
        keep = cols < S
        if CAUSAL:
            keep = keep & (cols <= rows)
        s = ct.where(keep, s, -math.inf)
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.bitcast(ct.load(V, (j, 0), (TN, D), padding_mode=Z, latency=3), ct.bfloat16)
        acc = ct.mma(p.astype(ct.bfloat16), v, acc * alpha)
        m_i = m_new
    ct.store(Out, (h, bx, 0), ct.bitcast((acc / l_i).astype(ct.bfloat16), ct.uint16).reshape((1, TM, D)))


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("causal", [False, True])
def test_bf16_mqa_attention_128_row_tiles(sm, causal):
    rng = _rng(19)
    h, s, d = 2, 100, 64
    qf, kf, vf = rng.standard_normal((h, s, d)), rng.standard_normal((s, d)), rng.standard_normal((s, d))
    q, k, v = _bf16_bits(qf), _bf16_bits(kf), _bf16_bits(vf)
    out = np.zeros((h, s, d), np.uint16)
    _run(sm, (1, h), attention_bf16, (q, k, v, out, 1 / math.sqrt(d), s, 128, 64, d, causal), rows=128)
    want, _ = _attention_ref(_bf16_value(q), _bf16_value(k)[None], _bf16_value(v)[None], 1 / math.sqrt(d), causal)
    _close(_bf16_value(out), want, "bf16")


# ------------------------------------------------------------------------------ a product of products (f16 accumulators)
@ct.kernel
def chained_matmul(A, B, W, C, TM: ConstInt, TH: ConstInt, TK: ConstInt, TN: ConstInt):
    """C = relu(A @ B) @ W with the hidden tile kept in registers: the f16 accumulator of the first product is
    the A operand of the second."""
    bm = ct.bid(0)
    out = ct.zeros((TM, TN), dtype=ct.float32)
    for hb in range(ct.num_tiles(B, axis=1, shape=(TK, TH))):
        hid = ct.zeros((TM, TH), dtype=ct.float16)
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            hid = ct.mma(ct.load(A, (bm, k), (TM, TK), padding_mode=Z), ct.load(B, (k, hb), (TK, TH), padding_mode=Z),
                         hid)
        hid = ct.maximum(hid, ct.float16(0.0))
        out = ct.mma(hid, ct.load(W, (hb, 0), (TH, TN), padding_mode=Z), out)
    ct.store(C, (bm, 0), out)


@pytest.mark.parametrize("sm", SMS)
def test_chained_matmul_f16_accumulator_as_operand(sm):
    rng = _rng(20)
    m, k, hdim, n = 72, 40, 70, 32
    a, b, w = _f16(rng, m, k, scale=0.5), _f16(rng, k, hdim, scale=0.5), _f16(rng, hdim, n, scale=0.5)
    c = np.zeros((m, n), np.float32)
    _run(sm, (2,), chained_matmul, (a, b, w, c, 64, 32, 32, n))
    hid = np.maximum(a.astype(np.float64) @ b, 0).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(c, hid @ w, rtol=2e-2, atol=5e-2)


# ------------------------------------------------------------------------------ transposed output, K halves by extract
@ct.kernel
def mm_extract_halves_store_t(A, B, CT, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """C^T = (A @ B)^T: each (TM, 2 TK) A tile is split in two K halves with ct.extract, B's in two row halves;
    the result is stored transposed into a (N, M) array."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, 2 * TK))):
        a2 = ct.load(A, (bm, k), (TM, 2 * TK), padding_mode=Z)
        b2 = ct.load(B, (k, bn), (2 * TK, TN), padding_mode=Z)
        for half in ct.static_iter(range(2)):
            acc = ct.mma(ct.extract(a2, (0, half), shape=(TM, TK)), ct.extract(b2, (half, 0), shape=(TK, TN)), acc)
    ct.store(CT, (bn, bm), ct.transpose(acc).astype(CT.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_matmul_k_halves_by_extract_and_transposed_store(sm):
    rng = _rng(21)
    m, n, k = 72, 40, 100
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    ct_ = np.zeros((n, m), np.float16)
    _run(sm, (2, 2), mm_extract_halves_store_t, (a, b, ct_, 64, 32, 16))
    _close(ct_, (a.astype(np.float64) @ b).T, "f16")


# ------------------------------------------------------------------------------ embedding lookup as a one-hot product
@ct.kernel
def onehot_lookup(Ids, Table, Out, TM: ConstInt, V: ConstInt, D: ConstInt):
    bm = ct.bid(0)
    ids = ct.load(Ids, (bm,), (TM,), padding_mode=Z)
    onehot = ct.where(ids[:, None] == ct.arange(V, dtype=ct.int32)[None, :], 1.0, 0.0).astype(ct.float16)
    table = ct.load(Table, (0, 0), (V, D), padding_mode=Z)
    ct.store(Out, (bm, 0), ct.mma(onehot, table, ct.zeros((TM, D), dtype=ct.float32)))


@pytest.mark.parametrize("sm", SMS)
def test_embedding_lookup_as_a_onehot_matmul(sm):
    rng = _rng(22)
    n, vocab, d = 100, 50, 32
    ids = rng.integers(0, vocab, n).astype(np.int32)
    table = _f16(rng, vocab, d)
    out = np.zeros((n, d), np.float32)
    _run(sm, (2,), onehot_lookup, (ids, table, out, 64, 64, d))
    np.testing.assert_array_equal(out, table[ids].astype(np.float32))


# ------------------------------------------------------------------------------ split-K by atomic adds of accumulators
@ct.kernel
def mm_atomic_split_k(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, SPLITS: ConstInt):
    bm, bn, s = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(s, ct.num_tiles(A, axis=1, shape=(TM, TK)), SPLITS):
        acc = ct.mma(ct.load(A, (bm, k), (TM, TK), padding_mode=Z), ct.load(B, (k, bn), (TK, TN), padding_mode=Z),
                     acc)
    r = bm * TM + ct.arange(TM, dtype=ct.int32)[:, None]
    c = bn * TN + ct.arange(TN, dtype=ct.int32)[None, :]
    ct.atomic_add(C, (r, c), acc)


@pytest.mark.parametrize("sm", SMS)
def test_split_k_by_atomic_add_of_accumulators(sm):
    rng = _rng(23)
    m, n, k = 72, 40, 100
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    c = np.full((m, n), 1.5, np.float32)
    _run(sm, (2, 2, 3), mm_atomic_split_k, (a, b, c, 64, 32, 16, 3))
    _close(c, a.astype(np.float64) @ b + 1.5, "f16")


# ------------------------------------------------------------------------------ attention on (B, S, H, D) arrays
@ct.kernel
def attention_bshd(Q, K, V, Out, qk_scale: float, TM: ConstInt, TN: ConstInt, D: ConstInt, GROUP: ConstInt):
    """Q / Out (B, S, H, D), K / V (B, S, HKV, D) as they come out of a projection: the head is a middle axis.
    K^T is read as a (D, TN) tile through order=(0, 3, 2, 1)."""
    bx, bh = ct.bid(0), ct.bid(1)
    h = bh % Q.shape[2]
    b = bh // Q.shape[2]
    q = ct.load(Q, (b, bx, h, 0), (1, TM, 1, D), padding_mode=Z, allow_tma=True).reshape((TM, D))
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((TM, 1), dtype=ct.float32)
    acc = ct.zeros((TM, D), dtype=ct.float32)
    n_keys = K.shape[1]
    for j in range(ct.cdiv(n_keys, TN)):
        kt = ct.load(K, (b, 0, h // GROUP, j), (1, D, 1, TN), order=(0, 3, 2, 1), padding_mode=Z).reshape((D, TN))
        s = ct.mma(q, kt, ct.zeros((TM, TN), dtype=ct.float32)) * (qk_scale * LOG2E)
        s = ct.where(j * TN + ct.arange(TN, dtype=ct.int32)[None, :] < n_keys, s, -math.inf)
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, (b, j, h // GROUP, 0), (1, TN, 1, D), padding_mode=Z).reshape((TN, D))
        acc = ct.mma(p.astype(V.dtype), v, acc * alpha)
        m_i = m_new
    ct.store(Out, (b, bx, h, 0), (acc / l_i).astype(Out.dtype).reshape((1, TM, 1, D)), allow_tma=True)


@pytest.mark.parametrize("sm", SMS)
def test_attention_on_bshd_arrays(sm):
    rng = _rng(24)
    b, s, h, hkv, d = 2, 72, 2, 1, 32
    q, k, v = _f16(rng, b, s, h, d), _f16(rng, b, s, hkv, d), _f16(rng, b, s, hkv, d)
    out = np.zeros((b, s, h, d), np.float16)
    _run(sm, (-(-s // 64), b * h), attention_bshd, (q, k, v, out, 1 / math.sqrt(d), 64, 32, d, h // hkv))
    tr = lambda x: np.repeat(np.swapaxes(x, 1, 2), h // x.shape[2], 1)  # noqa: E731
    want, _ = _attention_ref(tr(q), tr(k), tr(v), 1 / math.sqrt(d), False)
    _close(out, np.swapaxes(want, 1, 2), "f16")


# ------------------------------------------------------------------------------ MoE grouped GEMM: expert row ranges
@ct.kernel
def moe_grouped_gemm(A, W, C, Offsets, E: ConstInt, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """Rows of A sorted by expert (expert e owns rows Offsets[e] .. Offsets[e + 1]); C = A @ W[e] per range.
    Persistent over (expert, row tile, column tile) as one flat list of tiles."""
    n_col = ct.cdiv(C.shape[1], TN)
    first = 0
    for e in range(E):
        lo = ct.gather(Offsets, e)
        hi = ct.gather(Offsets, e + 1)
        count = ct.cdiv(hi - lo, TM) * n_col
        a_e, c_e = A.slice(0, lo, hi), C.slice(0, lo, hi)
        for t in range(first, first + count):
            if t % ct.num_blocks(0) == ct.bid(0):
                i, j = (t - first) // n_col, (t - first) % n_col
                acc = ct.zeros((TM, TN), dtype=ct.float32)
                for k in range(ct.num_tiles(a_e, axis=1, shape=(TM, TK))):
                    w = ct.load(W, (e, k, j), (1, TK, TN), padding_mode=Z).reshape((TK, TN))
                    acc = ct.mma(ct.load(a_e, (i, k), (TM, TK), padding_mode=Z), w, acc)
                ct.store(c_e, (i, j), acc.astype(C.dtype))
        first += count


@pytest.mark.parametrize("sm", SMS)
def test_moe_grouped_gemm_on_expert_row_ranges(sm):
    rng = _rng(25)
    counts = [40, 0, 70, 9]
    offs = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    t, k, n, e = int(offs[-1]), 48, 40, len(counts)
    a, w = _f16(rng, t, k), _f16(rng, e, k, n)
    c = np.full((t, n), 9.0, np.float16)
    _run(sm, (3,), moe_grouped_gemm, (a, w, c, offs, e, 64, 32, 32))
    for x in range(e):
        rows = slice(offs[x], offs[x + 1])
        _close(c[rows], a[rows].astype(np.float64) @ w[x], "f16")


# ------------------------------------------------------------------------------ decode output as a 5-D TMA box
@ct.kernel
def decode_5d_store(Q, K, V, Mid, S_KV: int, D: ConstInt, TN: ConstInt, PER_SPLIT: ConstInt, G: ConstInt):
    """One split of a GQA decode writing its (G, D) block into Mid (B, HKV, G, SPLITS, D) with a 5-D store;
    the query rows are loaded with no padding mode (G is exactly the group here)."""
    b, kvh, split = ct.bid(0), ct.bid(1), ct.bid(2)
    q = ct.load(Q, (b, kvh, 0, 0), (1, 1, G, D), allow_tma=True).reshape((G, D))
    m_i = ct.full((G, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((G, 1), dtype=ct.float32)
    acc = ct.zeros((G, D), dtype=ct.float32)
    for t in range(PER_SPLIT // TN):
        tile = split * (PER_SPLIT // TN) + t
        kk = ct.load(K, (b, kvh, tile, 0), (1, 1, TN, D), padding_mode=Z).reshape((TN, D))
        s = ct.mma(q, ct.permute(kk, (1, 0)), ct.zeros((G, TN), dtype=ct.float32))
        s = ct.where(tile * TN + ct.arange(TN, dtype=ct.int32)[None, :] < S_KV, s, -math.inf)
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        vv = ct.load(V, (b, kvh, tile, 0), (1, 1, TN, D), padding_mode=Z).reshape((TN, D))
        acc = ct.mma(p.astype(ct.float16), vv, acc * alpha)
        m_i = m_new
    out = (acc / l_i).astype(Mid.dtype).reshape((1, 1, G, 1, D))
    ct.store(Mid, (b, kvh, 0, split, 0), out, order=(0, 1, 2, 3, 4), allow_tma=True, latency=2)


@pytest.mark.parametrize("sm", SMS)
def test_decode_split_output_as_a_5d_box(sm):
    rng = _rng(26)
    b, hkv, g, s, d, per = 2, 2, 16, 90, 32, 32
    splits = -(-s // per)
    q, k, v = _f16(rng, b, hkv, g, d), _f16(rng, b, hkv, s, d), _f16(rng, b, hkv, s, d)
    mid = np.zeros((b, hkv, g, splits, d), np.float32)
    _run(sm, (b, hkv, splits), decode_5d_store, (q, k, v, mid, s, d, 16, per, g), rows=16)
    for sp in range(splits):
        sl = slice(sp * per, (sp + 1) * per)
        want, _ = _attention_ref(q, k[:, :, sl], v[:, :, sl], 1.0, False)
        _close(mid[:, :, :, sp], want, "f16")


# ------------------------------------------------------------------------------ C = alpha A @ B + beta C (acc from memory)
@ct.kernel
def gemm_alpha_beta(A, B, Cin, C, alpha: float, beta: float, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.load(Cin, (bm, bn), (TM, TN), padding_mode=Z).astype(ct.float32) * (beta / alpha)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, (bm, k), (TM, TK), padding_mode=Z), ct.load(B, (k, bn), (TK, TN), padding_mode=Z),
                     acc)
    ct.store(C, (bm, bn), (acc * alpha).astype(C.dtype))


@pytest.mark.parametrize("sm", SMS)
def test_gemm_alpha_beta_accumulator_loaded_from_memory(sm):
    rng = _rng(27)
    m, n, k = 72, 40, 100
    a, b, cin = _f16(rng, m, k), _f16(rng, k, n), _f16(rng, m, n)
    c = np.zeros((m, n), np.float32)
    _run(sm, (2, 2), gemm_alpha_beta, (a, b, cin, c, 0.5, 2.0, 64, 32, 32))
    _close(c, 0.5 * (a.astype(np.float64) @ b) + 2.0 * cin, "f16")


# ------------------------------------------------------------------------------ W4A16: int4 weights unpacked in registers
@ct.kernel
def w4a16_gemm(A, Wq, S, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """Wq: per K tile, TK / 2 rows of bytes: the low nibble is row k, the high nibble row k + TK / 2 (zero point
    8); S: one f16 scale per (K tile, column)."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        packed = ct.load(Wq, (k, bn), (TK // 2, TN), padding_mode=Z)
        lo = (packed & ct.uint8(15)).astype(ct.int32) - 8
        hi = (packed >> ct.uint8(4)).astype(ct.int32) - 8
        w = ct.cat((lo, hi), axis=0).astype(ct.float16) * ct.load(S, (k, bn), (1, TN), padding_mode=Z)
        acc = ct.mma(ct.load(A, (bm, k), (TM, TK), padding_mode=Z), w, acc)
    ct.store(C, (bm, bn), acc)


@pytest.mark.parametrize("sm", SMS)
def test_w4a16_gemm_unpacks_nibbles_before_the_mma(sm):
    rng = _rng(28)
    m, n, k, tk = 72, 40, 108, 32
    kp = -(-k // tk) * tk
    q = rng.integers(0, 16, (kp, n))
    packed = np.concatenate([q[t:t + tk // 2] | (q[t + tk // 2:t + tk] << 4) for t in range(0, kp, tk)]).astype(np.uint8)
    scale = rng.uniform(0.5, 1.5, (kp // tk, n)).astype(np.float16)
    a = _f16(rng, m, k)
    c = np.zeros((m, n), np.float32)
    _run(sm, (2, 2), w4a16_gemm, (a, packed, scale, c, 64, 32, tk))
    w = ((q - 8) * scale[np.arange(kp) // tk].astype(np.float64)).astype(np.float16)[:k]
    np.testing.assert_allclose(c, a.astype(np.float64) @ w, rtol=2e-3, atol=2e-2)


# ------------------------------------------------------------------------------ products in branches of a while loop
@ct.kernel
def mma_in_branches(A, B, C, Signs, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    k = 0
    while True:
        if k >= ct.num_tiles(A, axis=1, shape=(TM, TK)):
            break
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=Z)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=Z)
        if ct.gather(Signs, k) > 0:
            acc = ct.mma(a, b, acc)
        else:
            acc = acc - ct.mma(a, b, ct.zeros((TM, TN), dtype=ct.float32))
        k += 1
    ct.store(C, (bm, bn), acc)


@pytest.mark.parametrize("sm", SMS)
def test_mma_in_branches_of_a_while_loop(sm):
    rng = _rng(29)
    m, n, k = 72, 40, 100
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    signs = np.array([1, -1, 1, -1], np.int32)
    c = np.zeros((m, n), np.float32)
    _run(sm, (2, 2), mma_in_branches, (a, b, c, signs, 64, 32, 32))
    _close(c, (a * np.repeat(signs, 32)[:k]).astype(np.float64) @ b, "f16")


# ------------------------------------------------------------------------------ @ on 8-bit tiles keeps the operand type
@ct.kernel
def matmul_operator_int8(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """``a @ b`` has the operands' (promoted) type: i8 @ i8 is the i32 product wrapped to i8 per K tile."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.int32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc += ct.load(A, (bm, k), (TM, TK), padding_mode=Z) @ ct.load(B, (k, bn), (TK, TN), padding_mode=Z)
    ct.store(C, (bm, bn), acc)


@pytest.mark.parametrize("sm", SMS)
def test_matmul_operator_on_int8_wraps_per_tile(sm):
    rng = _rng(30)
    m, n, k = 72, 40, 100
    a, b = rng.integers(-128, 128, (m, k)).astype(np.int8), rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = np.zeros((m, n), np.int32)
    _run(sm, (2, 2), matmul_operator_int8, (a, b, c, 64, 32, 32))
    want = sum((a[:, t:t + 32].astype(np.int64) @ b[t:t + 32]).astype(np.int8).astype(np.int64) for t in range(0, k, 32))
    np.testing.assert_array_equal(c, want)


# ------------------------------------------------------------------------------ sliding-window attention, soft cap, sinks
@ct.kernel
def swa_softcap_sink(Q, K, V, Sinks, Out, qk_scale: float, cap: float, WINDOW: ConstInt, TM: ConstInt,
                     TN: ConstInt, D: ConstInt):
    """Causal attention where query i sees keys i - WINDOW < j <= i, logits soft-capped (cap * tanh(s / cap)),
    and one learned sink logit per head that joins the softmax's denominator only."""
    bx, h = ct.bid(0), ct.bid(1)
    q = ct.load(Q, (h, bx, 0), (1, TM, D), padding_mode=Z).reshape((TM, D))
    offs_m = ct.arange(TM, dtype=ct.int32)
    offs_m += bx * TM
    rows = offs_m[:, None]
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((TM, 1), dtype=ct.float32)
    acc = ct.zeros((TM, D), dtype=ct.float32)
    n_keys = K.shape[1]
    lo = max(0, bx * TM - WINDOW + 1) // TN
    hi = ct.cdiv(min((bx + 1) * TM, n_keys), TN)
    for j in range(lo, hi):
        kt = ct.load(K, (h, 0, j), (1, D, TN), order=(0, 2, 1), padding_mode=Z, latency=2).reshape((D, TN))
        s = ct.mma(q, kt, ct.zeros((TM, TN), dtype=ct.float32)) * qk_scale
        s = ct.tanh(s / cap) * cap
        cols = j * TN + ct.arange(TN, dtype=ct.int32)[None, :]
        keep = (cols <= rows) & (cols > rows - WINDOW) & (cols < n_keys)
        s += ct.where(keep, 0.0, -math.inf)
        m_new = max(m_i, ct.max(s, axis=-1, keepdims=True))
        m_safe = ct.where(m_new == -math.inf, 0.0, m_new)  # a row whose keys in this tile are all outside
        p = ct.exp(s - m_safe)
        alpha = ct.exp(m_i - m_safe)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        v = ct.load(V, (h, j, 0), (1, TN, D), padding_mode=Z).reshape((TN, D))
        acc = ct.mma(p.astype(V.dtype), v, acc * alpha)
        m_i = m_new
    sink = ct.gather(Sinks, h)
    l_i += ct.exp(sink - m_i)
    ct.store(Out, (h, bx, 0), (acc / l_i).reshape((1, TM, D)))


@pytest.mark.parametrize("sm", SMS)
def test_sliding_window_attention_with_softcap_and_sinks(sm):
    rng = _rng(31)
    h, s, d, window, cap = 2, 100, 32, 40, 5.0
    q, k, v = _f16(rng, h, s, d), _f16(rng, h, s, d), _f16(rng, h, s, d)
    sinks = rng.standard_normal(h).astype(np.float32)
    out = np.zeros((h, s, d), np.float32)
    scale = 1 / math.sqrt(d)
    _run(sm, (-(-s // 32), h), swa_softcap_sink, (q, k, v, sinks, out, scale, cap, window, 32, 32, d), rows=32)
    logits = np.tanh(q.astype(np.float64) @ np.swapaxes(k, 1, 2) * scale / cap) * cap
    i, j = np.arange(s)[:, None], np.arange(s)[None, :]
    logits = np.where((j <= i) & (j > i - window), logits, -np.inf)
    mx = logits.max(-1, keepdims=True)
    e = np.exp(logits - mx)
    want = e @ v.astype(np.float64) / (e.sum(-1, keepdims=True) + np.exp(sinks[:, None, None] - mx))
    _close(out, want, "f16")


# ------------------------------------------------------------------------------ fused linear + cross entropy
@ct.kernel
def linear_cross_entropy(X, W, Targets, Loss, TM: ConstInt, TV: ConstInt, D: ConstInt):
    """loss_i = logsumexp_v (x_i . w_v) - x_i . w_{t_i} without the logits in memory: W is (V, D) (the
    embedding layout), each vocab tile's logits come from an mma against W's tile transposed in registers."""
    bm = ct.bid(0)
    x = ct.load(X, (bm, 0), (TM, D), padding_mode=Z)
    tgt = ct.load(Targets, (bm,), (TM,), padding_mode=Z)[:, None]
    n_vocab = W.shape[0]
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((TM, 1), dtype=ct.float32)
    picked = ct.zeros((TM, 1), dtype=ct.float32)
    for j in range(ct.cdiv(n_vocab, TV)):
        w = ct.load(W, (j, 0), (TV, D), padding_mode=Z, latency=3)
        logits = ct.mma(x, ct.transpose(w), ct.zeros((TM, TV), dtype=ct.float32))
        cols = j * TV + ct.arange(TV, dtype=ct.int32)[None, :]
        logits = ct.where(cols < n_vocab, logits, -math.inf)
        picked += ct.sum(ct.where(cols == tgt, logits, 0.0), axis=1, keepdims=True)
        m_new = ct.maximum(m_i, ct.max(logits, axis=1, keepdims=True))
        l_i = l_i * ct.exp(m_i - m_new) + ct.sum(ct.exp(logits - m_new), axis=1, keepdims=True)
        m_i = m_new
    ct.store(Loss, (bm,), (m_i + ct.log(l_i) - picked).reshape((TM,)))


@pytest.mark.parametrize("sm", SMS)
def test_fused_linear_cross_entropy(sm):
    rng = _rng(32)
    n, d, vocab = 72, 32, 200
    x, w = _f16(rng, n, d), _f16(rng, vocab, d, scale=0.5)
    tgt = rng.integers(0, vocab, n).astype(np.int32)
    loss = np.zeros(n, np.float32)
    _run(sm, (2,), linear_cross_entropy, (x, w, tgt, loss, 64, 64, d))
    logits = x.astype(np.float64) @ w.T.astype(np.float64)
    mx = logits.max(1)
    want = mx + np.log(np.exp(logits - mx[:, None]).sum(1)) - logits[np.arange(n), tgt]
    np.testing.assert_allclose(loss, want, rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------------------------ linear backward: dW = dY^T X, dB
@ct.kernel
def linear_backward_dw_db(X, dY, dW, dB, TT: ConstInt, TI: ConstInt, TO: ConstInt):
    """dW (OUT, IN) = dY^T X over token tiles (dY's tile transposed in registers) and dB = column sums of dY."""
    bo, bi = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TO, TI), dtype=ct.float32)
    db = ct.zeros((TO,), dtype=ct.float32)
    for t in range(ct.num_tiles(X, axis=0, shape=(TT, TI))):
        dy = ct.load(dY, (t, bo), (TT, TO), padding_mode=Z)
        acc = ct.mma(ct.transpose(dy), ct.load(X, (t, bi), (TT, TI), padding_mode=Z), acc)
        db += ct.sum(dy.astype(ct.float32), axis=0)
    ct.store(dW, (bo, bi), acc)
    if bi == 0:
        ct.store(dB, (bo,), db)


@pytest.mark.parametrize("sm", SMS)
def test_linear_backward_weight_and_bias_gradients(sm):
    rng = _rng(33)
    t, d_in, d_out = 100, 72, 40
    x, dy = _f16(rng, t, d_in), _f16(rng, t, d_out)
    dw, db = np.zeros((d_out, d_in), np.float32), np.zeros(d_out, np.float32)
    _run(sm, (2, 2), linear_backward_dw_db, (x, dy, dw, db, 32, 64, 32), rows=32)
    _close(dw, dy.T.astype(np.float64) @ x, "f16")
    _close(db, dy.astype(np.float64).sum(0), "f32")


# ------------------------------------------------------------------------------ ct.mma on 3-D (batched) tiles
@ct.kernel
def batched_tile_mma(A, B, C, TB: ConstInt, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    bb, bm = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TB, TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(TB, TM, TK))):
        acc = ct.mma(ct.load(A, (bb, bm, k), (TB, TM, TK), padding_mode=Z),
                     ct.load(B, (bb, k, 0), (TB, TK, TN), padding_mode=Z), acc)
    ct.store(C, (bb, bm, 0), acc)


@pytest.mark.parametrize("sm", SMS)
def test_mma_on_batched_3d_tiles(sm):
    rng = _rng(34)
    a, b = _f16(rng, 3, 72, 50), _f16(rng, 3, 50, 32)
    c = np.zeros((3, 72, 32), np.float32)
    _run(sm, (2, 2), batched_tile_mma, (a, b, c, 2, 64, 32, 32))
    _close(c, a.astype(np.float64) @ b, "f16")


# ------------------------------------------------------------------------------ narrow tiles on the tensor cores
# (TM, TN, TK), operand, the op each target's PTX has: the shapes TileGym-style kernels use that stayed off a target's
# tensor-core path (found by decode_split_kv, N = 8: its product is (TN, D) x (D, G), and a shape sweep of
# mma_acc_types). The op is the one NVIDIA's tileiras picks for the same bytecode (SASS of ``tileiras --gpu-name``
# sm_80 / sm_90 / sm_100: HGMMA.64x8x16 / UTCHMMA for N = 8, HMMA.1688 everywhere for f16 TK = 8) except e4m3 TK = 16
# on sm_90a, where tileiras widens the tiles to f16 for HMMA.16816 and tilecore runs wgmma m64nNk32 over a K padded
# with zeros (the operands stay 8-bit in shared memory; ``tilecore_cute.mma_sm90.Wgmma.k_padded``).
_NARROW = {
    "n8-f16": ((64, 8, 32), "f16", dict(MMA_OP)),  # tcgen05 M = 64 N = 8, B K-major (sm_90a: m64n8k16)
    "m128-n8-f16": ((128, 8, 32), "f16", {"sm_100a": "tcgen05.mma"}),  # M = 128 N = 8 (Table 39; tileiras: UTCHMMA)
    "n8-s8": ((64, 8, 64), "i8", {"sm_100a": "tcgen05.mma"}),  # .kind::i8 N = 8 (tileiras: UTCIMMA, idesc N 8)
    "m128-n8-s8": ((128, 8, 64), "i8", {"sm_100a": "tcgen05.mma"}),
    "k8-f16": ((64, 32, 8), "f16", {sm: "mma.sync.aligned.m16n8k8" for sm in SMS}),  # mma.sync m16n8k8 (sm_80+)
    "k16-e4m3": ((64, 32, 16), "e4m3", {"sm_90a": "wgmma.mma_async", "sm_100a": "tcgen05.mma"}),  # K padded to 32
}
_NARROW_CASES = [(sm, gap) for gap, (_s, _o, ops) in _NARROW.items() for sm in ops]


def _narrow_args(gap, rng, extra=0):
    """mma_acc_types' arguments for a narrow-tile case on sizes that are not tile multiples (``extra`` more rows /
    columns), with the operands' values as float64."""
    (tm, tn, tk), operand, _ops = _NARROW[gap]
    m, n, k = tm + 9 + extra, tn + 3 + extra, 2 * tk + 3
    if operand == "f16":
        a, b = _f16(rng, m, k), _f16(rng, k, n)
        av, bv = a.astype(np.float64), b.astype(np.float64)
    elif operand == "i8":
        a, b = rng.integers(-128, 128, (m, k)).astype(np.int8), rng.integers(-128, 128, (k, n)).astype(np.int8)
        av, bv = a.astype(np.int64), b.astype(np.int64)
        return (a, b, np.zeros((m, n), np.int32), tm, tn, tk, 0), av, bv
    else:
        (a, av), (b, bv) = _f8_operand(rng, (m, k)), _f8_operand(rng, (k, n))
    return (a, b, np.zeros((m, n), np.float32), tm, tn, tk, 2 if operand == "e4m3" else 0), av, bv


@pytest.mark.parametrize("sm,gap", _NARROW_CASES, ids=[f"{g}-{sm}" for sm, g in _NARROW_CASES])
def test_tensor_core_paths_for_narrow_tiles(sm, gap):
    """Narrow tile shapes compile to the target's tensor-core op (ptxas accepts the PTX: ``.ptx`` serializes the
    cubin) and give the right numbers in the emulator on sizes that are not tile multiples. They ran on the CUDA
    cores (f16 TK = 8 everywhere, e4m3 TK = 16 on sm_90a) or on mma.sync (N = 8 on sm_100a) until: the 16-bit
    mma.sync m16n8k8 atoms (``tilecore_cute.mma_sm80``), sm_90a's 8-bit K of 16 laid out as 32 with zeros
    (``Wgmma.k_padded``), tcgen05's M = 64 instructions of N = 8 (``tilecore_sm100.mma_sm100.inst_n_ok``: PTX ISA
    9.7.16.2.1, Table 39) over a K-major B."""
    args, av, bv = _narrow_args(gap, _rng(35))
    ptx = tc.compile(mma_acc_types, args, gpu_name=sm).ptx
    op = _NARROW[gap][2][sm]
    assert op in ptx, f"{sm}: no {op} in the PTX"
    tm, tn = args[3], args[4]
    c = args[2]
    tc.launch(None, (-(-c.shape[0] // tm), -(-c.shape[1] // tn)), mma_acc_types, args, gpu_name=sm)
    if c.dtype == np.int32:
        np.testing.assert_array_equal(c, av @ bv)
    else:
        _close(c, av @ bv, "f32")


@ct.kernel
def mma_wide_then_narrow_k(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, OPERAND: ConstInt):
    """C = A[:, :2 TK] @ B[:2 TK] (one dot of K = 2 TK) + A @ B (a loop over K tiles of TK): the wide dot's operands
    fill the scratch buffer first, so where an atom pads the narrow dots' K (lays out TK as 2 TK) it must zero the
    padding, not read the wide dot's data left there."""
    bm, bn = ct.bid(0), ct.bid(1)
    a = ct.load(A, (bm, 0), (TM, 2 * TK), padding_mode=Z)
    b = ct.load(B, (0, bn), (2 * TK, TN), padding_mode=Z)
    if OPERAND == 2:
        a, b = ct.bitcast(a, ct.float8_e4m3fn), ct.bitcast(b, ct.float8_e4m3fn)
    acc = ct.mma(a, b, ct.zeros((TM, TN), dtype=C.dtype))
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        x = ct.load(A, (bm, k), (TM, TK), padding_mode=Z)
        y = ct.load(B, (k, bn), (TK, TN), padding_mode=Z)
        if OPERAND == 2:
            x, y = ct.bitcast(x, ct.float8_e4m3fn), ct.bitcast(y, ct.float8_e4m3fn)
        acc = ct.mma(x, y, acc)
    ct.store(C, (bm, bn), acc)


@pytest.mark.parametrize("sm", ["sm_90a", "sm_100a"])
def test_zero_k_padding_after_a_wider_dot(sm):
    """e4m3 TK = 16 (K laid out as 32 by wgmma / tcgen05) after a dot of K = 32 whose operands took the same
    scratch slots: the padding is zeroed every dot (``tilecore.mma.zero_k_padding``: 16-byte zero stores)."""
    args, av, bv = _narrow_args("k16-e4m3", _rng(38), extra=20)
    a, b, c = args[:3]
    tm, tn, tk = args[3:6]
    compiled = tc.compile(mma_wide_then_narrow_k, args, gpu_name=sm)
    assert MMA_OP[sm] in compiled.ptx
    assert "st.shared.v4.b32" in compiled.ptx or "st.shared.v2.b64" in compiled.ptx  # 16-byte stores (zeros)
    tc.launch(None, (-(-c.shape[0] // tm), -(-c.shape[1] // tn)), mma_wide_then_narrow_k, args, gpu_name=sm)
    _close(c, av[:, :2 * tk] @ bv[:2 * tk] + av @ bv, "f32")


# ------------------------------------------------------------------------------ loads with no padding mode (TileGym's fmha)
@ct.kernel
def attention_unpadded_loads(Q, K, V, Out, TM: ConstInt, TN: ConstInt, D: ConstInt):
    """As TileGym's forward kernel loads Q / K / V: no padding mode (what lies past the array is undetermined), the
    last partial K tile masked by adding -inf, a base-2 softmax of the raw scores (scale ln 2), builtin max."""
    bx = ct.bid(0)
    q = ct.load(Q, (bx, 0), (TM, D))
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((TM, 1), dtype=ct.float32)
    acc = ct.zeros((TM, D), dtype=ct.float32)
    n = K.shape[0]
    for j in range(ct.cdiv(n, TN)):
        s = ct.mma(q, ct.load(K, (0, j), (D, TN), order=(1, 0), latency=2), ct.zeros((TM, TN), dtype=ct.float32))
        s += ct.where(j * TN + ct.arange(TN, dtype=ct.int32)[None, :] < n, 0.0, -math.inf)
        m_new = max(m_i, ct.max(s, axis=-1, keepdims=True))
        p = ct.exp2(s - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        acc = ct.mma(p.astype(Q.dtype), ct.load(V, (j, 0), (TN, D), latency=4), acc * alpha)
        m_i = m_new
    ct.store(Out, (bx, 0), ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX))


@pytest.mark.parametrize("sm", SMS)
def test_attention_with_unpadded_loads(sm):
    rng = _rng(36)
    s, d = 72, 32
    q, k, v = _f16(rng, s, d), _f16(rng, s, d), _f16(rng, s, d)
    out = np.zeros((s, d), np.float32)
    _run(sm, (2,), attention_unpadded_loads, (q, k, v, out, 64, 32, d))
    want, _ = _attention_ref(q, k, v, math.log(2), False)
    np.testing.assert_allclose(out[:s], want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("tm,tk", [(64, 32), (128, 16), (64, 64)])
@pytest.mark.parametrize("acc", [np.float32, np.float16])
def test_wgmma_on_tiles_of_8_columns(tm, tk, acc):
    """f16 dots of N = 8 (decode_split_kv's query group) ran on mma.sync on sm_90a: the 16-bit wgmma atoms took
    an N-major B only, and 8 columns are 16-byte rows, which take no swizzle. Such a B is now laid out K-major
    (its transpose, as the tf32 / 8-bit atoms do): wgmma m64n8k16, numbers on partial tiles."""
    rng = _rng(37)
    m, n, k = tm + 9, 11, 2 * tk + 3
    a, b = _f16(rng, m, k), _f16(rng, k, n)
    c = np.zeros((m, n), acc)
    _run("sm_90a", (2, 2), mma_acc_types, (a, b, c, tm, 8, tk, 0))
    ptx = tc.compile(mma_acc_types, (a, b, c, tm, 8, tk, 0), gpu_name="sm_90a").ptx
    assert "m64n8k16" in ptx
    if acc is np.float32:
        _close(c, a.astype(np.float64) @ b, "f32")
    else:
        np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b, rtol=1e-2, atol=5e-2)
