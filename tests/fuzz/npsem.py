"""Numpy models of cuTile tile semantics, used by the generated reference functions.

The generated reference runs the kernel block by block: it loads the same (padded) tiles, applies
the same operations with these models and stores with the same clipping, so data movement inside a
tile (transpose, cat, scans, reductions over padded elements) is modelled exactly. bf16 and 8-bit
float values are held as float32 numbers that are exactly representable in the narrow type.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

from tilecore import narrow_floats

from .dtypes import DTYPES

# ------------------------------------------------------------------------------ narrow floats


def bf16_round(x) -> np.ndarray:
    """float32 -> nearest bf16 value (ties to even), as float32; NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def bf16_encode(x) -> np.ndarray:
    return (bf16_round(x).view(np.uint32) >> 16).astype(np.uint16)


def bf16_decode(bits) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def _code_table(fmt: str) -> np.ndarray:
    """Value of each of the 256 byte codes of ``fmt`` (a :mod:`tilecore.narrow_floats` format; NaN where
    the code is NaN; a 4-bit format's codes repeat every 16)."""
    return np.array([narrow_floats.decode(code, fmt) for code in range(256)], np.float64)


F8_TABLES = {"f8e4m3": _code_table("f8E4M3FN"), "f8e5m2": _code_table("f8E5M2")}
# block-scale formats (ct.mma_scaled): decoded only, the model never rounds to them
SCALED_TABLES = {"f8e8m0": _code_table("f8E8M0FNU"), "f4e2m1": _code_table("f4E2M1FN")}


def f8_decode(bits, key: str) -> np.ndarray:
    return F8_TABLES[key][np.asarray(bits, dtype=np.uint8)].astype(np.float32)


def f8_encode(x, key: str) -> np.ndarray:
    """Nearest code, ties to the even code, saturating to the largest finite value."""
    table = F8_TABLES[key]
    pos = np.arange(128)
    fin = pos[np.isfinite(table[pos])]
    vals = table[fin]
    order = np.argsort(vals, kind="stable")
    vals, codes = vals[order], fin[order]
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(x), vals[-1])
    hi = np.clip(np.searchsorted(vals, a), 0, len(vals) - 1)
    lo = np.clip(hi - 1, 0, len(vals) - 1)
    dlo, dhi = a - vals[lo], vals[hi] - a
    pick_hi = (dhi < dlo) | ((dhi == dlo) & (codes[hi] % 2 == 0))
    code = np.where(pick_hi, codes[hi], codes[lo]).astype(np.uint8)
    return np.where(np.signbit(x) & (code != 0), code | 0x80, code).astype(np.uint8)


def f8_round(x, key: str) -> np.ndarray:
    return f8_decode(f8_encode(x, key), key)


def r(x, key: str):
    """Round a computed value to element type ``key`` (the model's dtype for it)."""
    if key == "bf16":
        return bf16_round(x)
    if key in F8_TABLES:
        return f8_round(x, key)
    return np.asarray(x).astype(DTYPES[key].compute)


def decode(a: np.ndarray, key: str) -> np.ndarray:
    """An array as handed to the kernel -> the model's values."""
    if key == "bf16":
        return bf16_decode(a)
    if key in F8_TABLES:
        return f8_decode(a, key)
    if key in SCALED_TABLES:
        return SCALED_TABLES[key][np.asarray(a, dtype=np.uint8)].astype(np.float32)
    return a


def encode(a: np.ndarray, key: str) -> np.ndarray:
    """The model's values -> the kernel's storage."""
    if key == "bf16":
        return bf16_encode(a)
    if key in F8_TABLES:
        return f8_encode(a, key)
    return np.asarray(a).astype(DTYPES[key].storage)


# ------------------------------------------------------------------------------ blocks, tiles


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def blocks(grid):
    """Block coordinates in launch order (x fastest is irrelevant: blocks are independent)."""
    return itertools.product(*[range(g) for g in grid])


def _window(arr: np.ndarray, origin, shape, pad, dtype):
    out = np.full(shape, 0 if pad is None else pad, dtype=dtype)
    src, dst = [], []
    for o, s, n in zip(origin, shape, arr.shape):
        lo, hi = max(o, 0), min(o + s, n)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - o, hi - o))
    out[tuple(dst)] = arr[tuple(src)]
    return out


def load(arr: np.ndarray, index, shape, pad=None, order=None) -> np.ndarray:
    """``ct.load(arr, index, shape, order=order, padding_mode=pad)``: ``pad`` None is undetermined
    (the model fills zeros, which only positions never stored may see)."""
    view = np.transpose(arr, order) if order is not None else arr
    origin = [i * s for i, s in zip(index, shape)]
    return _window(view, origin, tuple(shape), pad, arr.dtype)


def store(arr: np.ndarray, index, tile, order=None) -> None:
    """``ct.store(arr, index, tile, order=order)``: out-of-bounds elements are dropped."""
    tile = np.asarray(tile)
    view = np.transpose(arr, order) if order is not None else arr
    shape = tile.shape
    src, dst = [], []
    for i, s, n in zip(index, shape, view.shape):
        o = i * s
        lo, hi = max(o, 0), min(o + s, n)
        if hi <= lo:
            return
        dst.append(slice(lo, hi))
        src.append(slice(lo - o, hi - o))
    view[tuple(dst)] = tile[tuple(src)].astype(arr.dtype)


def view_load(arr, index, shape, steps, pad=None) -> np.ndarray:
    """``arr.tiled_view(shape, traversal_steps=steps, padding_mode=pad).load(index)``."""
    origin = [i * st for i, st in zip(index, steps)]
    return _window(arr, origin, tuple(shape), pad, arr.dtype)


def view_atomic_add(arr, index, shape, steps, tile) -> None:
    """``arr.tiled_view(shape, traversal_steps=steps).atomic_store_add(index, tile)``."""
    origin = [i * st for i, st in zip(index, steps)]
    src, dst = [], []
    for o, s, n in zip(origin, shape, arr.shape):
        lo, hi = max(o, 0), min(o + s, n)
        if hi <= lo:
            return
        dst.append(slice(lo, hi))
        src.append(slice(lo - o, hi - o))
    arr[tuple(dst)] = (arr[tuple(dst)] + np.asarray(tile)[tuple(src)]).astype(arr.dtype)


def adv_load(arr, sparse_axis: int, idx, starts, lengths, pad=None) -> np.ndarray:
    """``ct.load_advanced_indexing``: axis ``sparse_axis`` indexed by the 1-D tile ``idx``, the other
    axes by ``Slice(start, length)`` (in axis order, sparse axis skipped); out of bounds -> pad."""
    idx = np.asarray(idx).astype(np.int64)
    shape = list(lengths)
    shape.insert(sparse_axis, len(idx))
    out = np.full(shape, 0 if pad is None else pad, dtype=arr.dtype)
    dense_axes = [a for a in range(arr.ndim) if a != sparse_axis]
    for pos in np.ndindex(*shape):
        src = []
        for a in range(arr.ndim):
            if a == sparse_axis:
                src.append(int(idx[pos[a]]))
            else:
                k = dense_axes.index(a)
                src.append(int(starts[k]) + pos[a])
        if all(0 <= s < n for s, n in zip(src, arr.shape)):
            out[pos] = arr[tuple(src)]
    return out


def adv_store(arr, sparse_axis: int, idx, starts, tile) -> None:
    """``ct.store_advanced_indexing``: out-of-bounds elements are dropped."""
    tile = np.asarray(tile)
    idx = np.asarray(idx).astype(np.int64)
    dense_axes = [a for a in range(arr.ndim) if a != sparse_axis]
    for pos in np.ndindex(*tile.shape):
        dst = []
        for a in range(arr.ndim):
            dst.append(int(idx[pos[a]]) if a == sparse_axis else int(starts[dense_axes.index(a)]) + pos[a])
        if all(0 <= d < n for d, n in zip(dst, arr.shape)):
            arr[tuple(dst)] = tile[pos]


def _accessed(arr, idx, mask):
    """The broadcast int64 indices and which of them a gather / scatter touches (in bounds and unmasked)."""
    idx = np.broadcast_arrays(*[np.asarray(i).astype(np.int64) for i in idx])
    ok = np.ones(idx[0].shape, bool)
    for i, n in zip(idx, arr.shape):
        ok &= (i >= 0) & (i < n)
    if mask is not None:
        ok &= np.broadcast_to(mask, ok.shape)
    return idx, ok


def gather(arr, idx, mask=None, pad=0):
    """``ct.gather(arr, idx, mask=mask, padding_value=pad)`` (indices broadcast; negative = out of bounds)."""
    idx, ok = _accessed(arr, idx, mask)
    out = np.full(ok.shape, pad, dtype=arr.dtype)
    out[ok] = arr[tuple(i[ok] for i in idx)]
    return out


def scatter(arr, idx, value, mask=None) -> None:
    """``ct.scatter(arr, idx, value, mask=mask)``."""
    idx, ok = _accessed(arr, idx, mask)
    value = np.broadcast_to(np.asarray(value), ok.shape)
    arr[tuple(i[ok] for i in idx)] = value[ok].astype(arr.dtype)


def atomic_rmw(kind: str, arr, idx, update) -> np.ndarray:
    """``ct.atomic_<kind>(arr, idx, update)`` applied element by element in index order; returns
    the old values (only meaningful where indices are distinct). Out-of-bounds indices: no-op."""
    idx, update = np.broadcast_arrays(np.asarray(idx).astype(np.int64), np.asarray(update, dtype=arr.dtype))
    shape = idx.shape
    idx, update = idx.reshape(-1), update.reshape(-1)
    old = np.zeros(idx.shape, arr.dtype)
    fn = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor, "xchg": lambda a, b: b}[kind]
    for n, i in enumerate(idx):
        if 0 <= i < arr.shape[0]:
            old[n] = arr[i]
            arr[i:i + 1] = fn(arr[i:i + 1], update[n:n + 1]).astype(arr.dtype)
    return old.reshape(shape)


def atomic_cas(arr, idx, expected, desired) -> np.ndarray:
    idx = np.asarray(idx).astype(np.int64)
    expected = np.broadcast_to(np.asarray(expected, dtype=arr.dtype), idx.shape)
    desired = np.broadcast_to(np.asarray(desired, dtype=arr.dtype), idx.shape)
    old = expected.copy()
    for pos in np.ndindex(*idx.shape):
        i = idx[pos]
        if 0 <= i < arr.shape[0]:
            old[pos] = arr[i]
            if arr[i] == expected[pos]:
                arr[i] = desired[pos]
    return old


# ------------------------------------------------------------------------------ arithmetic


def _step(v, key: str, up: bool):
    """The next value of element type ``key`` above (``up``) or below ``v`` (a model value)."""
    if key == "bf16":  # bf16 codes are the high halves of f32 codes: step there
        bits = bf16_encode(np.float32(v)).astype(np.int64)
        neg = bits >= 0x8000
        mag = bits & 0x7FFF
        if mag == 0:
            return np.float32(bf16_decode(np.uint16(0x0001 if up else 0x8001)))
        bits = bits + (1 if up != neg else -1)
        return np.float32(bf16_decode(np.uint16(bits)))
    t = DTYPES[key].compute
    return np.nextafter(t(v), t(np.inf) if up else t(-np.inf))


def _round_rational(q, key: str, mode: str):
    """The rational ``q`` rounded to element type ``key`` toward zero / -inf / +inf (``rz`` / ``rm`` / ``rp``) or to
    nearest with ties away from zero (``ra``); beyond the type's range: the largest finite value of its sign, or
    infinity when the mode rounds away from zero (RP above, RM below, RA)."""
    from fractions import Fraction
    top = Fraction(float(_step(np.inf, key, False)))  # the type's largest finite value
    if abs(q) > top:
        away = (mode == "rp" and q > 0) or (mode == "rm" and q < 0) or mode == "ra"
        return r((np.inf if away else float(top)) * (1 if q > 0 else -1), key)
    v = r(float(q), key)
    if not np.isfinite(v):  # q rounds to nearest beyond the range but is not beyond it
        v = _step(v, key, q < 0)
    while Fraction(float(v)) > q:
        v = _step(v, key, False)
    while np.isfinite(up := _step(v, key, True)) and Fraction(float(up)) <= q:
        v = up
    if Fraction(float(v)) == q:
        return v
    up = _step(v, key, True)  # v < q < up
    if mode == "ra":
        below, above = q - Fraction(float(v)), Fraction(float(up)) - q
        return up if above < below or (above == below and q > 0) else v
    return up if mode == "rp" or (mode == "rz" and q < 0) else v


def directed(op: str, x, y, mode: str, key: str):
    """``ct.add / sub / mul / truediv(x, y, rounding_mode=RZ | RM | RP)``: the exact result (rationals) rounded
    toward zero / -inf / +inf to element type ``key``, element by element. Results that are not finite
    rationals follow IEEE 754: an infinite or NaN operand and a division by zero give the IEEE result
    whatever the mode (exact), and a finite result beyond the type's range rounds to the largest finite
    value of its sign, or to infinity when the mode rounds away from zero (RP above, RM below)."""
    from fractions import Fraction
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    out = np.empty(x.shape, dtype=DTYPES[key].compute)
    ieee = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
    for pos in np.ndindex(*x.shape):
        af, bf = float(x[pos]), float(y[pos])
        if not (np.isfinite(af) and np.isfinite(bf)) or (op not in ieee and bf == 0.0):
            with np.errstate(all="ignore"):
                out[pos] = r(ieee.get(op, np.divide)(np.float64(af), np.float64(bf)), key)
            continue
        a, b = Fraction(af), Fraction(bf)
        q = a + b if op == "add" else a - b if op == "sub" else a * b if op == "mul" else a / b
        out[pos] = _round_rational(q, key, mode)
    return out


def directed_cast(x, key: str, mode: str):
    """``ct.astype(x, key, rounding_mode=RZ | RM | RP | RA)`` of float values: each value rounded to element type
    ``key`` in the mode's direction (NaN and infinities stay)."""
    from fractions import Fraction
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=DTYPES[key].compute)
    for pos in np.ndindex(*x.shape):
        f = float(x[pos])
        out[pos] = r(f, key) if not np.isfinite(f) else _round_rational(Fraction(f), key, mode)
    return out


def floordiv_f(x, y, key):
    """cuTile float ``//``: floor(x / y) (the quotient rounded first)."""
    return r(np.floor(r(x / y, key)), key)


def mod_f(x, y, key):
    """cuTile float ``%``: C fmod, then + y where its sign differs from y's (and it is not 0)."""
    m = r(np.fmod(x, y), key)
    fix = ((m < 0) != (y < 0)) & (m != 0)
    return np.where(fix, r(m + y, key), m)


def red(kind: str, x, axis: int, keepdims: bool, key: str):
    """sum / prod / max / min of a tile along ``axis`` in element type ``key`` (integers wrap;
    floats are summed in float64 and rounded once: the kernel's order differs, compared with a
    tolerance)."""
    x = np.asarray(x)
    if kind in ("max", "min"):  # NaN loses, as in cuTile's max / min reductions
        f = np.fmax if kind == "max" else np.fmin
        return f.reduce(x, axis=axis, keepdims=keepdims)
    f = np.sum if kind == "sum" else np.prod
    if DTYPES[key].is_int:
        return f(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    return r(f(x.astype(np.float64), axis=axis, keepdims=keepdims), key)


def arg(kind: str, x, axis: int, keepdims: bool):
    """argmax / argmin: first index of the extreme value, int32."""
    f = np.argmax if kind == "argmax" else np.argmin
    return f(np.asarray(x), axis=axis, keepdims=keepdims).astype(np.int32)


def scan(kind: str, x, axis: int, reverse: bool, key: str):
    """cumsum / cumprod along ``axis`` (optionally from the end)."""
    x = np.asarray(x)
    if reverse:
        x = np.flip(x, axis)
    f = np.cumsum if kind == "sum" else np.cumprod
    if DTYPES[key].is_int:
        out = f(x, axis=axis, dtype=x.dtype)
    else:
        out = r(f(x.astype(np.float64), axis=axis), key)
    return np.flip(out, axis) if reverse else out


def _along(x, axis: int, reverse: bool):
    """``x`` with ``axis`` first (a view), flipped when ``reverse``."""
    x = np.moveaxis(np.asarray(x), axis, 0)
    return x[::-1] if reverse else x


def fill_scan(x, axis: int, reverse: bool):
    """``ct.scan(x, axis, lambda a, b: ct.where(b != 0, b, a), 0, reverse=reverse)``: the last non-zero element up
    to each position (a reverse scan walks from the end: its accumulator, the elements above, is the left
    operand), 0 before the first."""
    src = _along(x, axis, reverse)
    out = np.zeros_like(src)
    acc = np.zeros_like(src[0])
    for i in range(src.shape[0]):
        acc = np.where(src[i] != 0, src[i], acc)
        out[i] = acc
    return np.moveaxis(out[::-1] if reverse else out, 0, axis)


def affine_scan(a, b, axis: int, reverse: bool):
    """The second component of ``ct.scan((a, b), axis, lambda a1, b1, a2, b2: (a1 * a2, a2 * b1 + b2), (1, 0),
    reverse=reverse)``: h_i = a_i * h_(i-1) + b_i from h = 0 (from the end when ``reverse``), in the element type
    of ``a`` / ``b`` (integers wrap)."""
    sa, sb = _along(a, axis, reverse), _along(b, axis, reverse)
    out = np.zeros_like(sb)
    h = np.zeros_like(sb[0])
    with np.errstate(over="ignore"):
        for i in range(sb.shape[0]):
            h = (sa[i] * h + sb[i]).astype(sb.dtype)
            out[i] = h
    return np.moveaxis(out[::-1] if reverse else out, 0, axis)


def running_argmax(x, axis: int, reverse: bool):
    """The second component of ``ct.scan((x, index), axis, take-b-when-strictly-greater, (-inf, 0), reverse)``:
    the index of the running maximum (ties keep the earlier element of the walk: the first forward, the last
    backward)."""
    src = _along(x, axis, reverse)
    n = src.shape[0]
    pos = np.arange(n)[::-1] if reverse else np.arange(n)
    out = np.zeros(src.shape, np.int32)
    best, at = src[0].copy(), np.full(src.shape[1:], pos[0], np.int32)
    for i in range(n):
        take = src[i] > best
        best, at = np.where(take, src[i], best), np.where(take, pos[i], at).astype(np.int32)
        out[i] = at
    return np.moveaxis(out[::-1] if reverse else out, 0, axis)


def segmented_sum(x, flag, axis: int, reverse: bool):
    """The first component of ``ct.scan((x, flag), axis, lambda v1, f1, v2, f2: (where(f2, v2, v1 + v2), f1 | f2),
    (0, False), reverse)``: sums restarting at every flagged element (integers wrap)."""
    sx, sf = _along(x, axis, reverse), _along(flag, axis, reverse)
    out = np.zeros_like(sx)
    acc = np.zeros_like(sx[0])
    for i in range(sx.shape[0]):
        acc = np.where(sf[i], sx[i], (acc + sx[i]).astype(sx.dtype))
        out[i] = acc
    return np.moveaxis(out[::-1] if reverse else out, 0, axis)


def max_first_count(x, axis: int):
    """The three results of a tuple ``ct.reduce((x, index, ones))`` keeping (max, its first index, how many times it
    occurs), keepdims: the maximum, the first index of it along ``axis`` (int32), the count of it (int32)."""
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    return (m, np.argmax(x == m, axis=axis, keepdims=True).astype(np.int32),
            np.sum(x == m, axis=axis, keepdims=True, dtype=np.int32))


def mma(a, b, acc, acc_key: str):
    """``ct.mma(a, b, acc)``: exact products summed in float64 (integers: int64, wrapped to int32)."""
    if DTYPES[acc_key].is_int:
        p = np.matmul(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)) + acc
        return p.astype(np.int32)
    p = np.matmul(np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)) + np.asarray(acc, np.float64)
    return r(p, acc_key)


def mma_scaled(a, sa, b, sb, acc):
    """``ct.mma_scaled(a, sa, b, sb, acc)`` (cuTile's docstring): ``acc[i, j] + sum_k a[i, k] * sa[i, k // B] *
    b[k, j] * sb[k // B, j]``, ``B = K // K_s``, in float64. Every product of these formats (e4m3 / e5m2 / e2m1
    times e8m0 / e4m3 scales: at most 12 significant bits) is exact in float64 (and in f32, short of under- /
    overflow); float64 sums them with an error under 2**-53 * K * sum(|products|), negligible against the
    kernel's f32 sums (``compare``'s "dot" check)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    k = a.shape[-1]
    blk = k // np.shape(sa)[-1]
    a = a * np.repeat(np.asarray(sa, np.float64), blk, axis=-1)
    b = b * np.repeat(np.asarray(sb, np.float64), blk, axis=-2)
    return np.matmul(a, b) + np.asarray(acc, np.float64)


def bitcast(x, src: str, dst: str):
    """``ct.bitcast(x, dst)``: the same bits read as ``dst`` (same width)."""
    bits = encode(np.asarray(x), src)
    return decode(bits.view(DTYPES[dst].storage), dst)


def cast(x, src: str, dst: str):
    """``ct.astype(x, dst)`` of a value of element type ``src``: float -> float rounds to nearest
    even, float -> int truncates (the generator clamps into range first), int -> int wraps,
    -> bool is ``!= 0``."""
    x = np.asarray(x)
    if dst == "bool":
        return x != 0
    d = DTYPES[dst]
    if d.is_float:
        if DTYPES[src].kind in "iub" and not d.encoded:
            return x.astype(d.compute)  # one rounding, as the device's int -> float conversion
        return r(x.astype(np.float64) if DTYPES[src].kind in "iub" else x, dst)
    if DTYPES[src].is_float:
        with np.errstate(invalid="ignore"):  # NaN padding in positions never stored
            return np.trunc(x.astype(np.float64)).astype(d.compute)
    return x.astype(d.compute)


# ------------------------------------------------------------------------------ inputs


def make_array(init: str, shape, key: str, rng: np.random.Generator, n: int = 0, row_pad: int = 0) -> np.ndarray:
    """:func:`fill_array`, as a view of a buffer whose rows are ``row_pad`` elements longer when
    ``row_pad`` (a non-contiguous array: the kernel gets the buffer, the view's shape and strides)."""
    a = fill_array(init, shape, key, rng, n)
    if not row_pad or a.ndim < 2:
        return a
    buf = np.zeros(a.shape[:-1] + (a.shape[-1] + row_pad,), a.dtype)
    view = buf[..., :a.shape[-1]]
    view[...] = a
    return view


def fill_array(init: str, shape, key: str, rng: np.random.Generator, n: int = 0) -> np.ndarray:
    """An argument array in the kernel's storage type.

    ``init``: ``rand`` (the type's input range: floats uniform in [-2, 2], integers over their
    whole range), ``small`` (small integers / floats), ``zeros``, ``index`` (int32 indices in
    [-2, n + 2): some out of bounds), ``perm`` (a permutation of range(n)), ``target`` (int32 in
    [0, n))."""
    d = DTYPES[key]
    shape = tuple(int(s) for s in shape)
    kind = init
    if kind == "zeros":
        return np.zeros(shape, d.storage)
    if kind == "index":
        return rng.integers(-2, n + 2, shape).astype(np.int32)
    if kind == "perm":
        return rng.permutation(n).astype(np.int32).reshape(shape)
    if kind == "target":
        return rng.integers(0, n, shape).astype(np.int32)
    if kind in ("codes", "scales"):
        return narrow_codes(kind, shape, key, rng, n)
    if d.kind == "b":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if d.is_float:
        lo, hi = (-1.0, 1.0) if kind == "small" else (d.lo, d.hi)
        return encode(r(rng.uniform(lo, hi, shape), key), key)
    if kind == "small":
        lo, hi = (0, 16) if d.kind == "u" else (-8, 8)
    else:
        lo, hi = int(d.lo), int(d.hi)
    return rng.integers(lo, hi, shape, dtype=d.storage, endpoint=True)


def narrow_codes(kind: str, shape, key: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """Codes of an 8- / 4-bit format drawn uniformly among the format's finite codes: ``codes``, every one
    with ``|value| <= 2**n`` (zeros, subnormals, both signs: every decode path); ``scales``, the positive
    ones in ``[2**-n, 2**n]`` (block scales: a safe exponent range, no NaN, no sign, which a tcgen05
    UE4M3 scale factor would not have)."""
    table = (F8_TABLES | SCALED_TABLES)[key][:16 if DTYPES[key].bits == 4 else 256]
    mag = np.abs(table)
    ok = np.isfinite(table) & (mag <= 2.0**n)
    if kind == "scales":
        ok &= (table > 0) & (mag >= 2.0**-n)
    return rng.choice(np.nonzero(ok)[0], size=shape).astype(np.uint8)


# ------------------------------------------------------------------------------ debug output


_CONV = re.compile(r"%%|%[-+ #0]*(?:\d+)?(?:\.\d+)?(?:hh|h|ll|l)?[diouxXeEfFgGaAc]")


def _printf_value(spec: str, v):
    """One argument of ``ct.printf``: a 0-d value formatted by ``spec``, a tile as a nested list of its
    elements so formatted (``[[0, 1], [2, 3]]``: what tileiras prints, cuTile's test_print.py)."""
    v = np.asarray(v)
    spec = re.sub(r"(hh|h|ll|l)(?=[a-zA-Z]$)", "", spec)
    if v.ndim == 0:
        return spec % (float(v) if v.dtype.kind == "f" else int(v))
    return "[" + ", ".join(_printf_value(spec, e) for e in v) + "]"


def printf(lines: list, fmt: str, *args) -> None:
    """``ct.printf(fmt, *args)`` of one block: each 0-d argument formatted by its conversion, each tile
    argument printed whole as a nested list (``tile[0]:[0.0, 1.0]``). ``lines`` collects the text, split
    at newlines."""
    out, at, k = [], 0, 0
    for m in _CONV.finditer(fmt):
        out.append(fmt[at:m.start()])
        at = m.end()
        if m.group(0) == "%%":
            out.append("%")
            continue
        out.append(_printf_value(m.group(0), args[k]))
        k += 1
    out.append(fmt[at:])
    lines.extend("".join(out).splitlines())
