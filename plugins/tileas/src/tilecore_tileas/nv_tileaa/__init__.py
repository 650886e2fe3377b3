"""The ``nv_tileaa`` dialect: alias-aware tile algebra (output of stage 1, input of stage 2).

Representation
==============

Tiles are builtin ranked tensors (``tensor<128x64xf16>``) so that element-wise math
stays in ``arith`` / ``math`` and structured control flow in ``scf``; a 0-d tile is
its plain scalar (``i32``, ``f32``, ``!nv_tileaa.ptr<f32, 1 : i32>``).

Types
    ``!nv_tileaa.ptr<pointee, addrspace : i32>`` (global = 1),
    ``!nv_tileaa.memref<element, array<i64: shape>, array<i64: strides>, addrspace : i32>``
    (dynamic entries are ``-9223372036854775808``),
    ``!nv_tileaa.tiled_view<array<i64: tile>, !nv_tileaa.memref<...>, array<i64: dim_map>, "padding">``
    (the static tile box through which TileAS accesses a memref; produced in stage 2),
    ``!nv_tileaa.mem_token``.
Attributes
    ``#nv_tileaa.mem_semantic<N : i32>`` / ``#nv_tileaa.mem_scope<N : i32>`` with the
    discriminants of :data:`MEM_SEMANTIC` / :data:`MEM_SCOPE` (the same in nv_tileas),
    ``#nv_tileaa.kernel_spec<num_warps, cluster_dim, num_ctas, occupancy, max_registers>``.
Ops
    :data:`OPS` (operand / result groups per op). Terminators: ``nv_tileaa_term.return``
    (ends ``nv_tileaa.func``) and ``nv_tileaa_term.yield`` (ends reduce / scan combiners).
"""

from __future__ import annotations

from tilecore.dialects import DialectDef

from ..irdl_text import OpBuilder, dialect_text

NAME = "nv_tileaa"
TERM = "nv_tileaa_term"
GLOBAL_ADDRSPACE = 1
DYNAMIC = -(2**63)

MEM_SEMANTIC = {"weak": 0, "relaxed": 1, "acquire": 2, "release": 3, "acq_rel": 4}
MEM_SCOPE = {"none": 0, "tl_blk": 1, "device": 2, "sys": 3}

TYPES = {
    "ptr": ("pointee", "addrspace"),
    "memref": ("element", "shape", "strides", "addrspace"),
    "tiled_view": ("tile_shape", "memref", "dim_map", "padding"),
    "mem_token": (),
}
ATTRIBUTES = {
    "mem_semantic": ("value",),
    "mem_scope": ("value",),
    "kernel_spec": ("num_warps", "cluster_dim", "num_ctas", "occupancy", "max_registers"),
}

PRINT_SLOTS = 64  # printf arguments an nv_tileaa.print holds (cuTile's print_tko takes any number; 8 were too few)

# name -> (operand groups, result groups, regions)
OPS = {
    "func": ("", "", 1),
    "mark_for_reuse": ("operands*", "", 0),
    "make_token": ("", "token", 0),
    "join_tokens": ("tokens*", "token", 0),
    "assume": ("value", "result", 0),
    "make_memref": ("base shape* strides*", "memref", 0),
    "tiled_load": ("memref index* token?", "tile token", 0),
    "tiled_store": ("tile memref index* token?", "token", 0),
    # through a gather / scatter view: ``offsets`` (a tile) gives the coordinates along ``sparse_dim``
    "gather_load": ("memref offsets index* token?", "tile token", 0),
    "scatter_store": ("tile memref offsets index* token?", "token", 0),
    "tiled_atomic_rmw": ("memref index* value token?", "token", 0),
    "load": ("ptrs mask? padding? token?", "tile token", 0),
    "store": ("ptrs value mask? token?", "token", 0),
    "atomic_rmw": ("ptrs arg mask? token?", "result token", 0),
    "atomic_cas": ("ptrs cmp value mask? token?", "result token", 0),
    "offset": ("ptr offset", "result", 0),
    "int_to_ptr": ("source", "result", 0),
    "ptr_to_int": ("source", "result", 0),
    "ptr_to_ptr": ("source", "result", 0),
    "broadcast": ("source", "result", 0),
    "reshape": ("source", "result", 0),
    "permute": ("source", "result", 0),
    "extract_slice": ("source index*", "result", 0),
    "insert_slice": ("source dest index*", "result", 0),
    "cat": ("lhs rhs", "result", 0),
    "convert_layout": ("source", "result", 0),
    # an op a plugin lowers by feature name (attribute ``feature``); see stage 2's plugin rewriter
    "plugin": ("a0? a1? a2? a3?", "result?", 0),
    "iota": ("", "result", 0),
    "generate": ("operands*", "result", 1),
    # reduce / scan operands may differ in type (argmax: values and indices): one slot each
    "reduce": ("o0 o1? o2? o3?", "r0 r1? r2? r3?", 1),
    "scan": ("o0 o1? o2? o3?", "r0 r1? r2? r3?", 1),
    "dot": ("lhs rhs acc", "result", 0),
    "mma_block_scale": ("lhs rhs acc lhs_scale rhs_scale", "result", 0),
    # printf arguments: PRINT_SLOTS optional operands (each its own type), then the token
    "print": (" ".join(f"a{i}?" for i in range(PRINT_SLOTS)) + " token?", "token?", 0),
    "assert": ("condition", "", 0),
    "pack": ("source", "result", 0),
    "unpack": ("source", "result", 0),
    "gdc_wait": ("token?", "result_token", 0),
    "memory_fence": ("token", "result_token", 0),
    "gdc_launch_dependents": ("token?", "result_token", 0),
    "global": ("", "", 0),
    "get_global": ("", "result", 0),
}

COMBINER_SLOTS = 4

builder = OpBuilder(NAME, OPS)


def dialect_defs() -> list[DialectDef]:
    """The IRDL definition of nv_tileaa (its terminators are unregistered ``nv_tileaa_term`` ops)."""
    return [DialectDef(NAME, dialect_text(NAME, TYPES, ATTRIBUTES, OPS), allow_unregistered=True,
                       companions=(TERM,))]
