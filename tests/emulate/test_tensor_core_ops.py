"""Emulator: ldmatrix, cp.async and mma.sync (f16 accumulator; e4m3 / e5m2 through inline PTX; m8n8k4 f64).

Each kernel is llvm + nvvm dialect MLIR text; the expected numbers come from the PTX ISA's
fragment layouts computed here in numpy ("Warp Level Matrix Multiply-Accumulate Instructions":
ldmatrix; "Matrix Fragments for mma.m16n8k16 with floating point type"; "Matrix Fragments for
mma.m16n8k32"; "Data Movement and Conversion Instructions: cp.async"). The same MLIR forms go
through the NVPTX back end and ptxas at the end (sm_80; sm_89, PTX 8.4, for FP8).
"""

from __future__ import annotations

import numpy as np
import pytest
from support import gpu_module, has_plugin, ptxas_round_trip
from support import parse_module as parse

from tilecore.emulate import launch
from tilecore.errors import TilecoreError
from tilecore.narrow_floats import decode as f8_decode

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

NL = "\n"
LDM_ATTRS = "eltType = #nvvm.ld_st_matrix_elt_type<b16>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>"


@pytest.fixture(scope="module")
def pm():
    from tilecore.plugins import get_plugin_manager

    return get_plugin_manager()




# ---------------------------------------------------------------- ldmatrix
def ldmatrix_kernel(num: int, layout: str) -> str:
    """32 threads copy 128 words (four 8 x 8 b16 matrices' worth of rows) into shared memory, then
    lane l hands ldmatrix the row at byte offset offs[l] and stores its ``num`` result words."""
    rt = "i32" if num == 1 else f"!llvm.struct<({', '.join(['i32'] * num)})>"
    copy = []
    for j in range(4):
        copy.append(f"%j{j} = llvm.mlir.constant({j} : i32) : i32\n%i{j} = llvm.add %w0, %j{j} : i32\n"
                    f"%gs{j} = llvm.getelementptr %src[%i{j}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                    f"%v{j} = llvm.load %gs{j} : !llvm.ptr<1> -> i32\n"
                    f"%ss{j} = llvm.getelementptr %base[%i{j}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
                    f"llvm.store %v{j}, %ss{j} : i32, !llvm.ptr<3>")
    stores = []
    for i in range(num):
        val = "%r" if num == 1 else f"%e{i}"
        if num > 1:
            stores.append(f"%e{i} = llvm.extractvalue %r[{i}] : {rt}")
        stores.append(f"%k{i} = llvm.mlir.constant({i} : i32) : i32\n%o{i} = llvm.add %ob, %k{i} : i32\n"
                      f"%q{i} = llvm.getelementptr %out[%o{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                      f"llvm.store {val}, %q{i} : i32, !llvm.ptr<1>")
    return f"""
  llvm.mlir.global internal @sm() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<128 x i32>
  llvm.func @k(%src: !llvm.ptr<1>, %offs: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %base = llvm.mlir.addressof @sm : !llvm.ptr<3>
    %c4 = llvm.mlir.constant(4 : i32) : i32
    %cn = llvm.mlir.constant({num} : i32) : i32
    %w0 = llvm.mul %t, %c4 : i32
    {NL.join(copy)}
    nvvm.barrier0
    %po = llvm.getelementptr %offs[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %off = llvm.load %po : !llvm.ptr<1> -> i32
    %p = llvm.getelementptr %base[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %r = nvvm.ldmatrix %p {{{LDM_ATTRS}, layout = #nvvm.mma_layout<{layout}>, num = {num} : i32}}
        : (!llvm.ptr<3>) -> {rt}
    %ob = llvm.mul %t, %cn : i32
    {NL.join(stores)}
    llvm.return
  }}"""


def ldmatrix_expected(halves: np.ndarray, offs: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """PTX ISA ldmatrix: matrix i's row r is the 8 b16 at the address of lane 8i + r; lane l's
    register i holds (row l/4, columns 2(l%4), 2(l%4)+1) of matrix i (of its transpose with .trans),
    the lower column in the low half."""
    out = np.zeros((32, num), np.uint32)
    for i in range(num):
        m = np.stack([halves[offs[8 * i + r] // 2:offs[8 * i + r] // 2 + 8] for r in range(8)]).astype(np.uint32)
        if trans:
            m = m.T
        for lane in range(32):
            g, t = lane // 4, lane % 4
            out[lane, i] = m[g, 2 * t] | m[g, 2 * t + 1] << 16
    return out


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_ldmatrix_fragments(pm, num, layout):
    rng = np.random.default_rng(num)
    halves = rng.integers(0, 1 << 16, 256).astype(np.uint16)  # 32 rows of 16 bytes in shared memory
    rows = rng.permutation(32)  # lane l addresses shared row rows[l]
    offs = (rows * 16).astype(np.int32)
    # lanes >= 8 * num: their addresses are not used (PTX ISA: x1 uses threads 0-7, x2 threads 0-15),
    # so they may point anywhere, even outside shared memory, without a fault
    offs[8 * num:] = 1 << 20
    out = np.zeros(32 * num, np.uint32)
    launch(parse(pm, gpu_module(ldmatrix_kernel(num, layout))), "k", grid=1, block=32,
           args=[halves.view(np.int32), offs, out])
    want = ldmatrix_expected(halves, offs, num, layout == "col")
    np.testing.assert_array_equal(out.reshape(32, num), want)


def test_ldmatrix_x4_trans_of_f16_matrix_gives_mma_b_fragment(pm):
    """A 16 x 8 (k x n) f16 B stored row-major (k rows): ldmatrix.x2.trans of its two 8-row halves gives
    the m16n8k16 B fragment (b0, b1 = rows 2t, 2t+1 of column g; b2, b3 eight rows further)."""
    b = (np.arange(128).reshape(16, 8) / 8).astype(np.float16)
    halves = np.zeros(256, np.uint16)
    halves[:128] = b.view(np.uint16).reshape(-1)
    offs = np.zeros(32, np.int32)
    offs[:16] = np.arange(16) * 16  # lane r (< 16) addresses B row r
    out = np.zeros(64, np.uint32)
    launch(parse(pm, gpu_module(ldmatrix_kernel(2, "col"))), "k", grid=1, block=32,
           args=[halves.view(np.int32), offs, out])
    out = out.reshape(32, 2)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for reg in range(2):
            lo, hi = (out[lane, reg] & 0xFFFF, out[lane, reg] >> 16)
            assert np.uint16(lo).view(np.float16) == b[2 * t + 8 * reg, g]
            assert np.uint16(hi).view(np.float16) == b[2 * t + 1 + 8 * reg, g]


@pytest.mark.parametrize("bad, message", [
    (8, r"misaligned shared memory access: load from 16 bytes .* not a multiple of 16 bytes \(block \(0, 0, 0\), "
        r"thread \(5, 0, 0\)\)"),
    (512, r"out-of-bounds shared memory access: load from 16 bytes .* thread \(5, 0, 0\).* shared @sm spans"),
])
def test_ldmatrix_checks_each_used_row_address(pm, bad, message):
    offs = (np.arange(32) * 16 % 512).astype(np.int32)
    offs[5] = bad
    with pytest.raises(TilecoreError, match=message):
        launch(parse(pm, gpu_module(ldmatrix_kernel(4, "row"))), "k", grid=1, block=32,
               args=[np.zeros(128, np.int32), offs, np.zeros(128, np.uint32)])


# ---------------------------------------------------------------- cp.async
SENTINEL = 0x5A5A5A5A


def cp_async_kernel(size: int, cache: str, src_size: bool, waits: str) -> str:
    """Thread t: its 16-byte shared slot (4 words at sm[4t]) := SENTINEL; cp.async ``size`` bytes
    from src[4t..] to the slot (with ``src_size`` bytes n[t] when asked); commit; read the slot into
    before[4t..]; ``waits`` (MLIR ops); read the slot into after[4t..]."""
    def read(dst: str) -> str:
        lines = []
        for j in range(4):
            lines.append(f"%{dst}a{j} = llvm.add %w0, %j{j} : i32\n"
                         f"%{dst}s{j} = llvm.getelementptr %base[%{dst}a{j}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
                         f"%{dst}v{j} = llvm.load %{dst}s{j} : !llvm.ptr<3> -> i32\n"
                         f"%{dst}g{j} = llvm.getelementptr %{dst}[%{dst}a{j}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                         f"llvm.store %{dst}v{j}, %{dst}g{j} : i32, !llvm.ptr<1>")
        return NL.join(lines)

    fill = NL.join(f"%j{j} = llvm.mlir.constant({j} : i32) : i32\n%fa{j} = llvm.add %w0, %j{j} : i32\n"
                   f"%fs{j} = llvm.getelementptr %base[%fa{j}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
                   f"llvm.store %sent, %fs{j} : i32, !llvm.ptr<3>" for j in range(4))
    cp = f"nvvm.cp.async.shared.global %dst, %gsrc, {size}, cache = {cache}, %nn : !llvm.ptr<3>, !llvm.ptr<1>, i32" \
        if src_size else f"nvvm.cp.async.shared.global %dst, %gsrc, {size}, cache = {cache} : !llvm.ptr<3>, !llvm.ptr<1>"
    return f"""
  llvm.mlir.global internal @sm() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<64 x i32>
  llvm.func @k(%src: !llvm.ptr<1>, %n: !llvm.ptr<1>, %before: !llvm.ptr<1>, %after: !llvm.ptr<1>)
      attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %base = llvm.mlir.addressof @sm : !llvm.ptr<3>
    %c4 = llvm.mlir.constant(4 : i32) : i32
    %sent = llvm.mlir.constant({SENTINEL} : i32) : i32
    %w0 = llvm.mul %t, %c4 : i32
    {fill}
    %dst = llvm.getelementptr %base[%w0] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    %gsrc = llvm.getelementptr %src[%w0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %np = llvm.getelementptr %n[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %nn = llvm.load %np : !llvm.ptr<1> -> i32
    {cp}
    nvvm.cp.async.commit.group
    {read("before")}
    {waits}
    {read("after")}
    llvm.return
  }}"""


def run_cp_async(pm, size, cache, n, waits, src=None):
    src = np.arange(1, 65, dtype=np.uint32) * 0x01010101 if src is None else src
    before, after = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    text = gpu_module(cp_async_kernel(size, cache, n is not None, waits))
    launch(parse(pm, text), "k", grid=1, block=16,
           args=[src, np.zeros(16, np.int32) if n is None else n, before, after])
    return src, before.reshape(16, 4), after.reshape(16, 4)


def landed(src: np.ndarray, size: int, n) -> np.ndarray:
    """The slots after the copies landed: ``size`` bytes of which the first n[t] from src, the rest
    zero (PTX: src-size < cp-size zero-fills), the rest of the 16-byte slot still SENTINEL."""
    want = np.full((16, 16), 0x5A, np.uint8)
    s = src.view(np.uint8).reshape(16, 16)
    for t in range(16):
        k = size if n is None else int(n[t])
        want[t, :size] = 0
        want[t, :k] = s[t, :k]
    return want.view(np.uint32).reshape(16, 4)


@pytest.mark.parametrize("size, cache", [(16, "cg"), (16, "ca"), (8, "ca"), (4, "ca")])
def test_cp_async_lands_at_wait_group(pm, size, cache):
    src, before, after = run_cp_async(pm, size, cache, None, "nvvm.cp.async.wait.group 0")
    assert (before == SENTINEL).all()  # committed but not waited for: the slot is untouched
    np.testing.assert_array_equal(after, landed(src, size, None))


@pytest.mark.parametrize("size, cache", [(16, "cg"), (8, "ca")])
def test_cp_async_src_size_zero_fills(pm, size, cache):
    n = (np.arange(16) % (size + 1)).astype(np.int32)  # src-size 0 .. size bytes
    src, before, after = run_cp_async(pm, size, cache, n, "nvvm.cp.async.wait.group 0")
    assert (before == SENTINEL).all()
    np.testing.assert_array_equal(after, landed(src, size, n))


def test_cp_async_without_wait_reads_stale_shared_memory(pm):
    """The kernel reads its slot after the commit and never waits: it sees the old contents both
    times (a missing wait is visible in the emulator, as it may be on the GPU)."""
    _, before, after = run_cp_async(pm, 16, "cg", None, "")
    assert (before == SENTINEL).all() and (after == SENTINEL).all()


def test_cp_async_wait_group_n_keeps_the_newest_n_groups_pending(pm):
    """Two groups (the first copy, then a second copy over the same slot from another source):
    wait.group 1 retires only the older group."""
    text = cp_async_kernel(16, "cg", False, """
    %gsrc2 = llvm.getelementptr %gsrc[64] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
    nvvm.cp.async.shared.global %dst, %gsrc2, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 1
    """ + "\n".join(f"""
    %m{j} = llvm.add %w0, %j{j} : i32
    %ms{j} = llvm.getelementptr %base[%m{j}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    %mv{j} = llvm.load %ms{j} : !llvm.ptr<3> -> i32
    %mo{j} = llvm.getelementptr %n[%m{j}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %mv{j}, %mo{j} : i32, !llvm.ptr<1>""" for j in range(4)) + """
    nvvm.cp.async.wait.group 0""")
    src = np.arange(1, 129, dtype=np.uint32)
    middle, before, after = np.zeros(64, np.int32), np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    launch(parse(pm, gpu_module(text)), "k", grid=1, block=16, args=[src, middle, before, after])
    assert (before == SENTINEL).all()
    np.testing.assert_array_equal(middle.view(np.uint32), src[:64])  # group 1 landed, group 2 pending
    np.testing.assert_array_equal(after, src[64:])                   # then group 2


def test_cp_async_pending_at_exit_lands_at_exit(pm):
    """Thread 0 (warp 0) issues a copy, commits and exits without waiting; thread 32 (warp 1) passes
    a barrier (which exited threads do not hold) and then reads the slot: the copy landed when
    thread 0 exited."""
    text = gpu_module("""
  llvm.mlir.global internal @sm() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x i32>
  llvm.func @k(%src: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %base = llvm.mlir.addressof @sm : !llvm.ptr<3>
    %z = llvm.mlir.constant(0 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %first = llvm.icmp "eq" %t, %z : i32
    %reader = llvm.icmp "eq" %t, %c32 : i32
    llvm.cond_br %first, ^copy, ^other
  ^copy:
    nvvm.cp.async.shared.global %base, %src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.commit.group
    llvm.return
  ^other:
    nvvm.barrier0
    llvm.cond_br %reader, ^read, ^done
  ^read:
    %v = llvm.load %base : !llvm.ptr<3> -> vector<4xi32>
    llvm.store %v, %out : vector<4xi32>, !llvm.ptr<1>
    llvm.br ^done
  ^done:
    llvm.return
  }""")
    src = np.array([11, 22, 33, 44], np.int32)
    out = np.zeros(4, np.int32)
    launch(parse(pm, text), "k", grid=1, block=64, args=[src, out])
    assert out.tolist() == [11, 22, 33, 44]


@pytest.mark.parametrize("shift, n, message", [
    (1, None, r"misaligned global memory access: load from 16 bytes .* not a multiple of 16 bytes"),
    (64, None, r"out-of-bounds global memory access: load from 16 bytes .* argument 0 spans"),
    (64, 0, None),  # src-size 0 reads nothing: any source address is fine
    (60, 4, None),  # 4 bytes of the last 16-byte piece of the source, 12 zero-filled
    (64, 4, r"out-of-bounds global memory access: load from 4 bytes .* \+256 bytes from it"),
    (0, 17, r"cp.async of 16 bytes with src-size 17 > 16"),
])
def test_cp_async_checks_the_source_bytes_it_reads(pm, shift, n, message):
    """Thread 0 copies 16 bytes from word ``shift`` of the 64-word source, ``n`` of them read (None: no
    src-size operand); the other threads copy their own 16 bytes. Checked: the bytes actually read."""
    src = np.arange(1, 65, dtype=np.uint32)
    counts = np.full(16, 16, np.int32) if n is not None else None
    if n is not None:
        counts[0] = n
    text = cp_async_kernel(16, "cg", n is not None, "nvvm.cp.async.wait.group 0").replace(
        "%gsrc = llvm.getelementptr %src[%w0]",
        f"%sh = llvm.mlir.constant({shift} : i32) : i32\n%wz = llvm.icmp \"eq\" %t, %j0 : i32\n"
        f"%w1 = llvm.add %w0, %sh : i32\n%ws = llvm.select %wz, %w1, %w0 : i1, i32\n"
        "%gsrc = llvm.getelementptr %src[%ws]")
    args = [src, counts if counts is not None else np.zeros(16, np.int32), np.zeros(64, np.uint32),
            np.zeros(64, np.uint32)]
    if message:
        with pytest.raises(TilecoreError, match=message):
            launch(parse(pm, gpu_module(text)), "k", grid=1, block=16, args=args)
    else:
        launch(parse(pm, gpu_module(text)), "k", grid=1, block=16, args=args)
        got = args[3].reshape(16, 4)[0]
        want = np.zeros(4, np.uint32)
        want[:n // 4] = src[shift:shift + n // 4]
        np.testing.assert_array_equal(got, want)


def test_cp_async_checks_the_destination(pm):
    text = cp_async_kernel(16, "cg", False, "nvvm.cp.async.wait.group 0").replace(
        "%dst = llvm.getelementptr %base[%w0]", "%w9 = llvm.add %w0, %j2 : i32\n%dst = llvm.getelementptr %base[%w9]")
    with pytest.raises(TilecoreError, match=r"misaligned shared memory access: store to 16 bytes"):
        launch(parse(pm, gpu_module(text)), "k", grid=1, block=16,
               args=[np.zeros(64, np.uint32), np.zeros(16, np.int32), np.zeros(64, np.uint32),
                     np.zeros(64, np.uint32)])


# ---------------------------------------------------------------- mma.sync
def mma_kernel(reg: str, acc: str, n_acc: int, op_text: str, n_a: int = 4) -> str:
    """One warp: lane l loads its A (``n_a`` words), B (n_a / 2) and C (n_acc) registers from a[n_a*l..],
    b[n_a/2*l..], c[n_acc*l..] as ``reg`` / ``acc``, runs ``op_text`` (defines %r from %a0.. %b0..
    %c0..) and stores its D registers over its C words in d."""
    st = f"!llvm.struct<({', '.join([acc] * n_acc)})>"
    lines = []
    for name, count, ty in (("a", n_a, reg), ("b", n_a // 2, reg), ("c", n_acc, acc)):
        lines.append(f"%{name}n = llvm.mlir.constant({count} : i32) : i32\n%{name}base = llvm.mul %t, %{name}n : i32")
        for i in range(count):
            lines.append(f"%{name}i{i} = llvm.mlir.constant({i} : i32) : i32\n"
                         f"%{name}o{i} = llvm.add %{name}base, %{name}i{i} : i32\n"
                         f"%{name}p{i} = llvm.getelementptr %{name}[%{name}o{i}] : (!llvm.ptr<1>, i32) -> "
                         f"!llvm.ptr<1>, i32\n%{name}{i} = llvm.load %{name}p{i} : !llvm.ptr<1> -> {ty}")
    for i in range(n_acc):
        lines.append(f"%d{i} = llvm.extractvalue %r[{i}] : {st}\n"
                     f"%dp{i} = llvm.getelementptr %d[%co{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                     f"llvm.store %d{i}, %dp{i} : {acc}, !llvm.ptr<1>")
    loads, stores = lines[:-n_acc], lines[-n_acc:]
    return f"""
  llvm.func @k(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %d: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    {NL.join(loads)}
    {op_text}
    {NL.join(stores)}
    llvm.return
  }}"""


def fragments(a, b, per: int, pack):
    """A (16 x k) and B (k x 8) registers of mma.m16n8k{k} (PTX ISA: A0 row g, K elements per*t ..;
    A1 row g+8; A2 / A3 k/2 further; B0 rows per*t .. of column g, B1 k/2 further; m16n8k8 with 16-bit
    elements: A0, A1 and B0 only), ``pack`` turning ``per`` consecutive elements into one 32-bit word
    (lowest index in the low bits)."""
    k = a.shape[1]
    n_a = 16 * k // 32 // per
    a_regs, b_regs = np.zeros((32, n_a), np.uint32), np.zeros((32, n_a // 2), np.uint32)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i, (r, col) in enumerate(((g, per * t), (g + 8, per * t), (g, per * t + k // 2),
                                      (g + 8, per * t + k // 2))[:n_a]):
            a_regs[lane, i] = pack(a[r, col:col + per])
        for i, kk in enumerate((per * t, per * t + k // 2)[:n_a // 2]):
            b_regs[lane, i] = pack(b[kk:kk + per, g])
    return a_regs, b_regs


def acc_fragment(c):
    """C / D (16 x 8): lane l = 4g + t holds c0, c1 = (g, 2t), (g, 2t+1) and c2, c3 = (g+8, 2t), (g+8, 2t+1)."""
    out = np.zeros((32, 4), c.dtype)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        out[lane] = [c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1]]
    return out


def pack_f16(vals) -> int:
    h = np.asarray(vals, np.float16).view(np.uint16).astype(np.uint32)
    return int(h[0] | h[1] << 16)


MMA_F16_ACC = ("%r = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1] "
               "{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
               "shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) "
               "-> !llvm.struct<(vector<2xf16>, vector<2xf16>)>")


def run_mma_f16_acc(pm, a, b, c):
    a_regs, b_regs = fragments(a, b, 2, pack_f16)
    c_regs = acc_fragment(c.astype(np.float16)).view(np.uint32)  # (32, 2): c0|c1, c2|c3
    d = np.zeros((32, 2), np.uint32)
    text = gpu_module(mma_kernel("vector<2xf16>", "vector<2xf16>", 2, MMA_F16_ACC))
    launch(parse(pm, text), "k", grid=1, block=32, args=[a_regs, b_regs, c_regs, d])
    return d.view(np.float16)  # (32, 4) in acc_fragment order


def test_mma_sync_m16n8k16_f16_accumulator_exact(pm):
    """Small multiples of 1/4: every product and sum is exact in f16, so any accumulation order and
    precision gives exactly A @ B + C."""
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 9, (16, 16)) / 4
    b = rng.integers(-8, 9, (16, 8)) / 4
    c = rng.integers(-16, 17, (16, 8)) / 2
    d = run_mma_f16_acc(pm, a, b, c)
    np.testing.assert_array_equal(d, acc_fragment((a @ b + c).astype(np.float16)))


def test_mma_sync_m16n8k16_f16_accumulator_rounds_once(pm):
    """Random f16 operands. The emulator rounds the exact sum of the products and C to f32, then to
    f16: within one f16 rounding of the exact value, i.e. half an ulp (2^-11 relative; allowed 2^-10,
    room for the f32 rounding before it) or, near zero, half f16's subnormal step (allowed 2^-24). A GPU
    may differ from the emulator by one f16 ulp where its f32 partial sums (order and precision are the
    implementation's, says the PTX ISA) land on the other side of a rounding boundary."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = rng.standard_normal((16, 8)).astype(np.float16)
    d = run_mma_f16_acc(pm, a, b, c).astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    want = acc_fragment(exact)
    np.testing.assert_allclose(d, want, rtol=2 ** -10, atol=2 ** -24)
    # and the emulator's model exactly: the sum in f64 (fsum there) -> f32 -> f16
    np.testing.assert_array_equal(d, acc_fragment(exact.astype(np.float32).astype(np.float16)).astype(np.float64))


def pack_bf16(vals) -> int:
    h = np.asarray(vals, np.float32).view(np.uint32) >> 16  # exact values here: truncation is rounding
    return int(h[0] | h[1] << 16)


def mma_k8(elem: str, acc: str) -> tuple[str, str, int, str]:
    """(register type, accumulator type, accumulator registers, op text) of nvvm.mma.sync m16n8k8 with
    ``elem`` (f16 / bf16) multiplicands and an ``acc`` (f32 / f16) accumulator."""
    reg = "vector<2xf16>" if elem == "f16" else "i32"
    accty = "vector<2xf16>" if acc == "f16" else "f32"
    n_acc = 2 if acc == "f16" else 4
    ptx = "" if elem == "f16" else \
        ", multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>"
    op = (f"%r = nvvm.mma.sync A[%a0, %a1] B[%b0] C[{', '.join(f'%c{i}' for i in range(n_acc))}] "
          "{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
          f"shape = #nvvm.shape<m = 16, n = 8, k = 8>{ptx}}} : ({reg}, {reg}, {accty}) "
          f"-> !llvm.struct<({', '.join([accty] * n_acc)})>")
    return reg, accty, n_acc, op


@pytest.mark.parametrize("elem, acc", [("f16", "f32"), ("bf16", "f32"), ("f16", "f16")])
def test_mma_sync_m16n8k8_16_bit(pm, elem, acc):
    """m16n8k8 with f16 / bf16 multiplicands (PTX ISA, "Matrix Fragments for mma.m16n8k8": A two
    .f16x2 registers, a0, a1 row g and a2, a3 row g+8, columns 2t, 2t+1; B one register, rows 2t, 2t+1
    of column g); f32 or (f16 only) f16 accumulator. Exact values (multiples of 1/4)."""
    rng = np.random.default_rng(13)
    a = rng.integers(-8, 9, (16, 8)) / 4
    b = rng.integers(-8, 9, (8, 8)) / 4
    c = rng.integers(-16, 17, (16, 8)) / 2
    reg, accty, n_acc, op = mma_k8(elem, acc)
    a_regs, b_regs = fragments(a, b, 2, pack_f16 if elem == "f16" else pack_bf16)
    assert a_regs.shape == (32, 2) and b_regs.shape == (32, 1)
    if acc == "f16":
        c_regs, d = acc_fragment(c.astype(np.float16)).view(np.uint32), np.zeros((32, 2), np.uint32)
    else:
        c_regs, d = acc_fragment(c.astype(np.float32)), np.zeros((32, 4), np.float32)
    launch(parse(pm, gpu_module(mma_kernel(reg, accty, n_acc, op, n_a=2))), "k", grid=1, block=32,
           args=[a_regs, b_regs, c_regs, d])
    got = d.view(np.float16) if acc == "f16" else d
    np.testing.assert_array_equal(got.astype(np.float64), acc_fragment(a @ b + c))


F8 = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}


def f8_codes(values, fmt: str) -> np.ndarray:
    """The codes of exactly representable ``values``."""
    table = {f8_decode(code, F8[fmt]): code for code in range(256) if not np.isnan(f8_decode(code, F8[fmt]))}
    table[0.0] = 0
    return np.vectorize(lambda v: table[float(v)])(values).astype(np.uint32)


def pack_f8(codes) -> int:
    return int(sum(int(v) << (8 * e) for e, v in enumerate(codes)))


MMA_F8_ASM = ('%r = llvm.inline_asm has_side_effects asm_dialect = att '
              '"mma.sync.aligned.m16n8k32.row.col.f32.{a}.{b}.f32 {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, '
              '{{$10,$11,$12,$13}};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f" %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, '
              '%c2, %c3 : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>')


@pytest.mark.parametrize("fa, fb", [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")])
def test_mma_sync_m16n8k32_fp8_inline_asm(pm, fa, fb):
    """m16n8k32 .f32.<e4m3|e5m2>.<e4m3|e5m2>.f32 given as inline PTX (MLIR 22's nvvm.mma.sync rejects
    FP8 multiplicands). Operands: multiples of 1/2 in [-3.5, 3.5] (exact in both formats); every product
    and every partial sum is a multiple of 1/4 below 2^9, exact in any accumulator of 11+ bits, so the
    GPU and the emulator agree exactly whatever the internal accumulation precision."""
    rng = np.random.default_rng(9)
    steps = np.arange(-7, 8) / 2
    a = rng.choice(steps, (16, 32))
    b = rng.choice(steps, (32, 8))
    c = rng.integers(-64, 65, (16, 8)).astype(np.float32)
    a_regs, b_regs = fragments(f8_codes(a, fa), f8_codes(b, fb), 4, pack_f8)
    d = np.zeros((32, 4), np.float32)
    text = gpu_module(mma_kernel("i32", "f32", 4, MMA_F8_ASM.format(a=fa, b=fb)))
    launch(parse(pm, text), "k", grid=1, block=32, args=[a_regs, b_regs, acc_fragment(c), d])
    np.testing.assert_array_equal(d, acc_fragment((a @ b + c).astype(np.float32)))


def test_mma_sync_fp8_inline_asm_large_values(pm):
    """e4m3's largest finite values (+-448) and e5m2's (+-57344): the f32 result of sums of their
    products is exact (products are 12-bit wide, 32 terms)."""
    a = np.full((16, 32), 448.0)
    a[:, 1::2] = -448.0
    a[3, 5] = 448.0  # one row sums to a non-zero value
    b = np.full((32, 8), 57344.0)
    a_regs, b_regs = fragments(f8_codes(a, "e4m3"), f8_codes(b, "e5m2"), 4, pack_f8)
    c = np.zeros((16, 8), np.float32)
    d = np.zeros((32, 4), np.float32)
    text = gpu_module(mma_kernel("i32", "f32", 4, MMA_F8_ASM.format(a="e4m3", b="e5m2")))
    launch(parse(pm, text), "k", grid=1, block=32, args=[a_regs, b_regs, acc_fragment(c), d])
    np.testing.assert_array_equal(d, acc_fragment((a @ b).astype(np.float32)))
    assert d.max() == 2 * 448.0 * 57344.0


def test_other_inline_asm_still_fails_with_its_text(pm):
    text = gpu_module(mma_kernel("i32", "f32", 4, MMA_F8_ASM.format(a="e4m3", b="e4m3").replace(
        "m16n8k32.row.col", "m16n8k16.row.col")))
    with pytest.raises(TilecoreError, match=r"does not support this inline PTX assembly: "
                                            r"'mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.e4m3"):
        launch(parse(pm, text), "k", grid=1, block=32,
               args=[np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32), np.zeros((32, 4), np.float32),
                     np.zeros((32, 4), np.float32)])


def test_mlir_22_rejects_the_fp8_mma_op_form(pm):
    """Why FP8 mma comes as inline PTX: nvvm.mma.sync's verifier refuses e4m3 / e5m2 multiplicands."""
    op = MMA_F8_ASM.split("=", 1)[0] + ("= nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3] "
                                        "{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
                                        "shape = #nvvm.shape<m = 16, n = 8, k = 32>, "
                                        "multiplicandAPtxType = #nvvm.mma_type<e4m3>, "
                                        "multiplicandBPtxType = #nvvm.mma_type<e4m3>} "
                                        ": (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>")
    with pytest.raises(Exception, match="invalid shape or multiplicand type: e4m3"):
        parse(pm, gpu_module(mma_kernel("i32", "f32", 4, op)))


# ---------------------------------------------------------------- mma.sync m8n8k4 .f64
MMA_F64 = """
  llvm.func @k(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %d: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %two = llvm.mlir.constant(2 : i32) : i32
    %one = llvm.mlir.constant(1 : i32) : i32
    %pa = llvm.getelementptr %a[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
    %pb = llvm.getelementptr %b[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
    %i0 = llvm.mul %t, %two : i32
    %i1 = llvm.add %i0, %one : i32
    %pc0 = llvm.getelementptr %c[%i0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
    %pc1 = llvm.getelementptr %c[%i1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
    %a0 = llvm.load %pa : !llvm.ptr<1> -> f64
    %b0 = llvm.load %pb : !llvm.ptr<1> -> f64
    %c0 = llvm.load %pc0 : !llvm.ptr<1> -> f64
    %c1 = llvm.load %pc1 : !llvm.ptr<1> -> f64
    %r = nvvm.mma.sync A[%a0] B[%b0] C[%c0, %c1] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
         shape = #nvvm.shape<m = 8, n = 8, k = 4>} : (f64, f64, f64) -> !llvm.struct<(f64, f64)>
    %d0 = llvm.extractvalue %r[0] : !llvm.struct<(f64, f64)>
    %d1 = llvm.extractvalue %r[1] : !llvm.struct<(f64, f64)>
    %pd0 = llvm.getelementptr %d[%i0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
    %pd1 = llvm.getelementptr %d[%i1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
    llvm.store %d0, %pd0 : f64, !llvm.ptr<1>
    llvm.store %d1, %pd1 : f64, !llvm.ptr<1>
    llvm.return
  }"""


def run_mma_f64(pm, a, b, c):
    """D (8 x 8) of mma.m8n8k4 .f64 on A (8 x 4), B (4 x 8), C (8 x 8) through the lanes' fragments (PTX ISA
    9.7.14.5, "Matrix Fragments for mma.m8n8k4 with .f64 floating point type": lane 4g + t holds A[g][t],
    B[t][g] and C / D [g][2t], [g][2t + 1])."""
    lanes = [(lane >> 2, lane & 3) for lane in range(32)]
    a_regs = np.array([a[g, t] for g, t in lanes])
    b_regs = np.array([b[t, g] for g, t in lanes])
    c_regs = np.array([[c[g, 2 * t], c[g, 2 * t + 1]] for g, t in lanes])
    d = np.zeros((32, 2))
    launch(parse(pm, gpu_module(MMA_F64)), "k", grid=1, block=32, args=[a_regs, b_regs, c_regs, d])
    out = np.zeros((8, 8))
    for lane, (g, t) in enumerate(lanes):
        out[g, 2 * t:2 * t + 2] = d[lane]
    return out


def test_mma_sync_m8n8k4_f64_fragments_and_one_rounding(pm):
    """Random operands: D is A @ B + C with each element the exact sum rounded once (computed here with
    fractions); a sum that cancels (1 + 2^-60 - 1: sequential f64 additions lose the 2^-60) keeps it."""
    from fractions import Fraction

    rng = np.random.default_rng(21)
    a, b, c = rng.standard_normal((8, 4)), rng.standard_normal((4, 8)), rng.standard_normal((8, 8))
    a[0], b[:, 0], c[0, 0] = [1.0, 2.0 ** -30, -1.0, 0.0], [1.0, 2.0 ** -30, 1.0, 5.0], 0.0
    d = run_mma_f64(pm, a, b, c)
    want = np.array([[float(sum((Fraction(a[i, k]) * Fraction(b[k, j]) for k in range(4)), Fraction(c[i, j])))
                      for j in range(8)] for i in range(8)])
    np.testing.assert_array_equal(d, want)
    assert d[0, 0] == 2.0 ** -60


def test_mma_sync_m8n8k4_f64_special_values(pm):
    """IEEE 754 in the products and sums: inf * 0 and inf - inf give NaN, an inf otherwise stays; a finite sum
    beyond the largest double overflows to inf."""
    a, b, c = np.ones((8, 4)), np.ones((4, 8)), np.zeros((8, 8))
    a[0, 0], b[0, 0] = np.inf, 0.0  # D[0, 0]: inf * 0
    a[1, 0] = np.inf  # D[1, j]: inf
    a[2, :2], b[:2, 1] = [np.inf, -np.inf], 1.0  # D[2, 1]: inf - inf
    a[3, :], b[:, 2] = 1e308, 1.0  # D[3, 2]: 4e308
    d = run_mma_f64(pm, a, b, c)
    assert np.isnan(d[0, 0]) and np.isnan(d[2, 1])
    assert d[1, 3] == np.inf and d[3, 2] == np.inf and d[4, 4] == 4.0


# ---------------------------------------------------------------- the same forms through ptxas
def test_ptxas_accepts_ldmatrix_cp_async_and_f16_mma_for_sm_80(pm):
    ptx = "\n".join(ptxas_round_trip(pm, body, "sm_80", "+ptx80") for body in (
        *(ldmatrix_kernel(n, lay) for n in (1, 2, 4) for lay in ("row", "col")),
        cp_async_kernel(16, "cg", True, "nvvm.cp.async.wait.group 0"),
        cp_async_kernel(8, "ca", False, "nvvm.cp.async.wait.group 1"),
        cp_async_kernel(4, "ca", True, ""),
        mma_kernel("vector<2xf16>", "vector<2xf16>", 2, MMA_F16_ACC), tile_kernel(),
        *(mma_kernel(*mma_k8(e, acc), n_a=2) for e, acc in (("f16", "f32"), ("bf16", "f32"), ("f16", "f16"))),
        MMA_F64))
    for needle in ("ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                   "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global [%rd",
                   "cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group",
                   "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
                   "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"):
        assert needle in ptx, needle


def test_ptxas_accepts_fp8_mma_inline_asm_for_the_sm_89_target(pm):
    """FP8 mma needs PTX ISA 8.4 (ptxas: "Feature 'mma with FP8 floating point type' requires PTX ISA
    .version 8.4 or later"): with tilecore's sm_89 target features (+ptx84) ptxas accepts it, with
    +ptx81 not."""
    body = mma_kernel("i32", "f32", 4, MMA_F8_ASM.format(a="e4m3", b="e5m2"))
    ptx = ptxas_round_trip(pm, body, "sm_89")  # the target's own features
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32" in ptx
    with pytest.raises(TilecoreError, match="requires PTX ISA .version 8.4"):
        ptxas_round_trip(pm, body, "sm_89", "+ptx81")


def test_without_bounds_checks_the_same_numbers(pm):
    """check_bounds=False builds the helpers without the address checks: same results."""
    rng = np.random.default_rng(11)
    halves = rng.integers(0, 1 << 16, 256).astype(np.uint16)
    offs = (rng.permutation(32) * 16).astype(np.int32)
    out = np.zeros(128, np.uint32)
    launch(parse(pm, gpu_module(ldmatrix_kernel(4, "col"))), "k", grid=1, block=32,
           args=[halves.view(np.int32), offs, out], check_bounds=False)
    np.testing.assert_array_equal(out.reshape(32, 4), ldmatrix_expected(halves, offs, 4, True))
    src = np.arange(1, 65, dtype=np.uint32) * 3
    n = (np.arange(16) % 17).astype(np.int32)
    before, after = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    launch(parse(pm, gpu_module(cp_async_kernel(16, "cg", True, "nvvm.cp.async.wait.group 0"))), "k", grid=1,
           block=16, args=[src, n, before, after], check_bounds=False)
    assert (before == SENTINEL).all()
    np.testing.assert_array_equal(after.reshape(16, 4), landed(src, 16, n))


def tile_kernel() -> str:
    """One warp copies A (16 x 16 f16, row-major) and B^T (8 x 16 f16: B's columns as rows) into shared
    memory with 16-byte cp.async, waits, passes a barrier, loads the A fragment with ldmatrix.x4 (lane l
    addresses row (l % 8) + 8 ((l / 8) % 2), column 8 (l / 16)) and the B fragment with ldmatrix.x2 (row
    l % 8 of B^T, column 8 ((l / 8) % 2)), runs mma m16n8k16 with an f16 accumulator and stores D."""
    return f"""
  llvm.mlir.global internal @sm() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<192 x i32>
  llvm.func @k(%a: !llvm.ptr<1>, %bt: !llvm.ptr<1>, %c: !llvm.ptr<1>, %d: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %base = llvm.mlir.addressof @sm : !llvm.ptr<3>
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c2 = llvm.mlir.constant(2 : i32) : i32
    %c8 = llvm.mlir.constant(8 : i32) : i32
    %c16 = llvm.mlir.constant(16 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %c512 = llvm.mlir.constant(512 : i32) : i32
    %off = llvm.mul %t, %c16 : i32
    %da = llvm.getelementptr %base[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %sa = llvm.getelementptr %a[%off] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i8
    nvvm.cp.async.shared.global %da, %sa, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    %lt = llvm.icmp "ult" %t, %c16 : i32
    llvm.cond_br %lt, ^copy_b, ^wait
  ^copy_b:
    %offb = llvm.add %off, %c512 : i32
    %db = llvm.getelementptr %base[%offb] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %sb = llvm.getelementptr %bt[%off] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i8
    nvvm.cp.async.shared.global %db, %sb, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    llvm.br ^wait
  ^wait:
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 0
    nvvm.barrier0
    %l8 = llvm.urem %t, %c8 : i32
    %q = llvm.udiv %t, %c8 : i32
    %q2 = llvm.urem %q, %c2 : i32
    %h = llvm.udiv %t, %c16 : i32
    %q28 = llvm.mul %q2, %c8 : i32
    %rowa = llvm.add %l8, %q28 : i32
    %rowab = llvm.mul %rowa, %c32 : i32
    %colab = llvm.mul %h, %c16 : i32
    %aoff = llvm.add %rowab, %colab : i32
    %pa = llvm.getelementptr %base[%aoff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %ra = nvvm.ldmatrix %pa {{{LDM_ATTRS}, layout = #nvvm.mma_layout<row>, num = 4 : i32}}
        : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
    %rowbb = llvm.mul %l8, %c32 : i32
    %colbb = llvm.mul %q2, %c16 : i32
    %boff0 = llvm.add %rowbb, %colbb : i32
    %boff = llvm.add %boff0, %c512 : i32
    %pb = llvm.getelementptr %base[%boff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %rb = nvvm.ldmatrix %pb {{{LDM_ATTRS}, layout = #nvvm.mma_layout<row>, num = 2 : i32}}
        : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
    {NL.join(f"%ai{i} = llvm.extractvalue %ra[{i}] : !llvm.struct<(i32, i32, i32, i32)>{NL}"
             f"%a{i} = llvm.bitcast %ai{i} : i32 to vector<2xf16>" for i in range(4))}
    {NL.join(f"%bi{i} = llvm.extractvalue %rb[{i}] : !llvm.struct<(i32, i32)>{NL}"
             f"%b{i} = llvm.bitcast %bi{i} : i32 to vector<2xf16>" for i in range(2))}
    %cb = llvm.mul %t, %c2 : i32
    %cp0 = llvm.getelementptr %c[%cb] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %cb1 = llvm.add %cb, %c1 : i32
    %cp1 = llvm.getelementptr %c[%cb1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %c0 = llvm.load %cp0 : !llvm.ptr<1> -> vector<2xf16>
    %c1v = llvm.load %cp1 : !llvm.ptr<1> -> vector<2xf16>
    {MMA_F16_ACC.replace("C[%c0, %c1]", "C[%c0, %c1v]")}
    %d0 = llvm.extractvalue %r[0] : !llvm.struct<(vector<2xf16>, vector<2xf16>)>
    %d1 = llvm.extractvalue %r[1] : !llvm.struct<(vector<2xf16>, vector<2xf16>)>
    %dp0 = llvm.getelementptr %d[%cb] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %dp1 = llvm.getelementptr %d[%cb1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %d0, %dp0 : vector<2xf16>, !llvm.ptr<1>
    llvm.store %d1, %dp1 : vector<2xf16>, !llvm.ptr<1>
    llvm.return
  }}"""


def test_cp_async_ldmatrix_mma_tile(pm):
    """The three together, as a GEMM main loop uses them (:func:`tile_kernel`): D = A @ B + C (small
    multiples of 1/4: exact)."""
    text = gpu_module(tile_kernel())
    rng = np.random.default_rng(12)
    a = (rng.integers(-8, 9, (16, 16)) / 4).astype(np.float16)
    b = (rng.integers(-8, 9, (16, 8)) / 4).astype(np.float16)
    c = (rng.integers(-16, 17, (16, 8)) / 2).astype(np.float16)
    d = np.zeros((32, 4), np.float16)
    launch(parse(pm, text), "k", grid=1, block=32, args=[a, np.ascontiguousarray(b.T), acc_fragment(c), d])
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_array_equal(d, acc_fragment(want.astype(np.float16)))
