"""``gpu.func`` arguments of nvgpu types (tensor maps, barrier groups, descriptors) become their LLVM types.

Upstream's gpu.func lowering (run after the Python patterns) does not know the
nvgpu types, so this pattern retypes such arguments in place first and bridges
the old uses with an unrealized cast, which the nvgpu patterns then fold away.
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.mlir import ir

from .types import convert_nvgpu_type


def _nvgpu_args(fn) -> list:
    return [a for a in fn.regions[0].blocks[0].arguments if str(a.type).startswith("!nvgpu.")] \
        if len(fn.regions) and len(fn.regions[0].blocks) else []


class GpuFuncNvgpuArgumentsPattern(Pattern):
    """Retype nvgpu-typed ``gpu.func`` arguments to their LLVM types (in place)."""

    root = "gpu.func"
    modifies_in_place = True
    prepass = True  # once per function, before the greedy driver

    def match(self, op):
        return bool(_nvgpu_args(op))

    def rewrite(self, op, rw):
        block = op.regions[0].blocks[0]
        first = block.operations[0] if len(block.operations) else None
        for arg in _nvgpu_args(op):
            old = arg.type
            new = convert_nvgpu_type(old, None)
            arg.set_type(new)
            with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block), op.location:
                cast = ir.Operation.create("builtin.unrealized_conversion_cast", results=[old], operands=[arg])
            arg.replace_all_uses_except(cast.results[0], cast)
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [a.type for a in block.arguments][:len(ftype.inputs)], list(ftype.results)))


def patterns():
    return [GpuFuncNvgpuArgumentsPattern()]
