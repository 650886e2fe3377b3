"""``nvgpu.warpgroup.*`` (Hopper WGMMA, sm_90a only) -> ``nvvm.wgmma.*`` plus LLVM value packing.

GMMA shared-memory descriptor (PTX ISA, "Matrix Descriptor Format" of wgmma):

| bits  | field                                  | source                                   |
|-------|----------------------------------------|------------------------------------------|
| 0-13  | start address >> 4                     | the memref's shared address (run time)   |
| 16-29 | leading dimension byte offset >> 4      | ``leading_byte_offset`` (default 16)     |
| 32-45 | stride dimension byte offset >> 4       | ``matrix_stride`` (default 8 x swizzle)  |
| 49-51 | matrix base offset                      | ``swizzle_base`` (default 0)             |
| 62-63 | swizzle mode: 0 none, 1 128B, 2 64B, 3 32B | ``swizzle_mode`` or the tensor map's swizzle |

Everything but the address folds to one constant at compile time. Spec note 3 shows
``ptrtoint`` + ``or``; the ISA stores the address shifted right by 4 in bits 0-13, so we
emit ``ptrtoint``, ``lshr 4``, ``or`` (a shared address is below 2^18, so no mask is needed).
"""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import constant, extractvalue

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from .common import (
    NvgpuPattern,
    bit_width,
    i32,
    i64,
    memref_element_ptr,
    memref_strides,
    raise_workgroup_alignment,
)
from .tma import tensormap_fields
from .types import accumulator_struct, fragmented_vector, lower_type

llvm = dialects.llvm

SWIZZLE_MODE = {"none": 0, "swizzle_128b": 1, "swizzle_64b": 2, "swizzle_32b": 3,
                "0": 0, "128": 1, "64": 2, "32": 3}
SWIZZLE_BYTES = {"none": 16, "swizzle_32b": 32, "swizzle_64b": 64, "swizzle_128b": 128}
# K of one wgmma instruction by element type (m64nNkK).
WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "f32": 8, "f8E4M3FN": 32, "f8E5M2": 32, "i8": 32}
WGMMA_TYPE = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2", "i8": "s8"}
WGMMA_ACC_TYPE = {"f16": "f16", "f32": "f32", "i32": "s32"}


def descriptor_bits(leading_byte_offset: int, matrix_stride: int, swizzle_base: int, swizzle_mode: int) -> int:
    """The constant part of a GMMA descriptor (every field but the start address)."""
    return (((leading_byte_offset >> 4) & 0x3FFF) << 16) | (((matrix_stride >> 4) & 0x3FFF) << 32) \
        | ((swizzle_base & 0x7) << 49) | ((swizzle_mode & 0x3) << 62)


def _int_attr(op, name, default):
    return ir.IntegerAttr(op.attributes[name]).value if name in op.attributes else default


class WarpgroupGenerateDescriptorPattern(NvgpuPattern):
    """``nvgpu.warpgroup.generate.descriptor %smem, %tmap`` -> constant | (ptrtoint(%smem) >> 4)."""

    root = "nvgpu.warpgroup.generate.descriptor"
    family = "wgmma"

    def lower(self, op, rw):
        view = op.opview
        swizzle = tensormap_fields(view.tensorMap.type).get("swizzle", "none")
        if "swizzle_mode" in op.attributes:
            text = str(op.attributes["swizzle_mode"])
            key = next((k for k in ("128", "64", "32") if k in text), "0")
            mode = SWIZZLE_MODE[key]
        else:
            mode = SWIZZLE_MODE[swizzle]
        bits = descriptor_bits(_int_attr(op, "leading_byte_offset", 16),
                               _int_attr(op, "matrix_stride", 8 * SWIZZLE_BYTES[swizzle]),
                               _int_attr(op, "swizzle_base", 0), mode)
        if bits >= 1 << 63:
            bits -= 1 << 64  # as a signed i64 constant
        raise_workgroup_alignment(view.tensor, 1024 if mode else 128)  # a swizzle atom / a core matrix row
        with rw.ip:
            folded = constant(i64(), bits)
            base = memref_element_ptr(rw, view.tensor, [])
            addr = llvm.lshr(llvm.ptrtoint(i64(), base), constant(i64(), 4))
            rw.replace(op, llvm.or_(folded, addr))


def _shape(t: ir.Type) -> tuple[ir.MemRefType, str]:
    """The tensor memref of a ``!nvgpu.warpgroup.descriptor`` type and its element type name."""
    text = str(t)
    mt = ir.MemRefType(ir.Type.parse(text.split("tensor = ", 1)[1][:-1]))
    return mt, str(mt.element_type)


class WarpgroupMmaPattern(NvgpuPattern):
    """``nvgpu.warpgroup.mma`` -> ``wgmma.fence``, ``wgmma.mma_async`` per (64-row tile, K step), commit, wait.

    For one m64nNkK instruction that is exactly fence, mma_async, commit.group,
    wait.group 0 (``waitGroup`` overrides the 0). Larger tiles issue one mma_async
    per 64-row tile and K step, advancing the descriptors' start address by the
    byte offset of each sub-tile (>> 4).
    """

    root = "nvgpu.warpgroup.mma"
    family = "wgmma"

    def lower(self, op, rw):
        view = op.opview
        a_mem, a_elem = _shape(view.descriptorA.type)
        b_mem, b_elem = _shape(view.descriptorB.type)
        acc_vec = fragmented_vector(view.matrixC.type)
        m, n = acc_vec.shape
        d_elem = str(acc_vec.element_type)
        if a_elem not in WGMMA_K or b_elem not in WGMMA_TYPE or d_elem not in WGMMA_ACC_TYPE:
            raise LoweringError(f"'{op.name}': no WGMMA for {a_elem} x {b_elem} -> {d_elem}", op)
        k_inst = WGMMA_K[a_elem]
        k = a_mem.shape[1]
        if m % 64 or k % k_inst:
            raise LoweringError(f"'{op.name}': a {m}x{n}x{k} tile is not a multiple of m64n{n}k{k_inst}", op)
        trans_a = "transposeA" in op.attributes
        trans_b = "transposeB" in op.attributes
        a_strides, _ = memref_strides(a_mem)
        b_strides, _ = memref_strides(b_mem)
        ebytes = max(1, bit_width(a_mem.element_type) // 8)
        wait = _int_attr(op, "waitGroup", 0)
        acc_type = accumulator_struct(acc_vec)
        tile_type = ir.Type.parse("!llvm.struct<(" + ", ".join([d_elem] * (n // 2)) + ")>")
        attrs = dict(
            shape=ir.Attribute.parse(f"#nvvm.shape<m = 64, n = {n}, k = {k_inst}>"),
            type_a=ir.Attribute.parse(f"#nvvm.wgmma_type<{WGMMA_TYPE[a_elem]}>"),
            type_b=ir.Attribute.parse(f"#nvvm.wgmma_type<{WGMMA_TYPE[b_elem]}>"),
            type_d=ir.Attribute.parse(f"#nvvm.wgmma_type<{WGMMA_ACC_TYPE[d_elem]}>"),
            scale_d=ir.Attribute.parse("#nvvm.wgmma_scale_out<one>"),
            scale_a=ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
            scale_b=ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
            layout_a=ir.Attribute.parse(f"#nvvm.mma_layout<{'col' if trans_a else 'row'}>"),
            layout_b=ir.Attribute.parse(f"#nvvm.mma_layout<{'row' if trans_b else 'col'}>"))
        with rw.ip:
            desc_a = rw.operand(view.descriptorA)
            desc_b = rw.operand(view.descriptorB)
            acc = rw.operand(view.matrixC)
            dialects.nvvm.wgmma_fence_aligned()
            out = llvm.mlir_poison(acc_type)
            for i in range(m // 64):
                tile = extractvalue(rw, acc, (i,), tile_type)
                for j in range(k // k_inst):
                    a_off = (i * 64 * a_strides[0] + j * k_inst * a_strides[1]) * ebytes
                    if trans_a:
                        a_off = (i * 64 * a_strides[1] + j * k_inst * a_strides[0]) * ebytes
                    b_off = (j * k_inst * (b_strides[1] if trans_b else b_strides[0])) * ebytes
                    da = llvm.add(desc_a, constant(i64(), a_off >> 4), overflow_flags=0) if a_off else desc_a
                    db = llvm.add(desc_b, constant(i64(), b_off >> 4), overflow_flags=0) if b_off else desc_b
                    tile = dialects.nvvm.wgmma_mma_async(tile_type, tile, da, db, **attrs)
                out = llvm.insertvalue(out, tile, [i])
            dialects.nvvm.wgmma_commit_group_sync_aligned()
            dialects.nvvm.wgmma_wait_group_sync_aligned(wait)
        rw.replace(op, out)


class WarpgroupMmaStorePattern(NvgpuPattern):
    """``nvgpu.warpgroup.mma.store %acc, %memref`` -> one ``llvm.store`` per accumulator register.

    Fragment layout of m64nN (per 64-row tile): thread t of the warpgroup, warp w = t / 32,
    lane l = t % 32 holds, for each 8-column group g, (row, col) = (16w + l/4 [+8], 8g + 2(l%4) [+1]).
    """

    root = "nvgpu.warpgroup.mma.store"
    family = "wgmma"

    def lower(self, op, rw):
        view = op.opview
        acc_vec = fragmented_vector(view.matrixD.type)
        m, n = acc_vec.shape
        elem = acc_vec.element_type
        tile_type = ir.Type.parse("!llvm.struct<(" + ", ".join([str(elem)] * (n // 2)) + ")>")
        with rw.ip:
            acc = rw.operand(view.matrixD)
            tid = dialects.nvvm.read_ptx_sreg_tid_x(i32())
            t = llvm.urem(tid, constant(i32(), 128))
            warp = llvm.udiv(t, constant(i32(), 32))
            lane = llvm.urem(t, constant(i32(), 32))
            row0 = llvm.add(llvm.mul(warp, constant(i32(), 16), overflow_flags=0),
                            llvm.udiv(lane, constant(i32(), 4)), overflow_flags=0)
            col0 = llvm.mul(llvm.urem(lane, constant(i32(), 4)), constant(i32(), 2), overflow_flags=0)
            for i in range(m // 64):
                tile = extractvalue(rw, acc, (i,), tile_type)
                for g in range(n // 8):
                    for r in range(4):
                        row = llvm.add(row0, constant(i32(), 64 * i + 8 * (r // 2)), overflow_flags=0)
                        col = llvm.add(col0, constant(i32(), 8 * g + r % 2), overflow_flags=0)
                        value = extractvalue(rw, tile, (4 * g + r,), elem)
                        llvm.store(value, memref_element_ptr(rw, view.dstMemref, [row, col]))
        rw.erase(op)


class WarpgroupMmaInitAccumulatorPattern(NvgpuPattern):
    """``nvgpu.warpgroup.mma.init.accumulator`` -> ``llvm.mlir.zero`` of the accumulator struct."""

    root = "nvgpu.warpgroup.mma.init.accumulator"
    family = "wgmma"

    def lower(self, op, rw):
        try:
            acc_type = lower_type(op.results[0].type)
        except ValueError as e:
            raise LoweringError(f"'{op.name}': {e}", op) from None
        with rw.ip:
            rw.replace(op, llvm.mlir_zero(acc_type))


def patterns():
    return [WarpgroupGenerateDescriptorPattern(), WarpgroupMmaPattern(), WarpgroupMmaStorePattern(),
            WarpgroupMmaInitAccumulatorPattern()]
