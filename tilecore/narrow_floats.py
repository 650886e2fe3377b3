"""8-bit (and 4-bit) floating-point formats: the value of each code and round-to-nearest-even encoding.

One table per format, computed from its definition (sign, exponent and mantissa widths, bias,
which codes are NaN / infinity). Used where a compiler or the emulator needs the numbers behind
a code: constant folding of ``f8`` constants (tileas stage 4) and the emulator's model of the
``cvt`` instructions. ``encode`` rounds to nearest, ties to the even code, and saturates
out-of-range values (infinities included) to the largest finite value, as PTX ``cvt.rn.satfinite``
does; NaN encodes as the format's NaN (+0 for E2M1, which has none).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Format:
    """A small float format: ``exp_bits`` / ``man_bits`` after the sign bit (``signed``), ``bits`` wide."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    signed: bool = True
    ieee_specials: bool = False  # all-ones exponent = inf / NaN (E5M2); else only listed codes are NaN
    nan_codes: tuple = ()
    bits: int = 8

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)

    def value(self, code: int) -> float:
        """The number code ``code`` stands for (``nan`` for NaN codes)."""
        code &= (1 << self.bits) - 1
        if code in self.nan_codes:
            return math.nan
        sign = -1.0 if self.signed and code & self.sign_bit else 1.0
        mag = code & (self.sign_bit - 1) if self.signed else code
        e = mag >> self.man_bits
        m = mag & ((1 << self.man_bits) - 1)
        if self.ieee_specials and e == (1 << self.exp_bits) - 1:
            return sign * math.inf if m == 0 else math.nan
        if self.man_bits == 0:  # exponent only (E8M0)
            return math.ldexp(1.0, e - self.bias)
        if e == 0:
            return sign * math.ldexp(m, 1 - self.bias - self.man_bits)
        return sign * math.ldexp((1 << self.man_bits) + m, e - self.bias - self.man_bits)


FORMATS = {
    "f8E4M3FN": Format("f8E4M3FN", 4, 3, 7, nan_codes=(0x7F, 0xFF)),
    "f8E5M2": Format("f8E5M2", 5, 2, 15, ieee_specials=True),
    "f8E8M0FNU": Format("f8E8M0FNU", 8, 0, 127, signed=False, nan_codes=(0xFF,)),
    "f4E2M1FN": Format("f4E2M1FN", 2, 1, 1, bits=4),  # 0, 0.5, 1, 1.5, 2, 3, 4, 6; no NaN / inf
}
NAN_CODE = {"f8E4M3FN": 0x7F, "f8E5M2": 0x7F, "f8E8M0FNU": 0xFF}  # f4E2M1FN has none


def decode(code: int, fmt: str) -> float:
    """The value of ``code`` in format ``fmt`` (a name of :data:`FORMATS`)."""
    return FORMATS[fmt].value(code)


@lru_cache(maxsize=None)
def _finite_positive(fmt: str) -> tuple[list[float], list[int]]:
    """The non-negative finite values of ``fmt`` in increasing order, with their codes."""
    f = FORMATS[fmt]
    pairs = sorted((f.value(c), c) for c in range(f.sign_bit if f.signed else 1 << f.bits)
                   if math.isfinite(f.value(c)))
    return [v for v, _ in pairs], [c for _, c in pairs]


def encode(x: float, fmt: str) -> int:
    """``x`` rounded to nearest-even in ``fmt``, saturating to the largest finite value
    (NaN in a format without NaN, E2M1, gives +0: PTX leaves that case undefined)."""
    f = FORMATS[fmt]
    if math.isnan(x):
        return NAN_CODE.get(fmt, 0)
    neg = math.copysign(1.0, x) < 0
    if neg and not f.signed:
        return NAN_CODE[fmt]
    vals, codes = _finite_positive(fmt)
    a = abs(x)
    if a >= vals[-1]:
        code = codes[-1]
    else:
        i = bisect.bisect_left(vals, a)
        if vals[i] == a or i == 0:  # i == 0: below the smallest value of a format without zero (E8M0)
            code = codes[i]
        else:  # vals[i - 1] < a < vals[i]
            lo, hi = vals[i - 1], vals[i]
            if a - lo < hi - a or (a - lo == hi - a and codes[i - 1] % 2 == 0):
                code = codes[i - 1]
            else:
                code = codes[i]
    return code | f.sign_bit if neg and f.signed else code
