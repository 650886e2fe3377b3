"""8- and 4-bit floats in stage 4: i8 registers, conversions through the cvt instructions, SM floors.

LLVM has no 8- or 4-bit float types, so a register of an ``f8E4M3FN`` / ``f8E5M2`` / ``f8E8M0FNU`` /
``f4E2M1FN`` tile holds the code as ``i8`` (:func:`storage`): loads, stores, shared-memory exchanges
and shape ops move codes unchanged. ``f4E2M1FN`` is packed two per byte in global memory (element
``2i`` in the low half of byte ``i``): tiled loads and stores pack and unpack it (:mod:`.memory`).
Arithmetic never sees the codes (cuda_tile converts first: ``ftof`` becomes ``arith.extf`` /
``arith.truncf``, handled here by :func:`convert`):

- ``f8E4M3FN`` / ``f8E5M2`` / ``f4E2M1FN`` -> wider: two registers per ``cvt.rn.f16x2.<fmt>x2``
  (``nvvm.convert.f8x2.to.f16x2`` / ``.f4x2.to.f16x2``, the two E2M1 codes packed into one byte), then
  the exact f16 -> f32 / f64 / bf16 extension;
- wider -> ``f8E4M3FN`` / ``f8E5M2`` / ``f4E2M1FN``: two f32 per ``cvt.rn.satfinite.<fmt>x2.f32``
  (``nvvm.convert.f32x2.to.f8x2`` / ``.to.f4x2``): nearest even, out-of-range values (and
  infinities) saturate to the largest finite value, NaN stays NaN (E2M1 has none: +0). f16 / bf16
  sources are extended to f32 first (exact); f64 sources are narrowed to f32 rounding to odd first
  (:func:`_f64_to_f32_odd`: the second rounding then gives what rounding the f64 value once would);
- ``f8E8M0FNU`` (block scales, exponent only) -> wider: integer ops, ``code << 23`` as f32 bits
  (code 0 is 2^-127, a subnormal; code 255 is NaN); wider -> ``f8E8M0FNU`` (cuTile allows RZ / RP only): integer
  ops on the f32 bits (:func:`_e8m0`).

:data:`MIN_CC` gives each type's lowest target (as tileiras: e4m3 / e5m2 from sm_89, e8m0 / e2m1 from
sm_100); :func:`check_types` rejects a kernel that uses one below it, at the first op that does.
"""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir
from tilecore.narrow_floats import encode

from ..stage1_cuda_tile_to_tileaa.common import element_type
from .codegen import create

# element type -> lowest compute capability whose instructions have it
MIN_CC = {"f8E4M3FN": 89, "f8E5M2": 89, "f8E8M0FNU": 100, "f4E2M1FN": 100}
PACKED = ("f4E2M1FN",)  # two elements per byte in memory
E8M0_NAN, E8M0_ZERO_BITS, F32_QNAN_BITS = 0xFF, 0x00400000, 0x7FC00000


def element_name(t) -> str:
    """The element type of a tensor type (or the type itself), as text."""
    return str(element_type(t))


def is_narrow(t) -> bool:
    return element_name(t) in MIN_CC


def storage(t):
    """The register type of element type ``t``: i8 for the 8- / 4-bit floats, ``t`` otherwise."""
    return ir.IntegerType.get_signless(8) if str(t) in MIN_CC else t


def check_types(block, target) -> None:
    """Fail at the first op in ``block`` (nested) whose operand / result element type ``target`` lacks."""
    def visit(b):
        for op in b.operations:
            for v in [*op.operands, *op.results]:
                name = element_name(v.type)
                cc = MIN_CC.get(name)
                if cc is not None and target is not None and target.cc < cc:
                    raise LoweringError(f"Incompatibility with architecture '{target.name}': unsupported type "
                                        f"'{name}' (it needs sm_{cc} or newer)", op)
            for region in op.regions:
                for inner in region.blocks:
                    visit(inner)
    visit(block)


# -- decoding -------------------------------------------------------------------------------------
def _f8x2_to_f16x2(cg, a, b, fmt: str) -> tuple:
    """Codes ``a``, ``b`` (i8) of an 8-bit ``fmt`` -> two f16 values (one ``cvt.rn.f16x2.<f8>x2``)."""
    llvm = dialects.llvm
    v2 = ir.VectorType.get([2], cg.i8)
    pair = llvm.insertelement(llvm.insertelement(llvm.mlir_poison(v2), a, cg.c32(0)), b, cg.c32(1))
    h = dialects.nvvm.convert_f8x2_to_f16x2(ir.VectorType.get([2], ir.F16Type.get()), pair,
                                            ir.TypeAttr.get(ir.Type.parse(fmt)))
    return llvm.extractelement(h, cg.c32(0)), llvm.extractelement(h, cg.c32(1))


def _f4x2_to_f16x2(cg, a, b, fmt: str) -> tuple:
    """E2M1 codes ``a``, ``b`` -> two f16 values (one ``cvt.rn.f16x2.e2m1x2`` on the byte ``b << 4 | a``)."""
    llvm = dialects.llvm
    byte = cg.op("arith.ori", a, cg.op("arith.shli", b, cg.const(cg.i8, 4)))
    h = dialects.nvvm.convert_f4x2_to_f16x2(ir.VectorType.get([2], ir.F16Type.get()), byte,
                                            ir.TypeAttr.get(ir.Type.parse(fmt)))
    return llvm.extractelement(h, cg.c32(0)), llvm.extractelement(h, cg.c32(1))


def _e8m0_to_f32(cg, code):
    """An E8M0 code -> f32: the code is the biased exponent (0: 2^-127; 255: NaN)."""
    w = cg.op("arith.extui", code, ty=cg.i32)
    bits = cg.op("arith.shli", w, cg.c32(23))
    bits = cg.select(cg.cmpi(0, w, cg.c32(0)), cg.c32(E8M0_ZERO_BITS), bits)
    bits = cg.select(cg.cmpi(0, w, cg.c32(E8M0_NAN)), cg.c32(F32_QNAN_BITS), bits)
    return cg.op("arith.bitcast", bits, ty=ir.F32Type.get())


def _widen(cg, v, dst):
    """A decoded value (f16 or f32) -> float type ``dst`` (exact except f32 -> f16 / bf16)."""
    if v.type == dst:
        return v
    src_w, dst_w = ir.FloatType(v.type).width, ir.FloatType(dst).width
    if str(dst) == "bf16" and str(v.type) == "f16":  # both 16 bits: through f32 (exact)
        v = cg.op("arith.extf", v, ty=ir.F32Type.get())
        src_w = 32
    return cg.op("arith.extf" if dst_w > src_w else "arith.truncf", v, ty=dst)


# the formats the cvt instructions widen: two codes -> two f16 (E8M0 has no such cvt: integer ops)
CVT_DECODERS = {"f8E4M3FN": _f8x2_to_f16x2, "f8E5M2": _f8x2_to_f16x2, "f4E2M1FN": _f4x2_to_f16x2}


def decode(cg, regs: list, fmt: str, dst) -> list:
    """Registers holding ``fmt`` codes -> values of float type ``dst``."""
    if fmt not in CVT_DECODERS:
        return [_widen(cg, _e8m0_to_f32(cg, r), dst) for r in regs]
    out = []
    for k in range(0, len(regs), 2):
        a = regs[k]
        b = regs[k + 1] if k + 1 < len(regs) else a
        lo, hi = CVT_DECODERS[fmt](cg, a, b, fmt)
        out += [_widen(cg, lo, dst)] + ([_widen(cg, hi, dst)] if k + 1 < len(regs) else [])
    return out


# -- encoding -------------------------------------------------------------------------------------
def _cvt_f8x2(cg, a, b, fmt: str) -> tuple:
    """``cvt.rn.satfinite.<f8>x2.f32 d, a, b``: (b's code, a's code) as i8."""
    i16 = ir.IntegerType.get_signless(16)
    d = dialects.nvvm.convert_f32x2_to_f8x2(i16, a, b, ir.TypeAttr.get(ir.Type.parse(fmt)),
                                            rnd=ir.Attribute.parse("#nvvm.fp_rnd_mode<rn>"),
                                            sat=ir.Attribute.parse("#nvvm.sat_mode<satfinite>"))
    return cg.op("arith.trunci", d, ty=cg.i8), cg.op("arith.trunci", cg.op("arith.shrui", d, cg.const(i16, 8)),
                                                     ty=cg.i8)


def _cvt_f4x2(cg, a, b, fmt: str) -> tuple:
    """``cvt.rn.satfinite.e2m1x2.f32 d, a, b``: (b's code, a's code), each in the low 4 bits of an i8."""
    d = dialects.nvvm.convert_f32x2_to_f4x2(cg.i8, a, b, ir.TypeAttr.get(ir.Type.parse(fmt)))
    return cg.op("arith.andi", d, cg.const(cg.i8, 15)), cg.op("arith.shrui", d, cg.const(cg.i8, 4))


# the formats the cvt instructions produce: two f32 -> two codes
CVT_ENCODERS = {"f8E4M3FN": _cvt_f8x2, "f8E5M2": _cvt_f8x2, "f4E2M1FN": _cvt_f4x2}


def _e8m0(cg, v, mode: str):
    """An f32 register -> its ``f8E8M0FNU`` code (i8) rounded toward zero (``rz``: the power of two at or below
    |v|) or +inf (``rp``: at or above), as PTX ``cvt.rz|rp.satfinite.ue8m0x2.f32`` (PTX ISA "Data Movement and
    Conversion Instructions: cvt"; tileiras emits it): the f32 exponent field is the code for a normal v (plus
    one for ``rp`` when the mantissa is not 0), values past 2^127 and +inf saturate to 254, a subnormal rounds
    to 2^-127 (code 0; 2^-126, code 1, for ``rp`` above 2^-127), zero and negative values are the smallest
    scale (code 0, what tileiras pads e8m0 tiles with), NaN is 255. Integer ops only."""
    i32 = cg.i32
    bits = cg.op("arith.bitcast", v, ty=i32)
    exp = cg.op("arith.andi", cg.op("arith.shrui", bits, cg.const(i32, 23)), cg.const(i32, 0xFF))
    mant = cg.op("arith.andi", bits, cg.const(i32, 0x7FFFFF))
    EQ, NE, SLT, UGT = 0, 1, 2, 8  # arith.cmpi predicates
    if mode == "rp":  # ceil: one more where bits are below the exponent (a subnormal: above 2^-127)
        up = cg.op("arith.select", cg.cmpi(EQ, exp, cg.const(i32, 0)), cg.cmpi(UGT, mant, cg.const(i32, 0x400000)),
                   cg.cmpi(NE, mant, cg.const(i32, 0)), ty=cg.i1)
        code = cg.op("arith.addi", exp, cg.op("arith.extui", up, ty=i32))
    else:
        code = exp
    code = cg.op("arith.minui", code, cg.const(i32, 254))  # satfinite (and +inf)
    nan = cg.op("arith.andi", cg.cmpi(EQ, exp, cg.const(i32, 0xFF)), cg.cmpi(NE, mant, cg.const(i32, 0)))
    code = cg.op("arith.select", cg.cmpi(SLT, bits, cg.const(i32, 0)), cg.const(i32, 0), code, ty=i32)  # < 0, -0
    code = cg.op("arith.select", nan, cg.const(i32, E8M0_NAN), code, ty=i32)
    return cg.op("arith.trunci", code, ty=cg.i8)


def _f64_to_f32_odd(cg, v):
    """An f64 register -> f32 rounded to odd: the f32 value itself when exact, else of the two f32 values around
    it the one whose last mantissa bit is 1 (past the largest finite f32: that largest value). The 8-bit
    formats' cvt instructions take f32 sources only (PTX ISA "Data Movement and Conversion Instructions: cvt":
    ``cvt.rn.satfinite.e4m3x2.f32``); rounding to nearest in both steps would round twice (1.0625 + 2^-30 ->
    1.0625 -> e4m3 1.0 instead of 1.125), while an odd f32 with 24 bits never lies on a rounding boundary of a
    format of 8 bits or fewer, so the cvt's rounding gives the correctly rounded code (tileiras does the same:
    F2F.F32.F64.RZ, the inexact bit or-ed into bit 0, then F2FP.SATFINITE.E4M3)."""
    f32, i32 = ir.F32Type.get(), cg.i32
    r = cg.op("arith.truncf", v, ty=f32)  # nearest even (cvt.rn.f32.f64)
    back = cg.op("arith.extf", r, ty=v.type)
    fcmp = lambda pred, a, b: create("arith.cmpf", [cg.i1], [a, b],  # noqa: E731
                                     {"predicate": ir.IntegerAttr.get(cg.i64, pred)}).results[0]
    ONE, OLT, ORD = 1, 4, 7  # arith.cmpf predicates: oeq, olt, ord
    inexact = cg.op("arith.xori", fcmp(ONE, back, v), cg.const(cg.i1, 1))  # not (back == v): NaN too
    inexact = cg.op("arith.andi", inexact, fcmp(ORD, r, r))  # a NaN stays as it is
    bits = cg.op("arith.bitcast", r, ty=i32)
    even = cg.cmpi(0, cg.op("arith.andi", bits, cg.c32(1)), cg.c32(0))
    # r was rounded toward zero when |r| < |v| (r = ±0 under a tiny v): the odd neighbour is one code up in
    # magnitude; else (rounded away, an infinity included) one code down
    away = fcmp(OLT, cg.op("math.absf", back), cg.op("math.absf", v))
    step = cg.select(away, cg.c32(1), cg.c32(-1))
    bits = cg.select(cg.op("arith.andi", inexact, even), cg.op("arith.addi", bits, step), bits)
    return cg.op("arith.bitcast", bits, ty=f32)


def _to_f32(cg, r):
    """A float register -> f32 for the cvt instructions: f16 / bf16 extended (exact), f64 rounded to odd."""
    f32 = ir.F32Type.get()
    if r.type == f32:
        return r
    if ir.FloatType(r.type).width < 32:
        return cg.op("arith.extf", r, ty=f32)
    return _f64_to_f32_odd(cg, r)


def encode_regs(cg, regs: list, fmt: str, op=None, mode: str | None = None) -> list:
    """Float registers -> ``fmt`` codes (i8), nearest even with saturation (pairs through one cvt); ``f8E8M0FNU``
    rounded toward zero or +inf (``mode`` rz / rp, :func:`_e8m0`)."""
    if fmt == "f8E8M0FNU" and mode in ("rz", "rp"):
        return [_e8m0(cg, _to_f32(cg, r), mode) for r in regs]
    if fmt not in CVT_ENCODERS:
        raise LoweringError(f"conversion to {fmt}" + (f" rounded '{mode}'" if mode else "") + " is not supported yet",
                            op)
    vals = [_to_f32(cg, r) for r in regs]
    out = []
    for k in range(0, len(vals), 2):
        b = vals[k]
        a = vals[k + 1] if k + 1 < len(vals) else b
        lo, hi = CVT_ENCODERS[fmt](cg, a, b, fmt)  # cvt d, a, b: a's code in the high part
        out += [lo] + ([hi] if k + 1 < len(vals) else [])
    return out


def convert(cg, op, regs: list) -> list:
    """``arith.extf`` / ``arith.truncf`` of a tile whose source or result elements are 8- / 4-bit floats
    (between two such formats: through f32, which holds every value of each exactly)."""
    src, dst = element_name(op.operands[0].type), element_name(op.results[0].type)
    if src in MIN_CC:
        regs = decode(cg, regs, src, ir.F32Type.get() if dst in MIN_CC else element_type(op.results[0].type))
        if dst not in MIN_CC:
            return regs
    mode = ir.StringAttr(op.attributes["tilecore.rounding"]).value if "tilecore.rounding" in op.attributes else None
    return encode_regs(cg, regs, dst, op, mode)


def code_table(dense, fmt: str):
    """A non-uniform ``fmt`` constant as a flat ``tensor<N x i8>`` of its codes (row-major), or None when its
    values are not spelled out (MLIR's hex form of a large constant)."""
    text = str(dense)
    body = text[len("dense<"):text.rindex("> : ")]
    if body.startswith('"'):
        return None
    codes = []
    for word in body.replace("[", " ").replace("]", " ").split(","):
        word = word.strip()
        value = float(word) if not word.startswith("0x") else float("nan")
        code = encode(value, fmt)
        codes.append(code - 256 if code > 127 else code)
    return ir.Attribute.parse(f"dense<[{', '.join(map(str, codes))}]> : tensor<{len(codes)}xi8>")


def constant_code(attr, fmt: str) -> int:
    """The code of a float attribute's value in ``fmt``."""
    return encode(ir.FloatAttr(attr).value, fmt)
