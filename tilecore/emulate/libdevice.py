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


def _two_sum(x: str, y: str, t: str) -> str:
    """%s = x + y and %err = the exact x + y - %s (Knuth's TwoSum; round to nearest)."""
    return (f"%s = llvm.fadd {x}, {y} : {t}\n%bb = llvm.fsub %s, {x} : {t}\n%ab = llvm.fsub %s, %bb : {t}\n"
            f"%ea = llvm.fsub {x}, %ab : {t}\n%eb = llvm.fsub {y}, %bb : {t}\n%err = llvm.fadd %ea, %eb : {t}\n")


def _directed(op: str, ty: str, mode: str) -> tuple[str, dict[str, str]]:
    """libdevice ``__nv_{f,d}{add,mul,div,sqrt}_r{z,d,u}`` / ``__nv_fmaf_r*``: PTX add / mul / div / sqrt / fma
    with .rz / .rm / .rp (PTX ISA "Floating-Point Instructions", rounding modifiers). The host rounds to nearest;
    %d gets the sign of (exact result - %n), %n the round-to-nearest result, and %n steps one value toward the
    mode's direction (``nextafter``) where it lies on the wrong side. f32: computed in f64 (products exact,
    sums with TwoSum's error; a quotient or root of f32 operands is never within an f64 rounding of an f32 value
    it does not equal); f64: the exact error from TwoSum or an fma residual."""
    nxt = "nextafterf" if ty == "f32" else "nextafter"
    fma = "llvm.intr.fma"
    n = len({"add": "ab", "mul": "ab", "div": "ab", "sqrt": "a", "fma": "abc"}[op])
    if ty == "f32":
        text = "".join(f"%x{i} = llvm.fpext %a{i} : f32 to f64\n" for i in range(n))
        text += {"add": _two_sum("%x0", "%x1", "f64"),
                 "mul": "%s = llvm.fmul %x0, %x1 : f64\n%err = llvm.mlir.constant(0.0 : f64) : f64\n",
                 "div": "%s = llvm.fdiv %x0, %x1 : f64\n%err = llvm.mlir.constant(0.0 : f64) : f64\n",
                 "sqrt": "%s = llvm.intr.sqrt(%x0) : (f64) -> f64\n%err = llvm.mlir.constant(0.0 : f64) : f64\n",
                 "fma": "%p = llvm.fmul %x0, %x1 : f64\n" + _two_sum("%p", "%x2", "f64")}[op]
        text += ("%n = llvm.fptrunc %s : f64 to f32\n%nb = llvm.fpext %n : f32 to f64\n"
                 "%gap = llvm.fsub %s, %nb : f64\n%d = llvm.fadd %gap, %err : f64\n"
                 "%zd = llvm.mlir.constant(0.0 : f64) : f64\n")
    else:
        text = "%zd = llvm.mlir.constant(0.0 : f64) : f64\n" + {
            "add": _two_sum("%a0", "%a1", "f64") + "%n = llvm.bitcast %s : f64 to f64\n"
                   "%d = llvm.bitcast %err : f64 to f64\n",
            "mul": f"%n = llvm.fmul %a0, %a1 : f64\n%m = llvm.fneg %n : f64\n"
                   f"%d = {fma}(%a0, %a1, %m) : (f64, f64, f64) -> f64\n",
            "div": f"%n = llvm.fdiv %a0, %a1 : f64\n%m = llvm.fneg %n : f64\n"
                   f"%rem = {fma}(%m, %a1, %a0) : (f64, f64, f64) -> f64\n%d = llvm.fdiv %rem, %a1 : f64\n",
            "sqrt": f"%n = llvm.intr.sqrt(%a0) : (f64) -> f64\n%m = llvm.fneg %n : f64\n"
                    f"%d = {fma}(%m, %n, %a0) : (f64, f64, f64) -> f64\n"}[op]
    z = "%zt = llvm.mlir.constant(0.0 : {t}) : {t}\n".format(t=ty)
    inf = f"%it = llvm.mlir.constant(0x{'7F800000' if ty == 'f32' else '7FF0000000000000'} : " \
          f"{'i32' if ty == 'f32' else 'i64'}) : {'i32' if ty == 'f32' else 'i64'}\n" \
          f"%pinf = llvm.bitcast %it : {'i32' if ty == 'f32' else 'i64'} to {ty}\n%ninf = llvm.fneg %pinf : {ty}\n"
    text += z + inf
    if mode == "rz":  # |exact| < |n|: d and n of opposite signs
        text += (f"%dn = llvm.fcmp \"olt\" %d, %zd : f64\n%dp = llvm.fcmp \"ogt\" %d, %zd : f64\n"
                 f"%np = llvm.fcmp \"ogt\" %n, %zt : {ty}\n%nn = llvm.fcmp \"olt\" %n, %zt : {ty}\n"
                 "%w1 = llvm.and %dn, %np : i1\n%w2 = llvm.and %dp, %nn : i1\n%w = llvm.or %w1, %w2 : i1\n"
                 f"%to = llvm.select %w, %zt, %n : i1, {ty}\n")
    else:
        pred, target = ("olt", "%ninf") if mode == "rd" else ("ogt", "%pinf")
        text += f"%w = llvm.fcmp \"{pred}\" %d, %zd : f64\n%to = llvm.select %w, {target}, %n : i1, {ty}\n"
    if op == "add" and mode == "rd":  # an exact zero sum is -0 when rounding toward -inf (IEEE 754 6.3): -((-x) + (-y))
        text += (f"%st = llvm.call @{nxt}(%n, %to) : ({ty}, {ty}) -> {ty}\n%mx = llvm.fneg %a0 : {ty}\n"
                 f"%my = llvm.fneg %a1 : {ty}\n%ms = llvm.fadd %mx, %my : {ty}\n%zs = llvm.fneg %ms : {ty}\n"
                 f"%iz = llvm.fcmp \"oeq\" %st, %zt : {ty}\n%r = llvm.select %iz, %zs, %st : i1, {ty}")
    else:
        text += f"%r = llvm.call @{nxt}(%n, %to) : ({ty}, {ty}) -> {ty}"
    return text, {nxt: f"({ty}, {ty}) -> {ty}"}


for _op, _f, _d in [("add", "fadd", "dadd"), ("mul", "fmul", "dmul"), ("div", "fdiv", "ddiv"),
                    ("sqrt", "fsqrt", "dsqrt"), ("fma", "fmaf", None)]:
    for _m in ("rz", "rd", "ru"):
        CUSTOM[f"__nv_{_f}_{_m}"] = _directed(_op, "f32", _m)
        if _d:
            CUSTOM[f"__nv_{_d}_{_m}"] = _directed(_op, "f64", _m)


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
