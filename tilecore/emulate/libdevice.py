"""libdevice ``__nv_*`` functions mapped to host math with the same result type.

Every ``__nv_*`` declaration of the kernel module gets a body on the host: a call
of the C math library function of :data:`LIBM` (same signature), or the MLIR
snippet of :data:`CUSTOM` (``%a0``, ``%a1`` are the parameters, ``%r`` the
result; libm functions it calls are named in the row). A ``__nv_*`` function in
neither table fails with its name.
"""

from __future__ import annotations

# libdevice name -> libm name (identical signature). The __nv_fast_* variants are
# approximations on the GPU; the host computes them exactly.
_UNARY = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "cos", "cosh", "erf", "erfc",
          "exp", "exp2", "exp10", "expm1", "fabs", "floor", "lgamma", "log", "log10", "log1p", "log2", "rint",
          "round", "sin", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc", "nearbyint", "logb"]
_BINARY = ["atan2", "copysign", "fmod", "pow", "hypot", "fmax", "fmin", "fdim", "remainder", "nextafter"]
_TERNARY = ["fma"]
LIBM: dict[str, str] = {}
for _f in _UNARY + _BINARY + _TERNARY:
    LIBM[f"__nv_{_f}"] = _f            # f64
    LIBM[f"__nv_{_f}f"] = f"{_f}f"     # f32
for _f in ["cos", "exp", "exp10", "log10", "log2", "log", "pow", "sin", "tan", "tanh"]:
    LIBM[f"__nv_fast_{_f}f"] = f"{_f}f"
LIBM["__nv_fmaxf"], LIBM["__nv_fminf"] = "fmaxf", "fminf"


def _classify(ty: str, cmp: str) -> str:
    bits, width = ("0x7F800000", "i32") if ty == "f32" else ("0x7FF0000000000000", "i64")
    return (f"%f = llvm.intr.fabs(%a0) : ({ty}) -> {ty}\n"
            f"%ib = llvm.mlir.constant({bits} : {width}) : {width}\n"
            f"%inf = llvm.bitcast %ib : {width} to {ty}\n"
            f"%c = llvm.fcmp \"{cmp}\" %f, %inf : {ty}\n"
            f"%r = llvm.zext %c : i1 to i32")


def _rsqrt(ty: str) -> str:
    sq = "sqrtf" if ty == "f32" else "sqrt"
    return (f"%s = llvm.call @{sq}(%a0) : ({ty}) -> {ty}\n"
            f"%one = llvm.mlir.constant(1.0 : {ty}) : {ty}\n"
            f"%r = llvm.fdiv %one, %s : {ty}")


def _powi(ty: str) -> str:
    pw = "powf" if ty == "f32" else "pow"
    return (f"%e = llvm.sitofp %a1 : i32 to {ty}\n"
            f"%r = llvm.call @{pw}(%a0, %e) : ({ty}, {ty}) -> {ty}")


# libdevice name -> (MLIR body, {libm function it calls: signature}).
CUSTOM: dict[str, tuple[str, dict[str, str]]] = {
    "__nv_rsqrtf": (_rsqrt("f32"), {"sqrtf": "(f32) -> f32"}),
    "__nv_rsqrt": (_rsqrt("f64"), {"sqrt": "(f64) -> f64"}),
    "__nv_powif": (_powi("f32"), {"powf": "(f32, f32) -> f32"}),
    "__nv_powi": (_powi("f64"), {"pow": "(f64, f64) -> f64"}),
    "__nv_fast_powif": (_powi("f32"), {"powf": "(f32, f32) -> f32"}),
    "__nv_isnanf": ('%c = llvm.fcmp "uno" %a0, %a0 : f32\n%r = llvm.zext %c : i1 to i32', {}),
    "__nv_isnand": ('%c = llvm.fcmp "uno" %a0, %a0 : f64\n%r = llvm.zext %c : i1 to i32', {}),
    "__nv_isinff": (_classify("f32", "oeq"), {}),
    "__nv_isinfd": (_classify("f64", "oeq"), {}),
    "__nv_finitef": (_classify("f32", "one"), {}),
    "__nv_isfinited": (_classify("f64", "one"), {}),
    "__nv_saturatef": ("%z = llvm.mlir.constant(0.0 : f32) : f32\n%o = llvm.mlir.constant(1.0 : f32) : f32\n"
                       "%lo = llvm.intr.maxnum(%a0, %z) : (f32, f32) -> f32\n"
                       "%r = llvm.intr.minnum(%lo, %o) : (f32, f32) -> f32", {}),
}


def body(name: str, ret: str, params: list[str]) -> tuple[str, dict[str, str]] | None:
    """(MLIR body computing ``%r``, libm declarations it needs) for ``name``; None if unknown."""
    if name in CUSTOM:
        return CUSTOM[name]
    host = LIBM.get(name)
    if host is None:
        return None
    args = ", ".join(f"%a{i}" for i in range(len(params)))
    sig = f"({', '.join(params)}) -> {ret}"
    return f"%r = llvm.call @{host}({args}) : {sig}", {host: sig}
