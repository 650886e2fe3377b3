"""The sm_100a tensor-memory MMA atoms (``tcgen05.mma`` cta_group::1, M = 128 / 64), for tileas' MMA interface.

PTX ISA 9.0, "TensorCore 5th Generation Family Instructions" (section 9.7.16):

- **Tensor memory** (9.7.16.1): 128 lanes x 512 columns of 32-bit cells per CTA; an address is
  ``lane << 16 | column``. ``tcgen05.alloc`` (9.7.16.7.1, one whole warp; columns a power of two >= 32)
  writes the allocation's address to shared memory; ``tcgen05.dealloc`` frees it and
  ``tcgen05.relinquish_alloc_permit`` gives up the CTA's right to allocate; all columns must be freed before
  the kernel exits. Warp ``w`` may access lanes ``32 (w % 4) .. + 31`` only ("Access restrictions").
- **Matrix descriptors** (9.7.16.4.1, "Shared memory descriptor"): the 64-bit wgmma descriptor plus the fixed
  value 0b001 in bits 46-48: start address >> 4 (0-13), leading byte offset >> 4 (16-29), stride byte offset >> 4
  (32-45), base offset (49-51, 0: the stages are 1024-byte aligned), swizzle (61-63: 2 = 128B, 4 = 64B,
  6 = 32B). The operands lie as :class:`tilecore.mma.SwizzledOperand` (the canonical swizzled layouts, 9.7.16.5):
  A K-major (M x K, SBO = 8 rows x swizzle bytes; a K step inside a swizzle column advances the start address),
  B N-major (K x N: LBO = the distance between swizzle columns, K x swizzle bytes; SBO = 8 rows x swizzle),
  i.e. exactly what the pipelined K loops copy (``dot.smem_operand``); tcgen05 takes MN-major f16 / bf16, i8 and
  8-bit float operands in these swizzles (8-bit ones with N a multiple of 16), tf32 ones only in the 128B swizzle
  with 32-byte atoms (below).
- **Instruction descriptor** (9.7.16.4.2, table "Instruction descriptor format for .kind::tf32, .kind::f16,
  .kind::f8f6f4 and .kind::i8"): dense (bits 0-2 = 0), dtype (4-5: F32 = 1, S32 = 2), atype / btype (7-9 / 10-12:
  F16 = 0, BF16 = 1, TF32 = 2, E4M3 = 0, E5M2 = 1, U8 = 0, S8 = 1), no negation, transpose A = 0 (K-major),
  transpose B = 1 (MN-major) (bits 15 / 16), N >> 3 (17-22), M >> 4 (24-28); :func:`instr_desc`.
- **tcgen05.mma** (9.7.16.10.9): ``D (TMEM) = A * B + (enable_input_d ? D : 0)``, issued by one thread;
  shapes (table 39, cta_group::1 dense): M = 128 or 64, N a multiple of 16 up to 256 (8-bit MN-major B: of 16;
  .kind::f16 / tf32 / f8f6f4: of 8, :func:`inst_n_ok`),
  K = 16 (f16), 8 (tf32), 32 (i8, f8f6f4). "Data path layout" (9.7.16.10.5): M = 128 puts row ``i`` of D in lane
  ``i``; M = 64 ("layout F") in lane ``32 (i / 16) + i % 16`` of the D address's lane (0 or 16). ``tcgen05.commit`` (9.7.16.11.1) makes an mbarrier track the completion of the MMAs the thread issued
  before it (``mbarrier::arrive::one``); the threads wait on the mbarrier's phase parity.
- **tcgen05.ld / st** (9.7.16.8.3 / .4) ``.32x32b.xN``: thread ``l`` of warp ``w`` moves lane ``32 (w % 4) + l``,
  N consecutive columns; ``tcgen05.wait::ld`` / ``::st`` (9.7.16.8.5) wait for them.
- **Ordering** (9.7.16.6, "Memory consistency model for 5th generation of TensorCore operations"):
  ``tcgen05.fence::before_thread_sync`` before and ``tcgen05.fence::after_thread_sync`` after a thread
  synchronization (barrier, mbarrier wait) order tcgen05 operations of different threads; shared memory written
  by the generic proxy (st.shared, cp.async) is made visible to the MMA (async proxy) by
  ``fence.proxy.async.shared::cta`` before the barrier.

Per dot (:meth:`Umma.dot`): the accumulator registers (tileas' ``TmemFragment``: thread ``t`` of a warpgroup holds
row ``t % 128``) are stored to TMEM (``tcgen05.st``; skipped for a zero splat, whose first MMA has
enable_input_d = 0); fence.proxy.async, fence::before, barrier, fence::after; thread 0 issues one MMA per
128-row block, N instruction and K step and commits to the kernel's mbarrier; every thread waits for the phase
(its parity kept per thread), fence::after, ``tcgen05.ld`` back into the registers. A 64-row tile (one
warpgroup) is computed twice, at lanes 0 and 16 of each quarter, so that the 32x32b load gives every thread
its row (threads ``l`` and ``l + 16`` of a warp hold the same row). In a K loop
``acc = mma(a, b, acc)`` whose carried value nothing else uses, the accumulator keeps its own columns across the
loop instead: stored in the first iteration only (not at all from a zero splat), loaded in the last only. Per kernel
(:class:`Tmem`, built at the first dot): warp 0 allocates the columns of the widest accumulator (a power of two
>= 32, at most 512; ``sm100.tmem_alloc``'s ``ncols`` is set when the kernel is lowered), thread 0 initialises the
mbarrier, the address is read back after a barrier; before every ``llvm.return``: fence::before, barrier, warp 0
deallocates and relinquishes the allocation permit.

| atom | A x B -> D | kind | K |
|---|---|---|---|
| ``mma.sm100a.mMnNk16.f16.f32`` | f16 x f16 -> f32 | f16 | 16 |
| ``mma.sm100a.mMnNk16.bf16.f32`` | bf16 x bf16 -> f32 | f16 | 16 |
| ``mma.sm100a.mMnNk8.tf32.f32`` | tf32 x tf32 -> f32 (B K-major) | tf32 | 8 |
| ``mma.sm100a.mMnNk16.f16.f16`` | f16 x f16 -> f16 (D f32 in TMEM, rounded per dot; not kept across loops) | f16 | 16 |
| ``mma.sm100a.mMnNk32.f8.f16`` | e4m3 / e5m2 x e4m3 / e5m2 -> f16 (as f16.f16) | f8f6f4 | 32 |
| ``mma.sm100a.mMnNk32.i8.i32`` | s8 / u8 x s8 / u8 -> s32 (wrapping) | i8 | 32 |
| ``mma.sm100a.mMnNk32.f8.f32`` | e4m3 / e5m2 x e4m3 / e5m2 -> f32 | f8f6f4 | 32 |

| ``mma.sm100a.mMnNk32.mxf8.f32`` (kind ``block_scaled_mma``) | e4m3 / e5m2 x e4m3 / e5m2, e8m0 scale per 32 -> f32 | mxf8f6f4 .block_scale (1X) | 32 |

**Block scaling** (cuda_tile ``mmaf_scaled``, tileas ``nv_tileas.block_scaled_mma``; PTX ISA 9.7.16.10.7 "Block
Scaling for tcgen05.mma"): ``D = (A * scale_A) (B * scale_B) + D`` with one UE8M0 scale factor per 32 elements of
K of each row of A and column of B (MXFP8, ``.kind::mxf8f6f4.block_scale``, scale_vec::1X: one scale factor per
row per MMA of K = 32). A and B as the plain atoms' (A K-major, B MN-major: mxf8f6f4 admits the transpose; or B
K-major, ``layouts(req, at, "k")``: a pipelined loop's stage of a transposed view, read through a K-major
descriptor with transpose B = 0; in a pipelined K loop A / B come by TMA and are read in their stage). The
scale factors live in tensor memory in the layout of 9.7.16.10.7 ("Scale factor A / B" for M = 128, 1X): rows
(of A; columns of B) ``32 c + l`` in lane ``l`` of every 32-lane partition (the same data in all four),
column ``c``, one byte of the 32-bit cell per K block, selected by the instruction descriptor's SF A ID (bits
29-30) / SF B ID (bits 4-5) (Table 44, :func:`instr_desc_bs`). They get there by
``tcgen05.cp.cta_group::1.32x128b.warpx4`` (9.7.16.8.2) from shared memory (:class:`ScaleOperand`: 32 rows of
16 bytes per 128 rows x 4 K blocks, the K-major canonical layout without swizzle), issued by the MMA thread
before its MMAs (same-thread tcgen05.cp -> tcgen05.mma is ordered, 9.7.16.6); the columns follow the
accumulator's in the scratch region. M a multiple of 128, or a 64-row tile: block-scaled MMAs have no M = 64
shape (9.7.16.2.1, Table 39), so one M = 128 MMA runs over A and its scale factors with row ``i`` written twice, at
rows ``32 (i / 16) + i % 16`` and ``+ 16`` (:func:`layout_f_rows`), which puts D where the 64-row fragment reads
it (layout F, as the plain atoms' two M = 64 MMAs do, for the same tensor-core work; a zero-padded A would put
row ``i`` in lane ``i``, out of reach of the warp whose fragment holds it). sm_100a and sm_103a (inline PTX
there), N and K rows of 32 bytes (B's scale-factor columns start on a 32-column boundary).

| ``mma.sm100a.mMnNk64.mxf4.f32`` (kind ``block_scaled_mma``) | e2m1 x e2m1, e8m0 scale per 32 -> f32 | mxf4 .block_scale (2X) | 64 |
| ``mma.sm100a.mMnNk64.nvf4.f32`` (kind ``block_scaled_mma``) | e2m1 x e2m1, e4m3 (UE4M3) scale per 16 -> f32 | mxf4nvf4 .block_scale.block16 (4X) | 64 |
| ``mma.sm100a.mMnNk64.nvf4ue8m0.f32`` (kind ``block_scaled_mma``) | e2m1 x e2m1, e8m0 (UE8M0) scale per 16 -> f32 | mxf4nvf4 .block_scale.block16 (4X) | 64 |

**MXFP4 / NVFP4** (:class:`BlockScaledF4Umma`): ``.kind::mxf4`` / ``.kind::mxf4nvf4`` read packed e2m1 (two to a
byte, the lower K index in the low half), A and B both K-major (no transpose for these kinds, Table 49), 32
bytes of K per MMA. tileas writes the tiles a code per byte (its registers hold one code each); the atom packs
them after a barrier into A (M x K / 2) and B's transpose (N x K / 2) in the canonical K-major swizzled layout,
then runs as the MXFP8 atom; the scale factors keep the same layout (4 per tensor-memory word), the K step's SF
ID being its first block % 4 (2X: 0 / 2, 4X: 0); UE4M3 is scale format 0 (bit 23), UE8M0 1 (mxf4nvf4 4X takes
either: PTX ISA 9.7.16.10.7). UE4M3 scale factors are
unsigned: a negative e4m3 scale is read as its magnitude. Every dot no atom admits keeps tileas'
CUDA-core lowering (e2m1 with K under 64, for one).

tf32 (``mma.sm100a.mMnNk8.tf32.f32``, :class:`Tf32Umma`): B K-major. An MN-major tf32 operand needs the 128B
swizzle with 32-byte atoms (PTX ISA 9.7.16.10.1, Table 52), a layout neither the pipeline nor
:class:`tilecore.mma.SwizzledOperand` makes; a K-major one takes the ordinary swizzles, so B is written as its
transpose (a pipelined loop's MN-major stage is copied into it first) and the instruction descriptor's
transpose-B bit is 0.

Small and narrow tiles (issue 16): a 16- or 32-row tile runs the M = 64 instructions over an A whose 64 rows repeat
the tile's (:class:`RepeatedRowsOperand`; block-scaled: an M = 128 one over layout F with the rows repeated,
:func:`layout_f_rows`), so that layout F puts every row where tileas' ``TmemFragment`` reads it; an 8-bit B of N = 16
(rows of 16 bytes, no swizzled layout) is read K-major (transpose-B bit 0, which ``.kind::i8`` / ``.kind::f8f6f4`` /
``.kind::mxf8f6f4`` take: Tables 42 / 44; :meth:`Umma.narrow_b`), and so is a B of N = 8 (16-bit: rows of 16 bytes;
8-bit: of 8), one instruction of N = 8 (:func:`inst_n_ok`; M = 64 or 128); an 8-bit K of 16 is
laid out as 32 and an e2m1 K of
32 as 64, the padding zeroed per dot (:meth:`Umma.k_padded`, :func:`tilecore.mma.zero_k_padding`; :meth:`BlockScaledF4Umma.k_padded`,
``zero_scale_pad``): zero products add nothing to D.

Targets: sm_100a and sm_103a (there the stage-5 patterns emit inline PTX, :mod:`.tcgen05`), except the i8 atom:
ptxas has no ``.kind::i8`` on sm_103a ("Feature '.kind::i8' not supported on .target 'sm_103a'"), so s8 / u8 dots
on sm_103a keep cute's mma.sync atom.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilecore.atoms import Atom
from tilecore.mlir import dialects, ir
from tilecore.mma import MMA_INTERFACE, SwizzledOperand, element_bytes, swizzle_for, zero_k_padding

# atom name -> (A / B elements of the request, accumulator, kind, instruction K)
ATOMS = {
    "mma.sm100a.mMnNk16.f16.f32": (("f16",), "f32", "f16", 16),
    "mma.sm100a.mMnNk16.bf16.f32": (("bf16",), "f32", "f16", 16),
    "mma.sm100a.mMnNk16.f16.f16": (("f16",), "f16", "f16", 16),  # D f32 in tensor memory, rounded per dot
    "mma.sm100a.mMnNk8.tf32.f32": (("tf32",), "f32", "tf32", 8),  # B K-major (Tf32Umma)
    "mma.sm100a.mMnNk32.i8.i32": (("i8",), "i32", "i8", 32),
    "mma.sm100a.mMnNk32.f8.f32": (("f8E4M3FN", "f8E5M2"), "f32", "f8f6f4", 32),
    "mma.sm100a.mMnNk32.f8.f16": (("f8E4M3FN", "f8E5M2"), "f16", "f8f6f4", 32),  # as f16.f16: rounded per dot
}
ARCHS = ("sm_100a", "sm_103a")
PRIORITY = 30  # above the mma.sync atoms
INST_M = 128
MAX_N = 256
TMEM_COLS = 512
SWIZZLE_MODE = {128: 2, 64: 4, 32: 6, 0: 0}  # descriptor bits 61-63
DTYPE = {"f32": 1, "i32": 2}
ABTYPE = {"f16": 0, "bf16": 1, "tf32": 2, "f8E4M3FN": 0, "f8E5M2": 1}
LD_CHUNK = 32  # columns per tcgen05.ld / st (.32x32b.x32: 32 registers)
SMALL_M = (16, 32, 64)  # tile rows computed by M = 64 instructions (16 / 32: over an A whose rows repeat)


def m_ok(m: int) -> bool:
    """Whether the atoms take an ``m``-row tile: a multiple of 128 (M = 128 instructions), or 64 / 32 / 16 (one
    warpgroup, M = 64 instructions: tcgen05 has no M under 64 with cta_group::1, PTX ISA 9.7.16.2.1, Table 39; a
    16- / 32-row tile is computed as 64 rows over an A that repeats its rows, :class:`RepeatedRowsOperand`)."""
    return m % INST_M == 0 or m in SMALL_M


def instr_desc(kind: str, a: str, b: str, acc: str, n: int, a_signed=True, b_signed=True, m: int = INST_M,
               b_mn_major: bool = True) -> int:
    """The 32-bit instruction descriptor (PTX ISA 9.7.16.4.2) of a dense MMA: A K-major, B MN-major (transpose B,
    bit 16) unless ``b_mn_major`` is False (the tf32 atom's K-major B)."""
    def ab(e, signed):
        return (1 if signed else 0) if kind == "i8" else ABTYPE[e]

    return (DTYPE[acc] << 4 | ab(a, a_signed) << 7 | ab(b, b_signed) << 10 | int(b_mn_major) << 16
            | (n >> 3) << 17 | (m >> 4) << 24)


def inst_n(n: int, eb: int) -> int:
    """The instruction N for a tile N: the widest multiple of 16 up to 256 dividing ``n`` whose columns start on
    B's swizzle columns; 0 when none."""
    s = swizzle_for(n * eb)
    for cand in range(min(n, MAX_N) // 16 * 16, 0, -16):
        if n % cand == 0 and (cand == n or (cand * eb) % s == 0):
            return cand
    return 0


# kinds with an instruction N of 8, 24, 40 ... (odd multiples of 8) for M = 64 and 128: PTX ISA 9.7.16.2.1 "Matrix
# Shape", Table 39 (cta_group::1, dense: .kind::f16 / .kind::tf32 / .kind::f8f6f4 64xNxK and 128xNxK, N = {8, 16,
# 24, ... 256} steps of 8); .kind::i8 too: tileiras' SASS has UTCIMMA with instruction descriptors 0x040204a8 /
# 0x080204a8 (M 64 / 128, N 8, s8, B K-major) for 64 x 8 / 128 x 8 s8 tiles
N8_KINDS = ("f16", "tf32", "f8f6f4", "i8")


def inst_n_ok(ni: int, kind: str) -> bool:
    """Whether ``tcgen05.mma.cta_group::1`` of ``.kind::<kind>`` has instruction N ``ni``: a multiple of 16, or of 8
    for :data:`N8_KINDS` (PTX ISA 9.7.16.2.1, Table 39, cta_group::1 dense: M = 64 and M = 128 both take N = 8,
    16, 24 ... 256; a 128 x 8 f16 tile is one UTCHMMA in tileiras' SASS too)."""
    return ni > 0 and (ni % 16 == 0 or (ni % 8 == 0 and kind in N8_KINDS))


def tmem_cols(m: int, n: int) -> int:
    """TMEM columns of an ``m x n`` accumulator: a 128-row block (or a 64-row tile, twice: lanes 0-15 and 16-31
    of each quarter) per ``n`` columns."""
    return n if m in SMALL_M else m // INST_M * n


def alloc_cols(cols: int) -> int:
    """The allocation for ``cols`` columns: a power of two >= 32 (PTX ISA 9.7.16.7.1)."""
    c = 32
    while c < cols:
        c *= 2
    return c


def ld_chunks(cols: int) -> list[tuple[int, int]]:
    """(first column, width) of the ``tcgen05.ld`` / ``st`` ``.32x32b`` moves of ``cols`` columns: up to
    :data:`LD_CHUNK` each, a power of two (``.num`` is .x1, .x2, .x4 ... .x128: PTX ISA 9.7.16.8.3, Table 49); 24
    columns (an N of 24) are 16 + 8."""
    out, c = [], 0
    while c < cols:
        w = 1 << (min(LD_CHUNK, cols - c).bit_length() - 1)
        out.append((c, w))
        c += w
    return out


class Tmem:
    """Per-kernel tensor-memory state (the module docstring): the allocation, its address, the mbarrier the
    MMAs commit to, the per-thread phase parity."""

    def __init__(self, cg):
        llvm = dialects.llvm
        self.scratch_cols = 0  # columns of the widest dot whose accumulator does not stay in tensor memory
        self.resident_cols = 0  # columns of the accumulators kept in tensor memory across loops (from 0)
        self.regions: list = []  # (dot, first column) of those accumulators
        lane, warp = cg.lane_and_warp()
        self.warp0 = None
        # a CTA pair (tileas ``pairs.decide``): every tcgen05 op .cta_group::2; PTX ISA 9.7.16.5 "Issue Granularity"
        # (Table 46): alloc / dealloc / relinquish by one warp in each CTA of the pair, mma / commit by one thread of
        # the pair (the rank-0 CTA's thread 0) while the peer has not exited (Table 47: a cluster barrier, then
        # dealloc, then exit)
        self.group = 2 if getattr(cg, "cta_pairs", None) else 1
        pair = {"cta_group": ir.IntegerAttr.get(cg.i32, 2)} if self.group == 2 else {}
        self.pair_attrs = pair
        name = f"{cg.smem_symbol}_tcgen05"
        with ir.InsertionPoint.at_block_begin(cg.gpu_module.regions[0].blocks[0]), ir.Location.unknown():
            ty = ir.Type.parse("!llvm.array<16 x i8>")
            g = llvm.GlobalOp(ty, name, ir.Attribute.parse("#llvm.linkage<internal>"), addr_space=3, alignment=16)
            g.regions[0].blocks.append()
            with ir.InsertionPoint(g.regions[0].blocks[0]):
                llvm.return_(arg=llvm.mlir_undef(ty))
        p3 = ir.Type.parse("!llvm.ptr<3>")
        with cg.entry_ip, ir.Location.unknown():
            self.phase = llvm.alloca(ir.Type.parse("!llvm.ptr"), cg.c32(1), cg.i32, alignment=4)
            llvm.store(cg.c32(0), self.phase)
            slot = llvm.mlir_addressof(p3, name)
            self.bar = llvm.getelementptr(p3, slot, [], [8], cg.i8, 0)
            self.warp0 = cg.cmpi(0, warp, cg.c32(0))
            self.thread0 = cg.cmpi(0, cg.tid, cg.c32(0))
            self.allocs = []
            cg.if_(self.warp0, lambda: self.allocs.append(ir.Operation.create("sm100.tmem_alloc", operands=[slot],
                                                                              attributes=dict(pair))))
            cg.if_(self.thread0, lambda: (ir.Operation.create("cute_nvgpu.mbarrier_init", operands=[self.bar]), [])[1])
            fence(cg, "before")
            self.sync(cg)  # a pair: both CTAs' allocations and mbarriers exist before either is used
            fence(cg, "after")
            self.issuer = self.thread0
            if self.group == 2:
                from tilecore_tileas.stage4_tileas_to_llvm.pairs import cta_rank

                self.issuer = cg.and_(self.thread0, cg.cmpi(0, cta_rank(cg), cg.c32(0)))
            self.taddr = llvm.load(cg.i32, slot)
            # the scratch columns start after the resident accumulators' (set by finish)
            self.scratch_base_op = ir.Operation.create("arith.constant", results=[cg.i32],
                                                       attributes={"value": ir.IntegerAttr.get(cg.i32, 0)})
            self.scratch_base = self.scratch_base_op.results[0]
            # this warp's TMEM lanes: 32 (w % 4) << 16
            self.lane_base = cg.op("arith.shli", cg.op("arith.remui", warp, cg.c32(4)), cg.c32(21))
        cg.finish_hooks["sm100.tmem"] = self.finish

    def sync(self, cg) -> None:
        """A barrier of the CTA, or of both CTAs of a pair (``barrier.cluster``: release / acquire)."""
        if self.group == 2:
            ir.Operation.create("sm100.cluster_sync")
        else:
            cg.barrier()

    @property
    def cols(self) -> int:
        """The allocation: a power of two >= 32 covering the resident accumulators and the scratch columns."""
        return alloc_cols(self.resident_cols + self.scratch_cols)

    def need(self, cols: int) -> None:
        self.scratch_cols = max(self.scratch_cols, cols)

    def region(self, key, cols: int, widest: int):
        """The first column (int) of dot ``key``'s resident accumulator of ``cols`` columns, or None when it does
        not fit beside the others and ``widest`` scratch columns (the widest dot of the kernel)."""
        for k, first in self.regions:
            if k == key:
                return first
        if self.resident_cols + cols + max(widest, self.scratch_cols) > TMEM_COLS:
            return None
        first = self.resident_cols
        self.regions.append((key, first))
        self.resident_cols += cols
        return first

    def finish(self, cg, fn) -> None:
        """Set the allocation's columns and the scratch columns' start; free it before every return."""
        ncols = ir.IntegerAttr.get(cg.i32, self.cols)
        self.scratch_base_op.attributes["value"] = ir.IntegerAttr.get(cg.i32, self.resident_cols)
        for op in self.allocs:
            op.attributes["ncols"] = ncols
        returns = []

        def walk(op):
            for region in op.regions:
                for block in region.blocks:
                    for o in block.operations:
                        if o.operation.name == "llvm.return":
                            returns.append(o.operation)
                        walk(o.operation)

        walk(fn)
        for ret in returns:
            with ir.InsertionPoint(ret), ir.Location.unknown():
                fence(cg, "before")
                self.sync(cg)  # a pair: neither CTA leaves while the other's MMAs may read its shared memory

                def free():
                    ir.Operation.create("sm100.tmem_dealloc", operands=[self.taddr],
                                        attributes={"ncols": ncols, **self.pair_attrs})
                    ir.Operation.create("sm100.tmem_relinquish", attributes=dict(self.pair_attrs))

                cg.if_(self.warp0, free)


def fence(cg, kind: str) -> None:
    ir.Operation.create(f"cute_nvgpu.tcgen05_fence_{kind}_thread_sync")


def tmem_state(cg) -> Tmem:
    state = getattr(cg, "sm100_tmem", None)
    if state is None:
        state = Tmem(cg)
        cg.sm100_tmem = state
    return state


class Umma:
    """One tcgen05 atom (module docstring): admissibility, operand layouts and the ``dot`` action."""

    def __init__(self, name: str, elems: tuple, acc: str, kind: str, k: int):
        self.name, self.elems, self.acc, self.kind, self.k = name, elems, acc, kind, k
        self.tmem_acc = "f32" if acc == "f16" else acc  # D's type in tensor memory (instruction descriptor)
        self.b_mn_major = True
        self.eb = element_bytes(elems[0])

    def admits(self, req) -> bool:
        from tilecore_tileas.layout.fragment import tmem_grid

        archs = ARCHS if self.kind != "i8" else ARCHS[:1]  # ptxas: no .kind::i8 on sm_103a
        if not (req.a in self.elems and req.b in self.elems and req.acc == self.acc and req.arch in archs):
            return False
        kp = self.k_padded(req.k)
        if not m_ok(req.m) or kp % self.k or req.threads % 128 or tmem_cols(req.m, req.n) > TMEM_COLS:
            return False
        if not swizzle_for(kp * self.eb) or not (self.narrow_b(req.n) or swizzle_for(req.n * self.eb)) or \
                not inst_n_ok(self.inst_n(req.n), self.kind):
            return False
        if tmem_grid(req.m, req.n, req.threads) is None:
            return False
        return sum(lay.nbytes for lay in self.layouts(req)) <= req.smem_budget

    def pair_ok(self, req) -> bool:
        """Whether a CTA pair can compute this dot as ``tcgen05.mma.cta_group::2`` (tileas ``pairs.decide``; B
        MN-major, split by columns between the CTAs): whole 128-row blocks (instruction M = 256: each CTA's 128
        rows, PTX ISA 9.7.16.2.1, Table 39, cta_group::2 dense M = 128 / 256), one N instruction (N a multiple of
        32 up to 256, so that each half is a multiple of 16), each half's rows a swizzle's width (32 bytes or more,
        read through its own descriptor)."""
        return (self.b_mn_major and self.k_padded(req.k) == req.k and req.m % INST_M == 0 and req.n % 32 == 0
                and self.inst_n(req.n) == req.n
                and swizzle_for(req.n // 2 * self.eb) > 0 and self.admits(req))

    def layouts(self, req, at: int = 0) -> tuple[SwizzledOperand, SwizzledOperand]:
        """A (M x K, K-major) at byte ``at``, B (K x N, N-major) after it: the layouts ``dot.smem_operand`` (and
        so the pipelined loops) give these rows; a 16- / 32-row A as the 64 rows of an M = 64 MMA, repeated
        (:class:`RepeatedRowsOperand`); K as :meth:`k_padded` lays it out."""
        eb, kp = self.eb, self.k_padded(req.k)
        a = small_a(SwizzledOperand(at, req.m, kp, eb, swizzle_for(kp * eb)))
        if self.narrow_b(req.n):  # B K-major: its N x K transpose
            return a, SwizzledOperand(at + a.nbytes, req.n, kp, eb, swizzle_for(kp * eb), transposed=True)
        return a, SwizzledOperand(at + a.nbytes, kp, req.n, eb, swizzle_for(req.n * eb))

    def k_padded(self, k: int) -> int:
        """K as A and B are laid out: ``k``, or 32 for a K of 16 of an 8-bit kind (rows of 16 bytes: under the
        narrowest swizzle, and half the instruction K of ``.kind::i8`` / ``.kind::f8f6f4``, PTX ISA 9.7.16.2.1,
        Table 39); elements ``k ..`` are zero (:meth:`fit_operands`), so they add nothing to D."""
        return 32 if self.kind in ("i8", "f8f6f4") and k == 16 else k

    def lower(self, cg, action: str, req, *args):
        if action == "layouts":
            return self.layouts(req, *args)
        if action == "dot":
            return self.dot(cg, req, *args)
        raise ValueError(f"atom {self.name}: unknown action '{action}'")

    def k_bytes(self, k: int) -> int:
        """Bytes of ``k`` elements of a K-major row."""
        return k * self.eb

    def inst_n(self, n: int) -> int:
        """The instruction N of a tile N (B MN-major: :func:`inst_n`; K-major, :meth:`narrow_b`: ``n``)."""
        return n if self.narrow_b(n) else inst_n(n, self.eb)

    def narrow_b(self, n: int) -> bool:
        """Whether B's N-major rows take no swizzle (N = 16 of an 8-bit kind, N = 8 of ``.kind::f16``: 16-byte rows;
        N an odd multiple of 8 of those; 8 bytes of N = 8 e4m3 / e5m2): B is then read K-major (its N x K
        transpose, rows of K), which every kind takes (the instruction descriptor's transpose-B bit 0, PTX ISA
        9.7.16.4.2); all N is one instruction (:func:`inst_n_ok`: N a multiple of 16, or of 8 for :data:`N8_KINDS`)."""
        return (self.kind in ("i8", "f8f6f4", "f16") and n % 8 == 0 and n <= MAX_N
                and not swizzle_for(n * self.eb))

    def kmajor_descriptor(self, cg, op: SwizzledOperand, kb: int, row: int):
        """The descriptor of a K-major operand (A; B of the e2m1 and tf32 atoms) from row ``row`` and byte ``kb`` of K:
        the swizzle column of ``kb``, then the byte within it (a K step inside a swizzle atom advances the start
        address), rows ``swizzle`` bytes apart (SBO: 8 rows; LBO unused with a swizzle)."""
        s = op.swizzle
        start = cg.op("arith.addi", op.base(cg), cg.c32((kb // s) * op.rows * s + kb % s + row * s))
        return self.descriptor(cg, start, 16, 8 * s, s)

    def b_descriptor(self, cg, b: SwizzledOperand, k0: int, col: int):
        """The descriptor of B (K x N, N-major) from K row ``k0`` and column ``col``: LBO = the distance between
        swizzle columns, SBO = 8 K rows; a K-major B (``b.transposed``: :meth:`narrow_b`) as A."""
        if getattr(b, "transposed", False):
            return self.kmajor_descriptor(cg, b, self.k_bytes(k0), col)
        s = b.swizzle
        start = cg.op("arith.addi", b.base(cg), cg.c32((col * self.eb // s) * b.rows * s + (k0 // 8) * 8 * s))
        return self.descriptor(cg, start, b.rows * s, 8 * s, s)

    @staticmethod
    def descriptor(cg, byte_offset, lbo: int, sbo: int, swizzle: int):
        """The i64 shared-memory descriptor of the operand starting ``byte_offset`` (i32) into the scratch buffer."""
        llvm = dialects.llvm
        i64 = cg.i64
        p = llvm.getelementptr(ir.Type.parse("!llvm.ptr<3>"), cg.smem_base, [byte_offset], [-2147483648], cg.i8, 0)
        addr = llvm.ptrtoint(i64, p)
        start = cg.op("arith.andi", cg.op("arith.shrui", addr, cg.const(i64, 4)), cg.const(i64, 0x3FFF))
        fixed = ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | 1 << 46 | SWIZZLE_MODE[swizzle] << 61
        fixed = fixed - (1 << 64) if fixed >= 1 << 63 else fixed
        return cg.op("arith.ori", start, cg.const(i64, fixed))

    def dot(self, cg, req, a: SwizzledOperand, b: SwizzledOperand, frag, acc_regs, k_dim: int, resident=None,
            scales=None) -> list:
        """``acc + A @ B`` for the whole tile; ``acc_regs``: the accumulator in ``frag`` (a ``TmemFragment``), or
        None for zero. Returns the result registers in ``frag``.

        ``resident`` (tileas' ``dot._resident_loop``: ``acc = mma(a, b, acc)`` in a loop, the carried value used
        by nothing else): the accumulator stays in its own tensor-memory columns across the loop: stored in the
        first iteration only (not at all from a zero splat: enable-input-d is then 0 for the first iteration's
        first K step), loaded back in the last iteration only (the other iterations pass the carried registers
        through unchanged: nothing reads them).

        ``scales`` (:class:`BlockScaledUmma`): the scale factors' shared-memory layouts (:class:`ScaleOperand`);
        they take the tensor-memory columns after the accumulator's, filled by ``tcgen05.cp`` before the MMAs."""
        llvm = dialects.llvm
        tm = tmem_state(cg)
        m, n = frag.shape
        cols = tmem_cols(m, n)
        first_col = None
        if self.acc == "f16":
            resident = None  # the f16 result of every dot (D is f32 in tensor memory: rounded when loaded)
        if resident is not None:
            widest = max([tmem_cols(d.m, d.n) for d in resident["dots"] if m_ok(d.m) and
                          tmem_cols(d.m, d.n) <= TMEM_COLS] + [0])
            first_col = tm.region(resident["key"], cols, widest)
        if first_col is None:
            resident = None
            tm.need(cols + sum(sf.cols for sf in scales or ()))
            col_base = tm.scratch_base
        else:
            col_base = cg.c32(first_col)
        d_base = cg.op("arith.addi", tm.taddr, col_base)
        sf_base = cg.op("arith.addi", d_base, cg.c32(cols)) if scales else None
        row0, col0 = cg.fragment_origin(frag)
        wrow, wcol = cg.warp_origin(frag)
        # this thread's TMEM address of register block r, column c: its lane, column (wrow / 128 + r) * n + wcol + c
        base = cg.op("arith.addi", cg.op("arith.addi", d_base, tm.lane_base),
                     cg.op("arith.addi", cg.op("arith.muli", cg.op("arith.divui", wrow, cg.c32(INST_M)), cg.c32(n)),
                           wcol))
        chunks = [(r, c, w) for r in range(frag.insts) for c, w in ld_chunks(frag.cols)]

        def addr(r, c):
            off = r * n + c
            return cg.op("arith.addi", base, cg.c32(off)) if off else base

        vi = {w: ir.VectorType.get([w], cg.i32) for _, _, w in chunks}

        def store():
            for r, c, w in chunks:
                v = llvm.mlir_poison(vi[w])
                for j in range(w):
                    x = acc_regs[r * frag.cols + c + j]
                    x = llvm.fpext(ir.F32Type.get(), x) if isinstance(x.type, ir.F16Type) else x
                    x = x if x.type == cg.i32 else llvm.bitcast(cg.i32, x)
                    v = llvm.insertelement(v, x, cg.c32(j))
                ir.Operation.create("sm100.tmem_store", operands=[addr(r, c), v])
            ir.Operation.create("sm100.tmem_wait", attributes={"kind": ir.StringAttr.get("store")})

        # enable-input-d of the first K step: 0 from a zero accumulator (resident: in the loop's first iteration)
        enable0 = cg.const(cg.i1, 0 if acc_regs is None else 1)
        if resident is None and acc_regs is not None:
            store()
        elif resident is not None and resident["zero_init"]:
            enable0 = cg.op("arith.xori", resident["first"], cg.const(cg.i1, 1))
        elif resident is not None:
            cg.if_(resident["first"], lambda: (store(), [])[1])
        paired = tm.group == 2
        if not scales and not paired:
            a, b = self.fit_operands(cg, req, a, b)
        if paired and (scales or getattr(b, "cols", 0) * 2 != n):
            from tilecore.errors import LoweringError

            raise LoweringError(f"atom {self.name}: a paired kernel's dot must read half of B from its stage")
        ir.Operation.create("cute_nvgpu.fence_view_async_shared")
        fence(cg, "before")
        tm.sync(cg)  # a pair: both CTAs' operands (and stored accumulators) are in place before the MMA
        fence(cg, "after")
        m64 = getattr(frag, "m64", False)
        ni = n if paired else self.inst_n(n)
        # a pair's instruction M is both CTAs' rows (PTX ISA 9.7.16.10.9: cta_group::2, M = 256 is 128 per CTA)
        idesc = None if scales else instr_desc(self.kind, req.a, req.b, self.tmem_acc, ni, req.a_signed,
                                               req.b_signed, 64 if m64 else INST_M * tm.group,
                                               self.b_mn_major and not getattr(b, "transposed", False))
        # (first A row, first B column, D offset: (lane << 16) + column) of each instruction of a K step; a 64-row
        # tile is computed twice, into lanes 0.. and 16.. of each quarter (layout F), so that every thread's
        # tcgen05.ld .32x32b lane holds its row
        places = [(0, nb, (16 << 16) * h + nb) for h in (0, 1) for nb in range(0, n, ni)] if m64 else \
            [(blk * INST_M, nb, blk * n + nb) for blk in range(m // INST_M) for nb in range(0, n, ni)]
        if m64 and scales:  # block-scaled: one M = 128 MMA over A in layout F (:class:`LayoutFOperand`)
            places = [(0, nb, nb) for nb in range(0, n, ni)]

        def issue():
            idesc_v = None if scales else cg.c32(idesc)
            one = cg.const(cg.i1, 1)
            if scales:
                self.copy_scales(cg, scales, sf_base)
            for k0 in range(0, k_dim, self.k):
                kb = self.k_bytes(k0)
                enable = one if k0 else enable0
                for row, col, d_off in places:
                    da = self.kmajor_descriptor(cg, a, kb, row)
                    db = self.b_descriptor(cg, b, k0, col)
                    d = cg.op("arith.addi", d_base, cg.c32(d_off)) if d_off else d_base
                    if scales:
                        self.mma_scaled(cg, req, scales, sf_base, d, da, db, enable, k0, row, col, ni,
                                        not getattr(b, "transposed", False))
                        continue
                    ir.Operation.create("sm100.umma", operands=[d, da, db, idesc_v, enable],
                                        attributes={"kind": ir.StringAttr.get(self.kind), **tm.pair_attrs})
            # a pair: the commit arrives on the mbarrier of both CTAs (PTX ISA 9.7.16.11.1, .multicast::cluster)
            multicast = {"multicast": ir.IntegerAttr.get(cg.i32, 3)} if paired else {}
            ir.Operation.create("sm100.umma_commit", operands=[tm.bar], attributes={**tm.pair_attrs, **multicast})

        cg.if_(tm.issuer, issue)
        parity = llvm.load(cg.i32, tm.phase)
        ir.Operation.create("cute_nvgpu.mbarrier_try_wait_parity", operands=[tm.bar, parity])
        llvm.store(cg.op("arith.xori", parity, cg.c32(1)), tm.phase)
        fence(cg, "after")
        el = ir.F32Type.get() if self.tmem_acc == "f32" else cg.i32

        def load():
            loaded = [ir.Operation.create("sm100.tmem_load", results=[vi[w]], operands=[addr(r, c)],
                                          attributes={"num": ir.IntegerAttr.get(cg.i32, w)}).results[0]
                      for r, c, w in chunks]
            ir.Operation.create("sm100.tmem_wait", attributes={"kind": ir.StringAttr.get("load")})
            out = []
            for v, (_, _, w) in zip(loaded, chunks):
                for j in range(w):
                    x = llvm.extractelement(v, cg.c32(j))
                    x = x if el == cg.i32 else llvm.bitcast(el, x)
                    out.append(llvm.fptrunc(ir.F16Type.get(), x) if self.acc == "f16" else x)
            return out

        if resident is None:
            return load()
        return cg.if_(resident["last"], load, lambda: list(acc_regs), types=[el] * len(acc_regs))


    def fit_operands(self, cg, req, a, b):
        """A and B as the atom reads them (:meth:`layouts`; tileas copies a pipelined loop's stage of another layout
        there first: a 16- / 32-row A, an MN-major B read K-major, rows of 16 bytes); with a padded K
        (:meth:`k_padded`), elements ``K ..`` of A and B zeroed (:func:`tilecore.mma.zero_k_padding`, before the dot's fence and
        barrier)."""
        la, lb = self.layouts(req)
        for x, lay in ((a, la), (b, lb)):
            if not (isinstance(x, SwizzledOperand) and (x.rows, x.cols, x.elem_bytes, x.swizzle, x.transposed) ==
                    (lay.rows, lay.cols, lay.elem_bytes, lay.swizzle, lay.transposed)):
                from tilecore.errors import LoweringError

                raise LoweringError(f"atom {self.name}: an operand is not in the atom's layout ({lay.rows} x "
                                    f"{lay.cols}, {lay.swizzle}-byte swizzle)")
        if self.k_padded(req.k) != req.k:
            zero_k_padding(cg, a, req.k, True)
            zero_k_padding(cg, b, req.k, b.transposed)
        return a, b


class Tf32Umma(Umma):
    """The tf32 atom ``mma.sm100a.mMnNk8.tf32.f32`` (``tcgen05.mma.cta_group::1.kind::tf32``, K = 8): B K-major.

    An MN-major tf32 operand needs the 128B swizzle with 32-byte atoms (PTX ISA 9.7.16.10.1, Table 52), a layout
    neither the pipelined loops nor :class:`tilecore.mma.SwizzledOperand` make; K-major operands take the
    ordinary swizzles (the K-major rows of tf32 are 4-byte elements, 8 to a 32-byte swizzle atom). So B is laid
    out as its transpose (N x K, ``SwizzledOperand(transposed=True)``: tileas writes the tile through it with the
    coordinates unchanged) and read through a K-major descriptor like A's; the instruction descriptor's transpose B
    bit is 0. A pipelined loop hands B over as its MN-major stage: the dot first copies it into that layout
    (:meth:`transpose_b`)."""

    def __init__(self, name: str):
        super().__init__(name, ("tf32",), "f32", "tf32", 8)
        self.b_mn_major = False

    def admits(self, req) -> bool:
        from tilecore_tileas.layout.fragment import tmem_grid

        if not (req.a == "tf32" and req.b == "tf32" and req.acc == "f32" and req.arch in ARCHS):
            return False
        if not m_ok(req.m) or req.k % self.k or req.threads % 128 or req.n % 8 or \
                tmem_cols(req.m, req.n) > TMEM_COLS or not swizzle_for(req.k * 4) or \
                not inst_n_ok(self.inst_n(req.n), self.kind):
            return False
        if tmem_grid(req.m, req.n, req.threads) is None:
            return False
        return sum(lay.nbytes for lay in self.layouts(req)) <= req.smem_budget

    def inst_n(self, n: int) -> int:
        """B is K-major: the widest multiple of 16 up to 256 dividing ``n``, else of 8 (:func:`inst_n_ok`)."""
        return next((c for step in (16, 8) for c in range(min(n, MAX_N) // step * step, 0, -step) if n % c == 0), 0)

    def layouts(self, req, at: int = 0, *_):
        """A (M x K, K-major) at ``at``, B as its transpose (N x K, K-major) after it."""
        s = swizzle_for(req.k * 4)
        a = small_a(SwizzledOperand(at, req.m, req.k, 4, s))
        return a, SwizzledOperand(at + a.nbytes, req.n, req.k, 4, s, transposed=True)

    def b_descriptor(self, cg, b: SwizzledOperand, k0: int, col: int):
        return self.kmajor_descriptor(cg, b, k0 * 4, col)



# -- block scaling (cuda_tile mmaf_scaled) ---------------------------------------------------------
# atom name -> (A / B elements, scale factor element, K elements per scale factor, kind, instruction K)
BS_ATOMS = {
    "mma.sm100a.mMnNk32.mxf8.f32": (("f8E4M3FN", "f8E5M2"), "f8E8M0FNU", 32, "mxf8f6f4", 32),
}
BS_ARCHS = ("sm_100a", "sm_103a")  # sm_103a: inline PTX (:mod:`.tcgen05`)
SF_CHUNK_ROWS = 128  # rows of scale factors one tcgen05.cp .32x128b.warpx4 moves (32 lanes x 4 columns)
SF_CHUNK_BYTES = 512  # their image in shared memory: 32 rows of 16 bytes
SF_PER_WORD = 4  # 1X scale factors (bytes) in a 32-bit tensor-memory cell: the SF ID picks one


F4 = "f4E2M1FN"
BS_ABTYPE = {"f8E4M3FN": 0, "f8E5M2": 1, F4: 1}  # Table 44: mxf8f6f4 E4M3 0 / E5M2 1; mxf4 / mxf4nvf4 E2M1 1


def instr_desc_bs(a: str, b: str, n: int, sfa_id: int, sfb_id: int, m: int = INST_M, ue8m0: bool = True,
                  b_mn_major: bool = True) -> int:
    """The 32-bit block-scaled instruction descriptor (PTX ISA 9.7.16.4.2, Table 44, .kind::mxf8f6f4 / mxf4 /
    mxf4nvf4): SF B ID (bits 4-5), atype / btype (7-9 / 10-12: E4M3 0, E5M2 1; E2M1 1), transpose B (bit 16: 1 =
    MN-major for mxf8f6f4, 0 for a K-major B; e2m1 operands are K-major, the mxf4 kinds have no transpose, Table
    49), N >> 3 (17-22), scale format (23: UE8M0 1, UE4M3 0), M >> 4 (24-28), SF A ID (29-30); bit 31 (K = 96)
    stays 0."""
    return (sfb_id << 4 | BS_ABTYPE[a] << 7 | BS_ABTYPE[b] << 10 | int(a != F4 and b_mn_major) << 16
            | (n >> 3) << 17 | int(ue8m0) << 23 | (m >> 4) << 24 | sfa_id << 29)


@dataclass(frozen=True)
class ScaleOperand:
    """A block-scaled dot's scale factors in shared memory, as ``tcgen05.cp .32x128b.warpx4`` takes them (PTX
    ISA 9.7.16.10.7 "Block Scaling for tcgen05.mma", the scale factor A / B layouts for M = 128 with
    scale_vec::1X): ``rows`` (M of A, N of B) x ``blocks`` (K / 32) bytes cut into chunks of 128 rows x 4 blocks;
    chunk ``(block / 4) * chunks + row / 128`` is 512 bytes at ``offset``: row ``r`` at byte ``16 (r % 32) +
    4 ((r % 128) / 32) + block % 4`` (the K-major canonical layout without swizzle, 8-row core matrices 128
    bytes apart). The copy puts byte row ``l`` of a chunk in lane ``l`` of each 32-lane partition, so scale
    factor (r, block) lands in lane ``r % 32``, column ``4 * chunk + (r % 128) / 32``, byte ``block % 4`` (the
    SF ID of the MMAs of that block); B's tile coordinates are (block, n) (``transposed``)."""

    offset: int
    rows: int
    blocks: int
    transposed: bool = False
    elem: object = None
    layout_f: bool = False  # a 64-row tile's scale factors for an M = 128 MMA (:func:`layout_f_rows`)
    tile_rows: int = 64  # layout_f: the tile's rows (64, 32 or 16)

    @property
    def chunks(self) -> int:
        return (self.rows + SF_CHUNK_ROWS - 1) // SF_CHUNK_ROWS

    @property
    def groups(self) -> int:
        return (self.blocks + SF_PER_WORD - 1) // SF_PER_WORD

    @property
    def nbytes(self) -> int:
        return (self.groups * self.chunks * SF_CHUNK_BYTES + 1023) // 1024 * 1024

    @property
    def cols(self) -> int:
        """Tensor-memory columns: 4 per chunk."""
        return self.groups * self.chunks * 4

    def address(self, cg, row, col):
        """``!llvm.ptr<3>`` of scale factor (``row``, ``col``) (i32 values; A: (m, block), B: (block, n))."""
        r, kb = (col, row) if self.transposed else (row, col)
        op, c = cg.op, cg.c32
        chunk = op("arith.addi", op("arith.muli", op("arith.divui", kb, c(SF_PER_WORD)), c(self.chunks)),
                   op("arith.divui", r, c(SF_CHUNK_ROWS)))
        within = op("arith.addi", op("arith.muli", op("arith.remui", r, c(32)), c(16)),
                    op("arith.addi", op("arith.muli", op("arith.remui", op("arith.divui", r, c(32)), c(4)), c(4)),
                       op("arith.remui", kb, c(SF_PER_WORD))))
        byte = op("arith.addi", op("arith.addi", op("arith.muli", chunk, c(SF_CHUNK_BYTES)), within), c(self.offset))
        return cg.smem_ptr(0, byte, self.elem)

    def addresses(self, cg, row, col) -> list:
        """Every place of scale factor (``row``, ``col``): one, or (``layout_f``) both rows of
        :func:`layout_f_rows`."""
        if not self.layout_f:
            return [self.address(cg, row, col)]
        return [self.address(cg, r, col) for r in layout_f_rows(cg, row, self.tile_rows)]


def layout_f_rows(cg, row, m: int = 64) -> tuple:
    """The rows of an M = 128 operand that hold row ``row`` (i32) of an ``m``-row tile: ``p = 32 (row / 16) + row %
    16`` and ``p + 16`` (and, for a 32- / 16-row tile, those plus ``2 m``, ``4 m``, ...: M = 128 row ``r`` is tile
    row ``(16 (r / 32) + r % 16) % m``, what thread ``r % 32`` of warp ``r / 32`` holds in the tcgen05 fragment). An M = 128 block-scaled MMA over such an A (and its scale factors) writes row ``i`` of the
    tile into the lanes the 64-row tcgen05 fragment reads it from (lanes ``32 (i / 16) + i % 16`` and ``+ 16``:
    layout F, duplicated), as the plain atoms' two M = 64 MMAs do; block-scaled MMAs have no M = 64 shape (PTX
    ISA 9.7.16.2.1, Table 39: ``.kind::mxf8f6f4 / mxf4 / mxf4nvf4 .block_scale``, cta_group::1: 128xNxK only)."""
    op, c = cg.op, cg.c32
    p = op("arith.addi", op("arith.muli", op("arith.divui", row, c(16)), c(32)), op("arith.remui", row, c(16)))
    return tuple(op("arith.addi", p, c(d)) if d else p for j in range(64 // m) for d in (2 * m * j, 2 * m * j + 16))


@dataclass(frozen=True)
class LayoutFOperand(SwizzledOperand):
    """A 64-row (or 32- / 16-row: ``tile_rows``) A as the 128-row K-major operand of an M = 128 block-scaled MMA:
    row ``i`` written at every row of :func:`layout_f_rows` (tileas' ``_write_swizzled`` stores every place
    ``addresses`` gives)."""

    tile_rows: int = 64

    def addresses(self, cg, row, col) -> list:
        return [self.address(cg, r, col) for r in layout_f_rows(cg, row, self.tile_rows)]


@dataclass(frozen=True)
class RepeatedRowsOperand(SwizzledOperand):
    """A 16- or 32-row A (``tile_rows``) as the 64-row K-major operand of an M = 64 MMA: tile row ``i`` at rows
    ``i, i + tile_rows, ...`` (MMA row ``r`` is tile row ``r % tile_rows``). The two M = 64 MMAs of a 64-row tile
    (D lanes 0 and 16, layout F: PTX ISA 9.7.16.10.5) then put tile row ``(16 w + l % 16) % tile_rows`` in lane
    ``l`` of warp ``w``'s quarter, the row tileas' ``TmemFragment`` gives that thread (the warps past
    ``tile_rows / 16`` hold copies). Why repeated and not zero rows: zero rows would leave those warps' lanes
    zero, and only warp ``w % 4`` may read its 32 lanes (9.7.16.8.1, access restrictions)."""

    tile_rows: int = 64

    def addresses(self, cg, row, col) -> list:
        return [self.address(cg, cg.op("arith.addi", row, cg.c32(r)) if r else row, col)
                for r in range(0, self.rows, self.tile_rows)]


def small_a(a: SwizzledOperand) -> SwizzledOperand:
    """A (``rows x K``) as an M = 64 MMA reads it: unchanged for 64 rows or more, else its rows repeated to 64."""
    if a.rows >= 64:
        return a
    return RepeatedRowsOperand(a.offset, 64, a.cols, a.elem_bytes, a.swizzle, tile_rows=a.rows)


class BlockScaledUmma(Umma):
    """A block-scaled tcgen05 atom (kind ``block_scaled_mma``, :mod:`tilecore.mma`): A / B as the plain atoms',
    the scale factors (:class:`ScaleOperand`) copied to tensor memory with ``tcgen05.cp`` by the issuing thread
    (ordered before its MMAs: PTX ISA 9.7.16.6, tcgen05.cp -> tcgen05.mma), then one
    ``tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale`` per 128-row block, N instruction and K step of 32
    (one scale factor per row / column: scale_vec::1X), its SF IDs the K step's block % 4."""

    def __init__(self, name: str, elems: tuple, scale: str, block: int, kind: str, k: int, vec: str = ""):
        super().__init__(name, elems, "f32", kind, k)
        self.scale, self.block, self.vec = scale, block, vec  # vec: the PTX block size ("block16"), "" = default

    def admits(self, req) -> bool:
        from tilecore_tileas.layout.fragment import tmem_grid

        if not (req.a in self.elems and req.b in self.elems and req.acc == "f32" and req.arch in BS_ARCHS
                and req.scale == self.scale and req.scale_block == self.block):
            return False
        if not m_ok(req.m) or req.k % self.k or req.threads % 128:
            return False
        if not swizzle_for(req.k * self.eb) or not (self.narrow_b(req.n) or swizzle_for(req.n * self.eb)):
            return False
        ni = self.inst_n(req.n)
        if not ni or ni % 32 and ni != req.n:  # each instruction's B scale factors start at a column
            return False
        _, _, sa, sb = self.layouts(req)
        if tmem_cols(req.m, req.n) + sa.cols + sb.cols > TMEM_COLS or tmem_grid(req.m, req.n, req.threads) is None:
            return False
        return sum(lay.nbytes for lay in self.layouts(req)) <= req.smem_budget

    def layouts(self, req, at: int = 0, b_major: str = "n", a_staged: bool = False):
        """A, B (:meth:`Umma.layouts`; ``b_major="k"``: B K-major, as its N x K transpose, the layout a pipelined
        loop copies a transposed view's tile into), then the scale factors of A (M x K / 32) and of B (K / 32 x N).
        (``a_staged``: A is a stage buffer, which the e2m1 atoms read packed; these read it as written.)"""
        a, b = super().layouts(req, at)
        if b_major == "k" or self.narrow_b(req.n):
            b = SwizzledOperand(b.offset, req.n, req.k, self.eb, swizzle_for(req.k * self.eb), transposed=True)
        blocks = req.k // self.block
        m64 = req.m in SMALL_M  # one M = 128 MMA over A's rows in layout F (:func:`layout_f_rows`)
        if m64:
            a = LayoutFOperand(a.offset, INST_M, a.cols, a.elem_bytes, a.swizzle, tile_rows=req.m)
            b = replace(b, offset=a.offset + a.nbytes)
        sa = ScaleOperand(b.offset + b.nbytes, INST_M if m64 else req.m, blocks, layout_f=m64, tile_rows=req.m)
        return a, b, sa, ScaleOperand(sa.offset + sa.nbytes, req.n, blocks, True)

    def lower(self, cg, action: str, req, *args):
        if action == "layouts":
            return self.layouts(req, *args)
        if action == "dot":
            a, b, sa, sb, frag, acc_regs, k_dim = args
            return self.dot(cg, req, a, b, frag, acc_regs, k_dim, None, (sa, sb))
        raise ValueError(f"atom {self.name}: unknown action '{action}'")

    def narrow_b(self, n: int) -> bool:
        """N = 16 of 8-bit operands (``.kind::mxf8f6f4``: rows of B under 32 bytes): B K-major (:meth:`layouts`),
        which the kind takes (the instruction descriptor's transpose-B bit 0, Table 44)."""
        return self.kind == "mxf8f6f4" and n % 16 == 0 and n <= MAX_N and not swizzle_for(n * self.eb)

    def b_descriptor(self, cg, b: SwizzledOperand, k0: int, col: int):
        """B MN-major (:meth:`Umma.b_descriptor`), or K-major (``b.transposed``: N x K, a pipelined loop's stage of
        a transposed view; .kind::mxf8f6f4 takes either, the transpose bit of :func:`instr_desc_bs` says which)."""
        if getattr(b, "transposed", False):
            return self.kmajor_descriptor(cg, b, self.k_bytes(k0), col)
        return super().b_descriptor(cg, b, k0, col)

    def copy_scales(self, cg, scales, sf_base) -> None:
        """``tcgen05.cp .32x128b.warpx4`` of every 512-byte chunk of both scale operands: A's to the columns
        from ``sf_base``, B's after them (4 columns a chunk)."""
        col = 0
        for sf in scales:
            for ci in range(sf.groups * sf.chunks):
                desc = self.descriptor(cg, cg.c32(sf.offset + ci * SF_CHUNK_BYTES), SF_CHUNK_BYTES, 128, 0)
                t = cg.op("arith.addi", sf_base, cg.c32(col)) if col else sf_base
                ir.Operation.create("sm100.tmem_cp", operands=[t, desc])
                col += 4

    def mma_scaled(self, cg, req, scales, sf_base, d, da, db, enable, k0: int, row: int, col: int, ni: int,
                   b_mn_major: bool = True) -> None:
        """The block-scaled MMA of K step ``k0`` for A rows from ``row`` and B columns from ``col``: its scale
        factors at the chunk column of its rows (``row / 32``, ``col / 32``: lane 0 holds row ``row``), the
        byte of its block (SF ID); ``b_mn_major``: B's major (the descriptor's transpose bit)."""
        sa, sb = scales
        kb = k0 // self.block
        g, sid = kb // SF_PER_WORD, kb % SF_PER_WORD
        sfa = cg.op("arith.addi", sf_base, cg.c32(g * sa.chunks * 4 + row // 32))
        sfb = cg.op("arith.addi", sf_base, cg.c32(sa.cols + g * sb.chunks * 4 + col // 32))
        idesc = instr_desc_bs(req.a, req.b, ni, sid, sid, ue8m0=self.scale == "f8E8M0FNU", b_mn_major=b_mn_major)
        attrs = {"kind": ir.StringAttr.get(self.kind)}
        if self.vec:
            attrs["block"] = ir.StringAttr.get(self.vec)
        ir.Operation.create("sm100.umma_bs", operands=[d, da, db, cg.c32(idesc), enable, sfa, sfb], attributes=attrs)


# -- block-scaled e2m1 (MXFP4 / NVFP4) --------------------------------------------------------------
# atom name -> (scale factor element, K elements per scale factor, kind, PTX block size); instruction K = 64
F4_ATOMS = {
    "mma.sm100a.mMnNk64.mxf4.f32": ("f8E8M0FNU", 32, "mxf4", ""),  # MXFP4: scale_vec::2X, UE8M0
    "mma.sm100a.mMnNk64.nvf4.f32": ("f8E4M3FN", 16, "mxf4nvf4", "block16"),  # NVFP4: scale_vec::4X, UE4M3
    # e2m1 with UE8M0 per 16: .kind::mxf4nvf4 .scale_vec::4X takes .ue8m0 as well as .ue4m3 (PTX ISA 9.7.16.10.7,
    # the block-scaling table of kinds / scale types / vector sizes; mma.sync's Table 36 the same); the NVFP4 atom
    # with scale format bit 23 = 1 (``instr_desc_bs(ue8m0=True)``), the same scale-factor layout (a byte a block)
    "mma.sm100a.mMnNk64.nvf4ue8m0.f32": ("f8E8M0FNU", 16, "mxf4nvf4", "block16"),
}
F4_K = 64  # K of one .kind::mxf4 / mxf4nvf4 MMA (32 bytes of packed e2m1 per row)


@dataclass(frozen=True)
class ByteStaging:
    """An operand's e2m1 codes, one byte each, row-major (``rows x cols``) at ``offset``: where tileas writes the
    tile (its registers hold one code each) before :meth:`BlockScaledF4Umma.pack` packs them."""

    offset: int
    rows: int
    cols: int
    elem: object = None

    @property
    def nbytes(self) -> int:
        return (self.rows * self.cols + 15) // 16 * 16

    def address(self, cg, row, col):
        return cg.smem_ptr(self.offset, cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(self.cols)), col), cg.i8)


class BlockScaledF4Umma(BlockScaledUmma):
    """A block-scaled e2m1 atom: ``tcgen05.mma.cta_group::1.kind::mxf4.block_scale`` (MXFP4: UE8M0 scale factor
    per 32, scale_vec::2X) or ``.kind::mxf4nvf4.block_scale.block16`` (NVFP4: UE4M3, or UE8M0, per 16,
    scale_vec::4X), K = 64 per MMA (PTX ISA 9.7.16.2.1, Table 39; 9.7.16.10.7 Tables 54 / 55).

    The mxf4 kinds read A and B K-major only (no transpose, Table 49) and packed: two e2m1 to a byte, the lower K
    index in the low 4 bits, rows of K / 2 bytes in the canonical K-major swizzled layout (32 bytes per MMA).
    tileas writes the tiles one code per byte (:class:`ByteStaging`, A M x K, B K x N); the dot first packs them
    (every thread, after a barrier) into A (M x K / 2) and B (N x K / 2, B's transpose), then runs as
    :class:`BlockScaledUmma`: the scale factors' layout is the same (a byte per block, 4 to a tensor-memory
    word), the SF ID of a K step being its first block % 4 (2X: 0 / 2; 4X: 0)."""

    def __init__(self, name: str, scale: str, block: int, kind: str, vec: str):
        super().__init__(name, (F4,), scale, block, kind, F4_K, vec)

    def k_bytes(self, k: int) -> int:
        return k // 2

    def k_padded(self, k: int) -> int:
        """K as the packed operands and scale factors are laid out: ``k`` rounded up to a multiple of 64 (an MMA's
        K; e.g. K = 32, rows of 16 bytes); the packing writes zero codes past ``k`` and the padded blocks' scale
        factors are zeroed: zero products, so nothing is added to D."""
        return -(-k // F4_K) * F4_K if k % self.block == 0 else k

    def inst_n(self, n: int) -> int:
        """B is K-major: the widest multiple of 16 up to 256 dividing ``n``, else of 8 (:func:`inst_n_ok`)."""
        return next((c for step in (16, 8) for c in range(min(n, MAX_N) // step * step, 0, -step) if n % c == 0), 0)

    def b_descriptor(self, cg, b: SwizzledOperand, k0: int, col: int):
        return self.kmajor_descriptor(cg, b, k0 // 2, col)

    def admits(self, req) -> bool:
        from tilecore_tileas.layout.fragment import tmem_grid

        if not (req.a == F4 and req.b == F4 and req.acc == "f32" and req.arch in BS_ARCHS
                and req.scale == self.scale and req.scale_block == self.block):
            return False
        if not m_ok(req.m) or self.k_padded(req.k) % self.k or req.n % 16 or req.threads % 128:
            return False
        ni = self.inst_n(req.n)
        if not ni or ni % 32 and ni != req.n:  # each instruction's B scale factors start at a column
            return False
        lays = self.all_layouts(req)
        if tmem_cols(req.m, req.n) + lays[4].cols + lays[5].cols > TMEM_COLS or \
                tmem_grid(req.m, req.n, req.threads) is None:
            return False
        return max(lay.offset + lay.nbytes for lay in lays) <= req.smem_budget

    def all_layouts(self, req, at: int = 0):
        """A and B staged a code a byte (:class:`ByteStaging`), A and B packed (K-major, ``K / 2`` bytes a row; a
        64-row A as 128 rows in layout F, :func:`layout_f_rows`), the scale factors of A and B."""
        a_st = ByteStaging(at, req.m, req.k)
        b_st = ByteStaging(a_st.offset + a_st.nbytes, req.k, req.n)
        kp = self.k_padded(req.k)
        s = swizzle_for(kp // 2)
        a_p = SwizzledOperand((b_st.offset + b_st.nbytes + 1023) // 1024 * 1024, 128 if req.m in SMALL_M else req.m,
                              kp // 2, 1, s)
        b_p = SwizzledOperand(a_p.offset + a_p.nbytes, req.n, kp // 2, 1, s)
        blocks = kp // self.block
        sa = ScaleOperand(b_p.offset + b_p.nbytes, a_p.rows, blocks, layout_f=req.m in SMALL_M, tile_rows=req.m)
        return a_st, b_st, a_p, b_p, sa, ScaleOperand(sa.offset + sa.nbytes, req.n, blocks, True)

    def layouts(self, req, at: int = 0, b_major: str = "n", a_staged: bool = False):
        """What tileas writes: A and B a code a byte (:class:`ByteStaging`), the scale factors (the packed operands
        lie between them). An operand that comes packed (a pipelined loop's stage, or a single dot's, filled by
        TMA with the tensor's bytes: tileas ``pipeline``) takes the packed K-major layout instead: A with
        ``a_staged`` (a 64-row A as 128 rows in layout F, :class:`LayoutFOperand`, which the stage is copied into),
        B with ``b_major="k"`` (its N x K / 2 transpose: a transposed view of an N x K tensor, or a
        ``ct.transpose``d N x K tile, is that in memory already; a K x N B is packed along N and stays staged)."""
        a_st, b_st, a_p, b_p, sa, sb = self.all_layouts(req, at)
        a = a_st
        if a_staged:
            a = LayoutFOperand(a_p.offset, a_p.rows, a_p.cols, 1, a_p.swizzle, tile_rows=req.m) \
                if req.m in SMALL_M else a_p
        b = replace(b_p, transposed=True) if b_major == "k" else b_st
        if b_major == "n_packed":  # a K x N stage of B's bytes, packed along N (:meth:`_code`): repacked per dot
            b = SwizzledOperand(b_st.offset, req.k, req.n // 2, 1, swizzle_for(req.n // 2))
        return a, b, sa, sb

    def lower(self, cg, action: str, req, *args):
        if action == "dot":
            a, b, sa, sb, frag, acc_regs, k_dim = args
            a, b = self.packed_operands(cg, req, a, b, sa, sb)
            if self.k_padded(req.k) != req.k:
                self.zero_scale_pad(cg, req, sa, sb)
            return self.dot(cg, req, a, b, frag, acc_regs, k_dim, None, (sa, sb))
        return super().lower(cg, action, req, *args)

    def packed_operands(self, cg, req, a, b, sa, sb):
        """A and B packed: a staged operand (:class:`ByteStaging`) packed after a barrier (every thread a share,
        :meth:`pack`) into its packed layout past the other layouts, one that came packed (a stage, or its layout-F
        copy) as it is."""
        staged = [isinstance(x, ByteStaging) for x in (a, b)]
        # a K x N B stage of the tensor's bytes (packed along N: tileas ``pipeline``): repacked along K as staged codes
        staged[1] = staged[1] or (isinstance(b, SwizzledOperand) and not b.transposed and b.cols * 2 == req.n)
        if not any(staged):
            return a, b
        _, _, a_p, b_p, _, _ = self.all_layouts(req)
        at = (max(x.offset + x.nbytes for x in (a, b, sa, sb)) + 1023) // 1024 * 1024
        a_p = replace(a_p, offset=at)
        b_p = replace(b_p, offset=at + a_p.nbytes)
        cg.reserve(b_p.offset + b_p.nbytes)
        cg.barrier()  # the staged codes are written
        if staged[0]:
            self.pack(cg, a, a_p, False, req.m if req.m in SMALL_M else 0, req.k)
        if staged[1]:
            self.pack(cg, b, b_p, True, 0, req.k)
        return a_p if staged[0] else a, b_p if staged[1] else b

    def zero_scale_pad(self, cg, req, sa: ScaleOperand, sb: ScaleOperand) -> None:
        """Zero the scale factors of the padded K blocks (``K / block ..``: a K of 32 laid out as 64,
        :meth:`k_padded`) of every row of A's (all 128 of a layout-F A) and every column of B's, a byte a store,
        every thread a share: the padded codes are zero, and a zero scale factor keeps their products zero (an
        uninitialised one could be NaN)."""
        op, c = cg.op, cg.c32
        first = req.k // self.block
        pad = sa.blocks - first
        zero = cg.const(cg.i8, 0)
        for sf in (sa, sb):
            sf = replace(sf, elem=cg.i8)
            rows = sf.rows
            total = rows * pad

            def one(i, sf=sf):
                r, kb = op("arith.divui", i, c(pad)), op("arith.addi", op("arith.remui", i, c(pad)), c(first))
                dialects.llvm.store(zero, sf.address(cg, kb, r) if sf.transposed else sf.address(cg, r, kb))

            cg.each_share(total, one)

    @staticmethod
    def _code(cg, st, k, n):
        """The e2m1 code (k, n) (i8, in its low 4 bits) of B staged a code a byte (:class:`ByteStaging`), or of a K x N B
        stage of the tensor's bytes, packed along N (a swizzled K x N / 2 layout: element ``n`` in the low half of
        byte ``n / 2`` when even, the high half when odd; tileas ``pipeline``'s TMA / cp.async stage)."""
        if not isinstance(st, SwizzledOperand):
            return dialects.llvm.load(cg.i8, st.address(cg, k, n))
        op = cg.op
        byte = dialects.llvm.load(cg.i8, st.address(cg, k, op("arith.shrui", n, cg.c32(1))))
        shift = dialects.arith.trunci(cg.i8, op("arith.shli", op("arith.andi", n, cg.c32(1)), cg.c32(2)))
        return op("arith.shrui", byte, shift)

    def pack(self, cg, st, out: SwizzledOperand, transposed: bool, layout_f: int, k: int = 0) -> None:
        """Every thread packs bytes ``tid, tid + threads, ...`` of ``out`` (``rows x K / 2``): byte (r, c) = code
        (r, 2c) | code (r, 2c + 1) << 4 of the staged tile (B: its transpose, codes (2c, r) and (2c + 1, r), read
        from a :class:`ByteStaging` or from a stage of B's bytes packed along N, :meth:`_code`; a layout-F A of
        ``layout_f`` tile rows: row ``(16 (r / 32) + r % 16) % layout_f``); bytes past ``k / 2`` (a padded K,
        :meth:`k_padded`) are zero."""
        op, c = cg.op, cg.c32
        total, per_row = out.rows * out.cols, out.cols
        steps = (total + cg.threads - 1) // cg.threads

        def body(j, _):
            i = op("arith.addi", op("arith.muli", j, c(cg.threads)), cg.tid)

            def one():
                r, col = op("arith.divui", i, c(per_row)), op("arith.remui", i, c(per_row))
                if layout_f:
                    r = op("arith.addi", op("arith.muli", op("arith.divui", r, c(32)), c(16)), op("arith.remui", r, c(16)))
                    r = op("arith.remui", r, c(layout_f)) if layout_f < 64 else r
                k0 = op("arith.muli", col, c(2))
                if k and k < 2 * per_row:  # a padded K: read within the staged codes, store zero past them
                    k0 = op("arith.minui", k0, c(k - 2))
                k1 = op("arith.addi", k0, c(1))
                lo, hi = ((self._code(cg, st, kk, r) for kk in (k0, k1)) if transposed else
                          (dialects.llvm.load(cg.i8, st.address(cg, r, kk)) for kk in (k0, k1)))
                byte = op("arith.ori", op("arith.andi", lo, cg.const(cg.i8, 15)),
                          op("arith.shli", hi, cg.const(cg.i8, 4)))
                if k and k < 2 * per_row:
                    byte = dialects.arith.select(cg.cmpi(6, col, c(k // 2)), byte, cg.const(cg.i8, 0))
                dialects.llvm.store(byte, out.address(cg, op("arith.divui", i, c(per_row)), col))

            if total % cg.threads:
                cg.if_(cg.cmpi(6, i, c(total)), lambda: (one(), [])[1])
            else:
                one()
            return []

        cg.for_(c(0), c(steps), [], body)


def _atom(name: str, atom_kind: str, impl, k: int, description: str, **data) -> Atom:
    """An sm100 atom: tcgen05 fragment, M = 128 instructions of K ``k``, sm_100a / sm_103a (``data``: more of the
    atom's data, e.g. ``b_k_major``: a pipelined loop may stage B K-major, ``layouts(req, at, "k")``)."""
    return Atom(name, atom_kind, lower=impl.lower, min_cc=100, max_cc=103, admits=impl.admits, priority=PRIORITY,
                data={"interface": MMA_INTERFACE, "inst": (INST_M, 0, k), "fragment": "tcgen05", "impl": impl, **data},
                description=description)


def atoms() -> list[Atom]:
    out = []
    for name, (scale, block, kind, vec) in F4_ATOMS.items():
        out.append(_atom(name, "block_scaled_mma", BlockScaledF4Umma(name, scale, block, kind, vec), F4_K,
                         f"tcgen05.mma cta_group::1 kind::{kind}.block_scale m128nNk64 e2m1 (packed, "
                         f"K-major) with {scale} scale factors per {block} -> f32, scale factors "
                         "(tcgen05.cp) and accumulator in tensor memory", b_k_major=True, packed_stages=True))
    for name, (elems, scale, block, kind, k) in BS_ATOMS.items():
        out.append(_atom(name, "block_scaled_mma", BlockScaledUmma(name, elems, scale, block, kind, k), k,
                         f"tcgen05.mma cta_group::1 kind::{kind}.block_scale.scale_vec::1X m128nNk{k} "
                         f"{'/'.join(elems)} with {scale} scale factors per {block} -> f32, scale "
                         "factors (tcgen05.cp) and accumulator in tensor memory", b_k_major=True))
    for name, (elems, acc, kind, k) in ATOMS.items():
        impl = Tf32Umma(name) if kind == "tf32" else Umma(name, elems, acc, kind, k)
        pair = {} if kind == "tf32" else {"pair_ok": impl.pair_ok}  # cta_group::2 for CTA pairs (tileas pairs)
        out.append(_atom(name, "mma", impl, k,
                         f"tcgen05.mma cta_group::1 kind::{kind} m128nNk{k} / m64nNk{k} {'/'.join(elems)} -> {acc}, "
                         "accumulator in tensor memory", **pair))
    return out
