"""tilecore.narrow_floats: the values of 8-bit float codes and nearest-even, saturating encoding."""

import math

import pytest

from tilecore.narrow_floats import decode, encode


@pytest.mark.parametrize("fmt,code,value", [
    ("f8E4M3FN", 0x00, 0.0), ("f8E4M3FN", 0x01, 2.0 ** -9), ("f8E4M3FN", 0x07, 7 * 2.0 ** -9),
    ("f8E4M3FN", 0x08, 2.0 ** -6), ("f8E4M3FN", 0x38, 1.0), ("f8E4M3FN", 0x7E, 448.0), ("f8E4M3FN", 0xB8, -1.0),
    ("f8E5M2", 0x01, 2.0 ** -16), ("f8E5M2", 0x3C, 1.0), ("f8E5M2", 0x7B, 57344.0), ("f8E5M2", 0x7C, math.inf),
    ("f8E5M2", 0xFC, -math.inf), ("f8E8M0FNU", 0x00, 2.0 ** -127), ("f8E8M0FNU", 0x7F, 1.0),
    ("f8E8M0FNU", 0xFE, 2.0 ** 127), ("f4E2M1FN", 0x1, 0.5), ("f4E2M1FN", 0x7, 6.0), ("f4E2M1FN", 0xA, -1.0)])
def test_decode(fmt, code, value):
    assert decode(code, fmt) == value


@pytest.mark.parametrize("fmt,code", [("f8E4M3FN", 0x7F), ("f8E4M3FN", 0xFF), ("f8E5M2", 0x7D), ("f8E5M2", 0xFF),
                                      ("f8E8M0FNU", 0xFF)])
def test_nan_codes(fmt, code):
    assert math.isnan(decode(code, fmt))


@pytest.mark.parametrize("fmt,x,code", [
    ("f8E4M3FN", 1.0625, 0x38), ("f8E4M3FN", 1.1875, 0x3A), ("f8E4M3FN", 1.07, 0x39),  # ties to even, nearest
    ("f8E4M3FN", 2.0 ** -10, 0x00), ("f8E4M3FN", 3 * 2.0 ** -10, 0x02),                  # subnormal ties
    ("f8E4M3FN", 464.0, 0x7E), ("f8E4M3FN", 1e30, 0x7E), ("f8E4M3FN", -math.inf, 0xFE),  # saturation
    ("f8E4M3FN", math.nan, 0x7F), ("f8E4M3FN", -0.0, 0x80),
    ("f8E5M2", 61440.0, 0x7B), ("f8E5M2", math.inf, 0x7B), ("f8E5M2", 2.0 ** -17, 0x00), ("f8E5M2", math.nan, 0x7F),
    ("f4E2M1FN", 0.25, 0x0), ("f4E2M1FN", 0.75, 0x2), ("f4E2M1FN", 5.0, 0x6), ("f4E2M1FN", 7.0, 0x7),
    ("f4E2M1FN", -1e9, 0xF),
    # E8M0 has no zero: 0 and anything below 2^-127 is the smallest code (the zero padding of a scale tile;
    # it was 0xFE, 2^127, through a wrapped-around index)
    ("f8E8M0FNU", 0.0, 0x00), ("f8E8M0FNU", 2.0 ** -140, 0x00), ("f8E8M0FNU", 1e39, 0xFE)])
def test_encode(fmt, x, code):
    assert encode(x, fmt) == code


def test_nan_has_no_e2m1_code_and_encodes_as_zero():
    assert encode(math.nan, "f4E2M1FN") == 0


@pytest.mark.parametrize("fmt", ["f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN"])
def test_every_finite_code_round_trips(fmt):
    for c in range(16 if fmt == "f4E2M1FN" else 256):
        v = decode(c, fmt)
        if math.isfinite(v):
            assert encode(v, fmt) == c, (fmt, c)
