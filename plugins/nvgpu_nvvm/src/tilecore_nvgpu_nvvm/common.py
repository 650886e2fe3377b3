"""What every nvgpu pattern shares: the SM-floor check, memref addressing, small LLVM builders."""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import constant, extractvalue

from tilecore.conversion import Pattern
from tilecore.mlir import dialects, ir
from tilecore.typeconv import memory_space_to_addrspace

from . import floors

llvm = dialects.llvm
DYNAMIC = -2147483648  # rawConstantIndices marker: "take the next dynamic index"
NOWRAP = 0  # #llvm.overflow<none>


class NvgpuPattern(Pattern):
    """A pattern for one nvgpu root op whose family has an SM floor (``floors.FLOORS[family]``).

    Subclasses implement ``lower(op, rw)``; the floor is checked first, so an op
    below its floor fails with op, target and required SM before any IR changes.
    """

    family: str = ""

    def rewrite(self, op, rw):
        floors.require(self.family, op, rw.target)
        self.lower(op, rw)

    def lower(self, op, rw):  # pragma: no cover - abstract
        raise NotImplementedError(self.name)


def i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def ptr(addrspace: int = 0) -> ir.Type:
    return ir.Type.parse(f"!llvm.ptr<{addrspace}>" if addrspace else "!llvm.ptr")


def create(name: str, operands=(), results=(), attributes=None, regions: int = 0):
    """``ir.Operation.create`` at the current insertion point (generic form)."""
    return ir.Operation.create(name, results=list(results), operands=list(operands), attributes=attributes or {},
                               regions=regions)


def predicate(view, rw):
    """The op's optional ``predicate`` operand, converted, or None."""
    p = getattr(view, "predicate", None)
    return None if p is None else rw.operand(p)


def to_int(value, width: int, rw) -> ir.Value:
    """``value`` (index / iN, already converted) as an ``iwidth`` LLVM integer."""
    value = rw.operand(value)
    have = ir.IntegerType(value.type).width
    if have == width:
        return value
    t = ir.IntegerType.get_signless(width)
    return llvm.trunc(t, value, overflow_flags=NOWRAP) if have > width else llvm.zext(t, value)


def bit_width(t: ir.Type) -> int:
    """Width in bits of an integer or float element type."""
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return t.width
    raise TypeError(f"not a scalar integer / float type: {t}")


def raise_workgroup_alignment(memref_value, align: int) -> bool:
    """Make a ``gpu.func`` workgroup buffer at least ``align``-byte aligned (``llvm.align``).

    TMA writes need a 128-byte aligned shared destination and the 128B swizzle a 1024-byte
    aligned tile; a misaligned one faults at run time. Returns False when ``memref_value`` is
    not a workgroup attribution (its alignment is then the producer's business).
    """
    if not isinstance(memref_value, ir.BlockArgument):
        return False
    block = memref_value.owner
    fn = block.owner
    fn = fn.operation if isinstance(fn, ir.OpView) else fn  # (an OpView's .name is its symbol)
    if fn is None or fn.name != "gpu.func" or block != fn.regions[0].blocks[0]:
        return False
    inputs = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
    count = ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value if "workgroup_attributions" in \
        fn.attributes else 0
    index = memref_value.arg_number - inputs
    if not 0 <= index < count:
        return False
    old = list(ir.ArrayAttr(fn.attributes["workgroup_attrib_attrs"])) if "workgroup_attrib_attrs" in \
        fn.attributes else [ir.DictAttr.get({})] * count
    entries = {na.name: na.attr for na in ir.DictAttr(old[index])}
    have = ir.IntegerAttr(entries["llvm.align"]).value if "llvm.align" in entries else 0
    if have < align:
        entries["llvm.align"] = ir.IntegerAttr.get(i64(), align)
        old[index] = ir.DictAttr.get(entries)
        fn.attributes["workgroup_attrib_attrs"] = ir.ArrayAttr.get(old)
    return True


def memref_strides(memref_type: ir.MemRefType):
    """Static strides and offset of a memref type, or (None, None) when any is dynamic."""
    strides, offset = memref_type.get_strides_and_offset()
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    if offset == dyn or any(s == dyn for s in strides):
        return None, None
    return strides, offset


def constant_index(value) -> int | None:
    """The value of an ``arith.constant`` / ``llvm.mlir.constant`` integer or index, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    name = owner.name
    if name in ("arith.constant", "llvm.mlir.constant"):
        attr = owner.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return attr.value
    return None


def _memref_layout(rw, mt: ir.MemRefType):
    """(pointer type, static strides or None, static offset) of a memref type, once per conversion."""
    return rw.memoized(("memref-layout", mt),
                       lambda: (ptr(memory_space_to_addrspace(mt.memory_space)), *memref_strides(mt)))


def gep(rw, ptr_type: ir.Type, base: ir.Value, index: ir.Value, elem_type: ir.Type) -> ir.Value:
    """``llvm.getelementptr base[index] : elem_type`` (one dynamic index) at the current insertion point."""
    attrs = rw.memoized(("gep", elem_type), lambda: {
        "elem_type": ir.TypeAttr.get(elem_type), "noWrapFlags": ir.IntegerAttr.get(i32(), 0),
        "rawConstantIndices": ir.DenseI32ArrayAttr.get([DYNAMIC])})
    return ir.Operation.create("llvm.getelementptr", results=[ptr_type], operands=[base, index],
                               attributes=attrs).result


def memref_element_ptr(rw, memref_value, indices) -> ir.Value:
    """The address of ``memref[indices]``: aligned pointer + offset + sum(index * stride).

    With static strides, constant indices fold into one constant offset.
    """
    mt = ir.MemRefType(memref_value.type)
    desc = rw.operand(memref_value)
    ptr_type, strides, offset = _memref_layout(rw, mt)
    base = extractvalue(rw, desc, (1,), ptr_type)
    terms = []
    static = offset or 0
    for d, idx in enumerate(indices):
        known = constant_index(idx) if strides is not None else None
        if known is not None:
            static += known * strides[d]
            continue
        iv = to_int(idx, 64, rw)
        if strides is None:
            stride = extractvalue(rw, desc, (4, d), i64())
        elif strides[d] == 1:
            terms.append(iv)
            continue
        else:
            stride = constant(i64(), strides[d])
        terms.append(llvm.mul(iv, stride, overflow_flags=NOWRAP))
    if strides is None:
        terms.append(extractvalue(rw, desc, (2,), i64()))
    elif static:
        terms.append(constant(i64(), static))
    if not terms:
        return base
    linear = terms[0]
    for t in terms[1:]:
        linear = llvm.add(linear, t, overflow_flags=NOWRAP)
    return gep(rw, ptr_type, base, linear, mt.element_type)
