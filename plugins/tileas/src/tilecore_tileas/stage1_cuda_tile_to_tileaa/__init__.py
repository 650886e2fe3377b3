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

from ..cuda_tile.verifier import VERIFIED, verify_module
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
    body = op.regions[0]
    if len(body.blocks) != 1 or not any(populate_a.may_return(o.operation) for o in body.blocks[0].operations):
        rb.region_into(body, new.regions[0])
        return None
    ob = body.blocks[0]
    nb = new.regions[0].blocks.append(*[rb.convert_type(a.type) for a in ob.arguments],
                                      arg_locs=[a.location for a in ob.arguments])
    rb.bind(ob.arguments, list(nb.arguments))
    with ir.InsertionPoint(nb):
        _until_return(list(ob.operations), rb)
        ir.Operation.create(f"{TERM}.return", results=[], operands=[])
    return None


def _until_return(ops, rb) -> None:
    """Lower a kernel body whose ifs may return early: an ``if`` with a return in a branch (at any depth of
    nested ifs and loops) becomes an ``scf.if`` whose branches hold their own ops followed by the ops after the
    if, up to the first return on that path (``scf.if`` regions must end in a yield: a return cannot stay
    inside). A ``loop`` that may return (a ``return`` in a ``while`` body) is followed by an ``scf.if`` on its
    returned flag whose else branch holds the ops after the loop."""
    for idx, o in enumerate(ops):
        o = o.operation
        if o.name == "cuda_tile_term.return":
            if len(o.operands):
                raise LoweringError("a cuda_tile entry must not return values", o)
            return
        if o.name == "cuda_tile_term.yield":  # a branch falling through: bind the if's results for the rest
            rb.bind(o.parent.results, rb.gets(o.operands))
            continue
        if o.name == "cuda_tile.loop" and populate_a.may_return(o):
            rb.op(o)
            rest = list(ops[idx + 1:])
            with o.location:
                node = ir.Operation.create("scf.if", results=[], operands=[populate_a.returned_flag(rb, o)],
                                           regions=2)
                with ir.InsertionPoint(node.regions[0].blocks.append()):
                    ir.Operation.create("scf.yield", results=[], operands=[])
                with ir.InsertionPoint(node.regions[1].blocks.append()):
                    _until_return(rest, rb)
                    ir.Operation.create("scf.yield", results=[], operands=[])
            return
        if o.name == "cuda_tile.if" and populate_a.may_return(o):
            rest = list(ops[idx + 1:])
            with o.location:
                node = ir.Operation.create("scf.if", results=[], operands=rb.gets(o.operands), regions=2)
                for region, new in zip(o.regions, node.regions):
                    blk = new.blocks.append()
                    body = list(region.blocks[0].operations) if len(region.blocks) else []
                    with ir.InsertionPoint(blk):
                        _until_return(body + rest, rb)
                        ir.Operation.create("scf.yield", results=[], operands=[])
            return
        rb.op(o)


def _return(op, rb):
    ir.Operation.create(f"{TERM}.return", results=[], operands=rb.gets(op.operands))


def run(ctx) -> ConversionStats:
    return run_stage(ctx, NAME, _run)  # other plugins' patterns for this stage go first


def _run(ctx) -> ConversionStats:
    """Rebuild every cuda_tile.entry as an nv_tileaa.func."""
    module = ctx.module
    body = module.body if isinstance(module, ir.Module) else module.regions[0].blocks[0]
    stats = ConversionStats(stage=NAME)
    if isinstance(module, ir.Module) and module not in VERIFIED and any(
            op.operation.name.startswith("cuda_tile.") for op in body.operations):
        verify_module(module, structure=False)  # read_tileir's type rules, for cuda_tile written as MLIR text too
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
