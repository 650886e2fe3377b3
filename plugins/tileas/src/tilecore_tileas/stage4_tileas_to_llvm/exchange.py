"""Data movement between threads through shared memory (layout conversions).

``exchange`` writes every source tile row-major into the shared scratch buffer,
synchronises, lets every thread read the elements its result registers need (an
index function of the result coordinates), and synchronises again so the buffer can
be reused. Permute, broadcast, slices, cat and the generic reduce / scan atoms use it.
"""

from __future__ import annotations

from tilecore.mlir import dialects, ir

from .codegen import elem_bytes
from .values import TileV


def padded_bytes(cg, tile, row_pad: int = 0) -> int:
    """Bytes :func:`write` gives ``tile`` (16-byte aligned), its rows ``row_pad`` elements longer."""
    rows = tile.layout.n // tile.shape[-1] if row_pad else 0
    return ((tile.layout.n + rows * row_pad) * max(1, elem_bytes(cg.storage_type(tile.regs[0].type))) + 15) \
        // 16 * 16


def write(cg, tiles, row_pads=None) -> list[int]:
    """Store ``tiles`` row-major into consecutive 16-byte aligned segments; their byte offsets.

    ``row_pads`` (one per tile, elements): lengthen each row of the tile in shared memory, so that
    threads reading down a column hit different banks (tensor-core fragment loads).
    """
    offs, at = [], 0
    for t, pad in zip(tiles, row_pads or [0] * len(tiles)):
        offs.append(at)
        lay = t.layout
        for k in range(lay.regs):
            cond = cg.and_(cg.valid(lay, k), cg.owner_mask(lay))
            f = cg.padded_flat(lay, k, t.shape[-1] if pad else 0, pad)
            cg.masked(cond, lambda f=f, k=k, at=at, t=t: cg.smem_store(at, f, t.regs[k]))
        at += padded_bytes(cg, t, pad)
    cg.reserve(at)
    cg.barrier()
    return offs


def exchange(cg, sources, out_shape, pick):
    """A tile of ``out_shape``: register value = ``pick(coords, offsets)`` after the sources are in smem."""
    offs = write(cg, sources)
    lay = cg.layout(out_shape)
    regs = []
    for k in range(lay.regs):
        f = cg.flat(lay, k)
        valid = cg.valid(lay, k)
        if valid is not None:  # keep the read inside the buffer
            f = cg.select(valid, f, cg.c32(0))
        regs.append(pick(cg.coords(out_shape, f), offs))
    cg.barrier()
    return TileV(lay, regs)


def replicate(cg, tile: TileV) -> TileV:
    """Make a tile computed by its owner threads only hold by every thread (atomics results)."""
    if tile.layout.owners >= cg.threads:
        return tile
    el = tile.regs[0].type
    return exchange(cg, [tile], tile.shape, lambda c, offs: cg.smem_load(offs[0], cg.linear(tile.shape, c), el))


def scatter_gather_vector(cg, src: TileV, out_shape, dest_index):
    """A permutation of elements: each source element is stored at its *destination* flat index
    (``dest_index(coords)``), then every thread reads its groups of ``vec`` consecutive result
    elements with one vector load (``ld.shared.v4`` for 32-bit elements)."""
    lay = src.layout
    el = src.regs[0].type
    for k in range(lay.regs):
        f = cg.flat(lay, k)
        cond = cg.and_(cg.valid(lay, k), cg.owner_mask(lay))
        dst = dest_index(cg.coords(lay.shape, f))
        cg.masked(cond, lambda dst=dst, k=k: cg.smem_store(0, dst, src.regs[k]))
    out = cg.layout(out_shape)
    cg.reserve(out.n * elem_bytes(cg.storage_type(el)))
    cg.barrier()
    st = cg.storage_type(el)
    vt = ir.VectorType.get([out.vec], st)
    regs = []
    for rep in range(out.reps):
        k0 = rep * out.vec
        f = cg.flat(out, k0)
        valid = cg.valid(out, k0)
        if valid is not None:
            f = cg.select(valid, f, cg.c32(0))
        v = dialects.llvm.load(vt, cg.smem_ptr(0, f, el), alignment=out.vec * elem_bytes(st))
        for j in range(out.vec):
            x = dialects.llvm.extractelement(v, cg.c32(j))
            regs.append(cg.op("arith.trunci", x, ty=cg.i1) if str(el) == "i1" else x)
    cg.barrier()
    return TileV(out, regs)
