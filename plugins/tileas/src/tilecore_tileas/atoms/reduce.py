"""Reduce atoms: how a reduce / scan combines the elements of a tile along an axis.

Each lowering inlines the op's combiner region (scalar ``arith``, ended by
``nv_tileas_term.yield``) once per combine step.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecore.mlir import ir

from ..layout import Blocked, row_major_strides
from ..rebuild import inline_block

UNROLL = 8  # combine loops up to this trip count are unrolled


@dataclass
class ReduceRequest:
    """What an atom needs to know about a reduce / scan: kind, source layout, axis, element bytes
    (of every operand; 0 when the operands' widths differ), threads, number of operands."""

    kind: str
    layout: Blocked
    axis: int
    elem_bytes: int
    threads: int
    operands: int = 1


def in_thread_admits(req: ReduceRequest) -> bool:
    return req.layout.owners == 1 and req.layout.regs == req.layout.n


def _row_threads(req: ReduceRequest, kind: str) -> int:
    """Threads per row when a ``kind`` combines along the last axis with every operand 32-bit and each
    thread holding ``vec`` consecutive elements of its row; a power of two dividing ``owners``; else 0."""
    lay = req.layout
    if req.kind != kind or req.axis != len(lay.shape) - 1 or req.elem_bytes != 4 or lay.shape[-1] % lay.vec:
        return 0
    g = lay.shape[-1] // lay.vec
    return g if g > 1 and g & (g - 1) == 0 and lay.owners % g == 0 else 0


def shuffle_admits(req: ReduceRequest) -> bool:
    g = _row_threads(req, "reduce")
    return g > 0 and (g <= 32 or g % 32 == 0)


def scan_shuffle_admits(req: ReduceRequest) -> bool:
    """A scan along the last axis whose rows lie within one warp (2..32 threads per row)."""
    return 0 < _row_threads(req, "scan") <= 32


def is_reverse(op) -> bool:
    """The scan's ``reverse`` flag (a BoolAttr, or a unit attribute when present)."""
    if "reverse" not in op.attributes:
        return False
    a = op.attributes["reverse"]
    return ir.BoolAttr(a).value if isinstance(a, ir.BoolAttr) or str(a) in ("true", "false") else True


def identities(cg, op, types):
    attrs = ir.ArrayAttr(op.attributes["identities"])
    out = []
    for a, t in zip(attrs, types):
        if isinstance(t, ir.FloatType):
            out.append(cg.const(t, ir.FloatAttr(a).value))
        else:
            out.append(cg.const(t, ir.IntegerAttr(a).value))
    return out


def combine(rb, op, accs, vals):
    """One combine step; the combiner takes (lhs0, rhs0, lhs1, rhs1, ...)."""
    body = op.regions[0].blocks[0]
    return inline_block(rb, body, [x for pair in zip(accs, vals) for x in pair])


def _out_shape(kind, shape, axis):
    return tuple(d for i, d in enumerate(shape) if i != axis) if kind == "reduce" else tuple(shape)


def lower_in_thread(cg, op, rb, sources, kind):
    """Every element is in every thread: combine registers directly (flat index == register)."""
    from ..stage4_tileas_to_llvm.values import TileV

    axis = ir.IntegerAttr(op.attributes["dim"]).value
    shape = sources[0].shape
    out_shape = _out_shape(kind, shape, axis)
    lay = cg.layout(out_shape)
    strides = row_major_strides(shape)
    outs = [[] for _ in sources]
    reverse = is_reverse(op)
    for k in range(lay.regs):
        f = min(k, lay.n - 1)
        coords = []
        for st, d in zip(row_major_strides(out_shape), out_shape):
            coords.append((f // st) % d)
        if kind == "reduce":
            coords.insert(axis, 0)
            steps = range(shape[axis])
        else:  # in scan order (a reverse scan takes the line from its end): the combiner's left side comes first
            steps = range(shape[axis] - 1, coords[axis] - 1, -1) if reverse else range(0, coords[axis] + 1)
        accs = None
        for kk in steps:
            c = list(coords)
            c[axis] = kk
            src = sum(a * b for a, b in zip(c, strides))
            vals = [s.regs[src] for s in sources]
            accs = vals if accs is None else combine(rb, op, accs, vals)
        for i, a in enumerate(accs):
            outs[i].append(a)
    return [TileV(lay, o) for o in outs]


def lower_smem(cg, op, rb, sources, kind):
    """Sources to shared memory, then each result element combines its line serially.

    A reduce whose sources are over the exchange budget (a 256 x 256 f32 tile summed down its columns) goes through
    in passes (:func:`~..stage4_tileas_to_llvm.exchange.passes_together`): each result element combines the part of
    its line that the pass's window holds, in order, carrying its partial from pass to pass
    (:func:`_lower_smem_passes`). A scan stays one pass (tileiras refuses a 256 x 256 f32 cumsum down the columns
    too): the kernel's shared memory check refuses it."""
    from ..stage4_tileas_to_llvm.exchange import passes_together, write
    from ..stage4_tileas_to_llvm.values import TileV

    windows = passes_together(cg, sources) if kind == "reduce" else None
    if windows is not None:
        return _lower_smem_passes(cg, op, rb, sources, windows)
    axis = ir.IntegerAttr(op.attributes["dim"]).value
    shape = sources[0].shape
    out_shape = _out_shape(kind, shape, axis)
    types = [s.regs[0].type for s in sources]
    offs = write(cg, sources)
    lay = cg.layout(out_shape)
    step = row_major_strides(shape)[axis]
    n = shape[axis]
    reverse = is_reverse(op)
    outs = [[] for _ in sources]
    for k in range(lay.regs):
        f = cg.flat_in_tile(lay, k)
        coords = cg.coords(out_shape, f)
        if kind == "reduce":
            coords.insert(axis, cg.c32(0))
        line = list(coords)
        line[axis] = cg.c32(0)
        base = cg.linear(shape, line)

        def load_at(kk, base=base):
            idx = cg.op("arith.addi", base, cg.op("arith.muli", kk, cg.c32(step)) if step != 1 else kk)
            return [cg.smem_load(o, idx, t) for o, t in zip(offs, types)]

        def body(kk, accs, last=coords[axis]):
            if kind == "scan" and reverse:  # in scan order: step kk of lo..n-1 takes element n-1-(kk-lo)
                kk = cg.op("arith.subi", cg.op("arith.addi", last, cg.c32(n - 1)), kk)
            return combine(rb, op, accs, load_at(kk))

        init = identities(cg, op, types)
        if kind == "reduce":
            if n <= UNROLL:
                accs = init
                for kk in range(n):
                    accs = body(cg.c32(kk), accs)
            else:
                accs = cg.for_(cg.c32(0), cg.c32(n), init, body)
        else:
            lo, hi = (coords[axis], cg.c32(n)) if reverse else (cg.c32(0), cg.op("arith.addi", coords[axis],
                                                                                     cg.c32(1)))
            accs = cg.for_(lo, hi, init, body)
        for i, a in enumerate(accs):
            outs[i].append(a)
    cg.barrier()
    return [TileV(lay, o) for o in outs]


def _lower_smem_passes(cg, op, rb, sources, windows):
    """:func:`lower_smem` of a reduce in passes: window ``(first, end)`` holds the source elements ``lo <= f < hi``
    (whole register repetitions, ``lo = first * rep_elems``), so the line ``base + kk * step`` of a result element
    has there the ``kk`` from ``ceil((lo - base) / step)`` to ``ceil((hi - base) / step)`` (clamped to the line); a
    loop combines those, its partial carried to the next window."""
    from ..stage4_tileas_to_llvm.exchange import rep_elems, write
    from ..stage4_tileas_to_llvm.values import TileV

    axis = ir.IntegerAttr(op.attributes["dim"]).value
    shape = sources[0].shape
    out_shape = _out_shape("reduce", shape, axis)
    types = [s.regs[0].type for s in sources]
    lay = cg.layout(out_shape)
    step = row_major_strides(shape)[axis]
    n = shape[axis]
    span = rep_elems(sources[0].layout)
    bases = []  # per result register: the flat index of its line's first element
    for k in range(lay.regs):
        coords = cg.coords(out_shape, cg.flat_in_tile(lay, k))
        coords.insert(axis, cg.c32(0))
        bases.append(cg.linear(shape, coords))
    accs = [identities(cg, op, types) for _ in range(lay.regs)]
    for first, end in windows:
        offs = write(cg, sources, reps=[(first, end)] * len(sources))
        for k, base in enumerate(bases):
            def kk_at(f, base=base):  # the first kk whose element lies at or past flat index f (within the line)
                kk = cg.op("arith.ceildivsi", cg.op("arith.subi", cg.c32(f), base), cg.c32(step))
                return cg.op("arith.minsi", cg.op("arith.maxsi", kk, cg.c32(0)), cg.c32(n))

            a, b = kk_at(first * span), kk_at(end * span)

            def body(kk, acc, base=base, first=first, offs=offs):
                idx = cg.op("arith.addi", base, cg.op("arith.muli", kk, cg.c32(step)) if step != 1 else kk)
                local = cg.op("arith.subi", idx, cg.c32(first * span)) if first else idx
                return combine(rb, op, acc, [cg.smem_load(o, local, t) for o, t in zip(offs, types)])

            accs[k] = cg.for_(a, b, accs[k], body)
        cg.barrier()
    return [TileV(lay, [accs[k][i] for k in range(lay.regs)]) for i in range(len(sources))]


def shuffle(cg, v, offset, mode="xor"):
    """``gpu.shuffle`` of ``v`` with the lane ``offset`` away (``xor``: the butterfly partner), over the whole
    warp. Stage 6 makes it ``nvvm.shfl.sync`` = PTX ``shfl.sync.{bfly,up,down}.b32`` (PTX ISA "Data Movement and
    Conversion Instructions: shfl.sync", 9.7.8.6 in the ISA 7 numbering: ``.bfly: j = lane ^ bval``, in range
    for every lane with the clamp 31 used here), which moves 32 bits: a narrower value travels in the low bits
    of an i32, a 64-bit one as two 32-bit halves."""
    from ..stage4_tileas_to_llvm.codegen import create

    def b32(x):
        return create("gpu.shuffle", [x.type, cg.i1], [x, cg.c32(offset), cg.c32(32)],
                      {"mode": ir.Attribute.parse(f"#gpu<shuffle_mode {mode}>")}).results[0]

    t = v.type
    width = t.width if isinstance(t, (ir.FloatType, ir.IntegerType)) else 32
    if width == 32:
        return b32(v)
    it = ir.IntegerType.get_signless(width)
    bits = cg.op("arith.bitcast", v, ty=it) if isinstance(t, ir.FloatType) else v
    if width < 32:
        out = cg.op("arith.trunci", b32(cg.op("arith.extui", bits, ty=cg.i32)), ty=it)
    else:  # 64 bits: both halves
        lo = cg.op("arith.trunci", bits, ty=cg.i32)
        hi = cg.op("arith.trunci", cg.op("arith.shrui", bits, cg.const(it, 32)), ty=cg.i32)
        out = cg.op("arith.ori", cg.op("arith.extui", b32(lo), ty=it),
                    cg.op("arith.shli", cg.op("arith.extui", b32(hi), ty=it), cg.const(it, 32)))
    return cg.op("arith.bitcast", out, ty=t) if isinstance(t, ir.FloatType) else out


def lower_shuffle(cg, op, rb, sources, kind):
    """In-thread partials per register group, butterfly shuffles inside the row's lanes, then one
    partial per warp through shared memory to the threads that hold the result. Every operand of a
    multi-operand reduce (argmax: value and index) is shuffled; the combiner sees them together.
    Combines keep element order (the lower elements are always the combiner's left side), so the
    partial that lane 0 of a row group keeps is a tree over the row in order."""
    from ..stage4_tileas_to_llvm.codegen import elem_bytes
    from ..stage4_tileas_to_llvm.values import TileV

    lay = sources[0].layout
    shape = lay.shape
    axis = len(shape) - 1
    g = shape[-1] // lay.vec
    lanes = min(g, 32)
    parts = max(1, g // 32)
    types = [s.regs[0].type for s in sources]
    tt = cg.slot(lay.owners)
    leader = cg.cmpi(0, cg.op("arith.remui", tt, cg.c32(lanes)), cg.c32(0))
    writer = cg.and_(leader, cg.owner_mask(lay))
    sub = cg.op("arith.divui", cg.op("arith.remui", tt, cg.c32(g)), cg.c32(32)) if parts > 1 else None
    rows_total = lay.n // shape[-1]
    region = (rows_total * parts * max(elem_bytes(t) for t in types) + 15) // 16 * 16  # bytes per operand
    for rep in range(lay.reps):
        accs = None
        for j in range(lay.vec):
            vals = [s.regs[rep * lay.vec + j] for s in sources]
            accs = vals if accs is None else combine(rb, op, accs, vals)
        off = lanes // 2
        while off >= 1:
            accs = combine(rb, op, accs, [shuffle(cg, a, off) for a in accs])
            off //= 2
        row = cg.op("arith.divui", cg.op("arith.addi", tt, cg.c32(rep * lay.owners)), cg.c32(g))
        idx = cg.op("arith.muli", row, cg.c32(parts)) if parts > 1 else row
        if sub is not None:
            idx = cg.op("arith.addi", idx, sub)
        cond = cg.and_(writer, cg.cmpi(6, row, cg.c32(rows_total)))

        def store(accs=accs, idx=idx):
            for i, a in enumerate(accs):
                cg.smem_store(i * region, idx, a)

        cg.masked(cond, store)
    cg.reserve(len(sources) * region)
    cg.barrier()
    out_shape = _out_shape("reduce", shape, axis)
    olay = cg.layout(out_shape)
    outs = [[] for _ in sources]
    for k in range(olay.regs):
        f = cg.flat_in_tile(olay, k)
        accs = None
        for p in range(parts):
            idx = cg.op("arith.addi", cg.op("arith.muli", f, cg.c32(parts)), cg.c32(p)) if parts > 1 else f
            vals = [cg.smem_load(i * region, idx, t) for i, t in enumerate(types)]
            accs = vals if accs is None else combine(rb, op, accs, vals)
        for i, a in enumerate(accs):
            outs[i].append(a)
    cg.barrier()
    return [TileV(olay, o) for o in outs]


def lower_scan_shuffle(cg, op, rb, sources, kind):
    """A row scan within a warp: each thread scans its ``vec`` elements, the row's threads scan their
    totals with shuffles (Hillis-Steele: ``up`` for a forward scan, ``down`` for a reverse one), and
    every element combines the neighbouring thread's inclusive total (or the identity) with its own
    partial. The combiner's left side is always the elements earlier in scan order, as in the sequential scan
    (for a reverse scan the higher ones: tileiras combines ``f(acc, x)`` scanning from the end)."""
    from ..stage4_tileas_to_llvm.values import TileV

    lay = sources[0].layout
    g = lay.shape[-1] // lay.vec
    reverse = is_reverse(op)
    mode = "down" if reverse else "up"
    ident = identities(cg, op, [s.regs[0].type for s in sources])
    lane = cg.op("arith.remui", cg.slot(lay.owners), cg.c32(g))  # the thread's place in its row

    def ordered(earlier, later):  # combine with the elements earlier in scan order on the left
        return combine(rb, op, earlier, later)

    def has_neighbour(off):  # a thread ``off`` places before (forward) / after (reverse) in the row
        return cg.cmpi(6, lane, cg.c32(g - off)) if reverse else cg.cmpi(9, lane, cg.c32(off))

    outs = [[None] * lay.regs for _ in sources]
    for rep in range(lay.reps):
        base = rep * lay.vec
        parts, acc = {}, None
        for j in (range(lay.vec - 1, -1, -1) if reverse else range(lay.vec)):
            vals = [s.regs[base + j] for s in sources]
            acc = vals if acc is None else ordered(acc, vals)
            parts[j] = acc
        total, off = acc, 1
        while off < g:
            other = [shuffle(cg, t, off, mode) for t in total]
            merged = ordered(other, total)
            has = has_neighbour(off)
            total = [cg.select(has, x, t) for x, t in zip(merged, total)]
            off *= 2
        has = has_neighbour(1)
        carry = [cg.select(has, shuffle(cg, t, 1, mode), i) for t, i in zip(total, ident)]
        for j in range(lay.vec):
            res = ordered(carry, parts[j])
            for i, r in enumerate(res):
                outs[i][base + j] = r
    return [TileV(lay, o) for o in outs]
