"""SM80 asynchronous copies: ``nvgpu.device_async_*`` -> ``nvvm.cp.async.*``."""

from tilecore.conversion import Pattern
from tilecore.mlir import ir


class DeviceAsyncWaitPattern(Pattern):
    """``nvgpu.device_async_wait %t {numGroups = N}`` -> ``nvvm.cp.async.wait.group N`` (0 when absent)."""

    root = "nvgpu.device_async_wait"

    def rewrite(self, op, rw):
        n = 0
        if "numGroups" in op.attributes:
            n = ir.IntegerAttr(op.attributes["numGroups"]).value
        with rw.ip, op.location:
            ir.Operation.create("nvvm.cp.async.wait.group",
                                attributes={"n": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), n)})
        rw.erase(op)


def patterns():
    return [DeviceAsyncWaitPattern()]
