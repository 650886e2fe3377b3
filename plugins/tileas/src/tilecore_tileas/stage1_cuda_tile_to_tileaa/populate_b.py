"""Stage 1, populator B: memory, pointer, token and view ops.

A tensor view becomes ``nv_tileaa.make_memref`` (a memref value); partition and
strided views are folded into the attributes of the memory ops that use them
(``tile_shape``, ``dim_map``, ``padding``, ``traversal_strides``), because TileAS
accesses memory through the static tile box (stage 2 materialises it as a
``tiled_view``). Memory orderings / scopes become ``#nv_tileaa.mem_semantic`` /
``#nv_tileaa.mem_scope``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilecore.errors import LoweringError
from tilecore.mlir import ir

from ..cuda_tile import types as T
from ..nv_tileaa import DYNAMIC, MEM_SCOPE, MEM_SEMANTIC, builder
from .common import const_int, create, has, i64, operands, resize_int, result_types, s

TOKEN = "!nv_tileaa.mem_token"


@dataclass
class ViewRecord:
    """A partition / strided view: the memref it reads and its cuda_tile type descriptor."""

    memref: object
    desc: object


def _token_type():
    return ir.Type.parse(TOKEN)


def _arr(vals) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get([int(v) for v in vals])


def mem_attrs(op) -> dict:
    sem = s(op, "memory_ordering", "weak")
    scope = s(op, "memory_scope", "none")
    out = {"mem_semantic": ir.Attribute.parse(f"#nv_tileaa.mem_semantic<{MEM_SEMANTIC[sem]} : i32>"),
           "mem_scope": ir.Attribute.parse(f"#nv_tileaa.mem_scope<{MEM_SCOPE[scope]} : i32>")}
    if has(op, "optimization_hints"):
        out["optimization_hints"] = op.attributes["optimization_hints"]
    return out


def make_token(op, rb):
    return list(builder.build("make_token", [], [_token_type()]).results)


def join_tokens(op, rb):
    return list(builder.build("join_tokens", [rb.gets(op.operands)], [_token_type()]).results)


def assume(op, rb):
    (v,) = rb.gets(op.operands)
    text = str(op.attributes["predicate"])
    attrs = {}
    m = re.match(r"#cuda_tile\.(\w+)<(.*)>$", text)
    if m and m.group(1) in ("div_by", "bounded"):
        parts = [p.strip() for p in m.group(2).split(",")]
        keys = ("div_by", "div_every", "div_along") if m.group(1) == "div_by" else ("lb", "ub")
        for k, p in zip(keys, parts):
            if p != "unit" and p != "?":
                attrs[k] = i64(int(p.split(":")[0]))
    else:
        attrs["predicate_text"] = ir.StringAttr.get(text)
    return list(builder.build("assume", [v], [v.type], attrs).results)


def make_tensor_view(op, rb):
    g = operands(op, rb)
    rt = result_types(op, rb)[0]
    new = builder.build("make_memref", [g["base"][0], g["dynamic_shape"], g["dynamic_strides"]], [rt])
    return list(new.results)


def make_view(op, rb):
    return [ViewRecord(rb.get(op.operands[0]), T.parse_type(str(op.results[0].type)))]


def _view_attrs(view: ViewRecord, op) -> dict:
    d = view.desc
    dim_map = getattr(d, "dim_map", tuple(range(len(d.tile_shape))))
    attrs = {"tile_shape": _arr(d.tile_shape), "dim_map": _arr(dim_map),
             "padding": ir.StringAttr.get(d.padding)}
    if isinstance(d, T.StridedView):
        attrs["traversal_strides"] = _arr(d.traversal_strides)
    elif isinstance(d, T.GatherScatterView):
        attrs["sparse_dim"] = i64(d.sparse_dim)
    elif not isinstance(d, T.PartitionView):
        raise LoweringError(f"loads through a {type(d).__name__} are not supported yet", op)
    if has(op, "inbounds"):
        attrs["in_bounds"] = op.attributes["inbounds"]
    return attrs


def _view(rb, v, op) -> ViewRecord:
    rec = rb.get(v)
    if not isinstance(rec, ViewRecord):
        raise LoweringError("memory access through a view that is not a partition / strided view", op)
    return rec


def load_view(op, rb):
    g = {k: v for k, v in operands_raw(op).items()}
    view = _view(rb, g["view"][0], op)
    tok = rb.gets(g["token"])
    if isinstance(view.desc, T.GatherScatterView):
        sd = view.desc.sparse_dim
        idx = rb.gets(g["index"])
        new = builder.build("gather_load", [view.memref, idx[sd], idx[:sd] + idx[sd + 1:], tok[0] if tok else None],
                            [rb.convert_type(op.results[0].type), _token_type()],
                            {**_view_attrs(view, op), **mem_attrs(op)})
        return list(new.results)
    new = builder.build("tiled_load", [view.memref, rb.gets(g["index"]), tok[0] if tok else None],
                        [rb.convert_type(op.results[0].type), _token_type()],
                        {**_view_attrs(view, op), **mem_attrs(op)})
    return list(new.results)


def store_view(op, rb):
    g = operands_raw(op)
    view = _view(rb, g["view"][0], op)
    tok = rb.gets(g["token"])
    if isinstance(view.desc, T.GatherScatterView):
        sd = view.desc.sparse_dim
        idx = rb.gets(g["index"])
        new = builder.build("scatter_store", [rb.get(g["tile"][0]), view.memref, idx[sd], idx[:sd] + idx[sd + 1:],
                                              tok[0] if tok else None],
                            [_token_type()], {**_view_attrs(view, op), **mem_attrs(op)})
        return list(new.results)
    new = builder.build("tiled_store", [rb.get(g["tile"][0]), view.memref, rb.gets(g["index"]),
                                        tok[0] if tok else None],
                        [_token_type()], {**_view_attrs(view, op), **mem_attrs(op)})
    return list(new.results)


def atomic_red_view(op, rb):
    g = operands_raw(op)
    view = _view(rb, g["view"][0], op)
    tok = rb.gets(g["token"])
    new = builder.build("tiled_atomic_rmw", [view.memref, rb.gets(g["index"]), rb.get(g["value"][0]),
                                             tok[0] if tok else None],
                        [_token_type()], {**_view_attrs(view, op), **mem_attrs(op), "mode": op.attributes["mode"]})
    return list(new.results)


def operands_raw(op) -> dict:
    from ..cuda_tile.ops import groups

    return groups(op)


def _opt(g, name):
    v = g.get(name) or []
    return v[0] if v else None


def load_ptr(op, rb):
    g = operands(op, rb)
    new = builder.build("load", [g["source"][0], _opt(g, "mask"), _opt(g, "padding_value"), _opt(g, "token")],
                        [rb.convert_type(op.results[0].type), _token_type()], mem_attrs(op))
    return list(new.results)


def store_ptr(op, rb):
    g = operands(op, rb)
    new = builder.build("store", [g["destination"][0], g["value"][0], _opt(g, "mask"), _opt(g, "token")],
                        [_token_type()], mem_attrs(op))
    return list(new.results)


def atomic_rmw(op, rb):
    g = operands(op, rb)
    new = builder.build("atomic_rmw", [g["pointers"][0], g["arg"][0], _opt(g, "mask"), _opt(g, "token")],
                        [rb.convert_type(op.results[0].type), _token_type()],
                        {**mem_attrs(op), "mode": op.attributes["mode"]})
    return list(new.results)


def atomic_cas(op, rb):
    g = operands(op, rb)
    new = builder.build("atomic_cas", [g["pointers"][0], g["cmp"][0], g["val"][0], _opt(g, "mask"),
                                       _opt(g, "token")],
                        [rb.convert_type(op.results[0].type), _token_type()], mem_attrs(op))
    return list(new.results)


def unary(name):
    def h(op, rb):
        return list(builder.build(name, rb.gets(op.operands), result_types(op, rb)).results)
    return h


def tile_block_id(kind):
    def h(op, rb):
        index, i32 = ir.IndexType.get(), ir.IntegerType.get_signless(32)
        out = []
        for dim in "xyz":
            v = create(f"gpu.{kind}", [index], [], {"dimension": ir.Attribute.parse(f"#gpu<dim {dim}>")}).results[0]
            out.append(create("arith.index_cast", [i32], [v]).results[0])
        return out
    return h


def _shape_values(memref, desc: T.TensorView, ty: ir.Type) -> list:
    """A memref's sizes as values of integer type ``ty`` (the index type the op asks for; the
    kernel's sizes arrive as i32 or i64): static ones as constants, dynamic ones resized."""
    dyn = iter(list(memref.owner.operands)[1:])
    return [resize_int(next(dyn), ty) if d == DYNAMIC else const_int(ty, d) for d in desc.shape]


def index_space_shape(op, rb):
    """cdiv(extent, step) per view dimension: the step is the tile size, or a strided view's traversal stride
    (tiles start every ``step`` elements, the last one at or before the extent's end: cuTile's
    ``TiledView.num_tiles`` with ``traversal_steps``, which tileiras computes so)."""
    view = _view(rb, op.operands[0], op)
    d = view.desc
    types = result_types(op, rb)
    # divide at the extents' width: an int64-indexed array's extent of 2^31 or more has an i32 tile count (cuTile's
    # num_tiles) that truncating the extent first would get wrong
    wide = max([ir.IntegerType(types[0]).width] + [ir.IntegerType(v.type).width
                                                    for v in list(view.memref.owner.operands)[1:]])
    wty = ir.IntegerType.get_signless(wide)
    shapes = _shape_values(view.memref, d.tensor_view, wty)
    steps = d.traversal_strides if isinstance(d, T.StridedView) else d.tile_shape
    out = []
    for k, (step, ty) in enumerate(zip(steps, types)):
        dim = shapes[d.dim_map[k]] if d.dim_map else shapes[k]
        out.append(resize_int(create("arith.ceildivsi", [wty], [dim, const_int(wty, step)]).results[0], ty))
    return out


def tensor_shape(op, rb):
    src = op.operands[0]
    desc = T.parse_type(str(src.type))
    if isinstance(desc, T.VIEWS):
        desc = desc.tensor_view
        memref = _view(rb, src, op).memref
    else:
        memref = rb.get(src)
    types = result_types(op, rb)
    return [resize_int(v, ty) for v, ty in zip(_shape_values(memref, desc, types[0]), types)]


def global_op(op, rb):
    """A module-level global: its symbol, dense value and alignment carry over."""
    keep = ("sym_name", "value", "alignment", "sym_visibility", "constant")
    builder.build("global", [], [], {k: op.attributes[k] for k in keep if k in op.attributes})


def get_global(op, rb):
    return list(builder.build("get_global", [], result_types(op, rb), {"name": op.attributes["name"]}).results)


def gdc(name):
    def h(op, rb):
        return list(builder.build(name, [rb.gets(op.operands)[0] if op.operands else None], [_token_type()]).results)
    return h


POPULATOR = {
    "cuda_tile.global": global_op, "cuda_tile.get_global": get_global,
    "cuda_tile.memory_fence_alias_tko": lambda op, rb: list(builder.build(
        "memory_fence", [rb.get(op.operands[0])], [_token_type()]).results),
    "cuda_tile.gdc_wait_tko": gdc("gdc_wait"), "cuda_tile.gdc_launch_dependents_tko": gdc("gdc_launch_dependents"),
    "cuda_tile.make_token": make_token, "cuda_tile.join_tokens": join_tokens, "cuda_tile.assume": assume,
    "cuda_tile.make_tensor_view": make_tensor_view, "cuda_tile.make_partition_view": make_view,
    "cuda_tile.make_strided_view": make_view, "cuda_tile.make_gather_scatter_view": make_view,
    "cuda_tile.load_view_tko": load_view,
    "cuda_tile.store_view_tko": store_view, "cuda_tile.atomic_red_view_tko": atomic_red_view,
    "cuda_tile.load_ptr_tko": load_ptr, "cuda_tile.store_ptr_tko": store_ptr,
    "cuda_tile.atomic_rmw_tko": atomic_rmw, "cuda_tile.atomic_cas_tko": atomic_cas,
    "cuda_tile.offset": unary("offset"), "cuda_tile.int_to_ptr": unary("int_to_ptr"),
    "cuda_tile.ptr_to_int": unary("ptr_to_int"), "cuda_tile.ptr_to_ptr": unary("ptr_to_ptr"),
    "cuda_tile.get_tile_block_id": tile_block_id("block_id"),
    "cuda_tile.get_num_tile_blocks": tile_block_id("grid_dim"),
    "cuda_tile.get_index_space_shape": index_space_shape, "cuda_tile.get_tensor_shape": tensor_shape,
}
