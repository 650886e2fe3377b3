"""The sm_90a warpgroup MMA atoms (``wgmma.mma_async`` m64nNk16), for tileas' MMA interface.

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma): a warpgroup (4 warps) computes
``D (64 x N) += A (64 x 16) @ B (16 x N)`` with A and B read from shared memory through 64-bit matrix
descriptors ("Matrix Descriptor Format": start address >> 4 in bits 0-13, leading dimension byte offset
>> 4 in 16-29, stride dimension byte offset >> 4 in 32-45, swizzle mode in 62-63: 1 = 128B, 2 = 64B,
3 = 32B). The operands are laid out as :class:`tilecore.mma.SwizzledOperand` (the canonical swizzled
layouts: A K-major, B N-major, i.e. ``layout_b = row``, which wgmma allows for 16-bit types only):

- A, K-major: start = the 64-row block's first atom + the K step's byte offset within its swizzle column
  (the swizzle applies to the absolute address, so stepping inside a column is legal); SBO = 8 rows x
  swizzle bytes; LBO unused (1).
- B, N-major: start = the K step's first 8-row atom of the warpgroup's first swizzle column; LBO = the
  distance between swizzle columns (K x swizzle bytes), SBO = 8 rows x swizzle bytes.

``wgmma.fence`` precedes the first mma of a dot (the accumulator registers were written by other
instructions), ``commit_group`` / ``wait_group 0`` end it. The accumulator layout is the warpgroup D fragment on the grid
:func:`tilecore.mma.warpgroup_grid` picks (tileas' ``WgFragment``).

| atom | A x B -> C | instruction | target |
|---|---|---|---|
| ``mma.sm90a.m64nNk16.f16.f32`` | f16 x f16 -> f32 | wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16 | sm_90a |
| ``mma.sm90a.m64nNk16.f16.f16`` | f16 x f16 -> f16 (two per register: "Register Fragments", wgmma D) | wgmma.mma_async.sync.aligned.m64nNk16.f16.f16.f16 | sm_90a |
| ``mma.sm90a.m64nNk16.bf16.f32`` | bf16 x bf16 -> f32 | wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 | sm_90a |
| ``mma.sm90a.m64nNk8.tf32.f32`` | tf32 x tf32 -> f32 | wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 | sm_90a |
| ``mma.sm90a.m64nNk32.i8.i32`` | s8 / u8 x s8 / u8 -> s32 (wrapping) | wgmma.mma_async.sync.aligned.m64nNk32.s32.{s8,u8}.{s8,u8} | sm_90a |
| ``mma.sm90a.m64nNk32.f8.f32`` | e4m3 / e5m2 x e4m3 / e5m2 -> f32 | wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2} | sm_90a |
| ``mma.sm90a.m64nNk32.f8.f16`` | e4m3 / e5m2 x e4m3 / e5m2 -> f16 | wgmma.mma_async.sync.aligned.m64nNk32.f16.{e4m3,e5m2}.{e4m3,e5m2} | sm_90a |

**A from registers** (16-bit atoms, ``data["a_registers"]``; action ``wg_mma_rs``, op ``cute_nvgpu.wgmma_rs``, inline
PTX: MLIR 22's ``nvvm.wgmma.mma_async`` takes A by descriptor only): ``wgmma.mma_async.sync.aligned.m64nNk16.<d>.f16.f16
d, {a0..a3}, b-desc, ...`` with the thread's A fragment (PTX ISA 9.7.15.5.1.1.1, Figure 148: warp w of the
warpgroup holds rows 16w..16w+15; lane l holds rows 16w + l/4 (a0, a1, a4, a5) and + 8 (a2, a3, a6, a7), columns
2 (l % 4) + (i & 1), + 8 for a4..a7). That is, per 16-column chunk, exactly the D fragment of an m64nN wgmma (Figure
149: element i of lane l at row 16w + l/4 + 8 ((i/2) % 2), column 8 (i/4) + 2 (l % 4) + i % 2; elements 8c .. 8c + 7
cover columns 16c .. 16c + 15 in a0..a7's order), so an accumulator cast to f16 / bf16 (attention's P) is the A of
the next dot without going through shared memory.

wgmma takes an N-major B for 16-bit types only: for tf32 / 8-bit types (and a 16-bit B of 8 columns, whose 16-byte
rows take no swizzle) B is stored K-major (its transpose,
``SwizzledOperand.transposed``; written from registers per dot unless it comes from a transposed view, which a pipeline copies K-major) and
read with ``layout_b = col``.

An 8-bit K of 16 (e4m3 attention tiles, for one) is laid out as 32 with elements 16 .. 31 zero
(:meth:`Wgmma.k_padded`): one m64nNk32 per 64-row block.
"""

from __future__ import annotations

from tilecore.atoms import Atom
from tilecore.mlir import dialects, ir
from tilecore.mma import MMA_INTERFACE, SwizzledOperand, element_bytes, swizzle_for, warpgroup_grid

# atom name -> (A / B elements of the request, accumulator, instruction K, B N-major)
ATOMS = {
    "mma.sm90a.m64nNk16.f16.f32": (("f16",), "f32", 16, True),
    "mma.sm90a.m64nNk16.f16.f16": (("f16",), "f16", 16, True),
    "mma.sm90a.m64nNk16.bf16.f32": (("bf16",), "f32", 16, True),
    "mma.sm90a.m64nNk8.tf32.f32": (("tf32",), "f32", 8, False),
    "mma.sm90a.m64nNk32.i8.i32": (("i8",), "i32", 32, False),
    "mma.sm90a.m64nNk32.f8.f32": (("f8E4M3FN", "f8E5M2"), "f32", 32, False),
    "mma.sm90a.m64nNk32.f8.f16": (("f8E4M3FN", "f8E5M2"), "f16", 32, False),
}
PRIORITY = 20  # above the mma.sync atoms on sm_90a
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
PTX = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2", "f32": "f32", "i32": "s32", "f16": "f16"}


def n_ok(n: int, acc: str) -> bool:
    """An instruction N wgmma has for the accumulator (multiples of 8 up to 256; s32: 8, 16, 24 and multiples of
    16). B's layout takes a swizzle either way: N-major rows of N elements where they have one, else (a 16-bit B
    of 8 columns: 16-byte rows) K-major (:meth:`Wgmma.layouts`)."""
    return not (n % 8 or not 8 <= n <= 256 or (acc == "i32" and n > 24 and n % 16))


class _InstN:
    """``data["n_ok"]``: whether this atom has an instruction of N columns (the warpgroup grid depends on it)."""

    def __init__(self, acc: str):
        self.acc = acc

    def __call__(self, n: int) -> bool:
        return n_ok(n, self.acc)


class Wgmma:
    """One wgmma atom (module docstring): admissibility, operand layouts and the lowering actions."""

    def __init__(self, name: str, elems: tuple, acc: str, k: int, n_major: bool):
        self.name, self.elems, self.acc, self.k, self.n_major = name, elems, acc, k, n_major
        self.eb = element_bytes(elems[0])
        self.n_ok = _InstN(acc)

    def grid(self, req):
        """The warpgroup grid (groups_m, groups_n) of the request's result (one column of warpgroups where
        ``req.rows_whole`` asks for it), or None."""
        return warpgroup_grid(req.m, req.n, req.threads, self.n_ok, getattr(req, "rows_whole", False))

    def admits(self, req) -> bool:
        if not (req.a in self.elems and req.b in self.elems and req.acc == self.acc and req.arch == "sm_90a"):
            return False
        kp = self.k_padded(req.k)
        if kp % self.k or req.threads % 128 or self.grid(req) is None:
            return False
        a, b = self.layouts(req)
        return swizzle_for(kp * self.eb) > 0 and a.nbytes + b.nbytes <= req.smem_budget

    def k_padded(self, k: int) -> int:
        """K as A and B are laid out: ``k``, or 32 for an 8-bit K of 16 (e4m3 / e5m2 / s8 / u8: rows of 16 bytes,
        under the narrowest swizzle, and half the instruction K, PTX ISA 9.7.15.5.1 "Matrix Shape": m64nNk32 for
        8-bit types). tileas zeros elements ``k ..`` of A and B (:func:`tilecore.mma.zero_k_padding`, every dot,
        before its barrier), so they add nothing to D; a pipelined loop does not stage such operands (its stage
        would hold the tile's K only). NVIDIA's tileiras widens such a tile to f16 and runs ``mma.sync``
        m16n8k16 (``HMMA.16816``) instead; the padded wgmma keeps the operands 8-bit in shared memory, the
        accumulator in the warpgroup fragment of the K = 32 tiles, and runs one m64nNk32 a 64-row block."""
        return 32 if self.eb == 1 and k == 16 else k

    def layouts(self, req, at: int = 0, b_major: str = "") -> tuple[SwizzledOperand, SwizzledOperand]:
        """A (M x K, K-major) at byte ``at``, B after it (N-major K x N, or K-major: its N x K transpose; ``b_major
        = "k"`` asks for K-major B from a 16-bit atom too, for a B that is K-major in memory, and a 16-bit B whose
        instruction's rows of N elements take no swizzle (N = 8: 16 bytes) is K-major too); 1024-byte aligned
        regions."""
        eb, kp = self.eb, self.k_padded(req.k)
        a = SwizzledOperand(at, req.m, kp, eb, swizzle_for(kp * eb))
        n_swizzle = swizzle_for(req.n // self.grid(req)[1] * eb)
        if self.n_major and b_major != "k" and n_swizzle:
            b = SwizzledOperand(at + a.nbytes, req.k, req.n, eb, n_swizzle)
        else:
            b = SwizzledOperand(at + a.nbytes, req.n, kp, eb, swizzle_for(kp * eb), transposed=True)
        return a, b

    def lower(self, cg, action: str, req, *args):
        if action == "layouts":
            return self.layouts(req, *args)
        if action in ("fence", "commit"):
            ir.Operation.create(f"cute_nvgpu.wgmma_{action}")
            return []
        if action == "wait":
            ir.Operation.create("cute_nvgpu.wgmma_wait", attributes={"n": ir.IntegerAttr.get(cg.i32, int(args[0]))})
            return []
        if action == "wg_mma":
            return self.mma(cg, req, *args)
        if action == "wg_mma_rs":
            return self.mma_rs(cg, req, *args)
        if action == "pack":  # accumulator scalars -> the struct the mma chain carries
            llvm = dialects.llvm
            regs = args[0]
            if self.acc == "f16":  # two f16 elements per register (consecutive elements of the fragment)
                v2 = ir.Type.parse("vector<2xf16>")
                pairs = []
                for j in range(0, len(regs), 2):
                    v = llvm.mlir_poison(v2)
                    for e in range(2):
                        v = llvm.insertelement(v, regs[j + e], cg.c32(e))
                    pairs.append(v)
                regs = pairs
            acc = llvm.mlir_poison(ir.Type.parse(f"!llvm.struct<({', '.join([str(regs[0].type)] * len(regs))})>"))
            for i, v in enumerate(regs):
                acc = llvm.insertvalue(acc, v, [i])
            return acc
        if action == "unpack":  # after the wait: the struct's members
            llvm = dialects.llvm
            acc = args[0]
            members = [llvm.extractvalue(t, acc, [i]) for i, t in enumerate(llvm.StructType(acc.type).body)]
            if self.acc == "f16":
                return [llvm.extractelement(m, cg.c32(e)) for m in members for e in range(2)]
            return members
        raise ValueError(f"atom {self.name}: unknown action '{action}'")

    @staticmethod
    def _descriptor(cg, byte_offset, lbo: int, sbo: int, swizzle: int):
        """The i64 matrix descriptor of the operand starting ``byte_offset`` (i32) into the scratch buffer."""
        llvm = dialects.llvm
        i64 = cg.i64
        p = llvm.getelementptr(ir.Type.parse("!llvm.ptr<3>"), cg.smem_base, [byte_offset], [-2147483648], cg.i8, 0)
        addr = llvm.ptrtoint(i64, p)
        start = cg.op("arith.andi", cg.op("arith.shrui", addr, cg.const(i64, 4)), cg.const(i64, 0x3FFF))
        fixed = ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | SWIZZLE_MODE[swizzle] << 62
        fixed = fixed - (1 << 64) if fixed >= 1 << 63 else fixed
        return cg.op("arith.ori", start, cg.const(i64, fixed))

    def mma(self, cg, req, a: SwizzledOperand, b: SwizzledOperand, row, col, k0: int, inst_n: int, c):
        """One m64nNkK for rows ``row`` .. + 64 and columns ``col`` .. + ``inst_n`` (i32 values) at K step
        ``k0`` (int) on the accumulator struct ``c`` (``pack``); returns D's struct."""
        kb = k0 * a.elem_bytes
        da = self._descriptor(cg, _k_major_start(cg, a, row, kb), 16, 8 * a.swizzle, a.swizzle)
        return ir.Operation.create("cute_nvgpu.wgmma", results=[c.type], operands=[da, self._b_descriptor(
            cg, b, col, k0), c], attributes=self._attrs(req, b, inst_n)).results[0]

    def _b_descriptor(self, cg, b: SwizzledOperand, col, k0: int):
        """B's descriptor for the columns from ``col`` (i32) at K step ``k0``."""
        if b.transposed:  # K-major B
            return self._descriptor(cg, _k_major_start(cg, b, col, k0 * b.elem_bytes), 16, 8 * b.swizzle, b.swizzle)
        b_col = cg.op("arith.divui", cg.op("arith.muli", col, cg.c32(b.elem_bytes)), cg.c32(b.swizzle))
        b_start = cg.op("arith.addi", cg.op("arith.muli", b_col, cg.c32(b.rows * b.swizzle)),
                        cg.op("arith.addi", b.base(cg), cg.c32((k0 // 8) * 8 * b.swizzle)))
        return self._descriptor(cg, b_start, b.rows * b.swizzle, 8 * b.swizzle, b.swizzle)

    def _attrs(self, req, b: SwizzledOperand, inst_n: int) -> dict:
        from .mma_sm80 import ptx_type

        return {"shape": ir.DenseI32ArrayAttr.get([64, inst_n, self.k]),
                "a_type": ir.StringAttr.get(ptx_type(req.a, req.a_signed)),
                "b_type": ir.StringAttr.get(ptx_type(req.b, req.b_signed)),
                "acc_type": ir.StringAttr.get(PTX[self.acc]), "b_major": ir.StringAttr.get("k" if b.transposed else "n")}

    def a_words(self, cg, regs: list) -> list:
        """The A register fragment of one m64nNk16 (PTX ISA 9.7.15.5.1.1.1, Figure 148 "WGMMA .m64nNk16 register
        fragment layout for matrix A": four .f16x2 registers a0..a7, low half first) from the thread's 8 f16 /
        bf16 elements a0..a7, packed two to a 32-bit word."""
        llvm = dialects.llvm
        v2 = ir.VectorType.get([2], regs[0].type)
        words = []
        for j in range(0, 8, 2):
            v = llvm.mlir_poison(v2)
            for e in range(2):
                v = llvm.insertelement(v, regs[j + e], cg.c32(e))
            words.append(llvm.bitcast(cg.i32, v))
        return words

    def mma_rs(self, cg, req, a_regs: list, b: SwizzledOperand, col, k0: int, inst_n: int, c):
        """One m64nNk16 with A from registers (``a_regs``: this thread's 8 elements of the 64 x 16 A block, in
        the order of Figure 148; 16-bit atoms only) and B from shared memory, as :meth:`mma`."""
        return ir.Operation.create("cute_nvgpu.wgmma_rs", results=[c.type], operands=[
            *self.a_words(cg, a_regs), self._b_descriptor(cg, b, col, k0), c],
            attributes=self._attrs(req, b, inst_n)).results[0]


def _k_major_start(cg, op: SwizzledOperand, first, kb: int):
    """The byte offset of a K-major operand's 64 (A) / N (B) rows from ``first`` (i32) at the K step's byte
    offset ``kb`` (the swizzle applies to the absolute address, so a start inside a swizzle column is legal)."""
    return cg.op("arith.addi", cg.op("arith.muli", first, cg.c32(op.swizzle)), cg.op(
        "arith.addi", op.base(cg), cg.c32((kb // op.swizzle) * op.rows * op.swizzle + kb % op.swizzle)))


def atoms() -> list[Atom]:
    out = []
    for name, (elems, acc, k, n_major) in ATOMS.items():
        impl = Wgmma(name, elems, acc, k, n_major)
        out.append(Atom(name, "mma", lower=impl.lower, min_cc=90, max_cc=90, admits=impl.admits, priority=PRIORITY,
                        data={"interface": MMA_INTERFACE, "inst": (64, 0, k), "fragment": "wgmma",
                              "n_ok": impl.n_ok, "impl": impl, "a_registers": impl.eb == 2},
                        description=f"wgmma.mma_async m64nNk{k} {'/'.join(elems)} -> {acc}, swizzled descriptors"))
    return out
