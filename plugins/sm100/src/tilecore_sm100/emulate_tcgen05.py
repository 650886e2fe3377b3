"""Blackwell tcgen05 ops in the CPU emulator: the ``sm100`` emulator extension (hook
``tilecore_register_emulator_ops``; how extensions work: the :mod:`tilecore.emulate.optable` docstring).

The forms (op, operand types, attributes) are listed in ``plugins/sm100/TCGEN05-FORMS.md``; the semantics
follow the PTX ISA, "TensorCore 5th Generation Family Instructions" (section 9.7.16; numbers of PTX ISA 9.x):

- ``nvvm.tcgen05.alloc`` / ``dealloc`` / ``relinquish_alloc_permit`` (9.7.16.7.1): :mod:`.emulate_tmem`;
- ``nvvm.tcgen05.mma`` (9.7.16.10.9 "tcgen05.mma"): kinds f16 (f16 / bf16 -> f32), tf32 (-> f32), i8
  (s8 / u8 -> s32, wrapping or saturating), f8f6f4 (e4m3 / e5m2 -> f32); cta_group::1, M = 64 or 128,
  N a multiple of 8 (M = 64) or 16 (M = 128) up to 256, K = 32 bytes of A / B per row; A and B from shared
  memory through shared-memory descriptors (9.7.16.4.1 "Shared memory descriptor"), the 32-bit instruction
  descriptor (9.7.16.4.2 "Instruction descriptor", Table 42: sparsity, saturate, dtype, atype, btype,
  negate A / B, transpose A / B, N >> 3, M >> 4), enable-input-d (D = A B, or A B + D), D in tensor memory
  (9.7.16.10.5 "Data path layout": M = 128: row i in lane i; M = 64: row i in lane 32 (i / 16) + i % 16 of
  the address's lane 0 or 16), column j of D in the column of the address + j (32-bit D types); transposed
  (MN-major) tf32 needs the 128B swizzle with 32-byte atoms (9.7.16.10.1, Table 52): not emulated, an error;
  an MN-major 8-bit B needs N a multiple of 16 (Table 50);
- ``nvvm.tcgen05.mma.block_scale`` (9.7.16.10.7 "Block Scaling"): kinds mxf8f6f4 (e4m3 / e5m2, scale_vec::1X),
  mxf4 (e2m1, 2X) and mxf4nvf4 (e2m1, block32 = 2X, block16 = 4X), UE8M0 (or, mxf4nvf4 block16, UE4M3) scale
  factors (so e2m1 with UE8M0 per 16 is mxf4nvf4 block16 with scale format 1: 9.7.16.10.7's table of kinds,
  scale types and vector sizes lists .ue8m0 with 2X and 4X, .ue4m3 with 4X only), M = 128; the block-scaled instruction descriptor (Table 44); scale factors in tensor memory
  duplicated in the four 32-lane partitions, row r in lane r % 32 and column + r / 32, the byte (1X), half word
  (2X) or whole word (4X) the scale factor A / B ID selects (9.7.16.10.7.2 / .3); e2m1 two to a byte in shared
  memory, no padding (9.7.16.10.4.6), the lower K index in the low 4 bits;
- ``nvvm.tcgen05.commit`` (9.7.16.12.1 "tcgen05.commit"): one arrival on the mbarrier once the tcgen05.mma /
  tcgen05.cp the thread issued before it complete;
- ``nvvm.tcgen05.ld`` / ``nvvm.tcgen05.st`` (9.7.16.8.3 / 9.7.16.8.4) with shapes 32x32b, 16x64b, 16x128b,
  16x256b (9.7.16.2.3 "Data Movement Shape", "Matrix fragments for shape ..."), ``nvvm.tcgen05.wait``
  (9.7.16.8.5);
- ``nvvm.tcgen05.cp`` (9.7.16.8.2 "tcgen05.cp") shapes 128x256b, 4x256b, 128x128b and 32x128b.warpx4 (the 32
  rows to each 32-lane partition, the usual way to load scale factors), no decompression;
- ``nvvm.tcgen05.fence`` (9.7.16.6.4 "tcgen05.fence"): orders tcgen05 ops around thread synchronisation; the
  emulator runs each op in program order, so it does nothing;
- ``nvvm.tcgen05.mma_smem_desc``: the 64-bit descriptor from its fields (bit 46 = 1, the fixed 0b001).

Asynchrony, as the emulator's wgmma / cp.async / bulk tensor copy models: tcgen05.mma and tcgen05.cp are
queued per issuing thread; a tcgen05.commit takes the queue; the queued operations run, in issue order, and
the commit's mbarrier gets its arrival when a thread next waits on (or tests) that mbarrier (at once when
threads already wait on it). So D in tensor memory changes only when the MMA completes: a kernel that reads
D with tcgen05.ld without waiting on the commit's mbarrier reads the old cells, as it may on the GPU. Operands
are read from shared memory at issue and must be unchanged when the MMA runs (PTX ISA 9.7.16.10: the source
memory of A / B must not be modified until the MMA completes): a kernel that overwrites a stage too early fails. tcgen05.ld / tcgen05.st access tensor memory at once
(``tcgen05.wait`` has nothing left to wait for). Operations never committed are dropped when the CTA ends.

Shared-memory descriptors: the Blackwell layout of the wgmma descriptor (start address, LBO, SBO >> 4 in the
same bits; swizzle in bits 61-63: 0 none, 2 128B, 4 64B, 6 32B = the wgmma codes 1, 2, 3 shifted by one bit)
plus the fixed 0b001 in bits 46-48, so the canonical layouts, the swizzle and the address arithmetic are
those of :mod:`tilecore.emulate.hopper` (imported). Not emulated (the launch fails naming them): base offset
!= 0, the absolute-address LBO mode (bit 52), 128B swizzle with 32-byte atoms (mode 1), sparsity, f16 D,
the f6 / f4 types of kinds f8f6f4 / mxf8f6f4, block-scaled K = 96 or M = 64, cta_group::2 with M = 128 or block
scaling, A in tensor memory, ``.ws``.

CTA pairs (clusters, ``.cta_group::2``): alloc / dealloc / relinquish (:mod:`.emulate_tmem`), tcgen05.mma with
M = 256 (:func:`_mma_pair_issue`), tcgen05.commit ``.multicast::cluster`` (:func:`commit`); each CTA of a
cluster has its own tensor memory (the extension's per-CTA state).
"""

from __future__ import annotations

import ctypes
import re
from functools import partial

import numpy as np

from tilecore.emulate import context as C
from tilecore.emulate import hopper
from tilecore.emulate.memcheck import ATOMIC, STORE
from tilecore.emulate.optable import EmulatorOps, OpRow, RuntimeSymbol
from tilecore.emulate.runtime import WaitToken

from . import emulate_tmem as T
from .emulate_tmem import TensorMemory, split_address

NAME = "sm100-tcgen05"

# ---------------------------------------------------------------- instruction descriptor
# PTX ISA 9.7.16.4.2 "Instruction descriptor", Table 42 (.kind::tf32, ::f16, ::f8f6f4, ::i8): field -> (bit, width)
IDESC_FIELDS = {
    "sparse_sel": (0, 2), "sparse": (2, 1), "saturate": (3, 1), "dtype": (4, 2), "atype": (7, 3), "btype": (10, 3),
    "neg_a": (13, 1), "neg_b": (14, 1), "trans_a": (15, 1), "trans_b": (16, 1), "n3": (17, 6), "m4": (24, 5),
    "max_shift": (30, 2),
}
# kind -> the atype / btype codes of Table 42 the emulator runs (E2M3 3, E3M2 4, E2M1 5 of f8f6f4 are not)
AB_TYPES = {"f16": {0: "f16", 1: "bf16"}, "tf32": {2: "tf32"}, "f8f6f4": {0: "e4m3", 1: "e5m2"},
            "i8": {0: "u8", 1: "s8"}}
D_TYPES = {"f16": {1: "f32"}, "tf32": {1: "f32"}, "f8f6f4": {1: "f32"}, "i8": {2: "s32"}}  # F16 = 0 not run
K_BYTES = 32  # K of one MMA: 16 f16 / bf16, 8 tf32, 32 8-bit elements (PTX ISA "tcgen05.mma", valid shapes)
KINDS = ("f16", "tf32", "f8f6f4", "i8")


def check_shape(what: str, m: int, n: int, n8_at_128: bool = False) -> None:
    """PTX ISA 9.7.16.2.1, Table 39, cta_group::1 dense: M 64 or 128; N up to 256, a multiple of 8 with M = 64
    and, for the dense kinds (``n8_at_128``), with M = 128 too (tileiras' SASS has such MMAs: instruction
    descriptors 0x08030000, f16 M 128 N 8, and 0x080204a8, s8 M 128 N 8); else (block-scaled kinds) of 16."""
    step = 8 if m == 64 or n8_at_128 else 16
    if m not in (64, 128) or not step <= n <= 256 or n % step:
        n128 = 8 if n8_at_128 else 16
        raise ValueError(f"{what}: M = {m}, N = {n} is not a cta_group::1 shape (M 64 with N a multiple of 8 up "
                         f"to 256, or M 128 with N a multiple of {n128} up to 256)")


def decode_idesc(idesc: int, kind: str) -> dict:
    """The fields of a 32-bit instruction descriptor of ``.kind::<kind>`` (ValueError for what is not run)."""
    f = {name: (idesc >> lo) & ((1 << w) - 1) for name, (lo, w) in IDESC_FIELDS.items()}
    what = f"instruction descriptor {idesc & 0xFFFFFFFF:#010x} (.kind::{kind})"
    if f["sparse"]:
        raise ValueError(f"{what}: sparsity (bit 2) is not emulated")
    a, b = AB_TYPES[kind].get(f["atype"]), AB_TYPES[kind].get(f["btype"])
    d = D_TYPES[kind].get(f["dtype"])
    if a is None or b is None or d is None:
        raise ValueError(f"{what}: atype {f['atype']} / btype {f['btype']} / dtype {f['dtype']} is not a "
                         f"combination the emulator runs (atype / btype {AB_TYPES[kind]}, dtype {D_TYPES[kind]})")
    if kind in ("f16", "i8") and (a == "bf16") != (b == "bf16"):
        raise ValueError(f"{what}: A is {a} and B is {b} (.kind::f16 needs both f16 or both bf16)")
    if kind == "i8" and (f["neg_a"] or f["neg_b"]):
        raise ValueError(f"{what}: negate A / B must be 0 for .kind::i8")
    if kind != "i8" and f["saturate"]:
        raise ValueError(f"{what}: saturate (bit 3) is only for .kind::i8")
    if kind == "tf32" and (f["trans_a"] or f["trans_b"]):
        raise ValueError(f"{what}: transposed (MN-major) tf32 operands need the 128B swizzle with 32-byte atoms "
                         "(PTX ISA 9.7.16.10.1, Table 52), which the emulator does not model")
    m, n = f["m4"] << 4, f["n3"] << 3
    check_shape(what, m, n, n8_at_128=True)
    esize = hopper.ELEMENT_BYTES[a]
    if esize == 1 and f["trans_b"] and n % 16:
        raise ValueError(f"{what}: an MN-major 8-bit B needs N a multiple of 16 (PTX ISA Table 50), N = {n}")
    return {"kind": kind, "a": a, "b": b, "d": d, "m": m, "n": n, "k": K_BYTES // esize, "neg_a": f["neg_a"],
            "neg_b": f["neg_b"], "a_kmajor": not f["trans_a"], "b_kmajor": not f["trans_b"],
            "saturate": f["saturate"]}


# ---------------------------------------------------------------- block scaling
# PTX ISA 9.7.16.4.2, the block-scaled instruction descriptor (Table 44, .kind::mxf8f6f4 / mxf4 / mxf4nvf4):
# sparsity (2), scale factor B ID (4-5), atype (7-9), btype (10-12), negate A / B (13, 14), transpose A / B
# (15, 16), N >> 3 (17-22), scale format (23: UE4M3 = 0, UE8M0 = 1), M >> 4 (24-28), scale factor A ID (29-30),
# K = 96 (31, mxf4nvf4 only: not emulated). 9.7.16.10.7 "Block Scaling": D = (A * scale_A) (B * scale_B) + D,
# scale_A M x V, scale_B V x N with V = 1 (scale_vec::1X, mxf8f6f4, blocks of 32), 2 (2X / block32, mxf4 and
# mxf4nvf4, blocks of 32) or 4 (4X / block16, mxf4nvf4, blocks of 16) per MMA (Tables 54, 55).
BS_KINDS = ("mxf8f6f4", "mxf4", "mxf4nvf4")
BS_AB_TYPES = {"mxf8f6f4": {0: "e4m3", 1: "e5m2"}, "mxf4": {1: "e2m1"}, "mxf4nvf4": {1: "e2m1"}}
BS_VEC = {("mxf8f6f4", ""): 1, ("mxf8f6f4", "default"): 1, ("mxf8f6f4", "block32"): 1, ("mxf4", ""): 2,
          ("mxf4", "default"): 2, ("mxf4", "block32"): 2, ("mxf4nvf4", "block32"): 2, ("mxf4nvf4", "block16"): 4}
E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def decode_idesc_block_scaled(idesc: int, kind: str, vec: int) -> dict:
    """The fields of a block-scaled instruction descriptor (ValueError for what is not run)."""
    def bits(lo: int, w: int) -> int:
        return (idesc >> lo) & ((1 << w) - 1)

    what = f"instruction descriptor {idesc & 0xFFFFFFFF:#010x} (.kind::{kind}, {vec} scale factor(s) per row)"
    if bits(2, 1):
        raise ValueError(f"{what}: sparsity (bit 2) is not emulated")
    if bits(31, 1):
        raise ValueError(f"{what}: K = 96 (bit 31) is not emulated")
    a, b = BS_AB_TYPES[kind].get(bits(7, 3)), BS_AB_TYPES[kind].get(bits(10, 3))
    if a is None or b is None:
        raise ValueError(f"{what}: atype {bits(7, 3)} / btype {bits(10, 3)} is not a type the emulator runs for "
                         f".kind::{kind} ({BS_AB_TYPES[kind]}; the padded f6 / f4 formats of mxf8f6f4 are not run)")
    trans_a, trans_b = bits(15, 1), bits(16, 1)
    if kind != "mxf8f6f4" and (trans_a or trans_b):
        raise ValueError(f"{what}: .kind::{kind} has no transpose (PTX ISA Table 49)")
    sf = "ue8m0" if bits(23, 1) else "ue4m3"
    if sf == "ue4m3" and (kind != "mxf4nvf4" or vec != 4):
        raise ValueError(f"{what}: UE4M3 scale factors only with .kind::mxf4nvf4 and block16 (PTX ISA Table 55)")
    m, n = bits(24, 5) << 4, bits(17, 6) << 3
    if m != 128:
        raise ValueError(f"{what}: M = {m}; the emulator runs block-scaled MMAs with M = 128 only")
    check_shape(what, m, n)
    sfa_id, sfb_id = bits(29, 2), bits(4, 2)
    for name, sid in (("A", sfa_id), ("B", sfb_id)):
        if sid % vec:
            raise ValueError(f"{what}: scale factor {name} ID {sid} must be a multiple of {vec} (PTX ISA "
                             "9.7.16.10.7.2 / .3)")
    return {"kind": kind, "a": a, "b": b, "d": "f32", "m": m, "n": n, "k": 32 if kind == "mxf8f6f4" else 64,
            "neg_a": bits(13, 1), "neg_b": bits(14, 1), "a_kmajor": not trans_a, "b_kmajor": not trans_b,
            "saturate": 0, "vec": vec, "sf": sf, "sfa_id": sfa_id, "sfb_id": sfb_id}


def read_scales(tm: TensorMemory, addr: int, rows: int, vec: int, sid: int, sf: str) -> np.ndarray:
    """(rows, vec) scale factors at tensor-memory address ``addr`` (PTX ISA 9.7.16.10.7: duplicated in the four
    32-lane partitions; row r in lane r % 32, column + r / 32, bytes ``sid`` .. ``sid + vec - 1`` of the word)."""
    lane0, c0 = split_address(addr)
    ncols = (rows + 31) // 32
    parts = np.ascontiguousarray(tm.cells[:, c0:c0 + ncols]).reshape(4, 32, ncols)
    if lane0 or not all(np.array_equal(parts[0], parts[q]) for q in (1, 2, 3)):
        raise ValueError(f"the scale factors at tensor-memory address {addr & 0xFFFFFFFF:#x} must start at lane 0 and "
                         "be duplicated in all four 32-lane partitions (PTX ISA 9.7.16.10.7)")
    r = np.arange(rows)
    codes = parts[0].view(np.uint8).reshape(32, ncols, 4)[r % 32, r // 32][:, sid:sid + vec].astype(np.int64)
    if sf == "ue8m0":
        return np.where(codes == 255, np.nan, np.ldexp(1.0, codes - 127))
    from tilecore.emulate.warp import _f8_table

    return np.array(_f8_table("e4m3"))[codes & 0x7F]


def operand_bytes(smem: hopper.SharedMemory, desc: int, rows: int, k: int, elem: str, k_major: bool):
    """(host addresses, bytes) of an operand's elements (e2m1: its bytes, two elements each, K-major);
    ValueError when they are not in the CTA's shared memory."""
    e = hopper.ELEMENT_BYTES.get(elem, 1)
    if elem == "e2m1":
        host = smem.host(hopper.operand_addresses(desc, rows, k // 2, 1, True), 1)
    else:
        host = smem.host(hopper.operand_addresses(desc, rows, k, e, k_major), e)
    return host, smem.read(host, e)


def decode_operand(raw: np.ndarray, rows: int, k: int, elem: str) -> np.ndarray:
    """(rows, k) values of an operand's bytes (e2m1: two to a byte, the lower K index in the low 4 bits)."""
    if elem == "e2m1":
        raw = raw[..., 0]
        return E2M1_VALUES[np.stack([raw & 15, raw >> 4], axis=-1).reshape(rows, k)]
    return hopper.decode(raw, elem)


def unchanged(snapshot, smem: hopper.SharedMemory) -> list[np.ndarray]:
    """The bytes of ``snapshot`` ((host, bytes) read when the op was issued), read again; ValueError when they
    changed (PTX ISA 9.7.16.10: "the source memory of an A or B matrix must not be modified while the MMA
    instruction using those matrices has not completed"; the same for tcgen05.cp's source)."""
    out = []
    for host, raw in snapshot:
        now = smem.read(host, raw.shape[-1])
        if not np.array_equal(now, raw):
            raise ValueError("shared memory it reads changed after it was issued and before it completed (undefined "
                             "in PTX: wait for the tcgen05.commit's mbarrier before overwriting the operands)")
        out.append(now)
    return out


# ---------------------------------------------------------------- shared-memory descriptor
# PTX ISA 9.7.16.4.1 "Shared memory descriptor": start >> 4 (0-13), LBO >> 4 (16-29), SBO >> 4 (32-45), fixed
# 0b001 (46-48), base offset (49-51), LBO mode (52), swizzle (61-63: 0 none, 1 128B with 32B atoms, 2 128B,
# 4 64B, 6 32B).
def wgmma_descriptor(desc: int) -> int:
    """The wgmma (Hopper) descriptor with the same fields, for :func:`tilecore.emulate.hopper.operand_addresses`
    (ValueError for fields that are not emulated)."""
    desc &= (1 << 64) - 1
    what = f"shared-memory descriptor {desc:#018x}"
    if (desc >> 46) & 7 != 1:
        raise ValueError(f"{what}: bits 46-48 must hold the fixed value 0b001")
    if (desc >> 52) & 1:
        raise ValueError(f"{what}: the absolute-address leading-dimension mode (bit 52) is not emulated")
    swz = desc >> 61
    if swz not in (0, 2, 4, 6):
        raise ValueError(f"{what}: swizzle mode {swz} is " + ("128B with 32-byte atoms, not emulated" if swz == 1
                                                                else "invalid"))
    return (desc & ((1 << 46) - 1)) | (desc & (7 << 49)) | ((swz >> 1) << 62)


def make_descriptor(start: int, lbo: int, sbo: int, base: int = 0, lbo_mode: int = 0, swizzle: int = 0) -> int:
    """The descriptor of ``nvvm.tcgen05.mma_smem_desc`` (``start`` / ``lbo`` / ``sbo`` already >> 4)."""
    return ((start & 0x3FFF) | (lbo & 0x3FFF) << 16 | (sbo & 0x3FFF) << 32 | 1 << 46 | (base & 7) << 49
            | (lbo_mode & 1) << 52 | (swizzle & 7) << 61)


# ---------------------------------------------------------------- MMA
def d_lanes(m: int, lane0: int) -> np.ndarray:
    """Tensor-memory lane of each row of D (PTX ISA "Data path layout organization", cta_group::1)."""
    i = np.arange(m)
    if m == 128:
        if lane0:
            raise ValueError(f"an M = 128 D must start at lane 0, not lane {lane0}")
        return i
    if lane0 not in (0, 16):
        raise ValueError(f"an M = 64 D must start at lane 0 or 16, not lane {lane0}")
    return lane0 + 32 * (i // 16) + i % 16


def run_mma(form: dict, lanes: np.ndarray, col: int, snapshot: list, accumulate: bool, scales: tuple | None,
            tm: TensorMemory, smem: hopper.SharedMemory) -> None:
    """D (tensor memory) = A B (+ D), A (M x K) and B (N x K as stored) the bytes ``snapshot`` (read through the
    descriptors at issue) still holds; with ``scales`` (the scale factors' tensor-memory addresses,
    block-scaled kinds) each block of K / V elements of a row of A / column of B is multiplied by its scale
    factor first."""
    raw_a, raw_b = unchanged(snapshot, smem)
    mma_compute(form, raw_a, raw_b, lanes, col, accumulate, scales, tm)


def mma_compute(form: dict, raw_a, raw_b, lanes: np.ndarray, col: int, accumulate: bool, scales: tuple | None,
                tm: TensorMemory) -> None:
    """D (tensor memory) = A B (+ D) from the operands' bytes (see :func:`run_mma`)."""
    m, n, k = form["m"], form["n"], form["k"]
    a = decode_operand(raw_a, m, k, form["a"]) * (-1 if form["neg_a"] else 1)  # (m, k)
    b = decode_operand(raw_b, n, k, form["b"]) * (-1 if form["neg_b"] else 1)  # (n, k)
    if scales is not None:
        vec = form["vec"]
        sa = read_scales(tm, scales[0], m, vec, form["sfa_id"], form["sf"])
        sb = read_scales(tm, scales[1], n, vec, form["sfb_id"], form["sf"])
        a = a * np.repeat(sa, k // vec, axis=1)
        b = b * np.repeat(sb, k // vec, axis=1)
    cols = col + np.arange(n)
    cells = tm.cells[lanes[:, None], cols[None, :]]
    if form["d"] == "s32":
        c = cells.view(np.int32).astype(np.int64) if accumulate else 0
        dm = a.astype(np.int64) @ b.astype(np.int64).T + c
        if form["saturate"]:
            dm = np.clip(dm, -(1 << 31), (1 << 31) - 1)
        out = (dm & 0xFFFFFFFF).astype(np.uint32)
    else:
        # exact products summed exactly with D and rounded once to f32 (the model of the wgmma rows:
        # :func:`tilecore.emulate.hopper.wgmma`; the ISA leaves the internal precision open)
        c = cells.view(np.float32).astype(np.float64) if accumulate else np.zeros((m, n))
        with np.errstate(over="ignore", invalid="ignore"):  # -inf x 0, inf - inf: NaN, silently as on a GPU
            prod = a[:, None, :] * b[None, :, :]
            terms = np.concatenate([prod, c[:, :, None]], axis=2).reshape(m * n, k + 1)
            out = hopper.exact_sums(terms).reshape(m, n).astype(np.float32).view(np.uint32)
    tm.cells[lanes[:, None], cols[None, :]] = out


# ---------------------------------------------------------------- tcgen05.cp
# shape code (the Tcgen05CpShape enum) -> (name, rows, bytes per row)
CP_SHAPES = {0: ("128x256b", 128, 32), 1: ("4x256b", 4, 32), 2: ("128x128b", 128, 16), 4: ("32x128b", 32, 16)}
CP_WARPX4 = 4  # 32x128b.warpx4: the 32 rows go to each of the four 32-lane partitions


def run_cp(shape: int, lane0: int, col0: int, snapshot: list, tm: TensorMemory, smem: hopper.SharedMemory) -> None:
    """tcgen05.cp: the source (``snapshot``, read at issue) is ``rows`` rows of ``nbytes`` bytes in the canonical
    K-major layout the descriptor describes (a row per lane, its bytes along the columns, 4 to a 32-bit cell)."""
    _, rows, nbytes = CP_SHAPES[shape]
    raw = np.ascontiguousarray(unchanged(snapshot, smem)[0][..., 0])
    for q in range(4 if shape == CP_WARPX4 else 1):
        tm.cells[lane0 + 32 * q:lane0 + 32 * q + rows, col0:col0 + nbytes // 4] = raw.view(np.uint32)


# ---------------------------------------------------------------- tcgen05.ld / st
# shape code (the Tcgen05LdStShape enum) -> (name, registers per .num, largest .num)
LDST_SHAPES = {3: ("32x32b", 1, 128), 0: ("16x64b", 1, 128), 1: ("16x128b", 2, 64), 2: ("16x256b", 4, 32)}


def ldst_cells(shape: int, num: int, lane: int) -> tuple[np.ndarray, np.ndarray]:
    """(lane offset, column offset) of each register of thread ``lane`` of the warp (PTX ISA 9.7.16.2.3.1
    "Matrix fragments for shape .32x32b / .16x64b / .16x128b / .16x256b"; each repetition of the base shape
    takes the next columns): 32x32b: register j = lane ``lane``, column j; 16x64b: lane lane / 4 + 8 (lane % 2),
    column 2 j + (lane / 2) % 2; 16x128b: register 2 k + r = lane lane / 4 + 8 r, column 4 k + lane % 4;
    16x256b: register 4 k + 2 r + c = lane lane / 4 + 8 r, column 8 k + 2 (lane % 4) + c."""
    name = LDST_SHAPES[shape][0]
    j = np.arange(num * LDST_SHAPES[shape][1])
    if name == "32x32b":
        return np.full_like(j, lane), j
    if name == "16x64b":
        return np.full_like(j, lane // 4 + 8 * (lane % 2)), 2 * j + (lane // 2) % 2
    if name == "16x128b":
        return lane // 4 + 8 * (j % 2), 4 * (j // 2) + lane % 4
    return lane // 4 + 8 * ((j // 2) % 2), 8 * (j // 4) + 2 * (lane % 4) + j % 2


# ---------------------------------------------------------------- runtime handlers
LD, ST = 0, 1


def _tid(ctx: int) -> int:
    return C.slot(ctx, C.LINEAR_TID)


def _fail(rt, ctx, e: ValueError) -> None:
    rt.fail_at(ctx, str(e))


def mma_issue(ext, rt, ctx, d, desc_a, desc_b, idesc, enable, kind) -> None:
    """``__sm100_tcgen05_mma``: decode and check now, queue the MMA for the thread's next commit."""
    with rt.lock:
        if rt.is_aborted(ctx):
            return
        if kind & PAIR_KIND:
            return _mma_pair_issue(ext, rt, ctx, d, desc_a, desc_b, idesc, enable, kind & ~PAIR_KIND)
        tm = rt.ext_state(ext, ctx)
        try:
            form = decode_idesc(idesc & 0xFFFFFFFF, KINDS[kind])
            lane0, col = split_address(d)
            lanes = d_lanes(form["m"], lane0)
            tm.check_allocated(col, form["n"], "tcgen05.mma's D")
            snapshot = operand_snapshot(rt, form, desc_a, desc_b, ctx)
        except ValueError as e:
            _fail(rt, ctx, ValueError(f"tcgen05.mma: {e}"))
            return
        tm.issued.setdefault(_tid(ctx), []).append(
            ("tcgen05.mma", partial(run_mma, form, lanes, col, snapshot, bool(enable & 1), None)))


# ---------------------------------------------------------------- cta_group::2 (CTA pairs)
# PTX ISA 9.7.16.10.9 "tcgen05.mma" with ``.cta_group::2`` and 9.7.16.10.5 "Data path layout organization"
# (Layout A: M = 256): one thread of either CTA of a pair (ranks 2k, 2k + 1 of the cluster) issues the MMA for
# both. The instruction descriptor's M is the pair's (256: 128 rows per CTA), N the full N. The A descriptor is
# read in each CTA's shared memory: rows [128 r, 128 r + 128) of A in the pair's CTA r (r = rank & 1); the B
# descriptor too: rows [r N / 2, (r + 1) N / 2) of B (N x K as stored) in CTA r; D's rows [128 r, 128 r + 128)
# go to CTA r's tensor memory at the same address, lane i = row 128 r + i, as a cta_group::1 M = 128 MMA writes.
# M = 128 with cta_group::2 (Layout B, 64 rows per CTA) is not emulated (the launch fails naming it).
PAIR_KIND = 0x100  # bit of the ``kind`` operand: .cta_group::2
PAIR_M = 256


def _mma_pair_issue(ext, rt, ctx, d, desc_a, desc_b, idesc, enable, kind) -> None:
    rank = rt.rank_of(ctx)
    try:
        if rt.ncta < 2 or (rank | 1) >= rt.ncta:
            raise ValueError(f"CTA rank {rank} has no peer CTA (a cluster of {rt.ncta} CTA"
                             f"{'s' * (rt.ncta > 1)}; .cta_group::2 pairs ranks 2k and 2k + 1)")
        idesc &= 0xFFFFFFFF
        m = ((idesc >> IDESC_FIELDS["m4"][0]) & 31) << 4
        if m != PAIR_M:
            raise ValueError(f"instruction descriptor {idesc:#010x}: M = {m}; the emulator runs .cta_group::2 MMAs "
                             f"with M = {PAIR_M} only (128 rows per CTA, PTX ISA 9.7.16.10.5 Layout A)")
        per = idesc & ~(31 << IDESC_FIELDS["m4"][0]) | ((PAIR_M // 2) >> 4) << IDESC_FIELDS["m4"][0]
        form = decode_idesc(per, KINDS[kind])  # the per-CTA view: M = 128, the full N
        n = form["n"]
        if n % 32:
            raise ValueError(f"N = {n}: each CTA of the pair holds N / 2 rows of B, a multiple of 16")
        lane0, col = split_address(d)
        lanes = d_lanes(form["m"], lane0)
        pair = [rank & ~1, rank | 1]
        tms = [rt.ext_state(ext, rank=r) for r in pair]
        for r, tm in zip(pair, tms):
            try:
                tm.check_allocated(col, n, "tcgen05.mma's D")
            except ValueError as e:
                raise ValueError(f"in CTA rank {r}: {e}") from None
        half = dict(form, n=n // 2)
        snapshots = [operand_snapshot(rt, half, desc_a, desc_b, rank=r) for r in pair]
    except ValueError as e:
        _fail(rt, ctx, ValueError(f"tcgen05.mma.cta_group::2: {e}"))
        return
    rt.ext_state(ext, ctx).issued.setdefault(_tid(ctx), []).append(
        ("tcgen05.mma.cta_group::2", partial(run_mma_pair, form, lanes, col, snapshots, bool(enable & 1), tms)))


def run_mma_pair(form: dict, lanes, col: int, snapshots: list, accumulate: bool, tms: list, _tm, smem) -> None:
    """The pair's MMA: B is the two CTAs' halves one after the other; CTA r's D = its rows of A times B (+ D)."""
    (a0, b0), (a1, b1) = [unchanged(snap, smem) for snap in snapshots]
    b = np.concatenate([b0, b1])
    for a, tm in ((a0, tms[0]), (a1, tms[1])):
        mma_compute(form, a, b, lanes, col, accumulate, None, tm)


def operand_snapshot(rt, form: dict, desc_a: int, desc_b: int, ctx: int | None = None, rank: int | None = None) -> list:
    """The (host addresses, bytes) of A and B through their descriptors in the shared memory of thread
    ``ctx``'s CTA (or of rank ``rank``), at issue."""
    smem = hopper.SharedMemory(rt.shared_of(ctx, rank))
    out = []
    for desc, rows, elem, k_major in ((desc_a, form["m"], form["a"], form["a_kmajor"]),
                                      (desc_b, form["n"], form["b"], form["b_kmajor"])):
        hd = wgmma_descriptor(desc)
        if hopper.decode_descriptor(hd)["base_offset"]:
            raise ValueError(f"shared-memory descriptor {desc:#018x}: a base offset is not emulated")
        out.append(operand_bytes(smem, hd, rows, form["k"], elem, k_major))
    return out


def mma_bs_issue(ext, rt, ctx, d, desc_a, desc_b, idesc, enable, sfa, sfb, code) -> None:
    """``__sm100_tcgen05_mma_bs``: a block-scaled MMA (``code``: kind index | scale factors per row << 4)."""
    kind, vec = BS_KINDS[code & 15], code >> 4
    with rt.lock:
        if rt.is_aborted(ctx):
            return
        tm = rt.ext_state(ext, ctx)
        try:
            form = decode_idesc_block_scaled(idesc & 0xFFFFFFFF, kind, vec)
            lane0, col = split_address(d)
            lanes = d_lanes(form["m"], lane0)
            tm.check_allocated(col, form["n"], "tcgen05.mma's D")
            for name, addr, rows in (("A", sfa, form["m"]), ("B", sfb, form["n"])):
                tm.check_allocated(split_address(addr)[1], (rows + 31) // 32, f"the scale factors of {name}")
            snapshot = operand_snapshot(rt, form, desc_a, desc_b, ctx)
        except ValueError as e:
            _fail(rt, ctx, ValueError(f"tcgen05.mma.block_scale: {e}"))
            return
        tm.issued.setdefault(_tid(ctx), []).append(
            ("tcgen05.mma.block_scale", partial(run_mma, form, lanes, col, snapshot, bool(enable & 1),
                                                (sfa & 0xFFFFFFFF, sfb & 0xFFFFFFFF))))


def cp_issue(ext, rt, ctx, taddr, desc, shape) -> None:
    """``__sm100_tcgen05_cp``: check now, queue the copy for the thread's next commit."""
    with rt.lock:
        if rt.is_aborted(ctx):
            return
        tm = rt.ext_state(ext, ctx)
        try:
            name, rows, nbytes = CP_SHAPES[shape]
            lane0, col0 = split_address(taddr)
            if lane0 + rows > T.LANES or ((rows == 128 or shape == CP_WARPX4) and lane0):
                raise ValueError(f"shape .{name} at lane {lane0} leaves the 128 lanes")
            tm.check_allocated(col0, nbytes // 4, f"tcgen05.cp.{name}")
            hd = wgmma_descriptor(desc)
            snapshot = [operand_bytes(hopper.SharedMemory(rt.shared_of(ctx)), hd, rows, nbytes, "u8", True)]
        except ValueError as e:
            _fail(rt, ctx, ValueError(f"tcgen05.cp: {e}"))
            return
        tm.issued.setdefault(_tid(ctx), []).append(("tcgen05.cp", partial(run_cp, shape, lane0, col0, snapshot)))


MULTICAST = 1 << 16  # ``flags`` bit of __sm100_tcgen05_commit: .multicast::cluster (ctaMask in bits 0-15)


def commit(ext, rt, ctx, mbar, flags=0) -> None:
    """``__sm100_tcgen05_commit``: the thread's queued operations complete (run) and the mbarrier gets one
    arrival when a thread waits on it. With ``.multicast::cluster`` (PTX ISA 9.7.16.12.1 "tcgen05.commit":
    ``flags`` has :data:`MULTICAST` and the 16-bit ctaMask) the arrival is on the mbarrier at ``mbar``'s
    shared-memory offset in every CTA of the mask; ``mbar`` may be in a peer CTA (``.shared::cluster``)."""
    t = _tid(ctx)
    with rt.lock:
        if rt.is_aborted(ctx):
            return
        try:
            if flags & MULTICAST:
                mask = flags & 0xFFFF
                if not mask or mask >> rt.ncta:
                    raise ValueError(f"the ctaMask {mask:#06x} must name CTAs of the cluster of {rt.ncta} CTA"
                                     + "s" * (rt.ncta > 1))
                targets = [rt.translate(mbar, r) for r in range(rt.ncta) if (mask >> r) & 1]
            else:
                targets = [mbar]
        except ValueError as e:
            rt.fail_at(ctx, f"tcgen05.commit: {e}")
            return
        for m in targets:
            if m not in rt.mbarriers:
                rt.fail_at(ctx, f"tcgen05.commit on shared address {m % hopper.WINDOW:#x}, which holds no mbarrier "
                                "object (mbarrier.init missing, or after mbarrier.inval)")
                return
        rank = rt.rank_of(ctx)
        tm = rt.ext_state(ext, ctx)
        mine = tm.commits.setdefault(t, [])
        mine.append([tm.issued.pop(t, []), targets, False])
        for m in targets:
            rt.defer_until_wait(ctx, m, partial(_land, ext, rt, rank, t, len(mine) - 1))


def _land(ext, rt, rank: int, t: int, upto: int, ctx: int) -> None:
    """Complete the commits of thread ``t`` of the CTA of rank ``rank`` up to number ``upto`` (in order): run
    their operations, arrive on their mbarriers."""
    tm = rt.ext_state(ext, rank=rank)
    smem = hopper.SharedMemory(rt.shared_of(rank=rank))
    for entry in tm.commits.get(t, [])[:upto + 1]:
        if entry[2]:
            continue
        entry[2] = True
        for name, run in entry[0]:
            try:
                run(tm, smem)
            except ValueError as e:
                rt.fail_at(ctx, f"{name} (issued by thread {t}{f' of CTA rank {rank}' if rt.ncta > 1 else ''}): {e}")
                return
        for m in entry[1]:
            rt.arrive_on(ctx, m, "tcgen05.commit")


def ldst(ext, rt, ctx, what, taddr, buf, code) -> None:
    """``__sm100_tcgen05_ldst``: a warp collective (``.sync.aligned``): the lanes of the warp that have not
    exited gather (the thread's i-th tcgen05.ld / st meets the others' i-th), then every lane's registers
    (``buf``) are read from / written to tensor memory at once and the warp goes on."""
    t = _tid(ctx)
    warp, lane = t >> 5, t & 31
    with rt.lock:
        if rt.is_aborted(ctx):
            return
        tm = rt.ext_state(ext, ctx)
        i = tm.calls.get((t, "ldst"), 0)
        tm.calls[(t, "ldst")] = i + 1
        slot = tm.ldst_slots.get((warp, i))
        if slot is None:
            slot = tm.ldst_slots[(warp, i)] = (WaitToken(f"tcgen05.ld / tcgen05.st in warp {warp}"), {})
        token, lanes = slot
        lanes[lane] = (what, taddr, buf, code, ctx)
        if len(lanes) < rt.warp_members(warp, ctx):
            rt.wait_for(ctx, token)
            return
        del tm.ldst_slots[(warp, i)]
        forms = {(w, c) for w, _, _, c, _ in lanes.values()}
        if len(forms) > 1:
            rt.fail_at(ctx, f"the lanes of warp {warp} execute different tcgen05.ld / tcgen05.st forms together")
        else:
            for ln, (w, a, b, c, cx) in sorted(lanes.items()):
                if not _ldst_lane(tm, rt, cx, warp, ln, w, a, b, c):
                    break
        rt.release(token)


def _ldst_lane(tm, rt, ctx, warp, lane, what, taddr, buf, code) -> bool:
    shape, num = code & 0xFF, code >> 8
    name = f"tcgen05.{'ld' if what == LD else 'st'}.{LDST_SHAPES[shape][0]}.x{num}"
    lane0, col0 = split_address(taddr)
    dl, dc = ldst_cells(shape, num, lane)
    lanes, cols = lane0 + dl, col0 + dc
    q = 32 * (warp % 4)
    try:
        if lanes.min() < q or lanes.max() >= q + 32:
            raise ValueError(f"warp {warp} may access tensor-memory lanes {q}..{q + 31} only (warp % 4 picks the "
                             f"32-lane sub-partition); the address {taddr & 0xFFFFFFFF:#x} reaches lane "
                             f"{int(lanes.max() if lanes.max() >= q + 32 else lanes.min())}")
        tm.check_allocated(col0, int(cols.max()) - col0 + 1, name)
    except ValueError as e:
        _fail(rt, ctx, ValueError(f"{name}: {e}"))
        return False
    regs = np.frombuffer((ctypes.c_uint32 * len(dl)).from_address(buf), np.uint32)
    if what == LD:
        regs[:] = tm.cells[lanes, cols]
    else:
        tm.cells[lanes, cols] = regs
    return True


# ---------------------------------------------------------------- rows
def _kw(op, attr: str) -> str:
    """The keyword of an nvvm enum attribute (``#nvvm.tcgen05_mma_kind<f16>`` -> ``f16``)."""
    return re.findall(r"<(\w+)>", str(op.attributes[attr]))[-1] if attr in op.attributes else ""


def _cta1(op, rw, attr: str) -> None:
    if _kw(op, attr) not in ("", "cta_1"):
        rw.unknown(op)


def _cta_group(op, rw, attr: str) -> bool:
    """True for ``.cta_group::2``, False for ``::1`` (or none)."""
    kw = _kw(op, attr)
    if kw not in ("", "cta_1", "cta_2"):
        rw.unknown(op)
    return kw == "cta_2"


def _i64(rw, v):
    """``v`` (a pointer, i1, i32 or i64 value) as an i64 value (host address / zero-extended)."""
    t = str(v.type)
    if t == "i64":
        return v
    conv = f"%r = llvm.ptrtoint %p : {t} to i64" if t.startswith("!llvm.ptr") else f"%r = llvm.zext %p : {t} to i64"
    sym = f"__sm100_i64_{re.sub(r'[^a-z0-9]', '', t)}"
    rw.define(sym, f"%ctx: !llvm.ptr, %p: {t}", conv, "i64")
    return rw.call(sym, [v], "i64")


def _checked(rw, ptr, ty: str, kind: int):
    return rw.check_access(ptr, ty, kind) if rw.check_bounds else ptr


def _tmem_row(what: int):
    def rewrite(op, rw):
        """``nvvm.tcgen05.alloc %slot, %ncols`` / ``dealloc %taddr, %ncols`` / ``relinquish_alloc_permit``
        (``{group = #nvvm.cta_group<cta_1 | cta_2>}``): :func:`.emulate_tmem.tmem_op`; alloc's shared-memory
        word is checked (4 bytes)."""
        pair = _cta_group(op, rw, "group")
        if what == T.ALLOC:
            slot, n = op.operands
            if str(n.type) != "i32":
                rw.unknown(op)
            addr = _i64(rw, _checked(rw, slot, "i32", STORE))
        elif what == T.DEALLOC:
            taddr, n = op.operands
            addr = _i64(rw, taddr)
        else:
            addr, n = rw.const(0, "i64"), rw.const(0)
        rw.call("__sm100_tmem", [rw.const(what | (T.PAIR if pair else 0)), addr, n], None, can_abort=True)
        return []
    return rewrite


def _segments(op) -> list[int]:
    return list(op.attributes["operandSegmentSizes"]) if "operandSegmentSizes" in op.attributes else []


def _mma(op, rw):
    """``nvvm.tcgen05.mma %d, %adesc, %bdesc, %idesc, %enable {ctaGroup = cta_1 | cta_2, kind =
    f16|tf32|i8|f8f6f4}`` (any collector usage; no scaleInputD, disableOutputLane or aShift; A from shared
    memory); cta_2: :func:`_mma_pair_issue`."""
    seg = _segments(op)
    if len(seg) != 7 or seg[5] or seg[6] or "aShift" in op.attributes or _kw(op, "kind") not in KINDS:
        rw.unknown(op)
    pair = _cta_group(op, rw, "ctaGroup")
    d, a, b, idesc, en = list(op.operands)[:5]
    if str(a.type) != "i64" or str(b.type) != "i64" or str(idesc.type) != "i32":
        rw.unknown(op)
    kind = KINDS.index(_kw(op, "kind")) | (PAIR_KIND if pair else 0)
    rw.call("__sm100_tcgen05_mma", [_i64(rw, d), a, b, idesc, _i64(rw, en), rw.const(kind)], None, can_abort=True)
    return []


def _mma_block_scale(op, rw):
    """``nvvm.tcgen05.mma.block_scale %d, %adesc, %bdesc, %idesc, %enable, %sfa, %sfb {ctaGroup = cta_1, kind =
    mxf8f6f4 | mxf4 | mxf4nvf4[, blockScale = block32 | block16]}`` (A from shared memory): scale_vec::1X for
    mxf8f6f4, 2X for mxf4 and mxf4nvf4 block32, 4X for mxf4nvf4 block16 (PTX ISA Tables 54, 55)."""
    kind = _kw(op, "kind")
    vec = BS_VEC.get((kind, _kw(op, "blockScale")))
    if vec is None or len(op.operands) != 7:
        rw.unknown(op)
    _cta1(op, rw, "ctaGroup")
    d, a, b, idesc, en, sfa, sfb = op.operands
    if str(a.type) != "i64" or str(b.type) != "i64" or str(idesc.type) != "i32":
        rw.unknown(op)
    rw.call("__sm100_tcgen05_mma_bs", [_i64(rw, d), a, b, idesc, _i64(rw, en), _i64(rw, sfa), _i64(rw, sfb),
                                       rw.const(BS_KINDS.index(kind) | vec << 4)], None, can_abort=True)
    return []


def _commit(op, rw):
    """``nvvm.tcgen05.commit %mbar[, %ctaMask : i16] {group = cta_1 | cta_2}`` (shared, shared::cluster or
    generic pointer; with the mask: ``.multicast::cluster``): with bounds checks the mbarrier's 8 bytes must be
    in shared memory (of the cluster)."""
    if len(op.operands) not in (1, 2) or (len(op.operands) == 2 and str(op.operands[1].type) != "i16"):
        rw.unknown(op)
    _cta_group(op, rw, "group")  # which CTAs' MMAs a commit tracks: the issuing thread's, either way here
    flags = rw.const(0)
    if len(op.operands) == 2:
        rw.define("__sm100_commit_flags", "%ctx: !llvm.ptr, %m: i16",
                  f"%z = llvm.zext %m : i16 to i32\n%b = llvm.mlir.constant({MULTICAST} : i32) : i32\n"
                  "%r = llvm.or %z, %b : i32", "i32")
        flags = rw.call("__sm100_commit_flags", [op.operands[1]], "i32")
    rw.call("__sm100_tcgen05_commit", [_i64(rw, _checked(rw, op.operands[0], "i64", ATOMIC)), flags], None,
            can_abort=True)
    return []


def _ldst_form(op, rw, ty: str) -> int:
    """The shape | num << 8 code of a tcgen05.ld / st with register type ``ty`` (no offset, pack, unpack)."""
    shape = {v[0]: k for k, v in LDST_SHAPES.items()}.get(_kw(op, "shape").replace("shape_", ""))
    m = re.fullmatch(r"vector<(\d+)xi32>", ty)
    regs = 1 if ty == "i32" else int(m.group(1)) if m else 0
    if shape is None or "pack" in op.attributes or "unpack" in op.attributes or not regs:
        rw.unknown(op)
    per, largest = LDST_SHAPES[shape][1:]
    num = regs // per
    if regs % per or num > largest or num & (num - 1) or (regs == 1) != (ty == "i32"):
        rw.unknown(op)
    return shape | num << 8, regs


def _ldst_helper(rw, what: int, ty: str, code: int, regs: int) -> str:
    sym = f"__sm100_tcgen05_{'ld' if what == LD else 'st'}_{code}"
    arr = f"!llvm.array<{regs} x i32>"
    body = ["%one = llvm.mlir.constant(1 : i32) : i32", f"%buf = llvm.alloca %one x {arr} : (i32) -> !llvm.ptr",
            "%b = llvm.ptrtoint %buf : !llvm.ptr to i64", f"%what = llvm.mlir.constant({what} : i32) : i32",
            f"%code = llvm.mlir.constant({code} : i32) : i32"]
    if what == ST:
        body.insert(2, f"llvm.store %v, %buf {{alignment = 4 : i64}} : {ty}, !llvm.ptr")
    body.append("llvm.call @__sm100_tcgen05_ldst(%ctx, %what, %t, %b, %code) : (!llvm.ptr, i32, i64, i64, i32) -> ()")
    if what == LD:
        body.append(f"%r = llvm.load %buf {{alignment = 4 : i64}} : !llvm.ptr -> {ty}")
    rw.define(sym, "%ctx: !llvm.ptr, %t: i64" + (f", %v: {ty}" if what == ST else ""), "\n".join(body),
              ty if what == LD else "void")
    return sym


def _ld(op, rw):
    """``%r = nvvm.tcgen05.ld %taddr {shape = ...} : i32 | vector<Nxi32>`` (see :func:`ldst_cells`)."""
    if len(op.operands) != 1:
        rw.unknown(op)
    ty = str(op.results[0].type)
    code, regs = _ldst_form(op, rw, ty)
    return [rw.call(_ldst_helper(rw, LD, ty, code, regs), [_i64(rw, op.operands[0])], ty, can_abort=True)]


def _st(op, rw):
    """``nvvm.tcgen05.st %taddr, %v {shape = ...} : i32 | vector<Nxi32>``."""
    if len(op.operands) != 2:
        rw.unknown(op)
    ty = str(op.operands[1].type)
    code, regs = _ldst_form(op, rw, ty)
    rw.call(_ldst_helper(rw, ST, ty, code, regs), [_i64(rw, op.operands[0]), op.operands[1]], None, can_abort=True)
    return []


def _cp(op, rw):
    """``nvvm.tcgen05.cp %taddr, %sdesc {shape = shape_128x256b | shape_4x256b | shape_128x128b}`` (no multicast)
    or ``{multicast = warpx4, shape = shape_32x128b}`` (cta_group::1, no srcFormat)."""
    shape = {f"shape_{v[0]}": k for k, v in CP_SHAPES.items()}.get(_kw(op, "shape"))
    want = "warpx4" if shape == CP_WARPX4 else "none"
    if shape is None or (_kw(op, "multicast") or "none") != want or "srcFormat" in op.attributes:
        rw.unknown(op)
    _cta1(op, rw, "group")
    taddr, desc = op.operands
    rw.call("__sm100_tcgen05_cp", [_i64(rw, taddr), desc, rw.const(shape)], None, can_abort=True)
    return []


def _nothing(kinds: tuple[str, ...]):
    def rewrite(op, rw):
        """``nvvm.tcgen05.wait <load|store>`` / ``nvvm.tcgen05.fence <before|after>``: nothing to do (the
        emulator performs tcgen05.ld / st at once and every tcgen05 op in program order)."""
        if _kw(op, "kind") not in kinds:
            rw.unknown(op)
        return []
    return rewrite


def _smem_desc(op, rw):
    """``nvvm.tcgen05.mma_smem_desc(%start, %lbo, %sbo, %base, %mode, %swizzle)`` -> i64 (bit layout: PTX ISA
    "Shared memory descriptor"; the start / LBO / SBO operands are already >> 4)."""
    types = [str(v.type) for v in op.operands]
    if types != ["i32", "i32", "i32", "i8", "i1", "i8"]:
        rw.unknown(op)
    body = []
    fields = [("s", "i32", 0x3FFF, 0), ("l", "i32", 0x3FFF, 16), ("d", "i32", 0x3FFF, 32), ("b", "i8", 7, 49),
              ("m", "i1", 1, 52), ("w", "i8", 7, 61)]
    acc = "%fixed"
    body.append(f"%fixed = llvm.mlir.constant({1 << 46} : i64) : i64")
    for name, ty, mask, shift in fields:
        body += [f"%{name}z = llvm.zext %{name} : {ty} to i64", f"%{name}k = llvm.mlir.constant({mask} : i64) : i64",
                 f"%{name}a = llvm.and %{name}z, %{name}k : i64", f"%{name}c = llvm.mlir.constant({shift} : i64) : i64",
                 f"%{name}x = llvm.shl %{name}a, %{name}c : i64", f"%{name}o = llvm.or {acc}, %{name}x : i64"]
        acc = f"%{name}o"
    body.append(f"%r = llvm.bitcast {acc} : i64 to i64")
    rw.define("__sm100_tcgen05_smem_desc", "%ctx: !llvm.ptr, %s: i32, %l: i32, %d: i32, %b: i8, %m: i1, %w: i8",
              "\n".join(body), "i64")
    return [rw.call("__sm100_tcgen05_smem_desc", list(op.operands), "i64")]


_P, _I32, _I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64


def emulator_ops() -> EmulatorOps:
    """The ``sm100`` emulator extension: tensor memory (per-CTA state) and the tcgen05 rows."""
    ext = EmulatorOps(NAME, new_cta=TensorMemory, cta_end=T.cta_end)
    ext.symbols = {
        "__sm100_tmem": RuntimeSymbol("(!llvm.ptr, i32, i64, i32) -> ()", ctypes.CFUNCTYPE(None, _P, _I32, _I64, _I32),
                                      partial(T.tmem_op, ext)),
        "__sm100_tcgen05_mma": RuntimeSymbol("(!llvm.ptr, i64, i64, i64, i32, i64, i32) -> ()",
                                             ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I64, _I32, _I64, _I32),
                                             partial(mma_issue, ext)),
        "__sm100_tcgen05_mma_bs": RuntimeSymbol("(!llvm.ptr, i64, i64, i64, i32, i64, i64, i64, i32) -> ()",
                                                ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I64, _I32, _I64, _I64, _I64, _I32),
                                                partial(mma_bs_issue, ext)),
        "__sm100_tcgen05_commit": RuntimeSymbol("(!llvm.ptr, i64, i32) -> ()", ctypes.CFUNCTYPE(None, _P, _I64, _I32),
                                                partial(commit, ext)),
        "__sm100_tcgen05_ldst": RuntimeSymbol("(!llvm.ptr, i32, i64, i64, i32) -> ()",
                                              ctypes.CFUNCTYPE(None, _P, _I32, _I64, _I64, _I32), partial(ldst, ext)),
        "__sm100_tcgen05_cp": RuntimeSymbol("(!llvm.ptr, i64, i64, i32) -> ()",
                                            ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I32), partial(cp_issue, ext)),
    }
    ext.rows = {
        "nvvm.tcgen05.alloc": OpRow(_tmem_row(T.ALLOC), collective=True),
        "nvvm.tcgen05.dealloc": OpRow(_tmem_row(T.DEALLOC), collective=True),
        "nvvm.tcgen05.relinquish_alloc_permit": OpRow(_tmem_row(T.RELINQUISH), collective=True),
        "nvvm.tcgen05.mma": OpRow(_mma, collective=True),
        "nvvm.tcgen05.mma.block_scale": OpRow(_mma_block_scale, collective=True),
        "nvvm.tcgen05.commit": OpRow(_commit, collective=True),
        "nvvm.tcgen05.ld": OpRow(_ld, collective=True),
        "nvvm.tcgen05.st": OpRow(_st, collective=True),
        "nvvm.tcgen05.cp": OpRow(_cp, collective=True),
        "nvvm.tcgen05.wait": OpRow(_nothing(("load", "store"))),
        "nvvm.tcgen05.fence": OpRow(_nothing(("before", "after"))),
        "nvvm.tcgen05.mma_smem_desc": OpRow(_smem_desc),
    }
    return ext


__all__ = ["emulator_ops", "decode_idesc", "wgmma_descriptor", "make_descriptor", "ldst_cells"]
