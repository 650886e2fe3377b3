"""Structured control flow over tiles: scf.for / scf.if / scf.yield with tiles flattened to registers.

A region's results have fixed layouts (a loop carries a tile that comes back as an MMA fragment in
that fragment, :func:`~.fragments.preferred_layout`; ``scf.if`` results take their preferred layout
too); each terminator converts what it yields to them (:func:`_expect`).
"""

from __future__ import annotations

from tilecore.mlir import ir

from ..rebuild import attrs_of
from .codegen import create
from .fragments import preferred_layout, to_layout
from .values import TOKEN, TileV


def flatten(vals) -> list:
    out = []
    for v in vals:
        if isinstance(v, TileV):
            out += v.regs
        elif v is TOKEN:
            continue
        else:
            out.append(v)
    return out


def unflatten(templates, flat) -> list:
    """Rebuild values shaped like ``templates`` (old values -> their kind) from ``flat``."""
    out, i = [], 0
    for t in templates:
        if isinstance(t, TileV):
            out.append(TileV(t.layout, list(flat[i:i + t.layout.regs])))
            i += t.layout.regs
        elif t is TOKEN:
            out.append(TOKEN)
        else:
            out.append(flat[i])
            i += 1
    return out


def _expect(rb, templates):
    """Push the layouts the terminators of the region being rebuilt must yield (None: as they come)."""
    rb.data.setdefault("yield_layouts", []).append(templates)


def _expected(rb, vals):
    stack = rb.data.get("yield_layouts") or []
    if not stack or stack[-1] is None or len(stack[-1]) != len(vals):
        return vals
    cg = rb.data["cg"]
    return [to_layout(cg, v, t.layout) if isinstance(t, TileV) else v for v, t in zip(vals, stack[-1])]


def _in_region(rb, templates, fn):
    _expect(rb, templates)
    try:
        fn()
    finally:
        rb.data["yield_layouts"].pop()


def for_op(op, rb):
    """``scf.for``: pipelined (:mod:`.pipeline`) when its dots' operand loads allow it, behind a run-time
    alignment check when the chunks' alignment is not known statically (the tensors that fail it take the
    loop's element-copy form, :func:`.pipeline.pipelined_for` with ``elements``); plain otherwise."""
    from . import pipeline

    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    lb, ub, step, inits = ins[0], ins[1], ins[2], ins[3:]
    term = list(op.regions[0].blocks[0].operations)[-1]
    inits = [to_layout(cg, v, preferred_layout(cg, y)) for v, y in zip(inits, term.operands)]
    flat = flatten(inits)
    plan = pipeline.plan(cg, op)
    if plan is None:
        return unflatten(inits, _plain_for(op, rb, lb, ub, step, inits))
    old = op.regions[0].blocks[0]

    def body_into(blk, args):
        _in_region(rb, inits, lambda: rb.block_into(old, blk, args=[args[0], *unflatten(inits, args[1:])]))

    aligned = pipeline.alignment_check(cg, rb, plan)
    if aligned is None:
        return unflatten(inits, pipeline.pipelined_for(op, rb, plan, lb, ub, step, inits, body_into))
    res = cg.if_(aligned, lambda: pipeline.pipelined_for(op, rb, plan, lb, ub, step, inits, body_into, checked=True),
                 lambda: pipeline.pipelined_for(op, rb, plan, lb, ub, step, inits, body_into, elements=True),
                 types=[v.type for v in flat])
    return unflatten(inits, res)


def _plain_for(op, rb, lb, ub, step, inits) -> list:
    """The loop as it is (flat results)."""
    flat = flatten(inits)
    attrs = {k: v for k, v in attrs_of(op).items() if k not in ("layouts",)}
    node = create("scf.for", [v.type for v in flat], [lb, ub, step, *flat], attrs, regions=1)
    old = op.regions[0].blocks[0]
    blk = node.regions[0].blocks.append(lb.type, *[v.type for v in flat])
    args = list(blk.arguments)
    rb.bind([old.arguments[0]], [args[0]])
    _in_region(rb, inits, lambda: rb.block_into(old, blk, args=[args[0], *unflatten(inits, args[1:])]))
    return list(node.results)


def if_op(op, rb):
    cond = rb.get(op.operands[0])
    # Result kinds come from the old result types.
    templates, types = _templates(rb.data["cg"], rb, [r.type for r in op.results], list(op.results))
    node = create("scf.if", types, [cond], regions=2)
    for o, n in zip(op.regions, node.regions):
        blk = n.blocks.append()
        if len(o.blocks):
            _in_region(rb, templates, lambda o=o, blk=blk: rb.block_into(o.blocks[0], blk))
        else:
            with ir.InsertionPoint(blk):
                create("scf.yield", [], [])
    return unflatten(templates, list(node.results))


def yield_op(op, rb):
    create("scf.yield", [], flatten(_expected(rb, rb.gets(op.operands))))


def _templates(cg, rb, types, values=None):
    """Result templates for ``types``: tiles in the blocked layout, or the preferred layout of the
    corresponding old ``values``."""
    out, flat = [], []
    for i, t in enumerate(types):
        if str(t).startswith("tensor<"):
            lay = (preferred_layout(cg, values[i]) if values is not None else None) or \
                cg.layout(ir.RankedTensorType(t).shape)
            out.append(TileV(lay, [None] * lay.regs))
            flat += [rb.convert_type(ir.RankedTensorType(t).element_type)] * lay.regs
        elif "mem_token" in str(t):
            out.append(TOKEN)
        else:
            out.append(None)
            flat.append(rb.convert_type(t))
    return out, flat


def while_op(op, rb):
    cg = rb.data["cg"]
    inits = rb.gets(op.operands)
    tmpl_in, types_in = _templates(cg, rb, [v.type for v in op.operands])
    tmpl_out, types_out = _templates(cg, rb, [r.type for r in op.results])
    inits = [to_layout(cg, v, t.layout) if isinstance(t, TileV) else v for v, t in zip(inits, tmpl_in)]
    node = create("scf.while", types_out, flatten(inits), regions=2)
    before = node.regions[0].blocks.append(*types_in)
    _in_region(rb, tmpl_out, lambda: rb.block_into(op.regions[0].blocks[0], before,
                                                   args=unflatten(tmpl_in, list(before.arguments))))
    after = node.regions[1].blocks.append(*types_out)
    _in_region(rb, tmpl_in, lambda: rb.block_into(op.regions[1].blocks[0], after,
                                                  args=unflatten(tmpl_out, list(after.arguments))))
    return unflatten(tmpl_out, list(node.results))


def condition_op(op, rb):
    vals = rb.gets(op.operands)
    create("scf.condition", [], [vals[0], *flatten(_expected(rb, vals[1:]))])
