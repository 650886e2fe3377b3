"""Reductions of MMA accumulator tiles along their columns kept in registers (the row-slice layout,
:class:`~tilecore_tileas.layout.row_slice.RowSlice`).

``nv_tileas.reduce`` along axis 1 of a tile in a tensor-core fragment layout, with a combiner that is one
commutative op of its two arguments (sum, product, max, min, the integer and bitwise ones: what ``ct.sum`` /
``ct.max`` / ... build), is :func:`reduce_rows`:

1. in each thread, a pairwise tree over the registers of each row it holds;
2. butterfly shuffles among the lanes that share the row (``shfl.sync.bfly`` with lane masks 1 and 2: the
   four lanes of a quad of an mma.sync / wgmma accumulator; none for a tensor-memory one, whose threads read
   whole rows);
3. only when the columns are split over warps (warpgroups), each one's partial through shared memory, combined
   in column order by every thread (two barriers).

Every lane combines the same two values (its own and its partner's, in either order: the combiner commutes), so
all threads holding a row hold the same bits. The combiner is the op's own region, inlined as the blocked
reduce atoms inline it (:func:`~tilecore_tileas.atoms.reduce.combine`): NaN and signed-zero behaviour is the
op's. Other reductions (an axis-0 one, several operands such as argmax, a combiner of several ops) take the
fragment to the blocked layout first, as before; so does every reduction with ``--option tileas.row_slices=off``
(:data:`OPTION`).

The result broadcast back over columns (:func:`broadcast_rows`) is the registers of the parent fragment
layout (with the broadcast's column count), copies of the row values: flash attention's ``exp(S - m)`` and
``acc * alpha`` need no shared memory. Element-wise ops between row slices stay row slices
(:func:`~.fragments.unify`); any other consumer gets the tile converted to the blocked layout
(:func:`rows_to_blocked`: each row written once by the thread that owns it, two barriers).
"""

from __future__ import annotations

from tilecore.mlir import ir

from ..atoms.reduce import combine, shuffle
from ..layout.fragment import Fragment, TmemFragment
from ..layout.row_slice import RowSlice, with_columns
from .codegen import elem_bytes
from .exchange import write
from .values import TileV

OPTION = "tileas.row_slices"  # --option tileas.row_slices=off: fragments reduced through the blocked layout
# single ops whose two operands may swap: the combiners a row reduction may apply in any lane order
COMMUTATIVE = frozenset({
    "arith.addf", "arith.mulf", "arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf",
    "arith.addi", "arith.muli", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
    "arith.andi", "arith.ori", "arith.xori"})


def is_row_slice(v) -> bool:
    return isinstance(v, TileV) and isinstance(v.layout, RowSlice)


def is_row_shape(shape, m: int) -> bool:
    """``(m,)`` or ``(m, 1)``: the shapes a row slice of an ``m``-row tile takes."""
    return tuple(shape) in ((m,), (m, 1))


def reduce_admits(cg, op) -> bool:
    """Whether ``op`` (an nv_tileas.reduce) can leave a fragment operand in the row-slice layout: one 2-D
    operand reduced along axis 1 by one commutative op of the combiner's two arguments (and :data:`OPTION` not
    off)."""
    from .pipeline import _option_off

    if _option_off(cg, OPTION):
        return False
    if op.name != "nv_tileas.reduce" or len(op.operands) != 1 or len(op.results) != 1:
        return False
    if not str(op.operands[0].type).startswith("tensor<") or len(ir.RankedTensorType(op.operands[0].type).shape) != 2:
        return False
    if ir.IntegerAttr(op.attributes["dim"]).value != 1 or not len(op.regions[0].blocks):
        return False
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    if len(body.arguments) != 2 or len(ops) != 2:
        return False
    f, term = ops
    args = list(body.arguments)
    return (f.name in COMMUTATIVE and len(f.operands) == 2 and len(f.results) == 1
            and {f.operands[0], f.operands[1]} == {args[0], args[1]}
            and len(term.operands) == 1 and term.operands[0] == f.results[0])


def _row_registers(cg, rs: RowSlice) -> list:
    """i32 row of each register of ``rs`` in this thread."""
    row0 = cg.fragment_origin(rs.parent)[0]
    first = rs.parent.offset(0)[0]
    return [cg.op("arith.addi", row0, cg.c32(d - first)) if d != first else row0 for d in rs.row_offsets]


def _unique(cg, frag):
    """i1: this thread is not a replica of another (threads past the fragment's warp grid repeat it), or None."""
    per = 32 if isinstance(frag, Fragment) else 128
    grid = (frag.warps_m * frag.warps_n) if isinstance(frag, Fragment) else frag.groups_m * frag.groups_n
    return None if grid * per >= cg.threads else cg.cmpi(6, cg.tid, cg.c32(grid * per))


def _tree(rb, op, vals: list):
    """The combine of ``vals`` as a balanced tree of adjacent pairs (independent combines side by side)."""
    while len(vals) > 1:
        vals = [combine(rb, op, [a], [b])[0] for a, b in zip(vals[::2], vals[1::2])] + \
            ([vals[-1]] if len(vals) % 2 else [])
    return vals[0]


def reduce_rows(cg, op, rb, src: TileV) -> TileV:
    """``op`` (:func:`reduce_admits`) of fragment tile ``src`` in the row-slice layout (module docstring)."""
    frag = src.layout
    rs = RowSlice(tuple(ir.RankedTensorType(op.results[0].type).shape), frag)
    rows = [[] for _ in range(rs.regs)]
    for k, v in enumerate(src.regs):
        rows[rs.register_of(frag, k)].append(v)
    accs = [_tree(rb, op, vals) for vals in rows]
    for off in rs.shuffle_offsets:  # lane 4g + t meets 4g + (t ^ off): PTX ISA shfl.sync .bfly (atoms.reduce.shuffle)
        accs = [combine(rb, op, [a], [shuffle(cg, a, off)])[0] for a in accs]
    if rs.column_groups > 1:
        accs = _across_column_groups(cg, rb, op, rs, accs)
    return TileV(rs, accs)


def _across_column_groups(cg, rb, op, rs: RowSlice, accs: list) -> list:
    """Combine the partials of the warps (warpgroups) holding different columns of the same rows: the first lane
    of each row's quad in each group writes its partial to ``[group][row]`` of the scratch buffer, then every
    thread combines its rows' partials in group (column) order."""
    frag, m, groups = rs.parent, rs.n, rs.column_groups
    el = accs[0].type
    col0 = cg.fragment_origin(frag)[1]
    wcol = cg.warp_origin(frag)[1]
    base = cg.op("arith.muli", cg.op("arith.divui", wcol, cg.c32(frag.shape[1] // groups)), cg.c32(m))
    rows = _row_registers(cg, rs)
    writer = cg.and_(cg.cmpi(0, col0, wcol), _unique(cg, frag))

    def store():
        for row, a in zip(rows, accs):
            cg.smem_store(0, cg.op("arith.addi", base, row), a)

    cg.masked(writer, store)
    cg.reserve(groups * m * elem_bytes(cg.storage_type(el)))
    cg.barrier()
    out = []
    for row in rows:
        vals = [cg.smem_load(0, cg.op("arith.addi", row, cg.c32(g * m)) if g else row, el) for g in range(groups)]
        acc = vals[0]
        for v in vals[1:]:
            acc = combine(rb, op, [acc], [v])[0]
        out.append(acc)
    cg.barrier()
    return out


def broadcast_rows(cg, src: TileV, out_shape) -> TileV | None:
    """Row slice ``src`` broadcast to ``out_shape`` (``(M, N)``): the parent fragment layout for N columns, each
    register a copy of its row's value; None when N does not fit the parent's column groups."""
    rs = src.layout
    if len(out_shape) != 2 or out_shape[0] != rs.n:
        return None
    if out_shape[1] == 1:
        return TileV(rs.with_shape(out_shape), list(src.regs))
    frag = with_columns(rs.parent, out_shape[1])
    if frag is None:
        return None
    return TileV(frag, [src.regs[rs.register_of(frag, k)] for k in range(frag.regs)])


def rows_to_blocked(cg, tile: TileV, lay) -> TileV:
    """Row slice ``tile`` (neither uniform nor an index recipe: :func:`.fragments.to_blocked` handles those) in
    blocked layout ``lay``: each row stored once (by the thread of column 0 that is no replica; of a 64-row
    tensor-memory tile, lanes 0-15), then read back blocked."""
    rs, el = tile.layout, tile.regs[0].type
    frag = rs.parent
    col0 = cg.fragment_origin(frag)[1]
    owner = cg.and_(cg.cmpi(0, col0, cg.c32(0)), _unique(cg, frag))
    if isinstance(frag, TmemFragment) and frag.m64:  # lanes l and l + 16 hold the same rows
        owner = cg.and_(owner, cg.cmpi(6, cg.lane_and_warp()[0], cg.c32(16)))
    rows = _row_registers(cg, rs)

    def store():
        for row, v in zip(rows, tile.regs):
            cg.smem_store(0, row, v)

    cg.masked(owner, store)
    cg.reserve(rs.n * elem_bytes(cg.storage_type(el)))
    cg.barrier()
    regs = [cg.smem_load(0, cg.flat_in_tile(lay, k), el) for k in range(lay.regs)]
    cg.barrier()
    return TileV(lay, regs)


def to_row_slice(cg, tile, rs: RowSlice) -> TileV:
    """``tile`` (any layout of ``rs``'s element count, or a scalar) in row-slice layout ``rs``: free for a splat,
    an index tile (recomputed per row) or a row slice of the same rows; else through shared memory."""
    from .fragments import is_fragment, to_blocked, uniform
    from .recompute import in_layout

    if not isinstance(tile, TileV):
        return TileV(rs, [tile] * rs.regs)
    if tile.layout == rs:
        return tile
    if is_row_slice(tile) and tile.layout.rows_key == rs.rows_key:
        return TileV(rs, list(tile.regs), tile.recipe)
    one = uniform(tile)
    if one is not None:
        return TileV(rs, [one] * rs.regs, tile.recipe)
    if tile.recipe is not None:
        return in_layout(cg, tile.recipe, rs.shape, rs)
    if is_fragment(tile) or is_row_slice(tile):
        tile = to_blocked(cg, tile)
    offs = write(cg, [tile])
    el = tile.regs[0].type
    regs = [cg.smem_load(offs[0], row, el) for row in _row_registers(cg, rs)]
    cg.barrier()
    return TileV(rs, regs)


def row_coordinates(cg, rs: RowSlice) -> list:
    """Per register of ``rs``: the i32 coordinates of its element in ``rs.shape`` (row, and 0 for a unit column)."""
    return [[row] + [cg.c32(0)] * (len(rs.shape) - 1) for row in _row_registers(cg, rs)]


def reduce_op(handler):
    """The ``nv_tileas.reduce`` handler: :func:`reduce_rows` for a fragment operand it admits, else ``handler``
    on blocked operands."""
    from .fragments import blocked_operands, is_fragment

    blocked = blocked_operands(handler)

    def h(op, rb):
        src = rb.get(op.operands[0]) if len(op.operands) == 1 else None
        if is_fragment(src) and reduce_admits(rb.data["cg"], op):
            return [reduce_rows(rb.data["cg"], op, rb, src)]
        return blocked(op, rb)

    return h


def preferred(cg, value, src_layout):
    """The layout ``value`` (an old nv_tileas value) gets from its op when that op's operand has layout
    ``src_layout``: a row slice for an admitted reduce of a fragment, a reshape between ``(M,)`` and ``(M, 1)``
    of a row slice, and the parent layout for a broadcast of a row slice; else None."""
    from .fragments import FRAGMENTS

    op = value.owner
    shape = tuple(ir.RankedTensorType(value.type).shape)
    if op.name == "nv_tileas.reduce" and isinstance(src_layout, FRAGMENTS) and reduce_admits(cg, op):
        return RowSlice(shape, src_layout)
    if not isinstance(src_layout, RowSlice):
        return None
    if op.name == "nv_tileas.reshape" and is_row_shape(shape, src_layout.n):
        return src_layout.with_shape(shape)
    if op.name == "nv_tileas.broadcast" and len(shape) == 2 and shape[0] == src_layout.n:
        return src_layout.with_shape(shape) if shape[1] == 1 else with_columns(src_layout.parent, shape[1])
    return None
