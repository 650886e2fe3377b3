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
        f = cg.flat_in_tile(lay, k)
        regs.append(pick(cg.coords(out_shape, f), offs))
    cg.barrier()
    return TileV(lay, regs)


def replicate(cg, tile: TileV) -> TileV:
    """Make a tile computed by its owner threads only hold by every thread (atomics results)."""
    if tile.layout.owners >= cg.threads:
        return tile
    el = tile.regs[0].type
    return exchange(cg, [tile], tile.shape, lambda c, offs: cg.smem_load(offs[0], cg.linear(tile.shape, c), el))


def _swizzle(cg, out_shape, vec: int):
    """The shared-memory position of result element ``f`` for :func:`scatter_gather_vector`, or None.

    A transpose stores down result columns: the ``vec`` consecutive source elements of a thread land
    in ``vec`` consecutive result rows, and the threads of a warp in rows ``vec`` apart, all in the
    same bank (16-way conflicts for a 32-bit 32 x 64 tile). XOR-ing each row's chunk index (groups of
    ``vec``) with ``(row / vec) mod chunks`` spreads those rows over the banks (2-way) while every
    chunk stays contiguous and aligned, so the result is still read with one vector load per chunk.
    Needs 2-D or more, rows of a power-of-two number (>= 2) of chunks.
    """
    row_len = out_shape[-1] if len(out_shape) >= 2 else 0
    chunks = row_len // vec if vec > 1 and row_len % vec == 0 else 0
    if chunks < 2 or chunks & (chunks - 1):
        return None

    def position(f):
        row = cg.op("arith.divui", f, cg.c32(row_len))
        chunk = cg.op("arith.remui", cg.op("arith.divui", f, cg.c32(vec)), cg.c32(chunks))
        key = cg.op("arith.remui", cg.op("arith.divui", row, cg.c32(vec)), cg.c32(chunks))
        base = cg.op("arith.muli", cg.op("arith.xori", chunk, key), cg.c32(vec))
        return cg.op("arith.addi", cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(row_len)), base),
                     cg.op("arith.remui", f, cg.c32(vec)))

    return position


def scatter_gather_vector(cg, src: TileV, out_shape, dest_index):
    """A permutation of elements: each source element is stored at its *destination* flat index
    (``dest_index(coords)``, rearranged by :func:`_swizzle` against bank conflicts), then every thread
    reads its groups of ``vec`` consecutive result elements with one vector load (``ld.shared.v4``
    for 32-bit elements)."""
    lay = src.layout
    el = src.regs[0].type
    out = cg.layout(out_shape)
    swizzle = _swizzle(cg, out_shape, out.vec)
    for k in range(lay.regs):
        f = cg.flat(lay, k)
        cond = cg.and_(cg.valid(lay, k), cg.owner_mask(lay))
        dst = dest_index(cg.coords(lay.shape, f))
        if swizzle is not None:
            dst = swizzle(dst)
        cg.masked(cond, lambda dst=dst, k=k: cg.smem_store(0, dst, src.regs[k]))
    cg.reserve(out.n * elem_bytes(cg.storage_type(el)))
    cg.barrier()
    st = cg.storage_type(el)
    vt = ir.VectorType.get([out.vec], st)
    regs = []
    for rep in range(out.reps):
        k0 = rep * out.vec
        f = cg.flat_in_tile(out, k0)
        if swizzle is not None:
            f = swizzle(f)
        v = dialects.llvm.load(vt, cg.smem_ptr(0, f, el), alignment=out.vec * elem_bytes(st))
        for j in range(out.vec):
            x = dialects.llvm.extractelement(v, cg.c32(j))
            regs.append(cg.from_storage(x, el))
    cg.barrier()
    return TileV(out, regs)
