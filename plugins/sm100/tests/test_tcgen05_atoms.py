"""The sm_100a tensor-memory MMA atoms (``tcgen05.mma``, :mod:`tilecore_sm100.mma_sm100`) end to end: cuTile
matmul kernels exported, the atom selected by ``tileas-select-atoms``, the stage-4 ops (``sm100`` dialect) and
their nvvm forms, ptxas on sm_100a / sm_103a, UTC*MMA in the SASS, numbers in the CPU emulator against numpy on
sizes that are not tile multiples."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilecore.assembler import find_nvidia_tool
from tilecore.compiler import compile_file

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")  # the cuTile front end (tox -e sm100 installs the plugin without it)
_TILEAS_TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "tileas", "tests")
if _TILEAS_TESTS not in sys.path:
    sys.path.insert(0, _TILEAS_TESTS)

import cutile_kernels as ck  # noqa: E402
from emulated_kernels import KernelSet, arr, cdiv  # noqa: E402
from tilecore_sm100.mma_sm100 import alloc_cols, inst_n, instr_desc  # noqa: E402

ZERO = ct.PaddingMode.ZERO
mma_loop, mma_tf32_loop, mma_epilogue = ck.mma_loop, ck.mma_tf32_loop, ck.mma_epilogue  # the tileas tests' kernels
CUOBJDUMP = find_nvidia_tool("cuobjdump")  # nvidia-cuda-cuobjdump: .../nvidia/cu13/bin/cuobjdump


@ct.kernel
def mma_acc_init(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """c += a @ b: the loop starts from c's tile (stored to tensor memory in the first iteration only)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.load(c, index=(i, j), shape=(TM, TN), padding_mode=ZERO)
    for k in range(ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def mma_chain(a, b, w, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Two dots per iteration: s = a_k @ b_k from zero (scratch columns), then acc += f16(s) @ w_k (its own
    columns, kept in tensor memory; s goes to shared memory from its fragment registers)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], TK)):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ZERO)
        y = ct.load(b, index=(k, 0), shape=(TK, TK), padding_mode=ZERO)
        s = ct.mma(x, y, ct.full((TM, TK), 0, dtype=ct.float32))
        z = ct.load(w, index=(k, j), shape=(TK, TN), padding_mode=ZERO)
        acc = ct.mma(ct.astype(s, ct.float16), z, acc)
    ct.store(c, index=(i, j), tile=acc)


@ct.kernel
def mma_single(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """One dot, no loop: operands written to shared memory from registers, zero accumulator."""
    i, j = ct.bid(0), ct.bid(1)
    x = ct.load(a, index=(i, 0), shape=(TM, TK), padding_mode=ZERO)
    y = ct.load(b, index=(0, j), shape=(TK, TN), padding_mode=ZERO)
    ct.store(c, index=(i, j), tile=ct.mma(x, y, ct.full((TM, TN), 0, dtype=ct.float32)))


@ct.kernel
def mma_batched(a, b, c, TB: ct.Constant[int], TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """c[z] = a[z] @ b[z] over K tiles, TB batches a block: a 2-D dot per batch, its accumulator sliced out of (and
    inserted back into) the 3-D carried tile, so converted to the tcgen05 fragment every iteration."""
    z, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((TB, TM, TN), 0, dtype=c.dtype)
    for k in range(ct.num_tiles(a, axis=2, shape=(TB, TM, TK))):
        x = ct.load(a, index=(z, i, k), shape=(TB, TM, TK), padding_mode=ZERO)
        y = ct.load(b, index=(z, k, j), shape=(TB, TK, TN), padding_mode=ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(z, i, j), tile=acc)


KERNELS = {
    "mma_f16_f32": (mma_loop, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 32]),
    "mma_bf16_f32": (mma_loop, ["bf16[2]", "bf16[2]", "f32[2]", 128, 32, 32]),
    "mma_tf32_f32": (mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 128, 32, 16]),
    "mma_s8_i32": (mma_loop, ["i8[2]", "i8[2]", "i32[2]", 128, 32, 64]),
    "mma_u8_i32": (mma_loop, ["u8[2]", "u8[2]", "i32[2]", 128, 64, 32]),
    "mma_e4m3_f32": (mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 128, 32, 64]),
    "mma_e5m2_f32": (mma_loop, ["f8e5m2[2]", "f8e5m2[2]", "f32[2]", 128, 64, 32]),
    "mma_f16_f32_m256": (mma_loop, ["f16[2]", "f16[2]", "f32[2]", 256, 32, 32]),
    "mma_epilogue": (mma_epilogue, ["f16[2]", "f16[2]", "f32[1]", "f16[2]", "f32", 128, 64, 32]),
    "mma_single": (mma_single, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 64]),
    "mma_acc_init": (mma_acc_init, ["bf16[2]", "bf16[2]", "f32[2]", 128, 128, 32]),
    "mma_chain": (mma_chain, ["f16[2]", "f16[2]", "f16[2]", "f32[2]", 128, 64, 32]),
    # 64-row tiles: M = 64 instructions, issued twice (lanes 0 and 16)
    "m64_f16_f32": (mma_loop, ["f16[2]", "f16[2]", "f32[2]", 64, 32, 32]),
    "m64_s8_i32": (mma_loop, ["i8[2]", "i8[2]", "i32[2]", 64, 64, 32]),
    "m64_e4m3_f32": (mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 64, 128, 64]),
    "tf32_m64": (mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 64, 16, 32]),
    "tf32_piped": (mma_tf32_loop, ["f32[2]", "f32[2]", "f32[2]", 64, 32, 32]),  # TMA-pipelined: B an MN-major stage
    "batched_f32": (mma_batched, ["f16[3]", "f16[3]", "f32[3]", 2, 128, 32, 32]),
    "batched_m64_f16": (mma_batched, ["f16[3]", "f16[3]", "f16[3]", 2, 64, 32, 32]),
    # f16 accumulators: D f32 in tensor memory, rounded to f16 per dot
    "acc16_loop": (mma_loop, ["f16[2]", "f16[2]", "f16[2]", 128, 64, 32]),
    "acc16_m64": (mma_loop, ["f16[2]", "f16[2]", "f16[2]", 64, 32, 64]),
    "acc16_e4m3": (mma_loop, ["f8e4m3[2]", "f8e4m3[2]", "f16[2]", 128, 32, 64]),
}
ATOM = {
    "f16": "mma.sm100a.mMnNk16.f16.f32", "bf16": "mma.sm100a.mMnNk16.bf16.f32",
    "s8": "mma.sm100a.mMnNk32.i8.i32", "u8": "mma.sm100a.mMnNk32.i8.i32",
    "e4m3": "mma.sm100a.mMnNk32.f8.f32", "e5m2": "mma.sm100a.mMnNk32.f8.f32",
}
KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "s8": "i8", "u8": "i8", "e4m3": "f8f6f4", "e5m2": "f8f6f4"}
ELEM = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "s8": "i8", "u8": "i8", "e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}
TYPES = [n for n in KERNELS if n.startswith("mma_") and n.split("_")[1] in ATOM and n.count("_") == 2]
M64 = [n for n in KERNELS if n.startswith("m64_")]
_KERNELS = KernelSet(KERNELS, "sm100-tcgen05-")


def _export(name: str) -> str:
    path = os.path.join(_KERNELS._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        kernel, params = KERNELS[name]
        ck.export_spec(kernel, params, name, path)
    return path


def _el(name: str) -> str:
    return name.split("_")[1]


def _emulator_has_tcgen05() -> bool:
    """Whether the CPU emulator runs the tcgen05 ops the atoms emit (the sm100 plugin's emulator rows)."""
    try:
        from tilecore.emulate import optable

        return all(optable.row(f"nvvm.tcgen05.{o}") is not None for o in ("alloc", "mma", "commit", "ld", "st"))
    except Exception:
        return False


# ------------------------------------------------------------------ the descriptor arithmetic
def test_instruction_descriptor_fields():
    """PTX ISA 9.7.16.4.2: dtype (4-5), atype (7-9), btype (10-12), transpose B (16), N >> 3 (17-22), M >> 4 (24-28)."""
    d = instr_desc("f16", "bf16", "bf16", "f32", 64)
    assert (d >> 4) & 3 == 1 and (d >> 7) & 7 == 1 and (d >> 10) & 7 == 1
    assert (d >> 15) & 1 == 0 and (d >> 16) & 1 == 1 and (d >> 17) & 63 == 8 and (d >> 24) & 31 == 8
    assert d & 0b111 == 0 and (d >> 13) & 3 == 0 and (d >> 23) & 1 == 0 and (d >> 29) == 0
    assert instr_desc("f16", "f16", "f16", "f32", 256) == 1 << 4 | 1 << 16 | 32 << 17 | 8 << 24
    assert (instr_desc("tf32", "tf32", "tf32", "f32", 32) >> 7) & 63 == 2 | 2 << 3
    i8 = instr_desc("i8", "i8", "i8", "i32", 32, a_signed=True, b_signed=False)
    assert (i8 >> 4) & 3 == 2 and (i8 >> 7) & 7 == 1 and (i8 >> 10) & 7 == 0
    f8 = instr_desc("f8f6f4", "f8E5M2", "f8E4M3FN", "f32", 16)
    assert (f8 >> 7) & 7 == 1 and (f8 >> 10) & 7 == 0 and (f8 >> 17) & 63 == 2


def test_instruction_n_and_allocation():
    assert inst_n(64, 2) == 64 and inst_n(512, 2) == 256 and inst_n(384, 2) == 192 and inst_n(8, 2) == 0
    assert [alloc_cols(c) for c in (1, 32, 33, 64, 100, 512)] == [32, 32, 64, 64, 128, 512]


@pytest.mark.parametrize("m, n, threads, grid", [(128, 32, 128, (1, 1)), (256, 64, 256, (2, 1)),
                                                  (128, 64, 256, (1, 2)), (256, 32, 128, (1, 1)), (64, 48, 128, (1, 1))])
def test_tmem_fragment_covers_the_tile(m, n, threads, grid):
    """tileas' TmemFragment: thread t of a warpgroup holds row t % 128 of its 128-row blocks (tcgen05.ld 32x32b:
    warp w reads TMEM lanes 32 (w % 4) ..), warpgroups in a grid over blocks and columns, every element once; a
    64-row tile: thread l of warp w holds row 16 w + l % 16 (threads l and l + 16 alike), every element twice."""
    from tilecore_tileas.layout.fragment import tmem_fragment

    frag = tmem_fragment(m, n, threads)
    assert (frag.groups_m, frag.groups_n) == grid and frag.regs * threads == m * n * (2 if m == 64 else 1)
    seen = {frag.static_coords(k, t) for t in range(threads) for k in range(frag.regs)}
    assert seen == {(r, c) for r in range(m) for c in range(n)}
    lane_row = (lambda t: 16 * (t % 128 // 32) + t % 16) if m == 64 else (lambda t: t % 128)
    assert all(frag.static_coords(k, t)[0] % 128 == lane_row(t) for t in range(threads) for k in range(frag.regs))
    assert tmem_fragment(64, 32, 256) is None and tmem_fragment(128, 32, 96) is None and \
        tmem_fragment(96, 32, 128) is None


# ------------------------------------------------------------------ selection and the emitted ops
@pytest.mark.parametrize("gpu", ["sm_100a", "sm_103a"])
@pytest.mark.parametrize("name", TYPES)
def test_tcgen05_atom_selected(name, gpu):
    """Every type on sm_100a; on sm_103a all but s8 / u8 (ptxas has no .kind::i8 there: mma.sync instead)."""
    text = str(compile_file(_export(name), gpu, stop_after="tileas-select-atoms").module)
    if gpu == "sm_103a" and KIND[_el(name)] == "i8":
        assert '#nv_tileas.atom<"mma.sm80.m16n8k32.i8.i32">' in text
    else:
        assert f'#nv_tileas.atom<"{ATOM[_el(name)]}">' in text


@pytest.mark.parametrize("gpu", ["sm_90a", "sm_100", "sm_120a"])
def test_tcgen05_atoms_not_selected_elsewhere(gpu):
    text = str(compile_file(_export("mma_f16_f32"), gpu, stop_after="tileas-select-atoms").module)
    assert "mma.sm100a" not in text


@pytest.mark.parametrize("name", ["mma_tf32_f32", "tf32_m64", "tf32_piped"])
def test_tf32_atom(name, tmp_path):
    """tf32: the tcgen05 atom with B K-major (an MN-major tf32 B needs the 128B swizzle with 32-byte atoms, PTX ISA
    Table 52): the instruction descriptor's transpose-B bit is 0, B's descriptor a K-major one (LBO 16, SBO 8 rows
    of the swizzle); ptxas takes it on sm_100a and sm_103a (UTCHMMA)."""
    text = str(compile_file(_export(name), "sm_100a", stop_after="tileas-select-atoms").module)
    assert '#nv_tileas.atom<"mma.sm100a.mMnNk8.tf32.f32">' in text
    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    m, n = KERNELS[name][1][-3:-1]
    d = instr_desc("tf32", "tf32", "tf32", "f32", n, m=m, b_mn_major=False)
    assert (d >> 16) & 1 == 0 and (d >> 7) & 7 == 2 and f"arith.constant {d} : i32" in text
    assert 'kind = "tf32"' in text
    for gpu in ("sm_100a", "sm_103a"):
        res = compile_file(_export(name), gpu)
        ptx = res.artifacts["ptx"]
        assert "tcgen05.mma.cta_group::1.kind::tf32" in (ptx if isinstance(ptx, str) else "".join(ptx.values()))
        if CUOBJDUMP:
            cubin = res.artifacts["cubin"]
            sass = _sass(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())), tmp_path)
            assert re.search(r"\bUTC\w*MMA\b", sass) and "LDTM" in sass
            # a pipelined loop loads by TMA; its MN-major B stage is copied into the K-major layout per dot
            assert "UTMALDG" in sass or name != "tf32_piped"


def _tile_ops(name: str) -> str:
    return str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)


@pytest.mark.parametrize("name", TYPES)
def test_tcgen05_stage4_ops(name):
    """Stage 4: one allocation (columns: the accumulator's, a power of two >= 32) and one mbarrier per kernel,
    freed before the return; per dot: fences around the barrier, K / k_inst MMAs (one 128-row block, N in one
    instruction) committed to the mbarrier, a parity wait. ``acc = mma(x, y, acc)`` from a zero splat keeps the
    accumulator in tensor memory across the loop: never stored (enable-input-d 0 in the first iteration), loaded
    in the last iteration only."""
    _kernel, params = KERNELS[name]
    tm, tn, tk = params[-3:]
    el = _el(name)
    k_inst = {"f16": 16, "bf16": 16}.get(el, 32)
    text = _tile_ops(name)
    dots = text.count('"sm100.umma_commit"')
    assert dots in (1, 2)  # the pipelined loop (+ its unaligned fallback)
    assert text.count('"sm100.umma"') == dots * (tk // k_inst)
    assert text.count(f'kind = "{KIND[el]}"') == dots * (tk // k_inst)
    assert text.count('"sm100.tmem_alloc"') == 1 and f"ncols = {alloc_cols(tn)} : i32" in text
    assert text.count('"sm100.tmem_dealloc"') == 1 and text.count('"sm100.tmem_relinquish"') == 1
    # the commits' mbarrier (cute's mbarrier ops, shared with the TMA ring: its 3 stages' and its wait too)
    tma = text.count('"cute_nvgpu.tma_load"') > 0
    assert text.count('"cute_nvgpu.mbarrier_init"') == 1 + 3 * tma
    assert text.count('"cute_nvgpu.mbarrier_try_wait_parity"') == dots + tma
    chunks = -(-tn // 32)
    assert text.count('"sm100.tmem_load"') == dots * chunks and '"sm100.tmem_store"' not in text
    assert text.count('"cute_nvgpu.fence_view_async_shared"') >= dots  # + the pipeline's own, if any
    assert text.count("tcgen05_fence_before_thread_sync") == 1 + dots + 1  # prologue, per dot, before the return
    assert "cute_nvgpu.mma_sync" not in text and "cute_nvgpu.ldmatrix" not in text and "wgmma" not in text


@pytest.mark.parametrize("name", M64)
def test_tcgen05_64_row_tiles(name):
    """64-row tiles (one warpgroup): M = 64 instructions (M >> 4 = 4 in the instruction descriptor), each issued
    twice per K step, into lanes 0 and 16 (D address + 16 << 16), so every thread's 32x32b load reads its row."""
    _kernel, params = KERNELS[name]
    _tm, tn, tk = params[-3:]
    el = _el(name)
    k_inst = {"f16": 16, "bf16": 16}.get(el, 32)
    assert f'#nv_tileas.atom<"{ATOM[el]}">' in str(compile_file(_export(name), "sm_100a",
                                                                stop_after="tileas-select-atoms").module)
    text = _tile_ops(name)
    dots = text.count('"sm100.umma_commit"')
    assert text.count('"sm100.umma"') == dots * 2 * (tk // k_inst) and f"ncols = {alloc_cols(tn)} : i32" in text
    assert "arith.constant 1048576 : i32" in text  # lane 16
    idesc = instr_desc(KIND[el], ELEM[el], ELEM[el], "i32" if el == "s8" else "f32", tn, m=64)
    assert (idesc >> 24) & 31 == 4 and f"arith.constant {idesc} : i32" in text


def test_tcgen05_accumulator_through_registers():
    """An accumulator the loop also rescales (``mma(x, y, acc * 0.5) + acc * 0.5``) is stored to tensor memory
    before and loaded after every dot; one the loop starts from a loaded tile is stored in the first
    iteration only."""
    text = _tile_ops("mma_epilogue")
    dots = text.count('"sm100.umma_commit"')
    assert text.count('"sm100.tmem_store"') == dots * 2 and text.count('"sm100.tmem_load"') == dots * 2
    text = _tile_ops("mma_acc_init")
    dots = text.count('"sm100.umma_commit"')
    assert text.count('"sm100.tmem_store"') == dots * 4 and text.count('"sm100.tmem_load"') == dots * 4
    assert "ncols = 128 : i32" in text
    text = _tile_ops("mma_chain")  # 64 resident columns + 32 scratch columns: a 128-column allocation
    # the loop twice: pipelined (its loads for the dots, the body's own shared memory past the stages) behind
    # the run-time alignment check, and plain
    assert text.count('"sm100.umma_commit"') == 2 * 2 and "ncols = 128 : i32" in text
    assert '"sm100.tmem_store"' not in text


@pytest.mark.parametrize("name", ["mma_f16_f32", "mma_s8_i32", "mma_e5m2_f32", "mma_bf16_f32"])
def test_tcgen05_nvvm_forms(name):
    """Stage 5: the nvvm ops of plugins/sm100/TCGEN05-FORMS.md, the instruction descriptor constant, the
    shared-memory descriptors' fixed bits (0b001 at 46-48, swizzle at 61-63)."""
    el = _el(name)
    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-cute-to-llvm").module)
    assert f"kind = #nvvm.tcgen05_mma_kind<{KIND[el]}>" in text and "ctaGroup = #nvvm.cta_group<cta_1>" in text
    assert re.search(r"nvvm\.tcgen05\.mma %\S+, %\S+, %\S+, %\S+, %\S+ \{.*\} : \(!llvm\.ptr<6>, i64, i64, i32, i1\)",
                     text)
    assert re.search(r"nvvm\.tcgen05\.alloc %\S+, %\S+ : !llvm\.ptr<3>, i32", text)
    assert re.search(r"nvvm\.tcgen05\.dealloc %\S+, %\S+ : !llvm\.ptr<6>, i32", text)
    assert "nvvm.tcgen05.relinquish_alloc_permit" in text and "nvvm.tcgen05.commit" in text
    assert "nvvm.tcgen05.ld" in text and "shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<32xi32>" in text
    assert "nvvm.tcgen05.wait <load>" in text and "nvvm.mbarrier.try_wait.parity" in text
    assert "nvvm.mbarrier.init" in text and "nvvm.fence.mbarrier.init" in text
    _kernel, params = KERNELS[name]
    signed = (True, True)
    idesc = instr_desc(KIND[el], ELEM[el], ELEM[el], "i32" if el in ("s8", "u8") else "f32", params[-2], *signed)
    assert f"arith.constant {idesc} : i32" in text or f"llvm.mlir.constant({idesc} : i32)" in text


def _sass(cubin: bytes, tmp_path) -> str:
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    return subprocess.run([CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name", TYPES + ["mma_acc_init"] + M64)
def test_tcgen05_ptxas_and_sass(name, tmp_path):
    """ptxas takes the sm_100a PTX (tcgen05.alloc / mma / commit / ld / st / dealloc); the SASS has the
    tensor-memory MMA (UTC*MMA), tensor-memory loads (LDTM) and, for an accumulator that does not start at
    zero, stores (STTM)."""
    res = compile_file(_export(name), "sm_100a")
    ptx = res.artifacts["ptx"]
    ptx = ptx if isinstance(ptx, str) else "".join(ptx.values())
    assert f"tcgen05.mma.cta_group::1.kind::{KIND.get(_el(name), 'f16')}" in ptx
    assert "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32" in ptx and "tcgen05.dealloc" in ptx
    assert re.search(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x(16|32)\.b32", ptx)
    cubin = res.artifacts["cubin"]
    cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
    assert cubin[:4] == b"\x7fELF"
    sass = _sass(cubin, tmp_path)
    assert re.search(r"\bUTC\w*MMA\b", sass) and "LDTM" in sass
    assert ("STTM" in sass) == (name == "mma_acc_init")


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name", ["mma_f16_f32", "mma_bf16_f32", "mma_e4m3_f32"])
def test_tcgen05_sm103a_inline_ptx(name, tmp_path):
    """sm_103a: MLIR 22's nvvm verifier rejects tcgen05 ops there, so they are inline PTX; ptxas takes it."""
    text = str(compile_file(_export(name), "sm_103a", stop_after="convert-cute-to-llvm").module)
    assert "nvvm.tcgen05" not in text and f"tcgen05.mma.cta_group::1.kind::{KIND[_el(name)]}" in text
    res = compile_file(_export(name), "sm_103a")
    cubin = res.artifacts["cubin"]
    cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
    assert re.search(r"\bUTC\w*MMA\b", _sass(cubin, tmp_path))


# ------------------------------------------------------------------ numbers in the emulator
def _operand(rng, shape, name: str):
    from test_mma_atoms import _operand as operand

    return operand(rng, shape, name)


NUMERIC_SKIP = pytest.mark.skipif(not _emulator_has_tcgen05(),
                                  reason="the emulator does not model the tcgen05 ops yet (plugins/sm100 "
                                         "TCGEN05-FORMS.md: its models were not in place by 02:15 UTC)")


@NUMERIC_SKIP
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("name", TYPES + ["mma_f16_f32_m256"] + M64)
def test_tcgen05_numbers(name, aligned):
    """c = a @ b on sizes that are not tile multiples: odd ones run the unpipelined fallback, aligned ones the
    pipelined loop; exact for integers (wrapping), else within f32 accumulation error."""
    _kernel, params = KERNELS[name]
    tm, tn, tk = params[-3:]
    el = _el(name)
    m, n, k = (tm + 9, tn + 5, 2 * tk + 3) if not aligned else (tm + 16, tn + 16, 2 * tk + 16)
    rng = np.random.default_rng(21)
    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    acc_dt = np.int32 if el in ("s8", "u8") else np.float32
    c = np.zeros((m, n), acc_dt)
    _KERNELS.run(name, "sm_100a", (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    if acc_dt == np.int32:
        np.testing.assert_array_equal(c.astype(np.int64), (want + 2**31) % 2**32 - 2**31)
    else:
        np.testing.assert_allclose(c.astype(np.float64), want, atol=1e-4 * np.abs(want).max(), rtol=0)


@NUMERIC_SKIP
def test_tcgen05_epilogue_and_single_dot_numbers():
    m, n, k = 137, 70, 75
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c = np.zeros((m, n), np.float16)
    _KERNELS.run("mma_epilogue", "sm_100a", (cdiv(m, 128), cdiv(n, 64), 1),
                 arr(a) + arr(b) + arr(bias) + arr(c) + [np.float32(1.5)])
    want = np.maximum(1.5 * (a.astype(np.float64) @ b.astype(np.float64)) + bias, 0)
    np.testing.assert_allclose(c.astype(np.float64), want, atol=2e-2 * np.abs(want).max(), rtol=0)
    m, n, k = 130, 67, 61
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    _KERNELS.run("mma_single", "sm_100a", (cdiv(m, 128), cdiv(n, 64), 1), arr(a) + arr(b) + arr(c))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


@NUMERIC_SKIP
@pytest.mark.parametrize("aligned", [False, True])
def test_tcgen05_loop_from_a_loaded_accumulator_numbers(aligned):
    """c += a @ b (bf16, 128 x 128 tiles): the accumulator enters tensor memory in the first iteration."""
    m, n, k = (150, 140, 77) if not aligned else (144, 160, 96)
    rng = np.random.default_rng(6)
    (a, av), (b, bv) = _operand(rng, (m, k), "bf16"), _operand(rng, (k, n), "bf16")
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    _KERNELS.run("mma_acc_init", "sm_100a", (cdiv(m, 128), cdiv(n, 128), 1), arr(a) + arr(b) + arr(c))
    want = c0 + av @ bv
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


@NUMERIC_SKIP
@pytest.mark.parametrize("aligned", [False, True])
def test_corpus_matmul_f16_on_sm100a(aligned):
    """The corpus matmul_f16 (128 x 128 x 64 tiles, no stride hints) on sm_100a: tcgen05 (m128n128k16, the
    accumulator kept in tensor memory across the K loop); rows of 16-byte multiples take the pipelined loop,
    odd ones the fallback; partial tiles in M, N and K."""
    from tileas_test_paths import VISIBLE_CORPUS

    from tilecore import emulate

    path = os.path.join(VISIBLE_CORPUS, "matmul_f16.tileirbc")
    module = compile_file(path, "sm_100a", stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    assert "nvvm.tcgen05.mma" in str(module)
    m, n, k = (200, 136, 104) if aligned else (201, 133, 99)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)

    def arr5(x):  # pointer, shape, strides: the corpus kernel's ABI
        return [x, *[np.int32(d) for d in x.shape], *[np.int32(s // x.itemsize) for s in x.strides]]

    emulate.launch(module, "matmul_f16", (cdiv(m, 128), cdiv(n, 128), 1), (128, 1, 1), arr5(a) + arr5(b) + arr5(c))
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, atol=2e-2 * np.abs(want).max(), rtol=0)


@NUMERIC_SKIP
def test_tcgen05_two_dots_per_iteration_numbers():
    """mma_chain: a scratch-column dot feeding (through f16 registers) a dot whose accumulator stays in tensor
    memory; partial tiles."""
    m, n, k = 140, 70, 90
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, 32)).astype(np.float16)
    w = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    _KERNELS.run("mma_chain", "sm_100a", (cdiv(m, 128), cdiv(n, 64), 1), arr(a) + arr(b) + arr(w) + arr(c))
    want = np.zeros((m, n))
    for k0 in range(0, k, 32):
        kk = min(k, k0 + 32)
        s = (a[:, k0:kk].astype(np.float64) @ b[k0:kk].astype(np.float64)).astype(np.float16)
        want += s.astype(np.float64)[:, :kk - k0] @ w[k0:kk].astype(np.float64)
    np.testing.assert_allclose(c, want, atol=2e-3 * np.abs(want).max(), rtol=0)


def _with_warps(name: str, warps: int):
    """Kernel ``name`` compiled for sm_100a with ``warps`` warps (cuTile has no num_warps: the kernel spec stage 2
    attached is rewritten before the layouts are assigned), lowered to NVVM."""
    from tilecore.compiler import compile_module
    from tilecore.mlir import ir
    from tilecore.options import CompileOptions
    from tilecore.plugins import PluginManager
    from tilecore.stages import StageScheduler
    from tilecore.targets import resolve_target

    pm = PluginManager()
    names = StageScheduler(pm).names()
    first = names.index("tileas-assign-layouts")
    text = str(compile_file(_export(name), "sm_100a", stop_after=names[first - 1]).module)
    assert "kernel_spec<4 : i32" in text
    with pm.make_context():
        m = ir.Module.parse(text.replace("kernel_spec<4 : i32", f"kernel_spec<{warps} : i32"))
    compile_module(m, resolve_target("sm_100a", pm.targets()), CompileOptions(), pm,
                   stages=names[first:names.index("convert-nvgpu-and-gpu-to-nvvm") + 1])
    return m


@NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [("mma_f16_f32_m256", (300, 40, 70)), ("mma_f16_f32", (150, 130, 40))])
def test_tcgen05_two_warpgroups_numbers(name, mnk):
    """8 warps: two warpgroups over a 256 x 32 tile's 128-row blocks, or over a 128 x 64 tile's columns (32 each)."""
    from tilecore import emulate

    module = _with_warps(name, 8)
    assert "reqntid = array<i32: 256, 1, 1>" in str(module) and "nvvm.tcgen05.mma" in str(module)
    _kernel, params = KERNELS[name]
    tm, tn, _tk = params[-3:]
    m, n, k = mnk
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    emulate.launch(module, name, (cdiv(m, tm), cdiv(n, tn), 1), (256, 1, 1), arr(a) + arr(b) + arr(c))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


# ------------------------------------------------------------------ f16 accumulators
ACC16 = {"acc16_loop": ("mma.sm100a.mMnNk16.f16.f16", "f16", "f16"),
         "acc16_m64": ("mma.sm100a.mMnNk16.f16.f16", "f16", "f16"),
         "acc16_e4m3": ("mma.sm100a.mMnNk32.f8.f16", "f8f6f4", "f8E4M3FN")}


@pytest.mark.parametrize("name", ACC16)
def test_f16_accumulator_atom(name, tmp_path):
    """``acc (f16) = mma(a, b, acc)``: the f16.f16 (f8.f16) atom, D in tensor memory as f32 (instruction descriptor
    dtype F32), the accumulator stored (f16 -> f32) and loaded (rounded to f16) around every dot: not kept in
    tensor memory across the loop (each dot's result is f16); ptxas takes it (UTC*MMA, STTM, LDTM)."""
    atom, kind, el = ACC16[name]
    text = str(compile_file(_export(name), "sm_100a", stop_after="tileas-select-atoms").module)
    assert f'#nv_tileas.atom<"{atom}">' in text
    text = str(compile_file(_export(name), "sm_100a", stop_after="convert-tileas-to-llvm").module)
    m, n = KERNELS[name][1][-3:-1]
    d = instr_desc(kind, el, el, "f32", n, m=m)
    assert (d >> 4) & 3 == 1 and (f"arith.constant {d} : i32" in text)
    assert text.count('"sm100.tmem_store"') == text.count('"sm100.tmem_load"') > 0
    assert "llvm.fpext" in text and "llvm.fptrunc" in text
    cubin = compile_file(_export(name), "sm_100a").artifacts["cubin"]
    if CUOBJDUMP:
        sass = _sass(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())), tmp_path)
        assert re.search(r"\bUTC\w*MMA\b", sass) and "LDTM" in sass and "STTM" in sass


@NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [("acc16_loop", (137, 70, 75)), ("acc16_m64", (100, 40, 130)),
                                       ("acc16_e4m3", (130, 50, 150))])
def test_f16_accumulator_numbers(name, mnk):
    """Sizes that are not tile multiples: the f16 accumulator rounded once per K tile (numpy, f64 products)."""
    m, n, k = mnk
    tm, tn, tk = KERNELS[name][1][-3:]
    rng = np.random.default_rng(sum(mnk))
    el = "e4m3" if name.endswith("e4m3") else "f16"
    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    c = np.zeros((m, n), np.float16)
    _KERNELS.run(name, "sm_100a", (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    want = np.zeros((m, n), np.float16)
    for k0 in range(0, k, tk):
        want = (want.astype(np.float64) + av[:, k0:k0 + tk] @ bv[k0:k0 + tk]).astype(np.float16)
    # f32 sums inside a dot against exact ones: at most one f16 rounding step apart
    assert np.all(np.abs(c.astype(np.float64) - want) <= np.spacing(np.abs(want)).astype(np.float64) * 1.01)


@NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [("mma_tf32_f32", (137, 70, 75)), ("tf32_m64", (100, 40, 130)),
                                       ("tf32_piped", (100, 70, 130))])
def test_tf32_numbers(name, mnk):
    """Sizes that are not tile multiples: within f32 accumulation error (plus one tf32 step) of numpy's product of
    the inputs rounded to tf32 as ct.astype does (10 mantissa bits, to nearest, ties to even)."""
    m, n, k = mnk
    tm, tn, _tk = KERNELS[name][1][-3:]
    rng = np.random.default_rng(sum(mnk))
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    _KERNELS.run(name, "sm_100a", (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    from test_mma_atoms import _tf32  # the tileas tests' f32 -> tf32

    want = _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)
    bound = (k * np.finfo(np.float32).eps + 2.0 ** -10) * (np.abs(a).astype(np.float64) @ np.abs(b)) + 1e-30
    assert np.all(np.abs(c - want) <= bound), float(np.max(np.abs(c - want) / bound))


@NUMERIC_SKIP
@pytest.mark.parametrize("name", ["batched_f32", "batched_m64_f16"])
def test_batched_dots_numbers(name):
    """Two batches a block (generated mma programs, tests/fuzz seed 6): each dot's accumulator comes from a slice of
    the 3-D carried tile, converted to the fragment through shared memory before the operands are written there
    (they were overwritten by it: NaN / wrong numbers)."""
    _kernel, params = KERNELS[name]
    tb, tm, tn, tk = params[-4:]
    bsz, m, n, k = 3, 70, 40, 94
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((bsz, m, k)).astype(np.float16), rng.standard_normal((bsz, k, n)).astype(np.float16)
    f16 = params[2].startswith("f16")
    c = np.zeros((bsz, m, n), np.float16 if f16 else np.float32)
    assert "nvvm.tcgen05.mma" in str(compile_file(_export(name), "sm_100a").module)
    _KERNELS.run(name, "sm_100a", (cdiv(bsz, tb), cdiv(m, tm), cdiv(n, tn)), arr(a) + arr(b) + arr(c))
    want = np.zeros((bsz, m, n), np.float16 if f16 else np.float64)
    for k0 in range(0, k, tk):  # f16: one rounding per K tile
        want = (want.astype(np.float64) + a[..., k0:k0 + tk].astype(np.float64) @ b[:, k0:k0 + tk].astype(np.float64)
                ).astype(want.dtype)
    tol = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64) * 1.01 if f16 else \
        k * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert np.all(np.abs(c.astype(np.float64) - want) <= tol)
