"""The kernel-spec attribute stage 2 attaches before its conversion runs.

``nv_tileaa.kernel_spec = #nv_tileaa.kernel_spec<num_warps, cluster_dim, num_ctas,
occupancy, max_registers>`` mirrors the ``cute.kernel`` entry's launch metadata (the
cuTile optimization hints for the compile target, defaults: 4 warps, no cluster);
``nv_tileaa.compute_capability`` (major * 10 + minor, default 80) is the target spec
SM-gated rewrites consult.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tilecore.errors import LoweringError
from tilecore.mlir import ir

DEFAULT_NUM_WARPS = 4
DEFAULT_CC = 80
SPEC_ATTR = "nv_tileaa.kernel_spec"
CC_ATTR = "nv_tileaa.compute_capability"


@dataclass
class KernelSpec:
    num_warps: int = DEFAULT_NUM_WARPS
    cluster_dim: tuple[int, int, int] = (1, 1, 1)
    num_ctas: int = 1
    occupancy: int = 0
    max_registers: int = 0

    def attr(self) -> ir.Attribute:
        cd = ", ".join(map(str, self.cluster_dim))
        return ir.Attribute.parse(f"#nv_tileaa.kernel_spec<{self.num_warps} : i32, array<i32: {cd}>, "
                                  f"{self.num_ctas} : i32, {self.occupancy} : i32, {self.max_registers} : i32>")

    @staticmethod
    def parse(attr) -> "KernelSpec":
        text = str(attr)
        m = re.match(r"#nv_tileaa\.kernel_spec<(-?\d+) : i32, array<i32: ([^>]*)>, (-?\d+) : i32, "
                     r"(-?\d+) : i32, (-?\d+) : i32>", text)
        if not m:
            raise ValueError(text)
        cd = tuple(int(x) for x in m.group(2).split(","))
        return KernelSpec(int(m.group(1)), cd, int(m.group(3)), int(m.group(4)), int(m.group(5)))


def hints_for(attr, target) -> dict:
    """The cuTile optimization hints for ``target``: ``default`` overridden by ``sm_<cc>`` (integers; booleans,
    e.g. a load's ``allow_tma = false``, as 1 / 0)."""
    if attr is None:
        return {}
    text = str(attr)
    out: dict = {}
    for key in ("default", f"sm_{target.cc}" if target is not None else None):
        if key is None:
            continue
        m = re.search(rf"\b{key}\s*=\s*\{{([^}}]*)\}}", text)
        if m:
            out.update({k: int(v) if v not in ("true", "false") else int(v == "true")
                        for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+|true|false)\b", m.group(1))})
    return out


WORKER_WARPS = "num_worker_warps_per_cta"  # cuTile's kernel hint num_worker_warps (TileIR bytecode 13.3+)


# Without a warps hint, a kernel whose largest dot accumulates at least LARGE_ACCUMULATOR elements gets
# LARGE_ACCUMULATOR_WARPS warps on sm_90 and later, as tileiras gives such kernels 256 threads there (128 on sm_80;
# bench/large_dots.py): at 4 warps a 256 x 128 f32 accumulator is 256 registers a thread and ptxas spills
# (256x128x128 f16 on sm_90a: 2105 LDL / STL at 4 warps, none at 8).
LARGE_ACCUMULATOR = 256 * 128
# ... or whose largest dot operand holds at least LARGE_OPERAND_WORDS 32-bit words (a 128 x 512 f16 tile): an operand
# loaded outside a pipelined loop lives in registers before its dot writes it to shared memory, 256 registers a thread
# at 4 warps (TileGym's MLA decode with TH = 16, TN = 128: 14280 bytes of stack a thread at 4 warps, 6048 at 8;
# tileiras gives it 256 threads). On tileiras' f16 matmuls the rule agrees on 6 of 8 shapes (bench/large_accumulators.py
# --threads: 256 threads for 64 x 64 x 1024, 128 x 16 x 1024, 128 x 64 x 512; tileiras keeps 128 for 128 x 16 x 512
# and 64 x 16 x 1024, whose A alone is 32768 words).
LARGE_OPERAND_WORDS = 128 * 512 // 2
LARGE_ACCUMULATOR_WARPS = 8
LARGE_ACCUMULATOR_MIN_CC = 90
DOT_OPS = ("nv_tileaa.dot", "nv_tileaa.mma_block_scale")
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255


def min_ctas_per_sm(occupancy: int, num_warps: int, largest_tile: int) -> int:
    """The CTAs per SM a kernel asks ptxas for (PTX ``.minnctapersm``) under cuTile's ``occupancy`` hint: the hint,
    unless the register cap it implies (65536 / (occupancy x threads), a multiple of 8, at most 255) is less than
    twice the registers a thread holds of the largest dot tile (``largest_tile`` 32-bit words: its accumulator, or an
    operand held in registers); then 1 (no cap). tileiras reads the hint so (bench/large_accumulators.py
    --occupancy): 128 threads at occupancy 4 take 128 registers with a 128 x 64 f32 accumulator but 255 with
    128 x 128; at 8, 64 with 64 x 64 but 255 with 128 x 64. Kept, MLA decode's 512 x 64 accumulator at occupancy 2 on
    256 threads capped ptxas at 128 registers: 6 KB of stack a thread (TH = 16, TN = 128: its 128 x 512 f16 operand,
    7.5 KB)."""
    if occupancy <= 1:
        return 1
    threads = 32 * num_warps
    cap = min(MAX_REGISTERS_PER_THREAD, REGISTERS_PER_SM // (occupancy * threads) // 8 * 8)
    return occupancy if 2 * -(-largest_tile // threads) <= cap else 1


def spec_from_hints(hints: dict, largest_accumulator: int = 0, cc: int = DEFAULT_CC,
                    largest_operand: int = 0) -> KernelSpec:
    """The kernel spec of a kernel's cuTile optimization hints (:func:`hints_for`). Its warps: ``num_warps``, else
    cuTile's ``num_worker_warps`` ("the warps of the CUDA-core warp groups"; tilecore's kernels are not warp
    specialized, so every warp is one: a 256 x 256 f32 accumulator is then 256 registers a thread at 8, not 512 at 4),
    else :data:`LARGE_ACCUMULATOR_WARPS` when compute capability ``cc`` is at least
    :data:`LARGE_ACCUMULATOR_MIN_CC` and the kernel's ``largest_accumulator`` (elements of its largest dot result)
    is at least :data:`LARGE_ACCUMULATOR` or its ``largest_operand`` (32-bit words of its largest dot operand) at
    least :data:`LARGE_OPERAND_WORDS`, else 4. Its ``num_ctas`` (CTAs per SM): :func:`min_ctas_per_sm`."""
    ks = KernelSpec()
    default = DEFAULT_NUM_WARPS
    if cc >= LARGE_ACCUMULATOR_MIN_CC and (largest_accumulator >= LARGE_ACCUMULATOR or
                                           largest_operand >= LARGE_OPERAND_WORDS):
        default = LARGE_ACCUMULATOR_WARPS
    ks.num_warps = hints.get("num_warps", hints.get(WORKER_WARPS, default))
    n = hints.get("num_cta_in_cga", 1)
    ks.cluster_dim = (n, 1, 1)
    ks.occupancy = hints.get("occupancy", 0)
    ks.num_ctas = min_ctas_per_sm(hints.get("occupancy", 1), ks.num_warps, max(largest_accumulator, largest_operand))
    ks.max_registers = hints.get("max_nreg", hints.get("max_registers", 0))
    return ks


def attach_kernel_specs(module, target) -> int:
    """Mirror every ``cute.kernel`` nv_tileaa.func's metadata onto ``nv_tileaa.kernel_spec``."""
    n = 0
    for op in module.body.operations:
        op = op.operation
        if op.name == "nv_tileaa.func" and "cute.kernel" in op.attributes:
            hints = hints_for(op.attributes["optimization_hints"] if "optimization_hints" in op.attributes
                              else None, target)
            cc = target.cc if target is not None else DEFAULT_CC
            acc, operand = largest_dot_tiles(op)
            op.attributes[SPEC_ATTR] = spec_from_hints(hints, acc, cc, operand).attr()
            op.attributes[CC_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), cc)
            n += 1
    return n


def largest_dot_tiles(func_op) -> tuple[int, int]:
    """(elements of the largest dot result, 32-bit words of the largest dot operand) in ``func_op``
    (:data:`DOT_OPS`; 0 without dots)."""
    largest = [0, 0]

    def words(t) -> int:
        t = ir.RankedTensorType(t)
        el = t.element_type
        bits = el.width if isinstance(el, (ir.FloatType, ir.IntegerType)) else 32
        return -(-math.prod(t.shape) * bits // 32)

    def visit(op):
        if op.name in DOT_OPS and len(op.results) == 1 and isinstance(op.results[0].type, ir.RankedTensorType):
            largest[0] = max(largest[0], math.prod(ir.RankedTensorType(op.results[0].type).shape))
            for v in list(op.operands)[:2]:
                if isinstance(v.type, ir.RankedTensorType):
                    largest[1] = max(largest[1], words(v.type))
        return ir.WalkResult.ADVANCE

    func_op.walk(visit)
    return largest[0], largest[1]


SPEC_FORM = ("#nv_tileaa.kernel_spec<num_warps : i32, array<i32: x, y, z>, num_ctas : i32, occupancy : i32, "
             "max_registers : i32>")


def kernel_spec_of(func_op) -> KernelSpec | None:
    """The kernel spec of ``func_op`` (None without one); a malformed one (MLIR written elsewhere) is a
    LoweringError at the function."""
    if SPEC_ATTR not in func_op.attributes:
        return None
    attr = func_op.attributes[SPEC_ATTR]
    try:
        spec = KernelSpec.parse(attr)
    except ValueError:
        spec = None
    if spec is None or len(spec.cluster_dim) != 3:
        raise LoweringError(f"'{SPEC_ATTR}' must be {SPEC_FORM}, but got {attr}", func_op)
    if not (1 <= spec.num_warps <= 32 and min(spec.cluster_dim) >= 1 and spec.num_ctas >= 1
            and spec.occupancy >= 0 and spec.max_registers >= 0):
        raise LoweringError(f"'{SPEC_ATTR}' {attr}: num_warps must be 1-32 (at most 1024 threads), cluster sizes "
                            f"and num_ctas at least 1, occupancy and max_registers not negative", func_op)
    return spec
