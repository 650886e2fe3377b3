"""SM80 asynchronous copies: ``nvgpu.device_async_*`` -> ``nvvm.cp.async.*`` with i32 tokens."""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import constant

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir
from tilecore.typeconv import ADDRSPACE_GLOBAL, memory_space_to_addrspace

from .common import NvgpuPattern, bit_width, i32, memref_element_ptr, ptr, to_int

llvm = dialects.llvm


class DeviceAsyncCopyPattern(NvgpuPattern):
    """``nvgpu.device_async_copy %src[..], %dst[..], N`` -> ``nvvm.cp.async.shared.global %dst, %src, bytes``.

    ``bypassL1`` selects the ``.cg`` form (16-byte copies only), else ``.ca``. With
    ``srcElements`` the copy reads that many elements and zero-fills the rest
    (cp-size operand). The token is the i32 constant 0: cp.async tracks groups, not copies.
    """

    root = "nvgpu.device_async_copy"
    family = "cp.async"

    def lower(self, op, rw):
        view = op.opview
        dst_type = ir.MemRefType(view.dst.type)
        elem_bits = bit_width(dst_type.element_type)
        count = ir.IntegerAttr(view.dstElements).value
        size = elem_bits * count // 8
        if size not in (4, 8, 16):
            raise LoweringError(f"'{op.name}' copies {size} bytes; cp.async copies 4, 8 or 16", op)
        bypass = "bypassL1" in op.attributes
        if bypass and size != 16:
            raise LoweringError(f"'{op.name}' with bypassL1 copies {size} bytes; cp.async.cg needs 16", op)
        with rw.ip:
            dst = memref_element_ptr(rw, view.dst, list(view.dstIndices))
            src = memref_element_ptr(rw, view.src, list(view.srcIndices))
            if memory_space_to_addrspace(ir.MemRefType(view.src.type).memory_space) != ADDRSPACE_GLOBAL:
                src = llvm.addrspacecast(ptr(ADDRSPACE_GLOBAL), src)
            cp_size = None
            if view.srcElements is not None:
                # bytes actually read = srcElements * element bytes (the rest is zero-filled)
                n = to_int(view.srcElements, 32, rw)
                cp_size = llvm.lshr(llvm.mul(n, constant(i32(), elem_bits), overflow_flags=0),
                                    constant(i32(), 3))
            modifier = ir.Attribute.parse("#nvvm<load_cache_modifier cg>" if bypass
                                          else "#nvvm<load_cache_modifier ca>")
            dialects.nvvm.cp_async_shared_global(dst, src, ir.IntegerAttr.get(i32(), size), modifier, cp_size=cp_size)
            token = constant(i32(), 0)
        rw.replace(op, token)


class DeviceAsyncCreateGroupPattern(NvgpuPattern):
    """``nvgpu.device_async_create_group %t...`` -> ``nvvm.cp.async.commit.group``; the tokens are dropped."""

    root = "nvgpu.device_async_create_group"
    family = "cp.async"

    def lower(self, op, rw):
        with rw.ip:
            dialects.nvvm.cp_async_commit_group()
            token = constant(i32(), 0)
        rw.replace(op, token)


class DeviceAsyncWaitPattern(NvgpuPattern):
    """``nvgpu.device_async_wait %t {numGroups = N}`` -> ``nvvm.cp.async.wait.group N`` (0 when absent)."""

    root = "nvgpu.device_async_wait"
    family = "cp.async"

    def lower(self, op, rw):
        n = ir.IntegerAttr(op.attributes["numGroups"]).value if "numGroups" in op.attributes else 0
        with rw.ip:
            dialects.nvvm.cp_async_wait_group(n)
        rw.erase(op)


def patterns():
    return [DeviceAsyncCopyPattern(), DeviceAsyncCreateGroupPattern(), DeviceAsyncWaitPattern()]
