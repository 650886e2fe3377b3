"""Semantics of the warp-collective instructions (PTX ISA), one row per instruction.

Every row is ``fn(mask, lanes) -> {lane: result}`` where ``lanes`` maps each
participating lane (all of ``mask`` have arrived) to the ``(a, b, c)`` operands
it passed to ``__emu_warp``: ``a`` the value (up to 64 bits), ``b`` / ``c`` the
instruction's other operands. Results are 64-bit; instructions that also return
a predicate put it in bit 32. The opcode passed from the kernel is the row's
index in :data:`WARP_OPS`.
"""

from __future__ import annotations

import math

M32 = 0xFFFFFFFF


def _shfl(mode: str):
    def fn(mask, lanes):
        out = {}
        for lane, (a, b, c) in lanes.items():
            bval, cval, segmask = b & 31, c & 31, (c >> 8) & 31
            max_lane = (lane & segmask) | (cval & ~segmask & 31)
            min_lane = lane & segmask
            if mode == "up":
                j = lane - bval
                ok = j >= max_lane
            elif mode == "down":
                j = lane + bval
                ok = j <= max_lane
            elif mode == "bfly":
                j = lane ^ bval
                ok = j <= max_lane
            else:  # idx
                j = min_lane | (bval & ~segmask & 31)
                ok = j <= max_lane
            if not ok:
                j = lane
            # A source lane outside the member mask is unpredictable on the GPU: own value here.
            src = lanes.get(j, (a,))[0]
            out[lane] = (src & M32) | (int(ok) << 32)
        return out
    return fn


def _vote(kind: str):
    def fn(mask, lanes):
        preds = {lane: bool(a & 1) for lane, (a, _, _) in lanes.items()}
        vals = list(preds.values())
        if kind == "ballot":
            r = sum(1 << lane for lane, p in preds.items() if p)
        elif kind == "all":
            r = int(all(vals))
        elif kind == "any":
            r = int(any(vals))
        else:  # uni
            r = int(all(vals) or not any(vals))
        return {lane: r for lane in lanes}
    return fn


def _match_any(mask, lanes):
    return {lane: sum(1 << other for other, (v, _, _) in lanes.items() if v == a) for lane, (a, _, _) in lanes.items()}


def _match_all(mask, lanes):
    vals = {a for a, _, _ in lanes.values()}
    same = len(vals) == 1
    r = (sum(1 << lane for lane in lanes) | (1 << 32)) if same else 0
    return {lane: r for lane in lanes}


def _s32(v):
    v &= M32
    return v - (1 << 32) if v & 0x80000000 else v


def _redux(kind: str):
    def fn(mask, lanes):
        vals = [a & M32 for a, _, _ in lanes.values()]
        if kind == "add":
            r = sum(vals)
        elif kind == "umin":
            r = min(vals)
        elif kind == "umax":
            r = max(vals)
        elif kind == "min":
            r = min(_s32(v) for v in vals)
        elif kind == "max":
            r = max(_s32(v) for v in vals)
        elif kind == "and":
            r = M32
            for v in vals:
                r &= v
        elif kind == "or":
            r = 0
            for v in vals:
                r |= v
        else:  # xor
            r = 0
            for v in vals:
                r ^= v
        return {lane: r & M32 for lane in lanes}
    return fn


def _redux_f(kind: str):
    import math
    import struct

    def fn(mask, lanes):
        flags = next(iter(lanes.values()))[2]
        take_abs, keep_nan = flags & 1, flags & 2
        vals = [struct.unpack("<f", struct.pack("<I", a & M32))[0] for a, _, _ in lanes.values()]
        if take_abs:
            vals = [abs(v) for v in vals]
        if keep_nan and any(math.isnan(v) for v in vals):
            r = math.nan
        else:
            finite = [v for v in vals if not math.isnan(v)] or [math.nan]
            r = min(finite) if kind == "fmin" else max(finite)
        return {lane: struct.unpack("<I", struct.pack("<f", r))[0] for lane in lanes}
    return fn


def _elect(mask, lanes):
    leader = min(lanes)
    return {lane: int(lane == leader) | (leader << 1) for lane in lanes}


def _warp_sync(mask, lanes):
    return {lane: 0 for lane in lanes}


F8_NAMES = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}  # PTX type -> tilecore.narrow_floats format


def _f32_bits(x: float) -> int:
    """f32 bits of ``x`` rounded to nearest even (overflow gives inf, as on the GPU)."""
    import struct

    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:  # rounds beyond the largest finite f32
        return 0x7F800000 if x > 0 else 0xFF800000


def _f16_bits(x: float) -> int:
    """f16 bits of ``x`` rounded to nearest even (overflow gives inf)."""
    import struct

    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0x7C00 if x > 0 else 0xFC00


def _mma(k: int, a_elem: str, b_elem: str, acc: str = "f32"):
    """``mma.sync.aligned.m16n8k{k}.row.col`` (fragment layouts from the PTX ISA, "Warp Level Matrix
    Multiply-Accumulate Instructions", "Matrix Fragments for mma.m16n8k8" / "... mma.m16n8k16 with
    floating point type" / "... mma.m16n8k32"): f32 accumulators with f16 / bf16 (k 8, 16) / tf32 (k 8)
    / e4m3 / e5m2 (k 32) operands, f16 accumulators with f16 operands (k 8, 16), s32 (wrapping) with
    s8 / u8 operands (k 32).

    Each lane passes ``a`` = the address of its register file of 32-bit words: A0..A3 and B0..B1
    (m16n8k8 f16 / bf16: A0, A1 and B0) (``p`` = 32 / width consecutive K elements each, the lowest
    index in the low bits; tf32: p = 1, f32 bits of which the hardware ignores the low 13), then the
    accumulators C (4 words; f16: 2 words, c0 / c2 in the low halves); D is written over C. Lane l has
    group g = l >> 2 and thread-in-group t = l & 3. A (16 x k, row-major): A0 holds row g, K elements
    p*t ..; A1 row g+8; A2 / A3 those rows k/2 further. B (k x 8): B0 holds rows p*t .. of column g;
    B1 k/2 further. C / D (16 x 8): c0, c1
    row g, columns 2t, 2t+1; c2, c3 row g+8 (f32 / s32: one register each; f16: c0, c1 in register 0,
    c2, c3 in register 1).

    Numbers: the products are exact (doubles hold the product of two 11-bit significands), the products
    and C are summed exactly (``math.fsum``; infinities of both signs: NaN) and rounded to f32
    (f16 accumulator: then to f16, as the sum is accumulated in f32 and then rounded). The ISA does not
    specify the internal precision or order of the accumulation; the hardware may differ in the last
    place for sums that need more than f32's 24 bits (FP8 paths are reported to keep fewer).
    """
    import ctypes
    import operator
    import struct

    from .hopper import exact_sum

    per = 2 if a_elem in ("f16", "bf16") else 1 if a_elem == "tf32" else 4
    bits = 32 // per
    integer = a_elem in ("s8", "u8")
    n_acc = 2 if acc == "f16" else 4
    n_a = 16 * k // 32 // per  # A registers: 16 x k elements over 32 lanes, per to a word
    n_b = n_a // 2  # B: k x 8
    n_c = n_a + n_b  # the first accumulator word

    def value(elem: str, word: int) -> float | int:
        word &= (1 << bits) - 1
        if elem == "tf32":  # 1 sign, 8 exponent, 10 mantissa bits: the f32 bits without the low 13
            return struct.unpack("<f", struct.pack("<I", word & 0xFFFFE000))[0]
        if elem == "bf16":
            return struct.unpack("<f", struct.pack("<I", word << 16))[0]
        if elem == "f16":
            return struct.unpack("<e", struct.pack("<H", word))[0]
        if elem in F8_NAMES:
            return _f8_table(elem)[word]
        return word - 256 if elem == "s8" and word & 0x80 else word

    def fn(mask, lanes):
        if len(lanes) != 32:
            raise ValueError("mma.sync needs all 32 lanes of the warp")
        regs = {lane: (ctypes.c_uint32 * (n_c + n_acc)).from_address(a) for lane, (a, _, _) in lanes.items()}
        a_m = [[0] * k for _ in range(16)]
        b_m = [[0] * 8 for _ in range(k)]
        for lane, r in regs.items():
            g, t = lane >> 2, lane & 3
            for i in range(n_a):  # rows g, g+8 alternate; the second pair k/2 further
                row, col = g + 8 * (i & 1), per * t + k // 2 * (i >> 1)
                for e in range(per):
                    a_m[row][col + e] = value(a_elem, r[i] >> (bits * e))
            for i in range(n_b):
                kk = per * t + k // 2 * i
                for e in range(per):
                    b_m[kk + e][g] = value(b_elem, r[n_a + i] >> (bits * e))
        out = {}
        b_cols = [list(col) for col in zip(*b_m)]
        for lane, r in regs.items():
            g, t = lane >> 2, lane & 3
            d = []
            for i, (row, col) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
                products = list(map(operator.mul, a_m[row], b_cols[col]))
                if integer:
                    d.append((r[n_c + i] + sum(products)) & 0xFFFFFFFF)
                elif acc == "f16":
                    half = r[n_c + i // 2] >> (16 * (i & 1)) & 0xFFFF
                    products.append(struct.unpack("<e", struct.pack("<H", half))[0])
                    f32 = struct.unpack("<f", struct.pack("<I", _f32_bits(exact_sum(products))))[0]
                    d.append(_f16_bits(f32))
                else:
                    products.append(struct.unpack("<f", struct.pack("<I", r[n_c + i]))[0])
                    d.append(_f32_bits(exact_sum(products)))
            out[lane] = [d[0] | d[1] << 16, d[2] | d[3] << 16] if acc == "f16" else d
        for lane, words in out.items():
            for i, word in enumerate(words):
                regs[lane][n_c + i] = word
        return {lane: 0 for lane in lanes}
    return fn


_F8_TABLES: dict[str, list[float]] = {}


def _f8_table(elem: str) -> list[float]:
    """The value of each of the 256 codes of an 8-bit float type (``e4m3`` / ``e5m2``)."""
    if elem not in _F8_TABLES:
        from tilecore.narrow_floats import decode

        _F8_TABLES[elem] = [decode(c, F8_NAMES[elem]) for c in range(256)]
    return _F8_TABLES[elem]


def _mma_f64(mask, lanes):
    """``mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64`` (PTX ISA 9.7.14.5, "Matrix Fragments for mma.m8n8k4
    with .f64 floating point type"). Each lane passes ``a`` = the address of its register file of 64-bit
    words: a0, b0, c0, c1 (D written over C). Lane l has group g = l >> 2 and thread-in-group t = l & 3: a0 is
    A[g][t] (A 8 x 4), b0 is B[t][g] (B 4 x 8), c0 / c1 are C[g][2t] / C[g][2t + 1] (C / D 8 x 8).

    Numbers: each element of D is the exact sum of its four products and C, rounded once to the nearest double
    (the ISA does not specify the order or internal precision of the accumulation; one rounding is what a
    fused dot product gives). Exactly: every finite double is an integer over a power of two
    (``as_integer_ratio``), so the sum is one integer over the largest denominator, and Python's integer
    division rounds it correctly.
    """
    import ctypes

    from .hopper import exact_sum

    def ratio(x):  # None for inf / NaN
        return x.as_integer_ratio() if math.isfinite(x) else None

    if len(lanes) != 32:
        raise ValueError("mma.sync needs all 32 lanes of the warp")
    regs = {lane: (ctypes.c_double * 4).from_address(a) for lane, (a, _, _) in lanes.items()}
    a_m = [[0.0] * 4 for _ in range(8)]
    b_m = [[0.0] * 8 for _ in range(4)]
    for lane, r in regs.items():
        g, t = lane >> 2, lane & 3
        a_m[g][t], b_m[t][g] = r[0], r[1]
    a_q = [[ratio(x) for x in row] for row in a_m]
    b_q = [[ratio(b_m[kk][j]) for kk in range(4)] for j in range(8)]  # by column
    for lane, r in regs.items():
        g, t = lane >> 2, lane & 3
        for i in (0, 1):
            j, c = 2 * t + i, r[2 + i]
            if math.isfinite(c) and None not in a_q[g] and None not in b_q[j]:
                terms = [(na * nb, da * db) for (na, da), (nb, db) in zip(a_q[g], b_q[j])]
                terms.append(c.as_integer_ratio())
                den = max(d for _, d in terms)  # powers of two: every other divides it
                num = sum(n * (den // d) for n, d in terms)
                try:
                    r[2 + i] = num / den
                except OverflowError:
                    r[2 + i] = math.inf if num > 0 else -math.inf
            else:  # IEEE 754 special values (inf * 0, NaN operands, inf - inf: NaN), as the other mma rows sum them
                r[2 + i] = exact_sum([a_m[g][kk] * b_m[kk][j] for kk in range(4)] + [c])
    return {lane: 0 for lane in lanes}


MMA_ROWS = {"mma.m8n8k4.f64": _mma_f64,
            **{f"mma.m16n8k{k}.{e}": _mma(k, e, e) for k in (8, 16) for e in ("f16", "bf16")},
            **{f"mma.m16n8k{k}.f16.f16acc": _mma(k, "f16", "f16", "f16") for k in (8, 16)},
            "mma.m16n8k8.tf32": _mma(8, "tf32", "tf32"),
            **{f"mma.m16n8k32.{a}.{b}": _mma(32, a, b, "s32") for a in ("s8", "u8") for b in ("s8", "u8")},
            **{f"mma.m16n8k32.{a}.{b}": _mma(32, a, b) for a in F8_NAMES for b in F8_NAMES}}


def _ldmatrix(num: int, trans: bool):
    """``ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16`` (PTX ISA, "Warp Level Matrix
    Multiply-Accumulate Instructions: ldmatrix"): the warp loads ``num`` 8 x 8 matrices of 16-bit
    elements; lanes 8*i .. 8*i+7 give the addresses of rows 0..7 of matrix i (each row 16 contiguous
    bytes; the addresses of lanes >= 8*num are not used). Lane l receives, in its register i, the
    elements (row l / 4, columns 2*(l % 4), 2*(l % 4) + 1) of matrix i, the first in the low half;
    with ``.trans`` the elements (rows 2*(l % 4), 2*(l % 4) + 1, column l / 4), i.e. those of the
    transposed matrix.

    Each lane passes ``a`` = the address of a buffer: its row address (i64) at byte 0, the ``num``
    result words (i32) from byte 8 on. The kernel checked the used row addresses (bounds, 16-byte
    alignment) before the collective when bounds checks are on.
    """
    import ctypes

    def fn(mask, lanes):
        if len(lanes) != 32:
            raise ValueError("ldmatrix needs all 32 lanes of the warp")
        mats = []
        for i in range(num):
            rows = []
            for r in range(8):
                addr = ctypes.c_uint64.from_address(lanes[8 * i + r][0]).value
                rows.append(list((ctypes.c_uint16 * 8).from_address(addr)))
            mats.append(rows)
        for lane, (a, _, _) in lanes.items():
            g, t = lane >> 2, lane & 3
            words = (ctypes.c_uint32 * num).from_address(a + 8)
            for i, m in enumerate(mats):
                lo, hi = (m[2 * t][g], m[2 * t + 1][g]) if trans else (m[g][2 * t], m[g][2 * t + 1])
                words[i] = lo | hi << 16
        return {lane: 0 for lane in lanes}
    return fn


LDMATRIX_ROWS = {f"ldmatrix.x{n}{'.trans' if tr else ''}": _ldmatrix(n, tr) for n in (1, 2, 4) for tr in (False, True)}


WARP_OPS: dict[str, object] = {
    "shfl.idx": _shfl("idx"), "shfl.up": _shfl("up"), "shfl.down": _shfl("down"), "shfl.bfly": _shfl("bfly"),
    "vote.all": _vote("all"), "vote.any": _vote("any"), "vote.uni": _vote("uni"), "vote.ballot": _vote("ballot"),
    "match.any": _match_any, "match.all": _match_all,
    **{f"redux.{k}": _redux(k) for k in ("add", "umin", "umax", "min", "max", "and", "or", "xor")},
    "redux.fmin": _redux_f("fmin"), "redux.fmax": _redux_f("fmax"),
    "elect": _elect, "bar.warp.sync": _warp_sync,
    **MMA_ROWS, **LDMATRIX_ROWS,
}
WARP_NAMES: list[str] = list(WARP_OPS)


def opcode(name: str) -> int:
    """The opcode the kernel passes to ``__emu_warp`` for the row ``name``."""
    return WARP_NAMES.index(name)
