"""Checks of nv_tileaa / nv_tileas IR at the entry of stages 2-4, before any of them mutates it.

The IRDL definitions of the two dialects constrain operand / result counts but not attribute kinds,
and tiles are builtin tensors of any shape: MLIR written by someone else (``tilecore opt`` / ``compile``
on a ``.mlir`` file of any stage) can carry an ``i64`` array where a stage reads an integer, or a
tile with a dynamic or zero extent. Such IR is reported at the op, with what was expected, instead
of failing inside a handler.
"""

from __future__ import annotations

import functools
import re
import weakref

from tilecore.errors import LoweringError, ops_in
from tilecore.mlir import ir

from .cuda_tile.verifier import VERIFIED
from .nv_tileaa import MEM_SCOPE, MEM_SEMANTIC

TILE_DIALECTS = ("nv_tileaa", "nv_tileas")


def _is(cls):
    return lambda a: isinstance(a, cls)


def _prefixed(*prefixes):
    return lambda a: str(a).startswith(prefixes)


def _enum(a, name: str, table: dict) -> bool:
    m = re.fullmatch(rf"#nv_tilea[as]\.{name}<(-?\d+) : i32>", str(a))
    return m is not None and int(m.group(1)) in table.values()


def _layouts(a) -> bool:
    return isinstance(a, ir.ArrayAttr) and all(str(x).startswith("#nv_tileas.blocked<") for x in ir.ArrayAttr(a))


# attribute name -> (what it must be, predicate); attributes not listed are not read by the stages
ATTRIBUTE_KINDS = {
    "dim": ("an integer", _is(ir.IntegerAttr)),
    "div_by": ("an integer", _is(ir.IntegerAttr)),
    "lb": ("an integer", _is(ir.IntegerAttr)),
    "ub": ("an integer", _is(ir.IntegerAttr)),
    "dim_map": ("an i64 array (array<i64: ...>)", _is(ir.DenseI64ArrayAttr)),
    "tile_shape": ("an i64 array (array<i64: ...>)", _is(ir.DenseI64ArrayAttr)),
    "traversal_strides": ("an i64 array (array<i64: ...>)", _is(ir.DenseI64ArrayAttr)),
    "in_bounds": ("an i1 array (array<i1: ...>)", _is(ir.DenseBoolArrayAttr)),
    "permutation": ("an i32 array (array<i32: ...>)", _is(ir.DenseI32ArrayAttr)),
    "padding": ("a string", _is(ir.StringAttr)),
    "exchange": ("a string", _is(ir.StringAttr)),
    "identities": ("an array", _is(ir.ArrayAttr)),
    "atom": ('#nv_tileas.atom<"name">', _prefixed('#nv_tileas.atom<"')),
    "layouts": ("an array of #nv_tileas.blocked layouts", _layouts),
    "mem_scope": (f"#nv_tileaa.mem_scope<N : i32> or #nv_tileas.mem_scope<N : i32> with N one of "
                  f"{sorted(MEM_SCOPE.values())}", lambda a: _enum(a, "mem_scope", MEM_SCOPE)),
    "mem_semantic": (f"#nv_tileaa.mem_semantic<N : i32> or #nv_tileas.mem_semantic<N : i32> with N one of "
                     f"{sorted(MEM_SEMANTIC.values())}", lambda a: _enum(a, "mem_semantic", MEM_SEMANTIC)),
}


def _tile_shape_error(t) -> str | None:
    if not isinstance(t, ir.RankedTensorType):
        return "an unranked tensor" if str(t).startswith("tensor<") else None
    shape = ir.RankedTensorType(t).shape
    if any(d == ir.ShapedType.get_dynamic_size() for d in shape):
        return f"a dynamic extent ({t})"
    if any(d <= 0 for d in shape):
        return f"a zero extent ({t})"
    return None


def _shape(v) -> tuple | None:
    return tuple(ir.RankedTensorType(v.type).shape) if isinstance(v.type, ir.RankedTensorType) else None


def _check_dot(op) -> None:
    """lhs [B..., M, K] x rhs [B..., K, N] + acc [B..., M, N] -> acc's type (dot and the block-scaled MMAs)."""
    lhs, rhs, acc = (_shape(v) for v in list(op.operands)[:3])
    ok = (lhs is not None and rhs is not None and acc is not None and len(lhs) == len(rhs) == len(acc) >= 2
          and lhs[:-2] == rhs[:-2] == acc[:-2] and lhs[-1] == rhs[-2] and acc[-2:] == (lhs[-2], rhs[-1]))
    if not ok:
        raise LoweringError(f"'{op.name}' op operands do not form a matrix product [M, K] x [K, N] + [M, N]: "
                            f"{', '.join(str(v.type) for v in list(op.operands)[:3])}", op)
    if op.results and op.results[0].type != op.operands[2].type:
        raise LoweringError(f"'{op.name}' op result type {op.results[0].type} differs from the accumulator's "
                            f"{op.operands[2].type}", op)


def _check_reshape(op) -> None:
    src, res = op.operands[0].type, op.results[0].type
    if isinstance(src, ir.RankedTensorType) and isinstance(res, ir.RankedTensorType):
        n = [1, 1]
        for i, t in enumerate((src, res)):
            for d in t.shape:
                n[i] *= d
        if n[0] != n[1] or src.element_type != res.element_type:
            raise LoweringError(f"'{op.name}' op must keep the element type and count: {src} -> {res}", op)


def _check_reduce(op) -> None:
    """reduce: each result is its operand without dimension ``dim``; scan: each result has its operand's shape."""
    if "dim" not in op.attributes:
        raise LoweringError(f"'{op.name}' op needs a 'dim' attribute", op)
    dim = ir.IntegerAttr(op.attributes["dim"]).value
    for i, (v, r) in enumerate(zip(op.operands, op.results)):
        src, res = _shape(v), _shape(r)
        if src is None or res is None:
            continue
        if not 0 <= dim < len(src):
            raise LoweringError(f"'{op.name}' op dim {dim} is out of range for operand #{i} {v.type}", op)
        want = src if op.name.endswith("scan") else src[:dim] + src[dim + 1:]
        if res != want:
            raise LoweringError(f"'{op.name}' op result #{i} {r.type} does not fit operand #{i} {v.type} "
                                f"(dim {dim})", op)


def _operand_kind(op, i: int, prefix: str, what: str) -> None:
    if len(op.operands) > i and not str(op.operands[i].type).startswith(prefix):
        raise LoweringError(f"'{op.name}' op operand #{i} must be {what}, but got {op.operands[i].type}", op)


def _memory_rule(slot: int, prefix: str, what: str, tile: bool):
    """A load / store / atomic: its memref (nv_tileaa) or tiled view (nv_tileas) operand at ``slot``, the stored
    tile (operand 0) a tensor."""
    def rule(op):
        if tile:
            _operand_kind(op, 0, "tensor<", "a tile (tensor)")
        _operand_kind(op, slot, prefix, what)
    return rule


def _make_memref(op) -> None:
    _operand_kind(op, 0, "!nv_tileaa.ptr<", "a pointer (!nv_tileaa.ptr)")
    for i in range(1, len(op.operands)):
        t = op.operands[i].type
        if not (isinstance(t, ir.IntegerType) or isinstance(t, ir.IndexType)):
            raise LoweringError(f"'{op.name}' op operand #{i} (a size or stride) must be an integer, but got {t}",
                                op)


VIEW = ("!nv_tileaa.tiled_view<", "a tiled view (!nv_tileaa.tiled_view)")
MEMREF = ("!nv_tileaa.memref<", "a memref (!nv_tileaa.memref)")
# rules of both dialects (nv_tileaa ops keep their memref operands, nv_tileas ones take views)
SHARED_RULES = {
    "nv_tileaa.make_memref": _make_memref, "nv_tileas.make_memref": _make_memref,
    "nv_tileas.view": lambda op: _operand_kind(op, 0, *MEMREF),
    **{f"nv_tileaa.{n}": _memory_rule(slot, *MEMREF, tile) for n, slot, tile in (
        ("tiled_load", 0, False), ("gather_load", 0, False), ("tiled_atomic_rmw", 0, False),
        ("tiled_store", 1, True), ("scatter_store", 1, True))},
    **{f"nv_tileas.{n}": _memory_rule(slot, *VIEW, tile) for n, slot, tile in (
        ("tiled_load", 0, False), ("gather_load", 0, False), ("tiled_atomic_rmw", 0, False),
        ("tiled_store", 1, True), ("scatter_store", 1, True))},
}

OP_RULES = {"reduce": _check_reduce, "scan": _check_reduce, "dot": _check_dot, "block_scaled_mma": _check_dot,
            "reshape": _check_reshape}


_PTR = re.compile(r"!nv_tileaa\.ptr<(.+), (-?\d+) : i32>$")
_MEMREF = re.compile(r"!nv_tileaa\.memref<(.*?), array<i64(?:: ([^>]*))?>, array<i64(?:: ([^>]*))?>, (-?\d+) : i32>$")
_VIEW = re.compile(r'!nv_tileaa\.tiled_view<array<i64(?:: ([^>]*))?>, (!nv_tileaa\.memref<.*>), '
                   r'array<i64(?:: ([^>]*))?>, "(\w+)">$')


def _ints(text) -> list:
    return [int(x) for x in text.split(",")] if text else []


@functools.lru_cache(maxsize=512)
def _nv_type_error(text: str) -> str | None:
    """What is wrong with an ``!nv_tileaa`` pointer / memref / tiled_view type (its text), or None: the forms
    and parameter kinds the stages read (global memory, address space 1)."""
    if text.startswith("!nv_tileaa.ptr<"):
        m = _PTR.match(text)
        if not m:
            return f"{text} is not !nv_tileaa.ptr<element type, address space : i32>"
        if int(m.group(2)) != 1:
            return f"{text} has address space {m.group(2)}: kernel pointers are global (1 : i32)"
        return _element_error(m.group(1), text)
    if text.startswith("!nv_tileaa.memref<"):
        m = _MEMREF.match(text)
        if not m:
            return (f"{text} is not !nv_tileaa.memref<element type, array<i64: shape>, array<i64: strides>, "
                    f"address space : i32>")
        if int(m.group(4)) != 1:
            return f"{text} has address space {m.group(4)}: kernel arrays are global (1 : i32)"
        if len(_ints(m.group(2))) != len(_ints(m.group(3))):
            return f"{text} has {len(_ints(m.group(2)))} sizes but {len(_ints(m.group(3)))} strides"
        return _element_error(m.group(1), text)
    if text.startswith("!nv_tileaa.tiled_view<"):
        m = _VIEW.match(text)
        if not m:
            return (f'{text} is not !nv_tileaa.tiled_view<array<i64: tile>, !nv_tileaa.memref<...>, array<i64: '
                    f'dim_map>, "padding">')
        tile, dim_map = _ints(m.group(1)), _ints(m.group(3))
        inner = _nv_type_error(m.group(2))
        if inner:
            return inner
        rank = len(_ints(_MEMREF.match(m.group(2)).group(2)))
        if sorted(dim_map) != list(range(rank)) or len(tile) != rank or any(d <= 0 for d in tile):
            return f"{text}: its tile shape and dim_map must cover the memref's {rank} dimension(s)"
    return None


def _element_error(text: str, whole: str) -> str | None:
    if text.startswith("!nv_tileaa.ptr<"):
        return _nv_type_error(text)
    try:
        t = ir.Type.parse(text)
    except Exception:  # noqa: BLE001 - MLIRError: not a type
        return f"{whole}: '{text}' is not an element type"
    if not isinstance(t, (ir.IntegerType, ir.FloatType)):
        return f"{whole}: '{text}' is not an element type (an integer or float type)"
    return None


def _check_types(op) -> None:
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            text = str(v.type)
            if text.startswith("!nv_tileaa."):
                err = _nv_type_error(text)
                if err:
                    raise LoweringError(f"'{op.name}' op {kind} #{i}: {err}", op)
    for region in op.regions:
        for block in region.blocks:
            for i, a in enumerate(block.arguments):
                text = str(a.type)
                if text.startswith("!nv_tileaa."):
                    err = _nv_type_error(text)
                    if err:
                        raise LoweringError(f"'{op.name}' op block argument #{i}: {err}", op)


def check_op(op) -> None:
    """Raise a LoweringError at ``op`` if it is a tile op with a wrongly kinded attribute, a tile that is
    not of a static, positive shape, or (dot / reshape) operand shapes that do not fit together."""
    _check_types(op)
    if op.name.split(".", 1)[0] not in TILE_DIALECTS:
        return
    attrs = op.attributes
    for name, (what, ok) in ATTRIBUTE_KINDS.items():
        if name in attrs and not ok(attrs[name]):
            raise LoweringError(f"'{op.name}' op attribute '{name}' must be {what}, but got {attrs[name]}", op)
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            err = _tile_shape_error(v.type)
            if err:
                raise LoweringError(f"'{op.name}' op {kind} #{i} is a tile with {err}: tiles have static, "
                                    f"positive extents", op)
    shared = SHARED_RULES.get(op.name)
    if shared is not None:
        shared(op)
    # (nv_tileas only: stage 2 reports ill-formed nv_tileaa dots / combiners with the spec's diagnostics)
    rule = OP_RULES.get(op.name.split(".", 1)[1]) if op.name.startswith("nv_tileas.") else None
    if rule is not None and len(op.operands) >= (3 if rule is _check_dot else 1) and op.results:
        rule(op)


# modules check_module passed, by id (an ir.Module's hash follows its contents, so no WeakSet): the next
# stage entries see IR that the stages themselves made from them
_CHECKED: dict[int, weakref.ref] = {}


def check_module(module) -> None:
    """:func:`check_op` on every op of ``module`` (called at a stage's entry: nothing is changed yet).

    Only the first stage entry a module reaches walks it: every op it held was checked there, and what
    the stages build from it is not outside-written IR (a matmul: 6 walks of ~300 ops per compile). A
    module the bytecode reader verified (cuda_tile ops only) is not walked at all.
    """
    key = id(module)
    ref = _CHECKED.get(key)
    if ref is not None and ref() is module:
        return
    if module not in VERIFIED:
        for op in ops_in(module.operation):
            check_op(op)
    _CHECKED[key] = weakref.ref(module, lambda _, key=key: _CHECKED.pop(key, None))
