"""The ``nv_tileas`` dialect: scheduled, layout-carrying tile IR (output of stage 2).

Tiles stay builtin tensors and pointers / tokens / tiled views keep their nv_tileaa
types (the spec: those types are declared in the alias-aware dialect and survive).

Attributes
    ``#nv_tileas.mem_semantic<N : i32>`` / ``#nv_tileas.mem_scope<N : i32>`` (same
    discriminants as nv_tileaa), ``#nv_tileas.blocked<array<i64: shape>, vec : i64,
    threads : i64>`` (layout, see :mod:`tilecore_tileas.layout`), ``#nv_tileas.atom<"name">``
    (a copy / reduce / MMA atom witness naming an atom of the registry).
Ops
    :data:`OPS`; ``view`` turns a memref into a ``tiled_view``; ``convert_layout`` moves a
    tile between layouts. Terminator: ``nv_tileas_term.yield`` (reduce / scan combiners).
"""

from __future__ import annotations

from tilecore.dialects import DialectDef

from ..irdl_text import OpBuilder, dialect_text
from ..nv_tileaa import OPS as AA_OPS

NAME = "nv_tileas"
TERM = "nv_tileas_term"

ATTRIBUTES = {
    "mem_semantic": ("value",),
    "mem_scope": ("value",),
    "blocked": ("shape", "vec", "threads"),
    "atom": ("name",),
}

OPS = {name: row for name, row in AA_OPS.items() if name not in ("func", "mark_for_reuse", "make_memref",
                                                                  "mma_block_scale")}
OPS.update({
    "make_memref": ("base shape* strides*", "memref", 0),
    "view": ("memref", "view", 0),
    "tiled_load": ("view index* token?", "tile token", 0),
    "tiled_store": ("tile view index* token?", "token", 0),
    "gather_load": ("view offsets index* token?", "tile token", 0),
    "scatter_store": ("tile view offsets index* token?", "token", 0),
    "tiled_atomic_rmw": ("view index* value token?", "token", 0),
    "convert_layout": ("source", "result", 0),
    "block_scaled_mma": ("lhs rhs acc lhs_scale rhs_scale", "result", 0),
})

builder = OpBuilder(NAME, OPS)


def dialect_defs() -> list[DialectDef]:
    """The IRDL definition of nv_tileas (its terminator is the unregistered ``nv_tileas_term.yield``)."""
    return [DialectDef(NAME, dialect_text(NAME, {}, ATTRIBUTES, OPS), allow_unregistered=True, companions=(TERM,))]
