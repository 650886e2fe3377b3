"""cute_nvgpu fences and warp election -> NVVM."""

from tilecore.conversion import Pattern
from tilecore.mlir import ir


class FenceViewAsyncSharedPattern(Pattern):
    """``cute_nvgpu.fence_view_async_shared`` -> ``nvvm.fence.proxy {kind = async.shared, space = cta}``."""

    root = "cute_nvgpu.fence_view_async_shared"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            ir.Operation.create("nvvm.fence.proxy", attributes={
                "kind": ir.Attribute.parse("#nvvm.proxy_kind<async.shared>"),
                "space": ir.Attribute.parse("#nvvm.shared_space<cta>")})
        rw.erase(op)


class ThreadIdxPattern(Pattern):
    """``cute.thread_idx`` -> ``nvvm.read.ptx.sreg.tid.x``."""

    root = "cute.thread_idx"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            new = ir.Operation.create("nvvm.read.ptx.sreg.tid.x", results=[ir.IntegerType.get_signless(32)])
        rw.replace(op, new)


def patterns():
    return [FenceViewAsyncSharedPattern(), ThreadIdxPattern()]
