"""Tile shape ops: broadcast, reshape, permute, extract_slice, insert_slice, cat, iota."""

from __future__ import annotations

from dataclasses import replace

from tilecore.mlir import ir
from tilecore.mma import SmemOperand, SwizzledOperand

from . import recompute
from .exchange import exchange, scatter_gather_vector
from .fragments import is_fragment, to_blocked
from .memory import as_tile
from .narrow_float import PACKED, storage
from .row_slice import broadcast_rows, is_row_shape, is_row_slice
from .tma_store import fragment_reaches_store
from .values import TileV


def _shape(t):
    return tuple(ir.RankedTensorType(t).shape) if str(t).startswith("tensor<") else ()


def broadcast(op, rb):
    """(Takes a row slice of an MMA fragment as it is: broadcast over columns, it is the fragment's registers,
    :func:`.row_slice.broadcast_rows`; fragments come converted to the blocked layout.)"""
    cg = rb.data["cg"]
    src = rb.get(op.operands[0])
    out = _shape(op.results[0].type)
    if is_row_slice(src):
        res = broadcast_rows(cg, src, out)
        if res is not None:
            return [res]
        src = to_blocked(cg, src)
    lay = cg.layout(out)
    if not isinstance(src, TileV):
        return [TileV(lay, [src] * lay.regs, recompute.splat(src))]
    if src.layout.n == 1:  # held by every thread: a register splat
        return [TileV(lay, [src.regs[0]] * lay.regs, recompute.splat(src.regs[0]))]
    ss = src.shape

    def source(cg, c):  # the source coordinates of result element c: a broadcast dimension's is 0
        return [x if d != 1 else cg.c32(0) for x, d in zip(c, ss)]

    if src.recipe is not None:  # recomputed in the result's layout
        return [recompute.in_layout(cg, recompute.remapped(src.recipe, source), out, lay)]

    def pick(c, load):
        return load(0, cg.linear(ss, source(cg, c)))

    return [exchange(cg, [src], out, pick)]


def reshape(op, rb):
    """(Takes tiles in any layout: a fragment is converted to the blocked layout first, unless the reshape only
    adds unit dimensions for a store, :func:`.tma_store.fragment_reaches_store`, which then takes it as it is; a
    row slice stays one between ``(M,)`` and ``(M, 1)``.)"""
    cg = rb.data["cg"]
    src = rb.get(op.operands[0])
    out = _shape(op.results[0].type)
    if isinstance(src, (SmemOperand, SwizzledOperand)):  # a pipelined (1, M, K) tile: unit dimensions dropped
        return [src]
    if is_row_slice(src):
        if is_row_shape(out, src.layout.n):
            return [TileV(src.layout.with_shape(out), list(src.regs), recompute.reshaped(src.recipe, src.shape, out))]
        src = to_blocked(cg, src)
    if is_fragment(src):
        if fragment_reaches_store(op):
            return [src]
        src = to_blocked(cg, src)
    if not out:
        return [src.regs[0] if isinstance(src, TileV) else src]
    lay = cg.layout(out)
    if not isinstance(src, TileV):
        return [TileV(lay, [src] * lay.regs, recompute.splat(src))]
    assert lay.regs == src.layout.regs  # layouts depend on the element count only
    return [TileV(lay, list(src.regs), recompute.reshaped(src.recipe, src.shape, out))]


def permute(op, rb):
    cg = rb.data["cg"]
    src = rb.get(op.operands[0])
    perm = [int(x) for x in ir.DenseI32ArrayAttr(op.attributes["permutation"])]
    if isinstance(src, SwizzledOperand) and perm == [1, 0]:  # a pipelined stage (an N x K B): read transposed
        return [replace(src, transposed=not src.transposed)]
    out = _shape(op.results[0].type)
    if isinstance(src, TileV) and src.recipe is not None:  # source coordinate j is result coordinate perm.index(j)
        inverse = [perm.index(j) for j in range(len(perm))]
        return [recompute.in_layout(cg, recompute.remapped(src.recipe, lambda cg, c: [c[i] for i in inverse]),
                                    out, cg.layout(out))]

    def dest_index(c):  # result coordinate i is source coordinate perm[i]
        return cg.linear(out, [c[p] for p in perm])

    return [scatter_gather_vector(cg, src, out, dest_index)]


def extract_slice(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    src = as_tile(cg, ins[0], _shape(op.operands[0].type))
    idx = ins[1:]
    out = _shape(op.results[0].type)
    ss = src.shape

    def pick(c, load):
        sc = [cg.op("arith.addi", cg.op("arith.muli", i, cg.c32(r)), x) for i, r, x in zip(idx, out, c)]
        return load(0, cg.linear(ss, sc))

    res = exchange(cg, [src], out, pick)
    return [res if out else res.regs[0]]


def insert_slice(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    src = as_tile(cg, ins[0], _shape(op.operands[0].type))
    dst = as_tile(cg, ins[1], _shape(op.operands[1].type))
    idx = ins[2:]
    out, rs = dst.shape, src.shape

    def pick(c, load):
        inside, local = None, []
        for i, r, x in zip(idx, rs, c):
            lo = cg.op("arith.muli", i, cg.c32(r))
            rel = cg.op("arith.subi", x, lo)
            inside = cg.and_(inside, cg.cmpi(6, rel, cg.c32(r)))
            local.append(rel)
        li = cg.select(inside, cg.linear(rs, local), cg.c32(0))
        a = load(0, li)
        b = load(1, cg.linear(out, c))
        return cg.select(inside, a, b)

    return [exchange(cg, [src, dst], out, pick)]


def cat(op, rb):
    cg = rb.data["cg"]
    lhs, rhs = rb.gets(op.operands)
    dim = ir.IntegerAttr(op.attributes["dim"]).value
    out = _shape(op.results[0].type)
    ls, rs = lhs.shape, rhs.shape

    def pick(c, load):
        first = cg.cmpi(6, c[dim], cg.c32(ls[dim]))
        rc = list(c)
        rc[dim] = cg.op("arith.subi", c[dim], cg.c32(ls[dim]))
        li = cg.select(first, cg.linear(ls, c), cg.c32(0))
        ri = cg.select(first, cg.c32(0), cg.linear(rs, rc))
        return cg.select(first, load(0, li), load(1, ri))

    return [exchange(cg, [lhs, rhs], out, pick)]


def iota(op, rb):
    cg = rb.data["cg"]
    rt = ir.RankedTensorType(op.results[0].type)
    lay = cg.layout(rt.shape)
    el = rt.element_type
    regs = []
    for k in range(lay.regs):
        f = cg.flat(lay, k)
        w = ir.IntegerType(el).width
        if w > 32:
            f = cg.op("arith.extui", f, ty=el)
        elif w < 32:
            f = cg.op("arith.trunci", f, ty=el)
        regs.append(f)
    return [TileV(lay, regs, recompute.iota(el))]


def pack(op, rb):
    """pack / unpack: the same bytes as another element type (through shared memory). A 4-bit float tile holds one
    code per i8 register (:func:`.narrow_float.storage`) but two per byte in its bytes: packing it to bytes puts code
    ``2k`` in the low nibble of byte ``k`` and code ``2k + 1`` in its high nibble; unpacking takes them back out."""
    cg = rb.data["cg"]
    src = as_tile(cg, rb.get(op.operands[0]), _shape(op.operands[0].type))
    rt = ir.RankedTensorType(op.results[0].type)
    el = storage(rt.element_type)
    if str(ir.RankedTensorType(op.operands[0].type).element_type) in PACKED:
        return [exchange(cg, [src], tuple(rt.shape), lambda c, load: _nibbles_to_byte(cg, c[0], load))]
    if str(rt.element_type) in PACKED:
        return [exchange(cg, [src], tuple(rt.shape), lambda c, load: _byte_to_nibble(cg, c[0], load))]
    return [exchange(cg, [src], tuple(rt.shape), lambda c, load: load(0, cg.linear(rt.shape, c), el))]


def _nibbles_to_byte(cg, k, load):
    """Byte ``k`` of a packed 4-bit tile: codes ``2k`` (low nibble) and ``2k + 1`` (high nibble)."""
    first = cg.op("arith.muli", k, cg.c32(2))
    lo = cg.op("arith.andi", load(0, first), cg.const(cg.i8, 0xF))
    hi = cg.op("arith.shli", load(0, cg.op("arith.addi", first, cg.c32(1))), cg.const(cg.i8, 4))
    return cg.op("arith.ori", lo, hi)


def _byte_to_nibble(cg, j, load):
    """Code ``j`` of a 4-bit tile unpacked from bytes: the low nibble of byte ``j // 2`` for even ``j``, the high one
    for odd ``j``."""
    byte = load(0, cg.op("arith.shrui", j, cg.c32(1)), cg.i8)
    odd = cg.op("arith.trunci", cg.op("arith.andi", j, cg.c32(1)), ty=cg.i8)
    return cg.op("arith.andi", cg.op("arith.shrui", byte, cg.op("arith.shli", odd, cg.const(cg.i8, 2))),
                 cg.const(cg.i8, 0xF))
