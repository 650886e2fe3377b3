"""Stage 1, populator C: the specialists whose shapes depend on A and B (mmaf, mmai, reduce, scan)."""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import ir

from ..irdl_text import slots
from ..nv_tileaa import COMBINER_SLOTS, builder
from .common import result_types


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


def mmaf(op, rb):
    attrs = {"fast_acc": ir.UnitAttr.get()} if "fast_acc" in op.attributes else {}
    return list(builder.build("dot", rb.gets(op.operands), result_types(op, rb), attrs).results)


def mmai(op, rb):
    attrs = {k: op.attributes[k] for k in ("signedness_lhs", "signedness_rhs") if k in op.attributes}
    return list(builder.build("dot", rb.gets(op.operands), result_types(op, rb), attrs).results)


def mmaf_scaled(op, rb):
    return list(builder.build("mma_block_scale", rb.gets(op.operands), result_types(op, rb)).results)


POPULATOR = {
    "cuda_tile.mmaf": mmaf, "cuda_tile.mmai": mmai, "cuda_tile.mmaf_scaled": mmaf_scaled,
    "cuda_tile.reduce": _combiner("reduce", ()), "cuda_tile.scan": _combiner("scan", ("reverse",)),
}
