"""Stage 5 (``convert-cute-to-llvm``) patterns of the sm100 plugin: tcgen05 fences and the ``sm100`` dialect's
tensor-memory MMA ops (:mod:`.dialect`) -> NVVM.

On sm_100a / sm_101a (the targets MLIR 22's nvvm verifier accepts tcgen05 ops on) they become the nvvm ops:

| source | nvvm | PTX |
|---|---|---|
| ``cute_nvgpu.tcgen05_fence_{before,after}_thread_sync`` | ``nvvm.tcgen05.fence <before/after>`` | ``tcgen05.fence::{before,after}_thread_sync`` |
| ``sm100.tmem_alloc %slot {ncols}`` | ``nvvm.tcgen05.alloc %slot, %ncols`` | ``tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32`` |
| ``sm100.tmem_dealloc %t {ncols}`` | ``nvvm.tcgen05.dealloc %t, %ncols`` | ``tcgen05.dealloc.cta_group::1.sync.aligned.b32`` |
| ``sm100.tmem_relinquish`` | ``nvvm.tcgen05.relinquish_alloc_permit`` | ``tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned`` |
| ``sm100.umma %d, %a, %b, %idesc, %en {kind}`` | ``nvvm.tcgen05.mma`` (cta_1, smem descriptors) | ``tcgen05.mma.cta_group::1.kind::<kind> [d], adesc, bdesc, idesc, p`` |
| ``sm100.umma_bs %d, %a, %b, %idesc, %en, %sfa, %sfb {kind[, block]}`` | ``nvvm.tcgen05.mma.block_scale`` (cta_1, ``blockScale`` = block) | ``tcgen05.mma.cta_group::1.kind::<kind>.block_scale[.scale_vec::4X / 2X] [d], adesc, bdesc, idesc, [sfa], [sfb], p`` |
| ``sm100.tmem_cp %t, %desc`` | ``nvvm.tcgen05.cp`` shape_32x128b, warpx4 | ``tcgen05.cp.cta_group::1.32x128b.warpx4 [t], desc`` |
| ``sm100.umma_commit %mbar`` | ``nvvm.tcgen05.commit %mbar`` | ``tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64`` |
| ``sm100.tmem_load %t {num}`` | ``nvvm.tcgen05.ld`` shape_32x32b -> ``vector<num x i32>`` | ``tcgen05.ld.sync.aligned.32x32b.x<num>.b32`` |
| ``sm100.tmem_store %t, %v`` | ``nvvm.tcgen05.st`` shape_32x32b | ``tcgen05.st.sync.aligned.32x32b.x<num>.b32`` |
| ``sm100.cluster_sync`` | ``nvvm.cluster.arrive`` + ``nvvm.cluster.wait`` (aligned) | ``barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned`` |
| ``sm100.tmem_wait {kind}`` | ``nvvm.tcgen05.wait <load/store>`` | ``tcgen05.wait::{ld,st}.sync.aligned`` |
| ``sm100.mbarrier_init %mbar`` | ``nvvm.mbarrier.init %mbar, 1`` + ``nvvm.fence.mbarrier.init`` | ``mbarrier.init.shared.b64``; ``fence.mbarrier_init.release.cluster`` |
| ``sm100.mbarrier_wait %mbar, %parity`` | ``nvvm.mbarrier.try_wait.parity`` | ``mbarrier.try_wait.parity.shared.b64`` (a loop) |

TMEM addresses (i32 in the ``sm100`` ops) become ``!llvm.ptr<6>`` by ``llvm.inttoptr``.

**CTA pairs** (``cta_group = 2 : i32`` on ``tmem_alloc`` / ``tmem_dealloc`` / ``tmem_relinquish`` / ``umma`` /
``umma_commit``, the kernels :mod:`.mma_sm100` pairs; PTX ISA 9.7.16.2 "CTA pair" and the ``.cta_group``
qualifier of 9.7.16.7.1 / 9.7.16.10.9 / 9.7.16.11.1): the same ops with ``group`` / ``ctaGroup`` =
``#nvvm.cta_group<cta_2>`` (``.cta_group::2``); ``umma_commit``'s ``multicast = <mask> : i32`` adds the
``multicast_mask`` operand (i16: ``.multicast::cluster``, one arrival on the mbarrier at the same shared offset in
every CTA of the mask). ptxas refuses ``.cta_group::1`` and ``::2`` in one kernel, so a kernel has one or the other
throughout. ``sm100.cluster_sync`` -> ``nvvm.cluster.arrive {aligned}`` + ``nvvm.cluster.wait {aligned}``
(``barrier.cluster.arrive.aligned`` / ``wait.aligned``, PTX ISA 9.7.13.2 ``barrier.cluster``: the default
semantics are release / acquire, so the shared-memory writes of every thread of the cluster before the
arrive are visible to every thread after the wait).

On sm_103a (tcgen05 hardware, but rejected by MLIR 22's nvvm verifier) the tcgen05 ops become the same PTX
instructions as ``llvm.inline_asm`` (shared addresses as 32-bit ``r`` operands, :data:`ASM`); the mbarrier ops
stay nvvm. Any other target gets a located error naming the targets.
"""

from tilecore.conversion import Pattern
from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

# Targets whose NVVM dialect accepts tcgen05 (MLIR 22's nvvm verifier: sm_100a / sm_101a only).
TCGEN05_TARGETS = ("sm_100a", "sm_101a")
ASM_TARGETS = ("sm_103a",)  # tcgen05 through inline PTX
ALL_TARGETS = TCGEN05_TARGETS + ASM_TARGETS

# source op -> #nvvm.tcgen05_fence kind
FENCES = {
    "cute_nvgpu.tcgen05_fence_before_thread_sync": "before",
    "cute_nvgpu.tcgen05_fence_after_thread_sync": "after",
}

# inline PTX of the tcgen05 instructions (sm_103a)
ASM = {
    "fence": "tcgen05.fence::{kind}_thread_sync;",
    "alloc": "tcgen05.alloc.cta_group::{g}.sync.aligned.shared::cta.b32 [$0], $1;",
    "dealloc": "tcgen05.dealloc.cta_group::{g}.sync.aligned.b32 $0, $1;",
    "relinquish": "tcgen05.relinquish_alloc_permit.cta_group::{g}.sync.aligned;",
    "mma": "{{\n.reg .pred p;\nsetp.ne.b32 p, $4, 0;\ntcgen05.mma.cta_group::{g}.kind::{kind} [$0], $1, $2, $3, p;\n}}",
    "mma_bs": "{{\n.reg .pred p;\nsetp.ne.b32 p, $4, 0;\ntcgen05.mma.cta_group::1.kind::{kind}.block_scale{vec} [$0], $1, $2, $3, "
              "[$5], [$6], p;\n}}",
    "cp": "tcgen05.cp.cta_group::1.32x128b.warpx4 [$0], $1;",
    "commit": "tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.b64 [$0];",
    # one arrival on the mbarrier at offset $0 of every CTA in mask $1 (PTX ISA 9.7.16.11.1)
    "commit_mc": "tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [$0], $1;",
    "ld": "tcgen05.ld.sync.aligned.32x32b.x{num}.b32 {{{regs}}}, [${addr}];",
    "st": "tcgen05.st.sync.aligned.32x32b.x{num}.b32 [$0], {{{regs}}};",
    "wait": "tcgen05.wait::{kind}.sync.aligned;",
}


def _i32():
    return ir.IntegerType.get_signless(32)


def _c32(v: int):
    return dialects.llvm.ConstantOp(_i32(), ir.IntegerAttr.get(_i32(), v)).result


def _int(op, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _str(op, name: str) -> str:
    return ir.StringAttr(op.attributes[name]).value


def group(op) -> int:
    """The op's ``.cta_group`` (its ``cta_group`` attribute; 1 without one)."""
    return _int(op, "cta_group") if "cta_group" in op.attributes else 1


def _group_attr(op):
    return ir.Attribute.parse(f"#nvvm.cta_group<cta_{group(op)}>")


def _asm(text: str, operands, constraints: str, results=()):
    return ir.Operation.create("llvm.inline_asm", results=list(results), operands=list(operands), attributes={
        "asm_string": ir.StringAttr.get(text), "constraints": ir.StringAttr.get(constraints),
        "has_side_effects": ir.UnitAttr.get()})


def _tmem(v):
    return dialects.llvm.inttoptr(ir.Type.parse("!llvm.ptr<6>"), v)


def _shared32(p):
    """A shared pointer as the 32-bit shared-window address inline PTX takes."""
    return dialects.llvm.ptrtoint(_i32(), p)


class _Tcgen05Pattern(Pattern):
    """Checks the target; ``nvvm(op)`` / ``asm(op)`` build the replacement at the op."""

    def rewrite(self, op, rw):
        name = rw.target.name if rw.target is not None else None
        if name not in ALL_TARGETS:
            raise LoweringError(f"'{op.name}' needs one of {', '.join(ALL_TARGETS)} (tcgen05); target is "
                                f"{name or 'unknown'}", op)
        with rw.ip, op.location:
            new = self.nvvm(op) if name in TCGEN05_TARGETS else self.asm(op)
        if new:
            rw.replace(op, new)
        else:
            rw.erase(op)


class Tcgen05FencePattern(_Tcgen05Pattern):
    """``cute_nvgpu.tcgen05_fence_<kind>_thread_sync`` -> ``nvvm.tcgen05.fence #nvvm.tcgen05_fence<kind>``."""

    def __init__(self, root: str):
        self.root = root
        self.kind = FENCES[root]

    @property
    def name(self):
        return f"Tcgen05Fence[{self.kind}]"

    def nvvm(self, op):
        ir.Operation.create("nvvm.tcgen05.fence",
                            attributes={"kind": ir.Attribute.parse(f"#nvvm.tcgen05_fence<{self.kind}>")})

    def asm(self, op):
        _asm(ASM["fence"].format(kind=self.kind), [], "")


class AllocPattern(_Tcgen05Pattern):
    root = "sm100.tmem_alloc"

    def nvvm(self, op):
        dialects.nvvm.Tcgen05AllocOp(op.operands[0], _c32(_int(op, "ncols")), group=_group_attr(op))

    def asm(self, op):
        _asm(ASM["alloc"].format(g=group(op)), [_shared32(op.operands[0]), _c32(_int(op, "ncols"))], "r,r")


class DeallocPattern(_Tcgen05Pattern):
    root = "sm100.tmem_dealloc"

    def nvvm(self, op):
        dialects.nvvm.Tcgen05DeallocOp(_tmem(op.operands[0]), _c32(_int(op, "ncols")), group=_group_attr(op))

    def asm(self, op):
        _asm(ASM["dealloc"].format(g=group(op)), [op.operands[0], _c32(_int(op, "ncols"))], "r,r")


class RelinquishPattern(_Tcgen05Pattern):
    root = "sm100.tmem_relinquish"

    def nvvm(self, op):
        dialects.nvvm.Tcgen05RelinquishAllocPermitOp(group=_group_attr(op))

    def asm(self, op):
        _asm(ASM["relinquish"].format(g=group(op)), [], "")


class ClusterSyncPattern(_Tcgen05Pattern):
    """``sm100.cluster_sync`` -> ``barrier.cluster.arrive.aligned`` + ``barrier.cluster.wait.aligned`` (PTX ISA
    9.7.13.2: release / acquire by default; every thread of every CTA of the cluster takes part). The nvvm ops
    are not tcgen05 ones, so sm_103a takes them too."""

    root = "sm100.cluster_sync"

    def nvvm(self, op):
        aligned = ir.UnitAttr.get()
        ir.Operation.create("nvvm.cluster.arrive", attributes={"aligned": aligned})
        ir.Operation.create("nvvm.cluster.wait", attributes={"aligned": aligned})

    asm = nvvm


class UmmaPattern(_Tcgen05Pattern):
    root = "sm100.umma"

    def nvvm(self, op):
        d, a, b, idesc, en = op.operands
        dialects.nvvm.Tcgen05MMAOp(ir.Attribute.parse(f"#nvvm.tcgen05_mma_kind<{_str(op, 'kind')}>"),
                                   _group_attr(op), _tmem(d), a, b, idesc, en)

    def asm(self, op):
        d, a, b, idesc, en = op.operands
        _asm(ASM["mma"].format(kind=_str(op, "kind"), g=group(op)), [d, a, b, idesc, dialects.llvm.zext(_i32(), en)],
             "r,l,l,r,r")


class UmmaBlockScalePattern(_Tcgen05Pattern):
    """``sm100.umma_bs`` -> ``nvvm.tcgen05.mma.block_scale`` (inline PTX on sm_103a)."""

    root = "sm100.umma_bs"

    def nvvm(self, op):
        d, a, b, idesc, en, sfa, sfb = op.operands
        block = {"blockScale": ir.Attribute.parse(f"#nvvm.tcgen05_mma_block_scale<{_str(op, 'block')}>")} \
            if "block" in op.attributes else {}
        dialects.nvvm.Tcgen05MMABlockScaleOp(ir.Attribute.parse(f"#nvvm.block_scale_kind<{_str(op, 'kind')}>"),
                                             ir.Attribute.parse("#nvvm.cta_group<cta_1>"), _tmem(d), a, b, idesc,
                                             en, _tmem(sfa), _tmem(sfb), **block)

    def asm(self, op):
        d, a, b, idesc, en, sfa, sfb = op.operands
        # block16 / block32 as .scale_vec::4X / 2X (PTX ISA 9.7.16.10.9, tcgen05.mma: .block16 is .scale_vec::4X)
        vec = {"block16": ".scale_vec::4X", "block32": ".scale_vec::2X"}.get(_str(op, "block"), "") \
            if "block" in op.attributes else ""
        _asm(ASM["mma_bs"].format(kind=_str(op, "kind"), vec=vec), [d, a, b, idesc, dialects.llvm.zext(_i32(), en),
                                                                   sfa, sfb], "r,l,l,r,r,r,r")


class CpPattern(_Tcgen05Pattern):
    """``sm100.tmem_cp`` -> ``nvvm.tcgen05.cp`` shape 32x128b, multicast warpx4."""

    root = "sm100.tmem_cp"

    def nvvm(self, op):
        dialects.nvvm.Tcgen05CpOp(ir.Attribute.parse("#nvvm.tcgen05_cp_shape<shape_32x128b>"), _tmem(op.operands[0]),
                                  op.operands[1], multicast=ir.Attribute.parse("#nvvm.tcgen05_cp_multicast<warpx4>"))

    def asm(self, op):
        _asm(ASM["cp"], list(op.operands), "r,l")


class CommitPattern(_Tcgen05Pattern):
    """``sm100.umma_commit %mbar [{cta_group = 2, multicast = mask}]`` -> ``nvvm.tcgen05.commit`` (with the i16
    ``multicast_mask`` operand when ``multicast`` is given)."""

    root = "sm100.umma_commit"

    @staticmethod
    def _mask(op):
        if "multicast" not in op.attributes:
            return None
        i16 = ir.IntegerType.get_signless(16)
        return dialects.llvm.ConstantOp(i16, ir.IntegerAttr.get(i16, _int(op, "multicast"))).result

    def nvvm(self, op):
        dialects.nvvm.Tcgen05CommitOp(op.operands[0], multicastMask=self._mask(op), group=_group_attr(op))

    def asm(self, op):
        mask = self._mask(op)
        if mask is None:
            _asm(ASM["commit"].format(g=group(op)), [_shared32(op.operands[0])], "r")
        else:
            _asm(ASM["commit_mc"].format(g=group(op)), [_shared32(op.operands[0]), mask], "r,h")


class LoadPattern(_Tcgen05Pattern):
    root = "sm100.tmem_load"

    def nvvm(self, op):
        return [dialects.nvvm.Tcgen05LdOp(op.results[0].type,
                                          ir.Attribute.parse("#nvvm.tcgen05_ldst_shape<shape_32x32b>"),
                                          _tmem(op.operands[0])).result]

    def asm(self, op):
        num = _int(op, "num")
        llvm = dialects.llvm
        struct = ir.Type.parse(f"!llvm.struct<({', '.join(['i32'] * num)})>")
        text = ASM["ld"].format(num=num, regs=", ".join(f"${i}" for i in range(num)), addr=num)
        s = _asm(text, [op.operands[0]], ",".join(["=r"] * num + ["r"]), [struct]).results[0]
        vt = op.results[0].type
        v = llvm.mlir_poison(vt)
        for i in range(num):
            v = llvm.insertelement(v, llvm.extractvalue(_i32(), s, [i]), _c32(i))
        return [v]


class StorePattern(_Tcgen05Pattern):
    root = "sm100.tmem_store"

    def nvvm(self, op):
        dialects.nvvm.Tcgen05StOp(ir.Attribute.parse("#nvvm.tcgen05_ldst_shape<shape_32x32b>"),
                                  _tmem(op.operands[0]), op.operands[1])

    def asm(self, op):
        v = op.operands[1]
        num = ir.VectorType(v.type).shape[0]
        words = [dialects.llvm.extractelement(v, _c32(i)) for i in range(num)]
        text = ASM["st"].format(num=num, regs=", ".join(f"${i + 1}" for i in range(num)))
        _asm(text, [op.operands[0], *words], ",".join(["r"] * (num + 1)))


class WaitPattern(_Tcgen05Pattern):
    root = "sm100.tmem_wait"

    def nvvm(self, op):
        dialects.nvvm.Tcgen05WaitOp(ir.Attribute.parse(f"#nvvm.tcgen05_wait<{_str(op, 'kind')}>"))

    def asm(self, op):
        _asm(ASM["wait"].format(kind={"load": "ld", "store": "st"}[_str(op, "kind")]), [], "")


def patterns():
    return [*[Tcgen05FencePattern(r) for r in FENCES], AllocPattern(), DeallocPattern(), RelinquishPattern(),
            ClusterSyncPattern(),
            UmmaPattern(), UmmaBlockScalePattern(), CpPattern(), CommitPattern(), LoadPattern(), StorePattern(),
            WaitPattern()]
