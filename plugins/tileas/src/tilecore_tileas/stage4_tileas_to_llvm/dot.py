"""``nv_tileas.dot`` (cuda_tile mmaf / mmai): ``acc + lhs @ rhs`` through the dot's MMA atom.

``tileas-select-atoms`` recorded the atom (:mod:`tilecore_tileas.atoms.mma`). Both operands are written
row-major to the shared scratch buffer (rows padded by 16 bytes against bank conflicts; a fragment
operand, e.g. attention's scaled scores, is written from its fragment registers directly). Then:

- **a tensor-core atom** (:func:`_dot_atom`): the accumulator is in the atom's fragment layout (a tile
  arriving in another layout is converted once, a splat for free) and stays there: the result is that
  fragment, so a K loop carries it in registers. Each warp runs one loop over K in steps of the
  instruction's K; per step it loads the A fragments of its block rows and the B fragments of its
  block columns through the atom (``load_a`` / ``load_b``) and issues one atom ``mma`` per 16 x 8 block.
- **the CUDA-core atom** (:func:`dot_fma`, every other shape and element type the cuda_tile verifier
  admits): every thread runs one loop over K whose iteration arguments are its accumulator
  registers (blocked layout); for each register (row i, column j) it loads ``lhs[i, k]`` and
  ``rhs[k, j]``, widens them to the accumulator type and adds their product (``llvm.intr.fma`` for
  floats, multiply-add for integers, with the operands' signedness).

A closing barrier lets the buffer be reused. ``--option tileas.dot=fma`` makes atom selection pick the
CUDA-core atom for every dot (to compare the two paths).
"""

from __future__ import annotations

from dataclasses import replace

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir
from tilecore.mma import SwizzledOperand, swizzle_for, zero_k_padding

from ..atoms.mma import ROW_PAD_BYTES, SmemOperand, fma_atom, is_tensor_core
from ..atoms.select import mma_request, signed
from ..layout.fragment import WgFragment
from . import narrow_float
from .codegen import create, elem_bytes, scalar_bits
from .exchange import write
from .fragments import atom_fragment, fragment_coords, is_fragment, store_fragment, to_blocked, to_fragment
from .memory import as_tile
from .values import TileV


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


def _atom_of(cg, op):
    """The MMA atom ``tileas-select-atoms`` recorded on ``op`` (the CUDA-core atom when none is)."""
    if "atom" in op.attributes:
        name = str(op.attributes["atom"]).split('"')[1]
        atom = cg.atoms.get(name)
        if atom is None and name != fma_atom().name:
            raise LoweringError(f"MMA atom '{name}' is not registered (was its plugin disabled?)", op)
        if atom is not None:
            _check_admits(cg, op, atom)
            return atom
    return fma_atom()


def _check_admits(cg, op, atom) -> None:
    """The named atom must admit the dot (MLIR written elsewhere, or edited after atom selection, can name an
    atom for other operand types: its lowering then built invalid NVVM)."""
    if op.name != "nv_tileas.dot" or atom.admits is None:
        return
    if not atom.admissible(cg.target, mma_request(op, cg.threads, cg.target)):
        raise LoweringError(f"MMA atom '{atom.name}' does not admit this dot on {cg.target.name}: "
                            f"{', '.join(str(v.type) for v in op.operands)} -> {op.results[0].type}", op)


def _blocked(cg, v, shape):
    return to_blocked(cg, v) if is_fragment(v) else as_tile(cg, v, shape)


def _in_stage(v) -> bool:
    """Whether a dot operand is a pipelined loop's stage buffer (its load copied it to shared memory)."""
    return isinstance(v, (SmemOperand, SwizzledOperand))


def _registers_or_stage(cg, lhs, rhs, m: int, n: int, k_dim: int):
    """The operands as a tensor-core dot takes them: a pipelined loop's stage as it is, a fragment as it is,
    anything else as a blocked tile; and whether both were stages (the dot then writes nothing to the
    scratch buffer, so needs no barrier after it)."""
    out = [v if _in_stage(v) or is_fragment(v) else _blocked(cg, v, s) for v, s in ((lhs, (m, k_dim)),
                                                                                     (rhs, (k_dim, n)))]
    return out[0], out[1], _in_stage(lhs) and _in_stage(rhs)


def dot(op, rb):
    cg = rb.data["cg"]
    lhs_v, rhs_v, acc_v = op.operands
    m, k_dim = _shape(lhs_v)
    n = _shape(rhs_v)[1]
    elems = (narrow_float.element_name(lhs_v.type), narrow_float.element_name(rhs_v.type))
    atom = _atom_of(cg, op)
    req = mma_request(op, cg.threads, cg.target)
    frag = atom_fragment(atom, req) if is_tensor_core(atom) else None
    if frag is not None and atom.data.get("fragment") == "tcgen05":
        return [_dot_tmem(cg, atom, req, frag, rb.get(lhs_v), rb.get(rhs_v), rb.get(acc_v), m, n, k_dim,
                          _resident_loop(cg, op, rb))]
    if frag is not None and atom.data.get("fragment") == "wgmma" and a_from_registers(cg, atom, rb.get(lhs_v), frag):
        return [TileV(frag, _dot_wgmma_rs(cg, atom, req, rb.get(lhs_v), rb.get(rhs_v), to_fragment(
            cg, rb.get(acc_v), frag), k_dim, n))]
    if frag is not None and atom.data.get("fragment") == "wgmma":
        lhs, rhs, piped = _registers_or_stage(cg, rb.get(lhs_v), rb.get(rhs_v), m, n, k_dim)
        acc = to_fragment(cg, rb.get(acc_v), frag)
        regs = _dot_wgmma(cg, atom, req, lhs, rhs, acc, k_dim)
        if not piped:
            cg.barrier()
        return [TileV(frag, regs)]
    if frag is not None:
        lhs, rhs, piped = _registers_or_stage(cg, rb.get(lhs_v), rb.get(rhs_v), m, n, k_dim)
        acc = to_fragment(cg, rb.get(acc_v), frag)
        regs = _dot_atom(cg, atom, req, lhs, rhs, acc, m, n, k_dim)
        if not piped:
            cg.barrier()
        return [TileV(frag, regs)]
    lhs, rhs, acc = (_blocked(cg, rb.get(v), s) for v, s in
                     ((lhs_v, (m, k_dim)), (rhs_v, (k_dim, n)), (acc_v, (m, n))))
    offs = write(cg, [lhs, rhs])
    regs = atom.lower(cg, op, elems, lhs, rhs, acc, offs, m, n, k_dim)
    cg.barrier()
    return [TileV(acc.layout, regs)]


def block_scaled_mma(op, rb):
    """``nv_tileas.block_scaled_mma`` (cuda_tile mmaf_scaled) on the CUDA cores:
    ``acc[i, j] + sum_k lhs[i, k] * lhs_scale[i, k / B] * rhs[k, j] * rhs_scale[k / B, j]``,
    B = K / (columns of lhs_scale). The four operands go to shared memory; the K loop runs per
    scale block, with each register's scale product (a power of two, so applying it to the
    rhs element is exact) computed once per block. A ``block_scaled_mma`` atom recorded by
    ``tileas-select-atoms`` (a plugin's tensor-core atom) takes the dot instead: :func:`_dot_scaled_atom`."""
    cg = rb.data["cg"]
    lhs_v, rhs_v, acc_v, sa_v, sb_v = op.operands
    m, k_dim = _shape(lhs_v)
    n = _shape(rhs_v)[1]
    ks = _shape(sa_v)[1]
    if ks <= 0 or k_dim % ks or _shape(sb_v) != (ks, n):
        raise LoweringError(f"block-scaled MMA: scale shapes {_shape(sa_v)} / {_shape(sb_v)} do not divide "
                            f"K = {k_dim} into blocks", op)
    atom = cg.atoms.get(str(op.attributes["atom"]).split('"')[1]) if "atom" in op.attributes else None
    if atom is not None and atom.kind == "block_scaled_mma":
        def scaled():
            return _dot_scaled_atom(cg, op, atom, [rb.get(v) for v in op.operands], m, n, k_dim, ks)

        stages = rb.data.get("single_stages", {}).get(op.operation)
        if stages is None:
            return [scaled()]
        # A / B by TMA into one stage (:func:`.pipeline.single_dot`; the loads lowered to that stage)
        from ..atoms.select import block_scaled_request
        from .pipeline import single_dot

        frag = atom_fragment(atom, block_scaled_request(op, cg.threads, cg.target))
        return [TileV(frag, single_dot(cg, rb, op, stages, [ir.F32Type.get()] * frag.regs, scaled))]
    tiles = [_blocked(cg, rb.get(v), _shape(v)) for v in (lhs_v, rhs_v, acc_v, sa_v, sb_v)]
    lhs, rhs, acc, sa, sb = tiles
    elems = tuple(narrow_float.element_name(v.type) for v in (lhs_v, rhs_v, sa_v, sb_v))
    offs = write(cg, [lhs, rhs, sa, sb])
    regs = dot_fma(cg, op, elems[:2], lhs, rhs, acc, offs[:2], m, n, k_dim,
                    scales=_Scales(offs[2], offs[3], ks, elems[2], elems[3]))
    cg.barrier()
    return [TileV(acc.layout, regs)]


def _dot_scaled_atom(cg, op, atom, values, m: int, n: int, k_dim: int, ks: int) -> TileV:
    """A block-scaled dot on a tensor-memory atom (``tilecore.mma``: kind ``block_scaled_mma``): A, B and
    the two scale tiles written to the atom's shared-memory layouts, then its ``dot`` action. A / B in a
    pipelined loop's stage (:mod:`.pipeline`: a :class:`SwizzledOperand`, the layout the atom reads) are read
    there (B maybe K-major: a transposed view's tile, for an atom with ``b_k_major``); a stage whose layout is
    not the atom's (a 64-row A, which the atom reads as 128 rows in layout F: every row twice, the layout's
    ``addresses``) is copied into the atom's layout first (:func:`_copy_stage`).
    The scratch slots of staged operands are not taken: the others follow from byte 0."""
    from ..atoms.select import block_scaled_request

    req = block_scaled_request(op, cg.threads, cg.target)
    frag = atom_fragment(atom, req)
    lhs, rhs, acc, sa, sb = values
    shapes = ((m, k_dim), (k_dim, n), (m, ks), (ks, n))
    regs = None if _zero_splat(acc) else list(to_fragment(cg, acc, frag).regs)
    if regs is not None and not (isinstance(acc, TileV) and acc.layout == frag):
        cg.barrier()  # the conversion went through the scratch buffer the operands now take
    cg.smem_align = max(cg.smem_align, 1024)
    # a K-major B stage (a transposed view's tile): the atom's K-major B layout (atoms with ``b_k_major``); an A
    # stage: what the atom reads staged A in (the e2m1 atoms: packed, as TMA copied the tensor's bytes)
    # (an e2m1 K x N B stage: its bytes packed along N, which the atom repacks along K: "n_packed")
    b_major = "k" if getattr(rhs, "transposed", False) else \
        "n_packed" if _in_stage(rhs) and req.b.startswith("f4") else "n"
    layouts = list(atom.lower(cg, "layouts", req, 0, b_major, _in_stage(lhs)))
    staged = [_in_stage(v) for v in (lhs, rhs)]
    if any(staged):  # the slots the atom still needs, from byte 0
        at = 0
        for i, lay in enumerate(layouts):
            if i < 2 and staged[i] and _stage_is((lhs, rhs)[i], lay):
                layouts[i] = (lhs, rhs)[i]
                continue
            layouts[i] = replace(lay, offset=(at + 1023) // 1024 * 1024)
            at = layouts[i].offset + layouts[i].nbytes
    written = []
    for i, (v, lay) in enumerate(zip((lhs, rhs, sa, sb), layouts)):
        if v is lay:
            continue
        if _in_stage(v):  # (an 8-bit B of 16-byte rows: element by element, K-major; not packed e2m1 stages)
            _copy_stage(cg, v, lay, shapes[i] if i < 2 and not req.a.startswith("f4") else None)
        else:
            _write_swizzled(cg, v if is_fragment(v) else _blocked(cg, v, shapes[i]), lay)
        written.append(lay)
    cg.reserve(max(lay.offset + lay.nbytes for lay in written))
    out = atom.lower(cg, "dot", req, *layouts, frag, regs, k_dim)
    cg.barrier()
    return TileV(frag, out)


def _stage_is(stage, layout) -> bool:
    """Whether a pipelined loop's stage buffer ``stage`` is laid out as the atom's ``layout`` (offsets aside)."""
    return isinstance(stage, SwizzledOperand) and type(layout) is SwizzledOperand and \
        (stage.rows, stage.cols, stage.elem_bytes, stage.swizzle, stage.transposed) == \
        (layout.rows, layout.cols, layout.elem_bytes, layout.swizzle, layout.transposed)


def _copy_stage(cg, stage: SwizzledOperand, layout, shape: tuple | None = None) -> None:
    """Copy a stage buffer (rows x cols, swizzled) into an atom's layout of the same tile in the scratch buffer
    (every place ``layout.addresses`` gives an element): every thread a share of the 16-byte units (a swizzle
    permutes whole units, so a unit of either layout is 16 contiguous bytes of one row). A stage whose rows are
    not the layout's (an unswizzled ``SmemOperand`` of 16-byte rows, another swizzle, an MN-major B the atom reads
    K-major, rows the atom pads) goes element by element over the tile's ``shape`` (:func:`_copy_elements`). The
    dot's barrier follows."""
    if not isinstance(stage, SwizzledOperand) or (stage.cols, stage.elem_bytes, stage.swizzle, stage.transposed) != \
            (layout.cols, layout.elem_bytes, layout.swizzle, layout.transposed):
        if shape is not None:
            _copy_elements(cg, stage, layout, *shape)
            return
        raise LoweringError(f"a pipelined stage ({stage.rows} x {stage.cols}, {stage.swizzle}-byte swizzle) is not "
                            f"rows of the MMA atom's operand layout ({layout.rows} x {layout.cols})")
    units = stage.cols * stage.elem_bytes // 16
    total = stage.rows * units
    per = 16 // stage.elem_bytes  # elements a unit
    op, c = cg.op, cg.c32
    vec = ir.VectorType.get([4], cg.i32)
    addresses = getattr(layout, "addresses", lambda cg, row, col: [layout.address(cg, row, col)])

    def one(i):
        row, col = op("arith.divui", i, c(units)), op("arith.muli", op("arith.remui", i, c(units)), c(per))
        w = dialects.llvm.load(vec, stage.address(cg, row, col), alignment=16)
        for p in addresses(cg, row, col):
            dialects.llvm.store(w, p, alignment=16)

    cg.each_share(total, one)


def _copy_elements(cg, src, dst, rows: int, cols: int) -> None:
    """Copy the ``rows x cols`` tile ``src`` (any operand layout: ``address(cg, row, col)``) into ``dst`` (every place
    its ``addresses`` give): every thread a share of the elements."""
    op, c = cg.op, cg.c32
    total = rows * cols
    el = ir.IntegerType.get_signless(8 * dst.elem_bytes)
    places = getattr(dst, "addresses", lambda cg, r, col: [dst.address(cg, r, col)])

    def one(i):
        r, col = op("arith.divui", i, c(cols)), op("arith.remui", i, c(cols))
        v = dialects.llvm.load(el, src.address(cg, r, col))
        for p in places(cg, r, col):
            dialects.llvm.store(v, p)

    cg.each_share(total, one)


class _Scales:
    """Where a block-scaled dot's scale tiles are (shared-memory byte offsets), their K extent and types."""

    def __init__(self, lhs_off: int, rhs_off: int, blocks: int, lhs_elem: str, rhs_elem: str):
        self.lhs_off, self.rhs_off, self.blocks = lhs_off, rhs_off, blocks
        self.lhs_elem, self.rhs_elem = lhs_elem, rhs_elem


def dot_fma(cg, op, elems, lhs, rhs, acc, offs, m, n, k_dim, scales: _Scales | None = None) -> list:
    """The CUDA-core atom's lowering: the accumulator registers (blocked) after the K loop."""
    acc_type = acc.regs[0].type
    a_type, b_type = lhs.regs[0].type, rhs.regs[0].type
    a_signed, b_signed = signed(op, "signedness_lhs"), signed(op, "signedness_rhs")
    lay = acc.layout
    # (row, column) of every accumulator register; registers past the tile read element 0
    rows_cols = []
    for r in range(lay.regs):
        f = cg.flat_in_tile(lay, r)
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




# -- tensor cores: warp-level MMA atoms -----------------------------------------------------------
def _vector_groups(tile: TileV, layout, pad: int = 0) -> int:
    """Elements a thread stores with one vector store into ``layout`` (None: rows padded by ``pad`` elements, a
    multiple of 16 bytes): the blocked layout's ``vec`` consecutive elements when they are consecutive in a row of
    the tile (its rows a multiple of ``vec``) and in memory (a plain row-major SwizzledOperand keeps each 16-byte
    unit whole: the group, ``vec`` elements at a multiple of ``vec``, lies inside one; padded rows keep every row
    start a multiple of 16 bytes), else 1. One address, predicate and store a group instead of ``vec``: a 128 x 512
    f16 operand at 256 threads is 64 of each a thread instead of 256 (their addresses are live across a K loop)."""
    lay = tile.layout
    if is_fragment(tile) or lay.vec == 1:
        return 1
    if layout is not None and (type(layout) is not SwizzledOperand or layout.transposed):
        return 1
    bits = scalar_bits(tile.regs[0].type)
    nbytes = lay.vec * bits // 8
    if bits not in (8, 16, 32) or (layout is not None and bits != 8 * layout.elem_bytes) \
            or tile.shape[-1] % lay.vec or 16 % nbytes or (layout is None and (pad * bits // 8) % 16):
        return 1
    return lay.vec


def _write_operand(cg, tile: TileV, at: int, pitch: int) -> None:
    """Store ``tile`` row-major with ``pitch`` elements per row at byte ``at`` of the scratch buffer."""
    if is_fragment(tile):
        store_fragment(cg, tile, at, pitch)
        return
    lay = tile.layout
    pad = pitch - tile.shape[-1]
    vec = _vector_groups(tile, None, pad)
    for k in range(0, lay.regs, vec):
        cond = cg.and_(cg.valid(lay, k), cg.owner_mask(lay))
        f = cg.padded_flat(lay, k, tile.shape[-1], pad)
        if vec == 1:
            cg.masked(cond, lambda f=f, k=k: cg.smem_store(at, f, tile.regs[k]))
        else:
            cg.masked(cond, lambda f=f, k=k: dialects.llvm.store(cg.vector(tile.regs[k:k + vec]),
                                                                  cg.smem_ptr(at, f, tile.regs[k].type),
                                                                  alignment=vec * scalar_bits(tile.regs[k].type) // 8))


def smem_operand(rows: int, cols: int, el, eb: int, at: int):
    """How a warp-level atom's operand (``rows x cols``, ``cols`` contiguous) lies in shared memory from byte
    ``at``: the XOR-swizzled layout (:class:`tilecore.mma.SwizzledOperand`; 16-byte units of each 8-row
    group permuted, so the 8 rows an ldmatrix phase reads and the 16-byte chunks 8 consecutive threads copy
    hit 8 different groups of 4 banks) when the rows are a multiple of 32 bytes (``at`` rounded up to 1024),
    else rows padded by 16 bytes (:class:`tilecore.mma.SmemOperand`)."""
    s = swizzle_for(cols * eb)
    if s:
        return SwizzledOperand((at + 1023) // 1024 * 1024, rows, cols, eb, s, el)
    pitch = cols + ROW_PAD_BYTES // eb
    return SmemOperand(at, rows, cols, pitch, el, eb)


def smem_end(op) -> int:
    """The first byte after operand ``op`` (a SwizzledOperand / SmemOperand)."""
    if isinstance(op, SwizzledOperand):
        return op.offset + op.nbytes
    return op.offset + (op.rows * op.pitch * op.elem_bytes + 15) // 16 * 16


def _operands_to_smem(cg, lhs, rhs, m: int, n: int, k: int):
    """A (m x k) and B (k x n) in shared memory (:func:`smem_operand`): a pipelined loop's stage as it is, a
    tile written from its registers."""
    if _in_stage(lhs) and _in_stage(rhs):
        return lhs, rhs
    out, at = [], 0
    for tile, rows, cols in ((lhs, m, k), (rhs, k, n)):
        if _in_stage(tile):
            out.append(tile)
            continue
        el = tile.regs[0].type
        op = smem_operand(rows, cols, el, max(1, elem_bytes(cg.storage_type(el))), at)
        if isinstance(op, SwizzledOperand):
            cg.smem_align = max(cg.smem_align, 1024)
            _write_swizzled(cg, tile, op)
        else:
            _write_operand(cg, tile, op.offset, op.pitch)
        out.append(op)
        at = smem_end(op)
    cg.reserve(at)
    cg.barrier()
    return out[0], out[1]


def _dot_atom(cg, atom, req, lhs: TileV, rhs: TileV, acc: TileV, m: int, n: int, k_dim: int) -> list:
    """Each warp: loop over K in instruction steps; A fragments per block row, B per block column, one
    atom mma per 16 x 8 block of its sub-tile (registers in the fragment's block order)."""
    frag = acc.layout
    a_smem, b_smem = _operands_to_smem(cg, lhs, rhs, m, n, k_dim)
    bm, bn = frag.blocks
    wrow, wcol = cg.warp_origin(frag)
    inst_k = atom.data["inst"][2]

    def k_step(kk, cs):
        a = [atom.lower(cg, "load_a", req, a_smem, cg.op("arith.addi", wrow, cg.c32(16 * i)) if i else wrow, kk)
             for i in range(bm)]
        b = [atom.lower(cg, "load_b", req, b_smem, kk, cg.op("arith.addi", wcol, cg.c32(8 * j)) if j else wcol)
             for j in range(bn)]
        out = []
        for i in range(bm):
            for j in range(bn):
                blk = 4 * (i * bn + j)
                out += list(atom.lower(cg, "mma", req, a[i], b[j], cs[blk:blk + 4]))
        return out

    return cg.for_(cg.c32(0), cg.c32(k_dim), list(acc.regs), k_step, step=inst_k)


# -- tensor cores: warpgroup-level MMA atoms (wgmma) -----------------------------------------------
def _write_swizzled(cg, tile: TileV, layout) -> None:
    """Store ``tile`` (blocked or fragment) into its operand's canonical swizzled layout (every place of an
    element when the layout has ``addresses(cg, row, col)``: an atom's operand that holds some rows twice)."""
    if layout.elem is None:
        layout = replace(layout, elem=tile.regs[0].type)
    vec = _vector_groups(tile, layout)
    if vec > 1:  # the k-th group: registers k * vec .. (one flat index, one validity: N is a multiple of vec)
        lay = tile.layout
        for k in range(0, lay.regs, vec):
            row, col = cg.coords(tile.shape, cg.flat_in_tile(lay, k))
            cg.masked(cg.and_(cg.valid(lay, k), cg.owner_mask(lay)),
                      lambda k=k, row=row, col=col: dialects.llvm.store(
                          cg.vector(tile.regs[k:k + vec]), layout.address(cg, row, col),
                          alignment=vec * layout.elem_bytes))
        return
    if is_fragment(tile):
        places = [fragment_coords(cg, tile.layout, k) for k in range(tile.layout.regs)]
        conds = [None] * len(places)
    else:
        lay = tile.layout
        places = [cg.coords(tile.shape, cg.flat_in_tile(lay, k)) for k in range(lay.regs)]
        conds = [cg.and_(cg.valid(lay, k), cg.owner_mask(lay)) for k in range(lay.regs)]
    addresses = getattr(layout, "addresses", lambda cg, row, col: [layout.address(cg, row, col)])
    for (row, col), cond, v in zip(places, conds, tile.regs):
        cg.masked(cond, lambda row=row, col=col, v=v: [dialects.llvm.store(cg.to_storage(v), p)
                                                       for p in addresses(cg, row, col)])


def _swizzled_operands(cg, atom, req, lhs, rhs, barrier: bool = True):
    """A and B in the atom's swizzled layouts: a pipelined loop's stage as it is, a tile written from its
    registers (then a barrier, unless ``barrier`` is False: the caller places it)."""
    if isinstance(lhs, SwizzledOperand) and isinstance(rhs, SwizzledOperand):
        return lhs, rhs
    a_l, b_l = atom.lower(cg, "layouts", req, 0)
    for i, (v, lay) in enumerate(((lhs, a_l), (rhs, b_l))):
        if isinstance(v, SwizzledOperand):
            if i == 0:
                a_l = v
            else:
                b_l = v
        else:
            _write_swizzled(cg, v, lay)
    cg.reserve(max(smem_end(x) for x in (a_l, b_l)))
    if barrier:
        cg.barrier()
    return a_l, b_l


def _dot_wgmma(cg, atom, req, lhs: TileV, rhs: TileV, acc: TileV, k_dim: int) -> list:
    """Both operands into the atom's swizzled layouts (a K the atom pads: the padding zeroed), then per warpgroup:
    fence, one m64nNk per 64 rows and K step, commit, wait 0 (registers in the fragment's instruction order)."""
    frag = acc.layout
    cg.smem_align = max(cg.smem_align, 1024)
    staged = isinstance(lhs, SwizzledOperand) and isinstance(rhs, SwizzledOperand)
    a_l, b_l = _swizzled_operands(cg, atom, req, lhs, rhs, barrier=False)
    if a_l.cols > k_dim:  # the atom lays out a wider K (sm_90a's 8-bit K of 16 as 32): zeros there add nothing
        zero_k_padding(cg, a_l, k_dim, True)
        zero_k_padding(cg, b_l, k_dim, b_l.transposed)
    if not staged:
        cg.barrier()
    wrow, wcol = cg.warp_origin(frag)
    per = frag.inst_n // 2
    accs = [atom.lower(cg, "pack", req, list(acc.regs[r * per:(r + 1) * per])) for r in range(frag.insts)]
    atom.lower(cg, "fence", req)
    k_inst = atom.data["inst"][2]
    for k0 in range(0, k_dim, k_inst):
        for r in range(frag.insts):
            row = cg.op("arith.addi", wrow, cg.c32(64 * r)) if r else wrow
            accs[r] = atom.lower(cg, "wg_mma", req, a_l, b_l, row, wcol, k0, frag.inst_n, accs[r])
    atom.lower(cg, "commit", req)
    atom.lower(cg, "wait", req, 0)
    return [v for a in accs for v in atom.lower(cg, "unpack", req, a)]


WGMMA_A_OPTION = "tileas.wgmma_a_registers"  # --option tileas.wgmma_a_registers=off: A always from shared memory


def a_from_registers(cg, atom, lhs, frag) -> bool:
    """Whether a wgmma dot reads its A operand ``lhs`` from registers (``wgmma.mma_async ... d, {a}, b-desc``): the
    atom has that form (16-bit A, ``data["a_registers"]``) and ``lhs`` is already in registers in the A fragment's
    layout: a warpgroup fragment (an earlier wgmma's accumulator cast to f16 / bf16, attention's P) whose
    warpgroups hold whole rows (one warpgroup column) on the same grid of rows as the dot's accumulator ``frag``.
    Per 16 columns, the D fragment of an m64nN wgmma is the A fragment of an m64nNk16 (PTX ISA 9.7.15.5.1.1.1,
    Figures 148 / 149; ``tilecore_cute.mma_sm90``), so each K step takes 8 consecutive registers of the tile.
    Anything else goes through shared memory (another layout would need an exchange through it anyway)."""
    from .pipeline import _option_off

    if _option_off(cg, WGMMA_A_OPTION) or not atom.data.get("a_registers") or not is_fragment(lhs):
        return False
    lay = lhs.layout
    return (isinstance(lay, WgFragment) and isinstance(frag, WgFragment) and lay.groups_n == 1 and frag.groups_n == 1
            and lay.groups_m == frag.groups_m and lay.threads == frag.threads and lay.shape[0] == frag.shape[0]
            and lay.shape[1] % 16 == 0 and str(lhs.regs[0].type) in ("f16", "bf16"))


def _dot_wgmma_rs(cg, atom, req, lhs: TileV, rhs, acc: TileV, k_dim: int, n: int) -> list:
    """:func:`_dot_wgmma` with A from the registers of ``lhs`` (:func:`a_from_registers`): B (a pipelined loop's
    stage, or written to its swizzled layout at byte 0, then a barrier), fence, per K step of 16 and 64-row
    instruction ``r`` one ``wg_mma_rs`` on registers ``r * K / 2 + k0 / 2`` .. + 7, commit, wait 0."""
    frag = acc.layout
    cg.smem_align = max(cg.smem_align, 1024)
    if isinstance(rhs, SwizzledOperand):
        b_l, wrote = rhs, False
    else:
        rhs = rhs if is_fragment(rhs) else _blocked(cg, rhs, (k_dim, n))
        b_l, wrote = replace(atom.lower(cg, "layouts", req, 0)[1], offset=0), True
        _write_swizzled(cg, rhs, b_l)
        cg.reserve(smem_end(b_l))
        cg.barrier()
    _, wcol = cg.warp_origin(frag)
    per = frag.inst_n // 2
    accs = [atom.lower(cg, "pack", req, list(acc.regs[r * per:(r + 1) * per])) for r in range(frag.insts)]
    atom.lower(cg, "fence", req)
    a_per = k_dim // 2  # A registers per 64-row instruction (one warpgroup column holds all K)
    for k0 in range(0, k_dim, 16):
        for r in range(frag.insts):
            a_regs = list(lhs.regs[r * a_per + k0 // 2:r * a_per + k0 // 2 + 8])
            accs[r] = atom.lower(cg, "wg_mma_rs", req, a_regs, b_l, wcol, k0, frag.inst_n, accs[r])
    atom.lower(cg, "commit", req)
    atom.lower(cg, "wait", req, 0)
    if wrote:
        cg.barrier()
    return [v for a in accs for v in atom.lower(cg, "unpack", req, a)]


# -- tensor cores: tensor-memory MMA atoms (tcgen05) ------------------------------------------------
def _zero_splat(tile) -> bool:
    """Whether ``tile`` (a TileV or a scalar) is the constant 0 everywhere (+0.0 for floats)."""
    regs = tile.regs if isinstance(tile, TileV) else [tile]
    first = regs[0] if regs else None
    if first is None or any(r != first for r in regs) or not isinstance(first, ir.OpResult):
        return False
    op = first.owner
    if op.name not in ("arith.constant", "llvm.mlir.constant") or "value" not in op.attributes:
        return False
    attr = op.attributes["value"]
    if isinstance(first.type, ir.FloatType):
        return str(attr).lstrip().startswith(("0.0", "0.000000e+00")) and ir.FloatAttr(attr).value == 0.0
    return isinstance(first.type, ir.IntegerType) and ir.IntegerAttr(attr).value == 0


def _resident_loop(cg, op, rb):
    """When dot ``op``'s accumulator is a loop-carried value of the enclosing ``scf.for`` used by this dot only
    and the dot's result only goes back to it (``acc = mma(a, b, acc)``), what a tensor-memory atom needs to keep
    the accumulator in tensor memory across the loop: ``first`` / ``last`` (i1: this is the loop's first / last
    iteration), ``zero_init`` (the loop starts from a zero splat), ``key`` (the dot) and ``dots`` (the
    :class:`MmaRequest` of every dot of the kernel: the atom sizes its scratch columns from them). Else None."""
    acc_v = op.operands[2]
    if not isinstance(acc_v, ir.BlockArgument) or acc_v.arg_number == 0:
        return None
    loop = acc_v.owner.owner
    if loop.name != "scf.for" or len(list(acc_v.uses)) != 1 or len(list(op.results[0].uses)) != 1:
        return None
    term = list(acc_v.owner.operations)[-1]
    i = acc_v.arg_number - 1
    if term.name != "scf.yield" or i >= len(term.operands) or term.operands[i] != op.results[0]:
        return None
    iv = acc_v.owner.arguments[0]
    if iv not in rb.map or any(v not in rb.map for v in list(loop.operands)[:3]):
        return None
    lb, ub, step = (rb.get(v) for v in list(loop.operands)[:3])
    iv = rb.get(iv)
    first = cg.cmpi(0, iv, lb)
    last = cg.cmpi(5, cg.op("arith.addi", iv, step), ub)  # iv + step >= ub (signed)
    return {"first": first, "last": last, "zero_init": _zero_splat(rb.get(loop.operands[3 + i])), "key": op,
            "dots": _kernel_dots(cg, op)}


def _kernel_dots(cg, op) -> list:
    """The :class:`MmaRequest` of every 2-D dot of the kernel holding ``op`` (cached per kernel)."""
    cached = getattr(cg, "_kernel_dots", None)
    if cached is not None:
        return cached
    fn = op
    while fn is not None and fn.name != "llvm.func":
        fn = fn.parent
    out = []

    def walk(o):
        for region in o.regions:
            for block in region.blocks:
                for x in block.operations:
                    if x.operation.name == "nv_tileas.dot" and len(ir.RankedTensorType(x.operands[0].type).shape) == 2:
                        out.append(mma_request(x.operation, cg.threads, cg.target))
                    walk(x.operation)

    if fn is not None:
        walk(fn)
    cg._kernel_dots = out
    return out


def _stages_to_atom_layouts(cg, atom, req, lhs, rhs, shapes):
    """A / B stages (pipelined loops) the atom does not read as they are (its ``layouts``: a 16- / 32-row A the
    tcgen05 atoms read as 64 repeated rows, an MN-major B they read K-major, 16-byte rows they pad to 32) copied into
    its layouts in the scratch buffer after a barrier (:func:`_copy_stage`); a CTA pair's stages stay (its B stage
    is half the tile: the atom reads it there). Returns the operands and whether any was copied."""
    if getattr(cg, "cta_pairs", None) or not (_in_stage(lhs) or _in_stage(rhs)):
        return lhs, rhs, False
    layouts = atom.lower(cg, "layouts", req, 0)
    out, copied = [lhs, rhs], False
    for i, (v, lay) in enumerate(zip(out, layouts)):
        if _in_stage(v) and not _stage_is(v, lay):
            if not copied:
                cg.reserve(max(smem_end(x) for x in layouts))
                cg.barrier()  # earlier readers of the scratch buffer are done
            _copy_stage(cg, v, lay, shapes[i])
            out[i], copied = lay, True
    return out[0], out[1], copied


def _dot_tmem(cg, atom, req, frag, lhs, rhs, acc, m: int, n: int, k_dim: int, resident=None) -> TileV:
    """A tensor-memory atom (``data["fragment"] == "tcgen05"``): both operands in the atom's swizzled layouts
    (a pipelined loop's stage already holds them), then the atom's ``dot`` action on the accumulator registers
    (None for a zero splat: the atom skips storing it) returns the result in ``frag``; ``resident``
    (:func:`_resident_loop`) lets the atom keep the accumulator in tensor memory across the loop."""
    lhs, rhs, piped = _registers_or_stage(cg, lhs, rhs, m, n, k_dim)
    cg.smem_align = max(cg.smem_align, 1024)
    # the accumulator into the fragment first: a conversion goes through the scratch buffer the operands take
    regs = None if _zero_splat(acc) else list(to_fragment(cg, acc, frag).regs)
    if regs is not None and not (isinstance(acc, TileV) and acc.layout == frag):
        cg.barrier()
    lhs, rhs, copied = _stages_to_atom_layouts(cg, atom, req, lhs, rhs, ((m, k_dim), (k_dim, n)))
    piped = piped and not copied
    a_l, b_l = _swizzled_operands(cg, atom, req, lhs, rhs, barrier=False)
    out = atom.lower(cg, "dot", req, a_l, b_l, frag, regs, k_dim, resident)
    if not piped:
        cg.barrier()
    return TileV(frag, out)
