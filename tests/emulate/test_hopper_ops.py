"""Emulator: Hopper (sm_90a) ops: mbarrier and wgmma.

Each kernel is llvm + nvvm dialect MLIR text; expected values come from the PTX ISA text
("Parallel Synchronization and Communication Instructions: mbarrier"; "Asynchronous Warpgroup Level
Matrix Multiply-Accumulate Instructions": "Matrix Descriptor Format", "Shared Memory Matrix Layout",
"Register Fragments", computed here independently in numpy). The same MLIR forms go through the NVPTX
back end and ptxas for sm_90a at the end.
"""

from __future__ import annotations

import numpy as np
import pytest
from support import has_plugin

from tilecore.emulate import launch
from tilecore.errors import TilecoreError

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

NL = "\n"


@pytest.fixture(scope="module")
def pm():
    from tilecore.plugins import get_plugin_manager

    return get_plugin_manager()


def parse(pm, text: str):
    from tilecore.mlir import ir

    with pm.make_context():
        return ir.Module.parse(text)


def gpu_module(body: str, target: str = "") -> str:
    if not target:
        return f"gpu.module @m {{\n{body}\n}}"
    return f"module attributes {{gpu.container_module}} {{\ngpu.module @m [{target}] {{\n{body}\n}}\n}}"


def _ptxas_round_trip(pm, body: str, passes: str = "") -> str:
    """PTX for sm_90a (tilecore's target features) through ptxas; ``passes`` first run on the gpu.module
    (``convert-nvvm-to-llvm`` for the ops MLIR 22 lowers to inline PTX)."""
    from tilecore.serialize import find_nvidia_tool, module_to_ptx, ptx_to_cubin
    from tilecore.targets import resolve_target

    if not find_nvidia_tool("ptxas"):
        pytest.skip("needs ptxas")
    feat = resolve_target("sm_90a", pm.targets()).feature_string
    m = parse(pm, gpu_module(body, f'#nvvm.target<chip = "sm_90a", features = "{feat}">'))
    if passes:
        from tilecore.conversion import run_native_pipeline

        run_native_pipeline(m.operation, f"gpu.module({passes})", m.context)
    ptx = module_to_ptx(m)["m"]
    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"
    return ptx


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
    ptx = "\n".join(_ptxas_round_trip(pm, body, "convert-nvvm-to-llvm") for body in (
        one_thread_kernel(MBAR_STATE_BODY), producer_consumer_kernel(2, True), CP_ASYNC_MBAR))
    for needle in ("mbarrier.init.shared.b64", "mbarrier.arrive.shared.b64", "mbarrier.arrive.expect_tx.shared.b64",
                   "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.test_wait.shared.b64",
                   "mbarrier.test_wait.parity.shared.b64", "mbarrier.try_wait.parity.shared.b64",
                   "mbarrier.inval.shared.b64", "cp.async.mbarrier.arrive.noinc.shared.b64", "fence.mbarrier_init"):
        assert needle in ptx, needle
