"""Stage 1, ``convert-cuda-tile-to-tileaa``: the public cuda_tile dialect -> nv_tileaa.

Three populators run in the spec's fixed order: A (arithmetic and structured control
flow, :mod:`.populate_a`), B (memory, pointer, token and view ops, :mod:`.populate_b`),
C (mmaf, mmai, reduce, scan, :mod:`.populate_c`); :mod:`.types` is the type converter
for tile / pointer / token types. Each ``cuda_tile.entry`` becomes an ``nv_tileaa.func``
marked ``cute.kernel`` (its optimization hints carried for stage 2's kernel spec).
Legality afterwards: no ``cuda_tile`` / ``cuda_tile_term`` op survives.
"""

from __future__ import annotations

from tilecore.conversion import ConversionStats, ConversionTarget
from tilecore.errors import LoweringError
from tilecore.mlir import ir
from tilecore.stages import Stage

from ..nv_tileaa import TERM
from ..rebuild import Rebuilder, run_stage
from . import populate_a, populate_b, populate_c
from .types import TypeConverter

NAME = "convert-cuda-tile-to-tileaa"

# The spec's populator order: A, then B, then C.
POPULATORS = [("A:arith+scf", populate_a.POPULATOR), ("B:memory+views", populate_b.POPULATOR),
              ("C:mma+reduce+scan", populate_c.POPULATOR)]


def legality(target, options) -> ConversionTarget:
    return ConversionTarget(NAME).add_illegal_dialect("cuda_tile", "cuda_tile_term")


def _entry(op, rb):
    fty = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    if fty.results:
        raise LoweringError("a cuda_tile entry must not return values", op)
    new_fty = ir.FunctionType.get([rb.convert_type(t) for t in fty.inputs], [])
    attrs = {"sym_name": op.attributes["sym_name"], "function_type": ir.TypeAttr.get(new_fty),
             "cute.kernel": ir.UnitAttr.get()}
    if "optimization_hints" in op.attributes:
        attrs["optimization_hints"] = op.attributes["optimization_hints"]
    new = ir.Operation.create("nv_tileaa.func", results=[], operands=[], attributes=attrs, regions=1)
    rb.region_into(op.regions[0], new.regions[0])
    return None


def _return(op, rb):
    ir.Operation.create(f"{TERM}.return", results=[], operands=rb.gets(op.operands))


def run(ctx) -> ConversionStats:
    return run_stage(ctx, NAME, _run)  # other plugins' patterns for this stage go first


def _run(ctx) -> ConversionStats:
    """Rebuild every cuda_tile.entry as an nv_tileaa.func."""
    module = ctx.module
    body = module.body if isinstance(module, ir.Module) else module.regions[0].blocks[0]
    stats = ConversionStats(stage=NAME)
    tc = TypeConverter()
    pops = [("entry", {"cuda_tile.entry": _entry, "cuda_tile_term.return": _return}), *POPULATORS]
    rb = Rebuilder(pops, tc, stage=NAME, strict_dialects=("cuda_tile", "cuda_tile_term"))
    for op in list(body.operations):
        if op.operation.name in ("cuda_tile.entry", "cuda_tile.global"):
            with ir.InsertionPoint(op), op.location:
                rb.op(op)
            op.operation.erase()
        elif op.operation.name.startswith("cuda_tile"):
            raise LoweringError(f"unsupported op '{op.operation.name}' in stage '{NAME}'", op)
    stats.fired = dict(rb.fired)
    return stats


def stage() -> Stage:
    return Stage(NAME, legality=legality, run=run, description="cuda_tile -> nv_tileaa (+ arith / math / scf)")
