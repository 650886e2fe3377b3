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
  ``16 (j / 2)``. The 16-bit m16n8k8 A is the 16 x 16-byte block: A0 / A1 = words ``(g, t)`` /
  ``(g + 8, t)``, the first two of those matrices (``ldmatrix .x2``).
- ``load_b``: B0 / B1 hold K elements ``p t ..`` / ``p t + K / 2 ..`` of column ``g``. From the
  row-major (K x N) operand, 16-bit types use ``ldmatrix .x2 .trans`` (matrix ``j`` = rows
  ``k + 8 j ..``: the transpose gives lane ``l`` rows ``2t, 2t + 1`` of column ``g``; m16n8k8:
  B0 only, ``.x1 .trans``); 8-bit and
  tf32 elements cannot be transposed by ldmatrix (it moves 16-bit halves), so each word is
  gathered with ``p`` shared-memory loads.
- ``mma``: ``cute_nvgpu.mma_sync`` with the atom's shape and types.

Atoms (name: operands -> accumulator, instruction, lowest target):

| atom | A x B -> C | instruction | cc |
|---|---|---|---|
| ``mma.sm80.m16n8k16.f16.f32`` | f16 x f16 -> f32 | mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 | 80 |
| ``mma.sm80.m16n8k16.f16.f16`` | f16 x f16 -> f16 | mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 | 80 |
| ``mma.sm80.m16n8k16.bf16.f32`` | bf16 x bf16 -> f32 | mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 | 80 |
| ``mma.sm80.m16n8k8.f16.f32`` | f16 x f16 -> f32 (K a multiple of 8) | mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 | 80 |
| ``mma.sm80.m16n8k8.f16.f16`` | f16 x f16 -> f16 (K a multiple of 8) | mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 | 80 |
| ``mma.sm80.m16n8k8.bf16.f32`` | bf16 x bf16 -> f32 (K a multiple of 8) | mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 | 80 |
| ``mma.sm80.m16n8k8.tf32.f32`` | tf32 x tf32 -> f32 | mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 | 80 |
| ``mma.sm80.m16n8k32.i8.i32`` | s8 / u8 x s8 / u8 -> s32 (wrapping) | mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32 | 80 |
| ``mma.sm89.m16n8k32.f8.f32`` | e4m3 / e5m2 x e4m3 / e5m2 -> f32 | mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 | 89 |
| ``mma.sm80.m8n8k4.f64`` | f64 x f64 -> f64 (a 16 x 8 block: two instructions) | mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 | 80 |

The 16-bit m16n8k8 atoms take dots whose K is a multiple of 8 but not of 16 (a tile of TK = 8): their priority is
one under the k16 atoms', which take every K they can. They serve sm_90a and sm_100a too (no wgmma / tcgen05 atom
admits a 16-bit K of 8), as NVIDIA's tileiras does (``HMMA.1688`` on sm_80 / sm_90 / sm_100 for a 64 x 32 x 8 f16
tile): a wgmma or tcgen05 MMA (K = 16) over a K zero-padded to 16 would spend half its tensor-core work on the
padding, store the padding to shared memory every dot and wait for an asynchronous MMA per K tile of 8, where
``mma.sync`` m16n8k8 does exactly the dot's work from ``ldmatrix`` fragments and synchronously.

The f64 atom (:class:`DoubleMma`) serves every target from sm_80 on, as tileiras does (``DMMA.884`` on sm_80 /
sm_90 / sm_100 for a 64 x 64 x 32 f64 tile, where tilecore ran f64 dots on the CUDA cores): the interface's
16 x 8 block is two ``m8n8k4`` instructions, rows 0..7 and 8..15, so the accumulator keeps the m16n8 C / D
fragment order. Fragments (PTX ISA 9.7.14.5, "Matrix Fragments for mma.m8n8k4 with .f64 floating point type";
``g = lane / 4``, ``t = lane % 4``): A holds one element, row ``g``, column ``t``; B one, row ``t``, column
``g``; C / D two, row ``g``, columns ``2t``, ``2t + 1``. ldmatrix moves 16-bit halves of 8 x 16-byte rows, which
would need a transpose of 64-bit elements for B, so both operands are read with one 8-byte shared-memory load
per element (tileiras' ``LDS.64``).
"""

from __future__ import annotations

from tilecore.atoms import Atom
from tilecore.mlir import dialects, ir
from tilecore.mma import MMA_INTERFACE, element_bytes, tensor_core_admits

# atom name -> (A / B element of the request, accumulator, instruction K, PTX operand type or None
# for the integer / f8 atoms whose PTX types come from the request, minimum compute capability)
ATOMS = {
    "mma.sm80.m16n8k16.f16.f32": (("f16",), "f32", 16, 80),
    "mma.sm80.m16n8k16.f16.f16": (("f16",), "f16", 16, 80),
    "mma.sm80.m16n8k16.bf16.f32": (("bf16",), "f32", 16, 80),
    "mma.sm80.m16n8k8.f16.f32": (("f16",), "f32", 8, 80),
    "mma.sm80.m16n8k8.f16.f16": (("f16",), "f16", 8, 80),
    "mma.sm80.m16n8k8.bf16.f32": (("bf16",), "f32", 8, 80),
    "mma.sm80.m16n8k8.tf32.f32": (("tf32",), "f32", 8, 80),
    "mma.sm80.m16n8k32.i8.i32": (("i8",), "i32", 32, 80),
    "mma.sm89.m16n8k32.f8.f32": (("f8E4M3FN", "f8E5M2"), "f32", 32, 89),
}
PTX_F8 = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
PRIORITY = 10  # above the CUDA-core atom (-100)
NARROW_K_PRIORITY = PRIORITY - 1  # the 16-bit m16n8k8 atoms: under the k16 ones, which take a K of 16 in one step


def ptx_type(elem: str, signed: bool) -> str:
    """The PTX multiplicand type of a request element."""
    if elem == "i8":
        return "s8" if signed else "u8"
    return PTX_F8.get(elem, elem)


class _WarpActions:
    """The three lowering actions of a warp-level MMA atom, by name (:mod:`tilecore.mma`): ``load_a`` / ``load_b``
    (``cg``, operand, row / k, k / col) and ``mma`` (``cg``, request, A, B, C)."""

    name = ""

    def lower(self, cg, action: str, req, *args):
        if action == "load_a":
            return self.load_a(cg, *args)
        if action == "load_b":
            return self.load_b(cg, *args)
        if action == "mma":
            return self.mma(cg, req, *args)
        raise ValueError(f"atom {self.name}: unknown action '{action}'")


class WarpMma(_WarpActions):
    """One ``mma.sync`` atom: admissibility and the three lowering actions (module docstring)."""

    def __init__(self, name: str, elems: tuple[str, ...], acc: str, k: int):
        self.name, self.elems, self.acc, self.k = name, elems, acc, k
        # 16-bit m16n8k8: the A block is 16 bytes wide (two 8 x 8 matrices, A0 / A1), B one 8 x 8 matrix (B0)
        self.narrow = k == 8 and element_bytes(elems[0]) == 2

    def admits(self, req) -> bool:
        return (req.a in self.elems and req.b in self.elems and req.acc == self.acc and not req.trans_a
                and tensor_core_admits(req, (16, 8, self.k)))

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
        if self.narrow:  # .x2: lanes 0..15 address rows 0..15 of the 16-byte block (lanes 16.. repeat them)
            return self._ldmatrix(cg, smem.address(cg, cg.op("arith.addi", row, r), k), 2, False)
        c = cg.op("arith.muli", cg.op("arith.shrui", lane, cg.c32(4)), cg.c32(16 // smem.elem_bytes))
        return self._ldmatrix(cg, smem.address(cg, cg.op("arith.addi", row, r), cg.op("arith.addi", k, c)), 4, False)

    def load_b(self, cg, smem, k, col) -> list:
        lane, _ = cg.lane_and_warp()
        if smem.elem_bytes == 2:
            # lanes 0..15: rows k .. k + 15 (x2 reads those); m16n8k8: lanes 0..7, rows k .. k + 7 (x1)
            r = cg.op("arith.andi", lane, cg.c32(self.k - 1))
            return self._ldmatrix(cg, smem.address(cg, cg.op("arith.addi", k, r), col), self.k // 8, True)
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


class DoubleMma(_WarpActions):
    """``mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64`` (module docstring), twice per 16 x 8 block."""

    name = "mma.sm80.m8n8k4.f64"
    inst = (16, 8, 4)

    def admits(self, req) -> bool:
        return req.a == req.b == req.acc == "f64" and not req.trans_a and tensor_core_admits(req, self.inst)

    @staticmethod
    def _group_and_thread(cg):
        lane, _ = cg.lane_and_warp()
        return cg.op("arith.shrui", lane, cg.c32(2)), cg.op("arith.andi", lane, cg.c32(3))

    def load_a(self, cg, smem, row, k) -> list:
        """A[row + g, k + t] and A[row + 8 + g, k + t]: the A of the block's upper and lower instruction."""
        g, t = self._group_and_thread(cg)
        r, c = cg.op("arith.addi", row, g), cg.op("arith.addi", k, t)
        return [dialects.llvm.load(smem.elem, smem.address(cg, rr, c))
                for rr in (r, cg.op("arith.addi", r, cg.c32(8)))]

    def load_b(self, cg, smem, k, col) -> list:
        """B[k + t, col + g] (both instructions of a block read the same B)."""
        g, t = self._group_and_thread(cg)
        return [dialects.llvm.load(smem.elem, smem.address(cg, cg.op("arith.addi", k, t), cg.op("arith.addi", col, g)))]

    def mma(self, cg, req, a: list, b: list, c: list) -> list:
        out = []
        for half in (0, 1):  # rows 0..7: c0, c1; rows 8..15: c2, c3
            attrs = {"atom": ir.StringAttr.get(self.name), "shape": ir.DenseI32ArrayAttr.get([8, 8, 4]),
                     "a_type": ir.StringAttr.get("f64"), "b_type": ir.StringAttr.get("f64"),
                     "acc_type": ir.StringAttr.get("f64"),
                     "num_a": ir.IntegerAttr.get(cg.i32, 1), "num_b": ir.IntegerAttr.get(cg.i32, 1),
                     "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 2])}
            cs = c[2 * half:2 * half + 2]
            op = ir.Operation.create("cute_nvgpu.mma_sync", results=[v.type for v in cs],
                                     operands=[a[half], b[0], *cs], attributes=attrs)
            out += list(op.results)
        return out


def atoms() -> list[Atom]:
    out = []
    for name, (elems, acc, k, cc) in ATOMS.items():
        impl = WarpMma(name, elems, acc, k)
        shape = f"m16n8k{k}"
        out.append(Atom(name, "mma", lower=impl.lower, min_cc=cc, admits=impl.admits,
                        priority=NARROW_K_PRIORITY if impl.narrow else PRIORITY,
                        data={"interface": MMA_INTERFACE, "inst": (16, 8, k), "impl": impl},
                        description=f"mma.sync.aligned.{shape} {'/'.join(elems)} -> {acc}, ldmatrix operands"))
    f64 = DoubleMma()
    out.append(Atom(f64.name, "mma", lower=f64.lower, min_cc=80, admits=f64.admits, priority=PRIORITY,
                    data={"interface": MMA_INTERFACE, "inst": f64.inst, "impl": f64},
                    description="mma.sync.aligned.m8n8k4 f64 -> f64 (two a 16 x 8 block), ld.shared operands"))
    return out
