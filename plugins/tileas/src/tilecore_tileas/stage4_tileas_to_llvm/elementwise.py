"""Element-wise ops (arith / math / any scalar op): one scalar op per register."""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir
from tilecore.mma import SmemOperand, SwizzledOperand

from ..rebuild import attrs_of
from . import fragments, narrow_float, recompute, rounding, tf32
from .codegen import create
from .values import TileV

# Attributes the layout / atom stages attach for stage 4 only: not copied onto scalar ops.
ANNOTATIONS = ("layouts", "exchange", "atom")
# What element-wise ops may do with 8-bit float codes (i8 registers) and tf32 values (f32 registers):
# convert them, pick them, or reinterpret them (``arith.bitcast`` between same-width types, unchanged).
NARROW_CONVERSIONS = ("arith.extf", "arith.truncf")
NARROW_MOVES = ("arith.select", "arith.bitcast")


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
    narrow = [narrow_float.element_name(v.type) for v in [*op.operands, *op.results] if narrow_float.is_narrow(v.type)]
    if narrow and op.name not in NARROW_CONVERSIONS + NARROW_MOVES:
        raise LoweringError(f"'{op.name}' on {narrow[0]} is not supported (8-bit floats must be converted first)", op)
    tf = any(tf32.is_tf32(v.type) for v in [*op.operands, *op.results])
    if tf and op.name not in NARROW_CONVERSIONS + NARROW_MOVES:
        raise LoweringError(f"'{op.name}' on tf32 is not supported (tf32 tiles must be converted first)", op)
    if tf and op.name == "arith.truncf" and isinstance(ins[0], (SmemOperand, SwizzledOperand)):
        return [tf32.round_stage(cg, ins[0], tf32.rounding_of(op))]  # a pipelined f32 tile rounded for its dot
    if not tiles:
        if any(not isinstance(v, ir.Value) for v in ins):
            raise LoweringError(f"'{op.name}' on a non-value operand is not supported", op)
        if narrow and op.name in NARROW_CONVERSIONS:
            return narrow_float.convert(cg, op, ins)
        if tf and op.name in NARROW_CONVERSIONS:
            return tf32.convert(cg, op, ins)
        if rounding.ATTR in attrs:
            return [rounding.directed(op, attrs, rtypes[0], ins)]
        new = create(op.name, rtypes, ins, attrs)
        return list(new.results)
    unified = fragments.unify(cg, tiles)
    if unified is not tiles:
        swap = dict(zip(map(id, tiles), unified))
        ins = [swap.get(id(v), v) for v in ins]
        tiles = unified
    lay = tiles[0].layout
    if any(t.layout != lay for t in tiles):
        raise LoweringError(f"internal error: operands of '{op.name}' disagree on their layout", op)
    if narrow and op.name in NARROW_CONVERSIONS:
        return [TileV(lay, narrow_float.convert(cg, op, tiles[0].regs))]
    if tf and op.name in NARROW_CONVERSIONS:
        return [TileV(lay, tf32.convert(cg, op, tiles[0].regs))]
    regs = [[] for _ in op.results]
    for k in range(lay.regs):
        args = [v.regs[k] if isinstance(v, TileV) else v for v in ins]
        if rounding.ATTR in attrs:
            regs[0].append(rounding.directed(op, attrs, rtypes[0], args))
            continue
        new = create(op.name, rtypes, args, attrs)
        for i, r in enumerate(new.results):
            regs[i].append(r)
    recipe = recompute.elementwise(op.name, rtypes[0], attrs, ins) if len(op.results) == 1 else None
    out = []
    for r, vals in zip(op.results, regs):
        out.append(TileV(lay, vals, recipe) if str(r.type).startswith("tensor<") else vals[0])
    return out


def constant(op, rb):
    cg = rb.data["cg"]
    t = op.results[0].type
    attr = op.attributes["value"]
    if not str(t).startswith("tensor<"):
        if tf32.is_tf32(t):  # the register value: f32
            attr = tf32.constant_attr(attr)
        return [create("arith.constant", [attr.type], [], {"value": attr}).results[0]]
    dense = ir.DenseElementsAttr(attr)
    rt = ir.RankedTensorType(t)
    lay = cg.layout(rt.shape)
    if dense.is_splat:
        value = dense.get_splat_value()
        if narrow_float.is_narrow(rt.element_type):  # the code, as i8
            value = ir.IntegerAttr.get(cg.i8, narrow_float.constant_code(value, str(rt.element_type)))
        elif tf32.is_tf32(rt.element_type):
            value = tf32.constant_attr(value)
        c = create("arith.constant", [value.type], [], {"value": value}).results[0]
        return [TileV(lay, [c] * lay.regs, recompute.splat(c))]
    el = rt.element_type
    if narrow_float.is_narrow(el):  # registers hold the codes: a table of i8 codes
        dense = narrow_float.code_table(dense, str(el))
        el = cg.i8
    if dense is None or tf32.is_tf32(el):
        raise LoweringError(f"a non-uniform {rt.element_type} constant tile is not supported yet", op)
    # A non-splat tile: a constant table in global memory, one load per register.
    table = cg.constant_table(dense, rt)
    regs = []
    for k in range(lay.regs):
        f = cg.flat_in_tile(lay, k)
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
