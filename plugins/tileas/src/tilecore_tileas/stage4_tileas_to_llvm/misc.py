"""Reduce / scan dispatch, tokens, hints, print, assert, and the ops not supported yet."""

from __future__ import annotations

import re

from tilecore.mlir import dialects, ir

from ..atoms import default_atom
from ..atoms.reduce import ReduceRequest
from .codegen import elem_bytes
from .memory import as_tile
from .values import TOKEN, TileV


def reduce_like(kind):
    def h(op, rb):
        cg = rb.data["cg"]
        srcs = [as_tile(cg, v, tuple(ir.RankedTensorType(o.type).shape)) for v, o in
                zip(rb.gets(op.operands), op.operands)]
        axis = ir.IntegerAttr(op.attributes["dim"]).value
        widths = {elem_bytes(s.regs[0].type) for s in srcs}
        req = ReduceRequest(kind, srcs[0].layout, axis, widths.pop() if len(widths) == 1 else 0, cg.threads,
                            len(srcs))
        name = None
        if "atom" in op.attributes:
            name = str(op.attributes["atom"]).split('"')[1]
        atom = cg.atoms.get(name) if name else None
        if atom is None or not atom.admissible(cg.target, req):
            atom = default_atom(cg.atoms, "reduce", cg.target, req)
        outs = atom.lower(cg, op, rb, srcs, kind)
        return [o if str(r.type).startswith("tensor<") else o.regs[0] for o, r in zip(outs, op.results)]
    return h


def token(op, rb):
    return [TOKEN]


def assume(op, rb):
    v = rb.get(op.operands[0])
    if "div_by" in op.attributes:
        rb.data["div_by"][op.results[0]] = ir.IntegerAttr(op.attributes["div_by"]).value
    return [v]


_CONVERSION = re.compile(r"%%|%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?((?:hh|h|ll|l|j|z|t|L)?[a-zA-Z])")
_LONG = ("ll", "l", "j", "z", "t")  # length modifiers of a 64-bit integer argument


def _conversions(fmt: str) -> list[str]:
    """The length modifier and conversion character of each argument of a printf format (``"d"``, ``"lld"``,
    ``"hhx"``; ``%%`` takes none)."""
    return [m.group(1) for m in _CONVERSION.finditer(fmt) if m.group(0) != "%%"]


def _printable(cg, v, conv: str):
    """``v`` as vprintf reads it: C's default argument promotions (f16 / bf16 -> f32 here, stage 6
    widens f32 to f64; i1 -> i32). An integer goes out in the width its conversion reads: 64 bits for the
    ``ll`` / ``l`` / ``j`` / ``z`` / ``t`` lengths (a narrower value sign-extended for ``%lld`` / ``%lli``,
    zero-extended for the unsigned conversions), else 32 bits (narrower values extended the same way, an
    i64 truncated to the low half that ``%d`` shows). vprintf reads the argument buffer by the format: an
    i32 under ``%lld`` read 4 bytes past the value (tileiras prints the stack's garbage there)."""
    t = str(v.type)
    if t in ("f16", "bf16"):
        return cg.op("arith.extf", v, ty=ir.F32Type.get())
    if t == "i1":
        v, t = cg.op("arith.extui", v, ty=cg.i32), "i32"
    if t not in ("i8", "i16", "i32", "i64") or conv[-1] not in "diouxXc":
        return v
    wide = conv[:-1] in _LONG
    want = ir.IntegerType.get_signless(64 if wide else 32)
    if t == str(want):
        return v
    if t == "i64":
        return cg.op("arith.trunci", v, ty=want)
    return cg.op("arith.extsi" if conv[-1] in "di" else "arith.extui", v, ty=want)


def _print_pieces(fmt: str):
    """``fmt`` split at its conversions: ``[(literal, spec), ..., (tail, None)]`` (``%%`` stays literal)."""
    out, at = [], 0
    for m in _CONVERSION.finditer(fmt):
        if m.group(0) == "%%":
            continue
        out.append((fmt[at:m.start()], m.group(0)))
        at = m.end()
    return out + [(fmt[at:], None)]


def _print_tile(cg, tile: TileV, off: int, spec: str, conv: str) -> None:
    """Thread 0 prints ``tile`` (row-major in shared memory at ``off``) as a nested list, each element with
    ``spec``: ``[[0, 1], [2, 3]]`` (cuTile's test_print.py: ``tile[0]:[0.00000, 1.00000, ...]``). The text between
    elements is known per position (``, ``, or the brackets closing the dimensions an element ends, then ``, ``
    and the brackets opening the next ones), so the elements go out in groups, one printf each, unrolled: at
    most 32 printf calls a tile (each has its argument buffer on the stack; in a loop those would pile up)."""
    shape, el, n = tile.shape, tile.regs[0].type, tile.layout.n
    rank = len(shape)
    block = [1]  # block[d]: elements in the last d dimensions
    for d in reversed(shape):
        block.append(block[-1] * d)

    def after(f):
        k = max(d for d in range(rank + 1) if (f + 1) % block[d] == 0)
        return ", " if k == 0 else "]" * rank if k == rank else "]" * k + ", " + "[" * k

    group = max(8, -(-n // 32))
    text, vals = "[" * rank, []
    for f in range(n):
        vals.append(_printable(cg, cg.smem_load(off, cg.c32(f), el), conv))
        text += spec + after(f)
        if len(vals) == group or f == n - 1:
            dialects.gpu.printf(ir.StringAttr.get(text), *vals)
            text, vals = "", []


def print_op(op, rb):
    """cuda_tile.print: once per tile block, from thread 0. A tile argument prints as a nested list with
    the conversion applied to each element (what tileiras prints: cuTile's test_print.py expects
    ``tile[0]:[0, 1, 2, 3]`` for ``ct.printf("tile[%d]:%d\\n", bid, tile)`` and ``[[6], [22]]`` for a
    (2, 1) tile); 0-d values print as themselves. The tiles go through shared memory (row-major)."""
    cg = rb.data["cg"]
    fmt = ir.StringAttr(op.attributes["str"]).value
    args = [v for v in rb.gets(op.operands) if v is not TOKEN]
    convs = _conversions(fmt) + ["d"] * len(args)
    tiles = [a for a in args if isinstance(a, TileV)]
    gpu = dialects.gpu
    cond = cg.cmpi(0, cg.tid, cg.c32(0))
    if not tiles:
        cg.masked(cond, lambda: gpu.printf(ir.StringAttr.get(fmt), *[_printable(cg, a, c) for a, c in zip(args, convs)]))
        return [TOKEN] if op.results else None
    from .exchange import write

    offs = dict(zip(map(id, tiles), write(cg, tiles)))  # every thread stores its elements, then a barrier

    def emit():
        text, vals = "", []
        pieces = _print_pieces(fmt)
        for (lit, spec), a, c in zip(pieces, args + [None] * len(pieces), convs + ["d"] * len(pieces)):
            text += lit
            if spec is None:
                break
            if isinstance(a, TileV):
                if text or vals:
                    gpu.printf(ir.StringAttr.get(text), *vals)
                text, vals = "", []
                _print_tile(cg, a, offs[id(a)], spec, c)
            else:
                text += spec
                vals.append(_printable(cg, a, c))
        if text or vals:
            gpu.printf(ir.StringAttr.get(text), *vals)
    cg.masked(cond, emit)
    cg.barrier()  # the scratch buffer is read until here
    return [TOKEN] if op.results else None


def assert_op(op, rb):
    """cuda_tile.assert: a ``cf.assert`` per condition register, at the op's location (stage 6 lowers it to
    ``__assertfail`` with the message, file, line and function: CUDA's device assert, which the driver
    reports and the emulator raises at that source location)."""
    cond = rb.get(op.operands[0])
    msg = ir.StringAttr(op.attributes["message"]).value
    for c in cond.regs if isinstance(cond, TileV) else [cond]:
        dialects.cf.assert_(c, msg, loc=op.location)
    return None


def cast(op, rb):
    """The unrealized casts stage 3 leaves between LLVM kernel arguments and nv_tileaa types."""
    return rb.gets(op.operands)


def memory_fence(op, rb):
    """memory_fence_alias_tko: a sequentially consistent fence (conservative: orders every earlier
    access before every later one, through any view)."""
    dialects.llvm.fence(dialects.llvm.AtomicOrdering.seq_cst)
    return [TOKEN]


def gdc(kind):
    """Programmatic dependent launch: griddepcontrol on sm_90+, nothing before (no PDL there)."""
    def h(op, rb):
        cg = rb.data["cg"]
        if cg.target is not None and cg.target.cc >= 90:
            dialects.nvvm.griddepcontrol(getattr(dialects.nvvm.GridDepActionKind, kind))
        return [TOKEN]
    return h


def get_global(op, rb):
    name = ir.StringAttr(op.attributes["name"]).value
    return [dialects.llvm.mlir_addressof(ir.Type.parse("!llvm.ptr<1>"), name)]
