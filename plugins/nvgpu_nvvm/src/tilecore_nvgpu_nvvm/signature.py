"""Function boundaries that carry nvgpu values: signatures, returns and calls get the LLVM types of ``types.py``.

Upstream's function lowerings (``convert-gpu-to-nvvm``, run by ``gpu_nvvm`` after the Python
patterns: ``gpu.func`` / ``func.func`` -> ``llvm.func``, ``func.call`` -> ``llvm.call``, returns)
do not know the nvgpu types. The rows below hand them LLVM types first; each old use is bridged
with an unrealized cast, which the nvgpu patterns (or reconcile-unrealized-casts) fold away.

| op | what changes | how |
|---|---|---|
| gpu.func, func.func | nvgpu-typed arguments and results in ``function_type``; entry block arguments | in place, before the other patterns (``prepass``) |
| func.return, gpu.return | nvgpu-typed operands | a new return on the cast operands |
| func.call | nvgpu-typed operands and results | a new call on the cast operands; results cast back for the users |

Every type is converted before anything changes: an nvgpu type without a row fails at the
function (or op) with the type, never half-retyped.
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.errors import LoweringError
from tilecore.mlir import ir

from .types import is_nvgpu, lower_type

CAST = "builtin.unrealized_conversion_cast"

# function op -> its return op (the function ops whose signatures may carry nvgpu types)
FUNCTIONS = {"gpu.func": "gpu.return", "func.func": "func.return"}
CALLS = ("func.call",)


def llvm_types(types, what: str, op) -> list:
    """``types`` with every nvgpu type replaced by its LLVM type; fails at ``op`` on a type without a row."""
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


def _function_type(fn) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


def _attributes(op) -> dict:
    return {name: op.attributes[name] for name in op.attributes}


def _has_nvgpu(types) -> bool:
    return any(is_nvgpu(t) for t in types)


class FunctionSignaturePattern(Pattern):
    """Retype the nvgpu-typed arguments and results of a ``gpu.func`` / ``func.func`` (in place)."""

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
        return _has_nvgpu(ft.inputs) or _has_nvgpu(ft.results)

    def rewrite(self, op, rw):
        ft = _function_type(op)
        inputs = llvm_types(ft.inputs, "argument", op)  # checked before anything changes
        results = llvm_types(ft.results, "result", op)
        if len(op.regions) and len(op.regions[0].blocks):
            block = op.regions[0].blocks[0]
            first = block.operations[0] if len(block.operations) else None
            for arg, new in zip(list(block.arguments)[:len(inputs)], inputs):
                old = arg.type
                if new == old:
                    continue
                arg.set_type(new)
                with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block), op.location:
                    cast = ir.Operation.create(CAST, results=[old], operands=[arg])
                arg.replace_all_uses_except(cast.results[0], cast)
        op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def _bridged(rw, values) -> list:
    """``values`` with every nvgpu-typed one cast to its LLVM type."""
    return [rw.cast(v, lower_type(v.type)) if is_nvgpu(v.type) else v for v in values]


class ReturnOperandsPattern(Pattern):
    """A return of nvgpu values returns their LLVM values (the function's results were retyped)."""

    def __init__(self, root: str):
        self.root = root

    @property
    def name(self) -> str:
        return "ReturnOperandsPattern[" + self.root + "]"

    def match(self, op):
        return _has_nvgpu(v.type for v in op.operands)

    def rewrite(self, op, rw):
        llvm_types([v.type for v in op.operands], "operand", op)
        with rw.ip:
            ir.Operation.create(op.name, operands=_bridged(rw, op.operands),
                                attributes=_attributes(op))
        rw.erase(op)


class CallPattern(Pattern):
    """A call passing or returning nvgpu values passes / returns their LLVM values."""

    def __init__(self, root: str):
        self.root = root

    @property
    def name(self) -> str:
        return "CallPattern[" + self.root + "]"

    def match(self, op):
        return _has_nvgpu(v.type for v in op.operands) or _has_nvgpu(r.type for r in op.results)

    def rewrite(self, op, rw):
        results = llvm_types([r.type for r in op.results], "result", op)
        llvm_types([v.type for v in op.operands], "operand", op)
        with rw.ip:
            new = ir.Operation.create(op.name, results=results, operands=_bridged(rw, op.operands),
                                      attributes=_attributes(op))
        rw.replace(op, list(new.results))


def patterns():
    return [*(FunctionSignaturePattern(f) for f in FUNCTIONS),
            *(ReturnOperandsPattern(r) for r in FUNCTIONS.values()),
            *(CallPattern(c) for c in CALLS)]
