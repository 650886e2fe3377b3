"""Checks of nv_tileaa / nv_tileas IR at the entry of stages 2-4, before any of them mutates it.

The IRDL definitions of the two dialects constrain operand / result counts but not attribute kinds,
and tiles are builtin tensors of any shape: MLIR written by someone else (``tilecore opt`` / ``compile``
on a ``.mlir`` file of any stage) can carry an ``i64`` array where a stage reads an integer, or a
tile with a dynamic or zero extent. Such IR is reported at the op, with what was expected, instead
of failing inside a handler.
"""

from __future__ import annotations

from tilecore.errors import LoweringError, ops_in
from tilecore.mlir import ir

TILE_DIALECTS = ("nv_tileaa", "nv_tileas")


def _is(cls):
    return lambda a: isinstance(a, cls)


def _prefixed(*prefixes):
    return lambda a: str(a).startswith(prefixes)


def _layouts(a) -> bool:
    return isinstance(a, ir.ArrayAttr) and all(str(x).startswith("#nv_tileas.blocked<") for x in ir.ArrayAttr(a))


# attribute name -> (what it must be, predicate); attributes not listed are not read by the stages
ATTRIBUTE_KINDS = {
    "dim": ("an integer", _is(ir.IntegerAttr)),
    "div_by": ("an integer", _is(ir.IntegerAttr)),
    "lb": ("an integer", _is(ir.IntegerAttr)),
    "ub": ("an integer", _is(ir.IntegerAttr)),
    "dim_map": ("an i64 array (array<i64: ...>)", _is(ir.DenseI64ArrayAttr)),
    "tile_shape": ("an i64 array (array<i64: ...>)", _is(ir.DenseI64ArrayAttr)),
    "traversal_strides": ("an i64 array (array<i64: ...>)", _is(ir.DenseI64ArrayAttr)),
    "in_bounds": ("an i1 array (array<i1: ...>)", _is(ir.DenseBoolArrayAttr)),
    "permutation": ("an i32 array (array<i32: ...>)", _is(ir.DenseI32ArrayAttr)),
    "padding": ("a string", _is(ir.StringAttr)),
    "exchange": ("a string", _is(ir.StringAttr)),
    "identities": ("an array", _is(ir.ArrayAttr)),
    "atom": ('#nv_tileas.atom<"name">', _prefixed('#nv_tileas.atom<"')),
    "layouts": ("an array of #nv_tileas.blocked layouts", _layouts),
    "mem_scope": ("#nv_tileaa.mem_scope<N : i32> or #nv_tileas.mem_scope<N : i32>",
                  _prefixed("#nv_tileaa.mem_scope<", "#nv_tileas.mem_scope<")),
    "mem_semantic": ("#nv_tileaa.mem_semantic<N : i32> or #nv_tileas.mem_semantic<N : i32>",
                     _prefixed("#nv_tileaa.mem_semantic<", "#nv_tileas.mem_semantic<")),
}


def _tile_shape_error(t) -> str | None:
    if not isinstance(t, ir.RankedTensorType):
        return "an unranked tensor" if str(t).startswith("tensor<") else None
    shape = ir.RankedTensorType(t).shape
    if any(d == ir.ShapedType.get_dynamic_size() for d in shape):
        return f"a dynamic extent ({t})"
    if any(d <= 0 for d in shape):
        return f"a zero extent ({t})"
    return None


def check_op(op) -> None:
    """Raise a LoweringError at ``op`` if it is a tile op with a wrongly kinded attribute or a tile that is
    not of a static, positive shape."""
    if op.name.split(".", 1)[0] not in TILE_DIALECTS:
        return
    attrs = op.attributes
    for name, (what, ok) in ATTRIBUTE_KINDS.items():
        if name in attrs and not ok(attrs[name]):
            raise LoweringError(f"'{op.name}' op attribute '{name}' must be {what}, but got {attrs[name]}", op)
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            err = _tile_shape_error(v.type)
            if err:
                raise LoweringError(f"'{op.name}' op {kind} #{i} is a tile with {err}: tiles have static, "
                                    f"positive extents", op)


def check_module(module) -> None:
    """:func:`check_op` on every op of ``module`` (called at a stage's entry: nothing is changed yet)."""
    for op in ops_in(module.operation):
        check_op(op)
