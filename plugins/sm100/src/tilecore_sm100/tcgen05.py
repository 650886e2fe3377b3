"""tcgen05 fences (sm_100a): ``cute_nvgpu.tcgen05_fence_*`` -> ``nvvm.tcgen05.fence``."""

from tilecore.conversion import Pattern
from tilecore.errors import LoweringError
from tilecore.mlir import ir

# Targets whose NVVM dialect accepts tcgen05 (MLIR 22's nvvm verifier: sm_100a / sm_101a only).
TCGEN05_TARGETS = ("sm_100a", "sm_101a")

# source op -> #nvvm.tcgen05_fence kind
FENCES = {
    "cute_nvgpu.tcgen05_fence_before_thread_sync": "before",
    "cute_nvgpu.tcgen05_fence_after_thread_sync": "after",
}


class Tcgen05FencePattern(Pattern):
    """``cute_nvgpu.tcgen05_fence_<kind>_thread_sync`` -> ``nvvm.tcgen05.fence #nvvm.tcgen05_fence<kind>``."""

    def __init__(self, root: str):
        self.root = root
        self.kind = FENCES[root]

    @property
    def name(self):
        return f"Tcgen05Fence[{self.kind}]"

    def rewrite(self, op, rw):
        if rw.target is None or rw.target.name not in TCGEN05_TARGETS:
            raise LoweringError(f"'{op.name}' needs one of {', '.join(TCGEN05_TARGETS)} (tcgen05); target is "
                                f"{rw.target.name if rw.target else 'unknown'}", op)
        with rw.ip, op.location:
            ir.Operation.create("nvvm.tcgen05.fence",
                                attributes={"kind": ir.Attribute.parse(f"#nvvm.tcgen05_fence<{self.kind}>")})
        rw.erase(op)


def patterns():
    return [Tcgen05FencePattern(r) for r in FENCES]
