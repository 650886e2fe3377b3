"""Tiles recomputed where they are needed instead of moved between threads through shared memory.

Index arithmetic is cheap to redo and expensive to exchange: ``ct.arange`` (``nv_tileas.iota``), splats, and
what integer ops, comparisons and selects make of them (row / column index tiles, masks such as a causal
attention mask) are functions of an element's coordinates. Such a tile carries a :class:`Recipe` (``TileV``'s
``recipe``): given the i32 coordinates of an element it emits that element's value, the same ops on the same
operands as the tile's own registers. Broadcast, reshape and permute of such a tile, and its conversion to an
MMA fragment layout (an element-wise op meeting an accumulator), then compute every register of the result
from its own coordinates: no shared-memory round trip, no barriers.

Only cheap integer / compare / select ops are followed, and a recipe stops growing past :data:`MAX_COST` ops
(recomputing a long chain per register would cost more than the exchange).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .codegen import create

MAX_COST = 12
# element-wise ops a recipe may repeat: single-result integer arithmetic, comparisons, selects, integer casts
CHEAP_OPS = frozenset({
    "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.cmpi", "arith.select",
    "arith.extsi", "arith.extui", "arith.trunci", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"})


@dataclass(frozen=True)
class Recipe:
    """``emit(cg, coords)``: the element at i32 coordinates ``coords`` (one per dimension); ``cost``: ops per
    element."""

    emit: Callable
    cost: int


def splat(value) -> Recipe:
    """Every element is ``value`` (a scalar defined where the tile is)."""
    return Recipe(lambda cg, coords: value, 0)


def iota(el) -> Recipe:
    """``nv_tileas.iota`` of element type ``el``: the coordinate, extended or truncated to ``el``."""
    from tilecore.mlir import ir

    w = ir.IntegerType(el).width

    def emit(cg, coords):
        c = coords[0]
        if w > 32:
            return cg.op("arith.extui", c, ty=el)
        return cg.op("arith.trunci", c, ty=el) if w < 32 else c

    return Recipe(emit, 1)


def elementwise(name: str, rtype, attrs: dict, operands: list) -> Recipe | None:
    """The recipe of ``name`` applied to ``operands`` (tiles with recipes, or scalars), or None when the op is
    not a cheap one, an operand tile has no recipe, or the chain grows past :data:`MAX_COST`."""
    from .values import TileV

    if name not in CHEAP_OPS:
        return None
    parts = []
    for v in operands:
        if isinstance(v, TileV):
            if v.recipe is None:
                return None
            parts.append(v.recipe)
        else:
            parts.append(v)
    cost = 1 + sum(p.cost for p in parts if isinstance(p, Recipe))
    if cost > MAX_COST:
        return None

    def emit(cg, coords):
        args = [p.emit(cg, coords) if isinstance(p, Recipe) else p for p in parts]
        return create(name, [rtype], args, attrs).results[0]

    return Recipe(emit, cost)


def remapped(recipe: Recipe | None, to_source: Callable, extra: int = 0) -> Recipe | None:
    """The recipe of a tile whose element at ``coords`` is the source's element at ``to_source(cg, coords)``
    (broadcast, reshape, permute)."""
    if recipe is None:
        return None
    return Recipe(lambda cg, coords: recipe.emit(cg, to_source(cg, coords)), recipe.cost + extra)


def reshaped(recipe: Recipe | None, src_shape, out_shape) -> Recipe | None:
    """The recipe of a reshape to ``out_shape``: the source element of the same row-major flat index (when only
    unit dimensions come or go, the coordinates of the other dimensions, unchanged)."""
    src_dims = [i for i, d in enumerate(src_shape) if d != 1]
    out_dims = [i for i, d in enumerate(out_shape) if d != 1]
    if [src_shape[i] for i in src_dims] == [out_shape[i] for i in out_dims]:
        def to_source(cg, c):
            src = [cg.c32(0)] * len(src_shape)
            for i, o in zip(src_dims, out_dims):
                src[i] = c[o]
            return src

        return remapped(recipe, to_source)
    return remapped(recipe, lambda cg, c: cg.coords(src_shape, cg.linear(out_shape, c)), extra=2)


def in_layout(cg, recipe: Recipe, shape, layout):
    """The tile of ``shape`` in ``layout`` (blocked, an MMA fragment or a row slice of one) computed from ``recipe``
    register by register."""
    from ..layout.row_slice import RowSlice
    from .fragments import FRAGMENTS, fragment_coords
    from .row_slice import row_coordinates
    from .values import TileV

    if isinstance(layout, FRAGMENTS):
        regs = [recipe.emit(cg, list(fragment_coords(cg, layout, k))) for k in range(layout.regs)]
    elif isinstance(layout, RowSlice):
        regs = [recipe.emit(cg, coords) for coords in row_coordinates(cg, layout)]
    else:
        regs = [recipe.emit(cg, cg.coords(shape, cg.flat(layout, k))) for k in range(layout.regs)]
    return TileV(layout, regs, recipe)
