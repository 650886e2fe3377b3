"""The ``cuda_tile`` dialect (IRDL) as the TileIR bytecode reader produces it.

MLIR representation
===================

Module
    A ``builtin.module`` with attributes ``cuda_tile.bytecode_version = "13.4"`` and,
    when the file has a producer section, ``cuda_tile.producer = "..."``. Its body holds
    the ``cuda_tile.global`` ops, then one ``cuda_tile.entry`` per function, in file
    order. (There is no ``cuda_tile.module`` wrapper op in the IR: an IRDL op region
    would need a terminator.)

Entry functions
    ``"cuda_tile.entry"() ({ ^bb0(%arg0: T0, ...): ... "cuda_tile_term.return"() }) {...}``
    Attributes: ``sym_name = "name"``, ``function_type = (T0, ...) -> ()`` (a builtin
    FunctionType over cuda_tile types), ``kernel`` (unit; every function the bytecode
    holds is a kernel entry), ``optimization_hints = #cuda_tile.optimization_hints<{...}>``
    (always present; ``{default = {}}`` or ``{sm_90 = {num_cta_in_cga = 2 : i32, ...}}``),
    ``private`` (unit, only when the visibility bit is set). The single block's arguments
    are the kernel parameters, e.g. ``!cuda_tile.tile<array<i64>, !cuda_tile.ptr<f16>>``
    for a pointer and ``!cuda_tile.tile<array<i64>, i32>`` for a scalar.

Globals
    ``"cuda_tile.global"() {sym_name = "g", value = dense<...> : tensor<4xf32>,
    alignment = 16 : i64, sym_visibility = "public" | "private", constant (unit, optional)}``.

Terminators
    IRDL cannot mark an op as a terminator, so the four terminators are unregistered
    ops of the companion namespace ``cuda_tile_term``: ``cuda_tile_term.return``,
    ``cuda_tile_term.yield``, ``cuda_tile_term.continue``, ``cuda_tile_term.break``
    (operands: the yielded values; no results). Contexts made by tilecore allow
    unregistered dialects for this (``DialectDef.allow_unregistered``). A stage that
    removes cuda_tile must also treat ``cuda_tile_term`` as illegal.

Types (parameters are attributes; IRDL prints them in ``<...>``)
    ``!cuda_tile.tile<array<i64: 128, 64>, f16>`` - shape then element type; a 0-d tile
    (scalar) is ``!cuda_tile.tile<array<i64>, f32>``; elements are builtin ``i1 i4 i8 i16
    i32 i64 f16 bf16 f32 tf32 f64 f8E4M3FN f8E5M2 f8E8M0FNU f4E2M1FN``,
    ``!cuda_tile.fnv8e5m3fnu`` or ``!cuda_tile.ptr<E>``.
    ``!cuda_tile.ptr<f16>`` - pointer to an element type.
    ``!cuda_tile.tensor_view<f16, array<i64: D, 256>, array<i64: D, 1>>`` - element type,
    shape, strides; a dynamic size/stride is ``D`` = -9223372036854775808
    (:data:`.types.DYNAMIC`, MLIR's ``ShapedType::kDynamic``).
    ``!cuda_tile.partition_view<array<i32: 128, 64>, !cuda_tile.tensor_view<...>,
    array<i32: 0, 1>, "zero">`` - tile shape, tensor view, dim_map, padding value
    (``"none"`` when absent, else ``zero neg_zero nan pos_inf neg_inf``).
    ``!cuda_tile.strided_view<array<i32: tile>, array<i32: traversal_strides>,
    !cuda_tile.tensor_view<...>, array<i32: dim_map>, "padding">``.
    ``!cuda_tile.gather_scatter_view<array<i32: tile>, !cuda_tile.tensor_view<...>,
    sparse_dim : i64, "padding">``.
    ``!cuda_tile.token`` - memory ordering token.
    :mod:`.types` parses these spellings back into Python descriptors.

Attributes
    ``#cuda_tile.div_by<16 : i64, every, along>`` and ``#cuda_tile.bounded<lb, ub>``
    (each optional parameter an ``i64`` or ``unit`` when absent),
    ``#cuda_tile.same_elements<array<i64: ...>>``, ``#cuda_tile.optimization_hints<{...}>``.
    Enum attributes are strings with NVIDIA's spellings (:data:`.ops.ENUMS`):
    signedness ``signed|unsigned``; overflow ``none|no_signed_wrap|no_unsigned_wrap|no_wrap``;
    rounding ``nearest_even|zero|negative_inf|positive_inf|approx|full|nearest_int_to_zero|
    nearest_away``; ``comparison_predicate`` ``equal|not_equal|less_than|...``;
    ``comparison_ordering`` ``ordered|unordered``; ``memory_ordering``
    ``weak|relaxed|acquire|release|acq_rel``; ``memory_scope`` ``tl_blk|device|sys``;
    atomic ``mode`` ``and|or|xor|add|addf|max|min|umax|umin|xchg``.
    Boolean flags (``flush_to_zero``, ``propagate_nan``, ``fast_acc``, ``saturating``,
    ``unsigned_cmp``, ``global``) are unit attributes present only when set.
    Integer attributes (``dim``, ``num_elem``, ``alignment``) are ``i64``; ``permutation``
    is ``array<i32: ...>``; ``inbounds`` is ``array<i1: ...>``; ``constant``'s ``value``
    is ``dense<...> : tensor<shape x elem>`` (``tensor<f32>`` for 0-d); reduce/scan
    ``identities`` is an array of typed scalars (``[0.000000e+00 : f32]``).

Ops
    Names are NVIDIA's mnemonics in the ``cuda_tile`` namespace (``cuda_tile.addf``,
    ``cuda_tile.load_view_tko``, ...), printed in generic form. Operands, results and
    attributes follow the bytecode order given by :data:`.ops.OPS` (one row per op; its
    field grammar is documented in :mod:`.ops`), e.g.

    - ``addf(lhs, rhs) {rounding_mode, [flush_to_zero]} -> result``
    - ``cmpi(lhs, rhs) {comparison_predicate, signedness} -> tile<..., i1>``
    - ``constant() {value} -> result``; ``assume(value) {predicate} -> result``
    - ``make_tensor_view(base, dynamic_shape..., dynamic_strides...)``
      (``operandSegmentSizes = array<i32: 1, nshape, nstrides>``) -> tensor_view
    - ``make_partition_view(tensor_view) -> partition_view``
    - ``load_view_tko(view, index..., [token]) {memory_ordering, [memory_scope],
      [optimization_hints], inbounds}`` (segments ``1, nindex, 0|1``) -> (tile, token)
    - ``store_view_tko(tile, view, index..., [token])`` (segments ``1, 1, nindex, 0|1``) -> token
    - ``get_tile_block_id() -> (x, y, z)``; ``get_index_space_shape(view) -> (d0, ...)``
    - ``mmaf(lhs, rhs, acc) -> result``; ``ftof(source) {rounding_mode} -> result``
    - ``reduce(operands...) {dim, identities}`` with one region whose block takes
      (lhs, rhs) 0-d tiles per operand and ends in ``cuda_tile_term.yield``
    - ``for(lower_bound, upper_bound, step, init_values...)`` (segments ``1, 1, 1, n``)
      with one region: block args (induction variable, iter values...), ends in
      ``cuda_tile_term.continue``; ``loop(init_values...)`` ends in ``continue``/``break``
    - ``if(condition) -> results`` with two regions (then, else), each ending in
      ``cuda_tile_term.yield``

    ``fpowf(source, exponent)`` is NVIDIA's float power (opcode 0x54, spelled ``fpowf`` by
    tileirdisasm); ``fpowi`` takes an integer exponent.

Operand and result groups
    IRDL binds every member of a variadic group to one type, so groups that may mix
    types (``~`` in :data:`.ops.OPS`: for / loop / if / reduce / scan operands and results,
    print_tko ``args``, view ``index`` lists) are declared as 64 optional slots
    (``init_values_0`` ... ``init_values_63``). The op's operand list is unchanged (the
    values in order); only the segment attribute counts slots. An op with more than one
    non-single group carries ``operandSegmentSizes`` / ``resultSegmentSizes``. Read groups
    with :func:`.ops.groups`: ``groups(op)["index"]``, ``groups(op, results=True)["results"]``.
    Example: ``load_view_tko`` with 2 indices and a token has
    ``operandSegmentSizes = array<i32: 1, 1, 1, 0 x 62, 1>`` (view, 64 index slots, token).

Locations
    From the debug section: ``loc("file.py":line:col)`` per op (the same file:line:col
    tileirdisasm -g prints), call sites as ``callsite(...)``, the entry at its
    subprogram's line. An op without debug info gets the name location
    ``loc("<file>:<byte offset>")``, which tilecore prints like a bytecode error.
"""

from .dialect import dialect_defs
from .ops import OPS_BY_NAME, groups
from .types import DYNAMIC, parse_type

__all__ = ["dialect_defs", "DYNAMIC", "OPS_BY_NAME", "groups", "parse_type"]
