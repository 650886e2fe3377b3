"""``tileas-assign-layouts``: annotate every tile value with its blocked layout.

Each op producing tiles gets ``layouts = [#nv_tileas.blocked<...>, ...]`` (one per tile
result); ops whose result elements live in other threads than their sources get
``exchange = "smem"`` (stage 4 moves them through shared memory) or ``"registers"``
(reshape, a broadcast of a one-element tile: no data moves). The kernel's thread count
comes from its kernel spec.
"""

from __future__ import annotations

from tilecore.conversion import ConversionStats
from tilecore.errors import at_op, ops_in
from tilecore.mlir import ir
from tilecore.stages import Stage

from ..entry_check import check_module
from ..stage2_tileaa_to_tileas.kernel_spec import KernelSpec, kernel_spec_of
from . import blocked

NAME = "tileas-assign-layouts"
EXCHANGE_OPS = ("nv_tileas.permute", "nv_tileas.extract_slice", "nv_tileas.insert_slice", "nv_tileas.cat",
                "nv_tileas.scan")


def _shape(t):
    return tuple(ir.RankedTensorType(t).shape) if str(t).startswith("tensor<") else None


def exchange_kind(op) -> str | None:
    name = op.name
    if name in EXCHANGE_OPS:
        return "smem"
    if name == "nv_tileas.reshape":
        return "registers"
    if name == "nv_tileas.broadcast":
        s = _shape(op.operands[0].type)
        return "registers" if s is None or all(d == 1 for d in s) else "smem"
    return None


def annotate(func, threads: int) -> int:
    n = 0
    for op in ops_in(func):  # (a list, not a walk callback: an error is reported at its op)
        with at_op(op, NAME):
            n += _annotate_op(op, threads)
    return n


def _annotate_op(op, threads: int) -> int:
    n = 0
    lays = [blocked(_shape(r.type), threads).attr_text() for r in op.results if _shape(r.type) is not None]
    if lays and op.name.split(".")[0] in ("nv_tileas", "arith", "math"):
        op.attributes["layouts"] = ir.ArrayAttr.get([ir.Attribute.parse(t) for t in lays])
        n += 1
    kind = exchange_kind(op)
    if kind:
        op.attributes["exchange"] = ir.StringAttr.get(kind)
    return n


def run(ctx) -> ConversionStats:
    with ctx.module.context, ir.Location.unknown():
        check_module(ctx.module)  # outside-written tile IR is checked before anything changes it
        return _run(ctx)


def _run(ctx) -> ConversionStats:
    stats = ConversionStats(stage=NAME)
    for op in ctx.module.body.operations:
        op = op.operation
        if op.name == "nv_tileaa.func":
            spec = kernel_spec_of(op) or KernelSpec()
            stats.fired["tileas:annotate-layout"] = annotate(op, 32 * spec.num_warps)
    return stats


def stage() -> Stage:
    return Stage(NAME, after=("convert-tileaa-to-tileas",), before=("convert-tile-func-to-llvm",), run=run,
                 description="blocked layouts per tile value; shared-memory exchanges marked")
