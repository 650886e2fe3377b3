"""TensorFloat-32 (``tf32``) in stage 4: f32 registers holding tf32 values, ``cvt.rna.tf32.f32``.

tf32 is f32 with the low 13 mantissa bits dropped (1 sign, 8 exponent, 10 mantissa bits). LLVM has
no such type, so a register of a ``tf32`` tile holds the value as ``f32`` with those 13 bits zero
(:func:`storage`): every value is exact, shared-memory exchanges and shape ops move it unchanged,
and ``mma.sync`` ``.tf32`` operands are these very bits (:mod:`.dot`). cuTile converts into and out
of tf32 with ``ftof`` (``arith.truncf`` / ``arith.extf`` here, :func:`convert`):

- f32 -> tf32: ``cvt.rna.tf32.f32`` (``nvvm.convert.float.to.tf32``, sm_80+): round to nearest, ties
  away from zero; the 13 low bits of the result are then cleared, so the register is an exact f32;
  f64 sources are rounded to f32 first; f16 / bf16 sources widen exactly (tf32 holds them all);
- tf32 -> wider / narrower floats: the f32 value, extended or rounded like any f32.

Other arithmetic on tf32 tiles is rejected (cuda_tile converts first), as for 8-bit floats.
"""

from __future__ import annotations

from tilecore.mlir import dialects, ir

from ..stage1_cuda_tile_to_tileaa.common import element_type

TF32 = "tf32"
LOW_BITS_CLEARED = -(1 << 13)  # 0xFFFFE000 as i32: keeps sign, exponent and the 10 tf32 mantissa bits


def is_tf32(t) -> bool:
    """Whether ``t`` (a tensor type or an element type) has tf32 elements."""
    return str(element_type(t)) == TF32


def storage(t):
    """The register type of element type ``t``: f32 for tf32, ``t`` otherwise."""
    return ir.F32Type.get() if str(t) == TF32 else t


def round_to_tf32(cg, v):
    """f32 ``v`` rounded to tf32 (``cvt.rna.tf32.f32``, low 13 bits cleared), as f32."""
    rna = dialects.nvvm.convert_float_to_tf32(cg.i32, v, rnd=ir.Attribute.parse("#nvvm.fp_rnd_mode<rna>"))
    bits = cg.op("arith.andi", rna, cg.const(cg.i32, LOW_BITS_CLEARED))
    return cg.op("arith.bitcast", bits, ty=ir.F32Type.get())


def _float(cg, v, dst):
    """Float register ``v`` as float type ``dst`` (extended, rounded to nearest even, or unchanged)."""
    if v.type == dst:
        return v
    if str(v.type) in ("f16", "bf16") and str(dst) in ("f16", "bf16"):  # through f32 (exact)
        v = cg.op("arith.extf", v, ty=ir.F32Type.get())
        if v.type == dst:
            return v
    wider = ir.FloatType(dst).width > ir.FloatType(v.type).width
    return cg.op("arith.extf" if wider else "arith.truncf", v, ty=dst)


def convert(cg, op, regs: list) -> list:
    """``arith.extf`` / ``arith.truncf`` of registers whose source or result elements are tf32."""
    f32 = ir.F32Type.get()
    src, dst = element_type(op.operands[0].type), element_type(op.results[0].type)
    if str(src) == TF32:
        return [_float(cg, r, storage(dst)) for r in regs]
    exact = str(src) in ("f16", "bf16")  # every f16 / bf16 value is a tf32 value
    return [_float(cg, r, f32) if exact else round_to_tf32(cg, _float(cg, r, f32)) for r in regs]


def constant_attr(attr: ir.Attribute) -> ir.Attribute:
    """A tf32 float attribute as the f32 attribute of its register value (the same number: exact)."""
    return ir.FloatAttr.get(ir.F32Type.get(), ir.FloatAttr(attr).value)
