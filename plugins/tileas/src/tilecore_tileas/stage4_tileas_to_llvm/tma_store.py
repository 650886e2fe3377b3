"""Epilogue stores by TMA (sm_90+): a tensor-core dot's result tile written to global memory with
``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`` (the TMA copy atom's ``store`` action).

Where it wins, and so where it is used: a tile in an MMA fragment layout (a dot's accumulator and the
element-wise epilogue on it) stored through a plain 2-D view, or a ``(1, M, N)`` (up to 5-D) slice of a
rank 3-5 tensor (a batched matmul: the fragment reaches the store through a reshape that only adds unit
dimensions, :func:`fragment_reaches_store`; the box is then 3-5-D with unit outer sizes). Such a tile goes through shared memory
anyway before a plain store (:func:`.fragments.to_blocked`: every thread writes its fragment registers,
barrier, every thread reads back its blocked registers, barrier, then one ``st.global`` per vector with
its bounds mask); the TMA store keeps the first half and replaces the rest by one instruction::

    every thread: its fragment registers -> the box in shared memory (row-major, rows of the tile);
                  fence.proxy.async.shared::cta (its generic-proxy writes before the async proxy's reads)
    barrier
    thread 0:     cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {col0, row0, ...}], [box];
                  cp.async.bulk.commit_group; cp.async.bulk.wait_group.read 0
    barrier                                  (the box's shared memory may be reused)

The hardware clips the box to the tensor (PTX ISA §9.7.9.25, "cp.async.bulk.tensor": elements out of
bounds are not written), so partial tiles need no masks. A tile over 32 KiB (the exchange budget,
:data:`.fragments.EXCHANGE_BYTES`) goes in bands of rows, one box each; one larger than the shared memory a CTA
may give it (a 256 x 256 f32 accumulator: 256 KiB), or whose 32 KiB bands would take more than
:data:`.fragments.MASKED_STORES` masked stores a thread (a 256 x 256 f16 one), in as few boxes as fit
(:func:`.fragments.few_bands`: two of 128 rows for the f32 one, the registers outside a box's rows stored past it
through a select rather than a branch each; one box for the f16 one): thousands of ``scf.if`` in one block make
``convert-scf-to-cf`` run out of memory. Tiles in the blocked layout keep
the plain store: for them a TMA store would add a shared-memory round trip and two barriers to save the
``st.global`` masks. The map (a kernel parameter, :mod:`.tensor_maps`) is over the tensor as it is (box =
band x tile columns, no swizzle); TMA needs 16-byte aligned bases and strides, checked at run time when
the compiler cannot prove them (the plain store is the fallback, the map optional). Not used: tiles of
more than 256 columns or rows whose bytes are not a multiple of 16, transposed / strided / gathered views,
atomics, ordered (non-weak) stores, 4-bit elements; ``--option tileas.tma_store=off`` (or
``tileas.tma=off``) keeps every plain store.
"""

from __future__ import annotations

from tilecore.mlir import ir
from tilecore.mma import TMA_INTERFACE

from ..atoms import default_atom
from ..stage1_cuda_tile_to_tileaa.common import resize_int
from .codegen import elem_bytes
from .fragments import (
    EXCHANGE_BYTES,
    SPARE_BYTES,
    blocked_operands,
    few_bands,
    is_fragment,
    store_fragment,
    store_fragment_rows,
    to_blocked,
)
from .memory import TiledAccess, _with_op_view, memory_order
from .memory import tiled_store as plain_tiled_store
from .narrow_float import PACKED
from .pipeline import MAX_BOX, TMA_OPTION, _option_off, aligned_16
from .values import TOKEN, TileV

TMA_STORE_OPTION = "tileas.tma_store"  # --option tileas.tma_store=off: epilogues keep st.global
TMA_ALIGN = 128  # the shared box of a tile-mode TMA store: 128-byte aligned
_blocked_store = blocked_operands(plain_tiled_store)


def fragment_reaches_store(reshape) -> bool:
    """Whether the old ``nv_tileas.reshape`` only adds unit dimensions in front of its operand's shape and its
    result is stored (its one use: the value of a ``tiled_store``): the reshape then passes a fragment tile on
    as it is, for :func:`tiled_store`."""
    src = tuple(ir.RankedTensorType(reshape.operands[0].type).shape)
    out = tuple(ir.RankedTensorType(reshape.results[0].type).shape)
    uses = list(reshape.results[0].uses)
    lead = len(out) - len(src)
    return len(src) == 2 and 0 < lead <= 3 and out == (1,) * lead + src and len(uses) == 1 and \
        uses[0].owner.name == "nv_tileas.tiled_store" and uses[0].operand_number == 0


def _plain(op, rb):
    """The plain store; a fragment that came through :func:`fragment_reaches_store`'s reshape is converted to
    the blocked layout of the view's tile (the same registers: blocked layouts depend on the element count)."""
    cg = rb.data["cg"]
    v = op.operands[0]
    tile = rb.get(v)
    shape = tuple(ir.RankedTensorType(v.type).shape)
    if not is_fragment(tile) or tuple(tile.shape) == shape:
        return _blocked_store(op, rb)
    rb.map[v] = TileV(cg.layout(shape), to_blocked(cg, tile).regs)
    try:
        return plain_tiled_store(op, rb)
    finally:
        rb.map[v] = tile


def tiled_store(op, rb):
    """``nv_tileas.tiled_store``: by TMA where :func:`_box` allows it (module docstring), else plain."""
    cg = rb.data["cg"]
    tile = rb.get(op.operands[0])
    box = _box(cg, rb, op, tile)
    if box is None:
        return _plain(op, rb)
    view, index, band, spare, atom, eb = box
    maps = rb.data["tensor_maps"]
    check = aligned_16(cg, view.memref, eb)
    lead = len(view.tile_shape) - 2
    recipe = maps.recipe(view.memref, view.memref.element, (tile.shape[1], band) + (1,) * lead, 0,
                         check is not None)
    if recipe is None:
        return _plain(op, rb)
    tmap = maps.parameter(recipe)

    def tma():
        _store(cg, op, tile, view, index, band, spare, atom, tmap)
        return []

    if check is None:
        tma()
    else:
        cg.if_(check, tma, lambda: (_plain(op, rb), [])[1])
    return [TOKEN]


def _box(cg, rb, op, tile):
    """(view, index, rows per box, spare, atom, element bytes) when ``op`` stores ``tile`` by TMA, else None
    (``spare``: the boxes are :func:`.fragments.few_bands`' and the registers outside a box's rows are stored past
    it)."""
    if _option_off(cg, TMA_OPTION) or _option_off(cg, TMA_STORE_OPTION) or not is_fragment(tile):
        return None
    atom = default_atom(cg.atoms, "copy", cg.target, None, interface=TMA_INTERFACE)
    if atom is None or not atom.data.get("stores") or memory_order(op)[0] is not None:
        return None
    ins = rb.gets(op.operands)
    view = _with_op_view(ins[1], op)
    m = view.memref
    lead = len(view.tile_shape) - len(tile.shape)
    if view.traversal_strides or m.narrow in PACKED or str(m.element) == "i1" or len(tile.shape) != 2 or \
            not 0 <= lead <= 3 or tuple(view.tile_shape) != (1,) * lead + tuple(tile.shape) or m.strides[-1] != 1:
        return None
    rows, cols = tile.shape
    eb = elem_bytes(m.element)
    if (cols * eb) % 16 or cols > MAX_BOX:
        return None
    band = rows
    while band % 2 == 0 and (band > MAX_BOX or band * cols * eb > EXCHANGE_BYTES):
        band //= 2
    wide = few_bands(cg, rows, cols * eb, len(tile.regs), band, MAX_BOX)
    if wide is None and (band > MAX_BOX or band * cols * eb > EXCHANGE_BYTES):
        return None
    return view, [x for x in ins[2:] if x is not TOKEN], wide or band, wide is not None and wide < rows, atom, eb


def _store(cg, op, tile, view, index, band, spare, atom, tmap) -> None:
    """The TMA store of ``tile`` (module docstring), one box of ``band`` rows at a time (``spare``: registers
    outside the box's rows stored to the element past it, a select each rather than a branch)."""
    rows, cols = tile.shape
    acc = TiledAccess(cg, view, index, None, op)
    *outer, row0, col0 = (resize_int(o, cg.i32) for o in acc.origin)
    cg.reserve(band * cols * elem_bytes(view.memref.element) + (SPARE_BYTES if spare else 0))
    cg.smem_align = max(cg.smem_align, TMA_ALIGN)
    leader = cg.cmpi(0, cg.tid, cg.c32(0))
    for r0 in range(0, rows, band):
        if band == rows:
            store_fragment(cg, tile, 0, cols)
        else:
            store_fragment_rows(cg, tile, r0, band, spare)
        atom.lower(cg, "fence_proxy")
        cg.barrier()
        row = cg.op("arith.addi", row0, cg.c32(r0)) if r0 else row0

        def issue(row=row):
            atom.lower(cg, "store", tmap, cg.smem_base, [col0, row, *outer[::-1]])
            atom.lower(cg, "store_commit")
            atom.lower(cg, "store_wait", 0)
            return []

        cg.if_(leader, issue)
        cg.barrier()
