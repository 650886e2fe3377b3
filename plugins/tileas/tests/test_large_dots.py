"""Dots whose operands exceed 48 KiB on the tensor cores (issues 15 / 16).

A cuTile matmul with tiles 256 x 256 x 64, 256 x 128 x 128 or 128 x 256 x 128 (16-bit operands: A + B = 64 or 96
KiB; 8-bit 256 x 256 x 128: 64 KiB) used to stay on the CUDA cores: the MMA atoms admitted operands of at most
48 KiB (PTX's static shared memory). Their budget is now the shared memory a CTA may opt into
(``tilecore.mma.dot_smem_budget``: 163 KiB on sm_80, 227 KiB on sm_90 / sm_100, less 1 KiB), the scratch buffer being
dynamic shared memory past 48 KiB; a pipelined loop's ring takes as many stages as fit (and leaves a body that
writes operands itself the room its largest dot needs: ``pipeline._body_scratch``).

Checked here: the PTX has the tensor-core MMA of each SM (``mma.sync`` on sm_80, ``wgmma.mma_async`` on sm_90a,
``tcgen05.mma`` on sm_100a), ptxas assembles it, the launch contract asks for the dynamic shared memory; numbers in
the CPU emulator against numpy on sizes that are not tile multiples (f16 / bf16 -> f32 on every SM, s8 -> s32 on
sm_100a); the budget itself and its use by the pipeline's ring.
"""

from __future__ import annotations

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")

import tilecore.cutile as tc  # noqa: E402
from tilecore.mma import MmaRequest, dot_smem_budget, max_shared_bytes  # noqa: E402

ConstInt = ct.Constant[int]
Z = ct.PaddingMode.ZERO


@ct.kernel
def matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """C = A @ B with a zero-initialised accumulator of C's dtype (f32 / i32), K in tiles of TK."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=Z)
        b = ct.load(B, index=(k, j), shape=(TK, TN), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(i, j), tile=acc)


TILES = [(256, 256, 64), (256, 128, 128), (128, 256, 128)]
MMA_PTX = {"sm_80": "mma.sync.aligned.m16n8k16", "sm_90a": "wgmma.mma_async.sync.aligned.m64n",
           "sm_100a": "tcgen05.mma.cta_group::1"}
SPELLING = {"f16": "f16", "bf16": "bf16", "s8": "i8"}
_COMPILED: dict = {}


def _compiled(sm: str, tile: tuple, dtype: str = "f16"):
    """The kernel for ``dtype`` operands (f32 / s32 C) and ``tile``, compiled for ``sm`` (once per test session)."""
    key = (sm, tile, dtype)
    if key not in _COMPILED:
        el = SPELLING[dtype]
        _COMPILED[key] = tc.compile(matmul, [f"{el}[2]", f"{el}[2]", "i32[2]" if dtype == "s8" else "f32[2]", *tile],
                                    gpu_name=sm)
    return _COMPILED[key]


def _operands(dtype: str, m: int, n: int, k: int, seed: int):
    """A (m x k) and B (k x n) as the kernel takes them (bf16 as its bits: numpy has no bf16), a zeroed C and the
    exact product (f64 / i64)."""
    rng = np.random.default_rng(seed)
    if dtype == "s8":
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        return a, b, np.zeros((m, n), np.int32), a.astype(np.int64) @ b.astype(np.int64)
    if dtype == "bf16":
        (a, av), (b, bv) = (_bf16(rng, s) for s in ((m, k), (k, n)))
    else:
        a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
        av, bv = a.astype(np.float64), b.astype(np.float64)
    return a, b, np.zeros((m, n), np.float32), av @ bv


def _bf16(rng, shape):
    """Random bf16 values as their bits (uint16, rounded to nearest even from f32) and as float64."""
    u = rng.standard_normal(shape).astype(np.float32).view(np.uint32)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _run(sm: str, tile: tuple, dtype: str, a, b, c) -> None:
    """C = A @ B in the emulator (tile blocks covering C; the launch contract's threads and shared memory)."""
    from tilecore import emulate

    kern = _compiled(sm, tile, dtype)
    (m, n), (tm, tn) = c.shape, tile[:2]
    args = [x for t in (a, b, c) for x in (t, *[np.int32(d) for d in t.shape],
                                           *[np.int32(st // t.itemsize) for st in t.strides])]
    emulate.launch(kern.module, kern.symbol, (-(-m // tm), -(-n // tn), 1), kern.contract.threads, args,
                   shared_bytes=kern.contract.shared_bytes)


def _check(c, want, k: int):
    if c.dtype == np.int32:
        np.testing.assert_array_equal(c.astype(np.int64), want)  # |sum| < 2^31 at these K: no wrap
        return
    bound = k * np.finfo(np.float32).eps * 4 * np.maximum(np.abs(want), 1.0)
    assert np.all(np.abs(c - want) <= bound), float(np.max(np.abs(c - want)))


# ------------------------------------------------------------------------------------------- the budget
def test_budget_is_what_a_cta_may_opt_into():
    """The atoms' operand budget follows the compute capability (was 48 KiB everywhere)."""
    assert dot_smem_budget(80) == max_shared_bytes(80) - 1024 == 162 * 1024
    assert dot_smem_budget(90) == dot_smem_budget(100) == 226 * 1024
    assert dot_smem_budget(89) == 98 * 1024
    assert MmaRequest(256, 256, 64, "f16", "f16", "f32").smem_budget == 48 * 1024  # the bare default stands


def test_atoms_admit_large_operands():
    """Every tensor-core family admits the 64 / 96 KiB tiles with the real budget, none with 48 KiB."""
    from tilecore_cute.mma_sm80 import atoms as sm80_atoms
    from tilecore_cute.mma_sm90 import atoms as sm90_atoms
    from tilecore_sm100.mma_sm100 import atoms as sm100_atoms

    for family, arch, cc in ((sm80_atoms, "sm_80", 80), (sm90_atoms, "sm_90a", 90), (sm100_atoms, "sm_100a", 100)):
        f16 = next(a for a in family() if a.name.endswith(".f16.f32") and a.kind == "mma")
        for m, n, k in TILES:
            req = MmaRequest(m, n, k, "f16", "f16", "f32", threads=128, cc=cc, arch=arch)
            assert not f16.admits(req), (arch, m, n, k)
            assert f16.admits(MmaRequest(m, n, k, "f16", "f16", "f32", threads=128, cc=cc, arch=arch,
                                         smem_budget=dot_smem_budget(cc))), (arch, m, n, k)


# ------------------------------------------------------------------------------------------- PTX, ptxas, contract
@pytest.mark.parametrize("sm", ["sm_80", "sm_90a", "sm_100a"])
@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
def test_large_tiles_take_the_tensor_cores(sm, tile):
    """The PTX has the SM's tensor-core MMA (and no CUDA-core K loop of FMAs), ptxas assembles it (a cubin), and
    the kernel asks for its scratch as dynamic shared memory beyond 48 KiB, within what the CTA may opt into."""
    kern = _compiled(sm, tile)
    ptx = kern.ptx
    assert MMA_PTX[sm] in ptx
    assert "fma.rn.f32" not in ptx
    assert kern.cubin[:4] == b"\x7fELF"
    m, n, k = tile
    cc = int(sm[3:6].rstrip("a"))
    assert 48 * 1024 < kern.contract.shared_bytes <= max_shared_bytes(cc)
    assert kern.contract.shared_bytes >= 2 * (m * k + k * n)  # A and B of one stage at least


def test_operands_counted_in_their_swizzled_layout():
    """The warp-level atoms' admission counts the operands as tileas lays them out (swizzled rows: no padding), so
    256 x 128 x 128 f16 (96 KiB) fits sm_89's 99 KiB and takes mma.sync there, one pipeline stage."""
    from tilecore.mma import operand_bytes

    assert operand_bytes(MmaRequest(256, 128, 128, "f16", "f16", "f32")) == 96 * 1024
    assert operand_bytes(MmaRequest(64, 64, 16, "i8", "i8", "i32")) == 64 * 32 + 1024  # 16-byte rows padded
    kern = tc.compile(matmul, ["f16[2]", "f16[2]", "f32[2]", 256, 128, 128], gpu_name="sm_89")
    text = str(kern.module)
    assert "nvvm.mma.sync" in text and "nvvm.cp.async.shared.global" in text
    assert kern.contract.shared_bytes == 96 * 1024 <= max_shared_bytes(89)  # one stage, the epilogue reuses it


def test_large_s8_tile_takes_tcgen05():
    """One 8-bit case on sm_100a: s8 x s8 -> s32, 256 x 256 x 128 (64 KiB of operands): tcgen05 ``kind::i8``."""
    kern = _compiled("sm_100a", (256, 256, 128), "s8")
    assert "tcgen05.mma.cta_group::1.kind::i8" in kern.ptx
    assert kern.cubin[:4] == b"\x7fELF"


# ------------------------------------------------------------------------------------------- numbers
# Each tile shape on sm_90a and sm_100a once (f16 or bf16), one on sm_80 (the emulator runs these slowly: each costs
# 20-60 s of CI; every shape compiles for every SM in test_large_tiles_take_the_tensor_cores).
NUMBERS = [("sm_90a", (256, 256, 64), "f16"), ("sm_90a", (128, 256, 128), "f16"), ("sm_90a", (256, 128, 128), "bf16"),
           ("sm_100a", (256, 256, 64), "f16"), ("sm_100a", (256, 128, 128), "f16"), ("sm_100a", (128, 256, 128), "bf16"),
           ("sm_80", (128, 256, 128), "bf16")]


@pytest.mark.parametrize("sm, tile, dtype", NUMBERS, ids=lambda x: "x".join(map(str, x)) if isinstance(x, tuple)
                         else x)
def test_large_tile_numbers(sm, tile, dtype):
    """C = A @ B in the emulator on sizes that are not tile multiples (a partial tile block in M and N, a partial
    second K tile; one tile block: the emulator runs these large tiles slowly), against numpy."""
    tm, tn, tk = tile
    m, n, k = tm - 56, tn - 20, tk + 8
    a, b, c, want = _operands(dtype, m, n, k, seed=sum(tile))
    _run(sm, tile, dtype, a, b, c)
    _check(c, want, k)
    assert MMA_PTX[sm] in _compiled(sm, tile, dtype).ptx  # on the tensor cores


def test_large_s8_tile_numbers():
    """s8 -> s32 on sm_100a, 256 x 256 x 128 tiles, sizes that are not tile multiples: exact."""
    m, n, k = 264, 200, 200
    a, b, c, want = _operands("s8", m, n, k, seed=7)
    _run("sm_100a", (256, 256, 128), "s8", a, b, c)
    _check(c, want, k)
    assert "tcgen05.mma.cta_group::1.kind::i8" in _compiled("sm_100a", (256, 256, 128), "s8").ptx


@ct.kernel
def matmul_neg_b(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """C = A @ -B: B is negated in the loop body, so only A is pipelined and the dot writes B itself."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=Z)
        b = ct.load(B, index=(k, j), shape=(TK, TN), padding_mode=Z)
        acc = ct.mma(a, -b, acc)
    ct.store(C, index=(i, j), tile=acc)


def test_ring_leaves_room_for_a_body_that_writes_a_large_operand():
    """sm_80, 64 x 512 x 128 f16 with B written by the body (128 KiB) and A pipelined (16 KiB a stage): the ring
    keeps the body's 128 KiB free (two stages; the three that 64 KiB of body room allowed needed 177 KiB of the 163 a
    CTA has: 'needs ... bytes of shared memory'); numbers on sizes that are not tile multiples."""
    kern = tc.compile(matmul_neg_b, ["f16[2]", "f16[2]", "f32[2]", 64, 512, 128], gpu_name="sm_80")
    assert 128 * 1024 < kern.contract.shared_bytes <= max_shared_bytes(80)
    text = str(kern.module)  # the lowered kernel (the PTX would cost the NVPTX back end's time on it)
    assert "nvvm.mma.sync" in text and "nvvm.cp.async.shared.global" in text
    m, n, k = 40, 500, 136
    a, b, c, want = _operands("f16", m, n, k, seed=3)
    kern.launch(None, (1, 1, 1), (a, b, c, 64, 512, 128), device="cpu")
    _check(c, -want, k)


# ------------------------------------------------------------------------------------------- eight warps
@pytest.mark.parametrize("sm, tile", [("sm_90a", (256, 256, 64)), ("sm_100a", (256, 256, 64)),
                                      ("sm_90a", (256, 128, 128))], ids=lambda x: "x".join(map(str, x))
                         if isinstance(x, tuple) else x)
def test_num_worker_warps_8_halves_the_accumulator_per_thread(sm, tile):
    """cuTile's ``num_worker_warps=8`` gives the CTA 256 threads (two warpgroups share the accumulator: 256
    registers a thread for 256 x 256 f32 instead of 512; tileiras picks 256 threads for these tiles itself); the
    dots stay on the tensor cores and the numbers match on sizes that are not tile multiples."""
    kernel = matmul.replace_hints(num_worker_warps=8)
    kern = tc.compile(kernel, ["f16[2]", "f16[2]", "f32[2]", *tile], gpu_name=sm)
    assert kern.contract.threads_per_cta == 256
    assert MMA_PTX[sm] in kern.ptx
    m, n, k = 264, 300, 136
    a, b, c, want = _operands("f16", m, n, k, seed=5)
    tc.launch(None, (-(-m // tile[0]), -(-n // tile[1]), 1), kernel, (a, b, c, *tile), gpu_name=sm)
    _check(c, want, k)


@pytest.mark.parametrize("sm, tile, hint, threads", [
    ("sm_80", (256, 128, 64), None, 128), ("sm_90a", (256, 128, 64), None, 256), ("sm_100a", (128, 256, 32), None, 256),
    ("sm_90a", (128, 128, 64), None, 128), ("sm_100a", (128, 128, 64), None, 128), ("sm_90a", (256, 128, 64), 4, 128)])
def test_large_accumulators_get_eight_warps_without_a_hint(sm, tile, hint, threads):
    """Without a warps hint, a dot accumulating 256 x 128 elements or more gets 8 warps on sm_90 and later (as
    tileiras gives such kernels 256 threads; 128 on sm_80); smaller dots and cuTile's ``num_worker_warps`` keep theirs."""
    kernel = matmul if hint is None else matmul.replace_hints(num_worker_warps=hint)
    kern = tc.compile(kernel, ["f16[2]", "f16[2]", "f32[2]", *tile], gpu_name=sm)
    assert kern.contract.threads_per_cta == threads
    assert f".reqntid {threads}, 1, 1" in kern.ptx
