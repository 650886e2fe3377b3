"""``nv_tileas.dot`` (cuda_tile mmaf / mmai): ``acc + lhs @ rhs``, through shared memory.

Both operands are written row-major to the shared scratch buffer (``exchange.write``, which
synchronises). Then one of two paths:

- **tensor cores** (:func:`_dot_mma`; f16 / bf16 / tf32 operands with an f32 accumulator, or i8 (signed
  or unsigned) with i32, sm_80 or newer, M, N, K multiples of 16, 8 and the instruction's K, and a layout /
  shared-memory budget that fits, see :func:`_mma_plan`): ``mma.sync`` m16n8k16 (16-bit floats) /
  m16n8k8 (tf32, one element per fragment register) / m16n8k32 (integers, wrapping like mmai) per 16x8
  block of the result. The accumulator stays in the tile's blocked
  layout between dot ops; per slab of rows it goes through shared memory into MMA fragments and
  back: the threads store their slab registers, each warp runs its blocks' K loops (an A fragment
  register is one 32-bit load from a row, a B register is gathered from 2 / 4 rows), stores D over C,
  and the threads read their registers back. Shared-memory rows are padded against bank conflicts. When two slab
  buffers fit they alternate, so one slab's reads need no barrier before the next slab's writes.
- **CUDA cores** (:func:`_dot_fma`, every other shape and element type the cuda_tile verifier
  admits): every thread runs one loop over K whose iteration arguments are its accumulator
  registers; for each register (row i, column j) it loads ``lhs[i, k]`` and ``rhs[k, j]``,
  widens them to the accumulator type and adds their product (``llvm.intr.fma`` for floats,
  multiply-add for integers, with the operands' signedness).

A closing barrier lets the buffer be reused. ``--option tileas.dot=fma`` keeps every dot on the CUDA
cores (to compare the two paths); the default, ``mma``, takes the tensor cores where they apply.
"""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from . import narrow_float, tf32
from .codegen import create
from .exchange import padded_bytes, write
from .memory import as_tile
from .values import TileV

DOT_OPTION = "tileas.dot"
DOT_PATHS = ("mma", "fma")  # tensor cores where they apply / always the CUDA cores


def _shape(v) -> tuple:
    return tuple(ir.RankedTensorType(v.type).shape)


def _widen(cg, v, elem: str, acc_type, signed: bool):
    """An operand register (element type ``elem``; 8-bit floats hold codes) in the accumulator's type."""
    if elem in narrow_float.MIN_CC:
        return narrow_float.decode(cg, [v], elem, acc_type)[0]
    if v.type == acc_type:
        return v
    if isinstance(acc_type, ir.FloatType):
        return cg.op("arith.extf", v, ty=acc_type)
    return cg.op("arith.extsi" if signed else "arith.extui", v, ty=acc_type)


def _signed(op, name: str) -> bool:
    if name not in op.attributes:
        return True
    return "unsigned" not in str(op.attributes[name])


def dot(op, rb):
    cg = rb.data["cg"]
    lhs_v, rhs_v, acc_v = op.operands
    m, k_dim = _shape(lhs_v)
    n = _shape(rhs_v)[1]
    lhs = as_tile(cg, rb.get(lhs_v), (m, k_dim))
    rhs = as_tile(cg, rb.get(rhs_v), (k_dim, n))
    acc = as_tile(cg, rb.get(acc_v), (m, n))
    elems = (narrow_float.element_name(lhs_v.type), narrow_float.element_name(rhs_v.type))
    path = (cg.options.extra if cg.options is not None else {}).get(DOT_OPTION, "mma")
    if path not in DOT_PATHS:
        raise LoweringError(f"--option {DOT_OPTION}={path}: expected one of {', '.join(DOT_PATHS)}", op)
    plan = _mma_plan(cg, op, elems, acc, lhs, rhs, m, n, k_dim) if path == "mma" else None
    if plan is not None:
        offs = write(cg, [lhs, rhs], [plan.ab_pad, plan.ab_pad])
        regs = _dot_mma(cg, plan, acc, offs, m, n, k_dim)
    else:
        offs = write(cg, [lhs, rhs])
        regs = _dot_fma(cg, op, elems, lhs, rhs, acc, offs, m, n, k_dim)
    cg.barrier()
    return [TileV(acc.layout, regs)]


def block_scaled_mma(op, rb):
    """``nv_tileas.block_scaled_mma`` (cuda_tile mmaf_scaled) on the CUDA cores:
    ``acc[i, j] + sum_k lhs[i, k] * lhs_scale[i, k / B] * rhs[k, j] * rhs_scale[k / B, j]``,
    B = K / (columns of lhs_scale). The four operands go to shared memory; the K loop runs per
    scale block, with each register's scale product (a power of two, so applying it to the
    rhs element is exact) computed once per block."""
    cg = rb.data["cg"]
    lhs_v, rhs_v, acc_v, sa_v, sb_v = op.operands
    m, k_dim = _shape(lhs_v)
    n = _shape(rhs_v)[1]
    ks = _shape(sa_v)[1]
    if ks <= 0 or k_dim % ks or _shape(sb_v) != (ks, n):
        raise LoweringError(f"block-scaled MMA: scale shapes {_shape(sa_v)} / {_shape(sb_v)} do not divide "
                            f"K = {k_dim} into blocks", op)
    tiles = [as_tile(cg, rb.get(v), _shape(v)) for v in (lhs_v, rhs_v, acc_v, sa_v, sb_v)]
    lhs, rhs, acc, sa, sb = tiles
    elems = tuple(narrow_float.element_name(v.type) for v in (lhs_v, rhs_v, sa_v, sb_v))
    offs = write(cg, [lhs, rhs, sa, sb])
    regs = _dot_fma(cg, op, elems[:2], lhs, rhs, acc, offs[:2], m, n, k_dim,
                    scales=_Scales(offs[2], offs[3], ks, elems[2], elems[3]))
    cg.barrier()
    return [TileV(acc.layout, regs)]


class _Scales:
    """Where a block-scaled dot's scale tiles are (shared-memory byte offsets), their K extent and types."""

    def __init__(self, lhs_off: int, rhs_off: int, blocks: int, lhs_elem: str, rhs_elem: str):
        self.lhs_off, self.rhs_off, self.blocks = lhs_off, rhs_off, blocks
        self.lhs_elem, self.rhs_elem = lhs_elem, rhs_elem


def _dot_fma(cg, op, elems, lhs, rhs, acc, offs, m, n, k_dim, scales: _Scales | None = None) -> list:
    acc_type = acc.regs[0].type
    a_type, b_type = lhs.regs[0].type, rhs.regs[0].type
    a_signed, b_signed = _signed(op, "signedness_lhs"), _signed(op, "signedness_rhs")
    lay = acc.layout
    # (row, column) of every accumulator register; registers past the tile read element 0
    rows_cols = []
    for r in range(lay.regs):
        f = cg.flat(lay, r)
        valid = cg.valid(lay, r)
        if valid is not None:
            f = cg.select(valid, f, cg.c32(0))
        rows_cols.append(tuple(cg.coords((m, n), f)))
    row_bases = [cg.op("arith.muli", i, cg.c32(k_dim)) for i, _ in rows_cols]

    def step(kk, sums, factors=None):
        k_row = cg.op("arith.muli", kk, cg.c32(n))
        out = []
        for r, ((_, col), row_base, s) in enumerate(zip(rows_cols, row_bases, sums)):
            a = _widen(cg, cg.smem_load(offs[0], cg.op("arith.addi", row_base, kk), a_type), elems[0], acc_type,
                       a_signed)
            b = _widen(cg, cg.smem_load(offs[1], cg.op("arith.addi", k_row, col), b_type), elems[1], acc_type,
                       b_signed)
            if factors is not None:
                b = cg.op("arith.mulf", b, factors[r])
            if isinstance(acc_type, ir.FloatType):
                out.append(create("llvm.intr.fma", [acc_type], [a, b, s]).results[0])
            else:
                out.append(cg.op("arith.addi", s, cg.op("arith.muli", a, b)))
        return out

    if scales is None:
        return cg.for_(cg.c32(0), cg.c32(k_dim), list(acc.regs), step)
    per_block = k_dim // scales.blocks
    scale_rows = [cg.op("arith.muli", i, cg.c32(scales.blocks)) for i, _ in rows_cols]

    def block(kb, sums):
        factors = []
        for (_, col), srow in zip(rows_cols, scale_rows):
            fa = narrow_float.decode(cg, [cg.smem_load(scales.lhs_off, cg.op("arith.addi", srow, kb), cg.i8)],
                                     scales.lhs_elem, acc_type)[0]
            fb = narrow_float.decode(
                cg, [cg.smem_load(scales.rhs_off, cg.op("arith.addi", cg.op("arith.muli", kb, cg.c32(n)), col),
                                  cg.i8)], scales.rhs_elem, acc_type)[0]
            factors.append(cg.op("arith.mulf", fa, fb))
        lo = cg.op("arith.muli", kb, cg.c32(per_block))
        return cg.for_(lo, cg.op("arith.addi", lo, cg.c32(per_block)), sums, lambda kk, s: step(kk, s, factors))

    return cg.for_(cg.c32(0), cg.c32(scales.blocks), list(acc.regs), block)


# -- tensor cores: mma.sync ------------------------------------------------------------------------
MMA_M, MMA_N = 16, 8
# (operand element, accumulator) -> (K of one mma.sync, operand elements per 32-bit fragment register):
# m16n8k16 for 16-bit floats, m16n8k8 for tf32 (f32 registers, :mod:`.tf32`), m16n8k32 for 8-bit integers
MMA_KINDS = {("f16", "f32"): (16, 2), ("bf16", "f32"): (16, 2), ("tf32", "f32"): (8, 1), ("i8", "i32"): (32, 4)}
MMA_MIN_CC = 80
SMEM_LIMIT = 48 * 1024  # static shared memory of a CTA
# Shared-memory rows are padded so the lanes of a fragment load fall in different banks (32 banks of
# 4 bytes): A / B rows by 16 bytes (the 8 row groups of an A fragment then start 4 banks apart:
# conflict-free), accumulator slab rows by 4 elements (C / D accesses: 2-way instead of 8-way).
AB_ROW_PAD_BYTES = 16
SLAB_ROW_PAD = 4


class _MmaPlan:
    """How a dot runs on the tensor cores: instruction K, operand types, rows per slab, slab offsets."""

    def __init__(self, kind: tuple[int, int], elem: str, ptx_a: str, ptx_b: str, slab_rows: int,
                 slab_offsets: list[int]):
        (self.k, self.per_reg), self.elem, self.ptx_a, self.ptx_b = kind, elem, ptx_a, ptx_b
        self.ab_pad = AB_ROW_PAD_BYTES * self.per_reg // 4  # elements
        self.slab_rows = slab_rows
        self.slab_offsets = slab_offsets


def _mma_plan(cg, op, elems, acc, lhs, rhs, m, n, k_dim):
    """A :class:`_MmaPlan` when the dot can use mma.sync, else None (the CUDA-core path).

    Each slab of ``slab_rows`` rows must hold whole register repetitions of the accumulator's
    blocked layout (so which registers belong to a slab is known statically), and A, B and the
    slab buffer(s) must fit the CTA's static shared memory.
    """
    target = cg.target
    (a_el, b_el), c_el = elems, str(acc.regs[0].type)
    kind = MMA_KINDS.get((a_el, c_el))
    if target is None or target.cc < MMA_MIN_CC or a_el != b_el or kind is None:
        return None
    if m % MMA_M or n % MMA_N or k_dim % kind[0] or cg.threads % 32:
        return None
    if a_el == "i8":
        ptx_a = "s8" if _signed(op, "signedness_lhs") else "u8"
        ptx_b = "s8" if _signed(op, "signedness_rhs") else "u8"
    else:
        ptx_a = ptx_b = a_el
    lay = acc.layout
    per_rep = lay.owners * lay.vec  # elements one register repetition covers, CTA-wide
    slab = MMA_M
    while (slab * n) % per_rep:
        slab *= 2
        if slab > m:
            return None
    if m % slab:
        return None
    plan = _MmaPlan(kind, a_el, ptx_a, ptx_b, slab, [])
    ab_bytes = sum(padded_bytes(cg, t, plan.ab_pad) for t in (lhs, rhs))
    slab_bytes = slab * (n + SLAB_ROW_PAD) * 4
    buffers = 2 if ab_bytes + 2 * slab_bytes <= SMEM_LIMIT else 1
    if ab_bytes + buffers * slab_bytes > SMEM_LIMIT:
        return None
    plan.slab_offsets = [ab_bytes + i * slab_bytes for i in range(buffers)]
    return plan


def _dot_mma(cg, plan: _MmaPlan, acc, offs, m, n, k_dim) -> list:
    lay = acc.layout
    acc_type = acc.regs[0].type
    rows = plan.slab_rows
    slab_elems = rows * n
    per_rep = lay.owners * lay.vec
    cg.reserve(plan.slab_offsets[-1] + rows * (n + SLAB_ROW_PAD) * 4)
    regs = list(acc.regs)
    # slab of each register: its repetition's first element (static) / the slab size
    slab_of = [(k // lay.vec) * per_rep // slab_elems for k in range(lay.regs)]
    lane = cg.op("arith.remui", cg.tid, cg.c32(32))
    warp = cg.op("arith.divui", cg.tid, cg.c32(32))
    t = cg.op("arith.andi", lane, cg.c32(3))
    frag = _Fragment(g=cg.op("arith.shrui", lane, cg.c32(2)), c_col=cg.op("arith.muli", t, cg.c32(2)),
                     k_off=cg.op("arith.muli", t, cg.c32(plan.per_reg)))
    warps = cg.threads // 32
    blocks = (rows // MMA_M) * (n // MMA_N)
    for s in range(m // rows):
        off = plan.slab_offsets[s % len(plan.slab_offsets)]
        if s and len(plan.slab_offsets) == 1:
            cg.barrier()  # one buffer: the previous slab's reads come first
        mine = [k for k in range(lay.regs) if slab_of[k] == s]
        local = {}
        for k in mine:
            f = cg.padded_flat(lay, k, n, SLAB_ROW_PAD)  # the slab's rows start at row s * rows
            if s:
                f = cg.op("arith.subi", f, cg.c32(s * rows * (n + SLAB_ROW_PAD)))
            valid = cg.valid(lay, k)
            local[k] = f if valid is None else cg.select(valid, f, cg.c32(0))
            cond = cg.and_(valid, cg.owner_mask(lay))
            cg.masked(cond, lambda f=f, k=k, off=off: cg.smem_store(off, f, regs[k]))
        cg.barrier()
        for j in range(-(-blocks // warps)):
            block = cg.op("arith.addi", warp, cg.c32(j * warps)) if j else warp
            args = (cg, plan, block, s * rows, off, offs, n, k_dim, frag, acc_type)
            if blocks % warps and (j + 1) * warps > blocks:  # the last round: only warps with a block
                cg.masked(cg.cmpi(6, block, cg.c32(blocks)), lambda args=args: _mma_block(*args))
            else:
                _mma_block(*args)
        cg.barrier()
        for k in mine:
            regs[k] = cg.smem_load(off, local[k], acc_type)
    return regs


class _Fragment:
    """A lane's place in the mma.sync fragments: row group ``g`` (lane / 4), the column of its first
    C / D register (2 * (lane % 4)) and the K offset of its A / B registers (per_reg * (lane % 4))."""

    def __init__(self, g, c_col, k_off):
        self.g, self.c_col, self.k_off = g, c_col, k_off


def _mma_block(cg, plan: _MmaPlan, block, row0: int, slab_off: int, offs, n: int, k_dim: int, frag: _Fragment,
               acc_type) -> None:
    """One 16 x 8 block of the slab: C from the slab, the K loop of mma.sync, D back over C.

    Fragment registers (PTX ISA): A0 row g, K elements k_off..; A1 row g + 8; A2 / A3 the same rows
    K / 2 further; B0 rows k_off.. of column g, B1 K / 2 further; C0, C1 row g, columns c_col, c_col + 1;
    C2, C3 row g + 8.
    """
    llvm = dialects.llvm
    el = tf32.storage(ir.Type.parse(plan.elem))
    reg_vec = ir.VectorType.get([plan.per_reg], el)
    block_col = cg.op("arith.muli", cg.op("arith.remui", block, cg.c32(n // MMA_N)), cg.c32(MMA_N))
    block_row = cg.op("arith.muli", cg.op("arith.divui", block, cg.c32(n // MMA_N)), cg.c32(MMA_M))
    col = cg.op("arith.addi", block_col, frag.c_col)
    r_lo = cg.op("arith.addi", block_row, frag.g)  # slab rows of this lane's C registers: r_lo, r_lo + 8
    c_index = [cg.op("arith.addi", cg.op("arith.muli", r, cg.c32(n + SLAB_ROW_PAD)), c) for r in
               (r_lo, cg.op("arith.addi", r_lo, cg.c32(8))) for c in (col, cg.op("arith.addi", col, cg.c32(1)))]
    c_regs = [cg.smem_load(slab_off, i, acc_type) for i in c_index]
    a_rows = [cg.op("arith.muli", cg.op("arith.addi", r_lo, cg.c32(row0 + d)), cg.c32(k_dim + plan.ab_pad))
              for d in (0, 8)]
    b_col = cg.op("arith.addi", block_col, frag.g)
    b_stride = cg.c32(n + plan.ab_pad)

    def k_step(kk, cs):
        def operand(v):  # f16 pairs stay vector<2xf16>; the other types travel as i32 (nvvm.mma.sync)
            return v if plan.elem == "f16" else llvm.bitcast(cg.i32, v)

        def a_reg(row, k):  # consecutive K elements of an A row: one 32-bit load
            return llvm.load(reg_vec, cg.smem_ptr(offs[0], cg.op("arith.addi", row, k), el), alignment=4)

        def b_reg(k):  # B[k .. k + per_reg - 1][col]: one load per row, packed
            v = llvm.mlir_poison(reg_vec)
            for i in range(plan.per_reg):
                ki = cg.op("arith.addi", k, cg.c32(i)) if i else k
                x = cg.smem_load(offs[1], cg.op("arith.addi", cg.op("arith.muli", ki, b_stride), b_col), el)
                v = llvm.insertelement(v, x, cg.c32(i))
            return v

        k_lo = cg.op("arith.addi", kk, frag.k_off)
        k_hi = cg.op("arith.addi", k_lo, cg.c32(plan.k // 2))
        a = [a_reg(a_rows[0], k_lo), a_reg(a_rows[1], k_lo), a_reg(a_rows[0], k_hi), a_reg(a_rows[1], k_hi)]
        b = [b_reg(k_lo), b_reg(k_hi)]
        # the multiplicand types are always given: NVVM cannot infer them from i32 operands and asserts
        # when it tries; integer accumulators wrap (cuda_tile mmai), no .satfinite
        kw = {"multiplicand_a_ptx_type": ir.Attribute.parse(f"#nvvm.mma_type<{plan.ptx_a}>"),
              "multiplicand_b_ptx_type": ir.Attribute.parse(f"#nvvm.mma_type<{plan.ptx_b}>")}
        if plan.elem == "i8":
            kw["int_overflow_behavior"] = ir.Attribute.parse("#nvvm.mma_int_overflow<wrapped>")
        d = dialects.nvvm.mma_sync(ir.Type.parse(f"!llvm.struct<({', '.join([str(acc_type)] * 4)})>"),
                                   ir.Attribute.parse(f"#nvvm.shape<m = {MMA_M}, n = {MMA_N}, k = {plan.k}>"),
                                   ir.Attribute.parse("#nvvm.mma_layout<row>"),
                                   ir.Attribute.parse("#nvvm.mma_layout<col>"),
                                   [operand(x) for x in a], [operand(x) for x in b], list(cs), **kw)
        return [llvm.extractvalue(acc_type, d, [i]) for i in range(4)]

    results = cg.for_(cg.c32(0), cg.c32(k_dim), c_regs, k_step, step=plan.k)
    for i, v in zip(c_index, results):
        cg.smem_store(slab_off, i, v)
