"""gpu index queries -> ``nvvm.read.ptx.sreg.*`` + an i32-to-index cast (spec note 3 table)."""

from tilecore.conversion import Pattern
from tilecore.mlir import dialects, ir

# source op -> special register stem; per-axis ops get ".x" / ".y" / ".z".
SPECIAL_REGISTERS = {
    "gpu.thread_id": "tid",
    "gpu.block_id": "ctaid",
    "gpu.block_dim": "ntid",
    "gpu.grid_dim": "nctaid",
    "gpu.cluster_id": "clusterid",
    "gpu.cluster_dim": "nclusterid",
    "gpu.cluster_block_id": "cluster.ctaid",
    "gpu.subgroup_size": "warpsize",
    "gpu.lane_id": "laneid",
}


def _axis(op) -> str | None:
    if "dimension" not in op.attributes:
        return None
    text = str(op.attributes["dimension"])  # "#gpu<dim x>"
    return text.rsplit(" ", 1)[-1].rstrip(">")


class IndexQueryPattern(Pattern):
    """``gpu.<query> <axis>`` -> ``nvvm.read.ptx.sreg.<reg>.<axis> : i32`` + ``arith.index_cast``."""

    def __init__(self, root: str):
        self.root = root
        self.register = SPECIAL_REGISTERS[root]

    @property
    def name(self) -> str:
        return "IndexQuery[" + self.root.split(".", 1)[1] + "]"

    def rewrite(self, op, rw):
        axis = _axis(op)
        reg = self.register + (f".{axis}" if axis else "")
        i32 = ir.IntegerType.get_signless(32)
        with rw.ip, op.location:
            read = ir.Operation.create(f"nvvm.read.ptx.sreg.{reg}", results=[i32])
            cast = dialects.arith.index_cast(ir.IndexType.get(), read.results[0])
        rw.replace(op, [cast])


def patterns() -> list[Pattern]:
    return [IndexQueryPattern(root) for root in SPECIAL_REGISTERS]
