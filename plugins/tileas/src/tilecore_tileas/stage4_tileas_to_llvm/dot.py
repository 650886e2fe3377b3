"""``nv_tileas.dot`` (cuda_tile mmaf / mmai): ``acc + lhs @ rhs`` on the CUDA cores, through shared memory.

Both operands are written row-major to the shared scratch buffer (``exchange.write``,
which synchronises); then every thread runs one loop over K whose iteration arguments
are its accumulator registers: for each register (row i, column j) it loads
``lhs[i, k]`` and ``rhs[k, j]``, widens them to the accumulator type and adds their
product (``llvm.intr.fma`` for floats, multiply-add for integers, with the operands'
signedness). A closing barrier lets the buffer be reused. No tensor cores yet: the MMA
atoms (mma.sync, WGMMA, tcgen05) are the next step; this path is correct for every
shape and element type the cuda_tile verifier admits.
"""

from __future__ import annotations

from tilecore.mlir import ir

from .codegen import create
from .exchange import write
from .memory import as_tile
from .values import TileV


def _shape(v) -> tuple:
    return tuple(ir.RankedTensorType(v.type).shape)


def _widen(cg, v, acc_type, signed: bool):
    if v.type == acc_type:
        return v
    if isinstance(acc_type, ir.FloatType):
        return cg.op("arith.extf", v, ty=acc_type)
    return cg.op("arith.extsi" if signed else "arith.extui", v, ty=acc_type)


def _signed(op, name: str) -> bool:
    if name not in op.attributes:
        return True
    return "unsigned" not in str(op.attributes[name])


def dot(op, rb):
    cg = rb.data["cg"]
    lhs_v, rhs_v, acc_v = op.operands
    m, k_dim = _shape(lhs_v)
    n = _shape(rhs_v)[1]
    lhs = as_tile(cg, rb.get(lhs_v), (m, k_dim))
    rhs = as_tile(cg, rb.get(rhs_v), (k_dim, n))
    acc = as_tile(cg, rb.get(acc_v), (m, n))
    acc_type = acc.regs[0].type
    a_type, b_type = lhs.regs[0].type, rhs.regs[0].type
    a_signed, b_signed = _signed(op, "signedness_lhs"), _signed(op, "signedness_rhs")
    offs = write(cg, [lhs, rhs])
    lay = acc.layout
    # (row, column) of every accumulator register; registers past the tile read element 0
    rows_cols = []
    for r in range(lay.regs):
        f = cg.flat(lay, r)
        valid = cg.valid(lay, r)
        if valid is not None:
            f = cg.select(valid, f, cg.c32(0))
        i, j = cg.coords((m, n), f)
        rows_cols.append((cg.op("arith.muli", i, cg.c32(k_dim)), j))
    zero, upper, one = cg.c32(0), cg.c32(k_dim), cg.c32(1)
    loop = create("scf.for", [acc_type] * lay.regs, [zero, upper, one, *acc.regs], regions=1)
    body = loop.regions[0].blocks.append(cg.i32, *([acc_type] * lay.regs))
    kk, *sums = body.arguments
    with ir.InsertionPoint(body):
        k_row = cg.op("arith.muli", kk, cg.c32(n))
        out = []
        for (row_base, col), s in zip(rows_cols, sums):
            a = cg.smem_load(offs[0], cg.op("arith.addi", row_base, kk), a_type)
            b = cg.smem_load(offs[1], cg.op("arith.addi", k_row, col), b_type)
            a, b = _widen(cg, a, acc_type, a_signed), _widen(cg, b, acc_type, b_signed)
            if isinstance(acc_type, ir.FloatType):
                out.append(create("llvm.intr.fma", [acc_type], [a, b, s]).results[0])
            else:
                out.append(cg.op("arith.addi", s, cg.op("arith.muli", a, b)))
        create("scf.yield", [], out)
    cg.barrier()
    return [TileV(lay, list(loop.results))]
