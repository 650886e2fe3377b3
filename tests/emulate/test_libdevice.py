"""Every libdevice function the gpu_nvvm plugin emits has a host body with the same result (numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tilecore.emulate import launch
from tilecore.mlir import ir
from tilecore.plugins import get_plugin_manager

lib = pytest.importorskip("tilecore_gpu_nvvm.libdevice_math")


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# op -> numpy reference over the arguments (x, y, z) / (x, i)
REFERENCE = {
    "math.sqrt": np.sqrt, "math.rsqrt": lambda x: 1 / np.sqrt(x), "math.cbrt": np.cbrt, "math.exp": np.exp,
    "math.exp2": np.exp2, "math.expm1": np.expm1, "math.log": np.log, "math.log2": np.log2,
    "math.log10": np.log10, "math.log1p": np.log1p, "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan,
    "math.sinh": np.sinh, "math.cosh": np.cosh, "math.tanh": np.tanh, "math.asin": np.arcsin,
    "math.acos": np.arccos, "math.atan": np.arctan, "math.asinh": np.arcsinh,
    "math.acosh": lambda x: np.arccosh(x + 1), "math.atanh": np.arctanh,
    "math.erf": np.vectorize(math.erf), "math.erfc": np.vectorize(math.erfc), "math.floor": np.floor,
    "math.ceil": np.ceil, "math.round": _round_half_away, "math.roundeven": np.rint, "math.trunc": np.trunc,
    "math.absf": np.abs, "math.atan2": np.arctan2, "math.powf": np.power, "math.copysign": np.copysign,
    "arith.remf": np.fmod, "math.fma": lambda x, y, z: x * y + z, "math.fpowi": lambda x, i: x ** i,
    "math.isnan": np.isnan, "math.isinf": np.isinf, "math.isfinite": np.isfinite,
}
ROWS = [(op, kind, fn, ty) for op, (kind, f32, f64) in lib.LIBDEVICE.items() for fn, ty in ((f32, "f32"), (f64, "f64"))]
ROWS += [(op, lib.LIBDEVICE[op][0], fn, "f32") for op, fn in lib.FAST_F32.items()]


def _kernel(rows) -> str:
    decls, body = {}, []
    for j, (op, kind, fn, ty) in enumerate(rows):
        x = f"%x{ty}"
        if op == "math.acosh":
            body.append(f"%in{j} = llvm.fadd {x}, %one{ty} : {ty}")
            x = f"%in{j}"
        args, sig = {"unary": ([x], [ty]), "binary": ([x, f"%y{ty}"], [ty, ty]),
                     "ternary": ([x, f"%y{ty}", f"%y{ty}"], [ty, ty, ty]), "powi": ([x, "%i3"], [ty, "i32"]),
                     "predicate": ([x], [ty])}[kind]
        ret = "i32" if kind == "predicate" else ty
        decls[fn] = f"llvm.func @{fn}({', '.join(sig)}) -> {ret}"
        body.append(f"%r{j} = llvm.call @{fn}({', '.join(args)}) : ({', '.join(sig)}) -> {ret}")
        if ret == "i32":
            body.append(f"%d{j} = llvm.sitofp %r{j} : i32 to f64")
        elif ty == "f32":
            body.append(f"%d{j} = llvm.fpext %r{j} : f32 to f64")
        else:
            body.append(f"%d{j} = llvm.fadd %r{j}, %zerof64 : f64")
        body.append(f"%k{j} = llvm.mlir.constant({j} : i32) : i32\n%o{j} = llvm.add %base, %k{j} : i32\n"
                    f"%p{j} = llvm.getelementptr %out[%o{j}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64\n"
                    f"llvm.store %d{j}, %p{j} : f64, !llvm.ptr<1>")
    return "gpu.module @m {\n" + "\n".join(decls.values()) + f"""
llvm.func @k(%xs: !llvm.ptr<1>, %ys: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %px = llvm.getelementptr %xs[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
  %xf64 = llvm.load %px : !llvm.ptr<1> -> f64
  %py = llvm.getelementptr %ys[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
  %yf64 = llvm.load %py : !llvm.ptr<1> -> f64
  %xf32 = llvm.fptrunc %xf64 : f64 to f32
  %yf32 = llvm.fptrunc %yf64 : f64 to f32
  %onef32 = llvm.mlir.constant(1.0 : f32) : f32
  %onef64 = llvm.mlir.constant(1.0 : f64) : f64
  %zerof64 = llvm.mlir.constant(0.0 : f64) : f64
  %i3 = llvm.mlir.constant(3 : i32) : i32
  %ncol = llvm.mlir.constant({len(rows)} : i32) : i32
  %base = llvm.mul %t, %ncol : i32
""" + "\n".join("  " + line for b in body for line in b.splitlines()) + "\n  llvm.return\n}\n}\n"


def test_every_libdevice_function_of_gpu_nvvm_matches_numpy():
    pm = get_plugin_manager()
    with pm.make_context():
        m = ir.Module.parse(_kernel(ROWS))
    xs = np.array([0.25, 0.5, 0.75, 0.9], np.float64)
    ys = np.array([0.5, 1.5, -0.25, 2.0], np.float64)
    out = np.zeros((len(xs), len(ROWS)), np.float64)
    launch(m, "k", grid=1, block=len(xs), args=[xs, ys, out])
    for j, (op, kind, fn, ty) in enumerate(ROWS):
        dt = np.float32 if ty == "f32" else np.float64
        x, y = xs.astype(dt), ys.astype(dt)
        args = {"unary": (x,), "binary": (x, y), "ternary": (x, y, y), "powi": (x, 3), "predicate": (x,)}[kind]
        want = np.asarray(REFERENCE[op](*args), dtype=np.float64)
        np.testing.assert_allclose(out[:, j], want, rtol=2e-6 if ty == "f32" else 1e-12, err_msg=fn)
