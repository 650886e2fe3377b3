"""Stage 2's three populators: the arith bank, the math bank, the nv_tileaa core bank.

The arith and math banks are generic op patterns: they recreate an op with converted
types (tiles keep their tensor types, so the ops carry over unchanged; inside reduce /
scan combiners this is what leaves the bodies in ``arith``). The core bank renames
nv_tileaa ops to nv_tileas, re-keys ``mem_semantic`` / ``mem_scope`` (same
discriminants), carries witnesses (``atom``) verbatim, turns the memref operand of
tiled memory ops into a ``tiled_view`` (``nv_tileas.view``), and gives combiner bodies
the ``nv_tileas_term.yield`` terminator.
"""

from __future__ import annotations

import re

from tilecore.errors import LoweringError
from tilecore.mlir import ir

from ..irdl_text import group_values, slots
from ..nv_tileaa import COMBINER_SLOTS
from ..nv_tileaa import OPS as AA_OPS
from ..nv_tileas import TERM as AS_TERM
from ..nv_tileas import builder as as_builder
from ..rebuild import attrs_of
from .kernel_spec import CC_ATTR, SPEC_ATTR

ARITH_OPS = ("addf subf mulf divf remf negf addi subi muli andi ori xori shli shrsi shrui remsi remui maxsi "
             "maxui minsi minui extsi extui sitofp uitofp fptosi fptoui trunci bitcast extf truncf maxnumf "
             "minnumf maximumf minimumf divsi divui ceildivsi floordivsi ceildivui cmpf cmpi select constant "
             "mului_extended index_cast").split()
MATH_OPS = "absf absi exp exp2 log log2 sqrt rsqrt tanh sin cos tan sinh cosh floor ceil powf atan2 fma fpowi".split()

# Ops that keep their operands and only change dialect.
RENAMED = ("make_token", "join_tokens", "assume", "make_memref", "load", "store", "atomic_rmw", "atomic_cas",
           "offset", "int_to_ptr", "ptr_to_int", "ptr_to_ptr", "broadcast", "reshape", "permute", "insert_slice",
           "iota", "print", "assert", "get_global", "pack", "unpack", "gdc_wait", "gdc_launch_dependents", "global",
           "memory_fence")
TILED = {"tiled_load": "memref index* token?", "tiled_store": "tile memref index* token?",
         "tiled_atomic_rmw": "memref index* value token?", "gather_load": "memref offsets index* token?",
         "scatter_store": "tile memref offsets index* token?"}


def _generic(op, rb):
    return rb.generic(op)


def arith_populator() -> dict:
    return {f"arith.{n}": _generic for n in ARITH_OPS}


def math_populator() -> dict:
    return {f"math.{n}": _generic for n in MATH_OPS}


def rekey(attrs: dict) -> dict:
    """nv_tileaa mem_semantic / mem_scope -> nv_tileas, same discriminant; everything else verbatim."""
    out = {}
    for k, v in attrs.items():
        if k in ("mem_semantic", "mem_scope"):
            m = re.match(r"#nv_tileaa\.(\w+)<(.*)>$", str(v))
            v = ir.Attribute.parse(f"#nv_tileas.{m.group(1)}<{m.group(2)}>")
        out[k] = v
    return out


def _attrs(op) -> dict:
    return attrs_of(op)


def renamed(name):
    def h(op, rb):
        return rb.generic(op, name=f"nv_tileas.{name}", attrs=rekey(_attrs(op)))
    return h


def tiled(name, spec):
    def h(op, rb):
        g = group_values(op, spec)
        attrs = rekey(_attrs(op))
        memref = rb.get(g["memref"])
        view_t = ir.Type.parse(f"!nv_tileaa.tiled_view<{attrs['tile_shape']}, {memref.type}, {attrs['dim_map']}, "
                               f"{attrs['padding']}>")
        view = as_builder.build("view", [memref], [view_t]).results[0]
        vals = [view if k == "memref" else (rb.gets(v) if isinstance(v, list) else (rb.get(v) if v is not None
                                                                                    else None))
                for k, v in g.items()]
        new = as_builder.build(name, vals, [r.type for r in op.results], attrs)
        return list(new.results)
    return h


def combiner(name):
    def h(op, rb):
        attrs = rekey(_attrs(op))
        ops = rb.gets(op.operands)
        body = op.regions[0].blocks[0]
        elems = [ir.RankedTensorType(v.type).element_type if str(v.type).startswith("tensor<") else v.type
                 for v in ops]
        want = [str(t) for t in elems for _ in range(2)]
        got = [str(a.type) for a in body.arguments]
        if sorted(want) != sorted(got) or len(want) != len(got):
            raise LoweringError("failed to convert block signature", op)
        new = as_builder.build(name, slots(ops, COMBINER_SLOTS), slots([r.type for r in op.results], COMBINER_SLOTS),
                               attrs)
        rb.region_into(op.regions[0], new.regions[0])
        return list(new.results)
    return h


def yield_op(op, rb):
    ir.Operation.create(f"{AS_TERM}.yield", results=[], operands=rb.gets(op.operands))


def cat(op, rb):
    lhs, rhs = (rb.get(v) for v in op.operands)
    if not str(lhs.type).startswith("tensor<") or str(lhs.type) .split("x")[-1] != str(rhs.type).split("x")[-1]:
        raise LoweringError("missing source layout", op)
    lr, rr = ir.RankedTensorType(lhs.type).rank, ir.RankedTensorType(rhs.type).rank
    if lr != rr:
        raise LoweringError("failed to infer source layout", op)
    return rb.generic(op, name="nv_tileas.cat", attrs=rekey(_attrs(op)))


def _func_of(op):
    p = op.parent
    while p is not None and p.name != "nv_tileaa.func":
        p = p.parent
    return p


def dot(op, rb):
    shapes = [ir.RankedTensorType(v.type).shape if str(v.type).startswith("tensor<") else [] for v in op.operands]
    if any(len(s) != 2 for s in shapes[:3]):
        raise LoweringError("failed to infer 2d layout", op)
    m, k = shapes[0]
    k2, n = shapes[1]
    if k != k2 or shapes[2] != [m, n]:
        raise LoweringError("failed to find available mma partition", op)
    return rb.generic(op, name="nv_tileas.dot", attrs=rekey(_attrs(op)))


def mma_block_scale(op, rb):
    fn = _func_of(op)
    if fn is None or SPEC_ATTR not in fn.attributes or CC_ATTR not in fn.attributes:
        raise LoweringError("failed to get the target spec", op)
    cc = ir.IntegerAttr(fn.attributes[CC_ATTR]).value
    if cc < 100:
        raise LoweringError("mma block scale is not supported by compute capability < sm100", op)
    attrs = rekey(_attrs(op))
    el = str(ir.RankedTensorType(op.operands[0].type).element_type).lower()
    attrs.setdefault("atom", ir.Attribute.parse(f'#nv_tileas.atom<"umma_bs_{el}_{el}_f32">'))
    attrs["cta_group"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
    return rb.generic(op, name="nv_tileas.block_scaled_mma", attrs=attrs)


LAYOUT_KINDS = ("reg", "smem")  # where a tile may live at this level


def slice_or_convert(name):
    """extract_slice / convert_layout: only register and shared-memory layouts exist here."""
    def h(op, rb):
        if "layout_kind" in op.attributes and ir.StringAttr(op.attributes["layout_kind"]).value not in LAYOUT_KINDS:
            raise LoweringError("TODO: only reg and smem layouts are supported at the moment", op)
        return rb.generic(op, name=f"nv_tileas.{name}", attrs=rekey(_attrs(op)))
    return h


# Features the plugin rewriter knows: name -> rewrite(op, rb) returning the new results.
PLUGIN_FEATURES = {
    "passthrough": lambda op, rb: [rb.get(op.operands[0])],
}


def plugin_op(op, rb):
    feature = ir.StringAttr(op.attributes["feature"]).value if "feature" in op.attributes else ""
    fn = PLUGIN_FEATURES.get(feature)
    if fn is None:
        raise LoweringError("plugin has unsupported feature", op)
    if op.results and (not op.operands or str(op.results[0].type) != str(op.operands[0].type)
                       or not str(op.results[0].type).startswith("tensor<")):
        raise LoweringError("fails to assign layout", op)
    return fn(op, rb)


def mark_for_reuse(op, rb):
    if any("queue" not in str(v.type) for v in op.operands):
        raise LoweringError("expect operands with queue types", op)
    return rb.generic(op)


def keep(op, rb):
    return rb.generic(op)


def core_populator() -> dict:
    table = {f"nv_tileaa.{n}": renamed(n) for n in RENAMED}
    table.update({f"nv_tileaa.{n}": tiled(n, spec) for n, spec in TILED.items()})
    table.update({
        "nv_tileaa.reduce": combiner("reduce"), "nv_tileaa.scan": combiner("scan"),
        "nv_tileaa_term.yield": yield_op, "nv_tileaa.cat": cat, "nv_tileaa.dot": dot,
        "nv_tileaa.mma_block_scale": mma_block_scale, "nv_tileaa.mark_for_reuse": mark_for_reuse,
        "nv_tileaa.extract_slice": slice_or_convert("extract_slice"),
        "nv_tileaa.convert_layout": slice_or_convert("convert_layout"), "nv_tileaa.plugin": plugin_op,
        "nv_tileaa.func": keep, "nv_tileaa_term.return": keep,
    })
    assert all(k.split(".", 1)[1] in AA_OPS or k.startswith("nv_tileaa_term") for k in table)
    return table
