"""Floating-point conversion routines the host back end calls and the JIT does not provide.

(Also the host side of the emulated 8- / 4-bit float ``cvt`` instructions, :func:`f8x2_to_f16x2`,
:func:`f4x2_to_f16x2`, :func:`f32x2_to_f8x2` and :func:`f32x2_to_f4x2`, whose numbers come from :mod:`tilecore.narrow_floats`.)

Without F16C / AVX512-BF16 instructions (and always for f64 sources) the x86 back end lowers
``fptrunc`` to f16 / bf16 (from f32 or f64) and ``fpext`` from f16 to calls of compiler-rt routines, which the
emulator's JIT cannot resolve (a lookup failure would abort the process). They are bound here to
ctypes callbacks. The x86-64 ABI passes and returns f16 / bf16 in the low 16 bits of an SSE
register, so the callbacks take and return ``float`` and work on those bits. Rounding is to
nearest even, computed exactly from the double (no double rounding through f32).
"""

from __future__ import annotations

import ctypes
import math
import struct

import numpy as np

from tilecore.narrow_floats import decode as f8_decode
from tilecore.narrow_floats import encode as f8_encode


def _as_float(bits: int) -> float:
    """A float whose low 16 bits are ``bits`` (the register image of an f16 / bf16 return value)."""
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFF))[0]


def _bits(reg: float) -> int:
    """The low 16 bits of a float argument register."""
    return struct.unpack("<I", struct.pack("<f", reg))[0] & 0xFFFF


def f16_bits(x: float) -> int:
    """IEEE binary16 bits of ``x``, rounded to nearest even (numpy rounds from the double directly)."""
    with np.errstate(over="ignore"):  # overflow gives inf, as on the GPU
        return int(np.array(x, np.float64).astype(np.float16).view(np.uint16))


def bf16_bits(x: float) -> int:
    """bfloat16 bits of ``x``, rounded to nearest even; NaN stays a quiet NaN, overflow gives inf."""
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7FC0
    a = abs(x)
    if a == 0.0:
        return sign
    if math.isinf(a):
        return sign | 0x7F80
    m, e = math.frexp(a)  # a = m * 2**e, 0.5 <= m < 1; float scaling by powers of two is exact
    if e - 1 < -126:  # subnormal: multiples of 2**-133 (rounding up to 0x80 gives the smallest normal)
        return sign | round(math.ldexp(a, 133))
    q = round(math.ldexp(m, 8))  # 8 significant bits, 128..256 (round: half to even)
    if q == 256:
        q, e = 128, e + 1
    exp = e - 1 + 127
    if exp >= 255:
        return sign | 0x7F80
    return sign | (exp << 7) | (q - 128)


# 8-bit float formats of the emulated cvt instructions; the index is the emulator calls' format operand
F8_FORMATS = ("f8E4M3FN", "f8E5M2")


def f8x2_to_f16x2(fmt: int, src: int) -> int:
    """``cvt.rn.f16x2.<f8>x2``: byte i of ``src`` -> half i of the result (exact)."""
    name = F8_FORMATS[fmt]
    lo, hi = (f16_bits(f8_decode(src >> s & 0xFF, name)) for s in (0, 8))
    return _i32(hi << 16 | lo)


def f32x2_to_f8x2(fmt: int, a: float, b: float) -> int:
    """``cvt.rn.satfinite.<f8>x2.f32 d, a, b``: ``a`` in the high byte, ``b`` in the low byte."""
    name = F8_FORMATS[fmt]
    return f8_encode(a, name) << 8 | f8_encode(b, name)


def f4x2_to_f16x2(src: int) -> int:
    """``cvt.rn.f16x2.e2m1x2``: the low 4 bits of ``src`` -> the low half of the result (exact)."""
    lo, hi = (f16_bits(f8_decode(src >> s & 0xF, "f4E2M1FN")) for s in (0, 4))
    return _i32(hi << 16 | lo)


def f32x2_to_f4x2(a: float, b: float) -> int:
    """``cvt.rn.satfinite.e2m1x2.f32 d, a, b``: ``a`` in the high 4 bits, ``b`` in the low 4 bits."""
    return f8_encode(a, "f4E2M1FN") << 4 | f8_encode(b, "f4E2M1FN")


def _i32(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


# symbol -> (ctypes prototype, implementation on Python floats)
LIBCALLS = {
    "__truncdfhf2": (ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_double), lambda x: _as_float(f16_bits(x))),
    "__truncsfhf2": (ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float), lambda x: _as_float(f16_bits(x))),
    "__extendhfsf2": (ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float),
                      lambda h: float(np.array(_bits(h), np.uint16).view(np.float16))),
    "__truncsfbf2": (ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float), lambda x: _as_float(bf16_bits(x))),
    "__truncdfbf2": (ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_double), lambda x: _as_float(bf16_bits(x))),
    # the emulator's own calls for the nvvm 8-bit float conversions (optable)
    "__emu_f8x2_to_f16x2": (ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32), f8x2_to_f16x2),
    "__emu_f32x2_to_f8x2": (ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_float, ctypes.c_float),
                            f32x2_to_f8x2),
    "__emu_f32x2_to_f4x2": (ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_float, ctypes.c_float), f32x2_to_f4x2),
    "__emu_f4x2_to_f16x2": (ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32), f4x2_to_f16x2),
}


def make_libcalls() -> dict:
    """ctypes callbacks for :data:`LIBCALLS` (keep them alive while the JIT code may call them)."""
    return {sym: proto(fn) for sym, (proto, fn) in LIBCALLS.items()}
