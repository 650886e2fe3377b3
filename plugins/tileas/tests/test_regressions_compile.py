"""Regression tests: cuTile kernels written by others that failed to compile, now compiled and checked.

Three classes, each compiled for sm_80 / sm_90a / sm_100a down to a cubin (the old error must not come
back) and run in the emulator (sm_80, see :func:`test_e2e_numeric.run`) against numpy on sizes that are
not tile multiples (integer results exact):

1. **int64 index type** (``ArrayConstraint(index_dtype=ct.int64)``, spelled ``"f32[2]i64"`` in
   :mod:`cutile_kernels`): shapes and strides arrive as i64 (``.param .u64``) and tile indices are i64.
   Was ``'arith.extsi' op operand type 'i64' and result type 'i64' are cast incompatible`` (strides),
   ``'arith.muli' op requires the same type`` (tile origins) and ``'arith.ceildivsi' op requires the same
   type`` (``num_tiles``). Tiled accesses now compute coordinates at the index width (stage 4
   ``TiledAccess``), shape queries answer in the type the op asks for (stage 1).
2. **tf32 mma** (``ct.astype(x, ct.tfloat32)`` then ``ct.mma``): was ``'llvm.store' op operand #0 must be
   LLVM type with size, but got 'tf32'``. tf32 registers are f32 values rounded to tf32 (nearest even)
   (stage 4 ``tf32.py``), dots run on ``mma.sync`` m16n8k8 .tf32 where the shape allows (else the FMA loop).
3. **batched (rank-3) mma** ((B, M, K) x (B, K, N) + (B, M, N), the batch from ``ct.bid(2)`` or B > 1
   in the tile): was ``failed to infer 2d layout``. Stage 1 splits it into one 2-D dot per batch.
"""

from __future__ import annotations

import os
import re
import tempfile

import cuda.tile as ct
import cutile_kernels as ck
import numpy as np
import pytest
import test_e2e_numeric as tn

from tilecore.compiler import compile_file
from tilecore.errors import TilecoreError

SMS = ["sm_80", "sm_90a", "sm_100a"]
RNG = np.random.default_rng(20260)
f16, f32, i32, i64 = np.float16, np.float32, np.int32, np.int64
_DIR = tempfile.mkdtemp(prefix="tileas-regressions-")
_PATHS: dict[tuple, str] = {}


def _export(kernel, params: list, symbol: str) -> str:
    """``kernel`` exported with ``params`` (cached per process); returns the bytecode path."""
    key = (kernel.__name__ if hasattr(kernel, "__name__") else str(kernel), tuple(map(str, params)), symbol)
    if key not in _PATHS:
        _PATHS[key] = ck.export_spec(kernel, params, symbol, os.path.join(_DIR, f"{symbol}_{len(_PATHS)}.tileirbc"))
    return _PATHS[key]


def _compiles_without(path: str, sm: str, old_error: str):
    """Compile ``path`` for ``sm`` to a cubin; the old error must not come back (any other error fails too)."""
    try:
        res = compile_file(path, sm)
    except TilecoreError as e:
        assert old_error not in str(e), f"regression: {e}"
        raise
    assert res.artifacts["cubin"][:4] == b"\x7fELF"
    ptx = res.artifacts["ptx"]
    return "\n".join(ptx.values()) if isinstance(ptx, dict) else ptx


def arr64(a: np.ndarray) -> list:
    """An array parameter with the int64 index type: pointer, shape, strides (in elements) as i64."""
    return [a, *[i64(x) for x in tn.arr(a)[1:]]]


def _run(kernel, params, symbol, grid, args):
    return tn.run(symbol, grid, args, path=_export(kernel, params, symbol))


def to_bf16(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 bits (uint16; numpy has no bfloat16), round to nearest even."""
    u = x.astype(f32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(f32)


def _i64(params: list) -> list:
    """``params`` with every array spelled with the int64 index type."""
    return [p + "i64" if isinstance(p, str) and p.endswith("]") else p for p in params]


# ================================================================== 1. int64 index type
OLD_I64 = "cast incompatible"
I64_KERNELS = ["vadd_f32", "transpose_f32", "matmul_f16", "matmul_i8", "rownorm_loop_if_f32", "gather_scatter_f32",
               "advanced_indexing_f32", "strided_view_f32", "atomic_red_view_f32", "cumsum_scan_f32"]


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("name", I64_KERNELS)
def test_int64_index_kernel_compiles(name, sm):
    """Loads / stores through views, tiled views, num_tiles loops, gathers / scatters, advanced indexing,
    strided views and atomics through a view, with 64-bit shapes / strides: a cubin, and the shapes and
    strides are 64-bit .entry parameters."""
    kernel, params = ck.KERNELS[name]
    ptx = _compiles_without(_export(kernel, _i64(params), name), sm, OLD_I64)
    entry = re.search(r"\.entry \w+\((.*?)\)", ptx, re.S).group(1)
    assert ".param .u32" not in entry or name == "rownorm_loop_if_f32"  # (its runtime scalar p is an i32)
    assert ".param .u64" in entry


def test_int64_index_coordinates_stay_64_bit():
    """Bounds checks compare 64-bit coordinates with the 64-bit sizes (no truncation to i32), so a
    dimension of 2^31 elements or more keeps exact coordinates."""
    kernel, params = ck.KERNELS["transpose_f32"]
    res = compile_file(_export(kernel, _i64(params), "transpose_f32"), "sm_80", stop_after="convert-tileas-to-llvm")
    text = str(res.module)
    assert "arith.trunci" not in text
    assert re.search(r"arith\.cmpi ult, %\w+, %\w+ : i64", text)
    assert not re.search(r"arith\.cmpi ult, %\w+, %\w+ : i32", text)


def test_int64_vadd_and_transpose():
    a, b, c = tn.rand(1000), tn.rand(1000), np.zeros(1000, f32)
    kernel, params = ck.KERNELS["vadd_f32"]
    out = _run(kernel, _i64(params), "vadd_f32", (tn.cdiv(1000, 128), 1, 1), arr64(a) + arr64(b) + arr64(c))
    tn.close(out[2], a + b, 0, 0)
    x, y = tn.rand((40, 70)), np.zeros((70, 40), f32)
    kernel, params = ck.KERNELS["transpose_f32"]
    out = _run(kernel, _i64(params), "transpose_f32", (tn.cdiv(40, 32), tn.cdiv(70, 64), 1), arr64(x) + arr64(y))
    tn.close(out[1], x.T, 0, 0)


@pytest.mark.parametrize("dt,tiles", [("f16", (16, 16, 32)), ("bf16", (64, 32, 16)), ("f32", (32, 16, 16))])
def test_int64_mma_float(dt, tiles):
    """mma with an f32 accumulator over a num_tiles-free cdiv(K) loop, 64-bit indices (f16 / bf16 on the
    tensor cores, f32 on the CUDA cores); partial tiles in M, N and K."""
    m, n, k = 40, 24, 72
    if dt == "bf16":
        a, b = to_bf16(tn.rand((m, k))), to_bf16(tn.rand((k, n)))
        va, vb = from_bf16(a), from_bf16(b)
    else:
        a, b = tn.rand((m, k), f16 if dt == "f16" else f32), tn.rand((k, n), f16 if dt == "f16" else f32)
        va, vb = a.astype(f32), b.astype(f32)
    c = np.zeros((m, n), f32)
    tm, tn_, tk = tiles
    out = _run(ck.mma_loop, [f"{dt}[2]i64", f"{dt}[2]i64", "f32[2]i64", tm, tn_, tk], f"mma_{dt}_i64",
               (tn.cdiv(m, tm), tn.cdiv(n, tn_), 1), arr64(a) + arr64(b) + arr64(c))
    tn.close(out[2], va.astype(np.float64) @ vb.astype(np.float64), 1e-4, 1e-4)


@pytest.mark.parametrize("dt", ["i8", "u8"])
def test_int64_mma_integer_exact(dt):
    m, n, k = 40, 20, 130
    npdt = np.int8 if dt == "i8" else np.uint8
    lo, hi = (-128, 128) if dt == "i8" else (0, 256)
    a, b = RNG.integers(lo, hi, (m, k)).astype(npdt), RNG.integers(lo, hi, (k, n)).astype(npdt)
    c = np.zeros((m, n), i32)
    out = _run(ck.mma_loop, [f"{dt}[2]i64", f"{dt}[2]i64", "i32[2]i64", 32, 16, 32], f"mma_{dt}_i64",
               (tn.cdiv(m, 32), tn.cdiv(n, 16), 1), arr64(a) + arr64(b) + arr64(c))
    np.testing.assert_array_equal(out[2], a.astype(np.int64) @ b.astype(np.int64))


def test_mixed_index_widths():
    """An int64-indexed array next to an int32-indexed one in the same kernel (the tile index is i64
    for the first, i32 for the second)."""
    a, b, c = tn.rand(1000), tn.rand(1000), np.zeros(1000, f32)
    out = _run(ck.vadd_f32, ["f32[1]i64", "f32[1]", "f32[1]i64", 128], "vadd_f32", (tn.cdiv(1000, 128), 1, 1),
               arr64(a) + tn.arr(b) + arr64(c))
    tn.close(out[2], a + b, 0, 0)


def test_int64_num_tiles_loop_and_shape_query():
    """``ct.num_tiles`` (get_index_space_shape) and ``x.shape[0]`` (get_tensor_shape) answer in i64."""
    x, o = tn.rand((10, 300)), np.zeros(10, f32)
    kernel, params = ck.KERNELS["rownorm_loop_if_f32"]
    out = _run(kernel, _i64(params), "rownorm_loop_if_f32", (tn.cdiv(10, 4), 1, 1), arr64(x) + arr64(o) + [i32(2)])
    tn.close(out[1], np.sqrt((x * x).sum(1)), 1e-5, 1e-4)
    x, o = tn.rand((50, 70)), np.zeros(70, f32)
    out = _run(tn.colsum_f32, ["f32[2]i64", "f32[1]i64", 16, 32], "colsum_f32", (tn.cdiv(70, 32), 1, 1),
               arr64(x) + arr64(o))
    tn.close(out[1], x.sum(0), 1e-5, 1e-4)


@pytest.mark.parametrize("idx_dt", [i32, i64])
def test_int64_gather_scatter(idx_dt):
    """Gather / scatter with 64-bit shapes; i64 offsets widen the access (an i32 offset tile is extended)."""
    n = 200  # not a multiple of the 128-element tile: the last tile's offsets past the end are masked
    x, y = tn.rand(n), np.zeros(n, f32)
    idx = RNG.permutation(n).astype(idx_dt)
    out = _run(ck.gather_scatter_f32, ["f32[1]i64", ("i64" if idx_dt is i64 else "i32") + "[1]i64", "f32[1]i64", 128],
               f"gather_scatter_{np.dtype(idx_dt).name}_i64", (tn.cdiv(n, 128), 1, 1), arr64(x) + arr64(idx) + arr64(y))
    ref = np.zeros(n, f32)
    ref[idx] = x[idx] * 2
    tn.close(out[2], ref, 0, 0)


def test_int64_advanced_indexing_strided_and_atomic_views():
    """(Advanced indexing with an int64 *index tile* is left out: cuTile 1.7.0 writes an invalid
    ``trunci tile<8xi64> -> tile<i32>`` for it, which tileirdisasm rejects too.)"""
    x, y = tn.rand((30, 64)), np.zeros((30, 64), f32)
    idx = RNG.permutation(30)[:16].astype(i32)
    out = _run(ck.advanced_indexing_f32, ["f32[2]i64", "i32[1]i64", "f32[2]i64", 8, 64], "adv_i64", (2, 1, 1),
               arr64(x) + arr64(idx) + arr64(y))
    ref = np.zeros((30, 64), f32)
    ref[idx] = x[idx] + 1
    tn.close(out[2], ref, 0, 0)
    x, y = tn.rand(300), np.zeros(384, f32)
    kernel, params = ck.KERNELS["strided_view_f32"]
    out = _run(kernel, _i64(params), "strided_view_f32", (3, 1, 1), arr64(x) + arr64(y))
    ref = np.zeros(384, f32)
    for b in range(3):
        seg = x[b * 64:b * 64 + 128]
        ref[b * 128:b * 128 + len(seg)] = seg
    tn.close(out[1], ref, 0, 0)
    x, y = tn.rand(384), np.zeros(128, f32)
    kernel, params = ck.KERNELS["atomic_red_view_f32"]
    out = _run(kernel, _i64(params), "atomic_red_view_f32", (3, 1, 1), arr64(x) + arr64(y))
    tn.close(out[1], x.reshape(3, 128).sum(0), 1e-5, 1e-5)


# ================================================================== 2. tf32 mma
OLD_TF32 = "LLVM type with size, but got 'tf32'"


@ct.kernel
def mma_tf32(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(TM, TK))):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ct.astype(x, ct.tfloat32), ct.astype(y, ct.tfloat32), acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def mma_tf32_from_f16(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(TM, TK))):
        x = ct.astype(ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        y = ct.astype(ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def round_tf32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=ct.astype(ct.astype(t, ct.tfloat32), ct.float32))


def tf32_rn(x: np.ndarray) -> np.ndarray:
    """f32 -> tf32 as ``ct.astype(x, ct.tfloat32)`` rounds by default: nearest, ties to even (cuTile's test_cast.py
    rounds 1 + 2^-11 to 1; RA, ``cvt.rna``, would give 1 + 2^-10); NaN / infinities unchanged."""
    bits = x.astype(f32).view(np.uint32).astype(np.uint64)
    special = (bits & 0x7F800000) == 0x7F800000
    return np.where(special, bits, (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000).astype(np.uint32).view(f32)


@pytest.mark.parametrize("sm", SMS)
def test_tf32_mma_compiles_to_mma_sync_m16n8k8(sm):  # tcgen05 on sm_100a
    ptx = _compiles_without(_export(mma_tf32, ["f32[2]", "f32[2]", "f32[2]", 32, 16, 16], "mma_tf32"), sm, OLD_TF32)
    assert "cvt.rna.tf32.f32" not in ptx  # nearest even (the default) is computed on the bits
    if sm == "sm_100a":  # 32-row tiles take tcgen05 since 2026-11-24 (an M = 64 MMA over repeated rows)
        assert "tcgen05.mma.cta_group::1.kind::tf32" in ptx and "mma.sync" not in ptx
    else:
        assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx


@pytest.mark.parametrize("tiles", [(32, 16, 16), (16, 8, 8), (8, 8, 8)])
@pytest.mark.parametrize("index", ["", "i64"])
def test_tf32_mma_numbers(tiles, index):
    """(32, 16, 16) and (16, 8, 8): mma.sync m16n8k8 (emulated with the PTX fragment layout); (8, 8, 8):
    the FMA loop on the tf32-rounded values. Equal to numpy on tf32-rounded inputs (f32 accumulation);
    against full f32 inputs within tf32's precision (10 mantissa bits)."""
    m, n, k = 40, 20, 36
    a, b, c = tn.rand((m, k)), tn.rand((k, n)), np.zeros((m, n), f32)
    tm, tn_, tk = tiles
    pack = arr64 if index else tn.arr
    out = _run(mma_tf32, [f"f32[2]{index}"] * 3 + [tm, tn_, tk], "mma_tf32", (tn.cdiv(m, tm), tn.cdiv(n, tn_), 1),
               pack(a) + pack(b) + pack(c))
    tn.close(out[2], tf32_rn(a).astype(np.float64) @ tf32_rn(b).astype(np.float64), 1e-5, 1e-5)
    tn.close(out[2], a.astype(np.float64) @ b.astype(np.float64), 0, 2e-3 * np.sqrt(k))


def test_tf32_mma_from_f16_is_exact_widening():
    """f16 -> tf32 widens exactly (no cvt); the dot equals numpy on the f16 values."""
    m, n, k = 40, 20, 36
    a, b, c = tn.rand((m, k), f16), tn.rand((k, n), f16), np.zeros((m, n), f32)
    path = _export(mma_tf32_from_f16, ["f16[2]", "f16[2]", "f32[2]", 32, 16, 16], "mma_tf32_from_f16")
    assert "cvt.rna" not in _compiles_without(path, "sm_80", OLD_TF32)
    out = tn.run("mma_tf32_from_f16", (tn.cdiv(m, 32), tn.cdiv(n, 16), 1), tn.arr(a) + tn.arr(b) + tn.arr(c),
                 path=path)
    tn.close(out[2], a.astype(np.float64) @ b.astype(np.float64), 1e-5, 1e-5)


TF32_ADD = """module attributes {cuda_tile.bytecode_version = "13.4"} {
  "cuda_tile.entry"() ({
    %c = "cuda_tile.constant"() {value = dense<1.5> : tensor<8xf32>} : () -> !cuda_tile.tile<array<i64: 8>, f32>
    %t = "cuda_tile.ftof"(%c) {rounding_mode = "nearest_even"} : (!cuda_tile.tile<array<i64: 8>, f32>)
        -> !cuda_tile.tile<array<i64: 8>, tf32> loc("k.py":3:4)
    %s = "cuda_tile.addf"(%t, %t) {rounding_mode = "nearest_even"} : (!cuda_tile.tile<array<i64: 8>, tf32>,
        !cuda_tile.tile<array<i64: 8>, tf32>) -> !cuda_tile.tile<array<i64: 8>, tf32> loc("k.py":5:6)
    "cuda_tile_term.return"() : () -> ()
  }) {function_type = () -> (), kernel, optimization_hints = #cuda_tile.optimization_hints<{}>, sym_name = "k"}
    : () -> ()
}
"""


def test_tf32_arithmetic_is_a_diagnostic(tmp_path):
    """cuTile converts tf32 before any arithmetic; hand-written IR that adds tf32 tiles gets an error at the
    op's location, not a crash."""
    src = tmp_path / "tf32_add.cuda_tile.mlir"
    src.write_text(TF32_ADD)
    with pytest.raises(TilecoreError, match=r"k\.py:5:6: 'arith\.addf' on tf32 is not supported"):
        compile_file(str(src), "sm_80")


def test_tf32_conversion_rounds_to_nearest_ties_to_even():
    """f32 -> tf32 bit for bit: ties (low 13 bits 0x1000) go to the even neighbour (0x3F801000 down, 0x3F803000 up),
    the largest finite f32 rounds to infinity, NaN and infinities pass, subnormals round like the rest."""
    special = np.array([0x3F801000, 0xBF801000, 0x3F800FFF, 0x3F803000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
                        0x00001000, 0x80000FFF, 0x7FC00000, 0x00003000], dtype=np.uint32).view(f32)
    x = np.concatenate([special, tn.rand(300 - len(special))])  # 300: the last 128-element tile is partial
    y = np.zeros_like(x)
    out = _run(round_tf32, ["f32[1]", "f32[1]", 128], "round_tf32", (tn.cdiv(len(x), 128), 1, 1), tn.arr(x) + tn.arr(y))
    got, ref = out[1].view(np.uint32), tf32_rn(x).view(np.uint32)
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert np.isnan(out[1][nan]).all()


# ================================================================== 3. batched (rank-3) mma
OLD_BATCHED = "failed to infer 2d layout"


@ct.kernel
def bmm(a, b, c, TB: ct.Constant[int], TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((TB, TM, TN), 0, dtype=c.dtype)
    for k in range(ct.num_tiles(a, axis=2, shape=(TB, TM, TK))):
        x = ct.load(a, index=(z, i, k), shape=(TB, TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, index=(z, k, j), shape=(TB, TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(z, i, j), tile=acc)


BMM = {  # name -> (operand dtype, accumulator dtype, TB, TM, TN, TK)
    "bmm_f16_b1": ("f16", "f32", 1, 32, 16, 16),  # the batch from bid(2) only; tensor cores
    "bmm_f16_b2": ("f16", "f32", 2, 16, 16, 16),  # two batches per tile (B = 5: the last tile half empty)
    "bmm_bf16_b2": ("bf16", "f32", 2, 16, 8, 16),
    "bmm_f32_b4": ("f32", "f32", 4, 8, 8, 8),  # CUDA cores
    "bmm_i8_b2": ("i8", "i32", 2, 16, 8, 32),  # mmai, exact
}


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("name", ["bmm_f16_b1", "bmm_f16_b2", "bmm_i8_b2"])
def test_batched_mma_compiles(name, sm):
    dt, acc, tb, tm, tn_, tk = BMM[name]
    ptx = _compiles_without(_export(bmm, [f"{dt}[3]", f"{dt}[3]", f"{acc}[3]", tb, tm, tn_, tk], name), sm,
                            OLD_BATCHED)
    if sm == "sm_100a":  # 16- / 32-row tiles take tcgen05 since 2026-11-24 (s8 with N = 8 since 2026-11-25)
        assert f"tcgen05.mma.cta_group::1.kind::{dt}" in ptx and "mma.sync" not in ptx
    else:
        assert "mma.sync.aligned" in ptx


@pytest.mark.parametrize("index", ["", "i64"])
@pytest.mark.parametrize("name", list(BMM))
def test_batched_mma_numbers(name, index):
    dt, acc, tb, tm, tn_, tk = BMM[name]
    # the 8 x 8 x 8 CUDA-core tiles take fewer elements (30 tile blocks of 9 K steps at the others' sizes cost 50 s
    # of CI); every size still leaves a partial tile
    B, m, n, k = (5, 12, 10, 20) if dt == "f32" else (5, 40, 20, 72)
    if dt == "i8":
        a, b = (RNG.integers(-128, 128, s).astype(np.int8) for s in ((B, m, k), (B, k, n)))
        va, vb = a, b
    elif dt == "bf16":
        a, b = to_bf16(tn.rand((B, m, k))), to_bf16(tn.rand((B, k, n)))
        va, vb = from_bf16(a), from_bf16(b)
    else:
        a, b = tn.rand((B, m, k), f16 if dt == "f16" else f32), tn.rand((B, k, n), f16 if dt == "f16" else f32)
        va, vb = a, b
    c = np.zeros((B, m, n), i32 if acc == "i32" else f32)
    pack = arr64 if index else tn.arr
    out = _run(bmm, [f"{dt}[3]{index}", f"{dt}[3]{index}", f"{acc}[3]{index}", tb, tm, tn_, tk], name,
               (tn.cdiv(m, tm), tn.cdiv(n, tn_), tn.cdiv(B, tb)), pack(a) + pack(b) + pack(c))
    ref = va.astype(np.int64 if acc == "i32" else np.float64) @ vb.astype(np.int64 if acc == "i32" else np.float64)
    if acc == "i32":
        np.testing.assert_array_equal(out[2], ref)
    else:
        tn.close(out[2], ref, 1e-4, 1e-4)
