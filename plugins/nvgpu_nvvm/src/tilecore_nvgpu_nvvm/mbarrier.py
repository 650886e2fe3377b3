"""``nvgpu.mbarrier.*`` -> ``nvvm.mbarrier.*`` on a shared-memory (``!llvm.ptr<3>``) barrier.

In this MLIR snapshot the ``.shared`` NVVM forms of spec note 3 are the
``nvvm.mbarrier.*`` ops applied to an ``!llvm.ptr<3>`` operand (the address
space selects ``llvm.nvvm.mbarrier.*.shared``). A barrier group outside shared
memory is rejected with the spec's verbatim diagnostic, never cast.
"""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import enclosing

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir
from tilecore.typeconv import ADDRSPACE_SHARED, memory_space_to_addrspace

from .common import NvgpuPattern, constant_index, create, gep, i32, i64, predicate, ptr, to_int

llvm = dialects.llvm
MBARRIER_TYPE_MESSAGE = " must be mbarrier barrier type, but got "


def group_info(t: ir.Type) -> tuple[int, int]:
    """(address space, number of barriers) of an ``!nvgpu.mbarrier.group`` type."""
    text = str(t)
    space = memory_space_to_addrspace(ir.Attribute.parse(_parameter(text, "memorySpace"))) \
        if "memorySpace = " in text else 0
    count = int(_parameter(text, "num_barriers")) if "num_barriers = " in text else 1
    return space, count


def _parameter(text: str, name: str) -> str:
    """The text of parameter ``name`` of a printed type ``!d.t<a = .., name = .., ..>`` (nesting-aware)."""
    start = text.index(f"{name} = ") + len(name) + 3
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            if depth == 0:
                return text[start:i].strip()
            depth -= 1
        elif c == "," and depth == 0:
            return text[start:i].strip()
    return text[start:].strip()


def barrier_ptr(op, rw) -> ir.Value:
    """The ``!llvm.ptr<3>`` of ``barriers[mbarId]``; a group not in shared memory is rejected."""
    view = op.opview
    group = view.barriers
    space, _ = rw.memoized(("mbarrier-group", group.type), lambda: group_info(group.type))
    if space != ADDRSPACE_SHARED:
        raise LoweringError(f"'{op.name}' op operand #0 ('barriers'){MBARRIER_TYPE_MESSAGE}"
                            f"'{group.type}' (the barrier must live in shared memory)", op)
    base = rw.operand(group)
    if constant_index(view.mbarId) == 0:  # the first barrier of the group: its base address
        return base
    index = to_int(view.mbarId, 64, rw)
    return gep(rw, rw.type(f"!llvm.ptr<{ADDRSPACE_SHARED}>"), base, index, i64())


class MBarrierCreatePattern(NvgpuPattern):
    """``nvgpu.mbarrier.create`` -> a private ``[N x i64]`` shared global + ``llvm.mlir.addressof``."""

    root = "nvgpu.mbarrier.create"
    family = "mbarrier"

    def lower(self, op, rw):
        space, count = group_info(op.results[0].type)
        if space != ADDRSPACE_SHARED:
            raise LoweringError(f"'{op.name}' op result #0{MBARRIER_TYPE_MESSAGE}'{op.results[0].type}' "
                                "(the barrier must live in shared memory)", op)
        module = enclosing(op, "gpu.module") or enclosing(op, "builtin.module")
        block = module.regions[0].blocks[0]
        taken = {ir.StringAttr(o.attributes["sym_name"]).value for o in block.operations
                 if o.operation.name == "llvm.mlir.global"}
        n = 0
        while f"__mbarrier_{n}" in taken:
            n += 1
        name = f"__mbarrier_{n}"
        with ir.InsertionPoint.at_block_begin(block), op.location:
            create("llvm.mlir.global", attributes={
                "sym_name": ir.StringAttr.get(name),
                "global_type": ir.TypeAttr.get(ir.Type.parse(f"!llvm.array<{count} x i64>")),
                "linkage": ir.Attribute.parse("#llvm.linkage<internal>"),
                "addr_space": ir.IntegerAttr.get(i32(), ADDRSPACE_SHARED),
                "alignment": ir.IntegerAttr.get(i64(), 8)}, regions=1)
        with rw.ip:
            rw.replace(op, llvm.mlir_addressof(ptr(ADDRSPACE_SHARED), name))


def _cta(rw) -> dict:
    return {"scope": rw.attr("#nvvm.mem_scope<cta>"), "relaxed": rw.attr("false")}


class MBarrierInitPattern(NvgpuPattern):
    """``nvgpu.mbarrier.init %g[%i], %count`` -> ``nvvm.mbarrier.init %p3, %count`` (predicate kept)."""

    root = "nvgpu.mbarrier.init"
    family = "mbarrier"

    def lower(self, op, rw):
        view = op.opview
        with rw.ip:
            dialects.nvvm.mbarrier_init(barrier_ptr(op, rw), to_int(view.count, 32, rw), predicate=predicate(view, rw))
        rw.erase(op)


class MBarrierArrivePattern(NvgpuPattern):
    """``nvgpu.mbarrier.arrive %g[%i]`` -> ``nvvm.mbarrier.arrive %p3 -> i64`` (the phase token)."""

    root = "nvgpu.mbarrier.arrive"
    family = "mbarrier"

    def lower(self, op, rw):
        with rw.ip:
            rw.replace(op, dialects.nvvm.mbarrier_arrive(i64(), barrier_ptr(op, rw), **_cta(rw)))


class MBarrierArriveNoCompletePattern(NvgpuPattern):
    """``nvgpu.mbarrier.arrive.nocomplete %g[%i], %count`` -> ``nvvm.mbarrier.arrive.nocomplete`` (i64)."""

    root = "nvgpu.mbarrier.arrive.nocomplete"
    family = "mbarrier"

    def lower(self, op, rw):
        with rw.ip:
            rw.replace(op, dialects.nvvm.mbarrier_arrive_nocomplete(i64(), barrier_ptr(op, rw),
                                                           to_int(op.opview.count, 32, rw)))


class MBarrierArriveExpectTxPattern(NvgpuPattern):
    """``nvgpu.mbarrier.arrive.expect_tx %g[%i], %tx`` -> ``nvvm.mbarrier.arrive.expect_tx %p3, %tx`` (sm_90)."""

    root = "nvgpu.mbarrier.arrive.expect_tx"
    family = "mbarrier.expect_tx"

    def lower(self, op, rw):
        view = op.opview
        with rw.ip:
            create("nvvm.mbarrier.arrive.expect_tx",
                   [barrier_ptr(op, rw), to_int(view.txcount, 32, rw)]
                   + ([predicate(view, rw)] if view.predicate is not None else []),
                   [], _cta(rw))
        rw.erase(op)


class MBarrierTestWaitPattern(NvgpuPattern):
    """``nvgpu.mbarrier.test.wait %g[%i], %token`` -> ``nvvm.mbarrier.test.wait %p3, %token -> i1``."""

    root = "nvgpu.mbarrier.test.wait"
    family = "mbarrier"

    def lower(self, op, rw):
        with rw.ip:
            rw.replace(op, dialects.nvvm.mbarrier_test_wait(ir.IntegerType.get_signless(1), barrier_ptr(op, rw),
                                                   rw.operand(op.opview.token), **_cta(rw)))


class MBarrierTryWaitParityPattern(NvgpuPattern):
    """``nvgpu.mbarrier.try_wait.parity %g[%i], %phase, %ticks`` -> ``nvvm.mbarrier.try_wait.parity``.

    The i1 phase parity is zero-extended to the i32 the intrinsic takes; ticks is the
    suspend-time hint (i32). The NVVM op loops until the phase completes.
    """

    root = "nvgpu.mbarrier.try_wait.parity"
    family = "mbarrier.try_wait"

    def lower(self, op, rw):
        with rw.ip:
            p = barrier_ptr(op, rw)
            view = op.opview
            parity = llvm.zext(i32(), rw.operand(view.phaseParity))
            dialects.nvvm.mbarrier_try_wait_parity(p, parity, to_int(view.ticks, 32, rw))
        rw.erase(op)


class MBarrierGetPattern(NvgpuPattern):
    """``nvgpu.mbarrier.get %g[%i]`` -> the barrier's shared address as a 32-bit integer (``ptrtoint``)."""

    root = "nvgpu.mbarrier.get"
    family = "mbarrier"

    def lower(self, op, rw):
        with rw.ip:
            p = barrier_ptr(op, rw)
            rw.replace(op, llvm.ptrtoint(rw.convert_type(op.results[0].type), p))


def patterns():
    return [MBarrierCreatePattern(), MBarrierInitPattern(), MBarrierArrivePattern(),
            MBarrierArriveNoCompletePattern(), MBarrierArriveExpectTxPattern(), MBarrierTestWaitPattern(),
            MBarrierTryWaitParityPattern(), MBarrierGetPattern()]
