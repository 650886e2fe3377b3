"""Reciprocal and packed arithmetic: ``nvgpu.rcp``, packed conversions, packed f32x2 fma / mul (sm_100).

| op                           | lowering                                              | floor  |
|------------------------------|-------------------------------------------------------|--------|
| nvgpu.rcp {approx, ftz}      | nvvm.rcp.approx.ftz.f per lane, vector.from_elements  | sm_70  |
| nvgpu_ext.cvt_fptrunc -> f16 | nvvm.convert.f32x2.to.f16x2 (hi = lane 1, lo = lane 0) | sm_80  |
| nvgpu_ext.cvt_fptrunc -> bf16| nvvm.convert.f32x2.to.bf16x2                          | sm_80  |
| nvgpu_ext.cvt_fptrunc -> f8  | nvvm.convert.f32x2.to.f8x2 (satfinite)                | sm_89  |
| nvgpu_ext.cvt_fpext f8 -> f16| nvvm.convert.f8x2.to.f16x2                            | sm_89  |
| nvgpu_ext.cvt_fpext f16/bf16 -> f32 | llvm.fpext on vector<2x..>                     | sm_80  |
| nvgpu_ext.fma_packed_f32x2   | llvm.intr.fma on vector<2xf32> (fma.rn.f32x2)         | sm_100 |
| nvgpu_ext.mul_packed_f32x2   | llvm.fmul on vector<2xf32> (mul.rn.f32x2)             | sm_100 |
"""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import extractelement, function_of

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from .common import NvgpuPattern

llvm = dialects.llvm

F8_TYPES = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def _vec(t) -> tuple[int, str]:
    vt = ir.VectorType(t)
    return vt.shape[0], str(vt.element_type)


def _lanes(v, n):
    return [dialects.vector.extract(v, [], [i]) for i in range(n)]


class RcpPattern(NvgpuPattern):
    """``nvgpu.rcp %v {rounding = approx, ftz}`` -> ``nvvm.rcp.approx.ftz.f`` per lane, gathered by
    ``vector.from_elements``."""

    root = "nvgpu.rcp"
    family = "rcp"

    def lower(self, op, rw):
        vt = ir.VectorType(op.results[0].type)
        f32 = ir.F32Type.get()
        fn = function_of(op)
        with rw.ip:
            lanes = [ir.Operation.create("nvvm.rcp.approx.ftz.f", results=[f32],
                                         operands=[extractelement(rw, op, op.operands[0], i, f32, fn)]).result
                     for i in range(vt.shape[0])]
            rw.replace(op, ir.Operation.create("vector.from_elements", results=[vt], operands=lanes))


def _pair(op) -> None:
    for t in (op.operands[0].type, op.results[0].type):
        if not isinstance(t, ir.VectorType) and not ir.VectorType.isinstance(t) or _vec(t)[0] != 2:
            raise LoweringError(f"'{op.name}' works on pairs: vector<2x...> operands and results, got {t}", op)


class CvtFpTruncPattern(NvgpuPattern):
    """``nvgpu_ext.cvt_fptrunc vector<2xf32> -> vector<2x f16 | bf16 | f8>`` -> one packed NVVM convert."""

    root = "nvgpu_ext.cvt_fptrunc"
    family = "cvt.packed.f16"

    def match(self, op):
        return _vec(op.results[0].type)[1] not in F8_TYPES

    def lower(self, op, rw):
        _pair(op)
        n, out = _vec(op.results[0].type)
        rnd = ir.Attribute.parse("#nvvm.fp_rnd_mode<rn>")
        with rw.ip:
            lo, hi = _lanes(op.operands[0], 2)
            build = {"f16": dialects.nvvm.convert_f32x2_to_f16x2, "bf16": dialects.nvvm.convert_f32x2_to_bf16x2}.get(out)
            if build is None:
                raise LoweringError(f"'{op.name}': no packed conversion f32x2 -> {out}x2", op)
            rw.replace(op, build(op.results[0].type, hi, lo, rnd=rnd))


class CvtFpTruncF8Pattern(CvtFpTruncPattern):
    """``nvgpu_ext.cvt_fptrunc vector<2xf32> -> vector<2x f8E4M3FN | f8E5M2>`` -> ``nvvm.convert.f32x2.to.f8x2``."""

    family = "cvt.packed.f8"

    def match(self, op):
        return _vec(op.results[0].type)[1] in F8_TYPES

    def lower(self, op, rw):
        _pair(op)
        _, out = _vec(op.results[0].type)
        with rw.ip:
            lo, hi = _lanes(op.operands[0], 2)
            packed = dialects.nvvm.convert_f32x2_to_f8x2(ir.VectorType.get([2], ir.IntegerType.get_signless(8)), hi, lo,
                                                ir.TypeAttr.get(ir.VectorType(op.results[0].type).element_type),
                                                rnd=ir.Attribute.parse("#nvvm.fp_rnd_mode<rn>"), sat=ir.Attribute.parse(
                                                    "#nvvm.sat_mode<satfinite>"))
            rw.replace(op, packed)


class CvtFpExtPattern(NvgpuPattern):
    """``nvgpu_ext.cvt_fpext``: f16 / bf16 pairs -> ``llvm.fpext`` to f32x2."""

    root = "nvgpu_ext.cvt_fpext"
    family = "cvt.packed.f16"

    def match(self, op):
        return _vec(op.operands[0].type)[1] not in F8_TYPES

    def lower(self, op, rw):
        _pair(op)
        with rw.ip:
            rw.replace(op, llvm.fpext(op.results[0].type, op.operands[0]))


class CvtFpExtF8Pattern(CvtFpExtPattern):
    """``nvgpu_ext.cvt_fpext vector<2x f8> -> vector<2xf16>`` -> ``nvvm.convert.f8x2.to.f16x2``."""

    family = "cvt.packed.f8"

    def match(self, op):
        return _vec(op.operands[0].type)[1] in F8_TYPES

    def lower(self, op, rw):
        _pair(op)
        _, out = _vec(op.results[0].type)
        if out != "f16":
            raise LoweringError(f"'{op.name}': packed f8x2 widens to f16x2, not {out}x2", op)
        with rw.ip:
            src = rw.cast(op.operands[0], ir.VectorType.get([2], ir.IntegerType.get_signless(8)))
            rw.replace(op, dialects.nvvm.convert_f8x2_to_f16x2(op.results[0].type, src,
                                                     ir.TypeAttr.get(ir.VectorType(op.operands[0].type).element_type)))


class FmaPackedF32x2Pattern(NvgpuPattern):
    """``nvgpu_ext.fma_packed_f32x2 %a, %b, %c`` -> ``llvm.intr.fma`` on vector<2xf32> (fma.rn.f32x2 on sm_100)."""

    root = "nvgpu_ext.fma_packed_f32x2"
    family = "f32x2"

    def lower(self, op, rw):
        a, b, c = op.operands
        with rw.ip:
            rw.replace(op, llvm.intr_fma(a, b, c))


class MulPackedF32x2Pattern(NvgpuPattern):
    """``nvgpu_ext.mul_packed_f32x2 %a, %b`` -> ``llvm.fmul`` on vector<2xf32> (mul.rn.f32x2 on sm_100)."""

    root = "nvgpu_ext.mul_packed_f32x2"
    family = "f32x2"

    def lower(self, op, rw):
        a, b = op.operands
        with rw.ip:
            rw.replace(op, llvm.fmul(a, b))




def patterns():
    return [RcpPattern(), CvtFpTruncPattern(), CvtFpTruncF8Pattern(), CvtFpExtPattern(), CvtFpExtF8Pattern(),
            FmaPackedF32x2Pattern(), MulPackedF32x2Pattern()]
