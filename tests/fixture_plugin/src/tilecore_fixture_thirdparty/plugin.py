"""A third-party plugin: a custom copy atom, an MMA atom and an override of the built-in ``gpu.lane_id`` lowering.

The built-in pattern (gpu_nvvm) reads ``%laneid``; this one computes
``tid.x & 31`` with a higher benefit, so it wins whenever both are loaded.

The MMA atom ``thirdparty.mma.m16n8k8.f16.f32`` (tileas' MMA interface, :mod:`tilecore.mma`) outranks
the cute plugin's m16n8k16 atom for f16 x f16 -> f32 dots: ``mma.sync.aligned.m16n8k8`` (half the K of
the built-in per instruction), fragments gathered with plain shared-memory loads, and ``nvvm.mma.sync``
emitted directly in stage 4 (PTX ISA, "Matrix Fragments for mma.m16n8k8": A0 = row g, K 2t .. 2t + 1,
A1 = row g + 8; B0 = K 2t .. 2t + 1 of column g).
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


def _pair(cg, smem, rows, cols):
    """One 32-bit fragment word: the two f16 elements at (rows[i], cols[i]) (i32 values)."""
    llvm = dialects.llvm
    vec = llvm.mlir_poison(ir.VectorType.get([2], smem.elem))
    for i, (r, c) in enumerate(zip(rows, cols)):
        vec = llvm.insertelement(vec, llvm.load(smem.elem, smem.address(cg, r, c)), cg.c32(i))
    return vec


def lower_mma_k8(cg, action, req, *args):
    """The MMA interface's three actions for mma.sync m16n8k8 f16 -> f32."""
    lane, _ = cg.lane_and_warp()
    g = cg.op("arith.shrui", lane, cg.c32(2))
    t2 = cg.op("arith.muli", cg.op("arith.andi", lane, cg.c32(3)), cg.c32(2))
    t2p = cg.op("arith.addi", t2, cg.c32(1))
    if action == "load_a":
        smem, row, k = args
        r0 = cg.op("arith.addi", row, g)
        r8 = cg.op("arith.addi", r0, cg.c32(8))
        c0, c1 = cg.op("arith.addi", k, t2), cg.op("arith.addi", k, t2p)
        return [_pair(cg, smem, (r, r), (c0, c1)) for r in (r0, r8)]
    if action == "load_b":
        smem, k, col = args
        c = cg.op("arith.addi", col, g)
        return [_pair(cg, smem, (cg.op("arith.addi", k, t2), cg.op("arith.addi", k, t2p)), (c, c))]
    a, b, c = args
    f32 = ir.F32Type.get()
    d = dialects.nvvm.mma_sync(ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>"),
                               ir.Attribute.parse("#nvvm.shape<m = 16, n = 8, k = 8>"),
                               ir.Attribute.parse("#nvvm.mma_layout<row>"), ir.Attribute.parse("#nvvm.mma_layout<col>"),
                               a, b, list(c), multiplicand_a_ptx_type=ir.Attribute.parse("#nvvm.mma_type<f16>"),
                               multiplicand_b_ptx_type=ir.Attribute.parse("#nvvm.mma_type<f16>"))
    return [dialects.llvm.extractvalue(f32, d, [i]) for i in range(4)]


def _admits_k8(req) -> bool:
    from tilecore.mma import tensor_core_admits

    return req.a == req.b == "f16" and req.acc == "f32" and tensor_core_admits(req, (16, 8, 8))


@hookimpl
def tilecore_register_atoms(target):
    from tilecore.mma import MMA_INTERFACE

    return [Atom("thirdparty.copy.fast", "copy", lower=lower_fast_copy, min_cc=80, priority=100,
                 description="a third-party copy atom that outranks the built-ins"),
            Atom("thirdparty.mma.m16n8k8.f16.f32", "mma", lower=lower_mma_k8, min_cc=80, priority=50,
                 admits=_admits_k8, data={"interface": MMA_INTERFACE, "inst": (16, 8, 8)},
                 description="mma.sync m16n8k8 f16 -> f32, fragments gathered from shared memory")]
