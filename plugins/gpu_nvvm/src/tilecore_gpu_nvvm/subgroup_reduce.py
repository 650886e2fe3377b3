"""gpu.subgroup_reduce -> ``nvvm.redux.sync`` where the target has it, else a butterfly shuffle tree.

redux.sync needs sm_80 (spec note 4) and covers 32-bit integer add / min / max / and / or / xor
over the whole warp; f32 min / max use it from sm_100a. Everything else (f32 add / mul,
clustered reductions, older targets) is a tree of ``nvvm.shfl.sync bfly`` steps, each
combining the lane's value with its partner's.
"""

from tilecore.conversion import Pattern
from tilecore.mlir import ir

from .llvm_build import function_of, hoisted_constant, i32

# gpu all_reduce_op -> (redux kind for i32, redux kind for f32 on sm_100a, LLVM combiner op)
REDUCTIONS = {
    "add": ("add", None, {"int": "llvm.add", "float": "llvm.fadd"}),
    "mul": (None, None, {"int": "llvm.mul", "float": "llvm.fmul"}),
    "minsi": ("min", None, {"int": "llvm.intr.smin"}),
    "maxsi": ("max", None, {"int": "llvm.intr.smax"}),
    "minui": ("umin", None, {"int": "llvm.intr.umin"}),
    "maxui": ("umax", None, {"int": "llvm.intr.umax"}),
    "and": ("and", None, {"int": "llvm.and"}),
    "or": ("or", None, {"int": "llvm.or"}),
    "xor": ("xor", None, {"int": "llvm.xor"}),
    "minnumf": (None, "fmin", {"float": "llvm.intr.minnum"}),
    "maxnumf": (None, "fmax", {"float": "llvm.intr.maxnum"}),
    "minimumf": (None, None, {"float": "llvm.intr.minimum"}),
    "maximumf": (None, None, {"float": "llvm.intr.maximum"}),
}
REDUX_MIN_CC = 80
REDUX_F32_TARGETS = ("sm_100a", "sm_101a", "sm_103a")


def _reduce_op(op) -> str:
    return str(op.attributes["op"]).rsplit(" ", 1)[-1].rstrip(">")


def _cluster(op) -> tuple[int, int]:
    size = ir.IntegerAttr(op.attributes["cluster_size"]).value if "cluster_size" in op.attributes else 32
    stride = ir.IntegerAttr(op.attributes["cluster_stride"]).value if "cluster_stride" in op.attributes else 1
    return size, stride


def _class(t) -> str | None:
    if isinstance(t, ir.F32Type):
        return "float"
    if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 32:
        return "int"
    return None


def redux_kind(op, target, reduce_op: str | None = None) -> str | None:
    """The redux.sync kind usable for ``op`` on ``target``, or None (then a shuffle tree)."""
    kind_i32, kind_f32, _ = REDUCTIONS[reduce_op or _reduce_op(op)]
    if _cluster(op) != (32, 1) or target is None or target.cc < REDUX_MIN_CC:
        return None
    cls = _class(op.operands[0].type)
    if cls == "int":
        return kind_i32
    if cls == "float" and target.name in REDUX_F32_TARGETS:
        return kind_f32
    return None


class SubgroupReducePattern(Pattern):
    """``gpu.subgroup_reduce <op> %v`` (scalar i32 / f32) -> redux.sync or a shfl.sync bfly tree."""

    root = "gpu.subgroup_reduce"

    def __init__(self):
        # reduction attribute -> its name: printing the attribute costs more than the rest of
        # match (one instance serves one conversion, so the keys are of one context)
        self._names: dict = {}

    def _reduce_op(self, op) -> str:
        attr = op.attributes["op"]
        name = self._names.get(attr)
        if name is None:
            name = self._names[attr] = _reduce_op(op)
        return name

    def match(self, op) -> bool:
        red = self._reduce_op(op)
        cls = _class(op.operands[0].type)
        size, _ = _cluster(op)
        return red in REDUCTIONS and cls in REDUCTIONS[red][2] and size & (size - 1) == 0

    def rewrite(self, op, rw):
        value = op.operands[0]
        vtype = value.type
        red = self._reduce_op(op)
        kind = redux_kind(op, rw.target, red)
        t32 = i32()
        fn = function_of(op)
        full = hoisted_constant(rw, op, t32, -1, fn=fn)
        with rw.ip:
            if kind is not None:
                attrs = {"kind": rw.attr(f"#nvvm<redux_kind {kind}>")}
                result = ir.Operation.create("nvvm.redux.sync", results=[vtype], operands=[value, full],
                                             attributes=attrs).results[0]
            else:
                combine = REDUCTIONS[red][2][_class(vtype)]
                size, stride = _cluster(op)
                clamp = hoisted_constant(rw, op, t32, 31, fn=fn)
                bfly = {"kind": rw.attr("#nvvm<shfl_kind bfly>")}
                results = [vtype]
                create = ir.Operation.create
                result = value
                offset = stride
                while offset < size * stride:
                    off = hoisted_constant(rw, op, t32, offset, fn=fn)
                    other = create("nvvm.shfl.sync", results=results, operands=[full, result, off, clamp],
                                   attributes=bfly).results[0]
                    result = create(combine, results=results, operands=[result, other]).results[0]
                    offset *= 2
        rw.replace(op, [result])


def patterns():
    return [SubgroupReducePattern()]
