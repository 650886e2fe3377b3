"""math.* (and arith.remf) -> libdevice ``__nv_*`` calls, chosen from an (op, element type) table.

* f32 calls ``__nv_<name>f``, f64 ``__nv_<name>``; f16 / bf16 are extended to f32, call the
  f32 function and are truncated back (predicates just compare);
* with ``fastmath<afn>`` or ``fastmath<fast>`` an f32 op calls ``__nv_fast_<name>f`` when
  libdevice has one (:data:`FAST_F32`);
* vector operands are scalarised first by :class:`ScalarizeVectorMath` (extract each lane,
  apply the scalar op, ``vector.from_elements``); the libdevice patterns themselves match
  scalars only, so a vector op that cannot be scalarised (scalable vectors) stays illegal
  and the stage reports it — it is never dispatched lane by lane silently.
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.mlir import dialects, ir

from .llvm_build import call, declare_function, hoisted_constant, i32

UNARY, BINARY, TERNARY, POWI, PREDICATE = "unary", "binary", "ternary", "powi", "predicate"

# op -> (kind, f32 function, f64 function), names as in libdevice.10.bc.
LIBDEVICE: dict[str, tuple[str, str, str]] = {
    "math.sqrt": (UNARY, "__nv_sqrtf", "__nv_sqrt"),
    "math.rsqrt": (UNARY, "__nv_rsqrtf", "__nv_rsqrt"),
    "math.cbrt": (UNARY, "__nv_cbrtf", "__nv_cbrt"),
    "math.exp": (UNARY, "__nv_expf", "__nv_exp"),
    "math.exp2": (UNARY, "__nv_exp2f", "__nv_exp2"),
    "math.expm1": (UNARY, "__nv_expm1f", "__nv_expm1"),
    "math.log": (UNARY, "__nv_logf", "__nv_log"),
    "math.log2": (UNARY, "__nv_log2f", "__nv_log2"),
    "math.log10": (UNARY, "__nv_log10f", "__nv_log10"),
    "math.log1p": (UNARY, "__nv_log1pf", "__nv_log1p"),
    "math.sin": (UNARY, "__nv_sinf", "__nv_sin"),
    "math.cos": (UNARY, "__nv_cosf", "__nv_cos"),
    "math.tan": (UNARY, "__nv_tanf", "__nv_tan"),
    "math.sinh": (UNARY, "__nv_sinhf", "__nv_sinh"),
    "math.cosh": (UNARY, "__nv_coshf", "__nv_cosh"),
    "math.tanh": (UNARY, "__nv_tanhf", "__nv_tanh"),
    "math.asin": (UNARY, "__nv_asinf", "__nv_asin"),
    "math.acos": (UNARY, "__nv_acosf", "__nv_acos"),
    "math.atan": (UNARY, "__nv_atanf", "__nv_atan"),
    "math.asinh": (UNARY, "__nv_asinhf", "__nv_asinh"),
    "math.acosh": (UNARY, "__nv_acoshf", "__nv_acosh"),
    "math.atanh": (UNARY, "__nv_atanhf", "__nv_atanh"),
    "math.erf": (UNARY, "__nv_erff", "__nv_erf"),
    "math.erfc": (UNARY, "__nv_erfcf", "__nv_erfc"),
    "math.floor": (UNARY, "__nv_floorf", "__nv_floor"),
    "math.ceil": (UNARY, "__nv_ceilf", "__nv_ceil"),
    "math.round": (UNARY, "__nv_roundf", "__nv_round"),
    "math.roundeven": (UNARY, "__nv_rintf", "__nv_rint"),
    "math.trunc": (UNARY, "__nv_truncf", "__nv_trunc"),
    "math.absf": (UNARY, "__nv_fabsf", "__nv_fabs"),
    "math.atan2": (BINARY, "__nv_atan2f", "__nv_atan2"),
    "math.powf": (BINARY, "__nv_powf", "__nv_pow"),
    "math.copysign": (BINARY, "__nv_copysignf", "__nv_copysign"),
    "arith.remf": (BINARY, "__nv_fmodf", "__nv_fmod"),
    "math.fma": (TERNARY, "__nv_fmaf", "__nv_fma"),
    "math.fpowi": (POWI, "__nv_powif", "__nv_powi"),
    "math.isnan": (PREDICATE, "__nv_isnanf", "__nv_isnand"),
    "math.isinf": (PREDICATE, "__nv_isinff", "__nv_isinfd"),
    "math.isfinite": (PREDICATE, "__nv_finitef", "__nv_isfinited"),
}

# f32 ops with an approximate libdevice variant, used under fastmath<afn> / fastmath<fast>.
FAST_F32: dict[str, str] = {
    "math.exp": "__nv_fast_expf",
    "math.log": "__nv_fast_logf",
    "math.log2": "__nv_fast_log2f",
    "math.log10": "__nv_fast_log10f",
    "math.sin": "__nv_fast_sinf",
    "math.cos": "__nv_fast_cosf",
    "math.tan": "__nv_fast_tanf",
    "math.tanh": "__nv_fast_tanhf",
    "math.powf": "__nv_fast_powf",
}

_PROMOTED = (ir.F16Type, ir.BF16Type)


def _is_fast(op, none_attr=None) -> bool:
    """True with ``fastmath<afn>`` or ``<fast>``; ``none_attr`` (``#arith.fastmath<none>``) skips the text."""
    if "fastmath" not in op.attributes:
        return False
    attr = op.attributes["fastmath"]
    if none_attr is not None and attr == none_attr:
        return False
    text = str(attr)
    return "afn" in text or "fast" in text.replace("fastmath", "")


def callee_for(op_name: str, elem: ir.Type, fast: bool) -> str | None:
    """The libdevice function for ``op_name`` on scalar ``elem`` (None: no row)."""
    row = LIBDEVICE.get(op_name)
    if row is None:
        return None
    if isinstance(elem, ir.F64Type):
        return row[2]
    if isinstance(elem, (ir.F32Type, *_PROMOTED)):
        if fast and op_name in FAST_F32:
            return FAST_F32[op_name]
        return row[1]
    return None


class LibdeviceCall(Pattern):
    """Scalar ``math.<op>`` -> ``llvm.call @__nv_<op>[f]`` (f16 via f32)."""

    def __init__(self, root: str):
        self.root = root
        self.kind = LIBDEVICE[root][0]

    @property
    def name(self):
        return f"Libdevice[{self.root}]"

    def match(self, op) -> bool:
        return callee_for(self.root, op.operands[0].type, False) is not None

    def rewrite(self, op, rw):
        elem = op.operands[0].type
        name = callee_for(self.root, elem, _is_fast(op, rw.attr("#arith.fastmath<none>")))
        promote = isinstance(elem, _PROMOTED)
        f32 = ir.F32Type.get()
        wide = f32 if promote else elem
        with rw.ip:
            args = []
            for i, v in enumerate(op.operands):
                if self.kind == POWI and i == 1:
                    args.append(v)  # the i32 exponent
                elif promote:
                    args.append(dialects.llvm.fpext(f32, v))
                else:
                    args.append(v)
            if self.kind == PREDICATE:
                declare_function(op, name, [wide], i32(), rw.memo)
                r = call(name, args, i32(), rw.memo)
                zero = hoisted_constant(rw, op, i32(), 0)
                result = dialects.llvm.icmp(dialects.llvm.ICmpPredicate.ne, r, zero)
            else:
                declare_function(op, name, [a.type for a in args], wide, rw.memo)
                result = call(name, args, wide, rw.memo)
                if promote:
                    result = dialects.llvm.fptrunc(elem, result)
        rw.replace(op, [result])


class ScalarizeVectorMath(Pattern):
    """Vector ``math.<op>`` -> per-lane scalar ops + ``vector.from_elements`` (static shapes only)."""

    benefit = 2

    def __init__(self, root: str):
        self.root = root

    @property
    def name(self):
        return f"ScalarizeVector[{self.root}]"

    def match(self, op) -> bool:
        t = op.results[0].type
        if not isinstance(t, ir.VectorType):
            return False
        return not any(t.scalable_dims) if hasattr(t, "scalable_dims") else "[" not in str(t)

    def rewrite(self, op, rw):
        vt = ir.VectorType(op.results[0].type)
        shape = list(vt.shape)
        lanes = 1
        for d in shape:
            lanes *= d
        attrs = {a if isinstance(a, str) else a.name: op.attributes[a if isinstance(a, str) else a.name]
                 for a in op.attributes}
        with rw.ip:
            flat_in = []
            for v in op.operands:
                t = ir.VectorType(v.type)
                if len(shape) > 1:
                    v = dialects.vector.shape_cast(ir.VectorType.get([lanes], t.element_type), v)
                flat_in.append(v)
            outs = []
            for lane in range(lanes):
                scalars = [dialects.vector.extract(v, [], [lane]) for v in flat_in]
                res_elem = vt.element_type
                outs.append(ir.Operation.create(op.name, results=[res_elem], operands=scalars,
                                                attributes=attrs).results[0])
            flat = dialects.vector.from_elements(ir.VectorType.get([lanes], vt.element_type), outs)
            if len(shape) > 1:
                flat = dialects.vector.shape_cast(vt, flat)
        rw.replace(op, [flat])


class RejectUnscalarisedVector(Pattern):
    """A vector math op that cannot be scalarised (scalable vectors) is an error, not a silent dispatch."""

    benefit = 1

    def __init__(self, root: str):
        self.root = root

    @property
    def name(self):
        return f"RejectVector[{self.root}]"

    def match(self, op) -> bool:
        return isinstance(op.results[0].type, ir.VectorType) and not ScalarizeVectorMath(self.root).match(op)

    def rewrite(self, op, rw):
        from tilecore.errors import LoweringError

        raise LoweringError(f"'{op.name}' on {op.results[0].type} reaches libdevice dispatch unscalarised "
                            "(only fixed-size vectors are scalarised; libdevice functions are scalar)", op)


def patterns() -> list[Pattern]:
    return ([LibdeviceCall(r) for r in LIBDEVICE] + [ScalarizeVectorMath(r) for r in LIBDEVICE]
            + [RejectUnscalarisedVector(r) for r in LIBDEVICE])
