"""gpu.barrier -> the aligned CTA barrier ``nvvm.barrier0`` (bar.sync 0), one to one, no control flow."""

from tilecore.conversion import Pattern
from tilecore.mlir import ir


class BarrierPattern(Pattern):
    """``gpu.barrier`` -> ``nvvm.barrier0`` exactly where the source op was."""

    root = "gpu.barrier"

    def rewrite(self, op, rw):
        with rw.ip:
            ir.Operation.create("nvvm.barrier0")
        rw.erase(op)


def patterns():
    return [BarrierPattern()]
