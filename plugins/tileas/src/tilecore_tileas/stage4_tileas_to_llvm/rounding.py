"""Float arithmetic with a directed rounding mode (``tilecore.rounding`` = rz / rm / rp, set by stage 1 from
cuda_tile's ``rounding_mode``): one libdevice call per register, ``__nv_fadd_rz`` ... ``__nv_dsqrt_ru``, which
are PTX ``add`` / ``mul`` / ``div`` / ``sqrt`` / ``fma`` with the rounding modifier ``.rz`` / ``.rm`` / ``.rp``
(PTX ISA "Floating-Point Instructions": add, mul, div, sqrt, fma, "Rounding modifiers"). f32 and f64 only:
stage 1 computes f16 / bf16 in f32 and narrows in the same direction."""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import call, declare_function

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

ATTR = "tilecore.rounding"
SUFFIX = {"rz": "rz", "rm": "rd", "rp": "ru"}  # libdevice spells -inf / +inf rd / ru
# op -> (f32 function, f64 function) without the suffix
FUNCTIONS = {"arith.addf": ("__nv_fadd", "__nv_dadd"), "arith.subf": ("__nv_fadd", "__nv_dadd"),
             "arith.mulf": ("__nv_fmul", "__nv_dmul"), "arith.divf": ("__nv_fdiv", "__nv_ddiv"),
             "math.sqrt": ("__nv_fsqrt", "__nv_dsqrt"), "math.fma": ("__nv_fmaf", "__nv_fma")}


def directed(op, attrs: dict, rtype, args: list):
    """The value of ``op`` (its name, ``attrs[ATTR]``) on scalar ``args``: a libdevice call."""
    mode = ir.StringAttr(attrs[ATTR]).value
    if op.name not in FUNCTIONS or not isinstance(rtype, (ir.F32Type, ir.F64Type)):
        raise LoweringError(f"rounding mode '{mode}' of '{op.name}' on {rtype} is not supported", op)
    name = f"{FUNCTIONS[op.name][isinstance(rtype, ir.F64Type)]}_{SUFFIX[mode]}"
    if op.name == "arith.subf":  # x - y = x + (-y): the negation is exact
        args = [args[0], dialects.llvm.fneg(args[1])]
    declare_function(op, name, [rtype] * len(args), rtype)
    return call(name, args, rtype)
