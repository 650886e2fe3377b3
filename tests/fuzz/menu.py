"""The op menu: tile -> tile operations the generator chains.

Every row knows its cuTile source (``kernel``), its numpy model (``model``; ``{d}`` is the
element type key, results are rounded to it with ``ns.r``), which element kinds it applies to,
whether its input must be *exact* (reproducible bit for bit by the model: comparisons, floor,
float -> int conversions are discontinuous and only applied to exact values), whether an exact
input gives an exact output, and how it changes the magnitude bound of float values (ops whose
result could overflow the type are not drawn).

Left out on purpose (semantics not pinned down well enough to model, see README "Random program
testing"): NaN inputs (float comparison of NaN; NaNs made inside a chain meet min / max, modelled as
fmin / fmax, cuTile's default), ``pow`` of negative
bases, shifts by the bit width or more, float -> int conversion out of range, ``isnan`` on
non-NaN-free data is drawn but trivially false, ``//`` on unsigned tiles (cuTile 1.7.0 writes
``divi`` with rounding ``negative_inf`` and unsigned operands, which tileiras rejects too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Unary:
    name: str
    kinds: str  # element kinds it applies to: f, i (signed), u (unsigned), b (bool)
    kernel: str  # cuTile expression, {x} the operand
    model: str  # numpy expression
    exact_in: bool = False  # needs an exact operand
    keeps_exact: bool = True  # exact operand -> exact result
    bound: Callable[[float], float] = lambda b: b  # magnitude bound of the result (floats)
    max_bound: float = math.inf  # only drawn when the operand's bound is at most this
    cuda_tile: str = ""  # the cuda_tile op it is about (for the feature list)


@dataclass(frozen=True)
class Binary:
    name: str
    kinds: str
    kernel: str  # {x}, {y}
    model: str
    exact_in: bool = False
    keeps_exact: bool = True
    bound: Callable[[float, float], float] = lambda a, b: max(a, b)
    max_bound: float = math.inf
    cuda_tile: str = ""


# Float results are rounded to the element type after every op (ns.r), so f16 / bf16 chains are
# modelled op by op.
#        name      kinds kernel                               model
UNARY = [
    Unary("neg", "fi", "-{x}", "-{x}", cuda_tile="negf/negi"),
    Unary("abs", "fi", "ct.abs({x})", "np.abs({x})", cuda_tile="absf/absi"),
    Unary("not", "iu", "~{x}", "~{x}", cuda_tile="xori"),
    Unary("exp", "f", "ct.exp({x})", "ns.r(np.exp({x}), '{d}')", keeps_exact=False,
          bound=lambda b: math.exp(b), max_bound=4, cuda_tile="exp"),
    Unary("exp2", "f", "ct.exp2({x})", "ns.r(np.exp2({x}), '{d}')", keeps_exact=False,
          bound=lambda b: 2**b, max_bound=5, cuda_tile="exp2"),
    Unary("sin", "f", "ct.sin({x})", "ns.r(np.sin({x}), '{d}')", keeps_exact=False, bound=lambda b: 1.0,
          max_bound=100, cuda_tile="sin"),
    Unary("cos", "f", "ct.cos({x})", "ns.r(np.cos({x}), '{d}')", keeps_exact=False, bound=lambda b: 1.0,
          max_bound=100, cuda_tile="cos"),
    Unary("tanh", "f", "ct.tanh({x})", "ns.r(np.tanh({x}), '{d}')", keeps_exact=False, bound=lambda b: 1.0,
          cuda_tile="tanh"),
    Unary("tan", "f", "ct.tan(ct.tanh({x}))", "ns.r(np.tan(ns.r(np.tanh({x}), '{d}')), '{d}')", keeps_exact=False,
          bound=lambda b: 1.6, cuda_tile="tan"),  # |tanh| < 1 keeps tan away from its poles
    Unary("sinh", "f", "ct.sinh({x})", "ns.r(np.sinh({x}), '{d}')", keeps_exact=False,
          bound=lambda b: math.exp(b), max_bound=4, cuda_tile="sinh"),
    Unary("cosh", "f", "ct.cosh({x})", "ns.r(np.cosh({x}), '{d}')", keeps_exact=False,
          bound=lambda b: math.exp(b), max_bound=4, cuda_tile="cosh"),
    Unary("sqrt", "f", "ct.sqrt(ct.abs({x}))", "ns.r(np.sqrt(np.abs({x})), '{d}')", keeps_exact=False,
          bound=lambda b: math.sqrt(b), cuda_tile="sqrt"),
    Unary("log1p", "f", "ct.log(ct.abs({x}) + 1.0)", "ns.r(np.log(ns.r(np.abs({x}) + 1.0, '{d}')), '{d}')",
          keeps_exact=False, bound=lambda b: math.log(b + 1) + 1, cuda_tile="log"),
    Unary("log2p", "f", "ct.log2(ct.abs({x}) + 1.0)", "ns.r(np.log2(ns.r(np.abs({x}) + 1.0, '{d}')), '{d}')",
          keeps_exact=False, bound=lambda b: math.log2(b + 1) + 1, cuda_tile="log2"),
    Unary("rsqrt", "f", "ct.rsqrt(ct.abs({x}) + 1.0)",
          "ns.r(1.0 / np.sqrt(np.float64(1.0) * ns.r(np.abs({x}) + 1.0, '{d}')), '{d}')", keeps_exact=False,
          bound=lambda b: 1.0, cuda_tile="rsqrt"),
    Unary("floor", "f", "ct.floor({x})", "np.floor({x})", exact_in=True, bound=lambda b: b + 1,
          cuda_tile="floor"),
    Unary("ceil", "f", "ct.ceil({x})", "np.ceil({x})", exact_in=True, bound=lambda b: b + 1, cuda_tile="ceil"),
    Unary("square", "f", "{x} * {x}", "ns.r({x} * {x}, '{d}')", keeps_exact=False, bound=lambda b: b * b,
          max_bound=30, cuda_tile="mulf"),
    Unary("affine", "f", "{x} * 1.5 + 0.25", "ns.r(ns.r({x} * 1.5, '{d}') + 0.25, '{d}')", keeps_exact=False,
          bound=lambda b: 1.5 * b + 0.25, max_bound=1e3, cuda_tile="fma"),
    Unary("fmod_c", "f", "{x} % 1.5", "ns.mod_f({x}, 1.5, '{d}')", exact_in=True, keeps_exact=False,
          bound=lambda b: 1.5, cuda_tile="remf"),
    Unary("fdiv_c", "f", "{x} // 0.75", "ns.floordiv_f({x}, 0.75, '{d}')", exact_in=True,
          bound=lambda b: b / 0.75 + 1, cuda_tile="divf+floor"),
    Unary("isnan", "f", "ct.where(ct.isnan({x}), {x}, -{x})", "np.where(np.isnan({x}), {x}, -{x})",
          cuda_tile="cmpf"),
    Unary("powi", "f", "{x} ** 3", "ns.r(ns.r({x} * {x}, '{d}') * {x}, '{d}')", keeps_exact=False,
          bound=lambda b: b**3, max_bound=8, cuda_tile="fpowi"),
    Unary("divmod", "i", "divmod({x}, {c})[0] + divmod({x}, {c})[1]", "{x} // {c} + {x} % {c}",
          cuda_tile="divi+remi"),
    Unary("addc", "iu", "{x} + 3", "{x} + 3", cuda_tile="addi"),
    Unary("mulc", "iu", "{x} * 5", "{x} * 5", cuda_tile="muli"),
    Unary("shl", "iu", "{x} << {s}", "{x} << {s}", cuda_tile="shli"),
    Unary("shr", "iu", "{x} >> {s}", "{x} >> {s}", cuda_tile="shri"),
    Unary("fdiv_i", "i", "{x} // {c}", "{x} // {c}", cuda_tile="divi"),
    Unary("mod_i", "iu", "{x} % {c}", "{x} % {c}", cuda_tile="remi"),
]

BINARY = [
    Binary("add", "fiu", "{x} + {y}", "ns.r({x} + {y}, '{d}')", keeps_exact=False, bound=lambda a, b: a + b,
           max_bound=1e3, cuda_tile="addf/addi"),
    Binary("sub", "fiu", "{x} - {y}", "ns.r({x} - {y}, '{d}')", keeps_exact=False, bound=lambda a, b: a + b,
           max_bound=1e3, cuda_tile="subf/subi"),
    Binary("mul", "fiu", "{x} * {y}", "ns.r({x} * {y}, '{d}')", keeps_exact=False, bound=lambda a, b: a * b,
           max_bound=30, cuda_tile="mulf/muli"),
    Binary("div", "f", "{x} / (ct.abs({y}) + 1.0)", "ns.r({x} / ns.r(np.abs({y}) + 1.0, '{d}'), '{d}')",
           keeps_exact=False, bound=lambda a, b: a, cuda_tile="divf"),
    Binary("atan2", "f", "ct.atan2({x}, ct.abs({y}) + 0.5)",
           "ns.r(np.arctan2({x}, ns.r(np.abs({y}) + 0.5, '{d}')), '{d}')", keeps_exact=False,
           bound=lambda a, b: 4.0, cuda_tile="atan2"),
    Binary("pow", "f", "ct.pow(ct.abs({x}) + 0.5, {y})",
           "ns.r(np.power(np.float64(1.0) * ns.r(np.abs({x}) + 0.5, '{d}'), {y}), '{d}')", keeps_exact=False,
           bound=lambda a, b: (a + 0.5) ** b + 1, max_bound=2.5, cuda_tile="pow"),
    # cuTile's maximum / minimum (propagate_nan=False) return the non-NaN operand: fmax / fmin
    Binary("maximum", "fiu", "ct.maximum({x}, {y})", "np.fmax({x}, {y})", cuda_tile="maxf/maxi"),
    Binary("minimum", "fiu", "ct.minimum({x}, {y})", "np.fmin({x}, {y})", cuda_tile="minf/mini"),
    Binary("where_gt", "fiu", "ct.where({x} > {y}, {x}, {y} * 2)", "np.where({x} > {y}, {x}, ns.r({y} * 2, '{d}'))",
           exact_in=True, keeps_exact=False, bound=lambda a, b: max(a, 2 * b), max_bound=1e3,
           cuda_tile="cmp+select"),
    Binary("where_le", "fiu", "ct.where(({x} <= {y}) | ({x} == {y}), {y}, {x})",
           "np.where(({x} <= {y}) | ({x} == {y}), {y}, {x})", exact_in=True, cuda_tile="cmp+ori+select"),
    Binary("where_ne", "fiu", "ct.where(({x} != {y}) & ({x} >= {y}), {x}, {y})",
           "np.where(({x} != {y}) & ({x} >= {y}), {x}, {y})", exact_in=True, cuda_tile="cmp+andi+select"),
    Binary("and", "iu", "{x} & {y}", "{x} & {y}", cuda_tile="andi"),
    Binary("or", "iu", "{x} | {y}", "{x} | {y}", cuda_tile="ori"),
    Binary("xor", "iu", "{x} ^ {y}", "{x} ^ {y}", cuda_tile="xori"),
    Binary("shl_t", "iu", "{x} << ({y} & {m})", "{x} << ({y} & {m})", cuda_tile="shli"),
    Binary("shr_t", "iu", "{x} >> ({y} & {m})", "{x} >> ({y} & {m})", cuda_tile="shri"),
    Binary("fdiv_t", "i", "{x} // (ct.abs({y}) | 1)", "{x} // (np.abs({y}) | 1)", cuda_tile="divi"),
    Binary("mod_t", "i", "{x} % (ct.abs({y}) | 1)", "{x} % (np.abs({y}) | 1)", cuda_tile="remi"),
    Binary("mod_tu", "u", "{x} % ({y} | 1)", "{x} % ({y} | 1)", cuda_tile="remi"),
]

# Reductions and scans: (name, kinds, kernel function, model kind, needs exact input for an exact result)
#             name     kinds   kernel      model
REDUCTIONS = [("sum", "fiu", "ct.sum", "sum"), ("max", "fiu", "ct.max", "max"), ("min", "fiu", "ct.min", "min"),
              ("prod", "fiu", "ct.prod", "prod")]
ARGREDUCTIONS = [("argmax", "fiu", "ct.argmax"), ("argmin", "fiu", "ct.argmin")]
SCANS = [("cumsum", "fiu", "ct.cumsum", "sum"), ("cumprod", "fiu", "ct.cumprod", "prod")]
# ct.reduce / ct.scan with a lambda (associative and commutative: any order gives the same result)
#          name    kinds  combiner (kernel)           identity          numpy ufunc
CUSTOM = [("xor", "iu", "lambda a, b: a ^ b", "0", "np.bitwise_xor"),
          ("or", "iu", "lambda a, b: a | b", "0", "np.bitwise_or"),
          ("max", "f", "lambda a, b: ct.maximum(a, b)", "-float('inf')", "np.fmax"),
          ("min", "i", "lambda a, b: ct.minimum(a, b)", "{imax}", "np.fmin")]

# Float padding modes a load may use, with the model's pad value; "finite" ones may feed
# reductions / data movement (the others only position-preserving chains).
#                 mode            model    finite
FLOAT_PADDINGS = [("ZERO", "0.0", True), ("NEG_ZERO", "-0.0", True), ("NAN", "np.nan", False),
                  ("POS_INF", "np.inf", False), ("NEG_INF", "-np.inf", False), ("UNDETERMINED", "None", False)]
INT_PADDINGS = [("ZERO", "0", True), ("UNDETERMINED", "None", False)]

# mma: (input type, accumulator type). tf32 is an f32 array converted in the kernel.
MMA_PAIRS = [("f16", "f16"), ("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("f64", "f64"), ("tf32", "f32"),
             ("f8e4m3", "f16"), ("f8e4m3", "f32"), ("f8e5m2", "f16"), ("f8e5m2", "f32"), ("i8", "i32"),
             ("u8", "i32")]
