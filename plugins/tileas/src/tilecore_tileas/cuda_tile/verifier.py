"""Verifier of cuda_tile modules: IRDL structure, then the type rules users hit first.

IRDL checks operand / result counts, required attributes and enum spellings. The
rules here check what IRDL cannot express: elementwise ops share one tile type;
broadcast / reshape / permute / extract / insert / cat shapes agree; mmaf / mmai are
M x K . K x N -> M x N with allowed element types; views have a tile of their tensor
view's rank, a dim_map that permutes its dimensions, a sparse dimension among them, and are
indexed with as many coordinates as they have dimensions; terminators (the ``cuda_tile_term``
ops) end their block, a ``continue`` / ``break`` ends the iteration of the nearest enclosing
``for`` / ``loop`` through any depth of ``if`` regions with that loop's value types, and a ``yield``
gives its ``if`` the if's result types. A failure is a TilecoreError at the op's location.
"""

from __future__ import annotations

import re
import weakref

from tilecore.errors import TilecoreError, format_location, mlir_error_to_tilecore

from . import types as T
from .ops import groups

UNARY = {"absf", "absi", "ceil", "floor", "cos", "cosh", "sin", "sinh", "tan", "tanh", "exp", "exp2", "log",
         "log2", "sqrt", "rsqrt", "negf", "negi"}
BINARY = {"addf", "subf", "mulf", "divf", "remf", "maxf", "minf", "addi", "subi", "muli", "divi", "remi", "maxi",
          "mini", "andi", "ori", "xori", "shli", "shri", "mulhii", "fpowf", "atan2"}
TERNARY = {"fma"}
CASTS = {"ftof", "ftoi", "itof", "exti", "trunci", "bitcast"}
VIEW_ACCESS = {"load_view_tko", "store_view_tko", "atomic_red_view_tko", "multimem_load_reduce_view_tko",
               "multimem_reduce_view_tko", "multimem_store_view_tko"}

# mmaf: allowed (lhs, rhs) element types -> allowed accumulator element types.
MMAF_TYPES = {
    ("f16", "f16"): {"f16", "f32"},
    ("bf16", "bf16"): {"f32"},
    ("tf32", "tf32"): {"f32"},
    ("f32", "f32"): {"f32"},
    ("f64", "f64"): {"f64"},
    **{(a, b): {"f16", "f32"} for a in ("f8E4M3FN", "f8E5M2") for b in ("f8E4M3FN", "f8E5M2")},
}
MMAI_TYPES = {("i8", "i8"): {"i32"}}


class VerifyError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def short(t) -> str:
    """``tile<128x64xf16>``-style spelling for messages."""
    if isinstance(t, T.Tile):
        dims = "".join(f"{d}x" for d in t.shape)
        return f"tile<{dims}{short(t.element)}>"
    if isinstance(t, T.Ptr):
        return f"ptr<{short(t.pointee)}>"
    if isinstance(t, T.Scalar):
        return t.name.replace("!cuda_tile.", "")
    return t.text.replace("!cuda_tile.", "")


def _types(values) -> list:
    return [T.parse_type(str(v.type)) for v in values]


def _tile(t, what: str) -> T.Tile:
    if not isinstance(t, T.Tile):
        raise VerifyError(f"{what} must be a tile, got {short(t)}")
    return t


def _same(types: list, what: str) -> None:
    if any(t != types[0] for t in types[1:]):
        raise VerifyError(f"{what} must have the same tile type, got {', '.join(short(t) for t in types)}")


def _elementwise(name, op) -> None:
    ts = _types(op.operands) + _types(op.results)
    _same(ts, "operands and result")


FLOAT_ONLY = {"absf", "addf", "subf", "mulf", "divf", "remf", "maxf", "minf", "fma", "negf", "ceil", "floor", "cos",
              "cosh", "sin", "sinh", "tan", "tanh", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "fpowf", "atan2"}
INT_ONLY = {"absi", "addi", "subi", "muli", "divi", "remi", "maxi", "mini", "andi", "ori", "xori", "shli", "shri",
            "mulhii", "negi"}


def _element(t, kind: str, what: str):
    """``t``'s element, which must be an integer (``kind`` "int") or a float ("float")."""
    t = _tile(t, what)
    ok = isinstance(t.element, T.Scalar) and (t.element.is_int() if kind == "int" else t.element.is_float())
    if not ok:
        raise VerifyError(f"{what} must be a tile of {'integers' if kind == 'int' else 'floats'}, got {short(t)}")
    return t.element


def _elementwise_of(kind: str):
    def rule(name, op) -> None:
        _elementwise(name, op)
        _element(_types(op.operands)[0], kind, "operand")
        if kind == "float":
            _float_modifiers(name, op)
    return rule


def _divi(name, op) -> None:
    _elementwise(name, op)
    _element(_types(op.operands)[0], "int", "operand")
    if op.attributes["signedness"].value == "unsigned" and op.attributes["rounding"].value == "negative_inf":
        raise VerifyError("rounding 'negative_inf' is not allowed with 'unsigned' operands "
                          "(unsigned division already rounds toward zero)")


def _compare(name, op) -> None:
    lhs, rhs = _types(op.operands)
    _element(lhs, "float" if name == "cmpf" else "int", "operands")
    res = _tile(_types(op.results)[0], "result")
    _same([lhs, rhs], "operands")
    lhs = _tile(lhs, "operand")
    if res.shape != lhs.shape or res.element != T.Scalar("i1"):
        raise VerifyError(f"result must be {short(T.Tile(lhs.shape, T.Scalar('i1')))}, got {short(res)}")


def _select(name, op) -> None:
    cond, a, b = _types(op.operands)
    res = _types(op.results)[0]
    _same([a, b, res], "values and result")
    cond, a = _tile(cond, "condition"), _tile(a, "value")
    if cond.shape != a.shape or cond.element != T.Scalar("i1"):
        raise VerifyError(f"condition must be {short(T.Tile(a.shape, T.Scalar('i1')))}, got {short(cond)}")


# cast -> (source class, result class, width relation of result to source)
CAST_KINDS = {"exti": ("int", "int", ">"), "trunci": ("int", "int", "<"), "ftof": ("float", "float", None),
              "ftoi": ("float", "int", None), "itof": ("int", "float", None)}


def _width(e) -> int:
    return T.INT_WIDTHS.get(e.text) or T.FLOAT_WIDTHS.get(e.text) or 64


def _cast(name, op) -> None:
    src = _tile(_types(op.operands)[0], "operand")
    res = _tile(_types(op.results)[0], "result")
    if src.shape != res.shape:
        raise VerifyError(f"operand and result shapes differ: {short(src)} -> {short(res)}")
    if name in ("ftof", "exti", "trunci") and src == res:
        raise VerifyError(f"converting {short(src)} to itself is a no-op, which is not allowed")
    if name in CAST_KINDS:
        skind, rkind, rel = CAST_KINDS[name]
        a, b = _element(src, skind, "operand"), _element(res, rkind, "result")
        if rel and not (_width(b) > _width(a) if rel == ">" else _width(b) < _width(a)):
            raise VerifyError(f"{short(src)} -> {short(res)} must {'widen' if rel == '>' else 'narrow'} the "
                              f"integer")
    elif name == "bitcast" and isinstance(src.element, T.Scalar) and isinstance(res.element, T.Scalar) \
            and _width(src.element) != _width(res.element):
        raise VerifyError(f"{short(src)} -> {short(res)} changes the element width")


def _broadcast(name, op) -> None:
    src = _tile(_types(op.operands)[0], "operand")
    res = _tile(_types(op.results)[0], "result")
    if src.element != res.element:
        raise VerifyError(f"element types differ: {short(src)} -> {short(res)}")
    if len(src.shape) != len(res.shape) or any(s not in (1, r) for s, r in zip(src.shape, res.shape)):
        raise VerifyError(f"cannot broadcast {short(src)} to {short(res)}: each source dimension must be 1 "
                          f"or equal the result's, with equal ranks")


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _reshape(name, op) -> None:
    src = _tile(_types(op.operands)[0], "operand")
    res = _tile(_types(op.results)[0], "result")
    if src.element != res.element or _numel(src.shape) != _numel(res.shape):
        raise VerifyError(f"cannot reshape {short(src)} to {short(res)}: element type and element count "
                          f"must be preserved")


def _permute(name, op) -> None:
    src = _tile(_types(op.operands)[0], "operand")
    res = _tile(_types(op.results)[0], "result")
    perm = list(op.attributes["permutation"])
    if sorted(perm) != list(range(len(src.shape))):
        raise VerifyError(f"permutation {perm} is not a permutation of the {len(src.shape)} dimensions of "
                          f"{short(src)}")
    want = T.Tile(tuple(src.shape[p] for p in perm), src.element)
    if res != want:
        raise VerifyError(f"permuting {short(src)} by {perm} gives {short(want)}, not {short(res)}")


def _extract(name, op) -> None:
    g = groups(op)
    src = _tile(_types(g["source"])[0], "source")
    res = _tile(_types(op.results)[0], "result")
    _subtile(src, res, len(g["indices"]))


def _insert(name, op) -> None:
    g = groups(op)
    dst = _tile(_types(g["destination"])[0], "destination")
    val = _tile(_types(g["source"])[0], "source")
    res = _tile(_types(op.results)[0], "result")
    if res != dst:
        raise VerifyError(f"result {short(res)} must have the destination's type {short(dst)}")
    _subtile(dst, val, len(g["indices"]))


def _subtile(big: T.Tile, small: T.Tile, nindices: int) -> None:
    if big.element != small.element or len(big.shape) != len(small.shape) \
            or any(b % s for b, s in zip(big.shape, small.shape)):
        raise VerifyError(f"{short(small)} is not a sub-tile of {short(big)}: ranks and element types must match "
                          f"and each dimension must divide the larger one")
    if nindices != len(big.shape):
        raise VerifyError(f"{nindices} indices given for a rank-{len(big.shape)} tile")


def _cat(name, op) -> None:
    lhs, rhs = (_tile(t, "operand") for t in _types(op.operands))
    res = _tile(_types(op.results)[0], "result")
    dim = op.attributes["dim"].value
    rank = len(lhs.shape)
    if not 0 <= dim < rank or len(rhs.shape) != rank or lhs.element != rhs.element:
        raise VerifyError(f"cannot concatenate {short(lhs)} and {short(rhs)} along dimension {dim}")
    if any(a != b for i, (a, b) in enumerate(zip(lhs.shape, rhs.shape)) if i != dim):
        raise VerifyError(f"cannot concatenate {short(lhs)} and {short(rhs)}: dimensions other than {dim} differ")
    want = T.Tile(tuple(a + b if i == dim else a for i, (a, b) in enumerate(zip(lhs.shape, rhs.shape))),
                  lhs.element)
    if res != want:
        raise VerifyError(f"concatenating {short(lhs)} and {short(rhs)} along {dim} gives {short(want)}, "
                          f"not {short(res)}")


def _mma(name, op) -> None:
    ts = _types(op.operands)
    lhs, rhs, acc = (_tile(t, w) for t, w in zip(ts[:3], ("lhs", "rhs", "acc")))
    res = _tile(_types(op.results)[0], "result")
    if res != acc:
        raise VerifyError(f"result {short(res)} must have the accumulator's type {short(acc)}")
    ranks = {len(lhs.shape), len(rhs.shape), len(acc.shape)}
    if ranks not in ({2}, {3}):
        raise VerifyError(f"operands must all be 2-d (M x K, K x N, M x N) or 3-d (batched), got "
                          f"{short(lhs)}, {short(rhs)}, {short(acc)}")
    *bl, m, k = lhs.shape
    *br, k2, n = rhs.shape
    *ba, m2, n2 = acc.shape
    if k != k2 or m != m2 or n != n2 or not bl == br == ba:
        raise VerifyError(f"shapes must be M x K . K x N -> M x N, got {short(lhs)} . {short(rhs)} -> {short(acc)}")
    table = MMAF_TYPES if name in ("mmaf", "mmaf_scaled") else MMAI_TYPES
    key = (lhs.element.text, rhs.element.text)
    if key not in table or acc.element.text not in table[key]:
        allowed = "; ".join(f"{a} x {b} -> {'/'.join(sorted(c))}" for (a, b), c in table.items())
        raise VerifyError(f"element types {key[0]} x {key[1]} -> {acc.element.text} are not allowed "
                          f"(allowed: {allowed})")


def _view_access(name, op) -> None:
    g = groups(op)
    view = T.parse_type(str(g["view"][0].type))
    if not isinstance(view, T.VIEWS):
        raise VerifyError(f"expected a view operand, got {short(view)}")
    n = len(g["index"])
    if n != view.index_rank:
        raise VerifyError(f"{short(view)} takes {view.index_rank} coordinates, got {n}")
    tile = {"load_view_tko": lambda: _types(op.results)[0], "store_view_tko": lambda: _types(g["tile"])[0],
            "atomic_red_view_tko": lambda: _types(g["value"])[0]}.get(name)
    if tile is not None:
        t = _tile(tile(), "tile")
        if t.element != view.tensor_view.element or _numel(t.shape) != _numel(view.tile_shape):
            raise VerifyError(f"the tile {short(t)} does not fit {short(view)} (its element type and its "
                              f"{'x'.join(map(str, view.tile_shape))} tile)")
        if name == "atomic_red_view_tko":
            _atomic_mode(op, t)
    if name in ("load_view_tko", "store_view_tko"):
        _ordering(name, op)


def _ordering(name, op) -> None:
    """Loads acquire, stores release: a load cannot be release / acq_rel, a store acquire / acq_rel."""
    order = op.attributes["memory_ordering"].value
    banned = ("release", "acq_rel") if name.startswith("load") else ("acquire", "acq_rel")
    if order in banned:
        raise VerifyError(f"memory ordering '{order}' is not allowed on a {name.split('_')[0]}")


def _pointee(ptrs, what: str):
    t = _tile(ptrs, what)
    if not isinstance(t.element, T.Ptr):
        raise VerifyError(f"{what} must be a tile of pointers, got {short(t)}")
    return t


def _pointer_access(name, op) -> None:
    """load_ptr / store_ptr / atomics: values of the pointers' shape and pointee type; masks of i1."""
    g = groups(op)
    ptr_group = {"load_ptr_tko": "source", "store_ptr_tko": "destination"}.get(name, "pointers")
    ptrs = _pointee(_types(g[ptr_group])[0], ptr_group)
    want = T.Tile(ptrs.shape, ptrs.element.pointee)
    values = [(k, v) for k in ("value", "val", "cmp", "arg", "padding_value") for v in g.get(k, [])]
    if name != "store_ptr_tko":
        values.append(("result", op.results[0]))
    for what, v in values:
        t = T.parse_type(str(v.type))
        if t != want:
            raise VerifyError(f"{what} {short(t)} must be {short(want)} (the pointers' shape and pointee type)")
    for m in g.get("mask", []):
        t = T.parse_type(str(m.type))
        if t != T.Tile(ptrs.shape, T.Scalar("i1")):
            raise VerifyError(f"mask {short(t)} must be {short(T.Tile(ptrs.shape, T.Scalar('i1')))}")
    if name in ("load_ptr_tko", "store_ptr_tko"):
        _ordering(name, op)
    _atomic_mode(op, want)


def _atomic_mode(op, value: T.Tile) -> None:
    """addf takes floats; add and the bitwise / unsigned modes take integers."""
    mode = op.attributes["mode"].value if "mode" in op.attributes else None
    elem = value.element
    if mode == "addf" and not elem.is_float() or mode in ("add", "and", "or", "xor", "umin", "umax") \
            and not elem.is_int():
        raise VerifyError(f"atomic mode '{mode}' does not apply to {short(value)}")


def _iota(name, op) -> None:
    res = _tile(_types(op.results)[0], "result")
    _element(res, "int", "result")
    if len(res.shape) != 1:
        raise VerifyError(f"result must be a 1-d tile, got {short(res)}")
    if res.shape[0] > 1 << _width(res.element):
        raise VerifyError(f"{res.shape[0]} elements do not fit the element type {res.element.text}")


def _block_ids(name, op) -> None:
    """get_tile_block_id / get_num_tile_blocks: three 0-d i32 tiles."""
    for t in _types(op.results):
        if t != T.Tile((), T.Scalar("i32")):
            raise VerifyError(f"results must be 0-d tiles of i32, got {short(t)}")


def _float_modifiers(name, op) -> None:
    """flush_to_zero, and the approx / full rounding modes, are f32 modifiers."""
    elem = _tile(_types(op.results)[0], "result").element
    if elem.text == "f32":
        return
    if "flush_to_zero" in op.attributes:
        raise VerifyError(f"flush_to_zero is only supported for f32, got {elem.text}")
    mode = op.attributes["rounding_mode"].value if "rounding_mode" in op.attributes else ""
    if mode in ("approx", "full") and name != "exp" and name != "tanh" or mode == "approx":
        raise VerifyError(f"rounding mode '{mode}' is only supported for f32, got {elem.text}")


def _pure_body(name, op) -> None:
    """A reduce / scan body computes: no memory, print, assert or token op inside."""
    for block in op.regions[0].blocks:
        for inner in block.operations:
            n = inner.operation.name
            if n.endswith("_tko") or n in ("cuda_tile.assert", "cuda_tile.make_token", "cuda_tile.alloca"):
                raise VerifyError(f"only pure operations are allowed in its body, got '{n}'")


def _print(name, op) -> None:
    """The format string has no dangling '%'."""
    text = op.attributes["str"].value
    if re.search(r"(?<!%)(?:%%)*%$", text):
        raise VerifyError(f"format string {text!r} ends in an unterminated format expression")


def _get_global(name, op) -> None:
    """The named global exists in the module and holds the result pointer's pointee type."""
    from tilecore.mlir import ir

    sym = op.attributes["name"].value
    module = op
    while module.parent is not None:
        module = module.parent
    names = {ir.StringAttr(g.attributes["sym_name"]).value for g in module.regions[0].blocks[0].operations
             if g.operation.name == "cuda_tile.global"}
    if sym not in names:
        raise VerifyError(f"there is no global named '{sym}' (globals: {', '.join(sorted(names)) or 'none'})")
    glob = next(g.operation for g in module.regions[0].blocks[0].operations
                if g.operation.name == "cuda_tile.global" and ir.StringAttr(g.attributes["sym_name"]).value == sym)
    held = str(ir.ShapedType(glob.attributes["value"].type).element_type)
    res = _tile(_types(op.results)[0], "result")
    if not isinstance(res.element, T.Ptr) or res.element.pointee.text != held:
        raise VerifyError(f"result {short(res)} must point to the global's element type {held}")


def _offset(name, op) -> None:
    ptr, off = _types(op.operands)
    ptr = _pointee(ptr, "pointer operand")
    off = _tile(off, "offset")
    _element(off, "int", "offset")
    res = T.parse_type(str(op.results[0].type))
    if off.shape != ptr.shape or res != ptr:
        raise VerifyError(f"offset {short(ptr)} by {short(off)} -> {short(res)}: shapes and pointer types must "
                          f"agree")


def _make_tensor_view(name, op) -> None:
    g = groups(op)
    tv = T.parse_type(str(op.results[0].type))
    if not isinstance(tv, T.TensorView):
        raise VerifyError(f"result must be a tensor_view, got {short(tv)}")
    base = _tile(T.parse_type(str(g["base"][0].type)), "base")
    if base.shape or not isinstance(base.element, T.Ptr):
        raise VerifyError(f"base must be a scalar pointer tile, got {short(base)}")
    for what in ("dynamic_shape", "dynamic_strides"):
        for v in g[what]:
            t = _tile(T.parse_type(str(v.type)), what.replace("_", " "))
            if t.shape or not (isinstance(t.element, T.Scalar) and t.element.is_int()):
                raise VerifyError(f"{what.replace('_', ' ')} operands must be integer scalar tiles, got {short(t)}")
    dyn_shape = sum(d == T.DYNAMIC for d in tv.shape)
    dyn_strides = sum(d == T.DYNAMIC for d in tv.strides)
    if len(g["dynamic_shape"]) != dyn_shape or len(g["dynamic_strides"]) != dyn_strides:
        raise VerifyError(f"{short(tv)} has {dyn_shape} dynamic sizes and {dyn_strides} dynamic strides, got "
                          f"{len(g['dynamic_shape'])} and {len(g['dynamic_strides'])} operands")


# padding values a narrow float cannot hold (no infinities in e4m3 / e2m1, no NaN in e2m1, no sign in e8m0)
UNREPRESENTABLE_PADDING = {"f8E4M3FN": ("pos_inf", "neg_inf"), "f4E2M1FN": ("nan", "pos_inf", "neg_inf"),
                           "f8E8M0FNU": ("neg_zero", "pos_inf", "neg_inf")}


def _make_view(name, op) -> None:
    """make_partition_view / make_strided_view / make_gather_scatter_view: a view of its tensor_view operand."""
    src = T.parse_type(str(op.operands[0].type))
    view = T.parse_type(str(op.results[0].type))
    if not isinstance(src, T.TensorView):
        raise VerifyError(f"expected a tensor_view operand, got {short(src)}")
    if not isinstance(view, T.VIEWS) or view.tensor_view != src:
        raise VerifyError(f"result must be a view of {short(src)}, got {short(view)}")
    rank = len(src.shape)
    if not view.tile_shape:  # cuTile's ct.load / ct.store of a 0-d array; tileiras refuses it the same way
        raise VerifyError(f"{short(view)}: a 0-dimension tile shape is not supported (a view of a 0-d array; "
                          "load it as a 1-element array instead)")
    if len(view.tile_shape) != rank:
        raise VerifyError(f"{short(view)} has a rank-{len(view.tile_shape)} tile over a rank-{rank} tensor_view")
    dim_map = getattr(view, "dim_map", tuple(range(rank)))
    if sorted(dim_map) != list(range(rank)):
        raise VerifyError(f"dim_map {list(dim_map)} is not a permutation of the {rank} dimensions of {short(src)}")
    if isinstance(view, T.GatherScatterView) and not 0 <= view.sparse_dim < rank:
        raise VerifyError(f"sparse dimension {view.sparse_dim} is not a dimension of {short(src)}")
    if view.padding not in ("none", "zero") and not src.element.is_float():  # as tileiras' bytecode reader
        raise VerifyError(f"padding_value {view.padding} can only be used with floating point element types, got "
                          f"'{short(src.element)}' (an integer / bool array pads with zero)")
    if view.padding in UNREPRESENTABLE_PADDING.get(src.element.name, ()):  # tileiras fails to compile these
        raise VerifyError(f"padding_value {view.padding} has no encoding in {short(src.element)}")


def _index_space(name, op) -> None:
    view = T.parse_type(str(op.operands[0].type))
    if not isinstance(view, T.VIEWS):
        raise VerifyError(f"expected a view operand, got {short(view)}")
    if len(op.results) != view.index_rank:
        raise VerifyError(f"{short(view)} has {view.index_rank} dimensions, got {len(op.results)} results")


RULES = {
    **{n: _elementwise for n in UNARY | BINARY | TERNARY},
    **{n: _elementwise_of("float") for n in FLOAT_ONLY}, **{n: _elementwise_of("int") for n in INT_ONLY},
    "divi": _divi,
    **{n: _pointer_access for n in ("load_ptr_tko", "store_ptr_tko", "atomic_rmw_tko", "atomic_cas_tko")},
    "offset": _offset, "iota": _iota, "get_global": _get_global, "print_tko": _print,
    "get_tile_block_id": _block_ids, "get_num_tile_blocks": _block_ids,
    "cmpf": _compare, "cmpi": _compare, "select": _select,
    **{n: _cast for n in CASTS},
    "broadcast": _broadcast, "reshape": _reshape, "permute": _permute, "extract": _extract, "insert": _insert,
    "cat": _cat, "mmaf": _mma, "mmai": _mma,
    **{n: _view_access for n in VIEW_ACCESS},
    "make_tensor_view": _make_tensor_view, "get_index_space_shape": _index_space,
    **{n: _make_view for n in ("make_partition_view", "make_strided_view", "make_gather_scatter_view")},
}


def _op_name(op) -> str:
    """The op's name without its namespace: ``for`` for ``cuda_tile.for``."""
    return op.name.split(".", 1)[1]


def _parent(op):
    parent = op.parent
    return parent.operation if parent is not None else None


def _enclosing_loop(op):
    """The ``for`` / ``loop`` op whose iteration the terminator ``op`` ends: its nearest ancestor that is
    not an ``if`` (None when that is something else, e.g. the entry or a reduce body)."""
    parent = _parent(op)
    while parent is not None and parent.name == "cuda_tile.if":
        parent = _parent(parent)
    return parent if parent is not None and parent.name in ("cuda_tile.for", "cuda_tile.loop") else None


def _carried(loop) -> list:
    """Types a ``continue`` passes to the next iteration of ``loop``: its body arguments (for a ``for``,
    less the induction variable)."""
    args = list(loop.regions[0].blocks[0].arguments)
    return _types(args[1:] if loop.name == "cuda_tile.for" else args)


def _agree(what: str, got: list, want: list, owner: str) -> None:
    if got != want:
        fmt = ", ".join
        raise VerifyError(f"{what} ({fmt(short(t) for t in got) or 'nothing'}) must match the {owner} "
                          f"({fmt(short(t) for t in want) or 'nothing'})")


def _last_in_block(op) -> None:
    block = op.block
    ops = list(block.operations)
    if ops[-1].operation != op:
        raise VerifyError("must be the last op of its block")


def _continue(name, op) -> None:
    _last_in_block(op)
    loop = _enclosing_loop(op)
    if loop is None:
        raise VerifyError("outside a 'for' or 'loop' body")
    _agree("values", _types(op.operands), _carried(loop), f"values carried by the enclosing '{_op_name(loop)}'")


def _break(name, op) -> None:
    _last_in_block(op)
    loop = _enclosing_loop(op)
    if loop is None or loop.name != "cuda_tile.loop":
        raise VerifyError("outside a 'loop' body (a 'for' ends its iterations only in 'continue')")
    _agree("values", _types(op.operands), _types(loop.results), "results of the enclosing 'loop'")


def _yield(name, op) -> None:
    _last_in_block(op)
    parent = _parent(op)
    if parent is not None and parent.name == "cuda_tile.if":
        _agree("values", _types(op.operands), _types(parent.results), "results of the enclosing 'if'")


def _loop_body(name, op) -> None:
    """A ``for`` body ends in ``continue``, a ``loop`` body in ``continue`` or ``break``."""
    ends = ("cuda_tile_term.continue",) if name == "for" else ("cuda_tile_term.continue", "cuda_tile_term.break")
    for block in op.regions[0].blocks:
        ops = list(block.operations)
        if not ops or ops[-1].operation.name not in ends:
            raise VerifyError(f"body must end in {' or '.join(repr(e.split('.')[1]) for e in ends)}")


def _constant(name, op) -> None:
    """value: dense elements of the result tile's shape."""
    from tilecore.mlir import ir

    v = op.attributes["value"] if "value" in op.attributes else None
    if not isinstance(v, ir.DenseElementsAttr):
        raise VerifyError(f"value must be dense elements (dense<...> : tensor<...>), got {v}")
    res = _tile(T.parse_type(str(op.results[0].type)), "result")
    if tuple(ir.ShapedType(v.type).shape) != tuple(res.shape):
        raise VerifyError(f"value {v.type} does not have the shape of the result {short(res)}")


def _assume(name, op) -> None:
    """div_by<N : i64, every, along> / bounded<lb, ub>: integer parameters (or unit / ?); div_by's N positive."""
    text = str(op.attributes["predicate"]) if "predicate" in op.attributes else ""
    m = re.match(r"#cuda_tile\.(div_by|bounded)<(.*)>$", text)
    if not m:
        return  # same_elements and other predicates: kept as text, not interpreted
    params, depth, cur = [], 0, ""
    for c in m.group(2) + ",":  # split at the commas outside <> / [] / ()
        depth += (c in "<[(") - (c in ">])")
        if c == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
        else:
            cur += c
    for i, p in enumerate(params):
        if p in ("unit", "?"):
            continue
        v = re.fullmatch(r"(-?\d+)(?: : i\d+)?", p)
        if v is None:
            raise VerifyError(f"predicate {text}: parameter {i} must be an integer, unit or ?, got {p}")
        if m.group(1) == "div_by" and i == 0 and int(v.group(1)) <= 0:
            raise VerifyError(f"predicate {text}: the divisor must be positive")


def _combiner(name, op) -> None:
    """A reduce / scan body takes (lhs_i, rhs_i) pairs, one per operand, each a 0-d tile of that operand's
    element type (``lhs0, rhs0, lhs1, rhs1, ...``), and yields one such 0-d tile per operand."""
    tiles = [_tile(T.parse_type(str(v.type)), "operand") for v in op.operands]
    dim = op.attributes["dim"].value
    if not 0 <= dim < len(tiles[0].shape):
        raise VerifyError(f"dim {dim} is not a dimension of {short(tiles[0])}")
    idents = list(op.attributes["identities"])
    if len(idents) != len(tiles) or any(str(a.type) != t.element.text for a, t in zip(idents, tiles)):
        raise VerifyError(f"identities [{', '.join(map(str, idents))}] must be one value per operand, of its "
                          f"element type ({', '.join(short(t.element) for t in tiles)})")
    _pure_body(name, op)
    elems = [short(t.element) for t in tiles]
    want = [f"tile<{e}>" for e in elems for _ in (0, 1)]
    block = op.regions[0].blocks[0]
    got = [short(T.parse_type(str(a.type))) for a in block.arguments]
    if got != want:
        raise VerifyError(f"body takes ({', '.join(got)}); with operands of element types {', '.join(elems)} it "
                          f"must take ({', '.join(want)}): a (lhs, rhs) pair per operand, in operand order")
    ops = list(block.operations)
    last = ops[-1].operation if ops else None
    if last is None or last.name != "cuda_tile_term.yield":
        raise VerifyError("body must end in 'yield'")
    yielded = [short(t) for t in _types(last.operands)]
    if yielded != want[::2]:
        raise VerifyError(f"body yields ({', '.join(yielded) or 'nothing'}); it must yield "
                          f"({', '.join(want[::2])}): one 0-d tile per operand")


TERMINATOR_RULES = {"continue": _continue, "break": _break, "yield": _yield}
RULES.update({"for": _loop_body, "loop": _loop_body, "assume": _assume, "constant": _constant,
              "reduce": _combiner, "scan": _combiner})


def check_op(op) -> None:
    """Apply the rule of ``op`` (an ``ir.Operation``); raise a located TilecoreError."""
    name = op.name
    if name.startswith("cuda_tile."):
        rule = RULES.get(name[len("cuda_tile."):])
    elif name.startswith("cuda_tile_term."):
        rule = TERMINATOR_RULES.get(name[len("cuda_tile_term."):])
        name = "cuda_tile." + name[len("cuda_tile_term."):]
    else:
        return
    if rule is None:
        return
    try:
        rule(name[len("cuda_tile."):], op)
    except VerifyError as e:
        raise TilecoreError(f"'{name}' {e.message}", format_location(op.location)) from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:  # a malformed op
        raise TilecoreError(f"'{name}' is malformed: {e}", format_location(op.location)) from None


# modules verify_module passed (read_tileir's): stage 1 checks the others (cuda_tile written as MLIR text)
VERIFIED: weakref.WeakSet = weakref.WeakSet()


def verify_module(module, structure: bool = True) -> None:
    """Raise a located TilecoreError for the first violated rule of ``module`` (``structure``: MLIR's
    verifier first; a module parsed from text has passed it already)."""
    if structure:
        try:
            module.operation.verify()
        except Exception as e:  # noqa: BLE001 - MLIRError with diagnostics
            raise mlir_error_to_tilecore(e) from None

    def walk(op):
        check_op(op)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    for op in module.body.operations:
        walk(op.operation)
    VERIFIED.add(module)
