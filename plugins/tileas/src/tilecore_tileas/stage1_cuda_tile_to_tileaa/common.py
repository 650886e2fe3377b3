"""Helpers shared by the stage 1 populators."""

from __future__ import annotations

from tilecore.mlir import ir

from ..cuda_tile.ops import groups


def s(op, name: str, default: str | None = None) -> str | None:
    """A string (enum) attribute of ``op``."""
    if name not in op.attributes:
        return default
    return ir.StringAttr(op.attributes[name]).value


def i(op, name: str, default: int | None = None) -> int | None:
    if name not in op.attributes:
        return default
    return ir.IntegerAttr(op.attributes[name]).value


def has(op, name: str) -> bool:
    return name in op.attributes


def operands(op, rb) -> dict:
    """New operands of a cuda_tile op by group name (lists)."""
    return {k: rb.gets(v) for k, v in groups(op).items()}


def create(name: str, results: list, operands: list, attrs: dict | None = None, regions: int = 0):
    return ir.Operation.create(name, results=results, operands=operands, attributes=attrs or {}, regions=regions)


def result_types(op, rb) -> list:
    return [rb.convert_type(r.type) for r in op.results]


def i32(v: int):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)


def i64(v: int):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def const_i32(v: int):
    return const_int(ir.IntegerType.get_signless(32), v)


def const_int(ty: ir.Type, v: int):
    """An ``arith.constant`` of integer type ``ty``."""
    return create("arith.constant", [ty], [], {"value": ir.IntegerAttr.get(ty, v)}).results[0]


def resize_int(v, ty: ir.Type):
    """Integer ``v`` at the width of ``ty`` (sign-extended or truncated; unchanged when it already is)."""
    have, want = ir.IntegerType(v.type).width, ir.IntegerType(ty).width
    if have == want:
        return v
    return create("arith.extsi" if have < want else "arith.trunci", [ty], [v]).results[0]


def element_type(t: ir.Type) -> ir.Type:
    return ir.RankedTensorType(t).element_type if str(t).startswith("tensor<") else t
