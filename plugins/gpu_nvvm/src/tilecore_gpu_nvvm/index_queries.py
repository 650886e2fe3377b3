"""gpu index queries -> ``nvvm.read.ptx.sreg.*`` + an i32-to-index cast (spec note 3 table).

Upstream's ``convert-gpu-to-nvvm`` (run by this plugin after its Python patterns) already
lowers thread / block / cluster ids, cluster dims and lane id to exactly this form, with
``range`` from known sizes. The Python patterns cover the rest of the table: ``gpu.subgroup_size``
(upstream has no lowering) and ``gpu.block_dim`` / ``gpu.grid_dim``, whose known sizes give the
exact range ``[size, size + 1)`` where upstream gives ``[1, size + 1)``.
"""

from tilecore.conversion import Pattern
from tilecore.mlir import ir

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


# query -> (attribute on the enclosing gpu.func giving the size per axis, range of the value)
# "size" ranges are [size, size + 1); "index" ranges are [0, size).
KNOWN_SIZES = {
    "gpu.thread_id": ("known_block_size", "index"),
    "gpu.block_dim": ("known_block_size", "size"),
    "gpu.block_id": ("known_grid_size", "index"),
    "gpu.grid_dim": ("known_grid_size", "size"),
}
AXES = {"x": 0, "y": 1, "z": 2}


def known_range(op, root: str, axis: str | None) -> tuple[int, int] | None:
    """[lo, hi) of the value when the enclosing gpu.func declares its block / grid size."""
    if root not in KNOWN_SIZES or axis not in AXES:
        return None
    attr_name, kind = KNOWN_SIZES[root]
    fn = op.parent
    while fn is not None and fn.name != "gpu.func":
        fn = fn.parent
    if fn is None or attr_name not in fn.attributes:
        return None
    size = list(ir.DenseI32ArrayAttr(fn.attributes[attr_name]))[AXES[axis]]
    return (size, size + 1) if kind == "size" else (0, size)


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
        attrs = {}
        bounds = known_range(op, self.root, axis)
        if bounds is not None:
            attrs["range"] = rw.attr(f"#llvm.constant_range<i32, {bounds[0]}, {bounds[1]}>")
        with rw.ip:
            read = ir.Operation.create(f"nvvm.read.ptx.sreg.{reg}", results=[i32], attributes=attrs)
            cast = ir.Operation.create("arith.index_cast", results=[ir.IndexType.get()], operands=[read.results[0]])
        rw.replace(op, cast.results)


# the roots lowered here (the others: upstream, same form)
PYTHON_ROOTS = ("gpu.subgroup_size", "gpu.block_dim", "gpu.grid_dim")


def patterns() -> list[Pattern]:
    return [IndexQueryPattern(root) for root in PYTHON_ROOTS]
