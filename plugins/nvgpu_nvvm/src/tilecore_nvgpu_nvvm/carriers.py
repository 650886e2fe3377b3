"""Ops that pass nvgpu values on (returns, calls, branches, loops, conditionals) pass their LLVM values.

A loop-carried WGMMA accumulator, a tensor map handed to a callee, a token returned from a device
function: the op that carries the value does nothing with it, so it is retyped in place, one table
row per op (``CARRIERS``); the nvgpu ops around it keep seeing nvgpu values through unrealized
casts until their own patterns fold them. Per carrier:

- nvgpu-typed operands -> the operand cast to its LLVM type (before the op);
- nvgpu-typed results -> retyped, users see a cast back (after the op);
- nvgpu-typed arguments of the blocks of its regions (loop iteration arguments, ``scf.while``
  before / after arguments) -> retyped, users see a cast back.

Upstream's passes run by ``gpu_nvvm`` then lower the carriers themselves (scf -> cf -> llvm,
``func.call`` -> ``llvm.call``, returns). Function signatures are ``signature.py``.
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.mlir import ir

from .signature import CAST, llvm_types, retype_block_arguments
from .types import is_nvgpu

# op -> what it carries (documentation; every row is handled the same way)
CARRIERS = {
    "func.return": "returned values",
    "gpu.return": "returned values",
    "func.call": "arguments and results",
    "scf.yield": "values yielded to the parent (loop iteration, branch result)",
    "scf.condition": "values passed to scf.while's after region / results",
    "scf.for": "iteration arguments: initial values, region arguments, results",
    "scf.while": "initial values, before / after region arguments, results",
    "scf.if": "results",
    "scf.execute_region": "results, block arguments",
    "scf.index_switch": "results",
    "cf.br": "successor operands",
    "cf.cond_br": "successor operands",
    "arith.select": "operands and result",
}


# carriers whose region blocks can take arguments (scf.if / scf.index_switch regions take none; the
# others have no regions)
_BLOCK_ARGUMENTS = frozenset({"scf.for", "scf.while", "scf.execute_region"})


def _region_blocks(op) -> list:
    return [b for r in op.regions for b in r.blocks]


class CarrierPattern(Pattern):
    """Retype the nvgpu-typed operands, results and region block arguments of one carrier op (in place)."""

    modifies_in_place = True

    def __init__(self, root: str):
        self.root = root

    @property
    def name(self) -> str:
        return "CarrierPattern[" + self.root + "]"

    def match(self, op):
        # Asked of every carrier op (a matmul's guarded element copies: ~2,000 scf.if / scf.yield): plain
        # loops, and the regions only of the ops whose blocks take arguments (loops, execute_region).
        for v in op.operands:
            if is_nvgpu(v.type):
                return True
        for r in op.results:
            if is_nvgpu(r.type):
                return True
        if self.root in _BLOCK_ARGUMENTS:
            for region in op.regions:
                for b in region.blocks:
                    for a in b.arguments:
                        if is_nvgpu(a.type):
                            return True
        return False

    def rewrite(self, op, rw):
        # every type checked before anything changes
        operands = llvm_types([v.type for v in op.operands], "operand", op)
        results = llvm_types([r.type for r in op.results], "result", op)
        blocks = _region_blocks(op)
        block_types = [llvm_types([a.type for a in b.arguments], "region argument", op) for b in blocks]
        for i, (v, t) in enumerate(zip(list(op.operands), operands)):
            if t != v.type:
                op.operands[i] = rw.cast(v, t)
        for r, t in zip(list(op.results), results):
            old = r.type
            if t == old:
                continue
            r.set_type(t)
            with ir.InsertionPoint.after(op), op.location:
                back = ir.Operation.create(CAST, results=[old], operands=[r])
            r.replace_all_uses_except(back.results[0], back)
        for b, types in zip(blocks, block_types):
            retype_block_arguments(b, types, op.location)


def patterns():
    return [CarrierPattern(root) for root in CARRIERS]
