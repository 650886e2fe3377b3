"""How stage 4 holds nv_tileas values while it generates code.

A tile is a :class:`TileV`: its blocked layout and one SSA scalar per register (see
:mod:`tilecore_tileas.layout`). A 0-d tile is a plain scalar ``ir.Value``. Tokens carry
no run-time value (:data:`TOKEN`): memory ops are emitted in program order. Memrefs and
tiled views are compile-time records of the SSA values they were made from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..layout import Blocked


@dataclass
class TileV:
    layout: Blocked
    regs: list
    recipe: object = None  # a :class:`.recompute.Recipe` when the elements can be recomputed from coordinates

    @property
    def shape(self):
        return self.layout.shape


class _Token:
    def __repr__(self):
        return "TOKEN"


TOKEN = _Token()


@dataclass
class MemrefV:
    """A tensor view: base pointer, element type, sizes (i32 values) and strides (i64 values or ints)."""

    base: object
    element: object
    shape: list
    strides: list
    static_strides: list
    div_by: int = 1
    narrow: str = ""  # an 8- / 4-bit float element (``element`` is then i8: registers hold codes)
    stride_div: list = field(default_factory=list)  # per stride: a known divisor (elements; 1: none known)


@dataclass
class ViewV:
    """A tiled view: the static tile box over a memref."""

    memref: MemrefV
    tile_shape: tuple
    dim_map: tuple
    padding: str
    traversal_strides: tuple | None = None
    extra: dict = field(default_factory=dict)
