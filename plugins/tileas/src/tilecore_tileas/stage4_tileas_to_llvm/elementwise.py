"""Element-wise ops (arith / math / any scalar op): one scalar op per register."""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from ..rebuild import attrs_of
from .codegen import create
from .values import TileV

# Attributes the layout / atom stages attach for stage 4 only: not copied onto scalar ops.
ANNOTATIONS = ("layouts", "exchange", "atom")


def scalar_type(t, convert):
    if str(t).startswith("tensor<"):
        return convert(ir.RankedTensorType(t).element_type)
    return convert(t)


def elementwise(op, rb):
    """Recreate ``op`` per register (or once, when no operand is a tile)."""
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    attrs = {k: v for k, v in attrs_of(op).items() if k not in ANNOTATIONS}
    rtypes = [scalar_type(r.type, rb.convert_type) for r in op.results]
    tiles = [v for v in ins if isinstance(v, TileV)]
    if not tiles:
        if any(not isinstance(v, ir.Value) for v in ins):
            raise LoweringError(f"'{op.name}' on a non-value operand is not supported", op)
        new = create(op.name, rtypes, ins, attrs)
        return list(new.results)
    lay = tiles[0].layout
    if any(t.layout != lay for t in tiles):
        raise LoweringError(f"internal error: operands of '{op.name}' disagree on their layout", op)
    regs = [[] for _ in op.results]
    for k in range(lay.regs):
        args = [v.regs[k] if isinstance(v, TileV) else v for v in ins]
        new = create(op.name, rtypes, args, attrs)
        for i, r in enumerate(new.results):
            regs[i].append(r)
    out = []
    for r, vals in zip(op.results, regs):
        out.append(TileV(cg.layout(ir.RankedTensorType(r.type).shape), vals) if str(r.type).startswith("tensor<")
                   else vals[0])
    return out


def constant(op, rb):
    cg = rb.data["cg"]
    t = op.results[0].type
    attr = op.attributes["value"]
    if not str(t).startswith("tensor<"):
        return [create("arith.constant", [t], [], {"value": attr}).results[0]]
    dense = ir.DenseElementsAttr(attr)
    rt = ir.RankedTensorType(t)
    lay = cg.layout(rt.shape)
    if dense.is_splat:
        c = create("arith.constant", [rt.element_type], [], {"value": dense.get_splat_value()}).results[0]
        return [TileV(lay, [c] * lay.regs)]
    # A non-splat tile: a constant table in global memory, one load per register.
    table = cg.constant_table(dense, rt)
    el = rt.element_type
    regs = []
    for k in range(lay.regs):
        f = cg.flat(lay, k)
        valid = cg.valid(lay, k)
        if valid is not None:
            f = cg.select(valid, f, cg.c32(0))
        p = dialects.llvm.getelementptr(ir.Type.parse("!llvm.ptr<1>"), table, [f], [-2147483648], el, 0)
        regs.append(dialects.llvm.load(el, p))
    return [TileV(lay, regs)]


def ptr_cast(kind):
    """ptr_to_int / int_to_ptr / ptr_to_ptr per register (LLVM ptrtoint / inttoptr; same address space)."""
    def h(op, rb):
        cg = rb.data["cg"]
        src = rb.get(op.operands[0])
        rt = scalar_type(op.results[0].type, rb.convert_type)

        def one(v):
            if kind == "ptr_to_int":
                return dialects.llvm.ptrtoint(rt, v)
            if kind == "int_to_ptr":
                return dialects.llvm.inttoptr(rt, v)
            return v

        if isinstance(src, TileV):
            return [TileV(cg.layout(ir.RankedTensorType(op.results[0].type).shape), [one(v) for v in src.regs])]
        return [one(src)]
    return h
