"""CTA pairs on sm_100a / sm_103a (issue 16): a kernel of 2-CTA clusters (cuTile ``num_ctas=2``) whose CTAs provably
read the same B tiles computes its dots as ``tcgen05.mma.cta_group::2`` (tileas ``stage4_tileas_to_llvm.pairs``,
:mod:`tilecore_sm100.mma_sm100`): the stage-4 decision (``tilecore.cta_pairs``) and its reasons, the B half in the
pipeline's stages (its TMA boxes, the shared memory), the nvvm / inline-PTX forms, ptxas and the SASS
(UTCHMMA.2CTA, UTCBAR.2CTA.MULTICAST), numbers in the CPU emulator against numpy."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilecore.assembler import find_nvidia_tool
from tilecore.compiler import compile_file
from tilecore.options import CompileOptions

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")
_TILEAS_TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "tileas", "tests")
if _TILEAS_TESTS not in sys.path:
    sys.path.insert(0, _TILEAS_TESTS)

import cutile_kernels as ck  # noqa: E402
from emulated_kernels import KernelSet  # noqa: E402
from tilecore_sm100.mma_sm100 import instr_desc  # noqa: E402
from tilecore_tileas.stage4_tileas_to_llvm.pairs import NOT_ASKED  # noqa: E402

ZERO = ct.PaddingMode.ZERO
ConstInt = ct.Constant[int]
CUOBJDUMP = find_nvidia_tool("cuobjdump")


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_pair(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """The plain 2-D grid matmul: bid(0) -> M, bid(1) -> N, so the two CTAs of a cluster share every B tile;
    accumulated in C's dtype (an f16 C: the f16-accumulator atom, its D stored and loaded around every dot)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, (i, k), (TM, TK), padding_mode=ZERO)
        b = ct.load(B, (k, j), (TK, TN), padding_mode=ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (i, j), ct.astype(acc, C.dtype))


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_pair_swizzled(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """A 1-D grid over (M, N) tiles, 3 M tiles per group: the two CTAs of a cluster may read different B tiles."""
    nm = ct.cdiv(A.shape[0], TM)
    bid = ct.bid(0)
    first = bid // (3 * ct.cdiv(B.shape[1], TN)) * 3
    g = min(nm - first, 3)
    i, j = first + bid % g, bid % (3 * ct.cdiv(B.shape[1], TN)) // g
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO), ct.load(B, (k, j), (TK, TN), padding_mode=ZERO),
                     acc)
    ct.store(C, (i, j), ct.astype(acc, C.dtype))


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_pair_acc(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """C += A @ B: the accumulator starts from C's tile (each CTA stores its own rows to tensor memory)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.load(C, (i, j), (TM, TN), padding_mode=ZERO)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO), ct.load(B, (k, j), (TK, TN), padding_mode=ZERO),
                     acc)
    ct.store(C, (i, j), acc)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_pair_chain(A, B, W, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """Two paired dots per iteration: s = a_k @ b_k from zero (scratch columns, A of the second dot written to shared
    memory from s's registers), then acc += f16(s) @ w_k (its own columns, kept in tensor memory)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        x = ct.load(A, (i, k), (TM, TK), padding_mode=ZERO)
        y = ct.load(B, (k, 0), (TK, TK), padding_mode=ZERO)
        s = ct.mma(x, y, ct.full((TM, TK), 0, dtype=ct.float32))
        acc = ct.mma(ct.astype(s, ct.float16), ct.load(W, (k, j), (TK, TN), padding_mode=ZERO), acc)
    ct.store(C, (i, j), acc)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_early_return(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """A tile block past the array returns at once: its peer would wait for it at the pair's barriers."""
    i, j = ct.bid(0), ct.bid(1)
    if i * TM >= A.shape[0]:
        return
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO), ct.load(B, (k, j), (TK, TN), padding_mode=ZERO),
                     acc)
    ct.store(C, (i, j), acc)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_persistent(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """A persistent loop over the tiles from bid(0): its bounds differ between the CTAs of a cluster."""
    nn = ct.cdiv(B.shape[1], TN)
    for t in range(ct.bid(0), ct.cdiv(A.shape[0], TM) * nn, ct.num_blocks(0)):
        i, j = t // nn, t % nn
        acc = ct.full((TM, TN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO),
                         ct.load(B, (k, j), (TK, TN), padding_mode=ZERO), acc)
        ct.store(C, (i, j), acc)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_guarded(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, FLAG: ConstInt):
    """The K loop under an if on a kernel parameter... of a value only one CTA may take (bid(0))."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    if i % 2 == FLAG:
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO),
                         ct.load(B, (k, j), (TK, TN), padding_mode=ZERO), acc)
    ct.store(C, (i, j), acc)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_flag(A, B, C, flag: int, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """The K loop under an if on a scalar parameter: both CTAs of a cluster take the same branch."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    if flag > 0:
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO),
                         ct.load(B, (k, j), (TK, TN), padding_mode=ZERO), acc)
    ct.store(C, (i, j), acc)


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, sm_103=2))
def mm_bt(A, BT, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    """B given as its N x K transpose (a transposed view): not a plain row-major tile."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, (i, k), (TM, TK), padding_mode=ZERO),
                     ct.load(BT, (k, j), (TK, TN), order=(1, 0), padding_mode=ZERO), acc)
    ct.store(C, (i, j), acc)


KERNELS = {
    "pair_f16": (mm_pair, ["f16[2]", "f16[2]", "f32[2]", 128, 128, 64]),
    "pair_bf16": (mm_pair, ["bf16[2]", "bf16[2]", "f32[2]", 128, 64, 64]),
    "pair_e4m3": (mm_pair, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 128, 128, 128]),
    "pair_s8": (mm_pair, ["i8[2]", "i8[2]", "i32[2]", 128, 64, 64]),
    "pair_f16_acc16": (mm_pair, ["f16[2]", "f16[2]", "f16[2]", 128, 64, 64]),
    "pair_256": (mm_pair, ["f16[2]", "f16[2]", "f32[2]", 256, 64, 32]),
    "pair_chain": (mm_pair_chain, ["f16[2]", "f16[2]", "f16[2]", "f32[2]", 128, 64, 64]),
    "pair_acc": (mm_pair_acc, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 32]),
    "swizzled": (mm_pair_swizzled, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 64]),
    "n16": (mm_pair, ["f16[2]", "f16[2]", "f32[2]", 128, 16, 64]),  # N / 2 = 8: no pair form
    "m64": (mm_pair, ["f16[2]", "f16[2]", "f32[2]", 64, 64, 64]),
    "early_return": (mm_early_return, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 64]),
    "persistent": (mm_persistent, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 64]),
    "guarded": (mm_guarded, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 64, 0]),
    "flag": (mm_flag, ["f16[2]", "f16[2]", "f32[2]", "i32", 128, 64, 64]),
    "bt": (mm_bt, ["f16[2]", "f16[2]", "f32[2]", 128, 64, 64]),
    "single": (ck.mma_loop, ["f16[2]", "f16[2]", "f32[2]", 128, 128, 64]),  # no clusters
}
PAIRED = ["pair_f16", "pair_bf16", "pair_e4m3", "pair_s8", "pair_f16_acc16", "pair_256", "pair_acc", "flag", "pair_chain"]
_KERNELS = KernelSet(KERNELS, "sm100-pairs-", CompileOptions(extra={"sm100.cta_pairs": "on"}))


def _export(name: str) -> str:
    path = os.path.join(_KERNELS._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        kernel, params = KERNELS[name]
        ck.export_spec(kernel, params, name, path)
    return path


def _compile(name: str, sm: str = "sm_100a", off: bool = False, **kw):
    """Pairs are asked for (``--option sm100.cta_pairs=on``) unless ``off`` (the default: a tile block per cluster)."""
    options = CompileOptions(extra={} if off else {"sm100.cta_pairs": "on"})
    return compile_file(_export(name), sm, options, **kw)


def _stage(name: str, stage: str, sm: str = "sm_100a", off: bool = False) -> str:
    return str(_compile(name, sm, off, stop_after=stage).module)


def _decision(text: str) -> str | None:
    m = re.search(r'tilecore\.cta_pairs = "([^"]*)"', text)
    return m.group(1) if m else None


def _artifact(res, key: str):
    a = res.artifacts[key]
    return a if isinstance(a, (str, bytes)) else next(iter(a.values()))


def _sass(cubin: bytes, tmp_path, what: str = "-sass") -> str:
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    return subprocess.run([CUOBJDUMP, what, str(path)], capture_output=True, text=True, check=True).stdout


# ------------------------------------------------------------------ the decision
@pytest.mark.parametrize("name", PAIRED)
def test_paired_kernels(name):
    assert _decision(_stage(name, "convert-tileas-to-llvm")) == "cta_group::2"


@pytest.mark.parametrize("name, why", [
    ("swizzled", "off: B's tile may differ between the CTAs of a cluster"),
    ("n16", "off: atom mma.sm100a.mMnNk16.f16.f32 does not pair a 128 x 16 x 64 dot"),
    ("m64", "off: atom mma.sm100a.mMnNk16.f16.f32 does not pair a 64 x 64 x 64 dot"),
    # the return: the rest of the body under an if on bid(0)
    ("early_return", "off: a dot under a condition that may differ between the CTAs of a cluster"),
    ("persistent", "off: a loop whose bounds differ between the CTAs of a cluster"),
    ("guarded", "off: a dot under a condition that may differ between the CTAs of a cluster"),
    ("bt", "off: B not piped as a plain tile"),
])
def test_kernels_not_paired_say_why(name, why):
    """A kernel of 2-CTA clusters that cannot pair keeps cta_group::1 and says why in ``tilecore.cta_pairs``."""
    text = _stage(name, "convert-tileas-to-llvm")
    assert _decision(text) == why
    assert "cta_group" not in text and '"sm100.cluster_sync"' not in text


def test_option_off_and_other_kernels_unchanged():
    """Without ``--option sm100.cta_pairs=on`` a tile block is the whole cluster (one-CTA form, the other rank
    leaves); kernels without clusters and sm_90a get no decision and no pair ops."""
    off = _stage("pair_f16", "convert-tileas-to-llvm", off=True)
    assert _decision(off) == f"off: {NOT_ASKED}" and "cta_group" not in off
    assert 'tilecore.tile_block = "cluster"' in off and "gpu.cluster_id" in off and "gpu.block_id" not in off
    single = _stage("single", "convert-tileas-to-llvm")
    assert _decision(single) is None and "cta_group" not in single
    sm90 = _stage("pair_f16", "convert-tileas-to-llvm", "sm_90a")
    assert _decision(sm90) is None and "cluster_block_id" not in sm90


def test_pair_stage4_ops():
    """The paired dot: both CTAs sync at the kernel start, per dot and before the dealloc (``sm100.cluster_sync``);
    the MMA's instruction descriptor has M = 256 (both CTAs' rows) and the tile's N; the rank-0 CTA's thread 0
    issues ``sm100.umma {cta_group = 2}`` and commits to both CTAs' mbarriers (``multicast = 3``); B's stage holds
    half the tile: one 64-column TMA box per K step instead of two, 24 KiB less shared memory."""
    text = _stage("pair_f16", "convert-tileas-to-llvm")
    one = _stage("pair_f16", "convert-tileas-to-llvm", off=True)
    assert text.count('"sm100.cluster_sync"') >= 3 and "gpu.cluster_block_id" in text
    assert re.search(r'"sm100\.umma"\(.*\{cta_group = 2 : i32, kind = "f16"\}', text)
    assert re.search(r'"sm100\.umma_commit"\(.*\{cta_group = 2 : i32, multicast = 3 : i32\}', text)
    assert re.search(r'"sm100\.tmem_alloc"\(.*cta_group = 2 : i32', text)
    assert re.search(r'"sm100\.tmem_dealloc"\(.*cta_group = 2 : i32', text)
    assert f"{instr_desc('f16', 'f16', 'f16', 'f32', 128, m=256)} : i32" in text
    assert f"{instr_desc('f16', 'f16', 'f16', 'f32', 128)} : i32" in one
    tma = "nvvm.cp.async.bulk.tensor.shared.cluster.global"
    # per form of the loop (prologue + body): A one box, B two boxes (one-CTA) / one box (its half)
    assert one.count(tma) - text.count(tma) == one.count(tma) // 3

    def smem(t):
        return int(re.search(r"tilecore\.dynamic_shared_bytes = (\d+)", t).group(1))

    assert smem(one) - smem(text) == 3 * 64 * 64 * 2  # three stages of a 64 x 64 f16 half of B


def test_pair_nvvm_forms():
    """Stage 5 on sm_100a: every tcgen05 op with ``#nvvm.cta_group<cta_2>``, the commit's i16 multicast mask,
    ``nvvm.cluster.arrive`` / ``wait`` {aligned}; nothing of cta_group::1 (ptxas refuses both in one kernel)."""
    text = _stage("pair_f16", "convert-cute-to-llvm")
    assert re.search(r"nvvm\.tcgen05\.alloc %\S+, %\S+ \{group = #nvvm\.cta_group<cta_2>\}", text)
    assert re.search(r"nvvm\.tcgen05\.dealloc %\S+, %\S+ \{group = #nvvm\.cta_group<cta_2>\}", text)
    assert "nvvm.tcgen05.relinquish_alloc_permit {group = #nvvm.cta_group<cta_2>}" in text
    assert re.search(r"nvvm\.tcgen05\.commit %\S+, multicast_mask = %\S+ \{group = #nvvm\.cta_group<cta_2>\}", text)
    assert "ctaGroup = #nvvm.cta_group<cta_2>" in text and "cta_1" not in text
    assert "nvvm.cluster.arrive {aligned}" in text and "nvvm.cluster.wait {aligned}" in text


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name, mma", [("pair_f16", "UTCHMMA"), ("pair_bf16", "UTCHMMA"), ("pair_e4m3", "UTCQMMA"),
                                       ("pair_256", "UTCHMMA")])
def test_pair_ptxas_and_sass(name, mma, tmp_path):
    """ptxas (sm_100a) takes the paired kernel: the SASS has the pair MMA (UTC*MMA.2CTA) and no one-CTA one, the
    multicast commit (UTCBAR.2CTA.MULTICAST), the pair's allocation (UTCATOMSWS.2CTA), cluster barriers
    (UCGABAR); the cubin says EIATTR_TCGEN05_2CTA_USED. Off: UTC*MMA without .2CTA, no fewer TMA loads."""
    res = _compile(name)
    ptx = _artifact(res, "ptx")
    assert "tcgen05.mma.cta_group::2" in ptx and "cta_group::1" not in ptx
    sass = _sass(_artifact(res, "cubin"), tmp_path)
    assert re.search(rf"\b{mma}\.2CTA\b", sass) and not re.search(rf"\b{mma}\b(?!\.2CTA)", sass)
    assert "UTCBAR.2CTA.MULTICAST" in sass and "UTCATOMSWS.2CTA" in sass and "UCGABAR_WAIT" in sass
    assert "EIATTR_TCGEN05_2CTA_USED" in _sass(_artifact(res, "cubin"), tmp_path, "-elf")
    off = _sass(_artifact(_compile(name, off=True), "cubin"), tmp_path)
    assert re.search(rf"\b{mma}\b(?!\.2CTA)", off) and ".2CTA" not in off
    # B's half is a box of half the bytes, or half the boxes (N = 128 f16: two 128-byte swizzle columns -> one)
    assert sass.count("UTMALDG") <= off.count("UTMALDG")


@pytest.mark.skipif(not CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
def test_pair_sm103a_inline_ptx(tmp_path):
    """sm_103a: the cta_group::2 forms as inline PTX (MLIR 22's nvvm verifier rejects tcgen05 ops there), the
    commit's mask a 16-bit register; ptxas takes it (UTCHMMA.2CTA)."""
    text = _stage("pair_f16", "convert-cute-to-llvm", "sm_103a")
    assert "nvvm.tcgen05" not in text
    for piece in ("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32",
                  "tcgen05.mma.cta_group::2.kind::f16",
                  "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [$0], $1;",
                  "tcgen05.dealloc.cta_group::2", "tcgen05.relinquish_alloc_permit.cta_group::2"):
        assert piece in text
    assert re.search(r'"r,h"', text)
    sass = _sass(_artifact(_compile("pair_f16", "sm_103a"), "cubin"), tmp_path)
    assert "UTCHMMA.2CTA" in sass and "UTCBAR.2CTA.MULTICAST" in sass


# ------------------------------------------------------------------ numbers in the emulator (clusters run concurrently)
def _operand(rng, shape, name: str):
    from test_mma_atoms import _operand as operand

    return operand(rng, shape, name)


# kernel (of KERNELS), sizes (M, N, K) none a tile multiple: "odd" ones fail the run-time 16-byte check and run
# the loop's element-copy form (B's half copied element by element), the others the TMA form; the grid's x is
# rounded up to whole clusters (a CTA whose tile is past M still takes its part in the pair), y odd
NUMBERS = [
    ("pair_f16", (300, 136, 152)), ("pair_f16", (300, 150, 150)),
    ("pair_bf16", (260, 104, 72)), ("pair_bf16", (140, 99, 70)),
    ("pair_e4m3", (200, 144, 272)),
    ("pair_s8", (150, 80, 100)),
    ("pair_f16_acc16", (140, 72, 104)),
    ("pair_256", (520, 88, 72)),
    ("pair_acc", (130, 200, 88)), ("pair_acc", (131, 201, 90)),
    ("flag", (270, 136, 88)),
]


def _emulator_has_pairs() -> bool:
    """Whether the CPU emulator runs CTA pairs: clusters of several CTAs (its cluster special registers) and the
    sm100 plugin's tcgen05 cta_group::2 models (``emulate_tcgen05.PAIR_M``)."""
    try:
        from tilecore_sm100 import emulate_tcgen05

        from tilecore.emulate.optable import CLUSTER_SREGS  # noqa: F401
    except ImportError:
        return False
    return getattr(emulate_tcgen05, "PAIR_M", None) == 256


@pytest.mark.skipif(not _emulator_has_pairs(), reason="the emulator does not run tcgen05 cta_group::2 yet")
@pytest.mark.parametrize("name, sizes", NUMBERS, ids=[f"{n}-{m}x{k}x{q}" for n, (m, k, q) in NUMBERS])
def test_pair_numbers(name, sizes):
    """The paired kernels in the emulator (both CTAs of a cluster concurrently, the leader's MMA reading the peer's
    shared memory and writing its tensor memory) against numpy."""
    from emulated_kernels import arr, cdiv

    kernel, params = KERNELS[name]
    el, cel = (p.split("[")[0].replace("f8e4m3", "e4m3").replace("i8", "s8") for p in (params[0], params[2]))
    tm, tn, tk = params[-3:]
    m, n, k = sizes
    rng = np.random.default_rng(m * n + k)
    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    cdt = {"f16": np.float16, "i32": np.int32}.get(cel, np.float32)
    c, cv = _operand(rng, (m, n), cel) if kernel is mm_pair_acc else (np.zeros((m, n), cdt), 0.0)
    want = cv + av @ bv
    grid = (cdiv(cdiv(m, tm), 2) * 2, cdiv(n, tn), 1)
    _KERNELS.run(name, "sm_100a", grid, arr(a) + arr(b) + arr(c) + ([np.int32(1)] if kernel is mm_flag else []))
    tol = 1e-2 if cel == "f16" else 1e-4
    np.testing.assert_allclose(c.astype(np.float64), want, atol=tol * np.abs(want).max(), rtol=tol)


@pytest.mark.skipif(not _emulator_has_pairs(), reason="the emulator does not run tcgen05 cta_group::2 yet")
@pytest.mark.parametrize("m, n, k", [(270, 136, 200), (140, 70, 90)])
def test_pair_two_dots_per_iteration_numbers(m, n, k):
    """mma_pair_chain: both dots paired (one B half each), the first's accumulator in scratch columns, its f16 result
    written to shared memory by each CTA as the second's A, the second's accumulator kept in tensor memory."""
    from emulated_kernels import arr, cdiv

    tk = 64
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, tk)).astype(np.float16)
    w = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    _KERNELS.run("pair_chain", "sm_100a", (cdiv(cdiv(m, 128), 2) * 2, cdiv(n, 64), 1),
                 arr(a) + arr(b) + arr(w) + arr(c))
    want = np.zeros((m, n))
    for k0 in range(0, k, tk):
        kk = min(k, k0 + tk)
        s = (a[:, k0:kk].astype(np.float64) @ b[k0:kk].astype(np.float64)).astype(np.float16)
        want += s.astype(np.float64)[:, :kk - k0] @ w[k0:kk].astype(np.float64)
    np.testing.assert_allclose(c, want, atol=2e-3 * np.abs(want).max(), rtol=0)
