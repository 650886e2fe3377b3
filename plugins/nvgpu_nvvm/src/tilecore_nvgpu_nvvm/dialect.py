"""IRDL dialect ``nvgpu_ext``: the nvgpu rows of spec note 3 that upstream's nvgpu dialect lacks.

| op                              | operands                         | result                 |
|---------------------------------|----------------------------------|------------------------|
| nvgpu_ext.cvt_fptrunc           | vector<2xf32>                    | vector<2x f16/bf16/f8> |
| nvgpu_ext.cvt_fpext             | vector<2x f16/bf16/f8>           | vector<2x f32/f16/bf16>|
| nvgpu_ext.fma_packed_f32x2      | vector<2xf32> x 3                | vector<2xf32>          |
| nvgpu_ext.mul_packed_f32x2      | vector<2xf32> x 2                | vector<2xf32>          |
| nvgpu_ext.tma_rebind_descriptor | !llvm.ptr<1> tensor map, !llvm.ptr<1> address, i64 x rank dims, i64 x (rank-1) byte strides | none |

(IRDL op names cannot contain dots, hence ``fma_packed_f32x2`` for the spec's
``nvgpu.fma.packed.f32x2``.) Stage 6 treats them like any nvgpu op: strict, SM-gated.
"""

from tilecore.dialects import DialectDef

NVGPU_EXT_IRDL = """
irdl.dialect @nvgpu_ext {
  irdl.operation @cvt_fptrunc {
    %in = irdl.any
    %out = irdl.any
    irdl.operands(in: %in)
    irdl.results(out: %out)
  }
  irdl.operation @cvt_fpext {
    %in = irdl.any
    %out = irdl.any
    irdl.operands(in: %in)
    irdl.results(out: %out)
  }
  irdl.operation @fma_packed_f32x2 {
    %v = irdl.any
    irdl.operands(a: %v, b: %v, c: %v)
    irdl.results(out: %v)
  }
  irdl.operation @mul_packed_f32x2 {
    %v = irdl.any
    irdl.operands(a: %v, b: %v)
    irdl.results(out: %v)
  }
  irdl.operation @tma_rebind_descriptor {
    %p = irdl.any
    %i = irdl.is i64
    irdl.operands(tensor_map: %p, global_address: %p, fields: variadic %i)
  }
}
"""


def dialects() -> list[DialectDef]:
    return [DialectDef("nvgpu_ext", NVGPU_EXT_IRDL)]
