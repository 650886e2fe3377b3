"""Kernels written the way an outside cuTile author writes them, each a regression test of a bug found by
running such kernels (the ``tests/fuzz`` generator did not draw the feature): compiled by tilecore for
sm_80 / sm_90a / sm_100a, run in the CPU emulator (``tilecore.cutile.launch`` on numpy arrays) and checked
against numpy on sizes that are not tile multiples.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")

import tilecore.cutile as tc  # noqa: E402

SMS = ["sm_80", "sm_90a", "sm_100a"]
TILE = 32


# ------------------------------------------------------------------------------ atomic_cas on float arrays
@ct.kernel
def cas_float(arr, expected, desired, old, TILE: ct.Constant[int]):
    b = ct.bid(0)
    i = ct.arange(TILE, dtype=ct.int32) + b * TILE
    e = ct.load(expected, index=(b,), shape=(TILE,))
    d = ct.load(desired, index=(b,), shape=(TILE,))
    ct.store(old, index=(b,), tile=ct.atomic_cas(arr, i, e, d))


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_atomic_cas_on_floats_swaps_bit_patterns(sm, dt):
    """``llvm.cmpxchg`` takes integers only: a float CAS failed LLVM verification ('operand #1 must be
    signless integer'); tileiras compiles it. It is a bitwise compare (PTX ``atom.cas.b32`` / ``.b64``):
    -0.0 does not match 0.0."""
    n = 3 * TILE
    arr = (np.arange(n) * 0.5).astype(dt)
    arr[5] = -0.0
    expected = np.where(np.arange(n) % 2 == 0, arr, 7.25).astype(dt)
    expected[5] = 0.0
    desired = (np.arange(n) * -3.0).astype(dt)
    old = np.zeros(n, dt)
    want = np.where(np.arange(n) % 2 == 0, desired, arr)
    want[5] = -0.0
    tc.launch(None, (3,), cas_float, (a := arr.copy(), expected, desired, old, TILE), gpu_name=sm)
    np.testing.assert_array_equal(old, arr)
    np.testing.assert_array_equal(a, want)
    assert np.signbit(a[5])


# ------------------------------------------------------------------------------ directed rounding modes
def _rounded_ops(mode):
    narrowing = mode if mode == ct.RoundingMode.RZ else ct.RoundingMode.RN  # cuTile: f32 -> f16 is RN or RZ

    @ct.kernel
    def rounded_ops(x, y, add, sub, mul, div, sqrt, narrow, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        u = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(add, index=(b,), tile=ct.add(t, u, rounding_mode=mode))
        ct.store(sub, index=(b,), tile=ct.sub(t, u, rounding_mode=mode))
        ct.store(mul, index=(b,), tile=ct.mul(t, u, rounding_mode=mode))
        ct.store(div, index=(b,), tile=ct.truediv(t, u, rounding_mode=mode))
        ct.store(sqrt, index=(b,), tile=ct.sqrt(ct.abs(t), rounding_mode=mode))
        half = ct.astype(t, ct.float16, rounding_mode=narrowing) if t.dtype != ct.float16 else t
        ct.store(narrow, index=(b,), tile=ct.astype(half, narrow.dtype))
    return rounded_ops


def _round_exact(q, dt, mode):
    """``q`` (a Fraction) rounded to ``dt`` toward zero ('rz'), -inf ('rm') or +inf ('rp'), by search."""
    from fractions import Fraction
    big = np.finfo(dt).max
    if abs(q) > Fraction(float(big)):  # past the largest finite value: it, or infinity away from zero
        keep = mode == "rz" or (mode == "rm") == (q > 0)
        return dt(np.sign(float(q)) * (big if keep else np.inf))
    r = dt(float(q))
    up, down = dt(np.inf), dt(-np.inf)
    while Fraction(float(r)) > q:
        r = np.nextafter(r, down)
    while Fraction(float(np.nextafter(r, up))) <= q:
        r = np.nextafter(r, up)
    # now r <= q < next(r): r is the rm result
    if Fraction(float(r)) == q or mode == "rm" or (mode == "rz" and q > 0):
        return r
    return np.nextafter(r, up)


def _sqrt_exact(v):
    """A Fraction within 2^-200 relative of sqrt(v) and never equal to it unless v is a square of a float."""
    from fractions import Fraction
    v = Fraction(float(v))
    if v == 0:
        return v
    s = Fraction(float(np.sqrt(float(v))))
    for _ in range(8):
        s = (s + v / s) / 2  # Newton from above: s >= sqrt(v)
    if s * s == v:
        return s
    return s - Fraction(1, 2**300) * s  # below the root's upper bound but above the next float down


@pytest.mark.parametrize("sm", SMS)
@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_directed_rounding_modes_round_as_asked(sm, mode, dt):
    """``rounding_mode=RZ / RM / RP`` of add / sub / mul / truediv / sqrt and of ``astype`` to f16 were
    dropped: every result was rounded to nearest (tileiras emits FADD.RZ, FMUL.RP, F2FP.RZ ...). Now
    stage 1 marks the op, stage 4 calls libdevice's ``__nv_fadd_rz`` ... (PTX ``add.rz.f32``), f16 computes
    in f32 and narrows in the same direction; the emulator gives those functions exact directed results.
    Checked bit for bit against exact rational arithmetic."""
    from fractions import Fraction
    if sm != "sm_80" and dt is not np.float32:
        pytest.skip("the lowering does not depend on the target: f64 / f16 on sm_80 only")
    rm = {"rz": ct.RoundingMode.RZ, "rm": ct.RoundingMode.RM, "rp": ct.RoundingMode.RP}[mode]
    rng = np.random.default_rng(11)
    n = 70
    x = (rng.standard_normal(n) * 3).astype(dt)
    y = (rng.standard_normal(n) * 3).astype(dt)
    x[:5] = [1.0, -1.0, 3.0, 65504.0 if dt is np.float16 else 1e5, 2.5]
    y[:5] = [3.0, 3.0, 1e-3, 7.0, -2.5]
    outs = [np.zeros(n, dt) for _ in range(5)] + [np.zeros(n, np.float32)]
    tc.launch(None, (3,), _rounded_ops(rm), (x, y, *outs, TILE), gpu_name=sm)
    fx, fy = [Fraction(float(v)) for v in x], [Fraction(float(v)) for v in y]
    with np.errstate(over="ignore"):
        want = [[_round_exact(a + b, dt, mode) for a, b in zip(fx, fy)],
                [_round_exact(a - b, dt, mode) for a, b in zip(fx, fy)],
                [_round_exact(a * b, dt, mode) for a, b in zip(fx, fy)],
                [_round_exact(a / b, dt, mode) for a, b in zip(fx, fy)],
                [_round_exact(_sqrt_exact(abs(v)), dt, mode) for v in x],
                [np.float32(v) if dt is np.float16 else np.float32(_round_exact(a, np.float16, mode))
                 if mode == "rz" else np.float32(np.float16(v)) for a, v in zip(fx, x)]]
    for name, got, w in zip(["add", "sub", "mul", "div", "sqrt", "astype f16"], outs, want):
        np.testing.assert_array_equal(got, np.array(w, got.dtype), err_msg=f"{name} {mode}")
    rn = (x.astype(np.float64) / y).astype(dt)
    assert (outs[3] != rn).any()  # the inputs do tell a directed rounding from rounding to nearest
    assert np.signbit(outs[0][4]) == (mode == "rm")  # 2.5 + -2.5: -0 rounding toward -inf, else +0 (IEEE 754 6.3)


def test_directed_rounding_reaches_the_ptx():
    """The PTX of the f32 kernel has the rounding modifiers (libdevice's functions inlined), as tileiras' SASS
    has FADD.RZ / FMUL.RZ ...; ptxas assembles it."""
    k = tc.compile(_rounded_ops(ct.RoundingMode.RZ), ("f32[1]",) * 8 + (TILE,), gpu_name="sm_90a")
    for ins in ("add.rz.f32", "mul.rz.f32", "div.rz.f32", "sqrt.rz.f32"):
        assert ins in k.ptx, ins
    assert "add.rn.f32" not in k.ptx and len(k.cubin) > 0


# ------------------------------------------------------------------------------ a kernel named like a libm function
@ct.kernel
def fmod(x, y, r, TILE: ct.Constant[int]):  # the name is the point
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    u = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(r, index=(b,), tile=t % ct.where(u == 0, 1.0, u))


def test_a_kernel_named_fmod_runs_in_the_emulator():
    """The f64 remainder's libdevice body calls libm's ``fmod``; a kernel called ``fmod`` had the same symbol in
    the emulator's host module ("internal error in the emulator's helper text: 'llvm.call' op incorrect number
    of operands (2) for callee (expecting: 4)"). The kernel has a reserved name on the host now."""
    rng = np.random.default_rng(3)
    x = (rng.integers(-50, 50, 70) * 0.25).astype(np.float64)
    y = (rng.choice([-1, 1], 70) * rng.integers(1, 8, 70) * 0.5).astype(np.float64)
    r = np.zeros(70)
    tc.launch(None, (3,), fmod, (x, y, r, TILE))
    np.testing.assert_array_equal(r, np.mod(x, y))


# ------------------------------------------------------------------------------ early return
@ct.kernel
def guarded_copy(x, y, n: int, TILE: ct.Constant[int]):
    b = ct.bid(0)
    if b * TILE >= n:
        return
    ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(TILE,)) + 1)


@ct.kernel
def return_in_loop(x, y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for k in range(4):
        t = ct.load(x, index=(b, k), shape=(TILE, 1)).reshape((TILE,))
        if ct.max(t) > 1.5:
            ct.store(y, index=(b,), tile=acc - 100.0)
            return
        acc = acc + t
    ct.store(y, index=(b,), tile=acc)


@ct.kernel
def return_nested(x, y, n: int, m: int, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,))
    if b >= 1:
        t = t * 2
        if b >= n:
            if b == m:
                ct.store(y, index=(b,), tile=t * 0 - 1)
            return
        t = t + 1
    else:
        if b == 5:
            return
        s = t - 1  # an if result used after the if
        t = s
    ct.store(y, index=(b,), tile=t)


def _matmul_tile(a, b, c, i, j, TM, TN, TK):
    """c's tile (i, j) = a @ b over K tiles (f32 accumulator; zero padding)."""
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], TK)):
        acc = ct.mma(ct.load(a, (i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                     ct.load(b, (k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO), acc)
    ct.store(c, (i, j), tile=acc)


@ct.kernel
def guarded_matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    if i * TM >= a.shape[0]:
        return
    _matmul_tile(a, b, c, i, j, TM, TN, TK)


@pytest.mark.parametrize("sm", SMS)
def test_early_return_from_ifs(sm):
    """``if ...: return`` (at any depth of ifs; cuTile turns one inside a loop into a flag and such an if after
    the loop) left the return inside an ``scf.if`` ("'scf.if' op expects regions to end with 'scf.yield',
    found 'nv_tileaa_term.return'"); tileiras compiles it. Stage 1 now lowers the ops after such an if into
    the branches that fall through."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(70).astype(np.float32)
    y = np.full(70, 7.0, np.float32)
    tc.launch(None, (5,), guarded_copy, (x, y, 40, TILE), gpu_name=sm)  # blocks 2.. return at once
    want = np.full(70, 7.0, np.float32)
    want[:64] = x[:64] + 1
    np.testing.assert_array_equal(y, want)

    x2 = rng.standard_normal((96, 4)).astype(np.float32)
    y2 = np.zeros(96, np.float32)
    tc.launch(None, (3,), return_in_loop, (x2, y2, TILE), gpu_name=sm)
    for b in range(3):
        rows, acc, want = x2[32 * b:32 * b + 32], np.zeros(32, np.float32), None
        for k in range(4):
            if rows[:, k].max() > 1.5:
                want = acc - 100
                break
            acc = acc + rows[:, k]
        np.testing.assert_allclose(y2[32 * b:32 * b + 32], acc if want is None else want, rtol=1e-6)

    x3 = rng.standard_normal(128).astype(np.float32)
    y3 = np.full(128, 7.0, np.float32)
    tc.launch(None, (4,), return_nested, (x3, y3, 2, 3, TILE), gpu_name=sm)
    want = np.full(128, 7.0, np.float32)
    want[:32] = x3[:32] - 1
    want[32:64] = x3[32:64] * 2 + 1
    want[96:] = -1.0  # block 2 returns without storing, block 3 stores -1 first
    np.testing.assert_array_equal(y3, want)


@pytest.mark.parametrize("sm", SMS)
def test_guarded_matmul_keeps_its_tensor_core_path(sm):
    """The usual ``if pid * TM >= M: return`` guard: right numbers (grid rows past M return), and the K loop
    inside the guard's ``scf.if`` still takes the same MMA path (wgmma + TMA on sm_90a, tcgen05 on sm_100a,
    mma.sync + cp.async on sm_80)."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((100, 96)).astype(np.float16)
    b = rng.standard_normal((96, 70)).astype(np.float16)
    c = np.zeros((100, 70), np.float32)
    args = (a, b, c, 64, 64, 32)
    tc.launch(None, (3, 2), guarded_matmul, args, gpu_name=sm)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-3)
    ptx = tc.compile(guarded_matmul, args, gpu_name=sm).ptx
    marker = {"sm_80": "mma.sync", "sm_90a": "wgmma.mma_async", "sm_100a": "tcgen05.mma"}[sm]
    assert marker in ptx
    assert ("cp.async.bulk.tensor" in ptx) == (sm != "sm_80")


# ------------------------------------------------------------------------------ lists of arrays
@ct.kernel
def weighted_sum(xs, y, n: int, TILE: ct.Constant[int]):
    b = ct.bid(0)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for i in range(n):
        acc = acc + ct.load(xs[i], index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO) * (i + 1)
    ct.store(y, index=(b,), tile=acc)


@ct.kernel
def grouped_matmul(As: Annotated[list, ct.ListAnnotation(element=ct.ArrayAnnotation())], Bs, Cs,
                   TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j, g = ct.bid(0), ct.bid(1), ct.bid(2)
    a, b, c = As[g], Bs[g], Cs[g]
    _matmul_tile(a, b, c, i, j, TM, TN, TK)


@pytest.mark.parametrize("sm", SMS)
def test_list_of_arrays_arguments(sm):
    """A list-of-arrays parameter (``xs[i]`` in the kernel; cuTile passes a table of int64 words, one row per
    array: base pointer, extents, strides, and its length) was refused by tilecore.cutile ("not supported");
    tilecore and tileiras compile such bytecode. The CPU path builds the table, the emulator places every item
    in device memory of its own (bounds-checked) and writes its address into its row; items are written back,
    strided views included."""
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(70).astype(np.float32) for _ in range(3)]
    y = np.zeros(70, np.float32)
    tc.launch(None, (3,), weighted_sum, (xs, y, 3, TILE), gpu_name=sm)
    np.testing.assert_allclose(y, xs[0] + 2 * xs[1] + 3 * xs[2], rtol=1e-6, atol=1e-6)

    As = [rng.standard_normal((40, 24)).astype(np.float16), rng.standard_normal((33, 24)).astype(np.float16)]
    Bs = [rng.standard_normal((24, 30)).astype(np.float16) for _ in range(2)]
    wide = np.zeros((33, 40), np.float32)
    Cs = [np.zeros((40, 30), np.float32), wide[:, 5:35]]  # the second output is a strided view
    tc.launch(None, (2, 1, 2), grouped_matmul, (As, Bs, Cs, 32, 32, 16), gpu_name=sm)
    for a, b, c in zip(As, Bs, Cs):
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert not wide[:, :5].any() and not wide[:, 35:].any()


def test_list_of_arrays_errors():
    """Items of different element types, a list for a plain array parameter's specialisation, and a list on the
    GPU path are errors that say so."""
    from tilecore.errors import TilecoreError

    x = np.zeros(64, np.float32)
    with pytest.raises(TilecoreError, match="item 1 is int32\\[1\\], item 0 is float32\\[1\\]"):
        tc.launch(None, (2,), weighted_sum, ([x, np.zeros(64, np.int32)], x.copy(), 2, TILE))
    k = tc.compile(weighted_sum, ([x, x.copy()], x.copy(), 2, TILE))
    with pytest.raises(TilecoreError, match="argument 'xs' must be a list of arrays"):
        k.launch(None, 2, (x, x.copy(), 2, TILE))
    with pytest.raises(TilecoreError, match="CPU path only"):
        from tilecore.cutile.gpu import parameters

        parameters(k.contract, k.bind(([x, x.copy()], x.copy(), 2, TILE)))


# ------------------------------------------------------------------------------ tuple constants and tuple arguments
@ct.kernel
def tile_shape_constant(x, y, SHAPE: ct.Constant[tuple]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), tile=ct.load(x, (i, j), shape=SHAPE, padding_mode=ct.PaddingMode.ZERO) * 2)


@ct.kernel
def tuple_arguments(xy, out, dims: tuple[int, float], TILE: ct.Constant[int]):
    x, (y, s) = xy
    n, scale = dims
    b = ct.bid(0)
    t = ct.load(x, (b,), shape=(TILE,)) + ct.load(y, (b,), shape=(TILE,)) * s
    ct.store(out, (b,), tile=t * scale + n)


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a"])
def test_tuple_constants_and_tuple_arguments(sm):
    """``ct.Constant`` means a constant of any type: a tile shape passed as a tuple was refused ('must be a bool,
    int or float'); a tuple argument (of arrays, scalars, tuples; annotated ``tuple[int, float]`` or not) was
    refused too. cuTile exports both with calling convention ``cutile_python_v2`` (arrays and scalars as in v1,
    a tuple's leaves one after the other), which tilecore compiles; tilecore.cutile now uses it where a tuple
    is involved and passes the leaves."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((70, 45)).astype(np.float32)
    y = np.zeros_like(x)
    tc.launch(None, (3, 3), tile_shape_constant, (x, y, (32, 16)), gpu_name=sm)
    np.testing.assert_array_equal(y, x * 2)

    a, b = rng.standard_normal(70).astype(np.float32), rng.standard_normal(70).astype(np.float32)
    out = np.zeros(70, np.float32)
    tc.launch(None, (3,), tuple_arguments, ((a, (b, 3.0)), out, (5, 0.5), TILE), gpu_name=sm)
    np.testing.assert_allclose(out, (a + b * np.float32(3)) * np.float32(0.5) + 5, rtol=1e-6)
    k = tc.compile(tuple_arguments, ((a, (b, 3.0)), out, (5, 0.5), TILE), gpu_name=sm)
    assert [p.name for p in k.contract.params][:8] == ["xy[0]"] * 3 + ["xy[1][0]"] * 3 + ["xy[1][1]", "out"]
    from tilecore.errors import TilecoreError
    with pytest.raises(TilecoreError, match=r"argument 'dims' is \(float32, float32\), the kernel was compiled for "
                                            r"\(int32, float32\)"):
        k.launch(None, 3, ((a, (b, 3.0)), out, (5.0, 0.5), TILE))


# ------------------------------------------------------------------------------ error locations
@ct.kernel
def fp8_cast_method(x, y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,)).astype(ct.float8_e4m3fn)  # the Tile method calls cuTile's stub
    ct.store(y, index=(b,), tile=t.astype(ct.float32))


def test_an_error_in_a_tile_method_names_the_users_line():
    """A rejected op written as a Tile method (``t.astype(ct.float8_e4m3fn)`` on sm_80) has the location
    callsite(cuTile's _stub.py at the user's line): the error named _stub.py:678; it names the kernel's line."""
    from tilecore.errors import TilecoreError

    x = np.zeros(64, np.float32)
    with pytest.raises(TilecoreError) as e:
        tc.launch(None, (2,), fp8_cast_method, (x, x.copy(), TILE), gpu_name="sm_80")
    line = fp8_cast_method._annotated_function.pyfunc.__code__.co_firstlineno + 3
    assert f"test_thirdparty_kernels.py:{line}:" in str(e.value) and "_stub.py" not in str(e.value)
    assert "unsupported type 'f8E4M3FN'" in str(e.value)


# ------------------------------------------------------------------------------ printf with many arguments
@ct.kernel
def debug_print(x, TILE: ct.Constant[int]):
    b = ct.bid(0)
    s = ct.sum(ct.load(x, index=(b,), shape=(TILE,)))
    ct.printf("blk %d: %d %d %d %d %d %d %d %d %d | %.1f %.1f %.1f\n", b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6,
              b + 7, b + 8, b + 9, s, s * 2, ct.astype(s, ct.float64))


def test_printf_with_more_than_eight_arguments(capfd):
    """A printf of 13 values was refused ('print with more than 8 arguments is not supported'; tileiras compiles
    40): nv_tileaa.print holds 64 now."""
    tc.launch(None, (2,), debug_print, (np.ones(8, np.float32), 4))
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == ["blk 0: 1 2 3 4 5 6 7 8 9 | 4.0 8.0 4.0", "blk 1: 2 3 4 5 6 7 8 9 10 | 4.0 8.0 4.0"]


def test_tuple_constant_from_the_command_line(tmp_path):
    """``tilecore run file.py::kernel --const SHAPE=(4,4)``: a tuple constant on the command line; a malformed
    one is a located error."""
    from support import run_cli

    (tmp_path / "k.py").write_text(
        "import cuda.tile as ct\n\n\n@ct.kernel\ndef scale(x, y, SHAPE: ct.Constant[tuple]):\n"
        "    i, j = ct.bid(0), ct.bid(1)\n"
        "    ct.store(y, (i, j), tile=ct.load(x, (i, j), shape=SHAPE, padding_mode=ct.PaddingMode.ZERO) * 2)\n")
    x = np.arange(120, dtype=np.float32).reshape(12, 10)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros_like(x))
    r = run_cli("run", "k.py::scale", "--grid", "3,3", "--arg", "x.npy", "--arg", "y.npy", "--const", "SHAPE=(4,4)",
                "--out-dir", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "y.npy"), x * 2)
    r = run_cli("run", "k.py::scale", "--grid", "3,3", "--arg", "x.npy", "--arg", "y.npy", "--const", "SHAPE=(4,x)",
                cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == "error: --const SHAPE: '(4,x)' is not a tuple of ints, floats, " \
                                                      "True or False"


# ------------------------------------------------------------------------------ conversion to e8m0 (block scales)
def _to_e8m0(mode):
    @ct.kernel
    def to_e8m0(x, y, TILE: ct.Constant[int]):
        b = ct.bid(0)
        s = ct.astype(ct.load(x, index=(b,), shape=(TILE,)), ct.float8_e8m0fnu, rounding_mode=mode)
        ct.store(y, index=(b,), tile=ct.astype(s, ct.float32))
    return to_e8m0


@pytest.mark.parametrize("mode", ["rz", "rp"])
def test_conversion_to_e8m0_rounds_to_a_power_of_two(mode):
    """``ct.astype(x, ct.float8_e8m0fnu, rounding_mode=RZ | RP)`` (an MX block scale; cuTile allows only these two)
    was refused on sm_100a ('conversion to f8E8M0FNU is not supported yet'); tileiras emits
    ``cvt.rp.satfinite.ue8m0x2.f32``. Now integer ops on the f32 bits: the power of two at or below (rz) / at or
    above (rp) x, saturated to [2^-127, 2^127]; NaN stays NaN; zero and negative values give the smallest scale."""
    x = np.array([1.0, 3.0, 0.75, 0.3, 1e-3, 100.0, 2.0**-127, 1.5 * 2.0**-127, 2.0**-140, 3.4e38, 2.0**127, np.inf,
                  8.0, 8.1, 7.9, 1.0000001, 0.0, -2.0, -0.0, np.nan], np.float32)
    y = np.zeros_like(x)
    rm = ct.RoundingMode.RZ if mode == "rz" else ct.RoundingMode.RP
    tc.launch(None, (1,), _to_e8m0(rm), (x, y, 32), gpu_name="sm_100a")
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(x.astype(np.float64))) if mode == "rz" else np.ceil(np.log2(x.astype(np.float64)))
    want = np.where(x > 0, 2.0 ** np.clip(e, -127, 127), 2.0**-127).astype(np.float32)
    want[np.isnan(x)] = np.nan
    np.testing.assert_array_equal(y, want)
    assert "ue8m0" not in tc.compile(_to_e8m0(rm), (x, y, 32), gpu_name="sm_100a").ptx  # integer ops (ptxas ok)
