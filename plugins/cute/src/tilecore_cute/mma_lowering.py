"""Stage 5 patterns for the tensor-core atom ops: ``cute_nvgpu.ldmatrix`` / ``mma_sync`` / ``cp_async*`` -> NVVM.

- ``cute_nvgpu.ldmatrix {num, trans}`` -> ``nvvm.ldmatrix`` m8n8 b16 (``layout = col`` is ``.trans``),
  its struct result split into i32 words.
- ``cute_nvgpu.mma_sync`` -> ``nvvm.mma_sync`` row.col with the atom's shape and multiplicand types
  (16-bit float words as ``vector<2xf16>`` for f16, i32 otherwise; an f16 accumulator packed in
  ``vector<2xf16>`` pairs). MLIR 22's ``nvvm.mma.sync`` has no e4m3 / e5m2 form, so those atoms become
  inline PTX (:data:`F8_MMA_ASM`, constraint string :data:`F8_MMA_CONSTRAINTS`).
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.mlir import dialects, ir

F8_MMA_ASM = ("mma.sync.aligned.m16n8k32.row.col.f32.{a}.{b}.f32 {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, "
              "{{$10,$11,$12,$13}};")
F8_MMA_CONSTRAINTS = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
F8_TYPES = ("e4m3", "e5m2")


def _str(op, name: str) -> str:
    return ir.StringAttr(op.attributes[name]).value


def _int(op, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


class LdmatrixPattern(Pattern):
    """``cute_nvgpu.ldmatrix`` -> ``nvvm.ldmatrix`` (``ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16``)."""

    root = "cute_nvgpu.ldmatrix"

    def rewrite(self, op, rw):
        num = _int(op, "num")
        i32 = ir.IntegerType.get_signless(32)
        with rw.ip, op.location:
            res_t = i32 if num == 1 else ir.Type.parse(f"!llvm.struct<({', '.join(['i32'] * num)})>")
            v = dialects.nvvm.ldmatrix(res_t, op.operands[0], num,
                                       ir.Attribute.parse(f"#nvvm.mma_layout<{'col' if 'trans' in op.attributes else 'row'}>"),
                                       ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                                       ir.Attribute.parse("#nvvm.ld_st_matrix_elt_type<b16>"))
            words = [v] if num == 1 else [dialects.llvm.extractvalue(i32, v, [i]) for i in range(num)]
        rw.replace(op, words)


class MmaSyncPattern(Pattern):
    """``cute_nvgpu.mma_sync`` -> ``nvvm.mma_sync`` (or inline PTX for the 8-bit float types)."""

    root = "cute_nvgpu.mma_sync"

    def rewrite(self, op, rw):
        llvm = dialects.llvm
        m, n, k = list(ir.DenseI32ArrayAttr(op.attributes["shape"]))
        a_t, b_t, acc_t = _str(op, "a_type"), _str(op, "b_type"), _str(op, "acc_type")
        na, nb = _int(op, "num_a"), _int(op, "num_b")
        ops = list(op.operands)
        a, b, c = ops[:na], ops[na:na + nb], ops[na + nb:]
        with rw.ip, op.location:
            if a_t in F8_TYPES:
                struct = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
                d = ir.Operation.create("llvm.inline_asm", results=[struct], operands=[*a, *b, *c], attributes={
                    "asm_string": ir.StringAttr.get(F8_MMA_ASM.format(a=a_t, b=b_t)),
                    "constraints": ir.StringAttr.get(F8_MMA_CONSTRAINTS),
                    "has_side_effects": ir.UnitAttr.get()}).results[0]
                rw.replace(op, [llvm.extractvalue(ir.F32Type.get(), d, [i]) for i in range(4)])
                return
            if a_t == "f16":
                h2 = ir.VectorType.get([2], ir.F16Type.get())
                a, b = [llvm.bitcast(h2, w) for w in a], [llvm.bitcast(h2, w) for w in b]
            el = c[0].type
            if acc_t == "f16":  # C / D: two registers of f16 pairs
                h2 = ir.VectorType.get([2], el)
                packed = []
                for i in (0, 2):
                    v = llvm.insertelement(llvm.mlir_poison(h2), c[i], _c32(0))
                    packed.append(llvm.insertelement(v, c[i + 1], _c32(1)))
                c, parts = packed, (h2, 2)
            else:
                parts = (el, len(c))  # 4 accumulators; m8n8k4 f64: 2
            struct = ir.Type.parse(f"!llvm.struct<({', '.join([str(parts[0])] * parts[1])})>")
            kw = {"multiplicand_a_ptx_type": ir.Attribute.parse(f"#nvvm.mma_type<{a_t}>"),
                  "multiplicand_b_ptx_type": ir.Attribute.parse(f"#nvvm.mma_type<{b_t}>")}
            if acc_t == "i32":  # cuda_tile mmai wraps: no .satfinite
                kw["int_overflow_behavior"] = ir.Attribute.parse("#nvvm.mma_int_overflow<wrapped>")
            d = dialects.nvvm.mma_sync(struct, ir.Attribute.parse(f"#nvvm.shape<m = {m}, n = {n}, k = {k}>"),
                                       ir.Attribute.parse("#nvvm.mma_layout<row>"),
                                       ir.Attribute.parse("#nvvm.mma_layout<col>"), a, b, c, **kw)
            outs = [llvm.extractvalue(parts[0], d, [i]) for i in range(parts[1])]
            if acc_t == "f16":
                outs = [llvm.extractelement(v, _c32(j)) for v in outs for j in (0, 1)]
        rw.replace(op, outs)


class CpAsyncPattern(Pattern):
    """``cute_nvgpu.cp_async`` -> ``nvvm.cp.async.shared.global ... cache = cg`` with the src-size operand."""

    root = "cute_nvgpu.cp_async"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dst, src, n = op.operands
            dialects.nvvm.cp_async_shared_global(dst, src, _int(op, "size"),
                                                 ir.Attribute.parse("#nvvm<load_cache_modifier cg>"), cp_size=n)
        rw.erase(op)


class CpAsyncCommitPattern(Pattern):
    root = "cute_nvgpu.cp_async_commit"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.cp_async_commit_group()
        rw.erase(op)


class CpAsyncWaitPattern(Pattern):
    root = "cute_nvgpu.cp_async_wait"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.cp_async_wait_group(_int(op, "n"))
        rw.erase(op)


class WgmmaPattern(Pattern):
    """``cute_nvgpu.wgmma`` -> ``nvvm.wgmma.mma_async`` (A K-major: ``layout_a = row``; B N-major:
    ``layout_b = row``, K-major with ``b_major = "k"``: ``col``) on the accumulator struct (integers wrap:
    no satfinite, as cuda_tile mmai)."""

    root = "cute_nvgpu.wgmma"

    def rewrite(self, op, rw):
        m, n, k = list(ir.DenseI32ArrayAttr(op.attributes["shape"]))
        da, db, acc = op.operands
        with rw.ip, op.location:
            d = dialects.nvvm.wgmma_mma_async(
                acc.type, acc, da, db, ir.Attribute.parse(f"#nvvm.shape<m = {m}, n = {n}, k = {k}>"),
                ir.Attribute.parse(f"#nvvm.wgmma_type<{_str(op, 'a_type')}>"),
                ir.Attribute.parse(f"#nvvm.wgmma_type<{_str(op, 'b_type')}>"),
                ir.Attribute.parse(f"#nvvm.wgmma_type<{_str(op, 'acc_type')}>"),
                ir.Attribute.parse("#nvvm.wgmma_scale_out<one>"), ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
                ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"), ir.Attribute.parse("#nvvm.mma_layout<row>"),
                ir.Attribute.parse(f"#nvvm.mma_layout<{'col' if _b_k_major(op) else 'row'}>"))
        rw.replace(op, [d])


# PTX ISA 9.7.15.5.2 "wgmma.mma_async", the form with A in registers:
#   wgmma.mma_async.sync.aligned.shape.dtype.{f16,bf16}.{f16,bf16} d, a, b-desc, scale-d, imm-scale-a, imm-scale-b,
#   imm-trans-b;
# ``a`` four .f16x2 registers (the A fragment of PTX ISA 9.7.15.5.1.1.1, Figure 148), scale-d a predicate (set from
# an i32 operand), imm-trans-b 1 for an N-major B (``layout_b = row``), 0 for K-major. MLIR 22's nvvm.wgmma.mma_async
# takes a descriptor for A only, hence inline PTX. The accumulator members are tied in / out operands.
WGMMA_RS_ASM = ("{{ .reg .pred p; setp.ne.b32 p, ${sd}, 0; wgmma.mma_async.sync.aligned.m64n{n}k{k}.{d}.{a}.{b} "
                "{{{outs}}}, {{{regs}}}, ${desc}, p, 1, 1, {trans_b}; }}")


class WgmmaRsPattern(Pattern):
    """``cute_nvgpu.wgmma_rs`` (A from registers) -> the inline PTX :data:`WGMMA_RS_ASM` on the accumulator's
    members (f32, or f16 pairs as 32-bit registers), returning the accumulator struct."""

    root = "cute_nvgpu.wgmma_rs"

    def rewrite(self, op, rw):
        llvm = dialects.llvm
        m, n, k = list(ir.DenseI32ArrayAttr(op.attributes["shape"]))
        ops = list(op.operands)
        a, desc_b, acc = ops[:-2], ops[-2], ops[-1]
        with rw.ip, op.location:
            members = llvm.StructType(acc.type).body
            words = len(members)
            c = [llvm.extractvalue(t, acc, [i]) for i, t in enumerate(members)]
            first = 2 * words  # $0.. the outputs, then the operands: the tied accumulator, A, B's descriptor, scale-d
            asm = WGMMA_RS_ASM.format(
                sd=first + len(a) + 1, n=n, k=k, d=_str(op, "acc_type"), a=_str(op, "a_type"), b=_str(op, "b_type"),
                outs=", ".join(f"${i}" for i in range(words)), regs=", ".join(f"${first + i}" for i in range(len(a))),
                desc=first + len(a), trans_b=0 if _b_k_major(op) else 1)
            # f32 members in .f32 registers, f16 pairs (vector<2xf16>) in 32-bit ones; the result is the accumulator's
            # struct itself, so a chain of mmas passes members from asm to asm (what the emulator checks before a wait)
            cons = ",".join([("=f" if str(members[0]) == "f32" else "=r")] * words + [str(i) for i in range(words)]
                            + ["r"] * len(a) + ["l", "r"])
            d = ir.Operation.create("llvm.inline_asm", results=[acc.type], operands=[*c, *a, desc_b, _c32(1)],
                                    attributes={"asm_string": ir.StringAttr.get(asm),
                                                "constraints": ir.StringAttr.get(cons),
                                                "has_side_effects": ir.UnitAttr.get()}).results[0]
        rw.replace(op, [d])


def _b_k_major(op) -> bool:
    return "b_major" in op.attributes and _str(op, "b_major") == "k"


class WgmmaSyncPattern(Pattern):
    """``cute_nvgpu.wgmma_fence`` / ``_commit`` / ``_wait {n}`` -> ``nvvm.wgmma.fence.aligned`` /
    ``commit.group.sync.aligned`` / ``wait.group.sync.aligned n``."""

    def __init__(self, which: str):
        self.which = which
        self.root = f"cute_nvgpu.wgmma_{which}"

    @property
    def name(self) -> str:
        return f"Wgmma{self.which.capitalize()}Pattern"

    def rewrite(self, op, rw):
        nvvm = dialects.nvvm
        with rw.ip, op.location:
            if self.which == "fence":
                nvvm.wgmma_fence_aligned()
            elif self.which == "commit":
                nvvm.wgmma_commit_group_sync_aligned()
            else:
                nvvm.wgmma_wait_group_sync_aligned(_int(op, "n"))
        rw.erase(op)


def _c32(v: int):
    i32 = ir.IntegerType.get_signless(32)
    return ir.Operation.create("llvm.mlir.constant", results=[i32],
                               attributes={"value": ir.IntegerAttr.get(i32, v)}).results[0]


def patterns():
    return [LdmatrixPattern(), MmaSyncPattern(), CpAsyncPattern(), CpAsyncCommitPattern(), CpAsyncWaitPattern(),
            WgmmaPattern(), WgmmaRsPattern(), *[WgmmaSyncPattern(w) for w in ("fence", "commit", "wait")]]
