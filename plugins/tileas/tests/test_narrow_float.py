"""8- and 4-bit floats (f8E4M3FN, f8E5M2, f8E8M0FNU, f4E2M1FN) through tileas: SM floors, the cvt
instructions, numbers.

Registers hold the codes as i8; ``ftof`` goes through ``cvt.rn.f16x2.<f8>x2`` / ``cvt.rn.satfinite.<f8>x2.f32``
(nearest even, saturating), block scales and E2M1 through integer ops. Numbers are checked in the emulator
(``tilecore.emulate``, whose cvt model uses :mod:`tilecore.narrow_floats`) against that codec;
arrays of 8-bit floats are passed as uint8 codes, arrays of E2M1 as bytes holding two codes each.
"""

from __future__ import annotations

import math
import os
import tempfile

import cuda.tile as ct
import cutile_kernels as ck
import numpy as np
import pytest
from test_e2e_numeric import arr

from tilecore.compiler import compile_file
from tilecore.errors import TilecoreError
from tilecore.narrow_floats import decode, encode

emulate = pytest.importorskip("tilecore.emulate")
BLOCK = (128, 1, 1)


@ct.kernel
def e4m3_to_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32))


@ct.kernel
def e5m2_to_f16(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float16))


@ct.kernel
def f32_to_e4m3(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float8_e4m3fn))


@ct.kernel
def f32_to_e5m2(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float8_e5m2))


@ct.kernel
def e8m0_to_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32))


@ct.kernel
def mma_f8(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    x = ct.load(a, index=(i, 0), shape=(TM, TK))
    y = ct.load(b, index=(0, j), shape=(TK, TN))
    ct.store(c, index=(i, j), tile=ct.mma(x, y, ct.full((TM, TN), 0, dtype=ct.float32)))


@ct.kernel
def e2m1_to_f32(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float32))


@ct.kernel
def e2m1_copy(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)))


@ct.kernel
def e2m1_to_e4m3(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float8_e4m3fn))


@ct.kernel
def f32_to_e2m1(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float4_e2m1fn))


@ct.kernel
def f32_to_e2m1_2d(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(i, j), tile=ct.astype(ct.load(x, index=(i, j), shape=(TM, TN)), ct.float4_e2m1fn))


KERNELS = {
    "e4m3_to_f32": (e4m3_to_f32, ["f8e4m3[1]", "f32[1]", 128]),
    "e5m2_to_f16": (e5m2_to_f16, ["f8e5m2[1]", "f16[1]", 128]),
    "f32_to_e4m3": (f32_to_e4m3, ["f32[1]", "f8e4m3[1]", 128]),
    "f32_to_e5m2": (f32_to_e5m2, ["f32[1]", "f8e5m2[1]", 128]),
    "e8m0_to_f32": (e8m0_to_f32, ["f8e8m0[1]", "f32[1]", 128]),
    "mma_f8": (mma_f8, ["f8e4m3[2]", "f8e4m3[2]", "f32[2]", 16, 16, 32]),
    # the corpus kernel's block-scaled MMA with small tiles (two scale blocks along K)
    "mma_scaled_small": (ck.mma_scaled, ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 16, 16, 64, 32]),
    "e2m1_to_f32": (e2m1_to_f32, ["f4[1]", "f32[1]", 128]),
    "e2m1_copy": (e2m1_copy, ["f4[1]", "f4[1]", 128]),
    "f32_to_e2m1": (f32_to_e2m1, ["f32[1]", "f4[1]", 128]),
    "e2m1_to_e4m3": (e2m1_to_e4m3, ["f4[1]", "f8e4m3[1]", 128]),
    "f32_to_e2m1_2d": (f32_to_e2m1_2d, ["f32[2]", "f4[2]", 4, 16]),
    # NVFP4: E2M1 operands, one E4M3 scale per 16 elements of K
    "mma_scaled_nvfp4": (ck.mma_scaled, ["f4[2]", "f8e4m3[2]", "f4[2]", "f8e4m3[2]", "f32[2]", 16, 16, 64, 16]),
}
_DIR = tempfile.mkdtemp(prefix="tileas-f8-")


def path(name: str) -> str:
    p = os.path.join(_DIR, f"{name}.tileirbc")
    return p if os.path.exists(p) else ck.export_spec(*KERNELS[name], name, p)


def run(name, sm, grid, args):
    res = compile_file(path(name), sm)
    emulate.launch(res.module, name, grid, BLOCK, args)


def same(got, ref) -> bool:
    return got == ref or (math.isnan(got) and math.isnan(ref))


# -- SM floors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,sm,typ,floor", [("e4m3_to_f32", "sm_80", "f8E4M3FN", 89),
                                               ("f32_to_e5m2", "sm_86", "f8E5M2", 89),
                                               ("e8m0_to_f32", "sm_90a", "f8E8M0FNU", 100),
                                               ("e2m1_to_f32", "sm_90a", "f4E2M1FN", 100)])
def test_8bit_float_below_its_sm_floor_is_rejected_at_the_first_use(name, sm, typ, floor):
    with pytest.raises(TilecoreError) as ei:
        compile_file(path(name), sm)
    assert ei.value.message == (f"Incompatibility with architecture '{sm}': unsupported type '{typ}' "
                                f"(it needs sm_{floor} or newer)")
    assert ei.value.location.endswith(".py:" + ei.value.location.rsplit(".py:", 1)[1])  # file:line:col
    assert "test_narrow_float.py" in ei.value.location


# -- emitted instructions -------------------------------------------------------------------------
def test_conversions_use_the_paired_cvt_instructions():
    stage4 = str(compile_file(path("e4m3_to_f32"), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert "nvvm.convert.f8x2.to.f16x2" in stage4 and "vector<2xi8>(f8E4M3FN) -> vector<2xf16>" in stage4
    assert "f8E4M3FN" not in stage4.replace("(f8E4M3FN)", "")  # registers hold i8 codes
    enc = str(compile_file(path("f32_to_e5m2"), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert "nvvm.convert.f32x2.to.f8x2" in enc
    assert "{rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16(f8E5M2)" in enc
    for name, sm, instr in [("e4m3_to_f32", "sm_90a", "cvt.rn.f16x2.e4m3x2"),
                            ("e5m2_to_f16", "sm_100a", "cvt.rn.f16x2.e5m2x2"),
                            ("f32_to_e4m3", "sm_90a", "cvt.rn.satfinite.e4m3x2.f32"),
                            ("f32_to_e5m2", "sm_100a", "cvt.rn.satfinite.e5m2x2.f32"),
                            ("e2m1_to_f32", "sm_100a", "cvt.rn.f16x2.e2m1x2"),
                            ("f32_to_e2m1", "sm_100a", "cvt.rn.satfinite.e2m1x2.f32")]:
        res = compile_file(path(name), sm)
        assert res.artifacts["cubin"][:4] == b"\x7fELF"  # ptxas accepted it
        ptx = "\n".join(res.artifacts["ptx"].values())
        assert instr in ptx, name


# -- numbers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,fmt,out_dtype", [("e4m3_to_f32", "f8E4M3FN", np.float32),
                                                ("e5m2_to_f16", "f8E5M2", np.float16)])
def test_every_code_decodes_exactly(name, fmt, out_dtype):
    codes = np.arange(256, dtype=np.uint8)
    out = np.zeros(256, out_dtype)
    run(name, "sm_90a", (2, 1, 1), arr(codes) + arr(out))
    for c in range(256):
        assert same(float(out[c]), decode(c, fmt)), (c, out[c])


@pytest.mark.parametrize("name,fmt", [("f32_to_e4m3", "f8E4M3FN"), ("f32_to_e5m2", "f8E5M2")])
def test_encoding_rounds_to_nearest_even_and_saturates(name, fmt):
    finite = [decode(c, fmt) for c in range(256) if math.isfinite(decode(c, fmt))]
    special = [1e9, -1e9, math.inf, -math.inf, math.nan, 1.0625, 1.1875, 2.0 ** -10, 3 * 2.0 ** -10, 449.0, 464.0,
               -0.0, 61440.0, 2.0 ** -17]
    rng = np.random.default_rng(7)
    x = np.array(finite + special + list(rng.normal(0, 64, 200)), np.float32)
    y = np.zeros(len(x), np.uint8)
    run(name, "sm_90a", (-(-len(x) // 128), 1, 1), arr(x) + arr(y))
    want = [encode(float(v), fmt) for v in x]
    assert [int(v) for v in y] == want
    if fmt == "f8E4M3FN":  # a few values spelled out: ties to even, saturation, NaN
        assert [encode(v, fmt) for v in (1.0625, 1.1875, 464.0, math.inf, -math.inf, math.nan)] == \
               [0x38, 0x3A, 0x7E, 0x7E, 0xFE, 0x7F]


def test_block_scale_codes_decode_to_powers_of_two():
    codes = np.arange(256, dtype=np.uint8)
    out = np.zeros(256, np.float32)
    run("e8m0_to_f32", "sm_100a", (2, 1, 1), arr(codes) + arr(out))
    assert out[127] == 1.0 and out[128] == 2.0 and out[0] == np.float32(2.0 ** -127) and math.isnan(out[255])
    for c in range(255):
        assert out[c] == np.float32(2.0 ** (c - 127))


def _codes(rng, shape, fmt="f8E4M3FN", scale=2.0):
    return np.array([encode(float(v), fmt) for v in rng.normal(0, scale, int(np.prod(shape)))],
                    np.uint8).reshape(shape)


def _values(codes, fmt):
    return np.vectorize(lambda c: decode(int(c), fmt))(codes)


def _check_dot(got, a, b):
    ref = a @ b
    bound = a.shape[1] * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b)) + 1e-30
    assert np.all(np.abs(got - ref) <= bound), float(np.max(np.abs(got - ref) / bound))


def test_f8_mma_runs_on_the_cuda_cores():
    rng = np.random.default_rng(3)
    a, b = _codes(rng, (32, 32)), _codes(rng, (32, 32))
    c = np.zeros((32, 32), np.float32)
    run("mma_f8", "sm_90a", (2, 2, 1), arr(a) + arr(b) + arr(c))
    _check_dot(c, _values(a, "f8E4M3FN"), _values(b, "f8E4M3FN"))


def test_block_scaled_mma_matches_numpy():
    """acc + (A * scale_A) @ (B * scale_B), one E8M0 scale per 32 elements of K (two blocks here)."""
    rng = np.random.default_rng(5)
    a, b = _codes(rng, (32, 64)), _codes(rng, (64, 32))
    sa = rng.integers(118, 136, (32, 2)).astype(np.uint8)
    sb = rng.integers(118, 136, (2, 32)).astype(np.uint8)
    c = np.zeros((32, 32), np.float32)
    run("mma_scaled_small", "sm_100a", (2, 2, 1), arr(a) + arr(sa) + arr(b) + arr(sb) + arr(c))
    av = _values(a, "f8E4M3FN") * np.repeat(_values(sa, "f8E8M0FNU"), 32, axis=1)
    bv = _values(b, "f8E4M3FN") * np.repeat(_values(sb, "f8E8M0FNU"), 32, axis=0)
    _check_dot(c, av, bv)


# -- E2M1 (4-bit, two per byte) ---------------------------------------------------------------------
def packed(codes: np.ndarray) -> list:
    """An E2M1 array parameter: bytes holding two codes each (element 2i in the low half of byte i),
    then the shape and strides in elements."""
    flat = np.asarray(codes, np.uint8).reshape(-1)
    data = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
    strides = [int(np.prod(codes.shape[d + 1:])) for d in range(codes.ndim)]
    return [data, *[np.int32(d) for d in codes.shape], *[np.int32(s) for s in strides]]


def test_e2m1_codes_unpack_and_decode():
    """200 elements (a partial second tile), every code: nibble order, sign, the subnormal 0.5."""
    codes = np.arange(200) % 16
    out = np.zeros(200, np.float32)
    run("e2m1_to_f32", "sm_100a", (2, 1, 1), packed(codes) + arr(out))
    assert list(out[:16]) == [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    assert [decode(int(c), "f4E2M1FN") for c in codes] == list(out)


def unpacked(data: np.ndarray, n: int) -> list:
    return [int(data[i // 2] >> (4 * (i % 2)) & 15) for i in range(n)]


def test_e2m1_copy_keeps_every_code():
    codes = np.arange(256) % 16
    out = np.zeros(128, np.uint8)
    run("e2m1_copy", "sm_100a", (2, 1, 1), packed(codes) + [out, np.int32(256), np.int32(1)])
    assert unpacked(out, 256) == list(codes)


def test_e2m1_to_e4m3_goes_through_f32_exactly():
    codes = np.arange(128) % 16
    out = np.zeros(128, np.uint8)
    run("e2m1_to_e4m3", "sm_100a", (1, 1, 1), packed(codes) + arr(out))
    assert [int(c) for c in out] == [encode(decode(int(c), "f4E2M1FN"), "f8E4M3FN") for c in codes]


def test_quantizing_to_e2m1_rounds_saturates_and_spares_the_neighbours():
    """201 elements: the last byte's upper half is not the kernel's (it keeps its 0xF); ties to even,
    saturation at 6, -0.0 and NaN (+0)."""
    special = [0.25, 0.75, 1.25, 2.5, 5.0, 7.0, -1e9, -0.0, math.nan, math.inf]
    rng = np.random.default_rng(13)
    x = np.array(special + list(rng.normal(0, 3, 191)), np.float32)
    out = np.full(101, 0xFF, np.uint8)
    run("f32_to_e2m1", "sm_100a", (2, 1, 1), arr(x) + [out, np.int32(201), np.int32(1)])
    assert unpacked(out, 201) == [encode(float(v), "f4E2M1FN") for v in x]
    assert out[100] >> 4 == 0xF
    assert unpacked(out, 10) == [0x0, 0x2, 0x2, 0x4, 0x6, 0x7, 0xF, 0x8, 0x0, 0x7]


def test_quantizing_rows_of_odd_length_packs_across_rows():
    """8 x 33 elements, 4 x 16 tiles: odd rows start in the middle of a byte (half-byte atomics), partial
    tiles at the right edge; the array's bytes end up exactly as numpy packs them."""
    rng = np.random.default_rng(17)
    x = rng.normal(0, 3, (8, 33)).astype(np.float32)
    out = np.zeros((8 * 33 + 1) // 2, np.uint8)
    ys = [out, np.int32(8), np.int32(33), np.int32(33), np.int32(1)]
    run("f32_to_e2m1_2d", "sm_100a", (2, 3, 1), arr(x) + ys)
    assert unpacked(out, 8 * 33) == [encode(float(v), "f4E2M1FN") for v in x.reshape(-1)]
    ptx = "\n".join(compile_file(path("f32_to_e2m1_2d"), "sm_100a").artifacts["ptx"].values())
    assert "cvt.rn.satfinite.e2m1x2.f32" in ptx and "atom.global.and.b32" in ptx and "st.global.b8" in ptx


def test_nvfp4_block_scaled_mma_matches_numpy():
    rng = np.random.default_rng(11)
    a, b = _codes(rng, (16, 64), "f4E2M1FN"), _codes(rng, (64, 16), "f4E2M1FN")
    sa = np.array([encode(float(v), "f8E4M3FN") for v in rng.uniform(0.1, 4, 16 * 4)], np.uint8).reshape(16, 4)
    sb = np.array([encode(float(v), "f8E4M3FN") for v in rng.uniform(0.1, 4, 4 * 16)], np.uint8).reshape(4, 16)
    c = np.zeros((16, 16), np.float32)
    run("mma_scaled_nvfp4", "sm_100a", (1, 1, 1), packed(a) + arr(sa) + packed(b) + arr(sb) + arr(c))
    av = _values(a, "f4E2M1FN") * np.repeat(_values(sa, "f8E4M3FN"), 16, axis=1)
    bv = _values(b, "f4E2M1FN") * np.repeat(_values(sb, "f8E4M3FN"), 16, axis=0)
    _check_dot(c, av, bv)


@ct.kernel
def e2m1_bytes_round_trip(x, packed, back, TILE: ct.Constant[int]):
    """f32 -> E2M1 -> ``pack_to_bytes`` (stored as bytes) and the bytes -> ``unpack_from_bytes`` -> f32."""
    bid = ct.bid(0)
    q = ct.astype(ct.load(x, index=(bid,), shape=(TILE,)), ct.float4_e2m1fn)
    by = ct.pack_to_bytes(q)
    ct.store(packed, index=(bid,), tile=by)
    ct.store(back, index=(bid,), tile=ct.astype(ct.unpack_from_bytes(by, ct.float4_e2m1fn), ct.float32))


def test_e2m1_pack_to_bytes_puts_two_codes_in_a_byte():
    """``pack_to_bytes`` of an E2M1 tile is two codes a byte (element 2k in the low half of byte k), as the array
    holds them; ``unpack_from_bytes`` takes them back out. Found by tests/test_thirdparty_kernels4.py's NVFP4
    quantisation kernel: the shared-memory exchange read one byte per code (the i8 register each code is held in),
    so the bytes were the codes themselves and half the tile was lost."""
    import tilecore.cutile as tc

    x = np.array([0.5, 1, 1.5, 2, 3, 4, 6, -1] * 4, np.float32)
    packed_out, back = np.zeros(16, np.uint8), np.zeros(32, np.float32)
    tc.launch(None, (1,), e2m1_bytes_round_trip, (x, packed_out, back, 32), gpu_name="sm_100a")
    assert [hex(v) for v in packed_out[:4]] == ["0x21", "0x43", "0x65", "0xa7"]
    assert unpacked(packed_out, 32) == [encode(float(v), "f4E2M1FN") for v in x]
    np.testing.assert_array_equal(back, x)
