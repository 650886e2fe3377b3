"""The sm_80 family's warp-level MMA atoms (``mma.sync`` m16n8kK), for tileas' MMA interface.

Each atom admits a dot request (:class:`tilecore.mma.MmaRequest`: operand / accumulator
types, M / N / K, threads, shared memory) and lowers three actions by emitting ``cute_nvgpu`` ops,
which stage 5 turns into NVVM (:mod:`.mma_lowering`):

- ``load_a``: the A fragment (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32"):
  A0..A3 are the 32-bit words ``(g, t)``, ``(g + 8, t)``, ``(g, t + 4)``, ``(g + 8, t + 4)`` of the
  16 x 32-byte block (``g = lane / 4``, ``t = lane % 4``; a word holds 2 / 1 / 4 consecutive K
  elements for 16-bit / tf32 / 8-bit types). That is exactly what ``ldmatrix .x4`` (PTX ISA,
  "Warp-level matrix load instruction: ldmatrix") gives lane ``l`` from four 8 x 16-byte matrices
  whose row addresses lanes ``8j .. 8j + 7`` supply: matrix ``j`` = rows ``8 (j % 2)``, bytes
  ``16 (j / 2)``.
- ``load_b``: B0 / B1 hold K elements ``p t ..`` / ``p t + K / 2 ..`` of column ``g``. From the
  row-major (K x N) operand, 16-bit types use ``ldmatrix .x2 .trans`` (matrix ``j`` = rows
  ``k + 8 j ..``: the transpose gives lane ``l`` rows ``2t, 2t + 1`` of column ``g``); 8-bit and
  tf32 elements cannot be transposed by ldmatrix (it moves 16-bit halves), so each word is
  gathered with ``p`` shared-memory loads.
- ``mma``: ``cute_nvgpu.mma_sync`` with the atom's shape and types.

Atoms (name: operands -> accumulator, instruction, lowest target):

| atom | A x B -> C | instruction | cc |
|---|---|---|---|
| ``mma.sm80.m16n8k16.f16.f32`` | f16 x f16 -> f32 | mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 | 80 |
| ``mma.sm80.m16n8k16.f16.f16`` | f16 x f16 -> f16 | mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 | 80 |
| ``mma.sm80.m16n8k16.bf16.f32`` | bf16 x bf16 -> f32 | mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 | 80 |
| ``mma.sm80.m16n8k8.tf32.f32`` | tf32 x tf32 -> f32 | mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 | 80 |
| ``mma.sm80.m16n8k32.i8.i32`` | s8 / u8 x s8 / u8 -> s32 (wrapping) | mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32 | 80 |
| ``mma.sm89.m16n8k32.f8.f32`` | e4m3 / e5m2 x e4m3 / e5m2 -> f32 | mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 | 89 |
"""

from __future__ import annotations

from tilecore.atoms import Atom
from tilecore.mlir import dialects, ir
from tilecore.mma import MMA_INTERFACE, tensor_core_admits

# atom name -> (A / B element of the request, accumulator, instruction K, PTX operand type or None
# for the integer / f8 atoms whose PTX types come from the request, minimum compute capability)
ATOMS = {
    "mma.sm80.m16n8k16.f16.f32": (("f16",), "f32", 16, 80),
    "mma.sm80.m16n8k16.f16.f16": (("f16",), "f16", 16, 80),
    "mma.sm80.m16n8k16.bf16.f32": (("bf16",), "f32", 16, 80),
    "mma.sm80.m16n8k8.tf32.f32": (("tf32",), "f32", 8, 80),
    "mma.sm80.m16n8k32.i8.i32": (("i8",), "i32", 32, 80),
    "mma.sm89.m16n8k32.f8.f32": (("f8E4M3FN", "f8E5M2"), "f32", 32, 89),
}
PTX_F8 = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
PRIORITY = 10  # above the CUDA-core atom (-100)


def ptx_type(elem: str, signed: bool) -> str:
    """The PTX multiplicand type of a request element."""
    if elem == "i8":
        return "s8" if signed else "u8"
    return PTX_F8.get(elem, elem)


class WarpMma:
    """One ``mma.sync`` atom: admissibility and the three lowering actions (module docstring)."""

    def __init__(self, name: str, elems: tuple[str, ...], acc: str, k: int):
        self.name, self.elems, self.acc, self.k = name, elems, acc, k

    def admits(self, req) -> bool:
        return (req.a in self.elems and req.b in self.elems and req.acc == self.acc and not req.trans_a
                and tensor_core_admits(req, (16, 8, self.k)))

    def lower(self, cg, action: str, req, *args):
        if action == "load_a":
            return self.load_a(cg, *args)
        if action == "load_b":
            return self.load_b(cg, *args)
        if action == "mma":
            return self.mma(cg, req, *args)
        raise ValueError(f"atom {self.name}: unknown action '{action}'")

    # -- operands -------------------------------------------------------------------------------
    @staticmethod
    def _ldmatrix(cg, ptr, num: int, trans: bool) -> list:
        attrs = {"num": ir.IntegerAttr.get(cg.i32, num)}
        if trans:
            attrs["trans"] = ir.UnitAttr.get()
        op = ir.Operation.create("cute_nvgpu.ldmatrix", results=[cg.i32] * num, operands=[ptr], attributes=attrs)
        return list(op.results)

    def load_a(self, cg, smem, row, k) -> list:
        lane, _ = cg.lane_and_warp()
        r = cg.op("arith.addi", cg.op("arith.andi", lane, cg.c32(7)),
                  cg.op("arith.andi", lane, cg.c32(8)))  # lane % 8 + 8 * ((lane / 8) % 2)
        c = cg.op("arith.muli", cg.op("arith.shrui", lane, cg.c32(4)), cg.c32(16 // smem.elem_bytes))
        return self._ldmatrix(cg, smem.address(cg, cg.op("arith.addi", row, r), cg.op("arith.addi", k, c)), 4, False)

    def load_b(self, cg, smem, k, col) -> list:
        lane, _ = cg.lane_and_warp()
        if smem.elem_bytes == 2:
            r = cg.op("arith.andi", lane, cg.c32(15))  # lanes 0..15: rows k .. k + 15 (x2 reads those)
            return self._ldmatrix(cg, smem.address(cg, cg.op("arith.addi", k, r), col), 2, True)
        per = 4 // smem.elem_bytes
        g = cg.op("arith.shrui", lane, cg.c32(2))
        t = cg.op("arith.andi", lane, cg.c32(3))
        column = cg.op("arith.addi", col, g)
        first = cg.op("arith.addi", k, cg.op("arith.muli", t, cg.c32(per)))
        words = []
        llvm = dialects.llvm
        for half in (0, self.k // 2):
            vec = llvm.mlir_poison(ir.VectorType.get([per], smem.elem))
            for e in range(per):
                kk = cg.op("arith.addi", first, cg.c32(half + e)) if half + e else first
                x = llvm.load(smem.elem, smem.address(cg, kk, column))
                vec = llvm.insertelement(vec, x, cg.c32(e))
            words.append(llvm.bitcast(cg.i32, vec))
        return words

    # -- the instruction ------------------------------------------------------------------------
    def mma(self, cg, req, a: list, b: list, c: list) -> list:
        attrs = {
            "atom": ir.StringAttr.get(self.name),
            "shape": ir.DenseI32ArrayAttr.get([16, 8, self.k]),
            "a_type": ir.StringAttr.get(ptx_type(req.a, req.a_signed)),
            "b_type": ir.StringAttr.get(ptx_type(req.b, req.b_signed)),
            "acc_type": ir.StringAttr.get(self.acc),
            "num_a": ir.IntegerAttr.get(cg.i32, len(a)), "num_b": ir.IntegerAttr.get(cg.i32, len(b)),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(a), len(b), len(c)]),
        }
        op = ir.Operation.create("cute_nvgpu.mma_sync", results=[v.type for v in c], operands=[*a, *b, *c],
                                 attributes=attrs)
        return list(op.results)


def atoms() -> list[Atom]:
    out = []
    for name, (elems, acc, k, cc) in ATOMS.items():
        impl = WarpMma(name, elems, acc, k)
        shape = f"m16n8k{k}"
        out.append(Atom(name, "mma", lower=impl.lower, min_cc=cc, admits=impl.admits, priority=PRIORITY,
                        data={"interface": MMA_INTERFACE, "inst": (16, 8, k), "impl": impl},
                        description=f"mma.sync.aligned.{shape} {'/'.join(elems)} -> {acc}, ldmatrix operands"))
    return out
