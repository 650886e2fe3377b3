"""Stage 1, populator C: the specialists whose shapes depend on A and B (mmaf, mmai, reduce, scan).

Batched (rank-3) mmaf / mmai become one 2-D ``nv_tileaa.dot`` per batch (:func:`_dot`)."""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import ir

from ..irdl_text import slots
from ..nv_tileaa import COMBINER_SLOTS, builder
from .common import const_i32, result_types


def _combiner(name, extra):
    def h(op, rb):
        attrs = {"dim": op.attributes["dim"], "identities": op.attributes["identities"]}
        for k in extra:
            if k in op.attributes:
                attrs[k] = op.attributes[k]
        if len(op.operands) > COMBINER_SLOTS:
            raise LoweringError(f"'{op.name}' with more than {COMBINER_SLOTS} operands is not supported", op)
        new = builder.build(name, slots(rb.gets(op.operands), COMBINER_SLOTS),
                            slots(result_types(op, rb), COMBINER_SLOTS), attrs)
        rb.region_into(op.regions[0], new.regions[0])  # the body's yield becomes nv_tileaa_term.yield (A)
        return list(new.results)
    return h


def _dot(op, rb, attrs: dict) -> list:
    """``nv_tileaa.dot`` of a 2-D mmaf / mmai; a batched one (rank 3: (B, M, K) x (B, K, N) + (B, M, N))
    becomes one 2-D dot per batch, as TileAS only lays out 2-D dots: batch b's operands are extracted
    (``extract_slice``, skipped when B is 1) and reshaped to 2-D (free: a tile's register layout
    depends only on its element count), the result reshaped back and inserted into the accumulator."""
    lhs, rhs, acc = rb.gets(op.operands)
    rtype = result_types(op, rb)[0]
    shape = ir.RankedTensorType(rtype).shape
    if len(shape) != 3:
        return list(builder.build("dot", [lhs, rhs, acc], [rtype], attrs).results)
    batch = shape[0]
    zero = const_i32(0)
    out = acc
    for b in range(batch):
        index = [const_i32(b), zero, zero]
        parts = []
        for v in (lhs, rhs, acc):
            t = ir.RankedTensorType(v.type)
            if batch > 1:
                one = ir.RankedTensorType.get([1, *t.shape[1:]], t.element_type)
                v = builder.build("extract_slice", [v, index], [one]).results[0]
            flat = ir.RankedTensorType.get(t.shape[1:], t.element_type)
            parts.append(builder.build("reshape", [v], [flat]).results[0])
        d = builder.build("dot", parts, [parts[2].type], attrs).results[0]
        rt = ir.RankedTensorType(rtype)
        d = builder.build("reshape", [d], [ir.RankedTensorType.get([1, *shape[1:]], rt.element_type)]).results[0]
        out = d if batch == 1 else builder.build("insert_slice", [d, out, index], [rtype]).results[0]
    return [out]


def mmaf(op, rb):
    return _dot(op, rb, {"fast_acc": ir.UnitAttr.get()} if "fast_acc" in op.attributes else {})


def mmai(op, rb):
    return _dot(op, rb, {k: op.attributes[k] for k in ("signedness_lhs", "signedness_rhs") if k in op.attributes})


def mmaf_scaled(op, rb):
    return list(builder.build("mma_block_scale", rb.gets(op.operands), result_types(op, rb)).results)


POPULATOR = {
    "cuda_tile.mmaf": mmaf, "cuda_tile.mmai": mmai, "cuda_tile.mmaf_scaled": mmaf_scaled,
    "cuda_tile.reduce": _combiner("reduce", ()), "cuda_tile.scan": _combiner("scan", ("reverse",)),
}
