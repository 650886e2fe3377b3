"""The sm100 plugin's emulator models: tensor memory and the tcgen05 ops (``tilecore_sm100.emulate_tcgen05``).

Each kernel is hand-written llvm + nvvm MLIR (the forms of ``plugins/sm100/TCGEN05-FORMS.md``) run in the CPU
emulator; expected values come from the PTX ISA text ("Tensor Memory", "tcgen05.alloc", "Instruction
descriptor" Table 42, "Shared memory descriptor", the canonical shared-memory layouts, "Data path layout",
"Matrix fragments for shape .32x32b / .16x64b / .16x128b / .16x256b", "tcgen05.commit"), computed here
in numpy. The same forms go through MLIR's NVPTX back end and ptxas for sm_100a.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from support import gpu_module, has_plugin, ptxas_round_trip
from support import parse_module as parse

from tilecore.emulate import launch
from tilecore.errors import TilecoreError

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

NL = "\n"
SMEM = 16384
KIND_TYPES = {"f16": ("f16", "bf16"), "tf32": ("tf32",), "i8": ("s8", "u8"), "f8f6f4": ("e4m3", "e5m2")}
# Table 42 codes
ATYPE = {"f16": 0, "bf16": 1, "tf32": 2, "e4m3": 0, "e5m2": 1, "u8": 0, "s8": 1}
DTYPE = {"f32": 1, "s32": 2}
SWIZZLE_CODE = {0: 0, 128: 2, 64: 4, 32: 6}  # "Shared memory descriptor" bits 61-63


@pytest.fixture(scope="module")
def pm():
    from tilecore.plugins import get_plugin_manager

    return get_plugin_manager()


def idesc(a: str, b: str, d: str, m: int, n: int, trans_a=0, trans_b=0, neg_a=0, neg_b=0, sat=0) -> int:
    """The instruction descriptor (PTX ISA "Instruction descriptor", Table 42)."""
    return (sat << 3 | DTYPE[d] << 4 | ATYPE[a] << 7 | ATYPE[b] << 10 | neg_a << 13 | neg_b << 14 | trans_a << 15
            | trans_b << 16 | (n >> 3) << 17 | (m >> 4) << 24)


def desc_high(lbo: int, sbo: int, swz: int) -> int:
    """The shared-memory descriptor without its start address: LBO >> 4 at bit 16, SBO >> 4 at bit 32, the
    fixed 0b001 at bit 46, the swizzle mode at bit 61."""
    return (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | SWIZZLE_CODE[swz] << 61


# The shared-memory image of an operand from the ISA's canonical layouts (atoms of 8 rows x S bytes, S = 16
# without swizzle; K-major: a row per M / N index, K along it; MN-major: a row per K index, M / N along it;
# the 16-byte units of row r of an atom sit at unit u XOR ((r S / 128) mod (S / 16))) and the strides:
# K-major: SBO between 8-row groups, LBO (no swizzle only) between 16-byte K chunks; MN-major: no swizzle: SBO
# between 16-byte MN groups, LBO between groups of 8 K; swizzled: LBO between MN atoms, SBO between 8-K groups.
def operand_image(mat: np.ndarray, k_major: bool, swz: int, lbo: int, sbo: int, size: int = SMEM) -> np.ndarray:
    esize = mat.dtype.itemsize
    raw = mat.view(np.uint8).reshape(mat.shape[0], mat.shape[1], esize)
    img = np.zeros(size, np.uint8)
    row_bytes = swz or 16
    units, per_row = row_bytes // 16, row_bytes // esize
    for mn in range(mat.shape[0]):
        for k in range(mat.shape[1]):
            if k_major:
                r = mn % 8
                base = (mn // 8) * sbo + (0 if swz else (k // per_row) * lbo)
                pos = k if swz else k % per_row
            else:
                r = k % 8
                base = (mn // per_row) * (lbo if swz else sbo) + (k // 8) * (sbo if swz else lbo)
                pos = mn % per_row
            unit, byte = divmod(pos * esize, 16)
            if swz:
                unit ^= (r * swz // 128) % units
            off = base + r * row_bytes + unit * 16 + byte
            img[off:off + esize] = raw[mn, k]
    return img


def layout_params(rows: int, k_major: bool, swz: int, esize: int) -> tuple[int, int]:
    """(LBO, SBO) of a compact canonical layout of rows x 32 bytes of K."""
    if k_major:
        return (128, 256) if not swz else (16, 8 * swz)  # swizzled K-major: LBO unused
    t = 16 // esize  # MN elements per 16-byte unit
    if not swz:
        return (rows // t) * 128, 128
    atoms = max(rows // (swz // esize), 1)
    return 8 * swz, atoms * 8 * swz


def copy_loop(name: str, src: str, dst: str, words: int) -> str:
    """Threads copy ``words`` words src (global) -> dst (shared), thread t the words t, t + 128, ..."""
    return f"""
    %{name}nw = llvm.mlir.constant({words} : i32) : i32
    llvm.br ^{name}h(%t : i32)
  ^{name}h(%{name}i: i32):
    %{name}c = llvm.icmp "ult" %{name}i, %{name}nw : i32
    llvm.cond_br %{name}c, ^{name}b, ^{name}x
  ^{name}b:
    %{name}s = llvm.getelementptr {src}[%{name}i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %{name}v = llvm.load %{name}s : !llvm.ptr<1> -> i32
    %{name}d = llvm.getelementptr {dst}[%{name}i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
    llvm.store %{name}v, %{name}d : i32, !llvm.ptr<3>
    %{name}n = llvm.add %{name}i, %c128 : i32
    llvm.br ^{name}h(%{name}n : i32)
  ^{name}x:"""


def warp0(name: str, body: str) -> str:
    """``body`` run by warp 0 only."""
    return f"""
    llvm.cond_br %isw0, ^{name}, ^{name}_end
  ^{name}:
    {body}
    llvm.br ^{name}_end
  ^{name}_end:"""


def thread0(name: str, body: str) -> str:
    return f"""
    llvm.cond_br %ist0, ^{name}, ^{name}_end
  ^{name}:
    {body}
    llvm.br ^{name}_end
  ^{name}_end:"""


def chunk(left: int) -> int:
    """The largest .num (a power of 2, at most 128) for ``left`` columns."""
    return min(128, 1 << (left.bit_length() - 1))


def ld_store(n: int, out: str = "%out") -> str:
    """Every thread loads its lane's n columns (tcgen05.ld.32x32b, .x128 at most at a time) from column 0 of
    its warp's sub-partition and stores them to out[(32 w + lane) n ..]."""
    parts, c = [], 0
    while c < n:
        cnt = chunk(n - c)
        ty = "i32" if cnt == 1 else f"vector<{cnt}xi32>"
        parts.append(f"""
    %lc{c} = llvm.mlir.constant({c} : i32) : i32
    %la{c} = llvm.add %twarp, %lc{c} : i32
    %lp{c} = llvm.inttoptr %la{c} : i32 to !llvm.ptr<6>
    %lv{c} = nvvm.tcgen05.ld %lp{c} {{shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>}} : {ty}
    %lo{c} = llvm.add %rowoff, %lc{c} : i32
    %lq{c} = llvm.getelementptr {out}[%lo{c}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %lv{c}, %lq{c} {{alignment = 4 : i64}} : {ty}, !llvm.ptr<1>""")
        c += cnt
    return "".join(parts) + "\n    nvvm.tcgen05.wait <load>"


def st_from(n: int, src: str = "%gc") -> str:
    """Every thread stores src[(32 w + lane) n ..] into its lane's n columns (tcgen05.st.32x32b)."""
    parts, c = [], 0
    while c < n:
        cnt = chunk(n - c)
        ty = "i32" if cnt == 1 else f"vector<{cnt}xi32>"
        parts.append(f"""
    %sc{c} = llvm.mlir.constant({c} : i32) : i32
    %so{c} = llvm.add %rowoff, %sc{c} : i32
    %sq{c} = llvm.getelementptr {src}[%so{c}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %sv{c} = llvm.load %sq{c} {{alignment = 4 : i64}} : !llvm.ptr<1> -> {ty}
    %sa{c} = llvm.add %twarp, %sc{c} : i32
    %sp{c} = llvm.inttoptr %sa{c} : i32 to !llvm.ptr<6>
    nvvm.tcgen05.st %sp{c}, %sv{c} {{shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>}} : {ty}""")
        c += cnt
    return "".join(parts) + "\n    nvvm.tcgen05.wait <store>"


PRELUDE = """
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c5 = llvm.mlir.constant(5 : i32) : i32
    %c16 = llvm.mlir.constant(16 : i32) : i32
    %c31 = llvm.mlir.constant(31 : i32) : i32
    %c128 = llvm.mlir.constant(128 : i32) : i32
    %ticks = llvm.mlir.constant(1000 : i32) : i32
    %w = llvm.lshr %t, %c5 : i32
    %lane = llvm.and %t, %c31 : i32
    %isw0 = llvm.icmp "eq" %w, %c0 : i32
    %ist0 = llvm.icmp "eq" %t, %c0 : i32
    %slot = llvm.mlir.addressof @slot : !llvm.ptr<3>
    %bar = llvm.mlir.addressof @bar : !llvm.ptr<3>
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %w32 = llvm.mul %w, %c32 : i32
    %wl = llvm.add %w32, %lane : i32"""

GLOBALS = """
  llvm.mlir.global internal @slot() {addr_space = 3 : i32, alignment = 4 : i64} : i32
  llvm.mlir.global internal @bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64"""


def tmem_setup(ncols: int) -> str:
    """Warp 0 allocates ``ncols`` columns; thread 0 inits the mbarrier (count 1); everybody reads the address;
    %twarp = the address of lane 32 w (the warp's sub-partition), %rowoff = the thread's row offset."""
    return f"""
    %ncols = llvm.mlir.constant({ncols} : i32) : i32
    {warp0("alloc", "nvvm.tcgen05.alloc %slot, %ncols : !llvm.ptr<3>, i32")}
    {thread0("init", "nvvm.mbarrier.init %bar, %c1 : !llvm.ptr<3>, i32")}
    nvvm.tcgen05.fence <before>
    nvvm.barrier0
    nvvm.tcgen05.fence <after>
    %ta = llvm.load %slot : !llvm.ptr<3> -> i32
    %tp = llvm.inttoptr %ta : i32 to !llvm.ptr<6>
    %wsh = llvm.shl %w32, %c16 : i32
    %twarp = llvm.add %ta, %wsh : i32
    %ncol_row = llvm.mlir.constant({{n}} : i32) : i32
    %rowoff = llvm.mul %wl, %ncol_row : i32"""


def tmem_teardown() -> str:
    return f"""
    nvvm.tcgen05.fence <before>
    nvvm.barrier0
    {warp0("dealloc", "nvvm.tcgen05.dealloc %tp, %ncols : !llvm.ptr<6>, i32")}"""


def mma_kernel(n: int, kind: str, steps: int = 1, k_step: int = 32, wait: bool | str = True, ncols: int = 256,
               more_issue: str = "", more_globals: str = "", block_scale: str = "", st_cols: int = 0) -> str:
    """128 threads: A's image into @sa, B's into dynamic shared memory; C (128 x n words, a row per lane) into
    tensor memory with tcgen05.st; thread 0 issues ``steps`` tcgen05.mma (step s adds s * k_step bytes to both
    start addresses; the first accumulates when %acc != 0, the others always) and a tcgen05.commit; everybody
    waits on the mbarrier (unless not ``wait``), loads D with tcgen05.ld and stores it to out."""
    mmas = []
    for s in range(steps):
        en = "%en0" if s == 0 else "%true"
        mmas.append(f"""
    %ks{s} = llvm.mlir.constant({s * k_step} : i64) : i64
    %as{s} = llvm.add %abase, %ks{s} : i64
    %bs{s} = llvm.add %bbase, %ks{s} : i64
    %a4{s} = llvm.lshr %as{s}, %c4 : i64
    %b4{s} = llvm.lshr %bs{s}, %c4 : i64
    %am{s} = llvm.and %a4{s}, %m14 : i64
    %bm{s} = llvm.and %b4{s}, %m14 : i64
    %da{s} = llvm.or %am{s}, %hi_a : i64
    %db{s} = llvm.or %bm{s}, %hi_b : i64
    {mma_line(kind, f"%da{s}", f"%db{s}", en, block_scale, n)}""")
    issue = "\n".join(mmas) + "\n    nvvm.tcgen05.commit %bar : !llvm.ptr<3>" + more_issue
    waits = wait if isinstance(wait, str) else \
        "nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32" if wait else ""
    return f"""
  llvm.mlir.global internal @sa() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<{SMEM} x i8>
  llvm.mlir.global external @dyn() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>
  {GLOBALS}
  {more_globals}
  llvm.func @k(%ga: !llvm.ptr<1>, %gb: !llvm.ptr<1>, %gc: !llvm.ptr<1>, %out: !llvm.ptr<1>, %hi_a: i64, %hi_b: i64,
               %idesc: i32, %acc: i32) attributes {{nvvm.kernel}} {{
    {PRELUDE}
    %sa = llvm.mlir.addressof @sa : !llvm.ptr<3>
    %sb = llvm.mlir.addressof @dyn : !llvm.ptr<3>
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %m14 = llvm.mlir.constant(16383 : i64) : i64
    %true = llvm.mlir.constant(true) : i1
    %en0 = llvm.icmp "ne" %acc, %c0 : i32
    {copy_loop("ca", "%ga", "%sa", SMEM // 4)}
    {copy_loop("cb", "%gb", "%sb", SMEM // 4)}
    {tmem_setup(ncols).replace("{n}", str(st_cols or n))}
    {st_from(st_cols or n)}
    nvvm.tcgen05.fence <before>
    nvvm.barrier0
    nvvm.tcgen05.fence <after>
    %abase = llvm.ptrtoint %sa : !llvm.ptr<3> to i64
    %bbase = llvm.ptrtoint %sb : !llvm.ptr<3> to i64
    {thread0("issue", issue)}
    {waits}
    nvvm.tcgen05.fence <after>
    {ld_store(n)}
    {tmem_teardown()}
    llvm.return
  }}"""


def mma_line(kind: str, da: str, db: str, en: str, block_scale: str, n: int) -> str:
    """The tcgen05.mma (block_scale: the kind attribute text of tcgen05.mma.block_scale, whose scale factors
    are at columns n (A) and n + 4 (B))."""
    if not block_scale:
        return (f"nvvm.tcgen05.mma %tp, {da}, {db}, %idesc, {en} {{ctaGroup = #nvvm.cta_group<cta_1>, kind = "
                f"#nvvm.tcgen05_mma_kind<{kind}>}} : (!llvm.ptr<6>, i64, i64, i32, i1)")
    u = da[1:]
    return f"""%sfc{u} = llvm.mlir.constant({n} : i32) : i32
    %c4i{u} = llvm.mlir.constant(4 : i32) : i32
    %sfa{u} = llvm.add %ta, %sfc{u} : i32
    %sfap{u} = llvm.inttoptr %sfa{u} : i32 to !llvm.ptr<6>
    %sfb{u} = llvm.add %sfa{u}, %c4i{u} : i32
    %sfbp{u} = llvm.inttoptr %sfb{u} : i32 to !llvm.ptr<6>
    nvvm.tcgen05.mma.block_scale %tp, {da}, {db}, %idesc, {en}, %sfap{u}, %sfbp{u} {{{block_scale}}} : (!llvm.ptr<6>, i64, i64, i32, i1, !llvm.ptr<6>, !llvm.ptr<6>)"""


def run_mma(pm, a, b, c, *, kind, ta, tb, m=128, swz=128, k_major=(True, True), acc=True, steps=1, k_step=32,
            wait=True, sat=0, neg=(0, 0), d="f32"):
    """D = A B (+ C) through the kernel: A (m x K), B (K x n) numpy arrays of the element storage type, C
    (m x n, f32 / i32). Returns D as the lanes hold it: (m x n)."""
    n = b.shape[1]
    esize = a.dtype.itemsize
    lbo_a, sbo_a = layout_params(m, k_major[0], swz, esize)
    lbo_b, sbo_b = layout_params(n, k_major[1], swz, esize)
    img_a = operand_image(a, k_major[0], swz, lbo_a, sbo_a)
    img_b = operand_image(np.ascontiguousarray(b.T), k_major[1], swz, lbo_b, sbo_b)
    lanes = np.arange(m) if m == 128 else 32 * (np.arange(64) // 16) + np.arange(64) % 16
    cmat = np.zeros((128, n), np.uint32)
    cmat[lanes] = c.view(np.uint32)
    out = np.zeros((128, n), np.uint32)
    desc = idesc(ta, tb, d, m, n, trans_a=int(not k_major[0]), trans_b=int(not k_major[1]), neg_a=neg[0],
                 neg_b=neg[1], sat=sat)
    text = gpu_module(mma_kernel(n, kind, steps, k_step, wait))
    launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM,
           args=[img_a.view(np.int32), img_b.view(np.int32), cmat.view(np.int32), out.view(np.int32),
                 np.int64(np.uint64(desc_high(lbo_a, sbo_a, swz)).view(np.int64)),
                 np.int64(np.uint64(desc_high(lbo_b, sbo_b, swz)).view(np.int64)), np.int32(desc), np.int32(acc)])
    return out[lanes].view(c.dtype)


def quarters(rng, shape, lo=-8, hi=8) -> np.ndarray:
    return (rng.integers(lo, hi, shape) / 4).astype(np.float64)


def as_type(x: np.ndarray, t: str) -> np.ndarray:
    """Storage of the values (exactly representable) as element type t."""
    if t == "f16":
        return x.astype(np.float16)
    if t == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if t == "tf32":
        return x.astype(np.float32)
    raise ValueError(t)


# ---------------------------------------------------------------- MMA numbers
@pytest.mark.parametrize("swz", [0, 32, 64, 128])
@pytest.mark.parametrize("k_major", [(True, True), (False, False), (True, False)])
def test_mma_f16_layouts_and_swizzles(pm, swz, k_major):
    """kind::f16, M = 128, N = 64: D = A B + C exactly for each swizzle mode and K- / MN-major operands."""
    rng = np.random.default_rng(swz + 7 * k_major[0] + 3 * k_major[1])
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, 64))
    c = quarters(rng, (128, 64)).astype(np.float32)
    got = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), c, kind="f16", ta="f16", tb="f16", swz=swz,
                  k_major=k_major)
    np.testing.assert_array_equal(got, (a @ b + c).astype(np.float32))


@pytest.mark.parametrize("t", ["bf16", "tf32"])
def test_mma_bf16_and_tf32(pm, t):
    kind = "f16" if t == "bf16" else "tf32"
    k = 16 if t == "bf16" else 8
    rng = np.random.default_rng(1)
    a, b = quarters(rng, (128, k)), quarters(rng, (k, 32))
    c = quarters(rng, (128, 32)).astype(np.float32)
    for swz, km in ((128, (True, True)), (32, (t == "tf32", True))):
        got = run_mma(pm, as_type(a, t), as_type(b, t), c, kind=kind, ta=t, tb=t, swz=swz, k_major=km)
        np.testing.assert_array_equal(got, (a @ b + c).astype(np.float32))


@pytest.mark.parametrize("swz", [0, 32, 64, 128])
@pytest.mark.parametrize("k_major", [(True, True), (False, False)])
@pytest.mark.parametrize("t", ["bf16", "tf32", "s8", "e5m2"])
def test_mma_each_kind_layouts_and_swizzles(pm, t, k_major, swz):
    """kinds f16 (bf16), tf32, i8, f8f6f4 for each swizzle mode, both operands K-major or both MN-major (tf32:
    K-major only; PTX ISA Table 52 allows MN-major tf32 only with the 128B swizzle with 32-byte atoms, which
    the emulator does not model: that fails)."""
    rng = np.random.default_rng(20 + swz)
    m, n = 128, 32
    if t in ("bf16", "tf32"):
        k = 16 if t == "bf16" else 8
        a, b = quarters(rng, (m, k)), quarters(rng, (k, n))
        c = quarters(rng, (m, n)).astype(np.float32)
        sa, sb, want = as_type(a, t), as_type(b, t), (a @ b + c).astype(np.float32)
        kind, ta, tb, d = ("f16" if t == "bf16" else "tf32"), t, t, "f32"
    elif t == "s8":
        a, b = rng.integers(-128, 128, (m, 32)), rng.integers(0, 256, (32, n))
        c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
        sa, sb, want = a.astype(np.int8), b.astype(np.uint8), a @ b + c
        kind, ta, tb, d = "i8", "s8", "u8", "s32"
    else:
        sa, va = f8_codes("e5m2", rng, (m, 32))
        sb, vb = f8_codes("e4m3", rng, (32, n))
        c = quarters(rng, (m, n)).astype(np.float32)
        want = (va @ vb + c).astype(np.float32)
        kind, ta, tb, d = "f8f6f4", "e5m2", "e4m3", "f32"
    if t == "tf32" and not k_major[0]:
        with pytest.raises(TilecoreError, match="MN-major.* tf32 operands need the 128B swizzle with 32-byte atoms"):
            run_mma(pm, sa, sb, c, kind=kind, ta=ta, tb=tb, d=d, swz=swz, k_major=k_major)
        return
    got = run_mma(pm, sa, sb, c, kind=kind, ta=ta, tb=tb, d=d, swz=swz, k_major=k_major)
    np.testing.assert_array_equal(got, want)


def test_mma_tf32_ignores_the_low_mantissa_bits(pm):
    """tf32 operands are f32 words whose low 13 bits the tensor core ignores."""
    rng = np.random.default_rng(2)
    a, b = quarters(rng, (128, 8)), quarters(rng, (8, 16))
    noisy = (a.astype(np.float32).view(np.uint32) | 0x1FFF).view(np.float32)
    got = run_mma(pm, noisy, b.astype(np.float32), np.zeros((128, 16), np.float32), kind="tf32", ta="tf32",
                  tb="tf32", acc=False)
    np.testing.assert_array_equal(got, (a @ b).astype(np.float32))


@pytest.mark.parametrize("ta, tb", [("s8", "s8"), ("u8", "s8"), ("u8", "u8")])
@pytest.mark.parametrize("swz", [0, 64])
def test_mma_i8(pm, ta, tb, swz):
    rng = np.random.default_rng(3)
    lo = {"s8": -128, "u8": 0}
    hi = {"s8": 128, "u8": 256}
    a = rng.integers(lo[ta], hi[ta], (128, 32))
    b = rng.integers(lo[tb], hi[tb], (32, 48))
    c = rng.integers(-1000, 1000, (128, 48)).astype(np.int32)
    st = {"s8": np.int8, "u8": np.uint8}
    for km in ((True, True), (False, False)):
        got = run_mma(pm, a.astype(st[ta]), b.astype(st[tb]), c, kind="i8", ta=ta, tb=tb, d="s32", swz=swz,
                      k_major=km)
        np.testing.assert_array_equal(got, a @ b + c)


def test_mma_i8_saturates_or_wraps(pm):
    a = np.full((128, 32), 127, np.int8)
    b = np.full((32, 16), 127, np.int8)
    big = np.full((128, 16), 2**31 - 1000, np.int32)
    exact = 32 * 127 * 127 + (2**31 - 1000)
    wrapped = run_mma(pm, a, b, big, kind="i8", ta="s8", tb="s8", d="s32")
    np.testing.assert_array_equal(wrapped, np.full((128, 16), exact - 2**32, np.int64))
    sat = run_mma(pm, a, b, big, kind="i8", ta="s8", tb="s8", d="s32", sat=1)
    np.testing.assert_array_equal(sat, np.full((128, 16), 2**31 - 1))


def f8_codes(t: str, rng, shape) -> tuple[np.ndarray, np.ndarray]:
    """Random finite e4m3 / e5m2 codes of small magnitude and their values (from the format's definition:
    e4m3 bias 7, e5m2 bias 15, subnormals with exponent field 0)."""
    ebits, bias = (4, 7) if t == "e4m3" else (5, 15)
    mbits = 7 - ebits
    e = rng.integers(bias - 3, bias + 3, shape)
    e = np.where(rng.random(shape) < 0.1, 0, e)  # some subnormals (and zeros)
    mant = rng.integers(0, 1 << mbits, shape)
    codes = (rng.integers(0, 2, shape) << 7 | e << mbits | mant).astype(np.uint8)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    val = np.where(e == 0, mant / (1 << mbits) * 2.0 ** (1 - bias), (1 + mant / (1 << mbits)) * 2.0 ** (e - bias))
    return codes, sign * val


@pytest.mark.parametrize("ta, tb", [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e5m2", "e5m2")])
def test_mma_f8(pm, ta, tb):
    rng = np.random.default_rng(4)
    ca, va = f8_codes(ta, rng, (128, 32))
    cb, vb = f8_codes(tb, rng, (32, 32))
    c = quarters(rng, (128, 32)).astype(np.float32)
    for swz, km in ((128, (True, True)), (0, (False, True))):
        got = run_mma(pm, ca, cb, c, kind="f8f6f4", ta=ta, tb=tb, swz=swz, k_major=km)
        np.testing.assert_array_equal(got, (va @ vb + c).astype(np.float32))


def test_mma_m64_negate_and_no_accumulate(pm):
    """M = 64 (rows in lanes 0-15 of each sub-partition), N = 8, negated A, enable-input-d false."""
    rng = np.random.default_rng(5)
    a, b = quarters(rng, (64, 16)), quarters(rng, (16, 8))
    c = quarters(rng, (64, 8)).astype(np.float32)
    got = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), c, kind="f16", ta="f16", tb="f16", m=64, neg=(1, 0),
                  acc=False)
    np.testing.assert_array_equal(got, (-a @ b).astype(np.float32))


@pytest.mark.parametrize("n", [8, 24])
def test_mma_m128_with_n_a_multiple_of_8(pm, n):
    """M = 128 with N = 8 / 24 (PTX ISA 9.7.16.2.1, Table 39, cta_group::1 dense .kind::f16: N = 8, 16, 24 ... 256 for
    M = 64 and 128; tileiras' SASS has M 128 N 8, instruction descriptor 0x08030000), B K-major."""
    rng = np.random.default_rng(9)
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, n))
    c = quarters(rng, (128, n)).astype(np.float32)
    got = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), c, kind="f16", ta="f16", tb="f16", swz=32)
    np.testing.assert_array_equal(got, (a @ b + c).astype(np.float32))


def test_mma_k_steps_accumulate_inside_a_128b_atom(pm):
    """Four MMAs along K (start address + 32 bytes each inside the 128B-swizzled atom), the first one with
    enable-input-d false: D = A B over K = 64."""
    rng = np.random.default_rng(6)
    a, b = quarters(rng, (128, 64)), quarters(rng, (64, 128))
    got = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), np.ones((128, 128), np.float32), kind="f16",
                  ta="f16", tb="f16", steps=4, acc=False)
    np.testing.assert_array_equal(got, (a @ b).astype(np.float32))


def test_mma_n256(pm):
    rng = np.random.default_rng(8)
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, 256))
    c = quarters(rng, (128, 256)).astype(np.float32)
    got = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), c, kind="f16", ta="f16", tb="f16", swz=32)
    np.testing.assert_array_equal(got, (a @ b + c).astype(np.float32))


def two_commit_kernel() -> str:
    """Thread 0: MMA 1 (A, B at offset 0, enable-input-d false) and a commit on @bar, MMA 2 (the images at
    +8192, accumulating) and a commit on @bar2; everybody waits on @bar2 only, then on @bar (already complete)."""
    second = """
    %bar2 = llvm.mlir.addressof @bar2 : !llvm.ptr<3>
    nvvm.mbarrier.init %bar2, %c1 : !llvm.ptr<3>, i32
    %k2 = llvm.mlir.constant(8192 : i64) : i64
    %a2 = llvm.add %abase, %k2 : i64
    %b2 = llvm.add %bbase, %k2 : i64
    %a24 = llvm.lshr %a2, %c4 : i64
    %b24 = llvm.lshr %b2, %c4 : i64
    %a2m = llvm.and %a24, %m14 : i64
    %b2m = llvm.and %b24, %m14 : i64
    %da2 = llvm.or %a2m, %hi_a : i64
    %db2 = llvm.or %b2m, %hi_b : i64
    nvvm.tcgen05.mma %tp, %da2, %db2, %idesc, %true {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>} : (!llvm.ptr<6>, i64, i64, i32, i1)
    nvvm.tcgen05.commit %bar2 : !llvm.ptr<3>"""
    waits = """%bar2w = llvm.mlir.addressof @bar2 : !llvm.ptr<3>
    nvvm.barrier0
    nvvm.mbarrier.try_wait.parity %bar2w, %c0, %ticks : !llvm.ptr<3>, i32, i32
    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32"""
    return mma_kernel(32, "f16", wait=waits, more_issue=second, more_globals="llvm.mlir.global internal @bar2() "
                      "{addr_space = 3 : i32, alignment = 8 : i64} : i64")


def test_commits_complete_in_issue_order(pm):
    """Waiting on the second commit's mbarrier completes the first commit's MMA too (a thread's tcgen05 ops run
    in issue order): D = A1 B1 + A2 B2; the first mbarrier's phase is complete as well."""
    rng = np.random.default_rng(10)
    a1, b1, a2, b2 = (quarters(rng, (128, 16)), quarters(rng, (16, 32)), quarters(rng, (128, 16)),
                      quarters(rng, (16, 32)))
    lbo_a, sbo_a = layout_params(128, True, 32, 2)
    lbo_b, sbo_b = layout_params(32, True, 32, 2)
    img_a = operand_image(as_type(a1, "f16"), True, 32, lbo_a, sbo_a)
    img_a[8192:] = operand_image(as_type(a2, "f16"), True, 32, lbo_a, sbo_a)[:8192]
    img_b = operand_image(as_type(b1.T.copy(), "f16"), True, 32, lbo_b, sbo_b)
    img_b[8192:] = operand_image(as_type(b2.T.copy(), "f16"), True, 32, lbo_b, sbo_b)[:8192]
    out = np.zeros((128, 32), np.uint32)
    text = two_commit_kernel()
    assert "%bar2w" in text
    launch(parse(pm, gpu_module(text)), "k", grid=1, block=128, shared_bytes=SMEM,
           args=[img_a.view(np.int32), img_b.view(np.int32), np.zeros((128, 32), np.int32), out.view(np.int32),
                 np.int64(np.uint64(desc_high(lbo_a, sbo_a, 32)).view(np.int64)),
                 np.int64(np.uint64(desc_high(lbo_b, sbo_b, 32)).view(np.int64)),
                 np.int32(idesc("f16", "f16", "f32", 128, 32)), np.int32(0)])
    np.testing.assert_array_equal(out.view(np.float32), (a1 @ b1 + a2 @ b2).astype(np.float32))


def test_two_ctas_and_no_bounds_checks(pm):
    """Each CTA has its own tensor memory (both allocate column 0 and free it); without bounds checks the same."""
    rng = np.random.default_rng(11)
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, 16))
    lbo_a, sbo_a = layout_params(128, True, 64, 2)
    lbo_b, sbo_b = layout_params(16, True, 64, 2)
    img_a = operand_image(as_type(a, "f16"), True, 64, lbo_a, sbo_a)
    img_b = operand_image(as_type(b.T.copy(), "f16"), True, 64, lbo_b, sbo_b)
    for check in (True, False):
        out = np.zeros((128, 16), np.uint32)
        launch(parse(pm, gpu_module(mma_kernel(16, "f16", ncols=32))), "k", grid=2, block=128, shared_bytes=SMEM,
               check_bounds=check,
               args=[img_a.view(np.int32), img_b.view(np.int32), np.zeros((128, 16), np.int32), out.view(np.int32),
                     np.int64(np.uint64(desc_high(lbo_a, sbo_a, 64)).view(np.int64)),
                     np.int64(np.uint64(desc_high(lbo_b, sbo_b, 64)).view(np.int64)),
                     np.int32(idesc("f16", "f16", "f32", 128, 16)), np.int32(0)])
        np.testing.assert_array_equal(out.view(np.float32), (a @ b).astype(np.float32))


# ---------------------------------------------------------------- block scaling
def idesc_bs(a: int, b: int, m: int, n: int, ue8m0: int = 1, sfa_id: int = 0, sfb_id: int = 0, neg_a: int = 0,
             trans_a: int = 0) -> int:
    """The block-scaled instruction descriptor (PTX ISA Table 44): SFB ID at bit 4, atype 7, btype 10, negate A
    13, transpose A 15, N >> 3 at 17, scale format 23 (UE8M0 = 1), M >> 4 at 24, SFA ID at 29."""
    return (sfb_id << 4 | a << 7 | b << 10 | neg_a << 13 | trans_a << 15 | (n >> 3) << 17 | ue8m0 << 23
            | (m >> 4) << 24 | sfa_id << 29)


def ue8m0(codes: np.ndarray) -> np.ndarray:
    return 2.0 ** (codes.astype(np.float64) - 127)


def ue4m3(codes: np.ndarray) -> np.ndarray:
    e, m = (codes >> 3) & 15, codes & 7
    return np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e.astype(np.float64) - 7))


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6])


def run_mma_bs(pm, a_store, b_store, va, vb, sf_a, sf_b, c, *, attrs, desc, vec, sf_vals, sfa_id=0, sfb_id=0,
               swz=128, a_kmajor=True, neg_a=0, dup=True):
    """A block-scaled MMA: ``a_store`` / ``b_store`` the operand bytes (M x K / N x K as stored, K-major for B),
    ``va`` / ``vb`` their values (M x K, K x N), ``sf_a`` (128 x 4) / ``sf_b`` (N x 4) the scale-factor bytes of
    each row's word (written, duplicated in the four 32-lane partitions unless not ``dup``, at columns N and
    N + 4 with tcgen05.st). Returns (D, expected)."""
    n = vb.shape[1]
    k = va.shape[1]
    st_cols = n + 4 + (n + 31) // 32
    lbo_a, sbo_a = layout_params(128, a_kmajor, swz, 1)
    lbo_b, sbo_b = layout_params(n, True, swz, 1)
    img_a = operand_image(a_store, a_kmajor, swz, lbo_a, sbo_a)
    img_b = operand_image(b_store, True, swz, lbo_b, sbo_b)
    cells = np.zeros((128, st_cols), np.uint32)
    cells[:, :n] = c.view(np.uint32)
    for base, sf in ((n, sf_a), (n + 4, sf_b)):
        rows = sf.shape[0]
        for r in range(rows):
            word = int(sf[r].astype(np.uint32) @ (1 << 8 * np.arange(4, dtype=np.uint32)))
            for q in range(4 if dup else 1):
                cells[32 * q + r % 32, base + r // 32] = word
    out = np.zeros((128, st_cols), np.uint32)
    text = gpu_module(mma_kernel(n, "", block_scale=attrs, st_cols=st_cols))
    launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM,
           args=[img_a.view(np.int32), img_b.view(np.int32), cells.view(np.int32), out.view(np.int32),
                 np.int64(np.uint64(desc_high(lbo_a, sbo_a, swz)).view(np.int64)),
                 np.int64(np.uint64(desc_high(lbo_b, sbo_b, swz)).view(np.int64)), np.int32(np.uint32(desc).view(np.int32)),
                 np.int32(1)])
    sa = sf_vals(sf_a[:, sfa_id:sfa_id + vec])
    sb = sf_vals(sf_b[:, sfb_id:sfb_id + vec])
    a_scaled = va * np.repeat(sa, k // vec, axis=1) * (-1 if neg_a else 1)
    b_scaled = vb * np.repeat(sb, k // vec, axis=1).T
    return out[:, :n].view(np.float32), (a_scaled @ b_scaled + c).astype(np.float32)


BS_MXF8 = "ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf8f6f4>"


@pytest.mark.parametrize("attrs", [BS_MXF8, "blockScale = #nvvm.tcgen05_mma_block_scale<block32>, " + BS_MXF8])
@pytest.mark.parametrize("a_kmajor", [True, False])
def test_mma_block_scale_mxf8f6f4(pm, attrs, a_kmajor):
    """kind::mxf8f6f4 (scale_vec::1X, UE8M0): one scale factor per row of A / column of B, the byte SFA ID /
    SFB ID of its word; A e5m2 (K- or MN-major, negated), B e4m3."""
    rng = np.random.default_rng(30)
    ca, va = f8_codes("e5m2", rng, (128, 32))
    cb, vb = f8_codes("e4m3", rng, (32, 64))
    sf_a = rng.integers(124, 131, (128, 4)).astype(np.uint8)
    sf_b = rng.integers(124, 131, (64, 4)).astype(np.uint8)
    c = quarters(rng, (128, 64)).astype(np.float32)
    got, want = run_mma_bs(pm, ca, np.ascontiguousarray(cb.T), va, vb, sf_a, sf_b, c, attrs=attrs,
                           desc=idesc_bs(1, 0, 128, 64, sfa_id=1, sfb_id=3, neg_a=1, trans_a=int(not a_kmajor)),
                           vec=1, sf_vals=ue8m0, sfa_id=1, sfb_id=3, a_kmajor=a_kmajor, neg_a=1)
    np.testing.assert_array_equal(got, want)


def e2m1_operand(rng, rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Random e2m1 codes packed two to a byte (lower K index in the low 4 bits) and their values (rows x k)."""
    codes = rng.integers(0, 16, (rows, k))
    return (codes[:, 0::2] | codes[:, 1::2] << 4).astype(np.uint8), E2M1[codes]


@pytest.mark.parametrize("kind, block, vec, ue8, sfa_id", [
    ("mxf4", "", 2, 1, 2), ("mxf4", "block32", 2, 1, 0), ("mxf4nvf4", "block32", 2, 1, 2),
    ("mxf4nvf4", "block16", 4, 1, 0), ("mxf4nvf4", "block16", 4, 0, 0)])
def test_mma_block_scale_fp4(pm, kind, block, vec, ue8, sfa_id):
    """kinds mxf4 / mxf4nvf4: e2m1 operands (K = 64, packed), 2 (block32: the half word SF ID / 2) or 4
    (block16: the whole word) scale factors per row, UE8M0 or (mxf4nvf4 block16) UE4M3."""
    rng = np.random.default_rng(31 + vec)
    pa, va = e2m1_operand(rng, 128, 64)
    pb, vb_t = e2m1_operand(rng, 32, 64)
    if ue8:
        sf_a = rng.integers(124, 131, (128, 4)).astype(np.uint8)
        sf_b = rng.integers(124, 131, (32, 4)).astype(np.uint8)
    else:  # e4m3 exponent field 5..9, any mantissa
        sf_a = (rng.integers(5, 10, (128, 4)) << 3 | rng.integers(0, 8, (128, 4))).astype(np.uint8)
        sf_b = (rng.integers(5, 10, (32, 4)) << 3 | rng.integers(0, 8, (32, 4))).astype(np.uint8)
    c = quarters(rng, (128, 32)).astype(np.float32)
    attrs = (f"blockScale = #nvvm.tcgen05_mma_block_scale<{block}>, " if block else "") + \
        f"ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<{kind}>"
    got, want = run_mma_bs(pm, pa, pb, va, vb_t.T, sf_a, sf_b, c, attrs=attrs,
                           desc=idesc_bs(1, 1, 128, 32, ue8m0=ue8, sfa_id=sfa_id, sfb_id=0), vec=vec,
                           sf_vals=ue8m0 if ue8 else ue4m3, sfa_id=sfa_id, sfb_id=0, swz=32)
    np.testing.assert_array_equal(got, want)


def test_mma_block_scale_needs_duplicated_scale_factors(pm):
    rng = np.random.default_rng(32)
    ca, va = f8_codes("e4m3", rng, (128, 32))
    cb, vb = f8_codes("e4m3", rng, (32, 16))
    sf_a = rng.integers(124, 131, (128, 4)).astype(np.uint8)
    sf_b = rng.integers(124, 131, (16, 4)).astype(np.uint8)
    with pytest.raises(TilecoreError, match="duplicated in all four 32-lane partitions"):
        run_mma_bs(pm, ca, np.ascontiguousarray(cb.T), va, vb, sf_a, sf_b, np.zeros((128, 16), np.float32),
                   attrs=BS_MXF8, desc=idesc_bs(0, 0, 128, 16), vec=1, sf_vals=ue8m0, dup=False)


def test_overwriting_an_operand_before_the_mma_completes_fails(pm):
    """PTX ISA 9.7.16.10: A / B must not change until the MMA completes; thread 0 overwrites A right after the
    commit, before anybody waits on the mbarrier (a barrier keeps the others from waiting earlier)."""
    rng = np.random.default_rng(13)
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, 16))
    lbo_a, sbo_a = layout_params(128, True, 32, 2)
    lbo_b, sbo_b = layout_params(16, True, 32, 2)
    clobber = """
    %junk = llvm.mlir.constant(305419896 : i32) : i32
    llvm.store %junk, %sa : i32, !llvm.ptr<3>"""
    waits = "nvvm.barrier0\n    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32"
    text = gpu_module(mma_kernel(16, "f16", ncols=32, more_issue=clobber, wait=waits))
    with pytest.raises(TilecoreError, match="tcgen05.mma .*shared memory it reads changed after it was issued"):
        launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM,
               args=[operand_image(as_type(a, "f16"), True, 32, lbo_a, sbo_a).view(np.int32),
                     operand_image(as_type(b.T.copy(), "f16"), True, 32, lbo_b, sbo_b).view(np.int32),
                     np.zeros((128, 16), np.int32), np.zeros((128, 16), np.int32),
                     np.int64(np.uint64(desc_high(lbo_a, sbo_a, 32)).view(np.int64)),
                     np.int64(np.uint64(desc_high(lbo_b, sbo_b, 32)).view(np.int64)),
                     np.int32(idesc("f16", "f16", "f32", 128, 16)), np.int32(0)])


def test_reading_d_without_waiting_for_the_commit_gives_stale_numbers(pm):
    """The MMA completes (D changes) at the commit's mbarrier arrival: a kernel that reads D with tcgen05.ld
    without waiting on that mbarrier reads C, the numbers before the MMA."""
    rng = np.random.default_rng(9)
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, 32))
    c = quarters(rng, (128, 32)).astype(np.float32)
    stale = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), c, kind="f16", ta="f16", tb="f16", wait=False)
    np.testing.assert_array_equal(stale, c)
    assert not np.array_equal(stale, (a @ b + c).astype(np.float32))
    good = run_mma(pm, as_type(a, "f16"), as_type(b, "f16"), c, kind="f16", ta="f16", tb="f16", wait=True)
    np.testing.assert_array_equal(good, (a @ b + c).astype(np.float32))


# ---------------------------------------------------------------- tcgen05.ld / tcgen05.st shapes
def fragment(shape: str, num: int, lane: int) -> list[tuple[int, int]]:
    """(lane offset, column) of each register of thread ``lane`` (PTX ISA "Matrix fragments for shape ...";
    32x32b: thread i owns lane i, register j column j; the 16-lane shapes split the warp into 8 groups of 4
    threads, group g owning lanes g and g + 8: 16x256b: registers (r0, r1) lane g, (r2, r3) lane g + 8,
    columns 2 (lane % 4) + 0 / 1; 16x128b: r0 lane g, r1 lane g + 8, column lane % 4; 16x64b: one register,
    lane g + 8 (lane % 2), column (lane / 2) % 2; .num repeats the base shape along the columns)."""
    g = lane // 4
    out = []
    for k in range(num):
        if shape == "32x32b":
            out.append((lane, k))
        elif shape == "16x64b":
            out.append((g + 8 * (lane % 2), 2 * k + (lane // 2) % 2))
        elif shape == "16x128b":
            out += [(g, 4 * k + lane % 4), (g + 8, 4 * k + lane % 4)]
        else:
            out += [(g + 8 * r, 8 * k + 2 * (lane % 4) + c) for r in (0, 1) for c in (0, 1)]
    return out


def ldst_kernel(shape: str, num: int, regs: int, half: int) -> str:
    """Fill the 128 x 32 cells from %gc (tcgen05.st.32x32b), then every thread loads ``regs`` registers with
    tcgen05.ld.<shape>.x<num> at lane 32 w + 16 half, column 0, stores them to out[t regs ..], stores
    out2[t regs ..] + 1 back with tcgen05.st.<shape> and the cells are read again with 32x32b into %gd."""
    ty = "i32" if regs == 1 else f"vector<{regs}xi32>"
    return f"""
  {GLOBALS}
  llvm.func @k(%gc: !llvm.ptr<1>, %out: !llvm.ptr<1>, %gd: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    {PRELUDE}
    {tmem_setup(32).replace("{n}", "32")}
    {st_from(32)}
    %hoff = llvm.mlir.constant({half * 16 << 16} : i32) : i32
    %ha = llvm.add %twarp, %hoff : i32
    %hp = llvm.inttoptr %ha : i32 to !llvm.ptr<6>
    %v = nvvm.tcgen05.ld %hp {{shape = #nvvm.tcgen05_ldst_shape<shape_{shape}>}} : {ty}
    nvvm.tcgen05.wait <load>
    %nr = llvm.mlir.constant({regs} : i32) : i32
    %ro = llvm.mul %t, %nr : i32
    %op = llvm.getelementptr %out[%ro] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %v, %op {{alignment = 4 : i64}} : {ty}, !llvm.ptr<1>
    %one = llvm.mlir.constant({"1" if regs == 1 else "dense<1>"} : {ty}) : {ty}
    %v1 = llvm.add %v, %one : {ty}
    nvvm.tcgen05.st %hp, %v1 {{shape = #nvvm.tcgen05_ldst_shape<shape_{shape}>}} : {ty}
    nvvm.tcgen05.wait <store>
    {ld_store(32, "%gd")}
    {tmem_teardown()}
    llvm.return
  }}"""


@pytest.mark.parametrize("shape, num", [("32x32b", 1), ("32x32b", 8), ("16x64b", 4), ("16x128b", 2),
                                        ("16x128b", 4), ("16x256b", 1), ("16x256b", 4)])
def test_ld_st_shapes(pm, shape, num):
    per = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4}[shape]
    regs = per * num
    for half in ((0,) if shape == "32x32b" else (0, 1)):
        cells = (np.arange(128)[:, None] * 1000 + np.arange(32)[None, :]).astype(np.int32)
        out = np.zeros((128, regs), np.int32)
        back = np.zeros((128, 32), np.int32)
        launch(parse(pm, gpu_module(ldst_kernel(shape, num, regs, half))), "k", grid=1, block=128,
               args=[cells.copy(), out, back])
        expect = cells.copy()
        for t in range(128):
            base = 32 * (t // 32) + 16 * half
            frag = fragment(shape, num, t % 32)
            want = [cells[base + dl, c] for dl, c in frag]
            assert list(out[t]) == want, (shape, num, half, t)
            for dl, c in frag:
                expect[base + dl, c] = cells[base + dl, c] + 1
        np.testing.assert_array_equal(back, expect)


# ---------------------------------------------------------------- tcgen05.cp
def cp_attrs(shape: str) -> str:
    multicast = "multicast = #nvvm.tcgen05_cp_multicast<warpx4>, " if shape == "32x128b" else ""
    return f"{multicast}shape = #nvvm.tcgen05_cp_shape<shape_{shape}>"


def cp_kernel(shape: str) -> str:
    """Thread 0 copies the matrix image in @sa to column 0 with tcgen05.cp.<shape> and commits; everybody waits
    and loads 8 columns of its lane (32x32b.x8)."""
    return f"""
  llvm.mlir.global internal @sa() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<{SMEM} x i8>
  {GLOBALS}
  llvm.func @k(%ga: !llvm.ptr<1>, %gc: !llvm.ptr<1>, %out: !llvm.ptr<1>, %hi: i64) attributes {{nvvm.kernel}} {{
    {PRELUDE}
    %sa = llvm.mlir.addressof @sa : !llvm.ptr<3>
    {copy_loop("ca", "%ga", "%sa", SMEM // 4)}
    {tmem_setup(32).replace("{n}", "8")}
    {st_from(8)}
    nvvm.tcgen05.fence <before>
    nvvm.barrier0
    nvvm.tcgen05.fence <after>
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %abase = llvm.ptrtoint %sa : !llvm.ptr<3> to i64
    %a4 = llvm.lshr %abase, %c4 : i64
    %m14 = llvm.mlir.constant(16383 : i64) : i64
    %am = llvm.and %a4, %m14 : i64
    %desc = llvm.or %am, %hi : i64
    {thread0("cp", f"nvvm.tcgen05.cp %tp, %desc {{{cp_attrs(shape)}}}" + NL +
             "    nvvm.tcgen05.commit %bar : !llvm.ptr<3>")}
    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32
    nvvm.tcgen05.fence <after>
    {ld_store(8)}
    {tmem_teardown()}
    llvm.return
  }}"""


@pytest.mark.parametrize("shape, rows, nbytes", [("128x256b", 128, 32), ("4x256b", 4, 32), ("128x128b", 128, 16),
                                                 ("32x128b", 32, 16)])
@pytest.mark.parametrize("swz", [0, 32, 128])
def test_cp_shapes(pm, shape, rows, nbytes, swz):
    """tcgen05.cp: ``rows`` rows of ``nbytes`` in the K-major canonical layout (8-row atoms, 16-byte units)
    land in lanes 0.. and the first nbytes / 4 columns; the other cells keep what tcgen05.st put there."""
    if swz and swz < nbytes:
        pytest.skip("a row must fit the swizzle width")
    rng = np.random.default_rng(rows + swz)
    mat = rng.integers(0, 256, (rows, nbytes)).astype(np.uint8)
    lbo, sbo = layout_params(rows, True, swz, 1)
    img = operand_image(mat, True, swz, lbo, sbo)
    cells = rng.integers(-100, 100, (128, 8)).astype(np.int32)
    out = np.zeros((128, 8), np.int32)
    launch(parse(pm, gpu_module(cp_kernel(shape))), "k", grid=1, block=128,
           args=[img.view(np.int32), cells.copy(), out, np.int64(np.uint64(desc_high(lbo, sbo, swz)).view(np.int64))])
    expect = cells.copy()
    for q in range(4 if shape == "32x128b" else 1):  # .warpx4: to each 32-lane partition
        expect[32 * q:32 * q + rows, :nbytes // 4] = mat.view(np.int32)
    np.testing.assert_array_equal(out, expect)


# ---------------------------------------------------------------- tcgen05.mma_smem_desc
def test_mma_smem_desc_op(pm):
    """nvvm.tcgen05.mma_smem_desc packs its fields (PTX ISA "Shared memory descriptor")."""
    text = gpu_module("""
  llvm.func @k(%out: !llvm.ptr<1>, %s: i32, %l: i32, %d: i32, %b: i32, %m: i32, %w: i32) attributes {nvvm.kernel} {
    %b8 = llvm.trunc %b : i32 to i8
    %m1 = llvm.trunc %m : i32 to i1
    %w8 = llvm.trunc %w : i32 to i8
    %r = nvvm.tcgen05.mma_smem_desc(%s, %l, %d, %b8, %m1, %w8) : (i32, i32, i32, i8, i1, i8) -> i64
    llvm.store %r, %out : i64, !llvm.ptr<1>
    llvm.return
  }""")
    for fields in ((0x123, 0x8, 0x40, 0, 0, 2), (0x3FFF, 0x3FFF, 0x3FFF, 7, 1, 6)):
        out = np.zeros(1, np.uint64)
        launch(parse(pm, text), "k", grid=1, block=1, args=[out, *[np.int32(f) for f in fields]])
        s_, l_, d_, b_, m_, w_ = fields
        assert int(out[0]) == s_ | l_ << 16 | d_ << 32 | 1 << 46 | b_ << 49 | m_ << 52 | w_ << 61


# ---------------------------------------------------------------- failure modes
def warp_kernel(body: str) -> str:
    return f"""
  {GLOBALS}
  llvm.func @k(%out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
    {PRELUDE}
    %n32 = llvm.mlir.constant(32 : i32) : i32
    %n48 = llvm.mlir.constant(48 : i32) : i32
    %n64 = llvm.mlir.constant(64 : i32) : i32
    %n512 = llvm.mlir.constant(512 : i32) : i32
    {body}
    llvm.return
  }}"""


ALLOC32 = "nvvm.tcgen05.alloc %slot, %n32 : !llvm.ptr<3>, i32"
ADDR = "%ta = llvm.load %slot : !llvm.ptr<3> -> i32\n    %tp = llvm.inttoptr %ta : i32 to !llvm.ptr<6>"
DEALLOC32 = "nvvm.tcgen05.dealloc %tp, %n32 : !llvm.ptr<6>, i32"


@pytest.mark.parametrize("body, message", [
    ("nvvm.tcgen05.alloc %slot, %n48 : !llvm.ptr<3>, i32", r"tcgen05.alloc with 48 columns: the column count must "
     r"be a power of 2 in \[32, 512\]"),
    (f"{ALLOC32}\n{ADDR}\n{DEALLOC32}\n{DEALLOC32}", r"tcgen05.dealloc of 32 columns .* not an allocation .*double "
     r"free"),
    (f"{ALLOC32}\n{ADDR}\nnvvm.tcgen05.dealloc %tp, %n64 : !llvm.ptr<6>, i32", "tcgen05.alloc allocated with 32 "
     "columns"),
    (f"nvvm.tcgen05.relinquish_alloc_permit\n{ALLOC32}", "after the CTA executed tcgen05.relinquish_alloc_permit"),
    (ALLOC32, r"the CTA exits with tensor memory still allocated: 32 columns at column 0 \(allocated by warp 0\)"),
    ("nvvm.tcgen05.alloc %slot, %n512 : !llvm.ptr<3>, i32\n" + ALLOC32, "tcgen05.alloc of 32 columns does not fit"),
    (f"{ALLOC32}\n{ADDR}\n%v = nvvm.tcgen05.ld %tp {{shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>}} : "
     f"vector<64xi32>\n{DEALLOC32}", r"tcgen05.ld.32x32b.x64: .* columns 0..63, which are not inside one "
     "tcgen05.alloc allocation"),
    (f"{ALLOC32}\n{ADDR}\nnvvm.tcgen05.commit %bar : !llvm.ptr<3>\n{DEALLOC32}", "tcgen05.commit on shared address "
     ".* holds no mbarrier object"),
])
def test_tensor_memory_misuse_fails_the_launch(pm, body, message):
    with pytest.raises(TilecoreError, match=message):
        launch(parse(pm, gpu_module(warp_kernel(body))), "k", grid=1, block=32, args=[np.zeros(4, np.int32)])


def test_ld_outside_the_warps_sub_partition_fails(pm):
    """Warp 1 may access lanes 32..63 only."""
    body = f"""{warp0("a", ALLOC32)}
    nvvm.barrier0
    {ADDR}
    %v = nvvm.tcgen05.ld %tp {{shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>}} : i32
    nvvm.barrier0
    {warp0("d", DEALLOC32)}"""
    with pytest.raises(TilecoreError, match=r"warp 1 may access tensor-memory lanes 32..63 only"):
        launch(parse(pm, gpu_module(warp_kernel(body))), "k", grid=1, block=64, args=[np.zeros(4, np.int32)])


def test_ld_by_part_of_a_warp_is_a_deadlock(pm):
    """tcgen05.ld is .sync.aligned: lane 0 alone waits for the rest of its warp, which waits at a barrier."""
    body = f"""{warp0("a", ALLOC32)}
    nvvm.barrier0
    {ADDR}
    {thread0("ld", "%v = nvvm.tcgen05.ld %tp {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : i32")}
    nvvm.barrier0
    {DEALLOC32}"""
    with pytest.raises(TilecoreError, match=r"deadlock: .*tcgen05.ld / tcgen05.st in warp 0 \(1 waiting\)"):
        launch(parse(pm, gpu_module(warp_kernel(body))), "k", grid=1, block=32, args=[np.zeros(4, np.int32)])


def test_generic_pointers_to_shared_memory_and_an_empty_commit(pm):
    """tcgen05.alloc and tcgen05.commit also take generic pointers to shared memory; a commit with no MMA before
    it still arrives (when waited on); the allocation lands at column 0, then 64 (aligned to its size)."""
    body = f"""%gslot = llvm.addrspacecast %slot : !llvm.ptr<3> to !llvm.ptr
    %gbar = llvm.addrspacecast %bar : !llvm.ptr<3> to !llvm.ptr
    nvvm.tcgen05.alloc %gslot, %n32 : !llvm.ptr, i32
    %ta0 = llvm.load %slot : !llvm.ptr<3> -> i32
    nvvm.tcgen05.alloc %gslot, %n64 : !llvm.ptr, i32
    {ADDR}
    {thread0("init", "nvvm.mbarrier.init %bar, %c1 : !llvm.ptr<3>, i32")}
    nvvm.barrier0
    {thread0("commit", "nvvm.tcgen05.commit %gbar : !llvm.ptr")}
    nvvm.mbarrier.try_wait.parity %bar, %c0, %ticks : !llvm.ptr<3>, i32, i32
    llvm.store %ta0, %out : i32, !llvm.ptr<1>
    %o1 = llvm.getelementptr %out[1] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
    llvm.store %ta, %o1 : i32, !llvm.ptr<1>
    nvvm.tcgen05.dealloc %tp, %n64 : !llvm.ptr<6>, i32
    %tp0 = llvm.inttoptr %ta0 : i32 to !llvm.ptr<6>
    nvvm.tcgen05.dealloc %tp0, %n32 : !llvm.ptr<6>, i32"""
    out = np.full(4, -1, np.int32)
    launch(parse(pm, gpu_module(warp_kernel(body))), "k", grid=1, block=32, args=[out])
    assert list(out[:2]) == [0, 64]


def test_isolated_launch(pm):
    """In a child process (launch(isolate=True)) the plugin's rows and runtime symbols are there too."""
    rng = np.random.default_rng(12)
    a, b = quarters(rng, (128, 16)), quarters(rng, (16, 16))
    lbo_a, sbo_a = layout_params(128, True, 32, 2)
    lbo_b, sbo_b = layout_params(16, True, 32, 2)
    out = np.zeros((128, 16), np.uint32)
    res = launch(gpu_module(mma_kernel(16, "f16", ncols=32)), "k", grid=1, block=128, shared_bytes=SMEM, isolate=True,
                 args=[operand_image(as_type(a, "f16"), True, 32, lbo_a, sbo_a).view(np.int32),
                       operand_image(as_type(b.T.copy(), "f16"), True, 32, lbo_b, sbo_b).view(np.int32),
                       np.zeros((128, 16), np.int32), out.view(np.int32),
                       np.int64(np.uint64(desc_high(lbo_a, sbo_a, 32)).view(np.int64)),
                       np.int64(np.uint64(desc_high(lbo_b, sbo_b, 32)).view(np.int64)),
                       np.int32(idesc("f16", "f16", "f32", 128, 16)), np.int32(0)])
    np.testing.assert_array_equal(res.outputs[3].view(np.float32).reshape(128, 16), (a @ b).astype(np.float32))


@pytest.mark.parametrize("hi_a, idesc_, message", [
    (desc_high(16, 1024, 128), idesc("f16", "f16", "f32", 32, 64), r"M = 32, N = 64 is not a cta_group::1 shape"),
    (desc_high(16, 1024, 128), idesc("f16", "f16", "f32", 128, 264), r"M = 128, N = 264 is not"),
    (desc_high(16, 1024, 128), idesc("f16", "bf16", "f32", 128, 64), "A is f16 and B is bf16"),
    (desc_high(16, 1024, 128) | 1 << 2, idesc("f16", "f16", "f32", 128, 64) | 1 << 2, "sparsity"),
    (desc_high(16, 1024, 128) & ~(1 << 46), idesc("f16", "f16", "f32", 128, 64), "bits 46-48 must hold the fixed "
     "value 0b001"),
    (desc_high(16, 1024, 128) & ~(7 << 61) | 1 << 61, idesc("f16", "f16", "f32", 128, 64), "128B with 32-byte atoms"),
    (desc_high(16, 1024, 128) | 1 << 49, idesc("f16", "f16", "f32", 128, 64), "base offset"),
])
def test_bad_descriptors_fail_the_launch(pm, hi_a, idesc_, message):
    text = gpu_module(mma_kernel(64, "f16"))
    z = np.zeros(SMEM // 4, np.int32)
    with pytest.raises(TilecoreError, match=message):
        launch(parse(pm, text), "k", grid=1, block=128, shared_bytes=SMEM,
               args=[z, z.copy(), np.zeros(128 * 64, np.int32), np.zeros(128 * 64, np.int32),
                     np.int64(np.uint64(hi_a).view(np.int64)),
                     np.int64(np.uint64(desc_high(16, 1024, 128)).view(np.int64)), np.int32(idesc_), np.int32(0)])


def test_without_the_sm100_plugin_the_ops_are_unknown(tmp_path):
    """TILECORE_DISABLED_PLUGINS=sm100: no emulator rows; the op fails with its name."""
    path = tmp_path / "k.mlir"
    path.write_text(gpu_module(warp_kernel(ALLOC32)))
    code = ("import sys, numpy as np\nfrom tilecore.emulate import launch\n"
            "from tilecore.errors import TilecoreError\n"
            "try:\n    launch(open(sys.argv[1]).read(), 'k', grid=1, block=32, args=[np.zeros(4, np.int32)])\n"
            "except TilecoreError as e:\n    print(e)\n")
    env = dict(os.environ, TILECORE_DISABLED_PLUGINS="sm100")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    assert "the emulator does not support 'nvvm.tcgen05.alloc' yet" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert "still allocated" in r.stdout, r.stdout + r.stderr


# ---------------------------------------------------------------- ptxas
def test_ptxas_accepts_the_forms_for_sm_100a(pm):
    """Every form the emulator runs goes through MLIR's NVPTX back end and ptxas for sm_100a (convert-nvvm-to-llvm
    leaves them unchanged)."""
    body = """
  llvm.func @k(%slot: !llvm.ptr<3>, %bar: !llvm.ptr<3>, %a: i64, %b: i64, %id: i32, %en: i1, %out: !llvm.ptr<1>)
      attributes {nvvm.kernel} {
    %n = llvm.mlir.constant(128 : i32) : i32
    nvvm.tcgen05.alloc %slot, %n : !llvm.ptr<3>, i32
    %ta = llvm.load %slot : !llvm.ptr<3> -> i32
    %t = llvm.inttoptr %ta : i32 to !llvm.ptr<6>
    nvvm.tcgen05.mma %t, %a, %b, %id, %en {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f16>} : (!llvm.ptr<6>, i64, i64, i32, i1)
    nvvm.tcgen05.mma %t, %a, %b, %id, %en {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<tf32>} : (!llvm.ptr<6>, i64, i64, i32, i1)
    nvvm.tcgen05.mma %t, %a, %b, %id, %en {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<i8>} : (!llvm.ptr<6>, i64, i64, i32, i1)
    nvvm.tcgen05.mma %t, %a, %b, %id, %en {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.tcgen05_mma_kind<f8f6f4>} : (!llvm.ptr<6>, i64, i64, i32, i1)
    nvvm.tcgen05.cp %t, %a {shape = #nvvm.tcgen05_cp_shape<shape_128x256b>}
    nvvm.tcgen05.cp %t, %a {shape = #nvvm.tcgen05_cp_shape<shape_4x256b>}
    nvvm.tcgen05.cp %t, %a {shape = #nvvm.tcgen05_cp_shape<shape_128x128b>}
    nvvm.tcgen05.cp %t, %a {multicast = #nvvm.tcgen05_cp_multicast<warpx4>, shape = #nvvm.tcgen05_cp_shape<shape_32x128b>}
    nvvm.tcgen05.mma.block_scale %t, %a, %b, %id, %en, %t, %t {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf8f6f4>} : (!llvm.ptr<6>, i64, i64, i32, i1, !llvm.ptr<6>, !llvm.ptr<6>)
    nvvm.tcgen05.mma.block_scale %t, %a, %b, %id, %en, %t, %t {ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf4>} : (!llvm.ptr<6>, i64, i64, i32, i1, !llvm.ptr<6>, !llvm.ptr<6>)
    nvvm.tcgen05.mma.block_scale %t, %a, %b, %id, %en, %t, %t {blockScale = #nvvm.tcgen05_mma_block_scale<block32>, ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf4nvf4>} : (!llvm.ptr<6>, i64, i64, i32, i1, !llvm.ptr<6>, !llvm.ptr<6>)
    nvvm.tcgen05.mma.block_scale %t, %a, %b, %id, %en, %t, %t {blockScale = #nvvm.tcgen05_mma_block_scale<block16>, ctaGroup = #nvvm.cta_group<cta_1>, kind = #nvvm.block_scale_kind<mxf4nvf4>} : (!llvm.ptr<6>, i64, i64, i32, i1, !llvm.ptr<6>, !llvm.ptr<6>)
    nvvm.tcgen05.commit %bar : !llvm.ptr<3>
    %v1 = nvvm.tcgen05.ld %t {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : i32
    %v2 = nvvm.tcgen05.ld %t {shape = #nvvm.tcgen05_ldst_shape<shape_16x64b>} : vector<4xi32>
    %v3 = nvvm.tcgen05.ld %t {shape = #nvvm.tcgen05_ldst_shape<shape_16x128b>} : vector<8xi32>
    %v4 = nvvm.tcgen05.ld %t {shape = #nvvm.tcgen05_ldst_shape<shape_16x256b>} : vector<16xi32>
    %v5 = nvvm.tcgen05.ld %t {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<128xi32>
    nvvm.tcgen05.wait <load>
    nvvm.tcgen05.st %t, %v4 {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<16xi32>
    nvvm.tcgen05.st %t, %v3 {shape = #nvvm.tcgen05_ldst_shape<shape_16x256b>} : vector<8xi32>
    nvvm.tcgen05.wait <store>
    nvvm.tcgen05.fence <before>
    nvvm.tcgen05.fence <after>
    %z8 = llvm.mlir.constant(2 : i8) : i8
    %f = llvm.mlir.constant(false) : i1
    %d = nvvm.tcgen05.mma_smem_desc(%id, %id, %id, %z8, %f, %z8) : (i32, i32, i32, i8, i1, i8) -> i64
    llvm.store %d, %out : i64, !llvm.ptr<1>
    llvm.store %v1, %out : i32, !llvm.ptr<1>
    llvm.store %v5, %out {alignment = 4 : i64} : vector<128xi32>, !llvm.ptr<1>
    llvm.store %v2, %out {alignment = 4 : i64} : vector<4xi32>, !llvm.ptr<1>
    nvvm.tcgen05.dealloc %t, %n : !llvm.ptr<6>, i32
    nvvm.tcgen05.relinquish_alloc_permit
    llvm.return
  }"""
    for passes in ("", "convert-nvvm-to-llvm"):
        ptx = ptxas_round_trip(pm, body, "sm_100a", passes=passes)
        for needle in ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", "tcgen05.mma.cta_group::1.kind::f16",
                       "kind::tf32", "kind::i8", "kind::f8f6f4", "tcgen05.cp.cta_group::1.128x256b",
                       "tcgen05.cp.cta_group::1.4x256b", "tcgen05.cp.cta_group::1.128x128b",
                       "tcgen05.cp.cta_group::1.32x128b.warpx4", "kind::mxf8f6f4.block_scale", "kind::mxf4.block_scale",
                       "kind::mxf4nvf4.block_scale.block32", "kind::mxf4nvf4.block_scale.block16",
                       "tcgen05.commit.cta_group::1.mbarrier::arrive::one", "tcgen05.ld.sync.aligned.32x32b.x1.b32",
                       "16x64b.x4", "16x128b.x4", "16x256b.x4", "32x32b.x128", "tcgen05.st.sync.aligned.32x32b.x16",
                       "tcgen05.wait::ld", "tcgen05.wait::st", "tcgen05.fence::before_thread_sync",
                       "tcgen05.dealloc.cta_group::1", "tcgen05.relinquish_alloc_permit.cta_group::1"):
            assert needle in ptx, needle
