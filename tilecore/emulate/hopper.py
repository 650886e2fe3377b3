"""wgmma.mma_async semantics (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
Instructions"): matrix descriptors, the canonical shared-memory layouts, the accumulator fragments and
the numbers.

A warpgroup (4 consecutive warps, the first a multiple of 4: 128 threads) computes
``D (64 x N) = A (64 x K) * B (K x N) [+ D]`` with A and B read from shared memory through 64-bit
*matrix descriptors* and D in the threads' registers. The kernel computes descriptors from shared
addresses, which on the GPU are offsets in the 18-bit shared window; the emulator's shared memory is
host memory whose low 18 address bits play that part (:func:`.engine.place_dynamic_shared` places the
dynamic buffer so that no two shared bytes of a CTA share them), so a descriptor's start address names
the host byte of the CTA's shared memory whose address is congruent to it modulo 2^18.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

WINDOW = 1 << 18  # bytes of shared address space a descriptor's 14-bit (>> 4) addresses reach

# ---------------------------------------------------------------- Matrix Descriptor Format
# PTX ISA, "Asynchronous Warpgroup Level Matrix Shared Memory Layout: Matrix Descriptor Format":
# field -> (first bit, width, scale): the byte value is ``field << scale``
DESCRIPTOR_FIELDS = {
    "start": (0, 14, 4),         # matrix start address >> 4
    "lbo": (16, 14, 4),          # leading dimension byte offset >> 4
    "sbo": (32, 14, 4),          # stride dimension byte offset >> 4
    "base_offset": (49, 3, 0),   # matrix base offset (0 for the canonical layouts, see below)
    "swizzle": (62, 2, 0),       # 0: none (interleave), 1: 128B, 2: 64B, 3: 32B
}
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}


def decode_descriptor(desc: int) -> dict[str, int]:
    """The fields of a wgmma matrix descriptor (bytes for the addresses and offsets)."""
    desc &= (1 << 64) - 1
    return {name: ((desc >> lo) & ((1 << width) - 1)) << scale for name, (lo, width, scale) in DESCRIPTOR_FIELDS.items()}


# ---------------------------------------------------------------- Shared Memory Matrix Layout
# PTX ISA, "Shared Memory Matrix Layout" (and its "Strides" definitions of the leading / stride dimension
# byte offsets): the operand is made of swizzle-layout atoms; with T = 16 bytes / element size elements per
# 16-byte unit and S the swizzle width in bytes (W = S / 16 units):
#
# - K-major (A with layoutA row, B with layoutB col; element (mn, k), mn the M or N index):
#   atom = 8 rows (mn) of S bytes (no swizzle: 8 rows of 16 bytes, a "core matrix"), K contiguous in a row.
#     none:     offset = (mn % 8) * 16 + (mn // 8) * SBO + (k // T) * LBO + (k % T) * esize
#     swizzled: offset = (mn % 8) * S  + (mn // 8) * SBO + (k // T) * 16  + (k % T) * esize   (LBO unused)
# - MN-major (layoutA col / layoutB row, 16-bit types only; MN contiguous):
#   atom = 8 rows (k) of S bytes of MN (no swizzle: 8 rows of 16 bytes).
#     none:     offset = (mn % T) * esize + (mn // T) * SBO + (k % 8) * 16 + (k // 8) * LBO
#     swizzled: offset = (mn % T) * esize + ((mn // T) % W) * 16 + (mn // (T * W)) * LBO + (k % 8) * S
#               + (k // 8) * SBO
#
# The swizzle permutes the 16-byte units of each 128-byte line by the line's address: the byte address a
# (start + offset) becomes ``a ^ (((a >> 7) % W) << 4)`` (128B: bits 4-6 ^= bits 7-9; 64B: bits 4-5 ^=
# bits 7-8; 32B: bit 4 ^= bit 7), on the absolute shared address, so a start address advanced along K
# inside an atom (start + 32 bytes for the next k16 step of a 128B-swizzled f16 operand) reads the same
# swizzled atom. The base offset field (for atoms not aligned to the pattern's repeat) is not emulated:
# a descriptor with a non-zero base offset fails the launch.
#
# Table: (major, swizzle bytes) -> strides of the index digits, as (digit, modulus, stride) where stride
# is bytes, "esize", "LBO" or "SBO" (digits: mn or k divided by the product of the earlier moduli).
CANONICAL_LAYOUTS: dict[tuple[str, int], tuple[tuple, tuple]] = {}
for _s in (0, 32, 64, 128):
    _w = max(_s // 16, 1)
    if _s == 0:
        CANONICAL_LAYOUTS[("K", 0)] = ((("mn", 8, 16), ("mn", None, "SBO")), (("k", "T", "esize"), ("k", None, "LBO")))
        CANONICAL_LAYOUTS[("MN", 0)] = ((("mn", "T", "esize"), ("mn", None, "SBO")), (("k", 8, 16), ("k", None, "LBO")))
    else:
        CANONICAL_LAYOUTS[("K", _s)] = ((("mn", 8, _s), ("mn", None, "SBO")), (("k", "T", "esize"), ("k", None, 16)))
        CANONICAL_LAYOUTS[("MN", _s)] = ((("mn", "T", "esize"), ("mn", _w, 16), ("mn", None, "LBO")),
                                         (("k", 8, _s), ("k", None, "SBO")))


def swizzle(addr: np.ndarray, swizzle_bytes: int) -> np.ndarray:
    """The byte addresses after the 32B / 64B / 128B swizzle (none: unchanged)."""
    if not swizzle_bytes:
        return addr
    w = swizzle_bytes // 16
    return addr ^ (((addr >> 7) % w) << 4)


def operand_addresses(desc: int, rows: int, k: int, esize: int, k_major: bool) -> np.ndarray:
    """Shared-window byte addresses (``rows`` x ``k``) of the elements (mn, k) of a wgmma operand."""
    f = decode_descriptor(desc)
    if f["base_offset"]:
        raise ValueError(f"wgmma matrix descriptor {desc:#018x} has base offset {f['base_offset']}, which the "
                         "emulator does not model (only the canonical layouts with base offset 0)")
    s = SWIZZLE_BYTES[f["swizzle"]]
    strides = {"esize": esize, "LBO": f["lbo"], "SBO": f["sbo"]}
    t = 16 // esize
    mn_digits, k_digits = CANONICAL_LAYOUTS[("K" if k_major else "MN", s)]
    idx = {"mn": np.arange(rows, dtype=np.int64)[:, None], "k": np.arange(k, dtype=np.int64)[None, :]}
    off = np.zeros((rows, k), np.int64)
    for digits in (mn_digits, k_digits):
        rest = idx[digits[0][0]]
        for _, mod, stride in digits:
            mod = t if mod == "T" else mod
            digit = rest if mod is None else rest % mod
            rest = rest if mod is None else rest // mod
            off = off + digit * (strides[stride] if isinstance(stride, str) else stride)
    return swizzle(f["start"] + off, s) % WINDOW


# ---------------------------------------------------------------- element types
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
K_OF = {2: 16, 4: 8, 1: 32}  # k of the shape by element size


def decode(raw: np.ndarray, elem: str) -> np.ndarray:
    """Values (float64 / int64) of elements given as little-endian bytes ``raw[..., esize]``."""
    if elem in ("f16", "bf16"):
        h = raw.copy().view(np.uint16)[..., 0]
        if elem == "f16":
            return h.view(np.float16).astype(np.float64)
        return (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if elem == "tf32":  # the hardware ignores the low 13 bits of the f32 word
        return (raw.copy().view(np.uint32)[..., 0] & 0xFFFFE000).view(np.float32).astype(np.float64)
    if elem in ("e4m3", "e5m2"):
        from .warp import _f8_table

        return np.array(_f8_table(elem))[raw[..., 0]]
    return raw[..., 0].view(np.int8).astype(np.int64) if elem == "s8" else raw[..., 0].astype(np.int64)


# ---------------------------------------------------------------- Register Fragments (D)
def d_fragment(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of accumulator element i (0 .. N/2 - 1) of thread t (0..127) of the warpgroup (PTX ISA,
    "Register Fragments and Shared Memory Matrix Layouts", figure of the wgmma .m64nNk* D fragment): warp
    w = t / 32 holds rows 16w .. 16w + 15; lane l holds, for each 8 columns j = i / 4, rows 16w + l / 4 (i % 4
    in 0, 1) and 16w + l / 4 + 8 (i % 4 in 2, 3), columns 8j + 2 (l % 4) + i % 2. Both arrays (128, N/2)."""
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    w, lane = t // 32, t % 32
    return 16 * w + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2


# ---------------------------------------------------------------- Register Fragments (A)
def a_fragment() -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of A element i (0 .. 7: a0..a7, two per .f16x2 register, low half first) of thread t (0..127)
    for ``wgmma.mma_async.m64nNk16`` with A in registers, .f16 / .bf16 (PTX ISA 9.7.15.5.1.1.1, Figure 148
    "WGMMA .m64nNk16 register fragment layout for matrix A"): warp w = t / 32 holds rows 16w .. 16w + 15;
    lane l holds rows 16w + l / 4 (a0, a1, a4, a5) and 16w + l / 4 + 8 (a2, a3, a6, a7), columns 2 (l % 4) +
    i % 2, plus 8 for a4..a7. Both arrays (128, 8)."""
    t = np.arange(128)[:, None]
    i = np.arange(8)[None, :]
    w, lane = t // 32, t % 32
    return 16 * w + lane // 4 + 8 * ((i // 2) % 2), 2 * (lane % 4) + i % 2 + 8 * (i // 4)


def a_from_registers(words: np.ndarray, elem: str) -> np.ndarray:
    """The 64 x 16 A (float64) of the warpgroup from its threads' A registers ``words`` (128, 4) (uint32: two
    f16 / bf16 each, element 2j in the low half of word j)."""
    halves = words.astype(np.uint32).view(np.uint16).reshape(128, 8)[..., None].view(np.uint8)
    a = np.zeros((64, 16), np.float64)
    rows, cols = a_fragment()
    a[rows, cols] = decode(halves, elem)
    return a


class SharedMemory:
    """Reads the CTA's shared memory by shared-window address (``buffers``: (label, lo, hi) host ranges)."""

    def __init__(self, buffers):
        self.buffers = [(label, lo, hi) for label, lo, hi in buffers if hi > lo]

    def host(self, window: np.ndarray, esize: int) -> np.ndarray:
        """Host addresses of ``esize``-byte elements at the window addresses (ValueError when one is not
        entirely inside one shared buffer)."""
        out = np.full(window.shape, -1, np.int64)
        for _, lo, hi in self.buffers:
            cand = lo - lo % WINDOW + window
            cand = np.where(cand < lo, cand + WINDOW, cand)
            ok = (cand + esize <= hi) & (out < 0)
            out = np.where(ok, cand, out)
        if (out < 0).any():
            bad = int(window[out < 0].flat[0])
            raise ValueError(f"shared address {bad:#x} ({esize} bytes) lies in no shared-memory buffer of the CTA")
        return out

    @staticmethod
    def read(host: np.ndarray, esize: int) -> np.ndarray:
        """The bytes (..., esize) at the host addresses."""
        lo, hi = int(host.min()), int(host.max()) + esize
        mem = np.frombuffer((ctypes.c_uint8 * (hi - lo)).from_address(lo), np.uint8)
        return mem[(host - lo)[..., None] + np.arange(esize)]


def exact_sums(terms: np.ndarray) -> np.ndarray:
    """Row sums of ``terms`` (rows x count, float64), each the exact sum rounded once to a double (what
    ``math.fsum`` gives): summed in order with Knuth's TwoSum, whose error term is exactly what a step
    rounded away; rows where every step was exact (and finite) keep that sum, the others go through
    ``math.fsum``."""
    s = terms[:, 0].copy()
    inexact = np.zeros(len(s), bool)
    for j in range(1, terms.shape[1]):
        x = terms[:, j]
        t = s + x
        bp = t - s
        err = (s - (t - bp)) + (x - bp)
        inexact |= (err != 0) | ~np.isfinite(t)
        s = t
    for i in np.flatnonzero(inexact):
        s[i] = exact_sum(terms[i].tolist())
    return s


def exact_sum(terms: list) -> float:
    """The exact sum of floats ``terms`` rounded once to a double (``math.fsum``); with infinities of both signs
    NaN, and a sum whose intermediate steps pass the double range their plain sum, as a GPU's adder gives them
    (``math.fsum`` raises ValueError / OverflowError there)."""
    try:
        return math.fsum(terms)
    except (OverflowError, ValueError):  # inf - inf, or an intermediate sum beyond double range
        with np.errstate(invalid="ignore", over="ignore"):
            return float(np.sum(np.array(terms, np.float64)))


def wgmma(form: dict, desc_a: int, desc_b: int, scale_d: int, accs: dict[int, ctypes.Array], smem: SharedMemory,
          a_regs: dict[int, ctypes.Array] | None = None):
    """Run one ``wgmma.mma_async`` of ``form`` (keys n, k, a, b, d, neg_a, neg_b, a_kmajor, b_kmajor,
    satfinite, a_regs) for the warpgroup: ``accs`` maps thread 0..127 to its accumulator words (read as C unless
    scale_d is 0, then overwritten with D); with ``form["a_regs"]`` A comes from ``a_regs`` (thread -> its four
    A words, :func:`a_from_registers`) and ``desc_a`` is unused. Returns the shared operands' (host addresses,
    bytes) for the check at wgmma.wait_group."""
    n, k, d = form["n"], form["k"], form["d"]
    ea, eb = ELEMENT_BYTES[form["a"]], ELEMENT_BYTES[form["b"]]
    hb = smem.host(operand_addresses(desc_b, n, k, eb, form["b_kmajor"]), eb)
    rb = smem.read(hb, eb)
    read = [(hb, rb)]
    if form.get("a_regs"):
        a = a_from_registers(np.array([list(a_regs[t]) for t in range(128)], np.uint32), form["a"])
    else:
        ha = smem.host(operand_addresses(desc_a, 64, k, ea, form["a_kmajor"]), ea)
        ra = smem.read(ha, ea)
        read.insert(0, (ha, ra))
        a = decode(ra, form["a"])
    a = a * (-1 if form["neg_a"] else 1)  # (64, k)
    b = decode(rb, form["b"]).T * (-1 if form["neg_b"] else 1)  # (k, n)
    rows, cols = d_fragment(n)
    regs = np.array([list(accs[t]) for t in range(128)], np.uint32)  # (128, words)
    if d == "f16":
        c = regs.view(np.float16).astype(np.float64)  # (128, n/2): element i = half i of the words
    elif d == "s32":
        c = regs.view(np.int32).astype(np.int64)
    else:
        c = regs.view(np.float32).astype(np.float64)
    cm = np.zeros((64, n), np.float64 if d != "s32" else np.int64)
    if scale_d:
        cm[rows, cols] = c
    if d == "s32":
        dm = a.astype(np.int64) @ b.astype(np.int64) + cm
        dm = np.clip(dm, -(1 << 31), (1 << 31) - 1) if form["satfinite"] else (dm + (1 << 31)) % (1 << 32) - (1 << 31)
        out = dm[rows, cols].astype(np.int32).view(np.uint32)
    else:
        # exact products (doubles hold products of <= 11-bit significands), summed with C exactly
        # (math.fsum) and rounded once to f32; an f16 accumulator then rounds that f32 to f16 (the model
        # of the mma.sync rows, :func:`.warp._mma`: the ISA leaves the internal precision open)
        with np.errstate(over="ignore", invalid="ignore"):  # -inf x 0, inf - inf: NaN, silently as on a GPU
            prod = a[:, None, :] * b.T[None, :, :]  # (64, n, k)
            terms = np.concatenate([prod, cm[:, :, None]], axis=2).reshape(64 * n, k + 1)
            f32 = exact_sums(terms).reshape(64, n).astype(np.float32)
            if d == "f16":
                out = f32.astype(np.float16)[rows, cols].view(np.uint16)
                out = out[:, 0::2].astype(np.uint32) | out[:, 1::2].astype(np.uint32) << 16
            else:
                out = f32[rows, cols].view(np.uint32)
    for t in range(128):
        accs[t][:] = [int(x) for x in out[t]]
    return read


# ---------------------------------------------------------------- forms
FORMS: list[dict] = []  # the wgmma.mma_async forms of the compiled kernels; the index is the runtime opcode


def form_id(n: int, k: int, a: str, b: str, d: str, neg_a: bool, neg_b: bool, a_kmajor: bool, b_kmajor: bool,
            satfinite: bool, a_regs: bool = False) -> int:
    """The index of a wgmma.mma_async form in :data:`FORMS` (added when new); ``a_regs``: A from registers."""
    form = {"n": n, "k": k, "a": a, "b": b, "d": d, "neg_a": neg_a, "neg_b": neg_b, "a_kmajor": a_kmajor,
            "b_kmajor": b_kmajor, "satfinite": satfinite, "words": n // 4 if d == "f16" else n // 2, "a_regs": a_regs}
    if form not in FORMS:
        FORMS.append(form)
    return FORMS.index(form)


def valid_form(n: int, k: int, a: str, b: str, d: str, a_kmajor: bool, b_kmajor: bool, a_regs: bool = False) -> bool:
    """The combinations of PTX ISA "wgmma.mma_async" (dense, A and B from shared memory): m64nNk16 f16 / bf16
    (f32 or, f16 only, f16 accumulator) with N a multiple of 8 up to 256; m64nNk8 tf32 -> f32; m64nNk32
    e4m3 / e5m2 -> f32 / f16 (N multiple of 8); m64nNk32 s8 / u8 -> s32 (N 8, 16, 24, then multiples of 16);
    transposed (MN-major) operands only for 16-bit types. With A from registers (``a_regs``) the emulator has
    the 16-bit forms only (A has no major-ness there: ``a_kmajor`` True)."""
    if a_regs and (a not in ("f16", "bf16") or not a_kmajor):
        return False
    if a not in ELEMENT_BYTES or b not in ELEMENT_BYTES or k != K_OF[ELEMENT_BYTES[a]] or \
            ELEMENT_BYTES[a] != ELEMENT_BYTES[b] or not 8 <= n <= 256 or n % 8:
        return False
    if (not a_kmajor or not b_kmajor) and a not in ("f16", "bf16"):
        return False
    if a in ("f16", "bf16"):
        return a == b and (d == "f32" or (d == "f16" and a == "f16"))
    if a == "tf32":
        return b == "tf32" and d == "f32"
    if a in ("e4m3", "e5m2"):
        return b in ("e4m3", "e5m2") and d in ("f32", "f16")
    return b in ("s8", "u8") and d == "s32" and (n <= 24 or n % 16 == 0)
