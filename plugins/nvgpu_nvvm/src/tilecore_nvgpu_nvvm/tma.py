"""``nvgpu.tma.*`` -> ``nvvm.cp.async.bulk.tensor.*``, tensor-map prefetch / fence, descriptor build and rebind.

Operand slots follow spec note 3. Load (rank N): dst (slot 0), tensor map (1),
coordinates (2 .. N+1), barrier (N+2), multicast mask (N+3, optional), L2 cache
hint (N+4, optional). Store: tensor map (0), coordinates (1 .. N), src (N+1), L2
cache hint (N+2, optional). An absent optional operand leaves its slot empty (no
zero constant); a present one also sets its enable attribute (``multicastEnable``,
``cacheHintEnable``) on the NVVM op. The L2 cache hint is the ``l2CacheHint``
attribute of the nvgpu op (an i64), the multicast mask its operand or its
``multicastMask`` attribute (an i16).
"""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import constant

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from .common import (
    NvgpuPattern,
    bit_width,
    i32,
    i64,
    memref_element_ptr,
    predicate,
    ptr,
    raise_workgroup_alignment,
    to_int,
)
from .mbarrier import barrier_ptr

llvm = dialects.llvm
SHARED_CLUSTER = 7  # NVPTX address space of .shared::cluster (the load destination in this MLIR snapshot)


def _optional_attr_value(op, name: str, width: int):
    """An optional i16 / i64 operand given as an attribute, materialised as an LLVM constant."""
    if name not in op.attributes:
        return None
    return constant(ir.IntegerType.get_signless(width), ir.IntegerAttr(op.attributes[name]).value)


def _coordinates(view, rw) -> list:
    coords = [to_int(c, 32, rw) for c in view.coordinates]
    if not 1 <= len(coords) <= 5:
        raise LoweringError(f"'{view.operation.name}' has {len(coords)} coordinates; TMA supports ranks 1 to 5",
                            view.operation)
    return coords


def tma_alignment(tensor_map_type) -> int:
    """Bytes of alignment a TMA shared tile needs: 128, or 1024 under the 128B swizzle (a swizzle atom)."""
    return 1024 if "swizzle_128b" in str(tensor_map_type) else 128


def _mark(new_op, **flags) -> None:
    for name, present in flags.items():
        if present:
            new_op.operation.attributes[name] = ir.UnitAttr.get()


class TmaAsyncLoadPattern(NvgpuPattern):
    """``nvgpu.tma.async.load`` -> ``nvvm.cp.async.bulk.tensor.shared.cluster.global`` (mode tile)."""

    root = "nvgpu.tma.async.load"
    family = "tma"

    def lower(self, op, rw):
        view = op.opview
        with rw.ip:
            coords = _coordinates(view, rw)
            raise_workgroup_alignment(view.dst, tma_alignment(view.tensorMapDescriptor.type))
            dst = memref_element_ptr(rw, view.dst, [])
            dst = llvm.addrspacecast(ptr(SHARED_CLUSTER), dst)
            desc = rw.operand(view.tensorMapDescriptor)
            bar = barrier_ptr(op, rw)
            mask = rw.operand(view.multicastMask) if view.multicastMask is not None else \
                _optional_attr_value(op, "multicastMask", 16)
            hint = _optional_attr_value(op, "l2CacheHint", 64)
            pred = predicate(view, rw)
            new = dialects.nvvm.cp_async_bulk_tensor_shared_cluster_global(
                dst, desc, coords, bar, [], multicast_mask=mask, l2_cache_hint=hint,
                mode=ir.Attribute.parse("#nvvm.tma_load_mode<tile>"), predicate=pred)
            _mark(new, multicastEnable=mask is not None, cacheHintEnable=hint is not None)
        rw.erase(op)


class TmaAsyncStorePattern(NvgpuPattern):
    """``nvgpu.tma.async.store`` -> ``nvvm.cp.async.bulk.tensor.global.shared.cta`` (no barrier)."""

    root = "nvgpu.tma.async.store"
    family = "tma"

    def lower(self, op, rw):
        view = op.opview
        with rw.ip:
            coords = _coordinates(view, rw)
            raise_workgroup_alignment(view.src, tma_alignment(view.tensorMapDescriptor.type))
            src = memref_element_ptr(rw, view.src, [])
            desc = rw.operand(view.tensorMapDescriptor)
            hint = _optional_attr_value(op, "l2CacheHint", 64)
            pred = predicate(view, rw)
            new = dialects.nvvm.cp_async_bulk_tensor_global_shared_cta(
                desc, src, coords, l2_cache_hint=hint, mode=ir.Attribute.parse("#nvvm.tma_store_mode<tile>"),
                predicate=pred)
            _mark(new, cacheHintEnable=hint is not None)
        rw.erase(op)


class TmaPrefetchDescriptorPattern(NvgpuPattern):
    """``nvgpu.tma.prefetch.descriptor %d`` -> ``nvvm.prefetch %d {tensormap}`` (prefetch.tensormap)."""

    root = "nvgpu.tma.prefetch.descriptor"
    family = "tma"

    def lower(self, op, rw):
        view = op.opview
        with rw.ip:
            pred = predicate(view, rw)
            dialects.nvvm.prefetch(rw.operand(view.tensorMapDescriptor), tensormap=True, predicate=pred)
        rw.erase(op)


class TmaFenceDescriptorPattern(NvgpuPattern):
    """``nvgpu.tma.fence.descriptor %d`` -> ``nvvm.fence.proxy.acquire`` generic -> tensormap, sys scope, 128 bytes."""

    root = "nvgpu.tma.fence.descriptor"
    family = "tma"

    def lower(self, op, rw):
        with rw.ip:
            dialects.nvvm.fence_proxy_acquire(ir.Attribute.parse("#nvvm.mem_scope<sys>"),
                                     rw.operand(op.opview.tensorMapDescriptor), constant(i32(), 128),
                                     from_proxy=ir.Attribute.parse("#nvvm.proxy_kind<generic>"),
                                     to_proxy=ir.Attribute.parse("#nvvm.proxy_kind<tensormap>"))
        rw.erase(op)


# --------------------------------------------------------------------------- descriptor object

# Field codes the CUDA-side encoder reads (cuTensorMapEncodeTiled's enums).
DATA_TYPE_CODES = {"ui8": 0, "i8": 0, "ui16": 1, "i16": 1, "ui32": 2, "i32": 3, "ui64": 4, "i64": 5,
                   "f16": 6, "f32": 7, "f64": 8, "bf16": 9}
SWIZZLE_CODES = {"none": 0, "swizzle_32b": 1, "swizzle_64b": 2, "swizzle_128b": 3}
L2PROMO_CODES = {"none": 0, "l2promo_64b": 1, "l2promo_128b": 2, "l2promo_256b": 3}
OOB_CODES = {"zero": 0, "nan": 1}
INTERLEAVE_CODES = {"none": 0, "interleave_16b": 1, "interleave_32b": 2}

# The 128-byte object: (field, byte offset, LLVM type, count).
DESCRIPTOR_LAYOUT = [
    ("global_address", 0, "ptr", 1),
    ("rank", 8, "i32", 1),
    ("data_type", 12, "i32", 1),
    ("interleave", 16, "i32", 1),
    ("swizzle", 20, "i32", 1),
    ("l2_promotion", 24, "i32", 1),
    ("oob_fill", 28, "i32", 1),
    ("global_dims", 32, "i64", 5),
    ("global_strides_bytes", 72, "i64", 4),  # dims 1 .. rank-1; dim 0 is contiguous
    ("box_dims", 104, "i32", 5),
]
DESCRIPTOR_BYTES = 128
FIELD_OFFSET = {f: o for f, o, _, _ in DESCRIPTOR_LAYOUT}
FIELD_BYTES = {f: 8 if t in ("ptr", "i64") else 4 for f, _, t, _ in DESCRIPTOR_LAYOUT}


def tensormap_fields(t: ir.Type) -> dict:
    """The static fields of ``!nvgpu.tensormap.descriptor<tensor = memref<...>, swizzle = ..., ...>``."""
    text = str(t)
    body = text[text.index("<") + 1:-1]
    tensor_text = body.split("tensor = ", 1)[1].split(">", 1)[0] + ">"
    fields = {"tensor": ir.MemRefType(ir.Type.parse(tensor_text))}
    for part in body.split(">", 1)[1].split(","):
        if "=" in part:
            k, v = (s.strip() for s in part.split("=", 1))
            fields[k] = v
    return fields


class TmaCreateDescriptorPattern(NvgpuPattern):
    """``nvgpu.tma.create.descriptor %t box[...]`` -> a 128-byte stack object filled per ``DESCRIPTOR_LAYOUT``.

    The global address, sizes and strides come from the unranked memref ``%t``; element
    type, swizzle, L2 promotion, OOB fill and interleave from the tensor-map type.
    The result is the object's address; copies never rebuild it from the fields.
    """

    root = "nvgpu.tma.create.descriptor"
    family = "tma"

    def lower(self, op, rw):
        view = op.opview
        fields = tensormap_fields(op.results[0].type)
        tensor = fields["tensor"]
        rank = tensor.rank
        elem = str(tensor.element_type)
        if elem not in DATA_TYPE_CODES:
            raise LoweringError(f"'{op.name}': element type {elem} has no tensor-map data type", op)
        i8 = ir.IntegerType.get_signless(8)
        with rw.ip:
            obj = llvm.alloca(ptr(), constant(i32(), 1), ir.TypeAttr.get(ir.Type.parse(
                f"!llvm.array<{DESCRIPTOR_BYTES} x i8>")), alignment=64)

            def put(name, index, value):
                offset, width = FIELD_OFFSET[name], FIELD_BYTES[name]
                at = offset + index * width
                llvm.store(value, llvm.getelementptr(ptr(), obj, [], [at], i8, 0) if at else obj)

            # Unranked memref: {i64 rank, ptr to the ranked descriptor in memory}.
            unranked = rw.cast(view.tensor, ir.Type.parse("!llvm.struct<(i64, ptr)>"))
            ranked = llvm.extractvalue(ptr(), unranked, [1])

            def ranked_field(byte_offset, ty):
                p = llvm.getelementptr(ptr(), ranked, [], [byte_offset], i8, 0)
                return llvm.load(ty, p)

            put("global_address", 0, ranked_field(8, ptr()))
            for name, code in (("rank", rank), ("data_type", DATA_TYPE_CODES[elem]),
                               ("interleave", INTERLEAVE_CODES[fields["interleave"]]),
                               ("swizzle", SWIZZLE_CODES[fields["swizzle"]]),
                               ("l2_promotion", L2PROMO_CODES[fields["l2promo"]]),
                               ("oob_fill", OOB_CODES[fields["oob"]])):
                put(name, 0, constant(i32(), code))
            elem_bytes = bit_width(tensor.element_type) // 8
            # The ranked descriptor lists sizes / strides outermost first; the tensor map innermost first.
            for d in range(rank):
                src_dim = rank - 1 - d
                put("global_dims", d, ranked_field(24 + 8 * src_dim, i64()))
                if d > 0:
                    stride = ranked_field(24 + 8 * rank + 8 * src_dim, i64())
                    put("global_strides_bytes", d - 1, llvm.mul(stride, constant(i64(), elem_bytes),
                                                                overflow_flags=0))
            boxes = list(view.boxDimensions)
            for d, b in enumerate(reversed(boxes)):
                put("box_dims", d, to_int(b, 32, rw))
        rw.replace(op, obj)


# Device-side rebind: (field, PTX template, constraints). ``{ord}`` is the dimension, an immediate.
REBIND_TEMPLATES = [
    ("global_address", "tensormap.replace.tile.global_address.global.b1024.b64 [$0], $1;", "l,l"),
    ("global_dim", "tensormap.replace.tile.global_dim.global.b1024.b32 [$0], {ord}, $1;", "l,r"),
    ("global_stride", "tensormap.replace.tile.global_stride.global.b1024.b64 [$0], {ord}, $1;", "l,l"),
]


class TmaRebindDescriptorPattern(NvgpuPattern):
    """``nvgpu_ext.tma_rebind_descriptor %tmap, %addr, dims..., strides...`` -> the fixed rebind sequence.

    Global address once, global_dim once per rank (innermost first), global_stride
    once per non-leading rank (byte strides of dims 1 .. rank-1), as inline
    ``tensormap.replace.tile.*`` (no NVVM op for them in this snapshot); then the
    ``fence.proxy.tensormap::generic`` release (gpu scope) that publishes the generic-proxy
    writes and the acquire (gpu scope, 128 bytes) that orders the tensor-map proxy's
    later reads after them. (Spec note 3 says the sequence is "wrapped in" the pair; in
    the PTX memory model both fences follow the writes: release by the writer, acquire
    before use. A .cta scope would not cover a cluster, so the scope is .gpu.)
    """

    root = "nvgpu_ext.tma_rebind_descriptor"
    family = "tensormap.replace"

    def lower(self, op, rw):
        tmap, addr, *fields = op.operands
        if len(fields) % 2 != 1 or not 1 <= (len(fields) + 1) // 2 <= 5:
            raise LoweringError(f"'{op.name}' takes rank dims and rank-1 strides for a rank of 1 to 5; "
                                f"got {len(fields)} fields", op)
        rank = (len(fields) + 1) // 2
        dims, strides = fields[:rank], fields[rank:]
        gpu = ir.Attribute.parse("#nvvm.mem_scope<gpu>")
        generic = ir.Attribute.parse("#nvvm.proxy_kind<generic>")
        tensormap = ir.Attribute.parse("#nvvm.proxy_kind<tensormap>")
        void = ir.Type.parse("!llvm.void")
        templates = {name: (t, c) for name, t, c in REBIND_TEMPLATES}
        with rw.ip:
            tmap_v, addr_v = rw.operand(tmap), rw.operand(addr)

            def emit(field, value, ord_=None):
                t, c = templates[field]
                llvm.inline_asm(void, [tmap_v, value], t.format(ord=ord_) if ord_ is not None else t, c,
                                has_side_effects=True, asm_dialect=0)

            emit("global_address", addr_v)
            for d, v in enumerate(dims):
                emit("global_dim", llvm.trunc(i32(), rw.operand(v), overflow_flags=0), d)
            for d, v in enumerate(strides):
                emit("global_stride", rw.operand(v), d)
            dialects.nvvm.fence_proxy_release(gpu, from_proxy=generic, to_proxy=tensormap)
            generic_ptr = tmap_v if tmap_v.type == ptr() else llvm.addrspacecast(ptr(), tmap_v)
            dialects.nvvm.fence_proxy_acquire(gpu, generic_ptr, constant(i32(), 128), from_proxy=generic, to_proxy=tensormap)
        rw.erase(op)


def patterns():
    return [TmaAsyncLoadPattern(), TmaAsyncStorePattern(), TmaCreateDescriptorPattern(),
            TmaPrefetchDescriptorPattern(), TmaFenceDescriptorPattern(), TmaRebindDescriptorPattern()]
