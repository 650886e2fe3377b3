"""Functions whose signatures carry nvgpu values: arguments and results get the LLVM types of ``types.py``.

Upstream's function lowering (``convert-gpu-to-nvvm``, run by ``gpu_nvvm`` after the Python
patterns: ``gpu.func`` / ``func.func`` -> ``llvm.func``, memref arguments as their descriptor
fields) does not know the nvgpu types. This row hands it LLVM types first, in place, before the
other patterns (``prepass``): ``function_type``, the entry block's arguments and the arguments
of the body's other blocks (branch targets). Each old use is bridged with an unrealized cast,
which the nvgpu patterns (or reconcile-unrealized-casts) fold away. The ops that pass nvgpu
values on (returns, calls, branches, loops) are ``carriers.py``.

Every type is converted before anything changes: an nvgpu type without an LLVM form fails at the
function with the type and the reason, never half-retyped.
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.errors import LoweringError
from tilecore.mlir import ir

from .types import is_nvgpu, lower_type

CAST = "builtin.unrealized_conversion_cast"

# the function ops whose signatures may carry nvgpu types (llvm.func cannot: its verifier wants LLVM types)
FUNCTIONS = ("gpu.func", "func.func")


def llvm_types(types, what: str, op) -> list:
    """``types`` with every nvgpu type replaced by its LLVM type; fails at ``op`` on a type without one."""
    out = []
    for i, t in enumerate(types):
        if is_nvgpu(t):
            try:
                t = lower_type(t)
            except ValueError as e:
                raise LoweringError(f"{what} #{i} of '{op.name}' has type {t} without an LLVM form: {e}", op) \
                    from None
        out.append(t)
    return out


def retype_block_arguments(block, types, location) -> None:
    """Give ``block``'s arguments ``types`` (already checked); old uses see a cast back to the old type."""
    first = block.operations[0] if len(block.operations) else None
    for arg, new in zip(list(block.arguments), types):
        old = arg.type
        if new == old:
            continue
        arg.set_type(new)
        with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block), location:
            cast = ir.Operation.create(CAST, results=[old], operands=[arg])
        arg.replace_all_uses_except(cast.results[0], cast)


def _function_type(fn) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


def _has_nvgpu(types) -> bool:
    return any(is_nvgpu(t) for t in types)


class FunctionSignaturePattern(Pattern):
    """Retype the nvgpu-typed arguments, results and block arguments of a ``gpu.func`` / ``func.func`` (in place)."""

    modifies_in_place = True
    prepass = True  # once per function, before the greedy driver

    def __init__(self, root: str):
        self.root = root

    @property
    def name(self) -> str:
        return "FunctionSignaturePattern[" + self.root + "]"

    def match(self, op):
        if "function_type" not in op.attributes:
            return False
        ft = _function_type(op)
        if _has_nvgpu(ft.inputs) or _has_nvgpu(ft.results):
            return True
        blocks = list(op.regions[0].blocks) if len(op.regions) else []
        return any(_has_nvgpu(a.type for a in b.arguments) for b in blocks[1:])

    def rewrite(self, op, rw):
        ft = _function_type(op)
        inputs = llvm_types(ft.inputs, "argument", op)  # every type checked before anything changes
        results = llvm_types(ft.results, "result", op)
        blocks = list(op.regions[0].blocks) if len(op.regions) else []
        others = [llvm_types([a.type for a in b.arguments], "block argument", op) for b in blocks[1:]]
        if blocks:
            retype_block_arguments(blocks[0], inputs, op.location)  # (gpu.func attributions follow: untouched)
        for block, types in zip(blocks[1:], others):
            retype_block_arguments(block, types, op.location)
        op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def patterns():
    return [FunctionSignaturePattern(f) for f in FUNCTIONS]
