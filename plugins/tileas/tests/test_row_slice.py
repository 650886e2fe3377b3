"""The row-slice layout (stage 4 ``row_slice``, ``layout.row_slice``): a tensor-core accumulator reduced along its
columns stays in registers (in-thread tree, ``shfl.bfly`` across the lanes of a quad, shared memory only across
warps / warpgroups that split the columns), broadcasts back to the fragment as register copies, and element-wise
ops and ``scf.for`` carry it as it is. The stage-4 ops, barrier counts in the PTX against
``--option tileas.row_slices=off`` (the blocked path), and the numbers in the emulator against numpy on sizes that
are not tile multiples (mma.sync on sm_80, wgmma on sm_90a, tcgen05 on sm_100a; 4 and 8 warps)."""

from __future__ import annotations

import math
import os
import re

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv
from test_wgmma_a_registers import _bits, _round
from tilecore_tileas.layout.fragment import fragment, tmem_fragment, wg_fragment
from tilecore_tileas.layout.row_slice import RowSlice, with_columns

from tilecore import emulate
from tilecore.compiler import compile_file, compile_module
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.stages import StageScheduler
from tilecore.targets import resolve_target

ct = pytest.importorskip("cuda.tile")
OFF = {"tileas.row_slices": "off"}


@ct.kernel
def row_stats(A, B, Mx, Sm, Mn, Pr, Am, D, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Per row of S = A @ B (columns past B's width masked out where they would count): max (kept (TM, 1)), sum,
    min, product of 1 + S / 64, argmax (several operands: the blocked path) and S - max broadcast back."""
    z = ct.PaddingMode.ZERO
    i = ct.bid(0)
    s = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        s = ct.mma(ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=z),
                   ct.load(B, index=(k, 0), shape=(TK, TN), padding_mode=z), s)
    inside = ct.reshape(ct.arange(TN, dtype=ct.int32), (1, TN)) < B.shape[1]
    mx = ct.max(ct.where(inside, s, -1e30), axis=1, keepdims=True)
    ct.store(Mx, index=(i, 0), tile=mx)
    ct.store(Sm, index=(i,), tile=ct.sum(s, axis=1))
    ct.store(Mn, index=(i,), tile=ct.min(ct.where(inside, s, 1e30), axis=1))
    ct.store(Pr, index=(i,), tile=ct.prod(1.0 + s * 0.015625, axis=1))
    ct.store(Am, index=(i,), tile=ct.argmax(ct.where(inside, s, -1e30), axis=1))
    ct.store(D, index=(i, 0), tile=s - mx)


@ct.kernel
def row_stats_i8(A, B, Mx, Sm, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Integer combiners on an i32 accumulator: row max (signed) and sum of A @ B (i8 operands)."""
    i = ct.bid(0)
    s = ct.full((TM, TN), 0, dtype=ct.int32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        s = ct.mma(ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                   ct.load(B, index=(k, 0), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO), s)
    inside = ct.reshape(ct.arange(TN, dtype=ct.int32), (1, TN)) < B.shape[1]
    ct.store(Mx, index=(i,), tile=ct.max(ct.where(inside, s, -(1 << 30)), axis=1))
    ct.store(Sm, index=(i,), tile=ct.sum(s, axis=1))


@ct.kernel
def row_stats_acc(A, B, Mx, Sm, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Row max and sum of A @ B accumulated in Sm's type, reduced in Mx's: an f16 accumulator (16-bit values
    shuffled in the low half of a 32-bit register), or an f32 one cast to f64 (the fragment layout kept, shuffled
    as two 32-bit halves)."""
    i = ct.bid(0)
    s = ct.full((TM, TN), 0, dtype=Sm.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        s = ct.mma(ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                   ct.load(B, index=(k, 0), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO), s)
    r = ct.astype(s, Mx.dtype)
    inside = ct.reshape(ct.arange(TN, dtype=ct.int32), (1, TN)) < B.shape[1]
    ct.store(Mx, index=(i,), tile=ct.max(ct.where(inside, r, -60000.0), axis=1))
    ct.store(Sm, index=(i,), tile=ct.astype(ct.sum(r, axis=1), Sm.dtype))


@ct.kernel
def sub_rowmax(A, B, D, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """D = S - rowmax(S), S = A @ B: a reduction broadcast back into the accumulator's layout."""
    i = ct.bid(0)
    s = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        s = ct.mma(ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                   ct.load(B, index=(k, 0), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO), s)
    ct.store(D, index=(i, 0), tile=s - ct.max(s, axis=1, keepdims=True))


@ct.kernel
def mma_only(A, B, D, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """D = A @ B (the reference for :func:`sub_rowmax`'s barriers)."""
    i = ct.bid(0)
    s = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        s = ct.mma(ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                   ct.load(B, index=(k, 0), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO), s)
    ct.store(D, index=(i, 0), tile=s)


@ct.kernel
def attention_dots(Q, K, V, Out, TM: ct.Constant[int], TN: ct.Constant[int], D: ct.Constant[int]):
    """The loads and dots of flash attention without its row statistics (acc += exp(Q K^T) V): the barrier count
    of the dots themselves, the reference for :func:`test_attention_k_loop_has_no_row_barriers`."""
    z = ct.PaddingMode.ZERO
    i = ct.bid(0)
    q = ct.load(Q, index=(i, 0), shape=(TM, D), padding_mode=z)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(K, axis=0, shape=(TN, D))):
        kt = ct.load(K, index=(0, j), shape=(D, TN), order=(1, 0), padding_mode=z)
        v = ct.load(V, index=(j, 0), shape=(TN, D), padding_mode=z)
        s = ct.mma(q, kt, ct.full((TM, TN), 0.0, dtype=ct.float32))
        acc = ct.mma(ct.astype(ct.exp(s), Q.dtype), v, acc)
    ct.store(Out, index=(i, 0), tile=acc)


def _stats_params(dt, tm, tn):
    return [f"{dt}[2]", f"{dt}[2]", "f32[2]", "f32[1]", "f32[1]", "f32[1]", "i32[1]", "f32[2]", tm, tn, 32]


def _pair(kernel, tn):
    return kernel, ["f16[2]/16", "f16[2]/16", "f32[2]/16", 64, tn, 32]


ATTN = ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64]
_K = KernelSet({
    **{f"stats_{dt}_{tm}x{tn}": (row_stats, _stats_params(dt, tm, tn))
       for dt in ("f16", "bf16") for tm, tn in ((64, 16), (64, 64), (128, 64), (16, 16))},
    "acc_f16": (row_stats_acc, ["f16[2]", "f16[2]", "f16[1]", "f16[1]", 64, 64, 32]),
    "acc_f64": (row_stats_acc, ["f16[2]", "f16[2]", "f64[1]", "f32[1]", 64, 64, 32]),
    "stats_i8": (row_stats_i8, ["i8[2]", "i8[2]", "i32[1]", "i32[1]", 64, 64, 32]),
    "sub_rowmax_16": _pair(sub_rowmax, 16), "mma_only_16": _pair(mma_only, 16),
    "sub_rowmax_64": _pair(sub_rowmax, 64), "mma_only_64": _pair(mma_only, 64),
    "attn": (ck.attention, ATTN),
    "causal": (ck.causal_attention, ATTN),
    "attn_bf16": (ck.attention, ["bf16[2]/16", "bf16[2]/16", "bf16[2]/16", "f32[2]/16", 64, 64, 64]),
    "causal_bf16": (ck.causal_attention, ["bf16[2]/16", "bf16[2]/16", "bf16[2]/16", "f32[2]/16", 64, 64, 64]),
    # S 64 x 16 (mma.sync warps 4 x 1) against acc 64 x 64 (2 x 2): the rows of S's slice are not acc's
    "attn_tn16": (ck.attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 16, 64]),
    "causal_tn16": (ck.causal_attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 16, 64]),
    "attn_dots": (attention_dots, ATTN),
    # 8 warps: mma.sync S and acc 128 x 64 (8 x 1 rather than 4 x 2); wgmma S 128 x 128 (2 x 1 rather than 1 x 2)
    "attn_128x64": (ck.attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 128, 64, 64]),
    "causal_128x128": (ck.causal_attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 128, 128, 64]),
}, "tileas-row-slice-")


def _path(name: str) -> str:
    path = os.path.join(_K._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        ck.export_spec(*_K.table[name], name, path)
    return path


def _lowered(name: str, sm: str, warps: int = 4, stop: str = "convert-tileas-to-llvm", extra=None):
    """Kernel ``name`` for ``sm`` with ``warps`` warps (cuTile has no num_warps: the kernel spec stage 2 attached
    is rewritten before the layouts are assigned), compiled up to ``stop``."""
    options = CompileOptions(emit="mlir", extra=extra or {})
    if warps == 4:
        return compile_file(_path(name), sm, options, stop_after=stop).module
    pm = PluginManager()
    names = StageScheduler(pm).names()
    first = names.index("tileas-assign-layouts")
    text = str(compile_file(_path(name), sm, options, stop_after=names[first - 1]).module)
    assert "kernel_spec<4 : i32" in text
    with pm.make_context():
        module = ir.Module.parse(text.replace("kernel_spec<4 : i32", f"kernel_spec<{warps} : i32"))
    compile_module(module, resolve_target(sm, pm.targets()), options, pm,
                   stages=names[first:names.index(stop) + 1])
    return module


def _ptx(name: str, sm: str, extra=None) -> str:
    ptx = compile_file(_path(name), sm, CompileOptions(emit="ptx", extra=extra or {})).artifacts["ptx"]
    return "\n".join(ptx.values()) if isinstance(ptx, dict) else ptx


def _run(name, sm, warps, grid, args):
    module = _lowered(name, sm, warps, stop="convert-nvgpu-and-gpu-to-nvvm")
    emulate.launch(module, name, grid, (32 * warps, 1, 1), args)


# -- the layout -------------------------------------------------------------------------------------
def test_row_slice_registers_are_the_rows_of_the_fragment():
    """Each thread holds one register per distinct row of its fragment registers: 2 per 16-row block of an
    mma.sync / wgmma accumulator (rows g and g + 8 of the quad's group g), 1 per 128-row tcgen05 block; a row slice
    of a (64 x 64) and of a (64 x 16) accumulator of the same warp grid put the same rows in the same registers."""
    for frag in (fragment(64, 64, 128), wg_fragment(64, 64, 128), tmem_fragment(128, 64, 128),
                 tmem_fragment(64, 64, 128), fragment(64, 64, 256)):
        rs = RowSlice((frag.shape[0], 1), frag)
        for tid in range(0, frag.threads, 7):
            held = sorted({frag.static_coords(k, tid)[0] for k in range(frag.regs)})
            assert rs.static_rows(tid) == held, (frag, tid)
    rs = RowSlice((64,), fragment(64, 16, 128))
    assert rs.regs == 2 and rs.shuffle_offsets == (1, 2) and rs.column_groups == 1
    wide = with_columns(rs.parent, 64)
    assert (wide.warps_m, wide.warps_n) == (4, 1) and RowSlice((64,), wide).rows_key == rs.rows_key
    assert RowSlice((128, 1), tmem_fragment(128, 64, 256)).shuffle_offsets == ()
    assert with_columns(wg_fragment(64, 64, 256), 20) is None  # not whole 8-column blocks per warpgroup


# -- stage-4 ops and barriers -------------------------------------------------------------------------
@pytest.mark.parametrize("sm, tn, shuffles", [("sm_80", 16, 4), ("sm_90a", 64, 4), ("sm_100a", 64, 0)])
def test_reduce_rows_is_shuffles_without_barriers(sm, tn, shuffles):
    """warps_n == 1 (mma.sync 64 x 16 on 4 warps: a 4 x 1 warp grid; one wgmma warpgroup; tcgen05 m64): the row
    max of the accumulator and its broadcast back add no barrier to the plain matmul; the quad's lanes meet in
    butterfly shuffles (lane masks 1 then 2, one each per row a thread holds: 2 rows) - none on tcgen05, whose
    threads hold whole rows."""
    text = str(_lowered(f"sub_rowmax_{tn}", sm))
    plain = str(_lowered(f"mma_only_{tn}", sm))
    assert text.count("gpu.barrier") == plain.count("gpu.barrier")
    offsets = re.findall(r"gpu\.shuffle\s+xor %\S+, %c(\d+)_i32", text)
    assert len(offsets) == shuffles and sorted(set(offsets)) == (["1", "2"] if shuffles else [])
    assert "arith.maxnumf" in text
    off = str(_lowered(f"sub_rowmax_{tn}", sm, extra=OFF))
    assert off.count("gpu.barrier") > text.count("gpu.barrier")  # the blocked path: reduce + broadcast exchanges


@pytest.mark.parametrize("sm, tn", [("sm_80", 64), ("sm_90a", 64)])
def test_reduce_rows_across_warps_takes_one_exchange(sm, tn):
    """Columns split over warps (mma.sync 64 x 64 on 8 warps: 2 x 4; wgmma on 8 warps: two warpgroups of 32
    columns): the partials meet in shared memory, two barriers more than the plain matmul."""
    text = str(_lowered(f"sub_rowmax_{tn}", sm, warps=8))
    plain = str(_lowered(f"mma_only_{tn}", sm, warps=8))
    assert text.count("gpu.barrier") == plain.count("gpu.barrier") + 2
    assert "gpu.shuffle" in text


@pytest.mark.parametrize("sm, before_min", [("sm_80", 24), ("sm_90a", 24), ("sm_100a", 28)])
def test_attention_loop_has_far_fewer_barriers(sm, before_min):
    """Flash attention (64 x 64 x 64, f16): bar.sync in the PTX, blocked path (``tileas.row_slices=off``) against
    row slices - at the time of writing 28 -> 12 (sm_80), 28 -> 8 (sm_90a), 32 -> 12 (sm_100a) over the kernel (the
    loop's aligned / element-copy forms and the epilogue); the loop body of the sm_90a kernel has 3 (operand
    stores, the S wgmma) instead of 14 (python bench/mma_kernels.py: SASS instructions before / after)."""
    for name in ("attn", "causal"):
        before = len(re.findall(r"\bbar(?:rier)?\.sync\b", _ptx(name, sm, OFF)))
        after = len(re.findall(r"\bbar(?:rier)?\.sync\b", _ptx(name, sm)))
        assert before >= before_min and 2 * after <= before, (name, before, after)


# -- warp grids of dots that meet row statistics ----------------------------------------------------------
def _dots(module) -> list:
    from tilecore.errors import ops_in

    return [op for top in module.body.operations for op in ops_in(top.operation) if op.name == "nv_tileas.dot"]


@pytest.mark.parametrize("name, warps, grids", [("attn", 4, [(4, 1), (4, 1)]), ("causal", 4, [(4, 1), (4, 1)]),
                                                ("attn_tn16", 4, [(4, 1), (4, 1)]), ("attn_128x64", 8, [(8, 1), (8, 1)]),
                                                ("attn_dots", 4, [(2, 2), (2, 2)]), ("mma_only_64", 4, [(2, 2)]),
                                                ("sub_rowmax_64", 8, [(2, 4)])])
def test_attention_dots_take_one_column_of_warps(name, warps, grids):
    """tileas-select-atoms marks the dots whose results meet row statistics ``rows_whole`` (S = Q K^T: reduced along
    N; the P V accumulator: rescaled by exp(m_old - m_new) and divided by the row sum), and their mma.sync
    fragments on sm_80 get a warp grid of one column (each warp owns whole rows: no cross-warp combine, and S's
    row slices are the accumulator's rows). Plain dots (a matmul, attention's dots without the softmax) keep the
    grid with the fewest operand rows + columns; with no one-column grid of all the warps (64 rows on 8 warps) the
    grid is as before."""
    from tilecore_tileas.atoms.select import ROWS_WHOLE, mma_request

    from tilecore.targets import resolve_target

    target = resolve_target("sm_80", PluginManager().targets())
    module = _lowered(name, "sm_80", warps, stop="tileas-select-atoms")
    got = []
    with module.context:
        dots = _dots(module)
        for op in dots:
            req = mma_request(op, 32 * warps, target)
            assert req.rows_whole == (ROWS_WHOLE in op.attributes)
            frag = fragment(req.m, req.n, req.threads, req.rows_whole)
            got.append((frag.warps_m, frag.warps_n))
        # every dot meets row statistics but those of the plain kernels (sub_rowmax's: marked, no one-column grid)
        assert all(ROWS_WHOLE in op.attributes for op in dots) == (name not in ("attn_dots", "mma_only_64"))
    assert got == grids
    if name == "attn":  # row slices off: the reductions go through the blocked layout, no preference
        text = str(_lowered(name, "sm_80", stop="tileas-select-atoms", extra=OFF))
        assert "nv_tileas.dot" in text and ROWS_WHOLE not in text


def test_grids_prefer_one_column_only_when_asked():
    """The grid functions: ``rows_whole`` picks one column of warps / warpgroups among the grids of the most of them
    (mma.sync, wgmma, tcgen05), and changes nothing where none has one column."""
    from tilecore_tileas.layout.fragment import arrange_warps, tmem_grid

    from tilecore.mma import warpgroup_grid

    n_ok = lambda n: n % 8 == 0 and n <= 256  # noqa: E731
    assert (arrange_warps(64, 64, 4), arrange_warps(64, 64, 4, True)) == ((2, 2), (4, 1))
    assert (arrange_warps(128, 64, 8), arrange_warps(128, 64, 8, True)) == ((4, 2), (8, 1))
    assert arrange_warps(64, 64, 8, True) == arrange_warps(64, 64, 8) == (2, 4)
    assert (warpgroup_grid(128, 128, 256, n_ok), warpgroup_grid(128, 128, 256, n_ok, True)) == ((1, 2), (2, 1))
    assert warpgroup_grid(64, 64, 256, n_ok, True) == (1, 2)
    assert (tmem_grid(256, 256, 256), tmem_grid(256, 256, 256, rows_whole=True)) == ((1, 2), (2, 1))
    assert tmem_grid(128, 64, 256, rows_whole=True) == (1, 2)
    assert wg_fragment(128, 128, 256, rows_whole=True).groups_n == 1
    assert tmem_fragment(256, 256, 256, rows_whole=True).groups_n == 1


@pytest.mark.parametrize("name", ["attn", "causal", "attn_tn16"])
def test_attention_k_loop_has_no_row_barriers(name):
    """sm_80, 4 warps: with one column of warps the row max / sum are in-thread trees and quad shuffles, and the
    rescale factors are the accumulator's own rows, so the stage-4 IR has exactly the barriers of the same loads
    and dots without any row statistic (:func:`attention_dots`: the dots' operand exchanges and the epilogue)."""
    text = str(_lowered(name, "sm_80"))
    ref = str(_lowered("attn_dots", "sm_80"))
    assert "gpu.shuffle" in text and "gpu.shuffle" not in ref
    assert text.count("gpu.barrier") == ref.count("gpu.barrier"), (text.count("gpu.barrier"), ref.count("gpu.barrier"))


# -- numbers ---------------------------------------------------------------------------------------
STATS = [("sm_80", "f16", 4, 64, 16), ("sm_80", "bf16", 4, 16, 16), ("sm_80", "bf16", 4, 64, 64), ("sm_80", "f16", 8, 64, 64),
         ("sm_90a", "f16", 4, 64, 64), ("sm_90a", "bf16", 8, 64, 64),
         ("sm_100a", "f16", 4, 64, 64), ("sm_100a", "bf16", 4, 128, 64), ("sm_100a", "f16", 8, 128, 64)]


@pytest.mark.parametrize("sm, dt, warps, tm, tn", STATS)
def test_row_stats_numbers(sm, dt, warps, tm, tn):
    """Row max / sum / min / product / argmax of a dot result and the result minus its row max, 100 x (tn - 14)
    (K = 40: a partial K step), against numpy; 4 and 8 warps (columns over one warp / warpgroup or several; a
    16 x 16 tile on 4 warps: a 1 x 2 warp grid, warps 2 and 3 its replicas)."""
    rng = np.random.default_rng(5)
    m, n, k = 100, tn - 3 if tn == 16 else tn - 14, 40
    a = _round(rng.standard_normal((m, k)) * 0.5, dt)
    b = _round(rng.standard_normal((k, n)) * 0.5, dt)
    mx, d = np.zeros((m, 1), np.float32), np.zeros((m, n), np.float32)
    sm_, mn, pr, am = np.zeros(m, np.float32), np.zeros(m, np.float32), np.zeros(m, np.float32), np.zeros(m, np.int32)
    name = f"stats_{dt}_{tm}x{tn}"
    _run(name, sm, warps, (cdiv(m, tm), 1, 1), arr(_bits(a, dt)) + arr(_bits(b, dt)) + arr(mx) + arr(sm_) + arr(mn)
         + arr(pr) + arr(am) + arr(d))
    s = a @ b
    tol = dict(atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(mx[:, 0], s.max(1), **tol)
    np.testing.assert_allclose(sm_, s.sum(1), **tol)
    np.testing.assert_allclose(mn, s.min(1), **tol)
    np.testing.assert_allclose(pr, np.prod(1 + s / 64, axis=1), atol=0, rtol=1e-4)
    np.testing.assert_array_equal(am, s.argmax(1))
    np.testing.assert_allclose(d, s - s.max(1, keepdims=True), **tol)


@pytest.mark.parametrize("sm, warps", [("sm_80", 4), ("sm_90a", 8), ("sm_100a", 4)])
def test_integer_row_stats_numbers(sm, warps):
    """i32 accumulators (i8 operands): signed max and sum per row, 100 x 50 x 40."""
    rng = np.random.default_rng(9)
    m, n, k = 100, 50, 40
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    mx, sm_ = np.zeros(m, np.int32), np.zeros(m, np.int32)
    _run("stats_i8", sm, warps, (cdiv(m, 64), 1, 1), arr(a) + arr(b) + arr(mx) + arr(sm_))
    s = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(mx, s.max(1))
    np.testing.assert_array_equal(sm_, s.sum(1))


@pytest.mark.parametrize("sm, el", [("sm_80", "f16"), ("sm_90a", "f16"), ("sm_100a", "f16"), ("sm_80", "f64"),
                                    ("sm_90a", "f64")])
def test_narrow_and_wide_row_stats_numbers(sm, el):
    """Row max and sum of an f16 accumulator (16-bit shuffles) and of an f32 one cast to f64 (64-bit shuffles),
    100 x 50 x 40: the shuffles are in the stage-4 IR (none on tcgen05) and the numbers match numpy."""
    rng = np.random.default_rng(13)
    m, n, k = 100, 50, 40
    a = (rng.standard_normal((m, k)) * 0.25).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 0.25).astype(np.float16)
    mx = np.zeros(m, np.float16 if el == "f16" else np.float64)
    sm_ = np.zeros(m, np.float16 if el == "f16" else np.float32)
    text = str(_lowered(f"acc_{el}", sm))
    assert ("gpu.shuffle" in text) == (sm != "sm_100a")
    _run(f"acc_{el}", sm, 4, (cdiv(m, 64), 1, 1), arr(a) + arr(b) + arr(mx) + arr(sm_))
    s = a.astype(np.float64) @ b.astype(np.float64)
    tol = dict(atol=2e-2, rtol=1e-2) if el == "f16" else dict(atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(mx, s.max(1), **tol)
    np.testing.assert_allclose(sm_, s.sum(1), **tol)


ATTN_CASES = [("sm_80", "attn", 4), ("sm_80", "causal_bf16", 4), ("sm_90a", "causal", 4), ("sm_90a", "attn_bf16", 8),
              ("sm_100a", "attn", 4), ("sm_100a", "causal_bf16", 4), ("sm_80", "attn_tn16", 4),
              ("sm_80", "causal_tn16", 4), ("sm_90a", "attn_tn16", 4), ("sm_100a", "causal_tn16", 4),
              ("sm_80", "attn_128x64", 8), ("sm_90a", "causal_128x128", 8)]


@pytest.mark.parametrize("sm, name, warps", ATTN_CASES)
def test_online_softmax_numbers(sm, name, warps):
    """Flash attention, 130 queries x 150 keys, d = 64 (partial last tiles; the zero-padded keys of the unmasked
    kernel count as scores of 0, as in the kernel's docstring), causal and not, f16 / bf16, against numpy; and with
    16-key tiles on sm_80, whose scores' warp grid (4 x 1) is not the accumulator's (2 x 2)."""
    rng = np.random.default_rng(7)
    nq, nk, d = 130, 150, 64
    el = "bf16" if name.endswith("bf16") else "f16"
    q = _round(rng.standard_normal((nq, d)) * 0.3, el)
    k = _round(rng.standard_normal((nk, d)) * 0.3, el)
    v = _round(rng.standard_normal((nk, d)), el)
    o = np.zeros((nq, d), np.float32)
    _run(name, sm, warps, (cdiv(nq, 64), 1, 1), arr(_bits(q, el)) + arr(_bits(k, el)) + arr(_bits(v, el)) + arr(o))
    s = q @ k.T
    vv = v
    if name.startswith("causal"):
        s = np.where(np.tril(np.ones((nq, nk), bool)), s, -math.inf)
    else:  # the padded keys of the last 64-key tile: scores 0, values 0
        tn = _K.table[name][1][5]
        pad = cdiv(nk, tn) * tn - nk
        s = np.concatenate([s, np.zeros((nq, pad))], axis=1)
        vv = np.concatenate([vv, np.zeros((pad, d))])
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ vv
    # P is rounded to the operand type for P @ V (8 significant bits for bf16): that bounds the tolerance
    np.testing.assert_allclose(o, want, atol=3e-3 if el == "f16" else 2e-2, rtol=0)
