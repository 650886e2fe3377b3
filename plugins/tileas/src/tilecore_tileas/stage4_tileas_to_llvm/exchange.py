"""Data movement between threads through shared memory (layout conversions).

``exchange`` writes every source tile row-major into the shared scratch buffer,
synchronises, lets every thread read the elements its result registers need (an
index function of the result coordinates), and synchronises again so the buffer can
be reused. Permute, broadcast, slices, cat and the generic reduce / scan atoms use it.

A tile larger than the shared memory an exchange may take (:func:`budget`: a 256 x 256 f32 tile is 256 KiB, a CTA
on sm_90a has 227 KiB) goes through in passes (:func:`passes`): each pass writes a window of whole register
repetitions of the sources (:func:`write`'s ``reps``), synchronises, lets every thread read what of its result lies
in the window, and synchronises again. A kernel whose tiles fit takes one pass, the code it always had.
"""

from __future__ import annotations

from tilecore.mlir import dialects, ir
from tilecore.mma import STATIC_SHARED_BYTES, max_shared_bytes

from .codegen import elem_bytes
from .values import TileV


def budget(cg) -> int:
    """Bytes of shared memory one exchange may take: what a CTA on the target may use (``max_shared_bytes``) less
    the scratch buffer's bytes before ``smem_base`` (a pipelined loop's stages, ``CodeGen.shifted_scratch``)."""
    cc = getattr(cg.target, "cc", None)
    limit = max_shared_bytes(cc) if cc is not None else STATIC_SHARED_BYTES
    return max(0, limit - cg.scratch_shift) // 16 * 16


def rep_elems(lay) -> int:
    """Flat elements of one register repetition of blocked layout ``lay`` over all its owner threads: repetition
    ``r`` holds the elements ``r * rep_elems .. (r + 1) * rep_elems - 1`` (``Blocked.static_flat``)."""
    return lay.owners * lay.vec


def passes(cg, tiles) -> list[dict] | None:
    """Windows of ``tiles`` that each fit :func:`budget` (as few as fit, as even as whole repetitions make them), or
    None when all of them fit at once (one pass, as :func:`write` always stored them) or when one register
    repetition alone does not (then the one-pass code stands and the kernel's shared memory check refuses it). A
    window maps a tile's position to the repetitions ``(first, end)`` a pass writes; the windows take the tiles'
    repetitions in order."""
    room = budget(cg)
    total = sum(padded_bytes(cg, t) for t in tiles)
    if total <= room:
        return None
    need = -(-total // room)  # passes at the least; their windows as even as whole repetitions make them
    return _pack(cg, tiles, min(room, (-(-total // need) + 15) // 16 * 16), need) or _pack(cg, tiles, room)


def passes_together(cg, tiles) -> list[tuple[int, int]] | None:
    """:func:`passes` for tiles of one layout read together (the operands of a reduce): the same repetitions
    ``(first, end)`` of every tile in each window (``write``'s ``reps`` for each), or None as there."""
    room = budget(cg)
    if sum(padded_bytes(cg, t) for t in tiles) <= room:
        return None
    sizes = [rep_elems(t.layout) * max(1, elem_bytes(cg.storage_type(t.regs[0].type))) for t in tiles]
    reps = tiles[0].layout.reps

    def fits(n):
        return sum((n * s + 15) // 16 * 16 for s in sizes) <= room

    per_pass = room // sum(sizes)
    while per_pass > 0 and not fits(per_pass):
        per_pass -= 1
    if per_pass <= 0:
        return None
    per_pass = -(-reps // -(-reps // per_pass))  # as few windows, as even
    return [(r, min(reps, r + per_pass)) for r in range(0, reps, per_pass)]


def _pack(cg, tiles, room: int, most: int = 0) -> list[dict] | None:
    """The repetitions of ``tiles`` in order, in windows of at most ``room`` bytes; None when one repetition alone
    does not fit, or when it takes more than ``most`` windows (0: any number)."""
    out, used = [{}], 0
    for i, t in enumerate(tiles):
        lay = t.layout
        size = rep_elems(lay) * max(1, elem_bytes(cg.storage_type(t.regs[0].type)))
        r = 0
        while r < lay.reps:
            fit = min(lay.reps - r, (room - used) // size)
            while fit > 0 and (fit * size + 15) // 16 * 16 > room - used:  # (segments are 16-byte aligned)
                fit -= 1
            if fit <= 0:
                if not used:
                    return None
                out.append({})
                used = 0
                continue
            out[-1][i] = (r, r + fit)
            used += (fit * size + 15) // 16 * 16
            r += fit
    return out if not most or len(out) <= most else None


def padded_bytes(cg, tile, row_pad: int = 0) -> int:
    """Bytes :func:`write` gives ``tile`` (16-byte aligned), its rows ``row_pad`` elements longer."""
    rows = tile.layout.n // tile.shape[-1] if row_pad else 0
    return ((tile.layout.n + rows * row_pad) * max(1, elem_bytes(cg.storage_type(tile.regs[0].type))) + 15) \
        // 16 * 16


def write(cg, tiles, row_pads=None, reps=None) -> list[int]:
    """Store ``tiles`` row-major into consecutive 16-byte aligned segments; their byte offsets.

    ``row_pads`` (one per tile, elements): lengthen each row of the tile in shared memory, so that
    threads reading down a column hit different banks (tensor-core fragment loads).
    ``reps`` (one ``(first, end)`` per tile, no row pads): only those register repetitions (:func:`rep_elems`), their
    first element at the start of the tile's segment (a pass of :func:`exchange`).
    """
    offs, at = [], 0
    for i, (t, pad) in enumerate(zip(tiles, row_pads or [0] * len(tiles))):
        offs.append(at)
        lay = t.layout
        first, end = reps[i] if reps else (0, lay.reps)
        for k in range(first * lay.vec, end * lay.vec):
            cond = cg.and_(cg.valid(lay, k), cg.owner_mask(lay))
            # (repetition r's element lies r * rep_elems on from register 0's: a window's first is register 0's)
            f = cg.padded_flat(lay, k, t.shape[-1] if pad else 0, pad) if not first else \
                cg.flat(lay, k - first * lay.vec)
            cg.masked(cond, lambda f=f, k=k, at=at, t=t: cg.smem_store(at, f, t.regs[k]))
        at += padded_bytes(cg, t, pad) if not reps else \
            ((end - first) * rep_elems(lay) * max(1, elem_bytes(cg.storage_type(t.regs[0].type))) + 15) // 16 * 16
    cg.reserve(at)
    cg.barrier()
    return offs


def exchange(cg, sources, out_shape, pick):
    """A tile of ``out_shape``: register value = ``pick(coords, load)`` after the sources are in smem, where
    ``load(i, index, elem=None)`` reads element ``index`` (row-major) of source ``i`` (as type ``elem``: another
    type of the same bytes, pack / unpack; by default the source's).

    Sources over :func:`budget` go through in :func:`passes`: in each, every load of every result register whose
    element lies in the pass's window reads it (a masked load; the others keep the value an earlier pass read), and
    ``pick`` combines what the last pass holds. (The earlier passes' combinations are dead; :func:`_erase_unused`
    drops them.)"""
    windows = passes(cg, sources)
    lay = cg.layout(out_shape)
    if windows is None:
        offs = write(cg, sources)

        def load(i, index, elem=None):
            return cg.smem_load(offs[i], index, elem or sources[i].regs[0].type)

        regs = []
        for k in range(lay.regs):
            f = cg.flat_in_tile(lay, k)
            regs.append(pick(cg.coords(out_shape, f), load))
        cg.barrier()
        return TileV(lay, regs)
    coords = [cg.coords(out_shape, cg.flat_in_tile(lay, k)) for k in range(lay.regs)]
    held = [[] for _ in range(lay.regs)]  # per result register, what each of its loads read so far
    dead, regs = [], []  # the earlier passes' combinations, the last one's
    for window in windows:
        order = sorted(window)
        at = dict(zip(order, write(cg, [sources[i] for i in order], reps=[window[i] for i in order])))
        dead.extend(regs)
        regs = [pick(coords[k], _windowed_load(cg, sources, window, at, held[k])) for k in range(lay.regs)]
        cg.barrier()
    keep = set(regs)
    for r in dead:  # (once every pass is built: until then, what a pass read is used by the next one only)
        if r not in keep:
            _erase_unused(cg, r)
    return TileV(lay, regs)


def _windowed_load(cg, sources, window, at, held):
    """The ``load`` of one result register in one pass of :func:`exchange`: its ``j``-th call updates ``held[j]``
    (where the element lies in the pass's window; elsewhere the load reads the window's first element and the value
    is not taken) and returns it."""
    calls = iter(range(1 << 30))

    def load(i, index, elem=None):
        j = next(calls)
        el = elem or sources[i].regs[0].type
        if j == len(held):
            held.append(dialects.llvm.mlir_poison(el))
        if i in window:
            first, end = window[i]
            scale = max(1, elem_bytes(cg.storage_type(sources[i].regs[0].type)))
            unit = max(1, elem_bytes(cg.storage_type(el)))
            lo, size = first * rep_elems(sources[i].layout) * scale // unit, \
                (end - first) * rep_elems(sources[i].layout) * scale // unit
            local = cg.op("arith.subi", index, cg.c32(lo)) if lo else index
            inside = cg.cmpi(6, local, cg.c32(size))  # unsigned: below the window wraps past it
            # (selects, no branch: thousands of scf.if in one block make convert-scf-to-cf run out of memory)
            v = cg.smem_load(at[i], cg.select(inside, local, cg.c32(0)), el)
            held[j] = cg.select(inside, v, held[j])
        return held[j]

    return load


def _erase_unused(cg, value) -> None:
    """Erase the arith op that made ``value`` when nothing uses it, and then its operands' (values made once at the
    kernel entry, which ``cg`` caches, stay)."""
    if not isinstance(value, ir.OpResult) or any(value == v for v in _cached(cg)):
        return
    op = value.owner
    if op.name.split(".")[0] != "arith" or len(op.results) != 1 or any(True for _ in value.uses):
        return
    operands = list(op.operands)
    op.erase()
    for v in operands:
        _erase_unused(cg, v)


def _cached(cg):
    yield cg.tid
    yield from cg._slot.values()
    yield from cg._owner.values()
    yield from cg._padded.values()
    for vals in cg._origin.values():
        yield from vals


def replicate(cg, tile: TileV) -> TileV:
    """Make a tile computed by its owner threads only hold by every thread (atomics results)."""
    if tile.layout.owners >= cg.threads:
        return tile
    return exchange(cg, [tile], tile.shape, lambda c, load: load(0, cg.linear(tile.shape, c)))


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
    for 32-bit elements).

    A result over :func:`budget` (a 256 x 256 f32 transpose) goes through in passes over windows of whole register
    repetitions of the result (destination rows): in each, a source element whose destination lies in the window is
    stored (a masked store), the threads read the repetitions of the window, and a barrier frees the buffer for the
    next pass. The swizzle then applies within a window that holds whole rows."""
    lay = src.layout
    el = src.regs[0].type
    out = cg.layout(out_shape)
    st = cg.storage_type(el)
    room, rep_bytes = budget(cg), rep_elems(out) * elem_bytes(st)
    per_pass = out.reps
    if out.n * elem_bytes(st) > room >= rep_bytes + 16:  # as few passes as fit (and a spare slot), windows even
        per_pass = -(-out.reps // -(-out.reps // ((room - 16) // rep_bytes)))
    windows = [(r, min(out.reps, r + per_pass)) for r in range(0, out.reps, per_pass)]
    whole = len(windows) == 1
    span = per_pass * rep_elems(out)  # result elements a window holds
    swizzle = _swizzle(cg, out_shape, out.vec) if whole or len(out_shape) >= 2 and span % out_shape[-1] == 0 else None
    targets = []  # (store condition, destination) per source register, for the passes
    for k in range(0 if whole else lay.regs):
        f = cg.flat(lay, k)
        targets.append((cg.and_(cg.valid(lay, k), cg.owner_mask(lay)), dest_index(cg.coords(lay.shape, f))))
    vt = ir.VectorType.get([out.vec], st)
    regs = []
    for first, end in windows:
        base = first * rep_elems(out)
        for k in range(lay.regs):
            if whole:
                f = cg.flat(lay, k)
                cond = cg.and_(cg.valid(lay, k), cg.owner_mask(lay))
                dst = dest_index(cg.coords(lay.shape, f))
            else:  # an element outside the window goes to a spare slot past it (no branch: see _windowed_load)
                cond, dst = targets[k]
                dst = cg.op("arith.subi", dst, cg.c32(base)) if base else dst
                cond = cg.and_(cond, cg.cmpi(6, dst, cg.c32(span)))  # unsigned: below the window wraps past it
                if swizzle is not None:
                    dst = swizzle(dst)
                cg.smem_store(0, cg.select(cond, dst, cg.c32(span)), src.regs[k])
                continue
            if swizzle is not None:
                dst = swizzle(dst)
            cg.masked(cond, lambda dst=dst, k=k: cg.smem_store(0, dst, src.regs[k]))
        cg.reserve((out.n if whole else span + 1) * elem_bytes(st))
        cg.barrier()
        for rep in range(first, end):
            k0 = rep * out.vec
            if whole:
                f = cg.flat_in_tile(out, k0)
            else:  # the window's repetition rep - first: its flat index less the window's first
                f, valid = cg.flat(out, k0 - first * out.vec), cg.valid(out, k0)
                f = f if valid is None else cg.select(valid, f, cg.c32(0))
            if swizzle is not None:
                f = swizzle(f)
            v = dialects.llvm.load(vt, cg.smem_ptr(0, f, el), alignment=out.vec * elem_bytes(st))
            for j in range(out.vec):
                x = dialects.llvm.extractelement(v, cg.c32(j))
                regs.append(cg.from_storage(x, el))
        cg.barrier()
    return TileV(out, regs)
