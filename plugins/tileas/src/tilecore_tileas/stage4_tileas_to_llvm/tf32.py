"""TensorFloat-32 (``tf32``) in stage 4: f32 registers holding tf32 values, rounded from f32 as asked.

tf32 is f32 with the low 13 mantissa bits dropped (1 sign, 8 exponent, 10 mantissa bits). LLVM has
no such type, so a register of a ``tf32`` tile holds the value as ``f32`` with those 13 bits zero
(:func:`storage`): every value is exact, shared-memory exchanges and shape ops move it unchanged,
and ``mma.sync`` ``.tf32`` operands are these very bits (:mod:`.dot`). cuTile converts into and out
of tf32 with ``ftof`` (``arith.truncf`` / ``arith.extf`` here, :func:`convert`):

- f32 -> tf32: rounded as the conversion asks (:func:`round_to_tf32`: nearest even by default, cuTile's RA by
  ``cvt.rna.tf32.f32``, RZ); the 13 low bits of the result are cleared, so the register is an exact f32;
  f64 sources are rounded to f32 first; f16 / bf16 sources widen exactly (tf32 holds them all);
- tf32 -> wider / narrower floats: the f32 value, extended or rounded like any f32.

Other arithmetic on tf32 tiles is rejected (cuda_tile converts first), as for 8-bit floats.

A pipelined K loop copies an f32 tile converted to tf32 for its dot into its stage as f32
(:mod:`.pipeline`); the conversion then rounds the stage in place (:func:`round_stage`) before the dot reads it.
"""

from __future__ import annotations

from tilecore.mlir import dialects, ir

from ..stage1_cuda_tile_to_tileaa.common import element_type
from .codegen import create

TF32 = "tf32"
LOW_BITS_CLEARED = -(1 << 13)  # 0xFFFFE000 as i32: keeps sign, exponent and the 10 tf32 mantissa bits


def is_tf32(t) -> bool:
    """Whether ``t`` (a tensor type or an element type) has tf32 elements."""
    return str(element_type(t)) == TF32


def storage(t):
    """The register type of element type ``t``: f32 for tf32, ``t`` otherwise."""
    return ir.F32Type.get() if str(t) == TF32 else t


def round_to_tf32(cg, v, mode: str = "rn"):
    """f32 ``v`` rounded to tf32 (low 13 bits cleared), as f32: ``rna`` (cuTile's RA) by ``cvt.rna.tf32.f32``
    (sm_80+); ``rn`` (nearest even: cuTile's default and RN, its test_cast.py rounds 1 + 2^-11 to 1) and ``rz`` on
    the bits, as ``cvt.rn`` / ``cvt.rz .tf32.f32`` would (PTX ISA "Data Movement and Conversion Instructions: cvt":
    those need sm_90): rn adds 0xFFF plus the kept lowest bit before clearing (a carry into the exponent is the
    right rounding up, to infinity past the largest value); NaN stays a (quiet) NaN."""
    f32 = ir.F32Type.get()
    bits = cg.op("arith.bitcast", v, ty=cg.i32)
    up = bits
    if mode == "rna":  # (a NaN whose payload is in the low 13 bits only would be cleared to infinity: selected below)
        up = dialects.nvvm.convert_float_to_tf32(cg.i32, v, rnd=ir.Attribute.parse("#nvvm.fp_rnd_mode<rna>"))
    elif mode == "rn":
        kept_lsb = cg.op("arith.andi", cg.op("arith.shrui", bits, cg.c32(13)), cg.c32(1))
        up = cg.op("arith.addi", bits, cg.op("arith.addi", kept_lsb, cg.c32(0xFFF)))
    rounded = cg.op("arith.andi", up, cg.const(cg.i32, LOW_BITS_CLEARED))
    quiet_nan = cg.op("arith.andi", cg.op("arith.ori", bits, cg.c32(1 << 22)), cg.const(cg.i32, LOW_BITS_CLEARED))
    nan = create("arith.cmpf", [cg.i1], [v, v], {"predicate": ir.IntegerAttr.get(cg.i64, 14)}).results[0]  # uno
    return cg.op("arith.bitcast", cg.select(nan, quiet_nan, rounded), ty=f32)


def rounding_of(op) -> str:
    """The tf32 rounding stage 1 put on conversion ``op`` (``rn`` when none)."""
    return ir.StringAttr(op.attributes["tilecore.rounding"]).value if "tilecore.rounding" in op.attributes else "rn"


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
    mode = rounding_of(op)
    return [_float(cg, r, f32) if exact else round_to_tf32(cg, _float(cg, r, f32), mode) for r in regs]


def constant_attr(attr: ir.Attribute) -> ir.Attribute:
    """A tf32 float attribute as the f32 attribute of its register value (the same number: exact)."""
    return ir.FloatAttr.get(ir.F32Type.get(), ir.FloatAttr(attr).value)


def round_stage(cg, stage, mode: str = "rn"):
    """Round a pipelined loop's stage buffer of f32 (a :class:`~tilecore.mma.SwizzledOperand` or
    :class:`~tilecore.mma.SmemOperand` that landed: every thread waited for it) to tf32 in place and return it: each
    thread rounds words ``tid + j * threads`` of it (the layout's order does not matter: element-wise; a padded
    layout's pad words too, unread), then, where the target has the async proxy (sm_90+: wgmma and TMA access
    shared memory through it, PTX ISA 9.7.15.5.2 "wgmma.mma_async"), ``fence.proxy.async.shared::cta`` orders
    these generic stores before wgmma's reads and the stage's next TMA refill; a barrier ends it."""
    from tilecore.mma import TMA_INTERFACE, SwizzledOperand

    from ..atoms import default_atom

    f32 = ir.F32Type.get()
    p3 = ir.Type.parse("!llvm.ptr<3>")
    llvm = dialects.llvm
    swizzled = isinstance(stage, SwizzledOperand)
    words = stage.rows * (stage.cols if swizzled else stage.pitch)
    base = stage.base(cg) if swizzled else None
    for j in range(-(-words // cg.threads)):
        idx = cg.op("arith.addi", cg.tid, cg.c32(j * cg.threads)) if j else cg.tid

        def one(idx=idx):
            if swizzled:  # a byte GEP from the scratch base (the stage's offset may be negative: shifted scratch)
                at = cg.op("arith.addi", base, cg.op("arith.muli", idx, cg.c32(4)))
                ptr = llvm.getelementptr(p3, cg.smem_base, [at], [-2147483648], cg.i8, 0)
            else:  # word idx of the padded rows
                ptr = stage.address(cg, cg.c32(0), idx)
            llvm.store(round_to_tf32(cg, llvm.load(f32, ptr), mode), ptr)
            return []

        if (j + 1) * cg.threads > words:
            cg.masked(cg.cmpi(6, idx, cg.c32(words)), one)
        else:
            one()
    atom = default_atom(cg.atoms, "copy", cg.target, None, interface=TMA_INTERFACE)
    if atom is not None:
        atom.lower(cg, "fence_proxy")
    cg.barrier()
    return stage
