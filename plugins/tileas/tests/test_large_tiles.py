"""Tiles larger than a CTA's shared memory through stage 4's layout conversions (``exchange``): a 256 x 256 f32 tile
is 256 KiB, a CTA on sm_90a has 227 KiB (sm_80: 163 KiB). Transposes / permutes (``scatter_gather_vector``), cat /
extract (``exchange``) and reductions down the columns (``atoms.reduce.lower_smem``) go through shared memory in
passes (windows of whole register repetitions, a barrier pair per pass); tileiras compiles all of them
(``bench/large_tiles.py``). Numbers in the emulator against numpy on sizes that are not tile multiples, the passes
(barriers, loops, shared memory) in the lowered kernel, the one-pass code for tiles that fit, and the located error
for a 256 x 256 f32 cumsum down the columns (a scan stays one pass; tileiras refuses it too)."""

from __future__ import annotations

import re

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")

import tilecore.cutile as tc  # noqa: E402
from tilecore.compiler import compile_module, read_input  # noqa: E402
from tilecore.errors import TilecoreError  # noqa: E402
from tilecore.plugins import get_plugin_manager  # noqa: E402
from tilecore.targets import resolve_target  # noqa: E402

ConstInt = ct.Constant[int]
Z = ct.PaddingMode.ZERO


def _line_of(text: str) -> int:
    with open(__file__) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


@ct.kernel
def transpose(X, Y, M: ConstInt, N: ConstInt):
    b = ct.bid(0)
    ct.store(Y, (0, b), ct.transpose(ct.load(X, (b, 0), (M, N), padding_mode=Z)))


@ct.kernel
def permute3(X, Y, A: ConstInt, B: ConstInt, C: ConstInt):
    b = ct.bid(0)
    ct.store(Y, (0, b, 0), ct.permute(ct.load(X, (b, 0, 0), (A, B, C), padding_mode=Z), (2, 0, 1)))


@ct.kernel
def cat_rows(X, Y, M: ConstInt, N: ConstInt):
    a = ct.load(X, (0, 0), (M, N), padding_mode=Z)
    b = ct.load(X, (1, 0), (M, N), padding_mode=Z)
    ct.store(Y, (0, 0), ct.cat((a, -b), 0))


@ct.kernel
def extract_half(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0, 0), ct.extract(ct.load(X, (0, 0), (M, N), padding_mode=Z), (1, 0), (M // 2, N)))


@ct.kernel
def column_sum(X, Y, M: ConstInt, N: ConstInt):
    b = ct.bid(0)
    ct.store(Y, (b,), ct.sum(ct.load(X, (0, b), (M, N), padding_mode=Z), axis=0))


@ct.kernel
def column_argmax(X, Y, M: ConstInt, N: ConstInt):
    b = ct.bid(0)
    ct.store(Y, (b,), ct.argmax(ct.load(X, (0, b), (M, N), padding_mode=Z), axis=0))


@ct.kernel
def column_cumsum(X, Y, M: ConstInt, N: ConstInt):
    ct.store(Y, (0, 0), ct.cumsum(ct.load(X, (0, 0), (M, N), padding_mode=Z), axis=0))


@ct.kernel
def mma_transposed(A, B, Y, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    acc = ct.mma(ct.load(A, (0, 0), (M, K), padding_mode=Z), ct.load(B, (0, 0), (K, N), padding_mode=Z), acc)
    ct.store(Y, (0, 0), ct.transpose(acc))


@ct.kernel
def mma_column_sum(A, B, Y, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    acc = ct.mma(ct.load(A, (0, 0), (M, K), padding_mode=Z), ct.load(B, (0, 0), (K, N), padding_mode=Z), acc)
    ct.store(Y, (0,), ct.sum(acc, axis=0))


def _stage4(kernel, args, sm: str) -> str:
    """The kernel's IR after stage 4 (convert-tileas-to-llvm)."""
    from tilecore.cutile.kernel import export_bytecode
    from tilecore.cutile.specialize import bind, kernel_name

    pm = get_plugin_manager()
    name = kernel_name(kernel)
    module, _ = read_input(f"{name}.tileirbc", pm, data=export_bytecode(kernel, bind(kernel, args)[0], name))
    compile_module(module, resolve_target(sm, pm.targets()), None, pm, stop_after="convert-tileas-to-llvm")
    return str(module)


def _scratch_bytes(text: str) -> int:
    m = re.search(r"tilecore\.dynamic_shared_bytes = (\d+)", text)
    return int(m.group(1)) if m else 0


def _ints(shape, seed, dt=np.float32):
    """Small integers: every sum is exact whatever the order."""
    return np.random.default_rng(seed).integers(-64, 64, shape).astype(dt)


# ------------------------------------------------------------------------------ transposes and permutes


@pytest.mark.parametrize("sm, m, n", [("sm_90a", 256, 256), ("sm_80", 128, 512)])
def test_f32_transpose_over_shared_memory_in_two_passes(sm, m, n):
    x = _ints((m - 37, n - 29), 1)  # one tile block (the emulator runs these large tiles slowly), both edges partial
    y = np.zeros((n - 29, m - 37), np.float32)
    tc.launch(None, (1,), transpose, (x, y, m, n), gpu_name=sm)
    np.testing.assert_array_equal(y, x.T)
    text = _stage4(transpose, (x, y, m, n), sm)
    assert text.count("gpu.barrier") == 4  # two passes, each: stores, barrier, loads, barrier
    assert _scratch_bytes(text) == m * n * 4 // 2 + 16  # half the tile a pass (256 KiB does not fit), a spare slot


def test_f16_transpose_that_fits_takes_one_pass():
    x = np.zeros((256, 256), np.float16)
    text = _stage4(transpose, (x, x.copy(), 256, 256), "sm_90a")
    assert text.count("gpu.barrier") == 2
    assert _scratch_bytes(text) == 256 * 256 * 2
    assert "arith.xori" in text  # the bank swizzle of the one-pass code


def test_3d_permute_in_passes():
    x = _ints((16, 64, 64), 2)[:, :, :61]  # a (16, 64, 61) view: the last dimension partial
    x = np.ascontiguousarray(x)
    y = np.zeros((61, 16, 64), np.float32)
    tc.launch(None, (1,), permute3, (x, y, 16, 64, 64), gpu_name="sm_90a")
    np.testing.assert_array_equal(y, x.transpose(2, 0, 1))
    text = _stage4(permute3, (x, y, 16, 64, 64), "sm_90a")
    assert text.count("gpu.barrier") == 4


# ------------------------------------------------------------------------------ exchanges of several sources, slices


def test_cat_of_two_128_kib_tiles_one_pass_each():
    x = _ints((250, 200), 3)
    y = np.zeros((250, 200), np.float32)
    tc.launch(None, (1,), cat_rows, (x, y, 128, 256), gpu_name="sm_90a")
    want = np.concatenate([x[:128], -x[128:]])
    np.testing.assert_array_equal(y, want)
    text = _stage4(cat_rows, (x, y, 128, 256), "sm_90a")
    assert text.count("gpu.barrier") == 4
    first, second = (p.count("arith.select") for p in text.split("gpu.barrier")[1:4:2])  # the passes' loads
    # pass 1: the indices into both tiles (2 selects), the window check of the load from the first (2); pass 2: the
    # same, then the choice between the two (the first pass's choices, dead, are erased): 512 registers a thread
    assert (first, second) == (4 * 512, 5 * 512)
    assert _scratch_bytes(text) == 128 * 256 * 4


def test_extract_of_a_256_kib_tile():
    x = _ints((250, 200), 4)
    y = np.zeros((122, 200), np.float32)
    tc.launch(None, (1,), extract_half, (x, y, 256, 256), gpu_name="sm_90a")
    np.testing.assert_array_equal(y, x[128:250])
    text = _stage4(extract_half, (x, y, 256, 256), "sm_90a")
    assert text.count("gpu.barrier") == 4


# ------------------------------------------------------------------------------ reductions down the columns


def test_column_sum_of_a_256_kib_tile():
    x = _ints((250, 300), 5)
    y = np.zeros(300, np.float32)
    tc.launch(None, (2,), column_sum, (x, y, 256, 256), gpu_name="sm_90a")
    np.testing.assert_array_equal(y, x.sum(0))
    text = _stage4(column_sum, (x, y, 256, 256), "sm_90a")
    assert text.count("gpu.barrier") == 4
    # per pass and result register (4 a thread, 64 owners): the first and end row of the window in its column (a loop)
    assert text.count("arith.ceildivsi") == 2 * 4 * 2
    assert _scratch_bytes(text) == 128 * 1024


def test_column_argmax_value_and_index_in_four_passes_on_sm80():
    x = _ints((250, 300), 6)
    x[200, :] = 70  # ties: the first row wins
    x[100, :7] = 70
    y = np.zeros(300, np.int32)
    tc.launch(None, (2,), column_argmax, (x, y, 256, 256), gpu_name="sm_80")
    np.testing.assert_array_equal(y, x.argmax(0))
    text = _stage4(column_argmax, (x, y, 256, 256), "sm_80")
    assert text.count("gpu.barrier") == 8  # 512 KiB of values and indices, 163 KiB a pass
    assert _scratch_bytes(text) == 128 * 1024


# ------------------------------------------------------------------------------ a 256 x 256 f32 MMA accumulator


@pytest.mark.parametrize("sm", ["sm_90a"])
def test_mma_accumulator_256x256_transposed(sm):
    """The accumulator (wgmma's fragment on sm_90a) to the blocked layout in two bands of 128 rows, then the
    transpose in two passes: 4 barrier pairs, stores and loads outside a band / window through selects (a
    branch each made convert-scf-to-cf run out of memory)."""
    a = _ints((250, 30), 7, np.float16) / 8
    b = _ints((30, 200), 8, np.float16) / 8
    y = np.zeros((200, 250), np.float32)
    tc.launch(None, (1,), mma_transposed, (a, b, y, 256, 256, 32), gpu_name=sm)
    np.testing.assert_allclose(y, (a.astype(np.float64) @ b.astype(np.float64)).T, rtol=0, atol=0)
    text = _stage4(mma_transposed, (a, b, y, 256, 256, 32), sm)
    assert text.count("gpu.barrier") == 2 + 4 + 4  # the operands' staging (as a 64 x 64 one), two passes each
    passes = text.split("gpu.barrier")[2:10]  # after the operands: the bands' and windows' stores and loads
    assert not any("cf.cond_br" in p for p in passes)
    assert _scratch_bytes(text) == 128 * 1024 + 16  # half the tile and a spare element a pass


def test_mma_accumulator_256x256_summed_down_the_columns_on_sm80():
    a = _ints((250, 30), 9, np.float16) / 8
    b = _ints((30, 200), 10, np.float16) / 8
    y = np.zeros(200, np.float32)
    tc.launch(None, (1,), mma_column_sum, (a, b, y, 256, 256, 32), gpu_name="sm_80")
    np.testing.assert_allclose(y, (a.astype(np.float64) @ b.astype(np.float64)).sum(0), rtol=0, atol=0)


# ------------------------------------------------------------------------------ what stays refused


def test_column_cumsum_of_a_256_kib_tile_is_a_located_error():
    x = np.zeros((256, 256), np.float32)
    with pytest.raises(TilecoreError) as e:
        tc.compile(column_cumsum, (x, x.copy(), 256, 256), gpu_name="sm_90a")
    msg = str(e.value)
    assert f"{__file__}:{_line_of('def column_cumsum')}" in msg
    assert "kernel 'column_cumsum' needs 262144 bytes of shared memory; a CTA on sm_90a has at most 232448" in msg


# ------------------------------------------------------------------------------ a 256 x 256 MMA accumulator stored as it is


@ct.kernel(num_worker_warps=4)  # the 4-warp fragments these tests are about (8 is the default)
def mma_loop_store(A, B, C, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (M, K))):
        acc = ct.mma(ct.load(A, (0, k), (M, K), padding_mode=Z), ct.load(B, (k, 0), (K, N), padding_mode=Z), acc)
    ct.store(C, (0, 0), acc)


@ct.kernel(num_worker_warps=4)  # the 4-warp fragments these tests are about (8 is the default)
def mma_loop_store_f16(A, B, C, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (M, K))):
        acc = ct.mma(ct.load(A, (0, k), (M, K), padding_mode=Z), ct.load(B, (k, 0), (K, N), padding_mode=Z), acc)
    ct.store(C, (0, 0), acc.astype(ct.float16))


def _mma_operands(seed):
    a = _ints((250, 59), seed, np.float16) / 8  # K: two tiles of 32, the second partial
    b = _ints((59, 200), seed + 1, np.float16) / 8
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_mma_accumulator_256x256_stored_by_tma_in_two_boxes():
    """wgmma's 256 x 256 f32 accumulator stored as it is on sm_90a: TMA boxes of 128 rows (256 KiB does not fit), the
    registers outside a box's rows stored past it through selects. Its 32 KiB boxes were 8 passes of a branch per
    register (4096 scf.if), and convert-scf-to-cf ran out of memory (std::bad_alloc under 6 GB)."""
    a, b, want = _mma_operands(11)
    c = np.zeros((250, 200), np.float32)
    tc.launch(None, (1,), mma_loop_store, (a, b, c, 256, 256, 32), gpu_name="sm_90a")
    np.testing.assert_array_equal(c, want.astype(np.float32))
    text = _stage4(mma_loop_store, (a, b, c, 256, 256, 32), "sm_90a")
    assert text.count('"cute_nvgpu.tma_store"') == 2  # two boxes
    assert text.count("scf.if") == 0 and text.count("cf.cond_br") < 64  # (branches: the loop, the TMA leader)
    assert _scratch_bytes(text) == 128 * 1024 + 16  # half the tile a box, a spare element past it


@pytest.mark.parametrize("sm, kernel, out", [("sm_100a", mma_loop_store, np.float32),
                                             ("sm_80", mma_loop_store_f16, np.float16),
                                             ("sm_90a", mma_loop_store_f16, np.float16),
                                             ("sm_100a", mma_loop_store_f16, np.float16)])
def test_mma_accumulator_256x256_store_compiles(sm, kernel, out):
    """The f32 accumulator through tcgen05 (sm_100a: TMA boxes of 128 rows as on sm_90a), and stored as f16 (128 KiB,
    fits: one box, or one pass to the blocked layout on sm_80 rather than 4 bands of 512 masked stores and loads)
    compile through ptxas."""
    a, b, _ = _mma_operands(13)
    k = tc.compile(kernel, (a, b, np.zeros((250, 200), out), 256, 256, 32), gpu_name=sm)
    assert k.cubin[:4] == b"\x7fELF"
    half = out == np.float32  # 256 KiB: two boxes / bands of 128 rows and a spare element; 128 KiB: one
    assert k.contract.shared_bytes == (128 * 1024 + 16 if half else 128 * 1024)
    boxes = [m.box_dim for m in k.contract.tensor_maps if m.tensor == 10]  # C's map (C: parameter 10)
    assert boxes == ([] if sm == "sm_80" else [(256, 128 if half else 256)])


def test_branches_convert_scf_to_cf_in_little_memory():
    """A kernel of many branches (a 128 x 256 f32 accumulator's 4 bands of masked stores and loads on sm_80: ~2300
    scf.if among ~37000 ops) lowers within an address-space limit 1 GiB past what the process maps. convert-scf-to-cf
    with pattern rollback logged every block split (memory ~ branches x ops: 1.7 GB here, std::bad_alloc or LLVM's
    'Allocation failed' abort under a limit, so stage 4 refused such kernels); without rollback it needs little."""
    import resource

    a, b, _ = _mma_operands(15)
    args = (a[:, :32].copy(), b[:32].copy(), np.zeros((250, 200), np.float32), 128, 256, 32)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        mapped = int(fh.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 2**30, hard))
    try:
        text = _stage4(mma_loop_store, args, "sm_80")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert "scf.if" not in text and text.count("cf.cond_br") > 1000


@ct.kernel(num_worker_warps=4)  # the 4-warp fragments these tests are about (8 is the default)
def mma_loop_epilogue(A, B, C, bias, alpha: float, M: ConstInt, N: ConstInt, K: ConstInt):
    acc = ct.full((M, N), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (M, K))):
        acc = ct.mma(ct.load(A, (0, k), (M, K), padding_mode=Z), ct.load(B, (k, 0), (K, N), padding_mode=Z), acc)
    bb = ct.reshape(ct.load(bias, (0,), (N,), padding_mode=Z), (1, N))
    ct.store(C, (0, 0), (acc * alpha + bb).astype(ct.float16))


def test_mma_accumulator_256x256_epilogue_with_a_bias_row():
    """acc * alpha + bias, then f16: the bias row broadcast to 256 x 256 f32 (256 KiB, blocked) goes to the
    accumulator's fragment layout in two passes (it needed 262144 bytes of shared memory at once: refused), the
    f16 result (128 KiB) to a TMA box in one."""
    a, b, want = _mma_operands(17)
    bias = _ints(200, 19)
    c = np.zeros((250, 200), np.float16)
    tc.launch(None, (1,), mma_loop_epilogue, (a, b, c, bias, 1.5, 256, 256, 32), gpu_name="sm_90a")
    np.testing.assert_array_equal(c, (want.astype(np.float32) * np.float32(1.5) + bias).astype(np.float16))
    text = _stage4(mma_loop_epilogue, (a, b, c, bias, 1.5, 256, 256, 32), "sm_90a")
    assert _scratch_bytes(text) == 128 * 1024
    assert text.count('"cute_nvgpu.tma_store"') == 1
    assert text.count("scf.if") == 0 and text.count("cf.cond_br") < 64
