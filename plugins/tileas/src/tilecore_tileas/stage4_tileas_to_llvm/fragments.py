"""Tiles in an MMA atom's accumulator layout (:class:`~tilecore_tileas.layout.fragment.Fragment`).

A dot lowered by a tensor-core atom returns its result in the atom's fragment layout. Element-wise ops,
``scf`` control flow and further dots take it as it is, so a K loop carries its accumulator in
registers; every other consumer gets the tile converted to the blocked layout first
(:func:`blocked_operands`), through shared memory unless the tile is uniform (a splat: free).

:func:`preferred_layout` tells ``scf.for`` / ``scf.while`` which loop-carried tiles will come back from
the body in a fragment layout, so the loop carries them in that layout from the start (an
initial splat, the usual zero accumulator, costs nothing to convert).

A fragment reduced along its columns is a row slice of it (:mod:`.row_slice`): the conversions here take
those too (to the blocked layout, and from any layout to a row slice), element-wise ops between row slices
keep them (:func:`unify`), and :func:`preferred_layout` follows reductions, reshapes and broadcasts of them,
so a loop carries flash attention's row statistics in registers.
"""

from __future__ import annotations

from tilecore.mlir import dialects, ir

from ..layout import Blocked
from ..layout.fragment import Fragment, TmemFragment, WgFragment, fragment, tmem_fragment, wg_fragment
from ..layout.row_slice import RowSlice
from .codegen import elem_bytes
from .exchange import _windowed_load, budget, passes, write
from .recompute import in_layout
from .values import TileV

FRAGMENTS = (Fragment, WgFragment, TmemFragment)  # the accumulator layouts of tensor-core atoms


def is_fragment(v) -> bool:
    return isinstance(v, TileV) and isinstance(v.layout, FRAGMENTS)


def uniform(tile: TileV):
    """The single SSA value of a tile whose registers all hold it and that is the same in every thread (a splat),
    else None. (One value in every register is not enough: a row slice of one row per thread, or its broadcast,
    holds a different value in each thread.)"""
    first = tile.regs[0] if tile.regs else None
    if first is None or any(r != first for r in tile.regs):
        return None
    return first if thread_invariant(first) else None


# ops whose result is the same in every thread of the CTA (besides constants and the kernel's arguments)
INVARIANT_SOURCES = ("gpu.block_id", "gpu.grid_dim", "gpu.block_dim", "gpu.cluster_id", "gpu.cluster_dim",
                     "nvvm.read.ptx.sreg.ctaid", "nvvm.read.ptx.sreg.nctaid", "nvvm.read.ptx.sreg.clusterid",
                     "nvvm.read.ptx.sreg.nclusterid", "nvvm.read.ptx.sreg.ntid")


def thread_invariant(value, depth: int = 0) -> bool:
    """Whether ``value`` (lowered IR) is provably the same in every thread: a constant, a kernel argument, a
    loop's induction variable, a block / grid index, or arith / math ops (and ``llvm.mlir.*`` constants) of
    such values (up to a depth: past it, not proven)."""
    if isinstance(value, ir.BlockArgument):
        block = value.owner
        parent = block.owner
        if parent is None or parent.name == "llvm.func":
            return True
        return parent.name == "scf.for" and value.arg_number == 0
    op = value.owner
    name = op.name
    if name in ("arith.constant", "llvm.mlir.constant", "llvm.mlir.poison", "llvm.mlir.undef",
                "llvm.mlir.addressof", "llvm.mlir.zero") or name.startswith(INVARIANT_SOURCES):
        return True
    if depth > 12 or name.split(".")[0] not in ("arith", "math") or op.regions:
        return False
    return all(thread_invariant(v, depth + 1) for v in op.operands)


def fragment_coords(cg, frag: Fragment, k: int):
    """i32 (row, column) of register ``k`` of a fragment tile in this thread."""
    row0, col0 = cg.fragment_origin(frag)
    dr, dc = frag.offset(k)
    return (cg.op("arith.addi", row0, cg.c32(dr)) if dr else row0,
            cg.op("arith.addi", col0, cg.c32(dc)) if dc else col0)


def store_fragment(cg, tile: TileV, at: int, pitch: int) -> None:
    """Store a fragment tile row-major (``pitch`` elements per row) at byte ``at`` of the scratch buffer."""
    for k, v in enumerate(tile.regs):
        row, col = fragment_coords(cg, tile.layout, k)
        cg.smem_store(at, cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(pitch)), col), v)


def store_fragment_rows(cg, tile: TileV, r0: int, band: int, spare: bool = False) -> None:
    """Store rows ``r0 .. r0 + band - 1`` of a fragment tile row-major at byte 0 of the scratch buffer (``spare``:
    the other registers go to the element past the band, a select rather than a branch each)."""
    cols = tile.shape[1]
    for k, v in enumerate(tile.regs):
        row, col = fragment_coords(cg, tile.layout, k)
        local = cg.op("arith.subi", row, cg.c32(r0)) if r0 else row
        index = cg.op("arith.addi", cg.op("arith.muli", local, cg.c32(cols)), col)
        if spare:
            cg.smem_store(0, cg.select(cg.cmpi(6, local, cg.c32(band)), index, cg.c32(band * cols)), v)
            continue
        cg.masked(cg.cmpi(6, local, cg.c32(band)), lambda index=index, v=v: cg.smem_store(0, index, v))


EXCHANGE_BYTES = 32 * 1024  # shared memory one conversion of a fragment tile to blocked registers may take
# Masked stores a thread may make of its fragment registers over the bands of one conversion / TMA store (bands x
# registers: a 128 x 256 f32 accumulator on 128 threads takes 4 bands of 256). Each is a branch (scf.if), and
# convert-scf-to-cf's memory grows faster than their number: 2 x 1024 of them (that accumulator's conversion and its
# TMA store) take 2.4 GB, 4 x 1024 more than 6 GB (std::bad_alloc).
MASKED_STORES = 1024
SPARE_BYTES = 16  # the element past a band that the stores of registers outside it go to (16-byte aligned)


def few_bands(cg, rows: int, row_bytes: int, regs: int, band: int, most: int = 0) -> int | None:
    """Rows per band of a fragment tile (``rows`` rows of ``row_bytes``, ``regs`` registers a thread) that goes
    through shared memory in as few bands as fit :func:`.exchange.budget` (as even as they can be, with
    :data:`SPARE_BYTES` past the band when it is not the whole tile; ``most``: at most that many rows, and a divisor
    of ``rows``), or None when its bands of ``band`` rows (the :data:`EXCHANGE_BYTES` ones) stand: the tile fits the
    budget and they take at most :data:`MASKED_STORES` masked stores. None too when no band fits."""
    room = budget(cg)
    fits = rows * row_bytes <= room
    if fits and -(-rows // band) * regs <= MASKED_STORES:
        return None
    if fits and (not most or rows <= most):
        return rows
    fit = (room - SPARE_BYTES) // row_bytes
    if most:
        fit = min(fit, most)
    if fit < 1:
        return None
    n = -(-rows // fit)
    while most and rows % n:
        n += 1
    return -(-rows // n)


def to_blocked(cg, tile: TileV) -> TileV:
    """``tile`` (a fragment, or a row slice of one: :func:`.row_slice.rows_to_blocked`) in the blocked layout of
    its shape."""
    from .row_slice import is_row_slice, rows_to_blocked

    lay = cg.layout(tile.shape)
    one = uniform(tile)
    if one is not None:
        return TileV(lay, [one] * lay.regs)
    if tile.recipe is not None:
        return in_layout(cg, tile.recipe, tile.shape, lay)
    if is_row_slice(tile):
        return rows_to_blocked(cg, tile, lay)
    el = tile.regs[0].type
    rows, cols = tile.shape
    row_bytes = cols * elem_bytes(cg.storage_type(el))
    if rows * row_bytes <= EXCHANGE_BYTES:
        return _through_smem(cg, tile, lay)
    # A tile larger than the exchange budget (a 128 x 128 f32 accumulator: 64 KiB) goes through in bands of
    # rows: each thread writes the registers of the band and reads back the blocked registers in it. One larger
    # than the shared memory an exchange may take at once (a 256 x 256 f32 accumulator: 256 KiB), or whose bands
    # would take too many masked stores (a 256 x 256 f16 one: 4 bands of 512 registers), in as few bands as fit
    # that (:func:`few_bands`: one pass for the f16 one; two even ones for the f32 one, selects rather than
    # branches: thousands of scf.if in one block make convert-scf-to-cf run out of memory).
    band = max(1, EXCHANGE_BYTES // row_bytes)
    wide = few_bands(cg, rows, row_bytes, len(tile.regs), band)
    if wide == rows:
        return _through_smem(cg, tile, lay)
    big = wide is not None
    band = wide or band
    regs = [None] * lay.regs
    cg.reserve(band * row_bytes + (SPARE_BYTES if big else 0))
    for r0 in range(0, rows, band):
        store_fragment_rows(cg, tile, r0, band, spare=big)
        cg.barrier()
        for k in range(lay.regs):
            local = cg.op("arith.subi", cg.flat_in_tile(lay, k), cg.c32(r0 * cols))
            old = regs[k] if regs[k] is not None else dialects.llvm.mlir_poison(el)
            if big:
                inside = cg.cmpi(6, local, cg.c32(band * cols))
                regs[k] = cg.select(inside, cg.smem_load(0, cg.select(inside, local, cg.c32(0)), el), old)
                continue
            regs[k] = cg.masked(cg.cmpi(6, local, cg.c32(band * cols)), lambda local=local: cg.smem_load(0, local, el),
                                old, el)
        cg.barrier()
    return TileV(lay, regs)


def _through_smem(cg, tile: TileV, lay) -> TileV:
    """``tile`` (a fragment) in blocked layout ``lay`` through shared memory in one pass: every thread stores its
    registers, barrier, loads its blocked ones, barrier."""
    el = tile.regs[0].type
    rows, cols = tile.shape
    store_fragment(cg, tile, 0, cols)
    cg.reserve(rows * cols * elem_bytes(cg.storage_type(el)))
    cg.barrier()
    regs = [cg.smem_load(0, cg.flat_in_tile(lay, k), el) for k in range(lay.regs)]
    cg.barrier()
    return TileV(lay, regs)


def to_fragment(cg, tile, frag: Fragment) -> TileV:
    """``tile`` (any layout, or a scalar broadcast to the shape) in fragment layout ``frag``."""
    if not isinstance(tile, TileV):
        return TileV(frag, [tile] * frag.regs)
    if tile.layout == frag:
        return tile
    one = uniform(tile)
    if one is not None:
        return TileV(frag, [one] * frag.regs)
    if tile.recipe is not None:  # index arithmetic: recomputed at the fragment's coordinates
        return in_layout(cg, tile.recipe, tile.shape, frag)
    if is_fragment(tile) or isinstance(tile.layout, RowSlice):
        tile = to_blocked(cg, tile)
    windows = passes(cg, [tile])
    if windows is not None:  # larger than the exchange budget (a 256 x 256 f32 bias): in passes, selects
        return _to_fragment_in_passes(cg, tile, frag, windows)
    offs = write(cg, [tile])
    el = tile.regs[0].type
    n = frag.shape[1]
    regs = []
    for k in range(frag.regs):
        row, col = fragment_coords(cg, frag, k)
        regs.append(cg.smem_load(offs[0], cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(n)), col), el))
    cg.barrier()
    return TileV(frag, regs)


def _to_fragment_in_passes(cg, tile: TileV, frag: Fragment, windows) -> TileV:
    """:func:`to_fragment` of a blocked ``tile`` over the exchange budget: each pass writes a window of its register
    repetitions (:func:`.exchange.passes`), and each fragment register whose element lies in it reads it (a select
    each, :func:`.exchange._windowed_load`)."""
    n = frag.shape[1]
    index = []
    for k in range(frag.regs):
        row, col = fragment_coords(cg, frag, k)
        index.append(cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(n)), col))
    held = [[] for _ in range(frag.regs)]
    regs = []
    for window in windows:
        at = {0: write(cg, [tile], reps=[window[0]])[0]}
        regs = [_windowed_load(cg, [tile], window, at, held[k])(0, index[k]) for k in range(frag.regs)]
        cg.barrier()
    return TileV(frag, regs)


def to_layout(cg, tile, layout):
    """``tile`` in ``layout`` (blocked, fragment or row slice; None: as it is); scalars and tokens pass
    through."""
    from .row_slice import to_row_slice

    if not isinstance(tile, TileV) or tile.layout == layout:
        return tile
    if isinstance(layout, FRAGMENTS):
        return to_fragment(cg, tile, layout)
    if isinstance(layout, RowSlice):
        return to_row_slice(cg, tile, layout)
    if isinstance(layout, Blocked) and isinstance(tile.layout, (*FRAGMENTS, RowSlice)):
        return to_blocked(cg, tile)
    return tile


def blocked_operands(handler, keep: tuple = ()):
    """Wrap a stage-4 handler so that it sees its fragment and row-slice operands in the blocked layout (those
    whose layout is an instance of a class in ``keep`` as they are).

    The conversions are emitted before the op and bound for this op only: a later use elsewhere (in
    another branch) converts again rather than use a value that does not dominate it.
    """
    def wrapped(op, rb):
        saved = {}
        for v in op.operands:
            t = rb.map.get(v)
            if isinstance(t, TileV) and isinstance(t.layout, (*FRAGMENTS, RowSlice)) and \
                    not isinstance(t.layout, keep) and v not in saved:
                saved[v] = t
                rb.map[v] = to_blocked(rb.data["cg"], t)
        try:
            return handler(op, rb)
        finally:
            rb.map.update(saved)

    wrapped.__name__ = getattr(handler, "__name__", "handler")
    return wrapped


def unify(cg, tiles: list) -> list:
    """Tiles of one element-wise op in one layout: a fragment when any operand is one, else a row slice when
    any operand is one (the others are converted to it), else unchanged."""
    from .row_slice import to_row_slice

    frags = [t.layout for t in tiles if is_fragment(t)]
    slices = [t.layout for t in tiles if isinstance(t.layout, RowSlice)]
    target = frags[0] if frags else slices[0] if slices else None
    if target is None or all(t.layout == target for t in tiles):
        return tiles
    return [to_fragment(cg, t, target) if frags else to_row_slice(cg, t, target) for t in tiles]


# -- which loop-carried tiles come back as fragments -----------------------------------------------
ELEMENTWISE_DIALECTS = ("arith", "math")


def atom_fragment(atom, req):
    """The accumulator layout a tensor-core atom gives an ``m x n`` result: the warpgroup layout for
    ``data["fragment"] == "wgmma"`` (instruction N as ``data["n_ok"]`` admits), the tensor-memory layout for
    ``"tcgen05"`` (:class:`~tilecore_tileas.layout.fragment.TmemFragment`), else the 16 x 8 block layout; on the
    grid ``req.rows_whole`` asks for (one column of warps / warpgroups where the result meets row statistics)."""
    if atom.data.get("fragment") == "tcgen05":
        return tmem_fragment(req.m, req.n, req.threads, req.rows_whole)
    if atom.data.get("fragment") == "wgmma":
        return wg_fragment(req.m, req.n, req.threads, atom.data["n_ok"], req.rows_whole)
    return fragment(req.m, req.n, req.threads, req.rows_whole)


def dot_fragment(cg, op):
    """The result layout of ``nv_tileas.dot`` ``op``: its tensor-core atom's fragment, or None."""
    from ..atoms.mma import is_tensor_core
    from ..atoms.select import mma_request

    if "atom" not in op.attributes:
        return None
    atom = cg.atoms.get(str(op.attributes["atom"]).split('"')[1])
    if not is_tensor_core(atom):
        return None
    return atom_fragment(atom, mma_request(op, cg.threads, cg.target))


def preferred_layout(cg, value, depth: int = 0):
    """The fragment or row-slice layout ``value`` (an old nv_tileas value) will have once lowered, or None
    (blocked)."""
    from .row_slice import preferred

    if depth > 16 or not str(value.type).startswith("tensor<") or not isinstance(value, ir.OpResult):
        return None
    op = value.owner
    name = op.name
    if name in ("nv_tileas.dot", "nv_tileas.block_scaled_mma"):
        return dot_fragment(cg, op)
    if name in ("nv_tileas.reduce", "nv_tileas.reshape", "nv_tileas.broadcast"):
        return preferred(cg, value, preferred_layout(cg, op.operands[0], depth + 1)) if len(op.operands) == 1 else None
    if name in ("scf.for", "scf.if", "scf.while"):
        region = op.regions[1 if name == "scf.while" else 0]
        if not len(region.blocks):
            return None
        term = list(region.blocks[0].operations)[-1]
        i = value.result_number
        return preferred_layout(cg, term.operands[i], depth + 1) if i < len(term.operands) else None
    if name.split(".")[0] in ELEMENTWISE_DIALECTS:
        shape = tuple(ir.RankedTensorType(value.type).shape)
        for v in op.operands:
            if str(v.type).startswith("tensor<") and tuple(ir.RankedTensorType(v.type).shape) == shape:
                lay = preferred_layout(cg, v, depth + 1)
                if lay is not None:
                    return lay
    return None
