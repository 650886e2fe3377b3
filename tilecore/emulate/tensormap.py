"""Tensor maps for the emulator's ``cp.async.bulk.tensor`` (TMA), tile mode.

On the GPU a tensor map is a 128-byte opaque ``CUtensorMap`` that ``cuTensorMapEncodeTiled`` writes; NVIDIA
does not document its bit layout, so the emulator defines its own 128-byte encoding of the same
parameters (:func:`encode_tiled`, read back by :func:`decode`). The kernel receives it as it would a
real one: a pointer to the 128 bytes (here: a kernel argument array), which it hands to
``nvvm.cp.async.bulk.tensor.shared.cluster.global``.

One difference from the driver: ``globalAddress`` is a device address, which does not exist before an
emulated launch (the emulator copies every argument array into launch memory), so the emulator's map
names the tensor as *kernel argument number* ``arg`` plus a byte ``offset`` into that argument's array.

Layout (little endian): magic u32 ``0x50414D54`` ("TMAP") at 0; arg u16 at 4; rank u8 at 6; data type
u8 at 7 (``CUtensorMapDataType``); swizzle u8 at 8 (``CUtensorMapSwizzle``: 0 none, 1 32B, 2 64B, 3 128B);
interleave u8 at 9 (0: NONE, the only one emulated); oob fill u8 at 10 (0: zeros, 1: NaN for float
types, ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA``); L2 promotion u8 at 11 (kept, no
effect); offset u64 at 16; globalDim u32[5] at 24; globalStrides u64[4] at 48 (bytes, of dimensions 1..
rank-1; dimension 0 is contiguous); boxDim u16[5] at 80; elementStrides u8[5] at 90.
"""

from __future__ import annotations

import struct

import numpy as np

MAGIC = 0x50414D54
# CUtensorMapDataType (CUDA driver API): value -> (name, element bytes)
DATA_TYPES = {0: ("uint8", 1), 1: ("uint16", 2), 2: ("uint32", 4), 3: ("int32", 4), 4: ("uint64", 8),
              5: ("int64", 8), 6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2),
              10: ("float32_ftz", 4), 11: ("tfloat32", 4), 12: ("tfloat32_ftz", 4)}
FLOAT_TYPES = {6, 7, 8, 9, 10, 11, 12}
SWIZZLE_BYTES = {0: 0, 1: 32, 2: 64, 3: 128}  # CUtensorMapSwizzle -> bytes
_FMT = "<IHBBBBBB4xQ5I4x4Q5H5B"


def encode_tiled(data_type: int, rank: int, arg: int, global_dim, global_strides, box_dim, element_strides=None,
                 interleave: int = 0, swizzle: int = 0, l2_promotion: int = 0, oob_fill: int = 0,
                 offset: int = 0) -> np.ndarray:
    """The 128 bytes of a tiled tensor map (``cuTensorMapEncodeTiled``'s parameters; ``arg`` / ``offset``
    instead of ``globalAddress``, see above), checked like the driver's documented requirements: rank 1-5,
    dims in [1, 2^32 - 1], strides multiples of 16 below 2^40, boxDim in [1, 256] with boxDim[0] * element size
    a multiple of 16 bytes (and at most the swizzle width), elementStrides in [1, 8]."""
    esize = DATA_TYPES[data_type][1]
    element_strides = list(element_strides or [1] * rank)
    if not 1 <= rank <= 5 or len(global_dim) != rank or len(global_strides) != rank - 1 or len(box_dim) != rank \
            or len(element_strides) != rank:
        raise ValueError("tensor map: rank must be 1..5 with rank dims, rank - 1 strides, rank box sizes")
    if any(not 1 <= d < 1 << 32 for d in global_dim) or any(s % 16 or not 0 < s < 1 << 40 for s in global_strides):
        raise ValueError("tensor map: globalDim in [1, 2^32 - 1], globalStrides multiples of 16 below 2^40")
    if any(not 1 <= b <= 256 for b in box_dim) or (box_dim[0] * esize) % 16 or \
            (swizzle and box_dim[0] * esize > SWIZZLE_BYTES[swizzle]) or any(not 1 <= e <= 8 for e in element_strides):
        raise ValueError("tensor map: boxDim in [1, 256], boxDim[0] * element size a multiple of 16 bytes and "
                         "at most the swizzle width, elementStrides in [1, 8]")
    if interleave or oob_fill not in (0, 1) or swizzle not in SWIZZLE_BYTES or offset % 16:
        raise ValueError("tensor map: interleave NONE only, oobFill 0 / 1, swizzle 0..3, offset 16-byte aligned")
    pad = lambda v, n: list(v) + [0] * (n - len(v))  # noqa: E731
    raw = struct.pack(_FMT, MAGIC, arg, rank, data_type, swizzle, interleave, oob_fill, l2_promotion, offset,
                      *pad(global_dim, 5), *pad(global_strides, 4), *pad(box_dim, 5), *pad(element_strides, 5))
    return np.frombuffer(raw.ljust(128, b"\0"), np.uint8).copy()


def decode(raw: bytes) -> dict:
    """The fields of an emulator tensor map (ValueError when it is not one)."""
    f = struct.unpack_from(_FMT, raw)
    if f[0] != MAGIC:
        raise ValueError("the tensor map operand does not point to an emulator tensor map "
                         "(tilecore.emulate.tensormap.encode_tiled)")
    rank = f[2]
    return {"arg": f[1], "rank": rank, "data_type": f[3], "swizzle": f[4], "interleave": f[5], "oob_fill": f[6],
            "offset": f[8], "global_dim": list(f[9:9 + rank]), "global_strides": list(f[14:14 + rank - 1]),
            "box_dim": list(f[18:18 + rank]), "element_strides": list(f[23:23 + rank]),
            "esize": DATA_TYPES[f[3]][1]}


def _box(tm: dict, coords: list[int], window: int):
    """The box at ``coords`` (innermost first) of tile mode: per element, dimension 0 fastest, (in bounds,
    byte offset in the tensor (0 out of bounds), byte offset in the shared box after the tensor map's swizzle
    of its shared-window address ``window``); and the box's bytes."""
    from .hopper import swizzle

    rank, esize = tm["rank"], tm["esize"]
    if any(e != 1 for e in tm["element_strides"]):
        raise ValueError("tensor maps with elementStrides other than 1 are not emulated")
    box = tm["box_dim"]
    strides = [esize] + tm["global_strides"]
    idx = np.indices(box[::-1]).reshape(rank, -1)[::-1]  # (rank, n): dimension 0 fastest
    g = idx + np.array(coords, np.int64)[:, None]
    inside = np.all((g >= 0) & (g < np.array(tm["global_dim"], np.int64)[:, None]), axis=0)
    src = (np.where(inside[None, :], g, 0) * np.array(strides, np.int64)[:, None]).sum(axis=0)
    n = idx.shape[1]
    offs = window + np.arange(n, dtype=np.int64) * esize
    smem = swizzle(offs, SWIZZLE_BYTES[tm["swizzle"]]) - window
    if smem.min() < 0 or smem.max() >= n * esize:
        raise ValueError(f"a swizzled box of {n * esize} bytes that is not a whole number of 128-byte lines")
    return inside, src, smem, n * esize


def box_copy(tm: dict, base: int, coords: list[int], dst: int, window_dst: int) -> int:
    """Copy the box at ``coords`` (innermost first) of the tensor at host address ``base`` to host address
    ``dst`` (shared-window address ``window_dst``, for the swizzle) in tile mode (PTX ISA, "Tensor Access
    Modes: Tiled mode", "Bounding box", "Out-of-bound access": box elements outside [0, globalDim) read as
    zero, or NaN with the NaN fill for float types); the box is stored densely, dimension 0 fastest, then
    the 16-byte units permuted by the tensor map's swizzle on the shared address (the pattern of
    :func:`.hopper.swizzle`). Returns the bytes written (the complete-tx count)."""
    import ctypes

    esize = tm["esize"]
    inside, src, dest, nbytes = _box(tm, coords, window_dst)
    hi = int(src.max()) + esize
    mem = np.frombuffer((ctypes.c_uint8 * hi).from_address(base), np.uint8)
    vals = mem[src[:, None] + np.arange(esize)]  # (n, esize)
    if (~inside).any():
        fill = np.zeros(esize, np.uint8)
        if tm["oob_fill"] == 1 and tm["data_type"] in FLOAT_TYPES:
            nan = {2: np.array([0x7FFF], np.uint16), 4: np.array([0x7FFFFFFF], np.uint32),
                   8: np.array([0x7FFFFFFFFFFFFFFF], np.uint64)}[esize]
            fill = nan.view(np.uint8)
        vals[~inside] = fill
    out = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(dst), np.uint8)
    out[dest[:, None] + np.arange(esize)] = vals
    return nbytes


def box_store(tm: dict, base: int, coords: list[int], src: int, window_src: int) -> int:
    """The other direction (PTX ISA §9.7.9.25, "cp.async.bulk.tensor", ``.global.shared::cta``, tile mode):
    write the box held at host address ``src`` (shared-window address ``window_src``; dense, dimension 0
    fastest, in the tensor map's swizzle) to the tensor at ``base`` at ``coords``. Box elements outside
    [0, globalDim) are not written ("Out-of-bound access": a store clips the box to the tensor). Returns the
    box's bytes."""
    import ctypes

    esize = tm["esize"]
    inside, dst, smem, nbytes = _box(tm, coords, window_src)
    box = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(src), np.uint8)
    if inside.any():
        dst, smem = dst[inside], smem[inside]
        mem = np.frombuffer((ctypes.c_uint8 * (int(dst.max()) + esize)).from_address(base), np.uint8)
        mem[dst[:, None] + np.arange(esize)] = box[smem[:, None] + np.arange(esize)]
    return nbytes
