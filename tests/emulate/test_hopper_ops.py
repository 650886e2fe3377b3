"""Emulator: Hopper (sm_90a) ops: mbarrier, wgmma and cp.async.bulk.tensor (TMA).

Each kernel is llvm + nvvm dialect MLIR text; expected values come from the PTX ISA text
("Parallel Synchronization and Communication Instructions: mbarrier"; "Asynchronous Warpgroup Level
Matrix Multiply-Accumulate Instructions": "Matrix Descriptor Format", "Shared Memory Matrix Layout",
"Register Fragments"; "cp.async.bulk.tensor", "Tensor Access Modes: Tiled mode"), computed here
independently in numpy. The same MLIR forms go through the NVPTX back end (after
convert-nvvm-to-llvm, which turns the ops without an NVVM intrinsic into inline PTX, also run here in
the emulator) and ptxas for sm_90a.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support import gpu_module, has_plugin, ptxas_round_trip
from support import parse_module as parse

from tilecore.emulate import launch
from tilecore.errors import TilecoreError

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

NL = "\n"


@pytest.fixture(scope="module")
def pm():
    from tilecore.plugins import get_plugin_manager

    return get_plugin_manager()




# ---------------------------------------------------------------- mbarrier
MBAR_GLOBAL = "llvm.mlir.global internal @bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64"


def store_flag(i: int, val: str) -> str:
    """Store i1 ``val`` as i32 at out[i]."""
    return (f"%fz{i} = llvm.zext {val} : i1 to i32\n%fi{i} = llvm.mlir.constant({i} : i32) : i32\n"
            f"%fp{i} = llvm.getelementptr %out[%fi{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
            f"llvm.store %fz{i}, %fp{i} : i32, !llvm.ptr<1>")


def one_thread_kernel(body: str) -> str:
    return f"""
  {MBAR_GLOBAL}
  llvm.func @k(%out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c2 = llvm.mlir.constant(2 : i32) : i32
    %c40 = llvm.mlir.constant(40 : i32) : i32
    %c60 = llvm.mlir.constant(60 : i32) : i32
    %c100 = llvm.mlir.constant(100 : i32) : i32
    {body}
    llvm.return
  }}"""


MBAR_STATE_BODY = f"""
    nvvm.mbarrier.init %b, %c2 : !llvm.ptr<3>, i32
    %s0 = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64
    %t0 = nvvm.mbarrier.test.wait %b, %s0 : !llvm.ptr<3>, i64 -> i1
    {store_flag(0, "%t0")}
    %t1 = nvvm.mbarrier.test.wait %b, %c0 : !llvm.ptr<3>, i32 -> i1
    {store_flag(1, "%t1")}
    %s1 = nvvm.mbarrier.arrive.expect_tx %b, %c100 : !llvm.ptr<3>, i32 -> i64
    %t2 = nvvm.mbarrier.test.wait %b, %s1 : !llvm.ptr<3>, i64 -> i1
    {store_flag(2, "%t2")}
    nvvm.mbarrier.complete_tx %b, %c60 : !llvm.ptr<3>, i32
    %t3 = nvvm.mbarrier.test.wait %b, %c0 : !llvm.ptr<3>, i32 -> i1
    {store_flag(3, "%t3")}
    nvvm.mbarrier.complete_tx %b, %c40 : !llvm.ptr<3>, i32
    %t4 = nvvm.mbarrier.test.wait %b, %s1 : !llvm.ptr<3>, i64 -> i1
    {store_flag(4, "%t4")}
    %t5 = nvvm.mbarrier.test.wait %b, %c0 : !llvm.ptr<3>, i32 -> i1
    {store_flag(5, "%t5")}
    %t6 = nvvm.mbarrier.test.wait %b, %c1 : !llvm.ptr<3>, i32 -> i1
    {store_flag(6, "%t6")}
    nvvm.mbarrier.expect_tx %b, %c40 : !llvm.ptr<3>, i32
    %s2 = nvvm.mbarrier.arrive %b, %c2 : !llvm.ptr<3> -> i64
    %t7 = nvvm.mbarrier.test.wait %b, %s2 : !llvm.ptr<3>, i64 -> i1
    {store_flag(7, "%t7")}
    nvvm.mbarrier.complete_tx %b, %c40 : !llvm.ptr<3>, i32
    %t8 = nvvm.mbarrier.try_wait %b, %c1 : !llvm.ptr<3>, i32 -> i1
    {store_flag(8, "%t8")}
    nvvm.mbarrier.try_wait.parity %b, %c1, %c100 : !llvm.ptr<3>, i32, i32
    %t9 = nvvm.mbarrier.test.wait %b, %s0 : !llvm.ptr<3>, i64 -> i1
    {store_flag(9, "%t9")}
    nvvm.mbarrier.inval %b : !llvm.ptr<3>"""


def test_mbarrier_phases_arrivals_and_tx_count(pm):
    """PTX ISA mbarrier: a phase completes when the pending arrivals and the tx-count both reach zero;
    test_wait with a state (the phase of the arrive) or a parity (the phase with that parity completed)."""
    out = np.full(10, -1, np.int32)
    launch(parse(pm, gpu_module(one_thread_kernel(MBAR_STATE_BODY))), "k", grid=1, block=1, args=[out])
    # 0: phase 0 has 1 of 2 arrivals; 1: parity 0 not completed; 2: arrivals done, tx-count 100 left;
    # 3: 40 left; 4, 5: completed; 6: phase 1 (parity 1) is current; 7: phase 1 waits on 40 tx bytes;
    # 8: complete_tx finished phase 1; 9: phase 0 stays completed
    np.testing.assert_array_equal(out, [0, 0, 0, 0, 1, 1, 0, 0, 1, 1])


@pytest.mark.parametrize("body, message", [
    ("%s = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64", "holds no mbarrier object"),
    ("nvvm.mbarrier.init %b, %c0 : !llvm.ptr<3>, i32", r"outside \[1, 2\^20 - 1\]"),
    ("nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32\n%s = nvvm.mbarrier.arrive %b, %c2 : !llvm.ptr<3> -> i64",
     "more arrivals than its expected count"),
    ("nvvm.mbarrier.init %b, %c2 : !llvm.ptr<3>, i32\n"
     "%s = nvvm.mbarrier.arrive.nocomplete %b, %c2 : !llvm.ptr<3>, i32 -> i64", "nocomplete"),
    ("nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32\nnvvm.mbarrier.inval %b : !llvm.ptr<3>\n"
     "%s = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64", "after mbarrier.inval"),
    ("nvvm.mbarrier.init %b, %c2 : !llvm.ptr<3>, i32\n%s = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64\n"
     "nvvm.mbarrier.try_wait.parity %b, %c0, %c100 : !llvm.ptr<3>, i32, i32",
     r"deadlock: all 1 running threads .* mbarrier at shared address .* \(phase 0: 1 of 2 arrivals, tx-count 0"),
])
def test_mbarrier_misuse_fails_the_launch(pm, body, message):
    with pytest.raises(TilecoreError, match=message):
        launch(parse(pm, gpu_module(one_thread_kernel(body))), "k", grid=1, block=1, args=[np.zeros(4, np.int32)])


def test_mbarrier_outside_shared_memory_is_a_bad_access(pm):
    body = """%g = llvm.addrspacecast %out : !llvm.ptr<1> to !llvm.ptr
    %gp = llvm.getelementptr %g[1] : (!llvm.ptr) -> !llvm.ptr, i8
    nvvm.mbarrier.init %gp, %c1 : !llvm.ptr, i32"""
    with pytest.raises(TilecoreError, match="misaligned|outside"):
        launch(parse(pm, gpu_module(one_thread_kernel(body))), "k", grid=1, block=1, args=[np.zeros(4, np.int32)])


def producer_consumer_kernel(rounds: int, tx: bool) -> str:
    """64 threads: thread 0 inits the mbarrier (expected count 32); in each round r the producers
    (threads 0..31) write buf[t] = src[32 r + t] and arrive (with tx: thread 0 also expects 4 bytes that
    thread 1 completes after its store), then wait for the phase; the consumers (32..63) wait with
    try_wait.parity r % 2 and copy buf into out[32 r + t - 32]. A second barrier (all 64, count 64)
    keeps the producers from overwriting buf before the consumers have read it."""
    rounds_text = []
    for r in range(rounds):
        arrive = "%s{r} = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64"
        if tx:
            arrive = ("llvm.cond_br %is0, ^x{r}, ^y{r}\n^x{r}:\n"
                      "%sx{r} = nvvm.mbarrier.arrive.expect_tx %b, %c4 : !llvm.ptr<3>, i32 -> i64\nllvm.br ^z{r}\n"
                      "^y{r}:\n%sy{r} = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64\n"
                      "llvm.cond_br %is1, ^w{r}, ^z{r}\n^w{r}:\n"
                      "nvvm.mbarrier.complete_tx %b, %c4 : !llvm.ptr<3>, i32\nllvm.br ^z{r}\n^z{r}:")
        rounds_text.append(f"""
    %r{r} = llvm.mlir.constant({r} : i32) : i32
    %par{r} = llvm.mlir.constant({r % 2} : i32) : i32
    %base{r} = llvm.mlir.constant({32 * r} : i32) : i32
    llvm.cond_br %prod, ^p{r}, ^c{r}
  ^p{r}:
    %si{r} = llvm.add %base{r}, %t : i32
    %sp{r} = llvm.getelementptr %src[%si{r}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %sv{r} = llvm.load %sp{r} : !llvm.ptr<1> -> i32
    llvm.store %sv{r}, %bp : i32, !llvm.ptr<3>
    {arrive.format(r=r)}
    nvvm.mbarrier.try_wait.parity %b, %par{r}, %c100 : !llvm.ptr<3>, i32, i32
    llvm.br ^d{r}
  ^c{r}:
    nvvm.mbarrier.try_wait.parity %b, %par{r}, %c100 : !llvm.ptr<3>, i32, i32
    %cv{r} = llvm.load %bc : !llvm.ptr<3> -> i32
    %oi{r} = llvm.add %base{r}, %tc : i32
    %op{r} = llvm.getelementptr %out[%oi{r}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %cv{r}, %op{r} : i32, !llvm.ptr<1>
    llvm.br ^d{r}
  ^d{r}:
    nvvm.barrier0""")
    return f"""
  {MBAR_GLOBAL}
  llvm.mlir.global internal @buf() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<32 x i32>
  llvm.func @k(%src: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %buf = llvm.mlir.addressof @buf : !llvm.ptr<3>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c4 = llvm.mlir.constant(4 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %c100 = llvm.mlir.constant(100 : i32) : i32
    %prod = llvm.icmp "ult" %t, %c32 : i32
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    %is1 = llvm.icmp "eq" %t, %c1 : i32
    %tc = llvm.sub %t, %c32 : i32
    %tm = llvm.urem %t, %c32 : i32
    %bp = llvm.getelementptr %buf[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    %bc = llvm.getelementptr %buf[%tm] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    llvm.cond_br %is0, ^init, ^go
  ^init:
    nvvm.mbarrier.init %b, %c32 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    llvm.br ^go
  ^go:
    nvvm.barrier0
    {NL.join(rounds_text)}
    llvm.return
  }}"""


@pytest.mark.parametrize("tx", [False, True])
def test_mbarrier_producer_consumer_rounds(pm, tx):
    src = np.arange(1, 32 * 4 + 1, dtype=np.int32) * 7
    out = np.zeros(32 * 4, np.int32)
    launch(parse(pm, gpu_module(producer_consumer_kernel(4, tx))), "k", grid=2, block=64, args=[src, out])
    np.testing.assert_array_equal(out, src)


CP_ASYNC_MBAR = f"""
  {MBAR_GLOBAL}
  llvm.mlir.global internal @dst() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<4 x i32>
  llvm.func @k(%src: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %d = llvm.mlir.addressof @dst : !llvm.ptr<3>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32
    nvvm.cp.async.shared.global %d, %src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.mbarrier.arrive %b {{noinc = true}} : !llvm.ptr<3>
    nvvm.mbarrier.try_wait.parity %b, %c0, %c1 : !llvm.ptr<3>, i32, i32
    %v = llvm.load %d : !llvm.ptr<3> -> vector<4xi32>
    llvm.store %v, %out : vector<4xi32>, !llvm.ptr<1>
    llvm.return
  }}"""


def test_cp_async_mbarrier_arrive_noinc_completes_the_phase_after_the_copies(pm):
    """cp.async.mbarrier.arrive.noinc: the arrive (one of the expected count) happens once the thread's
    cp.async copies landed, so the wait sees the data without a cp.async.wait_group."""
    src = np.array([5, 6, 7, 8], np.int32)
    out = np.zeros(4, np.int32)
    launch(parse(pm, gpu_module(CP_ASYNC_MBAR)), "k", grid=1, block=1, args=[src, out])
    np.testing.assert_array_equal(out, src)


def lowered(pm, body: str):
    """The module after MLIR's convert-nvvm-to-llvm (ops without an NVVM intrinsic become inline PTX)."""
    from tilecore.conversion import run_native_pipeline

    m = parse(pm, gpu_module(body))
    run_native_pipeline(m.operation, "gpu.module(convert-nvvm-to-llvm)", m.context)
    return m


def test_mbarrier_try_wait_parity_as_inline_ptx(pm):
    """After convert-nvvm-to-llvm, try_wait.parity is a PTX loop in inline asm (constraints r / n): the
    emulator runs the same kernels from that form."""
    m = lowered(pm, producer_consumer_kernel(3, True))
    assert "mbarrier.try_wait.parity.shared.b64" in str(m)
    src = np.arange(96, dtype=np.int32) - 40
    out = np.zeros(96, np.int32)
    launch(m, "k", grid=1, block=64, args=[src, out])
    np.testing.assert_array_equal(out, src)
    out = np.zeros(4, np.int32)
    launch(lowered(pm, CP_ASYNC_MBAR), "k", grid=1, block=1, args=[np.arange(4, dtype=np.int32) + 1, out])
    np.testing.assert_array_equal(out, [1, 2, 3, 4])


def test_ptxas_accepts_the_mbarrier_forms_for_sm_90a(pm):
    ptx = "\n".join(ptxas_round_trip(pm, body, "sm_90a", passes="convert-nvvm-to-llvm") for body in (
        one_thread_kernel(MBAR_STATE_BODY), producer_consumer_kernel(2, True), CP_ASYNC_MBAR))
    for needle in ("mbarrier.init.shared.b64", "mbarrier.arrive.shared.b64", "mbarrier.arrive.expect_tx.shared.b64",
                   "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.test_wait.shared.b64",
                   "mbarrier.test_wait.parity.shared.b64", "mbarrier.try_wait.parity.shared.b64",
                   "mbarrier.inval.shared.b64", "cp.async.mbarrier.arrive.noinc.shared.b64", "fence.mbarrier_init"):
        assert needle in ptx, needle


# ---------------------------------------------------------------- wgmma
# The shared-memory image of an operand, built from the ISA's description of the layouts ("Shared Memory
# Matrix Layout": swizzle-layout atoms of 8 rows x S bytes, S = 16 (none), 32, 64, 128; K-major: a row per
# M / N index with K along it; MN-major: a row per K index with M / N along it; within an atom the 16-byte
# units of row r sit at unit u XOR ((r * S / 128) mod (S / 16)), the figures' pattern) and the "Strides"
# definitions: K-major: SBO between atoms along M / N, LBO (no swizzle only) between the two 16-byte
# K halves; MN-major: no swizzle: SBO between 16-byte groups along M / N, LBO between groups of 8 K;
# swizzled: LBO between atoms along M / N, SBO between groups of 8 K.
def operand_image(mat: np.ndarray, k_major: bool, swz: int, lbo: int, sbo: int, size: int) -> np.ndarray:
    """Bytes of ``mat`` (MN x K, any numpy dtype) in the canonical layout at offset 0 of a ``size``-byte
    buffer (aligned to 1024 bytes in shared memory)."""
    esize = mat.dtype.itemsize
    raw = mat.view(np.uint8).reshape(mat.shape[0], mat.shape[1], esize)
    img = np.zeros(size, np.uint8)
    row_bytes = swz or 16
    units = row_bytes // 16
    per_row = row_bytes // esize  # elements of the contiguous dimension in one atom row
    for mn in range(mat.shape[0]):
        for k in range(mat.shape[1]):
            if k_major:
                r, along, atom_mn = mn % 8, k, mn // 8
                base = atom_mn * sbo + (along // per_row) * lbo if not swz else atom_mn * sbo
                pos = along % per_row if not swz else along
            else:
                r, along = k % 8, mn
                if not swz:
                    base = (mn // per_row) * sbo + (k // 8) * lbo
                else:
                    base = (mn // per_row) * lbo + (k // 8) * sbo
                pos = along % per_row
            unit, byte = divmod(pos * esize, 16)
            if swz:
                unit ^= (r * swz // 128) % units
            off = base + r * row_bytes + unit * 16 + byte
            img[off:off + esize] = raw[mn, k]
    return img


def descriptor_high(lbo: int, sbo: int, swz: int) -> int:
    """The descriptor without its start address: LBO >> 4 at bit 16, SBO >> 4 at bit 32, the swizzle mode
    at bit 62 (PTX ISA "Matrix Descriptor Format")."""
    mode = {0: 0, 128: 1, 64: 2, 32: 3}[swz]
    return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (mode << 62)


def d_fragment_expected(d: np.ndarray) -> np.ndarray:
    """(128, N/2): thread t = 32 w + l holds, per 8 columns j, d[16w + l/4, 8j + 2(l%4) + 0/1] then
    d[16w + l/4 + 8, ...] (PTX ISA, wgmma "Register Fragments", accumulator D figure)."""
    n = d.shape[1]
    out = np.zeros((128, n // 2), d.dtype)
    for t in range(128):
        w, lane = divmod(t, 32)
        for j in range(n // 8):
            for h in range(2):
                for e in range(2):
                    out[t, 4 * j + 2 * h + e] = d[16 * w + lane // 4 + 8 * h, 8 * j + 2 * (lane % 4) + e]
    return out


SMEM_BYTES = 16384


def copy_loop(name: str, src: str, dst: str) -> str:
    """Threads copy SMEM_BYTES / 4 words src -> dst (shared), thread t the words t, t + 128, ..."""
    return f"""
    llvm.br ^{name}h(%t : i32)
  ^{name}h(%{name}i: i32):
    %{name}c = llvm.icmp "ult" %{name}i, %nw : i32
    llvm.cond_br %{name}c, ^{name}b, ^{name}x
  ^{name}b:
    %{name}s = llvm.getelementptr {src}[%{name}i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %{name}v = llvm.load %{name}s : !llvm.ptr<1> -> i32
    %{name}d = llvm.getelementptr {dst}[%{name}i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    llvm.store %{name}v, %{name}d : i32, !llvm.ptr<3>
    %{name}n = llvm.add %{name}i, %c128 : i32
    llvm.br ^{name}h(%{name}n : i32)
  ^{name}x:"""


def wgmma_kernel(n: int, acc: str, words: int, mma: str, steps: int = 1, k_step_bytes: int = 32,
                 waits: str = "nvvm.wgmma.commit.group.sync.aligned\nnvvm.wgmma.wait.group.sync.aligned 0",
                 fence: bool = True, after: str = "") -> str:
    """128 threads: A's image into static shared memory (@sa), B's into dynamic shared memory; thread t
    loads its accumulator words c[words t ..] (as ``acc``), runs ``steps`` mma_async (``mma``: text with
    {acc} / {da} / {db} / {out}; step s adds s * k_step_bytes to both start addresses), then ``waits``, and
    stores D to d[words t ..]. Descriptors: ``(addr >> 4) & 0x3FFF | hi`` with the kernel's hi_a / hi_b."""
    st = f"!llvm.struct<({', '.join([acc] * words)})>"
    loads, stores = [], []
    for i in range(words):
        loads.append(f"%ci{i} = llvm.mlir.constant({i} : i32) : i32\n%co{i} = llvm.add %cb, %ci{i} : i32\n"
                     f"%cp{i} = llvm.getelementptr %c[%co{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                     f"%cv{i} = llvm.load %cp{i} : !llvm.ptr<1> -> {acc}\n"
                     f"%acc{i + 1} = llvm.insertvalue %cv{i}, %acc{i}[{i}] : {st}")
        stores.append(f"%dv{i} = llvm.extractvalue %res{steps}[{i}] : {st}\n"
                      f"%dp{i} = llvm.getelementptr %d[%co{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                      f"llvm.store %dv{i}, %dp{i} : {acc}, !llvm.ptr<1>")
    mmas = []
    for s in range(steps):
        mmas.append(f"""
    %ks{s} = llvm.mlir.constant({s * k_step_bytes} : i64) : i64
    %as{s} = llvm.add %abase, %ks{s} : i64
    %bs{s} = llvm.add %bbase, %ks{s} : i64
    %a4{s} = llvm.lshr %as{s}, %c4 : i64
    %b4{s} = llvm.lshr %bs{s}, %c4 : i64
    %am{s} = llvm.and %a4{s}, %m14 : i64
    %bm{s} = llvm.and %b4{s}, %m14 : i64
    %da{s} = llvm.or %am{s}, %hi_a : i64
    %db{s} = llvm.or %bm{s}, %hi_b : i64
    {mma.format(acc=f"%res{s}" if s else f"%acc{words}", da=f"%da{s}", db=f"%db{s}", out=f"%res{s + 1}")}""")
    return f"""
  llvm.mlir.global internal @sa() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<{SMEM_BYTES} x i8>
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  llvm.func @k(%ga: !llvm.ptr<1>, %gb: !llvm.ptr<1>, %c: !llvm.ptr<1>, %d: !llvm.ptr<1>, %hi_a: i64, %hi_b: i64)
      attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %sa = llvm.mlir.addressof @sa : !llvm.ptr<3>
    %sb = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %c128 = llvm.mlir.constant(128 : i32) : i32
    %nw = llvm.mlir.constant({SMEM_BYTES // 4} : i32) : i32
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %m14 = llvm.mlir.constant(16383 : i64) : i64
    %cw = llvm.mlir.constant({words} : i32) : i32
    %cb = llvm.mul %t, %cw : i32
    {copy_loop("ca", "%ga", "%sa")}
    {copy_loop("cb", "%gb", "%sb")}
    nvvm.barrier0
    %abase = llvm.ptrtoint %sa : !llvm.ptr<3> to i64
    %bbase = llvm.ptrtoint %sb : !llvm.ptr<3> to i64
    %acc0 = llvm.mlir.undef : {st}
    {NL.join(loads)}
    {"nvvm.wgmma.fence.aligned" if fence else ""}
    {NL.join(mmas)}
    {waits}
    {after}
    {NL.join(stores)}
    llvm.return
  }}"""


def mma_text(n: int, k: int, ta: str, tb: str, td: str, acc_ty: str, words: int, layout_a="row", layout_b="col",
             scale_d="one", neg_a="one", neg_b="one", sat="") -> str:
    st = f"!llvm.struct<({', '.join([acc_ty] * words)})>"
    return ("{out} = nvvm.wgmma.mma_async {da}, {db}, {acc}, " f"#nvvm.shape<m = 64, n = {n}, k = {k}>, "
            f"D [<{td}>, #nvvm.wgmma_scale_out<{scale_d}>{sat}], A [<{ta}>, #nvvm.wgmma_scale_in<{neg_a}>, "
            f"<{layout_a}>], B [<{tb}>, #nvvm.wgmma_scale_in<{neg_b}>, <{layout_b}>] : {st} -> {st}")


def layout_params(rows: int, k_bytes: int, k_major: bool, swz: int, variant: int = 0) -> tuple[int, int]:
    """(LBO, SBO) for a compact canonical layout of a rows x (k_bytes of K) operand (variant 1: the other
    order of the no-swizzle core matrices)."""
    if k_major:
        if not swz:  # core matrices 8 x 16 bytes: K halves LBO apart, 8-row groups SBO apart
            return (128, 256) if variant == 0 else (rows // 8 * 128, 128)
        return 0x7F0, 8 * swz  # LBO unused: any value
    if not swz:  # MN-major, 16-bit: T = 8 MN elements per 16-byte unit
        return (rows // 8) * 128, 128
    t_w = swz // 2  # MN elements per atom row
    atoms = max(rows // t_w, 1)
    return 8 * swz, atoms * 8 * swz  # LBO: next MN atom; SBO: next 8 K


def run_wgmma(pm, a, b, c, *, n, k_major_a, k_major_b, swz, variant=0, ta="f16", tb="f16", td="f32",
              acc_ty="f32", steps=1, k=16, lower=False, **mma_kw):
    """Run the wgmma kernel for A (64 x K_total), B (K_total x N) (numpy arrays of the element's storage
    type) and C (64 x N, f32 / f16 / i32); returns D (64 x N) from the fragments."""
    kt = a.shape[1]
    esize = a.dtype.itemsize
    lbo_a, sbo_a = layout_params(64, kt * esize, k_major_a, swz, variant)
    lbo_b, sbo_b = layout_params(n, kt * esize, k_major_b, swz, variant)
    img_a = operand_image(a, k_major_a, swz, lbo_a, sbo_a, SMEM_BYTES)
    img_b = operand_image(np.ascontiguousarray(b.T), k_major_b, swz, lbo_b, sbo_b, SMEM_BYTES)
    words = n // 4 if td == "f16" else n // 2
    cf = d_fragment_expected(c)  # (128, n/2)
    c_words = cf.view(np.uint32) if td == "f16" else cf.view(np.uint32)
    d_words = np.zeros_like(c_words)
    mma = mma_text(n, k, ta, tb, td, acc_ty, words, "row" if k_major_a else "col", "col" if k_major_b else "row",
                   **mma_kw)
    text = gpu_module(wgmma_kernel(n, acc_ty, words, mma, steps, k * esize))
    m = parse(pm, text)
    if lower:  # the inline PTX form of convert-nvvm-to-llvm
        from tilecore.conversion import run_native_pipeline

        run_native_pipeline(m.operation, "gpu.module(convert-nvvm-to-llvm)", m.context)
        assert "wgmma.mma_async.sync.aligned" in str(m) and "nvvm.wgmma.mma_async" not in str(m)
    launch(m, "k", grid=1, block=128, shared_bytes=SMEM_BYTES,
           args=[img_a.view(np.int32), img_b.view(np.int32), c_words, d_words,
                 np.int64(np.uint64(descriptor_high(lbo_a, sbo_a, swz)).view(np.int64)),
                 np.int64(np.uint64(descriptor_high(lbo_b, sbo_b, swz)).view(np.int64))])
    frag = d_words.view(cf.dtype)
    out = np.zeros_like(c)
    for t in range(128):  # invert the fragment map
        w, lane = divmod(t, 32)
        for j in range(n // 8):
            for h in range(2):
                for e in range(2):
                    out[16 * w + lane // 4 + 8 * h, 8 * j + 2 * (lane % 4) + e] = frag[t, 4 * j + 2 * h + e]
    return out


def quarters(rng, shape, lo=-8, hi=8) -> np.ndarray:
    return (rng.integers(lo, hi, shape) / 4).astype(np.float16)


@pytest.mark.parametrize("swz", [0, 32, 64, 128])
@pytest.mark.parametrize("majors", [(True, True), (False, False), (True, False), (False, True)])
def test_wgmma_f16_layouts_and_swizzles(pm, swz, majors):
    """m64n32k16 f16 -> f32 with A and B K-major or MN-major, each swizzle mode: D = A B + C exactly (small
    multiples of 1/4)."""
    rng = np.random.default_rng(swz + 2 * majors[0] + majors[1])
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, 32))
    c = (rng.integers(-4, 4, (64, 32)) / 2).astype(np.float32)
    d = run_wgmma(pm, a, b, c, n=32, k_major_a=majors[0], k_major_b=majors[1], swz=swz)
    np.testing.assert_array_equal(d, a.astype(np.float32) @ b.astype(np.float32) + c)


def test_wgmma_no_swizzle_core_matrices_in_either_order(pm):
    rng = np.random.default_rng(3)
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, 64))
    c = np.zeros((64, 64), np.float32)
    d = run_wgmma(pm, a, b, c, n=64, k_major_a=True, k_major_b=True, swz=0, variant=1)
    np.testing.assert_array_equal(d, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("swz", [32, 64, 128])
def test_wgmma_k_steps_inside_a_swizzle_atom(pm, swz):
    """K-major operands with K = S / 2 elements per row (the whole atom width): k16 steps advance the start
    address by 32 bytes inside the atom, and the swizzle of the absolute address still finds the
    elements; four chained mma_async accumulate A B over K = 64 (128B), 32 (64B), 16 (32B)."""
    kt = swz // 2
    rng = np.random.default_rng(swz)
    a, b = quarters(rng, (64, kt)), quarters(rng, (kt, 16))
    c = (rng.integers(-4, 4, (64, 16)) / 4).astype(np.float32)
    d = run_wgmma(pm, a, b, c, n=16, k_major_a=True, k_major_b=True, swz=swz, steps=kt // 16)
    np.testing.assert_array_equal(d, a.astype(np.float32) @ b.astype(np.float32) + c)


def test_wgmma_scale_d_zero_and_negated_operands(pm):
    rng = np.random.default_rng(11)
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, 24))
    c = np.full((64, 24), 1000, np.float32)
    d = run_wgmma(pm, a, b, c, n=24, k_major_a=True, k_major_b=False, swz=64, scale_d="zero", neg_a="neg")
    np.testing.assert_array_equal(d, -(a.astype(np.float32) @ b.astype(np.float32)))
    d = run_wgmma(pm, a, b, c, n=24, k_major_a=False, k_major_b=True, swz=32, neg_b="neg")
    np.testing.assert_array_equal(d, c - a.astype(np.float32) @ b.astype(np.float32))


def test_wgmma_bf16_and_n256(pm):
    rng = np.random.default_rng(5)
    a32 = (rng.integers(-8, 8, (64, 16)) / 8).astype(np.float32)
    b32 = (rng.integers(-8, 8, (16, 256)) / 8).astype(np.float32)
    bf = lambda x: (x.view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731 - exact: few significant bits
    c = rng.standard_normal((64, 256)).astype(np.float32)
    d = run_wgmma(pm, bf(a32), bf(b32), c, n=256, k_major_a=True, k_major_b=True, swz=32, ta="bf16", tb="bf16")
    want = (a32.astype(np.float64) @ b32.astype(np.float64) + c).astype(np.float32)
    np.testing.assert_array_equal(d, want)


@pytest.mark.parametrize("acc_ty", ["i32", "vector<2xf16>"])
def test_wgmma_f16_accumulator(pm, acc_ty):
    rng = np.random.default_rng(8)
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, 16))
    c = quarters(rng, (64, 16))
    d = run_wgmma(pm, a, b, c, n=16, k_major_a=True, k_major_b=False, swz=0, td="f16", acc_ty=acc_ty)
    np.testing.assert_array_equal(d, (a.astype(np.float32) @ b.astype(np.float32) + c).astype(np.float16))


def test_wgmma_tf32(pm):
    """m64n16k8 tf32: the low 13 bits of each f32 are ignored."""
    rng = np.random.default_rng(9)
    a = (rng.integers(-16, 16, (64, 8)) / 4).astype(np.float32)
    b = (rng.integers(-16, 16, (8, 16)) / 4).astype(np.float32)
    noisy_a = (a.view(np.uint32) | rng.integers(0, 1 << 13, a.shape).astype(np.uint32)).view(np.float32)
    c = np.zeros((64, 16), np.float32)
    d = run_wgmma(pm, noisy_a, b, c, n=16, k_major_a=True, k_major_b=True, swz=32, ta="tf32", tb="tf32", k=8)
    np.testing.assert_array_equal(d, a @ b)


@pytest.mark.parametrize("ta, tb, sat", [("s8", "s8", ""), ("u8", "s8", ""), ("u8", "u8", ", <satfinite>")])
def test_wgmma_integer(pm, ta, tb, sat):
    rng = np.random.default_rng(len(ta + tb + sat))
    lo_a, lo_b = (-128, 0) if ta == "s8" else (0, 256), (-128, 0) if tb == "s8" else (0, 256)
    a = rng.integers(lo_a[0], lo_a[0] + 256, (64, 32)).astype(np.int8 if ta == "s8" else np.uint8)
    b = rng.integers(lo_b[0], lo_b[0] + 256, (32, 16)).astype(np.int8 if tb == "s8" else np.uint8)
    c = rng.integers(-(1 << 31), (1 << 31) - 1, (64, 16)).astype(np.int32)
    d = run_wgmma(pm, a, b, c, n=16, k_major_a=True, k_major_b=True, swz=64, ta=ta, tb=tb, td="s32",
                  acc_ty="i32", k=32, sat=sat)
    full = a.astype(np.int64) @ b.astype(np.int64) + c
    want = np.clip(full, -(1 << 31), (1 << 31) - 1) if sat else (full + (1 << 31)) % (1 << 32) - (1 << 31)
    np.testing.assert_array_equal(d, want.astype(np.int32))


@pytest.mark.parametrize("ta, tb", [("e4m3", "e4m3"), ("e5m2", "e4m3")])
def test_wgmma_fp8(pm, ta, tb):
    from tilecore.narrow_floats import decode as f8_decode

    names = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}
    rng = np.random.default_rng(4)

    def codes(t, shape):  # finite codes of small magnitude
        vals = np.array([f8_decode(x, names[t]) for x in range(256)])
        ok = np.flatnonzero(np.isfinite(vals) & (np.abs(vals) <= 4))
        cd = rng.choice(ok, shape).astype(np.uint8)
        return cd, vals[cd]

    a, av = codes(ta, (64, 32))
    b, bv = codes(tb, (32, 8))
    c = np.zeros((64, 8), np.float32)
    d = run_wgmma(pm, a, b, c, n=8, k_major_a=True, k_major_b=True, swz=128, ta=ta, tb=tb, k=32)
    np.testing.assert_array_equal(d, (av @ bv).astype(np.float32))


def wgmma_case(pm, n=16, swz=64, k_major=(True, False), **kw):
    """(module text, args, expected D) of an f16 -> f32 m64n{n}k16 case."""
    rng = np.random.default_rng(n + swz)
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, n))
    lbo_a, sbo_a = layout_params(64, 32, k_major[0], swz)
    lbo_b, sbo_b = layout_params(n, 32, k_major[1], swz)
    words = n // 2
    mma = mma_text(n, 16, "f16", "f16", "f32", "f32", words, "row" if k_major[0] else "col",
                   "col" if k_major[1] else "row")
    text = gpu_module(wgmma_kernel(n, "f32", words, mma, **kw))
    args = [operand_image(a, k_major[0], swz, lbo_a, sbo_a, SMEM_BYTES).view(np.int32),
            operand_image(np.ascontiguousarray(b.T), k_major[1], swz, lbo_b, sbo_b, SMEM_BYTES).view(np.int32),
            np.zeros((128, words), np.float32), np.zeros((128, words), np.float32),
            np.uint64(descriptor_high(lbo_a, sbo_a, swz)).view(np.int64),
            np.uint64(descriptor_high(lbo_b, sbo_b, swz)).view(np.int64)]
    return text, args, d_fragment_expected(a.astype(np.float32) @ b.astype(np.float32))


def test_wgmma_as_inline_ptx_after_convert_nvvm_to_llvm(pm):
    """MLIR lowers nvvm.wgmma.mma_async to inline PTX (convert-nvvm-to-llvm; scale-d through setp, the
    immediates as constants): the emulator runs that form with the same numbers."""
    from tilecore.conversion import run_native_pipeline

    for k_major, swz in (((True, False), 64), ((False, True), 128), ((True, True), 0)):
        text, args, want = wgmma_case(pm, 16, swz, k_major)
        m = parse(pm, text)
        run_native_pipeline(m.operation, "gpu.module(convert-nvvm-to-llvm)", m.context)
        assert "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16" in str(m)
        launch(m, "k", grid=1, block=128, shared_bytes=SMEM_BYTES, args=args)
        np.testing.assert_array_equal(args[3], want)


def test_wgmma_two_warpgroups(pm):
    """256 threads: each warpgroup runs its own mma_async on the same operands."""
    text, args, want = wgmma_case(pm, 8, 32, (True, True))
    args[2], args[3] = np.zeros((256, 4), np.float32), np.zeros((256, 4), np.float32)
    launch(parse(pm, text), "k", grid=1, block=256, shared_bytes=SMEM_BYTES, args=args)
    np.testing.assert_array_equal(args[3][:128], want)
    np.testing.assert_array_equal(args[3][128:], want)


STORE_TO_A = """%z8 = llvm.mlir.constant(85 : i8) : i8
    llvm.store %z8, %sa : i8, !llvm.ptr<3>"""


@pytest.mark.parametrize("kw, block, message", [
    ({"fence": False}, 128, "without a wgmma.fence"),
    ({}, 96, "needs the 128 threads of warpgroup 0"),
    ({"waits": "nvvm.wgmma.commit.group.sync.aligned\n" + STORE_TO_A + "\nnvvm.wgmma.wait.group.sync.aligned 0"},
     128, "changed before the wgmma.wait_group"),
])
def test_wgmma_misuse_fails_the_launch(pm, kw, block, message):
    text, args, _ = wgmma_case(pm, 8, 0, (True, True), **kw)
    with pytest.raises(TilecoreError, match=message):
        launch(parse(pm, text), "k", grid=1, block=block, shared_bytes=SMEM_BYTES, args=args)


def test_wgmma_store_after_the_wait_is_fine(pm):
    """Overwriting the operand after wait_group retired the group is not a race (the same store as above,
    after the wait); after a wait_group 1, which leaves the newest group pending, it is: the wait_group 0
    that retires the group finds the changed bytes."""
    text, args, want = wgmma_case(pm, 8, 0, (True, True), after=STORE_TO_A)
    launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM_BYTES, args=args)
    np.testing.assert_array_equal(args[3], want)
    waits = "nvvm.wgmma.commit.group.sync.aligned\nnvvm.wgmma.wait.group.sync.aligned 1\n" + STORE_TO_A + \
        "\nnvvm.wgmma.wait.group.sync.aligned 0"
    text, args, want = wgmma_case(pm, 8, 0, (True, True), waits=waits)
    with pytest.raises(TilecoreError, match="changed before the wgmma.wait_group"):
        launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM_BYTES, args=args)


def test_wgmma_descriptor_outside_shared_memory_fails(pm):
    text, args, _ = wgmma_case(pm, 8, 0, (True, True))
    # A's SBO about 16 KiB: its 8-row groups spread over 114 KiB of the shared window, which holds 32 KiB
    args[4] = np.int64(args[4]) | np.int64(0x3FF << 32)
    with pytest.raises(TilecoreError, match="lies in no shared-memory buffer"):
        launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM_BYTES, args=args)


def test_ptxas_accepts_the_wgmma_forms_for_sm_90a(pm):
    bodies = []
    for n, k, ta, tb, td, acc, la, lb, sat in (
            (16, 16, "f16", "f16", "f32", "f32", "row", "col", ""), (32, 16, "bf16", "bf16", "f32", "f32", "col", "row", ""),
            (16, 16, "f16", "f16", "f16", "i32", "row", "row", ""), (16, 8, "tf32", "tf32", "f32", "f32", "row", "col", ""),
            (16, 32, "s8", "u8", "s32", "i32", "row", "col", ", <satfinite>"),
            (16, 32, "e4m3", "e5m2", "f32", "f32", "row", "col", "")):
        words = n // 4 if td == "f16" else n // 2
        bodies.append(wgmma_kernel(n, acc, words, mma_text(n, k, ta, tb, td, acc, words, la, lb, sat=sat), steps=2))
    ptx = "\n".join(ptxas_round_trip(pm, body, "sm_90a", passes="convert-nvvm-to-llvm") for body in bodies)
    for needle in ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                   "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16",
                   "wgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16", "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32",
                   "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.u8.satfinite",
                   "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e5m2"):
        assert needle in ptx, needle


def a_register_words(a: np.ndarray) -> np.ndarray:
    """(128, 4) uint32: the A registers of ``wgmma.mma_async.m64nNk16`` with A in registers for a 64 x 16 f16 /
    bf16 ``a`` (uint16 bits), from the PTX ISA figure "WGMMA .m64nNk16 register fragment layout for matrix A"
    (9.7.15.5.1.1.1, Figure 148): thread t = 32 w + l holds a0..a7 at rows 16 w + l / 4 (a0, a1, a4, a5) / + 8 (a2,
    a3, a6, a7), columns 2 (l % 4) + (i & 1) (+ 8 for a4..a7); two per register, the lower index in the low half."""
    out = np.zeros((128, 8), np.uint16)
    for t in range(128):
        w, lane = divmod(t, 32)
        for i in range(8):
            out[t, i] = a[16 * w + lane // 4 + (8 if i in (2, 3, 6, 7) else 0), 2 * (lane % 4) + (i & 1) + (8 if i >= 4 else 0)]
    return out.view(np.uint32)


def rs_mma_text(n: int, td: str, ta: str, words: int, k_major_b: bool) -> str:
    """The register-A mma (``tilecore_cute.mma_lowering.WGMMA_RS_ASM``, inline PTX: MLIR 22 has no op for it) for
    :func:`wgmma_kernel`: thread t's four A words from the A argument's words 4t .. 4t + 3."""
    from tilecore_cute.mma_lowering import WGMMA_RS_ASM

    acc = "f32" if td == "f32" else "i32"
    st = f"!llvm.struct<({', '.join([acc] * words)})>"
    lines = ["%rc4 = llvm.mlir.constant(4 : i32) : i32", "%rab = llvm.mul %t, %rc4 : i32",
             "%rone = llvm.mlir.constant(1 : i32) : i32"]
    for i in range(4):
        lines += [f"%rai{i} = llvm.mlir.constant({i} : i32) : i32", f"%rao{i} = llvm.add %rab, %rai{i} : i32",
                  f"%rap{i} = llvm.getelementptr %ga[%rao{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32",
                  f"%raw{i} = llvm.load %rap{i} : !llvm.ptr<1> -> i32"]
    lines += [f"%rcm{i} = llvm.extractvalue {{acc}}[{i}] : {st}" for i in range(words)]
    first = 2 * words
    asm = WGMMA_RS_ASM.format(sd=first + 5, n=n, k=16, d=td, a=ta, b=ta, outs=", ".join(f"${i}" for i in range(words)),
                              regs=", ".join(f"${first + i}" for i in range(4)), desc=first + 4,
                              trans_b=0 if k_major_b else 1)
    cons = ",".join(["=f" if td == "f32" else "=r"] * words + [str(i) for i in range(words)] + ["r"] * 4 + ["l", "r"])
    operands = ", ".join([f"%rcm{i}" for i in range(words)] + [f"%raw{i}" for i in range(4)] + ["{db}", "%rone"])
    types = ", ".join([acc] * words + ["i32"] * 4 + ["i64", "i32"])
    lines.append(f'{{out}} = llvm.inline_asm has_side_effects "{asm.replace("{", "{{").replace("}", "}}")}", '
                 f'"{cons}" {operands} : ({types}) -> {st}')
    return "\n".join(lines)


@pytest.mark.parametrize("n, ta, td, swz, k_major_b", [(16, "f16", "f32", 64, False), (32, "bf16", "f32", 32, True),
                                                       (64, "f16", "f16", 128, False), (24, "f16", "f32", 0, True)])
def test_wgmma_a_from_registers(pm, n, ta, td, swz, k_major_b):
    """``wgmma.mma_async.sync.aligned.m64nNk16.<d>.<a>.<b> d, {a0..a3}, b-desc, p, 1, 1, imm-trans-b`` (PTX ISA
    9.7.15.5.2, A in registers): A from each thread's four words laid out per Figure 148 (:func:`a_register_words`),
    B from shared memory (N- or K-major, swizzled or not), C added; an f16 accumulator in f16 pairs. D = A @ B + C.
    ptxas takes the same text for sm_90a."""
    if not has_plugin("cute"):
        pytest.skip("needs the cute plugin")
    rng = np.random.default_rng(n + swz)
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, n))
    if ta == "bf16":
        a_bits = (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # quarters: exact in bf16
        b_store = (b.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    else:
        a_bits, b_store = a.view(np.uint16), b
    c = quarters(rng, (64, n)).astype(np.float32 if td == "f32" else np.float16)
    words = n // 4 if td == "f16" else n // 2
    lbo_b, sbo_b = layout_params(n, 32, k_major_b, swz)
    a_arg = np.zeros(SMEM_BYTES // 4, np.uint32)
    a_arg[:512] = a_register_words(a_bits).ravel()
    img_b = operand_image(np.ascontiguousarray(b_store.T), k_major_b, swz, lbo_b, sbo_b, SMEM_BYTES)
    cf = d_fragment_expected(c)
    c_words = cf.view(np.uint32)
    d_words = np.zeros_like(c_words)
    body = wgmma_kernel(n, "f32" if td == "f32" else "i32", words, rs_mma_text(n, td, ta, words, k_major_b))
    m = parse(pm, gpu_module(body))
    launch(m, "k", grid=1, block=128, shared_bytes=SMEM_BYTES,
           args=[a_arg.view(np.int32), img_b.view(np.int32), c_words, d_words, np.int64(0),
                 np.int64(np.uint64(descriptor_high(lbo_b, sbo_b, swz)).view(np.int64))])
    want = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    np.testing.assert_array_equal(d_words.view(cf.dtype), d_fragment_expected(want.astype(c.dtype)))
    ptx = ptxas_round_trip(pm, body, "sm_90a")
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{n}k16\.{td}\.{ta}\.{ta} \{{[^}}]*\}}, "
                     r"\{%r\d+, %r\d+, %r\d+, %r\d+\}", ptx)


# ---------------------------------------------------------------- cp.async.bulk.tensor (TMA)
def tma_kernel(rank: int, box_bytes: int, coords: list[int], pred: str = "") -> str:
    """128 threads; thread 0 inits the mbarrier, expects ``box_bytes`` (unless predicated) and issues the
    tile-mode copy of the box at ``coords`` (tensor map argument %tm) into dynamic shared memory; every
    thread waits for phase 0, then the threads copy the box's bytes to %out."""
    cs = ", ".join(f"%k{i}" for i in range(rank))
    consts = "\n".join(f"%k{i} = llvm.mlir.constant({c} : i32) : i32" for i, c in enumerate(coords))
    expect = "" if pred else "%s = nvvm.mbarrier.arrive.expect_tx %b, %nb : !llvm.ptr<3>, i32 -> i64"
    arrive = "%s2 = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64" if pred else ""
    pred_text = f" predicate = {pred}" if pred else ""
    return f"""
  {MBAR_GLOBAL}
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  llvm.func @k(%tm: !llvm.ptr<1>, %g: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %sm = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %sm7 = llvm.addrspacecast %sm : !llvm.ptr<3> to !llvm.ptr<7>
    %tmg = llvm.addrspacecast %tm : !llvm.ptr<1> to !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c128 = llvm.mlir.constant(128 : i32) : i32
    %nb = llvm.mlir.constant({box_bytes} : i32) : i32
    %nw = llvm.mlir.constant({box_bytes // 4} : i32) : i32
    %false = llvm.mlir.constant(false) : i1
    {consts}
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    llvm.cond_br %is0, ^init, ^go
  ^init:
    nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    {expect}
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sm7, %tmg, %b, box[{cs}]{pred_text} : !llvm.ptr<7>, !llvm.ptr
    {arrive}
    llvm.br ^go
  ^go:
    nvvm.barrier0
    nvvm.mbarrier.try_wait.parity %b, %c0, %c128 : !llvm.ptr<3>, i32, i32
    llvm.br ^h(%t : i32)
  ^h(%i: i32):
    %more = llvm.icmp "ult" %i, %nw : i32
    llvm.cond_br %more, ^body, ^done
  ^body:
    %sp = llvm.getelementptr %sm[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    %v = llvm.load %sp : !llvm.ptr<3> -> i32
    %op = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %v, %op : i32, !llvm.ptr<1>
    %n = llvm.add %i, %c128 : i32
    llvm.br ^h(%n : i32)
  ^done:
    llvm.return
  }}"""


def box_expected(tensor: np.ndarray, box: list[int], coords: list[int], swz: int, fill=0) -> np.ndarray:
    """The shared-memory bytes of a tile-mode box (PTX ISA "Tiled mode": dimension 0 innermost, elements
    outside the tensor filled; the swizzle permutes the 16-byte units u of 128-byte line L to u ^ (L mod
    (S / 16)), the figures' pattern, the destination being 1024-byte aligned). ``tensor`` is indexed
    [dim r-1, ..., dim 0]."""
    rank = len(box)
    out = np.full(box[::-1], fill, tensor.dtype)
    src = tuple(slice(max(c, 0), min(c + b, n)) for c, b, n in zip(coords[::-1], box[::-1], tensor.shape))
    dst = tuple(slice(s.start - c, s.stop - c) for s, c in zip(src, coords[::-1]))
    if all(s.stop > s.start for s in src):
        out[dst] = tensor[src]
    raw = out.reshape(-1).view(np.uint8)
    if not swz:
        return raw
    img = np.zeros_like(raw)
    for off in range(0, raw.size, 16):
        line, unit = divmod(off, 128)
        unit //= 16
        new = line * 128 + 16 * (unit ^ (line % (swz // 16)))
        img[new:new + 16] = raw[off:off + 16]
    assert rank
    return img


def run_tma(pm, tensor: np.ndarray, data_type: int, box: list[int], coords: list[int], swizzle: int = 0,
            oob_fill: int = 0, pred: str = "") -> np.ndarray:
    from tilecore.emulate.tensormap import encode_tiled

    rank = len(box)
    dims = list(tensor.shape[::-1])
    strides = [tensor.strides[::-1][i] for i in range(1, rank)]
    tm = encode_tiled(data_type, rank, 1, dims, strides, box, swizzle=swizzle, oob_fill=oob_fill)
    nbytes = int(np.prod(box)) * tensor.itemsize
    out = np.full(nbytes, 0xEE, np.uint8)
    launch(parse(pm, gpu_module(tma_kernel(rank, nbytes, coords, pred))), "k", grid=1, block=128,
           shared_bytes=nbytes, args=[tm, tensor, out.view(np.int32)])
    return out


@pytest.mark.parametrize("swizzle", [0, 1, 2, 3])
def test_tma_2d_f16_box_with_edges_and_swizzle(pm, swizzle):
    """A 40 x 100 f16 tensor (rows padded to 128 elements: stride 256 bytes), the box of S / 2 (or 64)
    x 32 elements at (64 - S / 4, 20): partly outside in both dimensions, zero-filled."""
    swz = {0: 0, 1: 32, 2: 64, 3: 128}[swizzle]
    inner = swz // 2 if swz else 64
    base = np.arange(40 * 128, dtype=np.float32).reshape(40, 128).astype(np.float16)
    tensor = base[:, :100]  # a view: the kernel argument is the padded array, the map says 100 columns
    coords = [100 - inner // 2, 20]
    from tilecore.emulate.tensormap import encode_tiled

    tm = encode_tiled(6, 2, 1, [100, 40], [256], [inner, 32], swizzle=swizzle)
    nbytes = inner * 32 * 2
    out = np.full(nbytes, 0xEE, np.uint8)
    launch(parse(pm, gpu_module(tma_kernel(2, nbytes, coords))), "k", grid=1, block=128, shared_bytes=nbytes,
           args=[tm, base, out.view(np.int32)])
    np.testing.assert_array_equal(out, box_expected(tensor, [inner, 32], coords, swz))


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_tma_ranks_and_negative_coordinates(pm, rank):
    rng = np.random.default_rng(rank)
    shape = {1: (200,), 3: (5, 7, 24), 5: (3, 2, 4, 3, 8)}[rank]
    box = {1: [64], 3: [8, 4, 4], 5: [8, 2, 2, 2, 2]}[rank]
    coords = {1: [-16], 3: [20, -1, 3], 5: [4, 2, 3, -1, 1]}[rank]
    tensor = rng.integers(-1000, 1000, shape).astype(np.int32)
    out = run_tma(pm, tensor, 3, box, coords)
    np.testing.assert_array_equal(out, box_expected(tensor, box, coords, 0))


def test_tma_nan_fill_and_predicate(pm):
    tensor = np.arange(12 * 8, dtype=np.float32).reshape(12, 8) + 0.5
    out = run_tma(pm, tensor, 7, [8, 8], [4, 8], oob_fill=1).view(np.float32).reshape(8, 8)
    want = box_expected(tensor, [8, 8], [4, 8], 0, fill=np.nan).view(np.float32).reshape(8, 8)
    np.testing.assert_array_equal(out, want)
    assert np.isnan(out[5, 0]) and np.isnan(out[0, 5])
    out = run_tma(pm, tensor, 7, [8, 8], [0, 0], pred="%false")  # predicated off: shared memory unchanged (zero)
    np.testing.assert_array_equal(out, np.zeros(256, np.uint8))


@pytest.mark.parametrize("bad, message", [
    ("magic", "does not point to an emulator tensor map"),
    ("arg", "names kernel argument 0, which is no array|larger than kernel argument"),
    ("dims", "larger than kernel argument 1"),
])
def test_tma_bad_tensor_maps_fail(pm, bad, message):
    from tilecore.emulate.tensormap import encode_tiled

    tensor = np.zeros((8, 8), np.float32)
    tm = encode_tiled(7, 2, 2 if bad == "arg" else 1, [8, 16 if bad == "dims" else 8], [32], [8, 8])
    if bad == "magic":
        tm[0] ^= 1
    if bad == "arg":
        tm[4] = 0
    with pytest.raises(TilecoreError, match=message):
        launch(parse(pm, gpu_module(tma_kernel(2, 256, [0, 0]))), "k", grid=1, block=128, shared_bytes=256,
               args=[tm, tensor, np.zeros(64, np.int32)])


def test_tma_encoder_checks_the_driver_requirements():
    from tilecore.emulate.tensormap import encode_tiled

    with pytest.raises(ValueError, match="multiples of 16"):
        encode_tiled(6, 2, 0, [100, 40], [200], [64, 32])
    with pytest.raises(ValueError, match="at most the swizzle width"):
        encode_tiled(6, 2, 0, [100, 40], [256], [64, 32], swizzle=2)


def test_tma_predicated_as_inline_ptx(pm):
    """With a predicate, convert-nvvm-to-llvm writes the copy as inline PTX (``@$6 cp.async.bulk.tensor``):
    the emulator runs that form (predicate true: the copy; false: none)."""
    from tilecore.conversion import run_native_pipeline
    from tilecore.emulate.tensormap import encode_tiled

    tensor = np.arange(64, dtype=np.int32).reshape(8, 8)
    for pred, want in (("%is0", tensor.reshape(-1)), ("%false", np.zeros(64, np.int32))):
        text = tma_kernel(2, 256, [0, 0], pred)
        if pred == "%is0":  # predicated on, so the expect_tx is needed again
            text = text.replace("%s2 = nvvm.mbarrier.arrive %b : !llvm.ptr<3> -> i64",
                                "%s2 = nvvm.mbarrier.arrive.expect_tx %b, %nb : !llvm.ptr<3>, i32 -> i64")
        m = parse(pm, gpu_module(text))
        run_native_pipeline(m.operation, "gpu.module(convert-nvvm-to-llvm)", m.context)
        assert "cp.async.bulk.tensor.2d" in str(m)
        out = np.full(64, 7, np.int32)
        launch(m, "k", grid=1, block=128, shared_bytes=256, args=[encode_tiled(3, 2, 1, [8, 8], [32], [8, 8]),
                                                                 tensor, out])
        np.testing.assert_array_equal(out, want)


def test_tma_lands_when_the_mbarrier_is_waited_on(pm):
    """Without the wait, the threads read the old shared memory (the copy is queued on the mbarrier);
    the copy lands at the next wait (here none: the launch ends with it pending, nothing fails)."""
    from tilecore.emulate.tensormap import encode_tiled

    text = tma_kernel(2, 256, [0, 0]).replace(
        "nvvm.mbarrier.try_wait.parity %b, %c0, %c128 : !llvm.ptr<3>, i32, i32", "")
    out = np.full(64, 7, np.int32)
    launch(parse(pm, gpu_module(text)), "k", grid=1, block=128, shared_bytes=256,
           args=[encode_tiled(3, 2, 1, [8, 8], [32], [8, 8]), np.ones((8, 8), np.int32), out])
    np.testing.assert_array_equal(out, 0)


def tma_wgmma_kernel() -> str:
    """The Hopper GEMM step: thread 0 loads A (64 x 64 f16) and B^T (64 x 64 f16, K contiguous) with
    128B-swizzled TMA boxes (64 x 64: 128-byte rows, the K-major SW128 canonical layout with SBO 1024)
    onto one mbarrier (expect_tx 16384); the warpgroup waits, then four m64n64k16 mma_async advance both
    descriptors by 32 bytes along K; D to %d by fragments."""
    words = 32
    st = f"!llvm.struct<({', '.join(['f32'] * words)})>"
    hi = descriptor_high(16, 1024, 128)
    mma = mma_text(64, 16, "f16", "f16", "f32", "f32", words)
    steps = []
    for s in range(4):
        steps.append(f"""
    %ks{s} = llvm.mlir.constant({32 * s} : i64) : i64
    %as{s} = llvm.add %abase, %ks{s} : i64
    %bs{s} = llvm.add %bbase, %ks{s} : i64
    %a4{s} = llvm.lshr %as{s}, %c4 : i64
    %b4{s} = llvm.lshr %bs{s}, %c4 : i64
    %am{s} = llvm.and %a4{s}, %m14 : i64
    %bm{s} = llvm.and %b4{s}, %m14 : i64
    %da{s} = llvm.or %am{s}, %hi : i64
    %db{s} = llvm.or %bm{s}, %hi : i64
    {mma.format(acc=f"%r{s}", da=f"%da{s}", db=f"%db{s}", out=f"%r{s + 1}")}""")
    stores = [f"%v{i} = llvm.extractvalue %r4[{i}] : {st}\n%ci{i} = llvm.mlir.constant({i} : i32) : i32\n"
              f"%co{i} = llvm.add %cb, %ci{i} : i32\n"
              f"%dp{i} = llvm.getelementptr %d[%co{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
              f"llvm.store %v{i}, %dp{i} : f32, !llvm.ptr<1>" for i in range(words)]
    zero = [f"%r0_{i + 1} = llvm.insertvalue %fz, %r0_{i}[{i}] : {st}" for i in range(words)]
    return f"""
  {MBAR_GLOBAL}
  llvm.mlir.global internal @sa() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<8192 x i8>
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  llvm.func @k(%tma: !llvm.ptr<1>, %tmb: !llvm.ptr<1>, %ga: !llvm.ptr<1>, %gb: !llvm.ptr<1>, %d: !llvm.ptr<1>)
      attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %b = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %sa = llvm.mlir.addressof @sa : !llvm.ptr<3>
    %sb = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %sa7 = llvm.addrspacecast %sa : !llvm.ptr<3> to !llvm.ptr<7>
    %sb7 = llvm.addrspacecast %sb : !llvm.ptr<3> to !llvm.ptr<7>
    %tag = llvm.addrspacecast %tma : !llvm.ptr<1> to !llvm.ptr
    %tbg = llvm.addrspacecast %tmb : !llvm.ptr<1> to !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %nb = llvm.mlir.constant(16384 : i32) : i32
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %m14 = llvm.mlir.constant(16383 : i64) : i64
    %hi = llvm.mlir.constant({np.uint64(hi).view(np.int64)} : i64) : i64
    %fz = llvm.mlir.constant(0.0 : f32) : f32
    %cb = llvm.mul %t, %c32 : i32
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    llvm.cond_br %is0, ^init, ^go
  ^init:
    nvvm.mbarrier.init %b, %c1 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
    %s = nvvm.mbarrier.arrive.expect_tx %b, %nb : !llvm.ptr<3>, i32 -> i64
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sa7, %tag, %b, box[%c0, %c0] : !llvm.ptr<7>, !llvm.ptr
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sb7, %tbg, %b, box[%c0, %c0] : !llvm.ptr<7>, !llvm.ptr
    llvm.br ^go
  ^go:
    nvvm.barrier0
    nvvm.mbarrier.try_wait.parity %b, %c0, %nb : !llvm.ptr<3>, i32, i32
    %abase = llvm.ptrtoint %sa : !llvm.ptr<3> to i64
    %bbase = llvm.ptrtoint %sb : !llvm.ptr<3> to i64
    %r0_0 = llvm.mlir.undef : {st}
    {NL.join(zero)}
    %r0 = llvm.insertvalue %fz, %r0_{words}[0] : {st}
    nvvm.wgmma.fence.aligned
    {NL.join(steps)}
    nvvm.wgmma.commit.group.sync.aligned
    nvvm.wgmma.wait.group.sync.aligned 0
    {NL.join(stores)}
    llvm.return
  }}"""


def test_tma_128b_swizzled_tiles_feed_wgmma(pm):
    """TMA's 128B swizzle and wgmma's K-major SW128 layout are the same layout: the GEMM of two TMA tiles
    through four k16 steps is A @ B."""
    from tilecore.emulate.tensormap import encode_tiled

    rng = np.random.default_rng(12)
    a, bt = quarters(rng, (64, 64)), quarters(rng, (64, 64))  # bt: B^T, N x K
    tma = encode_tiled(6, 2, 2, [64, 64], [128], [64, 64], swizzle=3)
    tmb = encode_tiled(6, 2, 3, [64, 64], [128], [64, 64], swizzle=3)
    d = np.zeros((128, 32), np.float32)
    launch(parse(pm, gpu_module(tma_wgmma_kernel())), "k", grid=1, block=128, shared_bytes=8192,
           args=[tma, tmb, a, bt, d])
    np.testing.assert_array_equal(d, d_fragment_expected(a.astype(np.float32) @ bt.astype(np.float32).T))


def test_ptxas_accepts_the_tma_forms_for_sm_90a(pm):
    ptx = "\n".join(ptxas_round_trip(pm, body, "sm_90a", passes="convert-nvvm-to-llvm") for body in (
        tma_kernel(2, 4096, [0, 0]), tma_kernel(5, 1024, [0, 0, 0, 0, 0]), tma_kernel(3, 512, [1, 2, 3], "%is0"),
        tma_wgmma_kernel()))
    for needle in ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                   "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                   "cp.async.bulk.tensor.3d", "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"):
        assert needle in ptx, needle


# ---------------------------------------------------------------- TMA store (shared -> global, bulk groups)
def tma_store_kernel(rank: int, box_bytes: int, coords: list[int], wait: str = "nvvm.cp.async.bulk.wait_group 0 {read}",
                     after: str = "") -> str:
    """128 threads copy ``box_bytes`` from %src into dynamic shared memory (words t, t + 128, ...), fence the
    generic proxy against the async one and synchronise; thread 0 stores the box at ``coords`` through the
    tensor map %tm (``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group``), commits the bulk group and
    runs ``wait``, then ``after`` (e.g. overwrite shared memory)."""
    cs = ", ".join(f"%k{i}" for i in range(rank))
    consts = "\n".join(f"%k{i} = llvm.mlir.constant({c} : i32) : i32" for i, c in enumerate(coords))
    return f"""
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  llvm.func @k(%tm: !llvm.ptr<1>, %g: !llvm.ptr<1>, %src: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %sm = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %tmg = llvm.addrspacecast %tm : !llvm.ptr<1> to !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c128 = llvm.mlir.constant(128 : i32) : i32
    %c99 = llvm.mlir.constant(99 : i32) : i32
    %nw = llvm.mlir.constant({box_bytes // 4} : i32) : i32
    {consts}
    llvm.br ^h(%t : i32)
  ^h(%i: i32):
    %more = llvm.icmp "ult" %i, %nw : i32
    llvm.cond_br %more, ^body, ^done
  ^body:
    %gp = llvm.getelementptr %src[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %v = llvm.load %gp : !llvm.ptr<1> -> i32
    %sp = llvm.getelementptr %sm[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    llvm.store %v, %sp : i32, !llvm.ptr<3>
    %n = llvm.add %i, %c128 : i32
    llvm.br ^h(%n : i32)
  ^done:
    nvvm.fence.proxy {{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}}
    nvvm.barrier0
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    llvm.cond_br %is0, ^store, ^end
  ^store:
    nvvm.cp.async.bulk.tensor.global.shared.cta %tmg, %sm, box[{cs}] : !llvm.ptr, !llvm.ptr<3>
    nvvm.cp.async.bulk.commit.group
    {wait}
    {after}
    llvm.br ^end
  ^end:
    llvm.return
  }}"""


def run_tma_store(pm, tensor: np.ndarray, data_type: int, box: list[int], coords: list[int], swizzle: int = 0,
                  **kw) -> tuple[np.ndarray, np.ndarray]:
    """(the tensor after the store, the box's bytes as shared memory held them)."""
    from tilecore.emulate.tensormap import encode_tiled

    rank = len(box)
    dims = list(tensor.shape[::-1])
    strides = [tensor.strides[::-1][i] for i in range(1, rank)]
    tm = encode_tiled(data_type, rank, 1, dims, strides, box, swizzle=swizzle)
    nbytes = int(np.prod(box)) * tensor.itemsize
    src = np.random.default_rng(rank).integers(0, 256, nbytes).astype(np.uint8)
    out = tensor.copy()
    launch(parse(pm, gpu_module(tma_store_kernel(rank, nbytes, coords, **kw))), "k", grid=1, block=128,
           shared_bytes=nbytes, args=[tm, out, src.view(np.int32)])
    return out, src


def store_expected(tensor: np.ndarray, box: list[int], coords: list[int], smem: np.ndarray, swz: int) -> np.ndarray:
    """The tensor after a tile-mode store of the box whose shared bytes are ``smem`` (in the swizzle ``swz``):
    the box's elements inside the tensor are written, the rest of the box is clipped (PTX ISA "Tiled mode",
    "Out-of-bound access")."""
    raw = smem.copy()
    if swz:  # undo the swizzle: logical 16-byte unit u of line L sits at u ^ (L mod (S / 16))
        for off in range(0, raw.size, 16):
            line, unit = divmod(off, 128)
            new = line * 128 + 16 * ((unit // 16) ^ (line % (swz // 16)))
            raw[off:off + 16] = smem[new:new + 16]
    boxed = raw.view(tensor.dtype).reshape(box[::-1])
    out = tensor.copy()
    dst = tuple(slice(max(c, 0), min(c + b, n)) for c, b, n in zip(coords[::-1], box[::-1], tensor.shape))
    src = tuple(slice(d.start - c, d.stop - c) for d, c in zip(dst, coords[::-1]))
    if all(d.stop > d.start for d in dst):
        out[dst] = boxed[src]
    return out


@pytest.mark.parametrize("swizzle", [0, 2, 3])
def test_tma_store_2d_clips_to_the_tensor(pm, swizzle):
    """A 40 x 100 f16 tensor (in a 40 x 128 array: the map's row stride is 256 bytes), the box of S / 2 (or 64)
    x 32 elements at (100 - S / 4, 20): half its columns and rows lie outside the tensor and are not written
    (the padding columns 100..127 and every other element keep their values)."""
    swz = {0: 0, 2: 64, 3: 128}[swizzle]
    inner = swz // 2 if swz else 64
    base = np.full((40, 128), -1.0, np.float16)
    from tilecore.emulate.tensormap import encode_tiled

    coords = [100 - inner // 2, 20]
    tm = encode_tiled(6, 2, 1, [100, 40], [256], [inner, 32], swizzle=swizzle)
    nbytes = inner * 32 * 2
    src = np.random.default_rng(swizzle).standard_normal(nbytes // 2).astype(np.float16).view(np.uint8)
    out = base.copy()
    launch(parse(pm, gpu_module(tma_store_kernel(2, nbytes, coords))), "k", grid=1, block=128, shared_bytes=nbytes,
           args=[tm, out, src.view(np.int32)])
    want = base.copy()
    want[:, :100] = store_expected(base[:, :100], [inner, 32], coords, src, swz)
    np.testing.assert_array_equal(out, want)
    assert (out[:, 100:] == -1).all() and (out[:20] == -1).all()


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_tma_store_ranks_and_negative_coordinates(pm, rank):
    shape = {1: (200,), 3: (5, 7, 24), 5: (3, 2, 4, 3, 8)}[rank]
    box = {1: [64], 3: [8, 4, 4], 5: [8, 2, 2, 2, 2]}[rank]
    coords = {1: [-16], 3: [20, -1, 3], 5: [4, 2, 3, -1, 1]}[rank]
    tensor = np.full(shape, -7, np.int32)
    out, src = run_tma_store(pm, tensor, 3, box, coords)
    np.testing.assert_array_equal(out, store_expected(tensor, box, coords, src, 0))
    assert (out != -7).any()


def test_tma_store_waits_and_reuse_of_the_box(pm):
    """The store reads its shared box when its bulk group is retired (``wait_group.read``) or at the thread's
    exit: with the wait before shared memory is overwritten the tensor gets the box; overwriting it before the
    wait (a race on the GPU) stores the new bytes in the emulator; without any wait the store still lands."""
    tensor = np.zeros((8, 8), np.int32)
    box, coords = [8, 8], [0, 0]
    overwrite = "\n".join([
        "%w0 = llvm.getelementptr %sm[%c0] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32",
        "llvm.store %c99, %w0 : i32, !llvm.ptr<3>"])
    out, src = run_tma_store(pm, tensor, 3, box, coords, after=overwrite)
    np.testing.assert_array_equal(out, src.view(np.int32).reshape(8, 8))
    out, src = run_tma_store(pm, tensor, 3, box, coords, wait="", after=overwrite)
    assert out[0, 0] == 99 and (out.reshape(-1)[1:] == src.view(np.int32)[1:]).all()
    out, src = run_tma_store(pm, tensor, 3, box, coords, wait="")
    np.testing.assert_array_equal(out, src.view(np.int32).reshape(8, 8))
    out, src = run_tma_store(pm, tensor, 3, box, coords, wait="nvvm.cp.async.bulk.wait_group 0")
    np.testing.assert_array_equal(out, src.view(np.int32).reshape(8, 8))


def test_tma_store_misaligned_source_fails(pm):
    from tilecore.emulate.tensormap import encode_tiled

    text = tma_store_kernel(2, 256, [0, 0]).replace(
        "nvvm.cp.async.bulk.tensor.global.shared.cta %tmg, %sm,",
        "%sm16 = llvm.getelementptr %sm[16] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8\n"
        "    nvvm.cp.async.bulk.tensor.global.shared.cta %tmg, %sm16,")
    with pytest.raises(TilecoreError, match=r"cp.async.bulk.tensor \(store\): the source .* must be 128-byte aligned"):
        launch(parse(pm, gpu_module(text)), "k", grid=1, block=128, shared_bytes=512,
               args=[encode_tiled(3, 2, 1, [8, 8], [32], [8, 8]), np.zeros((8, 8), np.int32), np.zeros(64, np.int32)])


def test_ptxas_accepts_the_tma_store_forms_for_sm_90a(pm):
    ptx = "\n".join(ptxas_round_trip(pm, body, "sm_90a") for body in (
        tma_store_kernel(2, 4096, [0, 0]), tma_store_kernel(3, 512, [1, 2, 3]),
        tma_store_kernel(5, 1024, [0, 0, 0, 0, 0], wait="nvvm.cp.async.bulk.wait_group 1")))
    for needle in ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
                   "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
                   "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group", "cp.async.bulk.commit_group",
                   "fence.proxy.async.shared::cta"):
        assert needle in ptx, needle
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx) and re.search(r"cp\.async\.bulk\.wait_group\s+1;", ptx)


@pytest.mark.parametrize("form", ["f16acc", "tf32", "s8sat", "e4m3", "bf16neg"])
def test_wgmma_inline_ptx_forms(pm, form):
    """Each type family through convert-nvvm-to-llvm's inline PTX gives the numbers of the op form."""
    rng = np.random.default_rng(21)
    if form == "f16acc":
        a, b, c = quarters(rng, (64, 16)), quarters(rng, (16, 16)), quarters(rng, (64, 16))
        kw = dict(n=16, k_major_a=False, k_major_b=True, swz=128, td="f16", acc_ty="i32")
    elif form == "tf32":
        a = (rng.integers(-16, 16, (64, 8)) / 4).astype(np.float32)
        b = (rng.integers(-16, 16, (8, 16)) / 4).astype(np.float32)
        c = np.ones((64, 16), np.float32)
        kw = dict(n=16, k_major_a=True, k_major_b=True, swz=64, ta="tf32", tb="tf32", k=8)
    elif form == "s8sat":
        a = rng.integers(-128, 128, (64, 32)).astype(np.int8)
        b = rng.integers(0, 256, (32, 16)).astype(np.uint8)
        c = np.full((64, 16), (1 << 31) - 5000, np.int32)
        kw = dict(n=16, k_major_a=True, k_major_b=True, swz=0, ta="s8", tb="u8", td="s32", acc_ty="i32", k=32,
                  sat=", <satfinite>")
    elif form == "e4m3":
        a = rng.choice(np.array([0x38, 0x30, 0xB8, 0x40, 0x00], np.uint8), (64, 32))  # 1, .5, -1, 2, 0
        b = rng.choice(np.array([0x38, 0xB0, 0x28], np.uint8), (32, 8))  # 1, -.5, .25
        c = np.zeros((64, 8), np.float32)
        kw = dict(n=8, k_major_a=True, k_major_b=True, swz=32, ta="e4m3", tb="e4m3", k=32)
    else:
        a = (quarters(rng, (64, 16)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        b = (quarters(rng, (16, 8)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        c = np.zeros((64, 8), np.float32)
        kw = dict(n=8, k_major_a=False, k_major_b=False, swz=64, ta="bf16", tb="bf16", neg_a="neg", neg_b="neg")
    want = run_wgmma(pm, a, b, c, **kw)
    got = run_wgmma(pm, a, b, c, lower=True, **kw)
    np.testing.assert_array_equal(got, want)
    if form == "s8sat":
        assert want.max() == (1 << 31) - 1  # saturated somewhere


@pytest.mark.parametrize("lower", [False, True])
def test_wgmma_chained_k_steps_through_inline_ptx(pm, lower):
    """Chained mma_async (each one's result the next one's accumulator, no wait between) pass the
    accumulator check in both forms (convert-nvvm-to-llvm extracts the members for the next asm)."""
    rng = np.random.default_rng(30)
    a, b = quarters(rng, (64, 64)), quarters(rng, (64, 8))
    c = np.zeros((64, 8), np.float32)
    d = run_wgmma(pm, a, b, c, n=8, k_major_a=True, k_major_b=True, swz=128, steps=4, lower=lower)
    np.testing.assert_array_equal(d, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("waits", ["", "nvvm.wgmma.commit.group.sync.aligned",
                                   "nvvm.wgmma.commit.group.sync.aligned\nnvvm.wgmma.wait.group.sync.aligned 1",
                                   "nvvm.wgmma.wait.group.sync.aligned 0\nnvvm.wgmma.commit.group.sync.aligned"])
@pytest.mark.parametrize("lower", [False, True])
def test_wgmma_accumulator_read_before_the_wait_is_refused(pm, waits, lower):
    from tilecore.conversion import run_native_pipeline

    text, args, _ = wgmma_case(pm, 8, 0, (True, True), waits=waits)
    m = parse(pm, text)
    if lower:
        run_native_pipeline(m.operation, "gpu.module(convert-nvvm-to-llvm)", m.context)
    with pytest.raises(TilecoreError, match="used before a wgmma.wait_group retires it"):
        launch(m, "k", grid=1, block=128, shared_bytes=SMEM_BYTES, args=args)


def pipelined_gemm_kernel(kt: int, stages: int = 2) -> str:
    """A Hopper K loop (unrolled, kt tiles of K = 64): ``stages`` shared stages, each with a "full"
    mbarrier; thread 0 fills stage s with TMA (A and B^T 64 x 64 f16 boxes, 128B swizzle, expect_tx
    16384); every iteration the warpgroup waits on full[s] with the parity of its use count, runs four
    m64n64k16 (descriptors advanced 32 bytes along K), commits, waits for the group, syncs, and thread 0
    refills the stage with tile k + stages. D accumulates in the SSA chain."""
    words = 32
    st = f"!llvm.struct<({', '.join(['f32'] * words)})>"
    hi = descriptor_high(16, 1024, 128)
    mma = mma_text(64, 16, "f16", "f16", "f32", "f32", words)
    lines = []

    def load(tile: int, s: int) -> str:
        return f"""
    llvm.cond_br %is0, ^ld{tile}, ^ldd{tile}
  ^ld{tile}:
    %ex{tile} = nvvm.mbarrier.arrive.expect_tx %full{s}, %nb : !llvm.ptr<3>, i32 -> i64
    %kc{tile} = llvm.mlir.constant({64 * tile} : i32) : i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sa7_{s}, %tag, %full{s}, box[%kc{tile}, %c0] : !llvm.ptr<7>, !llvm.ptr
    nvvm.cp.async.bulk.tensor.shared.cluster.global %sb7_{s}, %tbg, %full{s}, box[%kc{tile}, %c0] : !llvm.ptr<7>, !llvm.ptr
    llvm.br ^ldd{tile}
  ^ldd{tile}:"""

    for s in range(stages):
        lines.append(f"""
    %oa{s} = llvm.mlir.constant({8192 * s} : i32) : i32
    %ob{s} = llvm.mlir.constant({8192 * (stages + s)} : i32) : i32
    %sa_{s} = llvm.getelementptr %sm[%oa{s}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %sb_{s} = llvm.getelementptr %sm[%ob{s}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %sa7_{s} = llvm.addrspacecast %sa_{s} : !llvm.ptr<3> to !llvm.ptr<7>
    %sb7_{s} = llvm.addrspacecast %sb_{s} : !llvm.ptr<3> to !llvm.ptr<7>
    %abase{s} = llvm.ptrtoint %sa_{s} : !llvm.ptr<3> to i64
    %bbase{s} = llvm.ptrtoint %sb_{s} : !llvm.ptr<3> to i64
    %fi{s} = llvm.mlir.constant({s} : i32) : i32
    %full{s} = llvm.getelementptr %bars[%fi{s}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i64""")
    lines.append("llvm.cond_br %is0, ^init, ^go\n  ^init:")
    lines += [f"nvvm.mbarrier.init %full{s}, %c1 : !llvm.ptr<3>, i32" for s in range(stages)]
    lines.append("nvvm.fence.mbarrier.init\n    llvm.br ^go\n  ^go:\n    nvvm.barrier0")
    lines += [load(t, t) for t in range(min(stages, kt))]
    acc = "%r0"
    for k in range(kt):
        s, par = k % stages, (k // stages) % 2
        lines.append(f"%par{k} = llvm.mlir.constant({par} : i32) : i32\n"
                     f"    nvvm.mbarrier.try_wait.parity %full{s}, %par{k}, %nb : !llvm.ptr<3>, i32, i32\n"
                     "    nvvm.wgmma.fence.aligned")
        for j in range(4):
            q = f"{k}_{j}"
            lines.append(f"""
    %ks{q} = llvm.mlir.constant({32 * j} : i64) : i64
    %as{q} = llvm.add %abase{s}, %ks{q} : i64
    %bs{q} = llvm.add %bbase{s}, %ks{q} : i64
    %a4{q} = llvm.lshr %as{q}, %c4 : i64
    %b4{q} = llvm.lshr %bs{q}, %c4 : i64
    %am{q} = llvm.and %a4{q}, %m14 : i64
    %bm{q} = llvm.and %b4{q}, %m14 : i64
    %da{q} = llvm.or %am{q}, %hi : i64
    %db{q} = llvm.or %bm{q}, %hi : i64
    {mma.format(acc=acc, da=f"%da{q}", db=f"%db{q}", out=f"%mm{q}")}""")
            acc = f"%mm{q}"
        lines.append("nvvm.wgmma.commit.group.sync.aligned\n    nvvm.wgmma.wait.group.sync.aligned 0\n"
                     "    nvvm.barrier0")
        if k + stages < kt:
            lines.append(load(k + stages, s))
    stores = [f"%v{i} = llvm.extractvalue {acc}[{i}] : {st}\n%ci{i} = llvm.mlir.constant({i} : i32) : i32\n"
              f"%co{i} = llvm.add %cb, %ci{i} : i32\n"
              f"%dp{i} = llvm.getelementptr %d[%co{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
              f"llvm.store %v{i}, %dp{i} : f32, !llvm.ptr<1>" for i in range(words)]
    zero = [f"%r0_{i + 1} = llvm.insertvalue %fz, %r0_{i}[{i}] : {st}" for i in range(words)]
    return f"""
  llvm.mlir.global internal @bars() {{addr_space = 3 : i32, alignment = 8 : i64}} : !llvm.array<{stages} x i64>
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  llvm.func @k(%tma: !llvm.ptr<1>, %tmb: !llvm.ptr<1>, %ga: !llvm.ptr<1>, %gb: !llvm.ptr<1>, %d: !llvm.ptr<1>)
      attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %bars = llvm.mlir.addressof @bars : !llvm.ptr<3>
    %sm = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %tag = llvm.addrspacecast %tma : !llvm.ptr<1> to !llvm.ptr
    %tbg = llvm.addrspacecast %tmb : !llvm.ptr<1> to !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %nb = llvm.mlir.constant(16384 : i32) : i32
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %m14 = llvm.mlir.constant(16383 : i64) : i64
    %hi = llvm.mlir.constant({np.uint64(hi).view(np.int64)} : i64) : i64
    %fz = llvm.mlir.constant(0.0 : f32) : f32
    %cb = llvm.mul %t, %c32 : i32
    %is0 = llvm.icmp "eq" %t, %c0 : i32
    %r0_0 = llvm.mlir.undef : {st}
    {NL.join(zero)}
    %r0 = llvm.insertvalue %fz, %r0_{words}[0] : {st}
    {NL.join(lines)}
    {NL.join(stores)}
    llvm.return
  }}"""


@pytest.mark.parametrize("stages", [2, 3])
def test_pipelined_tma_mbarrier_wgmma_k_loop(pm, stages):
    """64 x 64 x 384 through a 2- / 3-stage TMA + mbarrier + wgmma pipeline: the stages' mbarriers go
    through several phases (the wait parity flips per reuse), the refills overwrite stages the group
    finished reading; the result is A @ B."""
    from tilecore.emulate.tensormap import encode_tiled

    kt = 6
    rng = np.random.default_rng(stages)
    a, bt = quarters(rng, (64, 64 * kt), -4, 4), quarters(rng, (64, 64 * kt), -4, 4)
    tma = encode_tiled(6, 2, 2, [64 * kt, 64], [128 * kt], [64, 64], swizzle=3)
    tmb = encode_tiled(6, 2, 3, [64 * kt, 64], [128 * kt], [64, 64], swizzle=3)
    d = np.zeros((128, 32), np.float32)
    launch(parse(pm, gpu_module(pipelined_gemm_kernel(kt, stages))), "k", grid=1, block=128,
           shared_bytes=2 * stages * 8192, args=[tma, tmb, a, bt, d])
    np.testing.assert_array_equal(d, d_fragment_expected(a.astype(np.float32) @ bt.astype(np.float32).T))


def test_ptxas_accepts_the_pipelined_k_loop(pm):
    ptx = ptxas_round_trip(pm, pipelined_gemm_kernel(4, 2), "sm_90a", passes="convert-nvvm-to-llvm")
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") == 16
    assert ptx.count("cp.async.bulk.tensor.2d") == 8


def test_setmaxnreg_changes_no_value(pm):
    """setmaxnreg (warp specialisation: a producer warpgroup gives registers to the consumers) runs as a no-op;
    ptxas accepts the kernel for sm_90a."""
    body = """
  llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %wg = llvm.mlir.constant(128 : i32) : i32
    %first = llvm.icmp "ult" %t, %wg : i32
    llvm.cond_br %first, ^producer, ^consumer
  ^producer:
    nvvm.setmaxregister decrease 40
    llvm.br ^done
  ^consumer:
    nvvm.setmaxregister increase 232
    llvm.br ^done
  ^done:
    %p = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %t, %p : i32, !llvm.ptr<1>
    llvm.return
  }"""
    out = np.zeros(256, np.int32)
    launch(parse(pm, gpu_module(body)), "k", grid=1, block=256, args=[out])
    np.testing.assert_array_equal(out, np.arange(256))
    ptx = ptxas_round_trip(pm, body, "sm_90a")
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx
