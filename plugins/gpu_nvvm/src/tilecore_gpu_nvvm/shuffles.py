"""gpu.shuffle xor / up / down / idx -> ``nvvm.shfl.sync`` (bfly / up / down / idx).

The member mask covers the ``width`` lowest lanes (``-1 >> (32 - width)``); the packed
clamp operand is ``32 - width`` for ``up`` (lanes below the segment start keep their value)
and ``width - 1`` for the other modes (PTX ISA, shfl.sync). The validity result comes from
``{return_value_and_is_valid}`` and is only requested when it is used.
"""

from tilecore.conversion import Pattern
from tilecore.mlir import dialects, ir

from .llvm_build import hoisted_constant, i32

# gpu.shuffle mode -> nvvm.shfl.sync kind
SHUFFLE_KINDS = {"xor": "bfly", "up": "up", "down": "down", "idx": "idx"}


def _mode(op) -> str:
    return str(op.attributes["mode"]).rsplit(" ", 1)[-1].rstrip(">").strip("<")


class ShufflePattern(Pattern):
    """``gpu.shuffle <mode> %v, %offset, %width`` -> ``nvvm.shfl.sync <kind> %mask, %v, %offset, %clamp``."""

    root = "gpu.shuffle"

    def match(self, op) -> bool:
        t = op.operands[0].type
        return _mode(op) in SHUFFLE_KINDS and (
            isinstance(t, ir.F32Type) or (isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 32))

    def rewrite(self, op, rw):
        value, offset, width = op.operands
        kind = SHUFFLE_KINDS[_mode(op)]
        valid_used = any(True for _ in op.results[1].uses)
        minus_one, thirty_two, one = (hoisted_constant(rw, op, i32(), v) for v in (-1, 32, 1))
        nowrap = rw.attr("#llvm.overflow<none>")
        with rw.ip:
            inactive = dialects.llvm.sub(thirty_two, width, overflow_flags=nowrap)
            mask = dialects.llvm.lshr(minus_one, inactive)
            if kind == "up":
                clamp = inactive
            else:
                clamp = dialects.llvm.sub(width, one, overflow_flags=nowrap)
            vt = value.type
            res_t = ir.Type.parse(f"!llvm.struct<({vt}, i1)>") if valid_used else vt
            attrs = {"kind": rw.attr(f"#nvvm<shfl_kind {kind}>")}
            if valid_used:
                attrs["return_value_and_is_valid"] = ir.UnitAttr.get()
            shfl = ir.Operation.create("nvvm.shfl.sync", results=[res_t],
                                       operands=[mask, value, offset, clamp], attributes=attrs).results[0]
            if valid_used:
                out = dialects.llvm.extractvalue(vt, shfl, [0])
                valid = dialects.llvm.extractvalue(ir.IntegerType.get_signless(1), shfl, [1])
            else:
                out, valid = shfl, hoisted_constant(rw, op, ir.IntegerType.get_signless(1), 1)
        rw.replace(op, [out, valid])


def patterns():
    return [ShufflePattern()]
