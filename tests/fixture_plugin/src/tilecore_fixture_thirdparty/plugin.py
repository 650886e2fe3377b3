"""A third-party plugin: a custom copy atom and an override of the built-in ``gpu.lane_id`` lowering.

The built-in pattern (gpu_nvvm) reads ``%laneid``; this one computes
``tid.x & 31`` with a higher benefit, so it wins whenever both are loaded.
"""

from tilecore.atoms import Atom
from tilecore.conversion import Pattern
from tilecore.hookspecs import hookimpl
from tilecore.mlir import dialects, ir


class LaneIdFromTid(Pattern):
    """``gpu.lane_id`` -> ``nvvm.read.ptx.sreg.tid.x`` & 31, cast to index."""

    root = "gpu.lane_id"
    benefit = 10

    def rewrite(self, op, rw):
        i32 = ir.IntegerType.get_signless(32)
        with rw.ip, op.location:
            tid = ir.Operation.create("nvvm.read.ptx.sreg.tid.x", results=[i32]).results[0]
            mask = ir.Operation.create("llvm.mlir.constant", results=[i32],
                                       attributes={"value": ir.IntegerAttr.get(i32, 31)}).results[0]
            lane = ir.Operation.create("llvm.and", results=[i32], operands=[tid, mask]).results[0]
            idx = dialects.arith.index_cast(ir.IndexType.get(), lane)
        rw.replace(op, [idx])


def lower_fast_copy(*args, **kwargs):
    """The custom atom's lowering entry point (called by the stage that selects it)."""
    return "thirdparty.copy.fast"


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage == "convert-nvgpu-and-gpu-to-nvvm":
        return [LaneIdFromTid()]
    return []


@hookimpl
def tilecore_register_atoms(target):
    return [Atom("thirdparty.copy.fast", "copy", lower=lower_fast_copy, min_cc=80, priority=100,
                 description="a third-party copy atom that outranks the built-ins")]
