"""What the emulator does with each GPU-specific op or call of a lowered kernel: tables.

- :data:`SREGS`: ``nvvm.read.ptx.sreg.<name>`` -> context slot, constant or computed value;
- :data:`NVVM_OPS`: nvvm op name -> rewrite (a call of an emulator runtime symbol or a
  host fence) and whether it is *collective* (the CTA's threads then run concurrently);
- :data:`CALLS`: external functions the kernel calls (``vprintf``, ``__assertfail``);
  libdevice ``__nv_*`` functions are in :mod:`.libdevice`;
- :data:`MEMORY_OPS` / :data:`BULK_MEMORY_OPS`: the llvm ops that touch memory, checked with
  :mod:`.memcheck` when bounds checks are on;
- :data:`INT_DIVISIONS`: llvm integer divisions, which must not trap on the host;
- :data:`SHIFTS`: llvm shifts by a run-time amount, clamped as PTX's ``shl`` / ``shr`` (masked on the host);
- :data:`FLOAT_TO_INT`: llvm float -> integer conversions, saturating as PTX's ``cvt`` (undefined on the host);
- :data:`INLINE_ASM`: the inline PTX strings (``llvm.inline_asm``) the emulator recognises (regex,
  exact constraints, operand and result types -> rewrite); any other inline asm fails with its text.

Adding an op is one row here plus its semantics (:mod:`.warp` for warp collectives,
:mod:`.runtime` for the rest). An nvvm op, intrinsic or external call in no table
fails with its name. A row for an op that touches memory itself checks each address first when
``rw.check_bounds``: with ``rw.check_access`` / ``rw.check_range``, or, where only some lanes' addresses
or some bytes are used, with a call of the address space's check routine inside its helper
(:func:`_check_call`): ``nvvm.ldmatrix`` checks the 16-byte rows of the lanes whose addresses the
instruction uses, ``nvvm.cp.async.shared.global`` its destination and the source bytes it reads.
Emulated tensor-core / async-copy forms (PTX ISA sections cited at each row):

- ``nvvm.ldmatrix`` m8n8 b16, x1 / x2 / x4, row or col (``.trans``): a warp collective;
- ``nvvm.cp.async.shared.global`` (4 / 8 / 16 bytes, ca / cg, optional src-size), ``nvvm.cp.async.commit.group``,
  ``nvvm.cp.async.wait.group N``: per thread, the copies land late (when a wait retires their group, or
  at the thread's exit; :data:`CP_ASYNC_ISSUE`);
- ``nvvm.mma.sync`` row.col m16n8k16 / m16n8k8 f16 / bf16 -> f32, f16 -> f16, m16n8k8 tf32 -> f32,
  m16n8k32 s8 / u8 -> s32, m8n8k4 f64 -> f64; m16n8k32 e4m3 / e5m2 -> f32 only as inline PTX
  (:data:`INLINE_ASM`);
- mbarrier (sm_90 forms of MLIR 22: ``nvvm.mbarrier.init`` / ``arrive`` / ``arrive_drop`` / ``.nocomplete`` /
  ``arrive.expect_tx`` / ``expect_tx`` / ``complete_tx`` / ``test.wait`` / ``try_wait`` / ``try_wait.parity`` /
  ``inval``, ``nvvm.cp.async.mbarrier.arrive``, ``nvvm.fence.mbarrier.init``; try_wait.parity also as the
  inline PTX of convert-nvvm-to-llvm): objects in the runtime, blocking waits in deadlock detection;
- ``nvvm.setmaxregister`` (warp specialisation's register reallocation): no effect on values;
- wgmma (sm_90a): ``nvvm.wgmma.fence.aligned``, ``nvvm.wgmma.commit.group.sync.aligned``,
  ``nvvm.wgmma.wait.group.sync.aligned N``, ``nvvm.wgmma.mma_async`` m64nNk16 f16 / bf16 -> f32 (f16 -> f16),
  m64nNk8 tf32 -> f32, m64nNk32 e4m3 / e5m2 -> f32 / f16, s8 / u8 -> s32 (satfinite), K- or MN-major (16-bit
  types), all four swizzle modes (:mod:`.hopper`); also as the inline PTX of convert-nvvm-to-llvm; m64nNk16 f16 / bf16
  with A from registers (inline PTX ``d, {a0..a3}, b-desc``: :func:`_asm_wgmma_rs`);
- ``nvvm.cp.async.bulk.tensor.shared.cluster.global`` tile mode, 1-5-D, completing on an mbarrier, with the
  emulator's tensor maps (:mod:`.tensormap`); the predicated form also as convert-nvvm-to-llvm's inline PTX;
- clusters (``nvvm.cluster_dim``): the cluster special registers (:data:`CLUSTER_SREGS`), ``nvvm.cluster.arrive``
  / ``arrive.relaxed`` / ``wait`` (barrier.cluster), ``nvvm.mapa`` and shared::cluster (``addrspace(7)``) or generic
  accesses to any CTA's shared memory of the cluster, mbarrier arrives on a peer CTA's mbarrier, TMA loads with
  ``multicast_mask`` (.multicast::cluster) and ``.cta_group::2``;
- the TMA store ``nvvm.cp.async.bulk.tensor.global.shared.cta`` (tile mode, 1-5-D, clipped to the tensor) in
  bulk async-groups: ``nvvm.cp.async.bulk.commit.group``, ``nvvm.cp.async.bulk.wait_group N [read]``;

Plugins add rows (hook ``tilecore_register_emulator_ops``): each returns :class:`EmulatorOps` objects with
``rows`` (nvvm op name -> :class:`OpRow`, looked up by :func:`row` after the core's :data:`NVVM_OPS`, which a
plugin cannot override), the runtime ``symbols`` those rows call (:class:`RuntimeSymbol`: MLIR signature,
ctypes prototype and the Python handler ``handler(rt, ctx, *args)`` run with the launch's
:class:`.runtime.DeviceRuntime`), and per-CTA state (``new_cta(rt)``, reached with ``rt.ext_state(ext)``;
``cta_end(rt, ctx, state)`` when the CTA's last thread exits, e.g. to report leaks with ``rt.fail_at``). A
handler holds ``rt.lock`` while it touches state; it may defer work until a thread waits on an mbarrier
(``rt.defer_until_wait``, as the bulk tensor copies land; ``rt.arrive_on`` arrives for it), and block threads
until a collective is complete (``rt.wait_for`` / ``rt.release`` with a :class:`.runtime.WaitToken`, counted
by deadlock detection; ``rt.warp_members`` tells how many threads of a warp are still running). A blocked plugin (``TILECORE_DISABLED_PLUGINS``) contributes nothing: its ops fail with their name.
The ``sm100`` plugin adds Blackwell's tensor memory and tcgen05 ops this way.

Not emulated: ``stmatrix``, the other cp.async.bulk forms (non-tensor copies, prefetch, reduce, im2col,
a predicated TMA store), wgmma with A from registers other than f16 / bf16, sparse wgmma, b1 wgmma, descriptors with a non-zero base offset,
tensor maps with elementStrides other than 1 or interleave, ``getctarank`` (no MLIR 22 nvvm op).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..errors import TilecoreError, format_location
from ..mlir import ir
from . import context as C
from . import memcheck, prelude
from .libcalls import F8_FORMATS
from .memcheck import ATOMIC, LOAD, STORE
from .runtime import MBAR_OPS
from .warp import WARP_NAMES, opcode


# ---------------------------------------------------------------- special registers
def _field(i: int) -> str:
    return f"%p = llvm.getelementptr %ctx[{i}] : (!llvm.ptr) -> !llvm.ptr, i32\n%r = llvm.load %p : !llvm.ptr -> i32"


def _const(v: int) -> str:
    return f"%r = llvm.mlir.constant({v} : i32) : i32"


def _lanemask(expr: str) -> str:
    # expr over %one (1), %l (laneid); %r is the result
    return _field(C.LANEID).replace("%r", "%l") + "\n%one = llvm.mlir.constant(1 : i32) : i32\n" \
        "%two = llvm.mlir.constant(2 : i32) : i32\n%m1 = llvm.mlir.constant(-1 : i32) : i32\n" + expr


_CLOCK = "%r = llvm.call @__emu_clock(%ctx) : (!llvm.ptr) -> i64"

SREGS: dict[str, str] = {
    **{f"tid.{a}": _field(C.TID + i) for i, a in enumerate("xyz")},
    **{f"ntid.{a}": _field(C.NTID + i) for i, a in enumerate("xyz")},
    **{f"ctaid.{a}": _field(C.CTAID + i) for i, a in enumerate("xyz")},
    **{f"nctaid.{a}": _field(C.NCTAID + i) for i, a in enumerate("xyz")},
    # one CTA per cluster: the cluster grid is the CTA grid, the CTA is rank 0 of its cluster
    **{f"clusterid.{a}": _field(C.CTAID + i) for i, a in enumerate("xyz")},
    **{f"nclusterid.{a}": _field(C.NCTAID + i) for i, a in enumerate("xyz")},
    **{f"cluster.ctaid.{a}": _const(0) for a in "xyz"},
    **{f"cluster.nctaid.{a}": _const(1) for a in "xyz"},
    "cluster.ctarank": _const(0), "cluster.nctarank": _const(1),
    "laneid": _field(C.LANEID), "warpid": _field(C.WARPID), "nwarpid": _field(C.NWARPID),
    "warpsize": _const(32), "smid": _const(0), "nsmid": _const(1), "gridid": _const(0),
    "lanemask.eq": _lanemask("%r = llvm.shl %one, %l : i32"),
    "lanemask.lt": _lanemask("%s = llvm.shl %one, %l : i32\n%r = llvm.sub %s, %one : i32"),
    "lanemask.le": _lanemask("%s = llvm.shl %two, %l : i32\n%r = llvm.sub %s, %one : i32"),
    "lanemask.ge": _lanemask("%s = llvm.shl %one, %l : i32\n%t = llvm.sub %s, %one : i32\n"
                             "%r = llvm.xor %t, %m1 : i32"),
    "lanemask.gt": _lanemask("%s = llvm.shl %two, %l : i32\n%t = llvm.sub %s, %one : i32\n"
                             "%r = llvm.xor %t, %m1 : i32"),
    "clock64": _CLOCK, "globaltimer": _CLOCK,
    "clock": _CLOCK.replace("%r", "%w") + "\n%r = llvm.trunc %w : i64 to i32",
    "globaltimer.lo": _CLOCK.replace("%r", "%w") + "\n%r = llvm.trunc %w : i64 to i32",
    "dynamic_smem_size": _field(C.DYN_SMEM), "total_smem_size": _field(C.TOTAL_SMEM),
}

# A kernel with clusters of more than one CTA (``nvvm.cluster_dim``; PTX ISA "Cluster of Cooperative Thread
# Arrays" and "Special Registers": %clusterid, %nclusterid, %cluster_ctaid, %cluster_nctaid, %cluster_ctarank,
# %cluster_nctarank, %is_explicit_cluster): the cluster registers come from the context (set per CTA by
# :data:`.prelude.SET_THREAD_CLUSTER`); the grid (%nctaid) counts CTAs, a whole number of clusters.
CLUSTER_SREGS: dict[str, str] = {
    **{f"clusterid.{a}": _field(C.CLUSTERID + i) for i, a in enumerate("xyz")},
    **{f"nclusterid.{a}": _field(C.NCLUSTERID + i) for i, a in enumerate("xyz")},
    **{f"cluster.ctaid.{a}": _field(C.CLUSTER_CTAID + i) for i, a in enumerate("xyz")},
    **{f"cluster.nctaid.{a}": _field(C.CLUSTER_NCTAID + i) for i, a in enumerate("xyz")},
    "cluster.ctarank": _field(C.CLUSTER_RANK), "cluster.nctarank": _field(C.CLUSTER_NRANK),
}


# ---------------------------------------------------------------- nvvm ops
@dataclass
class OpRow:
    """How one nvvm op is emulated: ``rewrite(op, rw)`` returns the replacement values."""

    rewrite: Callable
    collective: bool = False


def _kind(op, attr: str) -> str:
    """The enum keyword of an nvvm attribute (``#nvvm<shfl_kind bfly>`` -> ``bfly``)."""
    text = str(op.attributes[attr])
    return re.findall(r"[a-z_0-9]+", text.split("<", 1)[-1])[-1]


def _segments(op) -> list[int]:
    return list(op.attributes["operandSegmentSizes"]) if "operandSegmentSizes" in op.attributes else []


def _optional_operands(op, names: list[str]) -> dict:
    sizes, vals, i = _segments(op), {}, 0
    for name, n in zip(names, sizes):
        vals[name] = op.operands[i] if n else None
        i += n
    return vals


def _sreg(op, rw):
    name = op.operation.name[len("nvvm.read.ptx.sreg."):]
    table = {**SREGS, **CLUSTER_SREGS} if rw.cluster != (1, 1, 1) else SREGS
    if name not in table:
        rw.unknown(op)
    ty = str(op.results[0].type)
    sym = "__emu_sreg_" + name.replace(".", "_")
    rw.define(sym, "%ctx: !llvm.ptr", table[name], ty)
    return [rw.call(sym, [], ty)]


def _barrier(op, rw):
    if op.operation.name == "nvvm.barrier0":
        bar_id = count = pred = None
        red = 0
    else:
        ops = _optional_operands(op, ["barrierId", "numberOfThreads", "reductionPredicate"])
        bar_id, count, pred = ops["barrierId"], ops["numberOfThreads"], ops["reductionPredicate"]
        red = {"popc": 1, "and": 2, "or": 3}[_kind(op, "reductionOp")] if "reductionOp" in op.attributes else 0
    args = [bar_id or rw.const(0), count or rw.const(-1), rw.const(red), pred or rw.const(0)]
    r = rw.call("__emu_barrier", args, "i32", can_abort=True)
    return [r] if len(op.results) else []


def _barrier_arrive(op, rw):
    # operands: [barrierId], numberOfThreads (one optional operand: no segment sizes)
    bar_id = op.operands[0] if len(op.operands) == 2 else rw.const(0)
    count = op.operands[len(op.operands) - 1]
    rw.call("__emu_barrier_arrive", [bar_id, count], None, can_abort=True)
    return []


def _warp(op, rw, name, mask, val, b, c, result):
    """A call of ``__emu_warp`` through a typed helper (value encoded in 64 bits)."""
    vt = str(val.type) if val is not None else "i32"
    sym = rw.warp_helper(vt, result)
    args = [rw.const(opcode(name)), mask, val if val is not None else rw.const(0), b or rw.const(0), c or rw.const(0)]
    r = rw.call(sym, args, None if result == "none" else str(op.results[0].type), can_abort=True)
    return [r] if result != "none" else []


def _shfl(op, rw):
    mask, val, offset, clamp = op.operands
    result = "valpred" if "return_value_and_is_valid" in op.attributes else "val"
    return _warp(op, rw, "shfl." + _kind(op, "kind"), mask, val, offset, clamp, result)


def _vote(op, rw):
    kind = _kind(op, "kind")
    return _warp(op, rw, "vote." + kind, op.operands[0], op.operands[1], None, None,
                 "i32" if kind == "ballot" else "i1")


def _match(op, rw):
    kind = _kind(op, "kind")
    return _warp(op, rw, "match." + kind, op.operands[0], op.operands[1], None, None,
                 "i32" if kind == "any" else "i32pred")


def _redux(op, rw):
    val, mask = op.operands
    kind = _kind(op, "kind")
    flags = (1 if "abs" in op.attributes and op.attributes["abs"] else 0) | \
            (2 if "nan" in op.attributes and op.attributes["nan"] else 0)
    return _warp(op, rw, "redux." + kind, mask, val, None, rw.const(flags), "val")


def _elect(op, rw):
    mask = op.operands[0] if len(op.operands) else rw.const(-1)
    return _warp(op, rw, "elect", mask, None, None, None, "i1")


def _warp_sync(op, rw):
    return _warp(op, rw, "bar.warp.sync", op.operands[0], None, None, None, "none")


def _mma_sync(op, rw):
    """``nvvm.mma.sync`` row.col (PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions: mma"):
    m16n8k16 and m16n8k8 f16 / bf16 -> f32, f16 -> f16 (C / D two ``vector<2xf16>`` registers),
    m16n8k8 tf32 -> f32 and m16n8k32 s8 / u8 -> s32. (MLIR 22's verifier rejects e4m3 / e5m2
    operands: those come as inline PTX, :data:`INLINE_ASM`.) A warp collective over the lanes'
    register files (:func:`.warp._mma`)."""
    shape = str(op.attributes["shape"]) if "shape" in op.attributes else ""
    ptx = [re.sub(r".*<(\w+)>.*", r"\1", str(op.attributes[n])) if n in op.attributes else ""
           for n in ("multiplicandAPtxType", "multiplicandBPtxType")]
    operands = list(op.operands)
    a_type = str(operands[0].type) if operands else ""
    acc_type = str(operands[-1].type) if operands else ""
    if "m = 8, n = 8, k = 4" in shape and a_type == acc_type == "f64":  # m8n8k4 .f64 (A, B: one f64; C: two)
        if len(operands) != 4 or str(op.results[0].type) != "!llvm.struct<(f64, f64)>":
            rw.unknown(op)
        return [_mma_call(rw, "mma.m8n8k4.f64", "f64", "f64", 2, operands, 2)]
    k = int(m.group(1)) if (m := re.search(r"m = 16, n = 8, k = (\d+)", shape)) else 0
    elem = ptx[0] or ("f16" if a_type == "vector<2xf16>" else "?")
    if ptx[1] not in ("", ptx[0]) and not (k == 32 and {ptx[0], ptx[1]} <= {"s8", "u8"}):
        elem = "?"
    if k == 32:
        name, acc = f"mma.m16n8k32.{ptx[0]}.{ptx[1]}", "i32"
    elif acc_type == "vector<2xf16>":
        name, acc = f"mma.m16n8k{k}.{elem}.f16acc", acc_type
    else:
        name, acc = f"mma.m16n8k{k}.{elem}", "f32"
    n_acc = 2 if acc == "vector<2xf16>" else 4
    n_ab = 3 if k == 8 and elem in ("f16", "bf16") else 6  # A and B registers
    result = f"!llvm.struct<({', '.join([acc] * n_acc)})>"
    if name not in WARP_NAMES or len(operands) != n_ab + n_acc or str(op.results[0].type) != result \
            or str(operands[n_ab].type) != acc:
        rw.unknown(op)
    return [_mma_call(rw, name, a_type, acc, n_acc, operands, n_ab)]


def _mma_call(rw, name: str, a_type: str, acc: str, n_acc: int, operands, n_ab: int = 6):
    """A call of the helper that puts the lane's A and B (``n_ab``: 4 + 2, or 2 + 1) and C (``n_acc``)
    registers in a stack buffer of 32-bit words (64-bit words for f64 operands), runs warp row ``name`` on it
    and returns D (a struct of ``n_acc`` ``acc``)."""
    result = f"!llvm.struct<({', '.join([acc] * n_acc)})>"
    sym = "__emu_" + name.replace(".", "_")
    n = n_ab + n_acc
    regs = [f"%r{i}" for i in range(n)]
    params = ", ".join(["%ctx: !llvm.ptr"] + [f"{r}: {a_type}" for r in regs[:n_ab]]
                       + [f"{r}: {acc}" for r in regs[n_ab:]])
    native = ("f64",) if acc == "f64" else ("i32", "f32")  # stored as they are; other types bitcast to the word
    arr = f"!llvm.array<{n} x {'i64' if acc == 'f64' else 'i32'}>"
    body = ["%one = llvm.mlir.constant(1 : i32) : i32", f"%buf = llvm.alloca %one x {arr} : (i32) -> !llvm.ptr"]
    for i, r in enumerate(regs):
        ty = a_type if i < n_ab else acc
        body.append(f"%p{i} = llvm.getelementptr %buf[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {arr}")
        word = r
        if ty not in native:
            body.append(f"%w{i} = llvm.bitcast {r} : {ty} to i32")
            word, ty = f"%w{i}", "i32"
        body.append(f"llvm.store {word}, %p{i} : {ty}, !llvm.ptr")
    body += ["%e = llvm.ptrtoint %buf : !llvm.ptr to i64",
             f"%code = llvm.mlir.constant({opcode(name)} : i32) : i32",
             "%m = llvm.mlir.constant(-1 : i32) : i32", "%z = llvm.mlir.constant(0 : i32) : i32",
             "%x = llvm.call @__emu_warp(%ctx, %code, %m, %e, %z, %z) : (!llvm.ptr, i32, i32, i64, i32, i32) -> i64",
             f"%s0 = llvm.mlir.poison : {result}"]
    for i in range(n_acc):
        out = "%r" if i == n_acc - 1 else f"%s{i + 1}"
        load = acc if acc in native else "i32"
        body.append(f"%d{i} = llvm.load %p{n_ab + i} : !llvm.ptr -> {load}")
        val = f"%d{i}"
        if load != acc:
            body.append(f"%v{i} = llvm.bitcast %d{i} : i32 to {acc}")
            val = f"%v{i}"
        body.append(f"{out} = llvm.insertvalue {val}, %s{i}[{i}] : {result}")
    rw.define(sym, params, "\n".join(body), result)
    return rw.call(sym, operands, result, can_abort=True)


def _check_call(rw, space: int, ptr: str, size: str, align: str, kind: int, site: str, out: str) -> str:
    """MLIR text (inside a helper) checking ``size`` bytes (i64 value) at ``ptr`` (aligned to ``align``,
    i64) for an access of ``kind``; ``out`` is the pointer to use (the sink after a fault)."""
    rw.texts.setdefault(f"__emu_check_as{space}", prelude.check(space))
    pt = memcheck.pointer_type(space)
    return (f"%kind_{out[1:]} = llvm.mlir.constant({kind} : i32) : i32\n"
            f"{out} = llvm.call @__emu_check_as{space}(%ctx, {ptr}, {size}, {align}, %kind_{out[1:]}, {site}) : "
            f"(!llvm.ptr, {pt}, i64, i64, i32, i32) -> {pt}")


def _ldmatrix(op, rw):
    """``nvvm.ldmatrix`` m8n8, b16, num 1 / 2 / 4, layout row (or col: ``.trans``) (PTX ISA, "Warp Level
    Matrix Multiply-Accumulate Instructions: ldmatrix"; semantics in :func:`.warp._ldmatrix`). Result
    ``i32`` for num = 1, else ``!llvm.struct<(i32, ...)>`` of num words. With bounds checks, each lane
    whose address is used (lane < 8 * num) first checks its 16-byte row: inside a shared-memory buffer,
    16-byte aligned."""
    num = ir.IntegerAttr(op.attributes["num"]).value
    layout = _kind(op, "layout")
    ptr = op.operands[0]
    pt = str(ptr.type)
    space = memcheck.space_of(pt)
    result = "i32" if num == 1 else f"!llvm.struct<({', '.join(['i32'] * num)})>"
    if num not in (1, 2, 4) or layout not in ("row", "col") or str(op.results[0].type) != result \
            or str(op.attributes["shape"]) != "#nvvm.ld_st_matrix_shape<m = 8, n = 8>" \
            or str(op.attributes["eltType"]) != "#nvvm.ld_st_matrix_elt_type<b16>":
        rw.unknown(op)
    name = f"ldmatrix.x{num}{'.trans' if layout == 'col' else ''}"
    sym = f"__emu_{name.replace('.', '_')}_as{space}{'_chk' if rw.check_bounds else ''}"
    buf = "!llvm.struct<(i64, array<4 x i32>)>"
    body = ["%one = llvm.mlir.constant(1 : i32) : i32", f"%buf = llvm.alloca %one x {buf} : (i32) -> !llvm.ptr"]
    if rw.check_bounds:
        body += [f"%lp = llvm.getelementptr %ctx[{C.LANEID}] : (!llvm.ptr) -> !llvm.ptr, i32",
                 "%lane = llvm.load %lp : !llvm.ptr -> i32", f"%lim = llvm.mlir.constant({8 * num} : i32) : i32",
                 '%used = llvm.icmp "ult" %lane, %lim : i32', f"llvm.cond_br %used, ^chk, ^go(%p : {pt})", "^chk:",
                 "%sz = llvm.mlir.constant(16 : i64) : i64",
                 _check_call(rw, space, "%p", "%sz", "%sz", LOAD, "%site", "%q"), f"llvm.br ^go(%q : {pt})",
                 f"^go(%a: {pt}):"]
    else:
        body.append(f"%a = llvm.bitcast %p : {pt} to {pt}")
    body += [f"%ai = llvm.ptrtoint %a : {pt} to i64", "llvm.store %ai, %buf : i64, !llvm.ptr",
             "%e = llvm.ptrtoint %buf : !llvm.ptr to i64", f"%code = llvm.mlir.constant({opcode(name)} : i32) : i32",
             "%m = llvm.mlir.constant(-1 : i32) : i32", "%z = llvm.mlir.constant(0 : i32) : i32",
             "%x = llvm.call @__emu_warp(%ctx, %code, %m, %e, %z, %z) : (!llvm.ptr, i32, i32, i64, i32, i32) -> i64"]
    for i in range(num):
        body += [f"%p{i} = llvm.getelementptr %buf[0, 1, {i}] : (!llvm.ptr) -> !llvm.ptr, {buf}",
                 f"%w{i} = llvm.load %p{i} : !llvm.ptr -> i32"]
    if num == 1:
        body.append("%r = llvm.bitcast %w0 : i32 to i32")
    else:
        body.append(f"%s0 = llvm.mlir.poison : {result}")
        body += [f"{'%r' if i == num - 1 else f'%s{i + 1}'} = llvm.insertvalue %w{i}, %s{i}[{i}] : {result}"
                 for i in range(num)]
    rw.define(sym, f"%ctx: !llvm.ptr, %p: {pt}, %site: i32", "\n".join(body), result)
    return [rw.call(sym, [ptr, rw.const(rw.site())], result, can_abort=True)]


# cp.async (PTX ISA, "Data Movement and Conversion Instructions: cp.async", "cp.async.commit_group",
# "cp.async.wait_group / cp.async.wait_all"): a thread's copies are asynchronous and complete, in no
# defined order, by the time a wait_group retires the group they were committed in. The emulator keeps
# each thread's copies pending (:meth:`.runtime.DeviceRuntime.cp_async`) and performs them only then:
# ``wait.group N`` performs the copies of all but the newest N committed groups, oldest first, so a
# kernel that reads the destination without the wait sees the old shared memory. The source is read
# when the copy lands, not when it is issued. Copies still pending when the thread exits (never
# committed, or committed and not waited for) land at its exit: a kernel may leave prefetches it never
# uses. ``cp.async.wait_all`` has no MLIR 22 op (it is ``commit.group`` then ``wait.group 0``).
CP_ASYNC_ISSUE, CP_ASYNC_COMMIT, CP_ASYNC_WAIT, CP_ASYNC_EXIT = 0, 1, 2, 3
CP_ASYNC_SIZES = (4, 8, 16)  # cp-size; .cg only with 16 (the op's verifier checks that)


def _cp_async(op, rw):
    """``nvvm.cp.async.shared.global %dst, %src, SIZE, cache = ca|cg[, %src_size]``: queue the copy of
    ``size`` bytes (of which ``src_size`` read from ``src``, the rest zero; src_size > size fails the
    launch, undefined in PTX). With bounds checks the destination (size bytes) and the bytes read from
    the source (min(src_size, size); none when 0, so a zero-filling copy may name any source) must lie
    in one buffer of their address space, both aligned to size."""
    size = ir.IntegerAttr(op.attributes["size"]).value
    if size not in CP_ASYNC_SIZES or _kind(op, "modifier") not in ("ca", "cg") or len(op.operands) not in (2, 3):
        rw.unknown(op)
    dst, src = op.operands[0], op.operands[1]
    n = op.operands[2] if len(op.operands) == 3 else None
    if n is not None and str(n.type) != "i32":
        rw.unknown(op)
    dt, st = str(dst.type), str(src.type)
    ds, ss = memcheck.space_of(dt), memcheck.space_of(st)
    sym = f"__emu_cp_async_as{ds}_as{ss}_{size}{'_n' if n is not None else ''}{'_chk' if rw.check_bounds else ''}"
    params = f"%ctx: !llvm.ptr, %d: {dt}, %s: {st}" + (", %n: i32" if n is not None else "") + ", %site: i32"
    body = [f"%size = llvm.mlir.constant({size} : i32) : i32", f"%size64 = llvm.mlir.constant({size} : i64) : i64"]
    if n is None:
        body.append("%cnt = llvm.bitcast %size : i32 to i32")
    else:
        body.append("%cnt = llvm.bitcast %n : i32 to i32")
    if rw.check_bounds:
        body += ['%big = llvm.icmp "ugt" %cnt, %size : i32', "%rd = llvm.select %big, %size, %cnt : i1, i32",
                 "%rd64 = llvm.zext %rd : i32 to i64",
                 _check_call(rw, ds, "%d", "%size64", "%size64", STORE, "%site", "%dq"),
                 _check_call(rw, ss, "%s", "%rd64", "%size64", LOAD, "%site", "%sq")]
    else:
        body += [f"%dq = llvm.bitcast %d : {dt} to {dt}", f"%sq = llvm.bitcast %s : {st} to {st}"]
    body += [f"%di = llvm.ptrtoint %dq : {dt} to i64", f"%si = llvm.ptrtoint %sq : {st} to i64",
             f"%what = llvm.mlir.constant({CP_ASYNC_ISSUE} : i32) : i32",
             "llvm.call @__emu_cp_async(%ctx, %what, %di, %si, %size, %cnt) : "
             "(!llvm.ptr, i32, i64, i64, i32, i32) -> ()"]
    rw.define(sym, params, "\n".join(body), "void")
    rw.uses_cp_async = True
    rw.call(sym, [dst, src] + ([n] if n is not None else []) + [rw.const(rw.site())], None, can_abort=True)
    return []


def _cp_async_group(what: int):
    def rewrite(op, rw):
        """``nvvm.cp.async.commit.group`` / ``nvvm.cp.async.wait.group N`` (see :data:`CP_ASYNC_ISSUE`)."""
        n = ir.IntegerAttr(op.attributes["n"]).value if what == CP_ASYNC_WAIT else 0
        z64 = rw.const(0, "i64")
        rw.uses_cp_async = True
        rw.call("__emu_cp_async", [rw.const(what), z64, z64, rw.const(n), rw.const(0)], None, can_abort=True)  # N: size
        return []
    return rewrite


def cp_async_exit(rw, func) -> None:
    """Before every return of kernel ``func``: the thread's pending copies land (see above)."""
    ctx = func.regions[0].blocks[0].arguments[-1]
    for b in func.regions[0].blocks:
        for ret in [o for o in b.operations if o.operation.name == "llvm.return"]:
            rw.op = ret
            z64 = rw.const(0, "i64")
            rw.ctx = ctx
            rw.call("__emu_cp_async", [rw.const(CP_ASYNC_EXIT), z64, z64, rw.const(0), rw.const(0)], None)


# ---------------------------------------------------------------- mbarrier
# PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier" (sm_80+; expect-tx /
# complete-tx / try_wait sm_90): an 8-byte, 8-byte aligned object in shared memory with a phase, an
# expected and a pending arrival count and a tx-count ("Contents of the mbarrier object"); the current
# phase completes when the pending count and the tx-count are both zero ("Phase Completion of the
# mbarrier object"), which reloads the pending count with the expected count and starts the next phase.
# The emulator keeps the objects in :class:`.runtime.DeviceRuntime` keyed by address (the 8 bytes
# themselves are not written; with bounds checks they must lie in shared memory, 8-byte aligned); see
# :meth:`.runtime.DeviceRuntime.mbarrier`. Blocking waits (try_wait, try_wait.parity) suspend the host
# thread and count for deadlock detection; test.wait never blocks (a thread polling it is not seen as
# waiting: a poll loop that can never succeed hangs, as on the GPU).
def _mbar_call(op, rw, what: str, value=None, pred=None, result: str | None = None):
    """A call of ``__emu_mbarrier`` (through a helper that checks the object's 8 bytes) for op ``what``
    (:data:`.runtime.MBAR_OPS`) with ``value`` (i32 / i64 operand, or None: 1 for arrive-likes) and the
    optional i1 ``pred``; ``result``: None, ``i64`` (the state) or ``i1``."""
    ptr = op.operands[0]
    pt = str(ptr.type)
    space = memcheck.space_of(pt)
    if space not in (0, 3, 7) or (value is not None and str(value.type) not in ("i32", "i64")) \
            or (pred is not None and str(pred.type) != "i1"):
        rw.unknown(op)
    vt = str(value.type) if value is not None else ""
    sym = f"__emu_mbar_as{space}_{vt or 'one'}{'_p' if pred is not None else ''}_{result or 'void'}" \
          f"{'_chk' if rw.check_bounds else ''}"
    params = f"%ctx: !llvm.ptr, %p: {pt}, %what: i32" + (f", %v: {vt}" if vt else "") + \
        (", %pred: i1" if pred is not None else "") + ", %site: i32"
    body = ["%e8 = llvm.mlir.constant(8 : i64) : i64"]
    if rw.check_bounds:
        body.append(_check_call(rw, space, "%p", "%e8", "%e8", ATOMIC, "%site", "%q"))
    else:
        body.append(f"%q = llvm.bitcast %p : {pt} to {pt}")
    body.append(f"%a = llvm.ptrtoint %q : {pt} to i64")
    body.append({"i32": "%v64 = llvm.zext %v : i32 to i64", "i64": "%v64 = llvm.bitcast %v : i64 to i64",
                 "": "%v64 = llvm.mlir.constant(1 : i64) : i64"}[vt])
    body.append("%p32 = llvm.zext %pred : i1 to i32" if pred is not None else "%p32 = llvm.mlir.constant(1 : i32) : i32")
    body.append("%x = llvm.call @__emu_mbarrier(%ctx, %what, %a, %v64, %p32) : (!llvm.ptr, i32, i64, i64, i32) -> i64")
    if result == "i64":
        body.append("%r = llvm.bitcast %x : i64 to i64")
    elif result == "i1":
        body.append("%r = llvm.trunc %x : i64 to i1")
    rw.define(sym, params, "\n".join(body), result or "void")
    args = [ptr, rw.const(MBAR_OPS.index(what))] + ([value] if value is not None else []) + \
        ([pred] if pred is not None else []) + [rw.const(rw.site())]
    r = rw.call(sym, args, result, can_abort=True)
    return [r] if result else []


def _mbar_init(op, rw):
    """``nvvm.mbarrier.init %addr, %count[, %predicate]`` (PTX ISA "mbarrier.init"): phase 0, expected and
    pending count = count (in [1, 2^20 - 1], else the launch fails), tx-count 0."""
    return _mbar_call(op, rw, "init", op.operands[1], op.operands[2] if len(op.operands) > 2 else None)


def _mbar_arrive(what: str):
    def rewrite(op, rw):
        """``nvvm.mbarrier.arrive`` / ``arrive_drop`` ``%addr[, %count] [-> i64]`` and the ``.nocomplete``
        forms ``%addr, %count -> i64`` (PTX ISA "mbarrier.arrive", "mbarrier.arrive_drop"): the pending
        count drops by count (default 1; arrive_drop also the expected count); the result, the state, is the
        number of the phase the arrive happened in (for ``test.wait`` / ``try_wait`` with an i64 state).
        More arrivals than pending, or a ``.nocomplete`` arrive that would complete the phase, fail the
        launch (undefined in PTX). ``scope`` / ``relaxed`` change nothing here (the runtime's lock orders
        memory). On a ``!llvm.ptr<7>`` (mbarrier.arrive.shared::cluster, a mapa address) the arrive lands on the
        mbarrier of the CTA that address is in."""
        if "nocomplete" in what and len(op.operands) != 2:
            rw.unknown(op)
        count = op.operands[1] if len(op.operands) > 1 else None
        return _mbar_call(op, rw, what, count, None, "i64" if len(op.results) else None)
    return rewrite


def _mbar_expect_tx(op, rw):
    """``nvvm.mbarrier.arrive.expect_tx %addr, %txcount[, %predicate] [-> i64]`` (PTX ISA
    "mbarrier.expect_tx", "mbarrier.arrive"): tx-count += txcount, then an arrive (count 1)."""
    pred = op.operands[2] if len(op.operands) > 2 else None
    return _mbar_call(op, rw, "arrive.expect_tx", op.operands[1], pred, "i64" if len(op.results) else None)


def _mbar_tx(what: str):
    def rewrite(op, rw):
        """``nvvm.mbarrier.expect_tx`` / ``complete_tx %addr, %txcount`` (PTX ISA "mbarrier.expect_tx",
        "mbarrier.complete_tx"): tx-count up / down by txcount (range [-(2^20 - 1), 2^20 - 1]); complete_tx
        may complete the phase."""
        return _mbar_call(op, rw, what, op.operands[1])
    return rewrite


def _mbar_wait(blocking: bool):
    def rewrite(op, rw):
        """``nvvm.mbarrier.test.wait %addr, %state : i64 -> i1`` / ``%addr, %parity : i32 -> i1`` and
        ``nvvm.mbarrier.try_wait`` (same operands, optional ticks) (PTX ISA "mbarrier.test_wait /
        mbarrier.try_wait"): true when the phase given by the state has completed, or (parity P) when the
        phase with parity P has completed, i.e. the current phase's parity is not P. test.wait answers at
        once; try_wait waits until true (the GPU may return false after a time limit; a wait that could only
        time out, because every running thread of the CTA waits, fails the launch as a deadlock)."""
        val = op.operands[1]
        kind = "state" if str(val.type) == "i64" else "parity"
        return _mbar_call(op, rw, f"{'try_wait' if blocking else 'test.wait'}.{kind}", val, None, "i1")
    return rewrite


def _mbar_try_wait_parity(op, rw):
    """``nvvm.mbarrier.try_wait.parity %addr, %phase, %ticks`` (MLIR: a loop around PTX
    ``mbarrier.try_wait.parity`` until it succeeds): waits until the phase with parity ``phase`` completed
    (deadlock detection as for try_wait)."""
    return _mbar_call(op, rw, "try_wait.parity", op.operands[1])


def _mbar_inval(op, rw):
    """``nvvm.mbarrier.inval %addr`` (PTX ISA "mbarrier.inval"): the object is gone; a later use before a new
    init fails the launch, as does inval while threads wait on it."""
    return _mbar_call(op, rw, "inval", rw.const(0))


def _cp_async_mbarrier_arrive(op, rw):
    """``nvvm.cp.async.mbarrier.arrive %addr {noinc = true|false}`` (PTX ISA "cp.async.mbarrier.arrive"): an
    arrive-on triggered when all the thread's prior cp.async copies complete. The emulator lands those copies
    now (all of them, committed or not) and arrives at once; without ``.noinc`` the pending count is first
    raised by one, so the net count does not change."""
    noinc = "noinc" in op.attributes and ir.BoolAttr(op.attributes["noinc"]).value
    rw.uses_cp_async = True
    return _mbar_call(op, rw, "cp.async.arrive", rw.const(int(noinc)))


# ---------------------------------------------------------------- cp.async.bulk.tensor (TMA)
# PTX ISA, "Data Movement and Conversion Instructions: cp.async.bulk.tensor" (global -> shared::cluster,
# .tile, .mbarrier::complete_tx::bytes) and "Tensor Access Modes: Tiled mode": the box of the tensor map
# (:mod:`.tensormap`, the emulator's 128-byte encoding) at the coordinates lands in shared memory and
# completes its bytes on the mbarrier. The emulator queues the copy per mbarrier and performs it when a
# thread next waits on (or tests) that mbarrier, or at once when threads already wait on it
# (:meth:`.runtime.DeviceRuntime.tma`): a kernel that reads the destination without waiting on the
# mbarrier sees the old shared memory. The global source is read when the copy lands.
def _tma_load(op, rw):
    """``nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %tmap, %mbar, box[%c0, ...] [multicast_mask = %m]
    [predicate = %p] {group = #nvvm.cta_group<cta_1 | cta_2>} : !llvm.ptr<7>, !llvm.ptr`` in tile mode, 1 to 5
    i32 coordinates (innermost first); no im2col or CTA-only destination (the sm_90a back end rejects
    isCTAOnly); an L2 cache hint is accepted and ignored. With ``multicast_mask`` (i16 ctaMask,
    ``.multicast::cluster``) the box lands in every CTA of the mask; ``.cta_group::2`` lets the mbarrier be
    in the peer CTA (:meth:`.runtime.DeviceRuntime.tma`). With bounds checks the mbarrier's 8 bytes must be
    in shared memory; the tensor map must hold 128 readable bytes; the destination is checked when queued
    (128-byte aligned, the box inside one shared buffer)."""
    ops = _optional_operands(op, ["dstMem", "tmaDescriptor", "coordinates", "mbar", "im2colOffsets",
                                  "multicastMask", "l2CacheHint", "predicate"])
    sizes = _segments(op)
    rank = sizes[2]
    mode = _kind(op, "mode") if "mode" in op.attributes else "tile"
    cta_only = "isCTAOnly" in op.attributes and ir.BoolAttr(op.attributes["isCTAOnly"]).value
    group = _kind(op, "group") if "group" in op.attributes else "cta_1"
    mask = ops["multicastMask"]
    if mode != "tile" or sizes[4] or cta_only or not 1 <= rank <= 5 or group not in ("cta_1", "cta_2") \
            or (mask is not None and str(mask.type) != "i16"):
        rw.unknown(op)
    start = sizes[0] + sizes[1]
    coords = list(op.operands)[start:start + rank]
    return _tma_emit(rw, ops["dstMem"], ops["tmaDescriptor"], coords, ops["mbar"], ops["predicate"], mask,
                     group == "cta_2")


def _asm_tma_load(op, rw, m):
    """``[@$p ]cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {...} ],
    [$mbar];`` as convert-nvvm-to-llvm writes the predicated op: the same semantics."""
    rank = int(m.group(2))
    ops = list(op.operands)
    if len(ops) != 3 + rank + (1 if m.group(1) else 0):
        rw.unknown(op)
    pred = ops[-1] if m.group(1) else None
    return _tma_emit(rw, ops[0], ops[1], ops[2:2 + rank], ops[2 + rank], pred)


def _tma_emit(rw, dst, tmap, coords, mbar, pred, mask=None, pair: bool = False):
    rank = len(coords)
    dt, tt, mt = str(dst.type), str(tmap.type), str(mbar.type)
    ms = memcheck.space_of(mt)
    sym = f"__emu_tma_{rank}d_{re.sub(r'[^a-z0-9]', '', dt + tt + mt)}{'_p' if pred is not None else ''}" \
          f"{'_mc' if mask is not None else ''}{'_pair' if pair else ''}{'_chk' if rw.check_bounds else ''}"
    params = [f"%ctx: !llvm.ptr, %d: {dt}, %t: {tt}", *[f"%c{i}: i32" for i in range(rank)], f"%b: {mt}"] + \
        (["%pred: i1"] if pred is not None else []) + (["%mask: i16"] if mask is not None else []) + ["%site: i32"]
    arr = "!llvm.array<5 x i32>"
    body = ["%one = llvm.mlir.constant(1 : i32) : i32", f"%buf = llvm.alloca %one x {arr} : (i32) -> !llvm.ptr"]
    for i in range(rank):
        body += [f"%p{i} = llvm.getelementptr %buf[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {arr}",
                 f"llvm.store %c{i}, %p{i} : i32, !llvm.ptr"]
    body.append("%e8 = llvm.mlir.constant(8 : i64) : i64")
    if not rw.check_bounds:
        body.append(f"%bq = llvm.bitcast %b : {mt} to {mt}")
    elif pair and ms == 3:  # .cta_group::2: the mbarrier may be the peer CTA's (a mapa address): any CTA's
        body += ["%b7 = llvm.addrspacecast %b : !llvm.ptr<3> to !llvm.ptr<7>",
                 _check_call(rw, 7, "%b7", "%e8", "%e8", ATOMIC, "%site", "%bq7"),
                 "%bq = llvm.addrspacecast %bq7 : !llvm.ptr<7> to !llvm.ptr<3>"]
    else:
        body.append(_check_call(rw, ms, "%b", "%e8", "%e8", ATOMIC, "%site", "%bq"))
    body += [f"%di = llvm.ptrtoint %d : {dt} to i64", f"%ti = llvm.ptrtoint %t : {tt} to i64",
             "%ci = llvm.ptrtoint %buf : !llvm.ptr to i64", f"%bi = llvm.ptrtoint %bq : {mt} to i64",
             f"%rank = llvm.mlir.constant({rank} : i32) : i32", "%k256 = llvm.mlir.constant(256 : i32) : i32"]
    if pred is not None:
        body += ["%pz = llvm.zext %pred : i1 to i32", "%pb = llvm.mul %pz, %k256 : i32"]
    else:
        body.append("%pb = llvm.bitcast %k256 : i32 to i32")
    body.append("%fl0 = llvm.or %rank, %pb : i32")
    flags = "%fl0"
    if mask is not None:  # bit 9: multicast, the ctaMask in bits 16-31
        body += ["%mz = llvm.zext %mask : i16 to i32", "%k16 = llvm.mlir.constant(16 : i32) : i32",
                 "%ms = llvm.shl %mz, %k16 : i32", "%k512 = llvm.mlir.constant(512 : i32) : i32",
                 "%fl1 = llvm.or %fl0, %ms : i32", "%fl2 = llvm.or %fl1, %k512 : i32"]
        flags = "%fl2"
    if pair:  # bit 10: .cta_group::2
        body += ["%k1024 = llvm.mlir.constant(1024 : i32) : i32", f"%fl3 = llvm.or {flags}, %k1024 : i32"]
        flags = "%fl3"
    body += [f"%fl = llvm.bitcast {flags} : i32 to i32",
             "llvm.call @__emu_tma(%ctx, %di, %ti, %ci, %bi, %fl) : (!llvm.ptr, i64, i64, i64, i64, i32) -> ()"]
    rw.define(sym, ", ".join(params), "\n".join(body), "void")
    rw.call(sym, [dst, tmap, *coords, mbar] + ([pred] if pred is not None else []) +
            ([mask] if mask is not None else []) + [rw.const(rw.site())], None, can_abort=True)
    return []


# ---------------------------------------------------------------- cp.async.bulk.tensor shared -> global (TMA store)
# PTX ISA §9.7.9.25 (tensor copies) "cp.async.bulk.tensor" (``.global.shared::cta``, ``.tile``, ``.bulk_group``
# completion) and "Bulk and Tensor copy completion instructions": "cp.async.bulk.commit_group",
# "cp.async.bulk.wait_group": the
# box of shared memory at ``srcMem`` is written to the tensor map's tensor at the coordinates, clipped to
# the tensor (elements out of bounds are not written); the store belongs to the issuing thread's bulk
# async-group, which commit_group closes; ``wait_group N`` waits until at most N of the thread's groups are
# pending (``.read``: until their shared memory has been read, after which it may be reused). The emulator
# queues each store per thread and performs it (reads the shared box, writes global memory) when a
# wait_group retires its group, or at the thread's exit: a kernel that overwrites the box before
# ``wait_group.read`` stores the new bytes, as the GPU may. Not emulated: reduce forms, im2col, a predicate.
def _tma_store(op, rw):
    """``nvvm.cp.async.bulk.tensor.global.shared.cta %tmap, %src, box[%c0, ...] [l2_cache_hint = %h]
    : !llvm.ptr, !llvm.ptr<3>``, tile mode, 1 to 5 i32 coordinates (innermost first); the map must hold 128
    readable bytes, the source box (checked when queued) must be 128-byte aligned inside one shared buffer."""
    ops = _optional_operands(op, ["tmaDescriptor", "srcMem", "coordinates", "l2CacheHint", "predicate"])
    sizes = _segments(op)
    rank = sizes[2]
    mode = _kind(op, "mode") if "mode" in op.attributes else "tile"
    if mode != "tile" or ops["predicate"] is not None or not 1 <= rank <= 5:
        rw.unknown(op)
    coords = list(op.operands)[2:2 + rank]
    tmap, src = ops["tmaDescriptor"], ops["srcMem"]
    tt, st = str(tmap.type), str(src.type)
    sym = f"__emu_tma_store_{rank}d_{re.sub(r'[^a-z0-9]', '', tt + st)}"
    params = [f"%ctx: !llvm.ptr, %t: {tt}, %s: {st}", *[f"%c{i}: i32" for i in range(rank)], "%site: i32"]
    arr = "!llvm.array<5 x i32>"
    body = ["%one = llvm.mlir.constant(1 : i32) : i32", f"%buf = llvm.alloca %one x {arr} : (i32) -> !llvm.ptr"]
    for i in range(rank):
        body += [f"%p{i} = llvm.getelementptr %buf[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {arr}",
                 f"llvm.store %c{i}, %p{i} : i32, !llvm.ptr"]
    body += [f"%ti = llvm.ptrtoint %t : {tt} to i64", f"%si = llvm.ptrtoint %s : {st} to i64",
             "%ci = llvm.ptrtoint %buf : !llvm.ptr to i64", f"%rank = llvm.mlir.constant({rank} : i32) : i32",
             "%what = llvm.mlir.constant(0 : i32) : i32",
             "llvm.call @__emu_bulk_store(%ctx, %what, %ti, %si, %ci, %rank) : "
             "(!llvm.ptr, i32, i64, i64, i64, i32) -> ()"]
    rw.define(sym, ", ".join(params), "\n".join(body), "void")
    rw.uses_cp_async = True  # the thread-exit hook lands the stores still queued
    rw.call(sym, [tmap, src, *coords, rw.const(rw.site())], None, can_abort=True)
    return []


def _bulk_group(what: int):
    def rewrite(op, rw):
        """``nvvm.cp.async.bulk.commit.group`` / ``nvvm.cp.async.bulk.wait_group N [read]`` (see above)."""
        n = ir.IntegerAttr(op.attributes["group"]).value if what == 2 else 0
        z64 = rw.const(0, "i64")
        rw.uses_cp_async = True
        rw.call("__emu_bulk_store", [rw.const(what), z64, z64, z64, rw.const(n)], None, can_abort=True)
        return []
    return rewrite


# ---------------------------------------------------------------- wgmma (sm_90a)
# PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions": wgmma.fence,
# wgmma.commit_group, wgmma.wait_group, wgmma.mma_async (semantics, descriptors and layouts in
# :mod:`.hopper`; the runtime part in :meth:`.runtime.DeviceRuntime.wgmma`).
#
# Asynchrony: the emulator computes D when the last of the warpgroup's 128 threads issues the
# mma_async (a warpgroup collective) and hands every thread its D registers as the op's result at once.
# What is checked: a use of the result in the same block before a wait_group that retires it fails
# when the kernel is built (:func:`check_accumulator_uses`; uses in other blocks, through block
# arguments, would read the final values here, undefined on the GPU); a thread's first mma_async must
# follow a wgmma.fence; the shared memory an mma_async read must be unchanged when the wait_group that
# retires its group runs (a kernel that overwrites a stage before waiting fails the launch); all 128
# threads of the warpgroup must issue the same form.
WG_FENCE, WG_COMMIT, WG_WAIT, WG_MMA = 0, 1, 2, 3


def _wgmma_sync(what: int):
    def rewrite(op, rw):
        """``nvvm.wgmma.fence.aligned`` / ``nvvm.wgmma.commit.group.sync.aligned`` /
        ``nvvm.wgmma.wait.group.sync.aligned N`` (per thread; see above)."""
        n = ir.IntegerAttr(op.attributes["group"]).value if what == WG_WAIT else 0
        if what == WG_FENCE:
            rw.fence()
        rw.call("__emu_wgmma", [rw.const(what), rw.const(n), rw.const(0, "i64")], None, can_abort=True)
        return []
    return rewrite


def _struct_members(ty: str) -> list[str]:
    m = re.fullmatch(r"!llvm\.struct<\((.*)\)>", ty)
    return [x.strip() for x in re.split(r",\s*(?![^<]*>)", m.group(1))] if m else []


def _wgmma_emit(op, rw, n: int, k: int, a: str, b: str, d: str, neg: tuple, kmajor: tuple, satfinite: bool,
                acc_values, desc_a, desc_b, scale_d, a_words=None):
    """The call of the helper that runs one wgmma.mma_async; ``acc_values``: the accumulator struct (one
    value) or its members (inline asm); ``a_words``: the four 32-bit A registers of the form with A in registers
    (then ``desc_a`` is unused); returns D (the op's result struct type)."""
    from . import hopper

    result = str(op.results[0].type)
    members = _struct_members(result)
    words = n // 4 if d == "f16" else n // 2
    elem = {"f32": ("f32",), "s32": ("i32",), "f16": ("i32", "vector<2xf16>")}.get(d, ())
    a_regs = a_words is not None
    if not hopper.valid_form(n, k, a, b, d, *kmajor, a_regs=a_regs) or len(members) != words \
            or members[0] not in elem or len(set(members)) != 1 or (satfinite and d != "s32") \
            or (d == "s32" and any(neg)) or (a_regs and len(a_words) != 4):
        rw.unknown(op)
    form = hopper.form_id(n, k, a, b, d, neg[0], neg[1], kmajor[0], kmajor[1], satfinite, a_regs=a_regs)
    et = members[0]
    scalars = len(acc_values) > 1
    sym = f"__emu_wgmma_{form}_{re.sub(r'[^a-z0-9]', '', et)}_{'s' if scalars else 'v'}"
    buf = f"!llvm.struct<(i64, i64, i32, i32, array<{words} x i32>{', array<4 x i32>' if a_regs else ''})>"
    params = ["%ctx: !llvm.ptr"] + ([f"%a{i}: {et}" for i in range(words)] if scalars else [f"%acc: {result}"]) + \
        ["%da: i64", "%db: i64", "%sd: i32"] + ([f"%x{i}: i32" for i in range(4)] if a_regs else [])
    body = ["%one = llvm.mlir.constant(1 : i32) : i32", f"%buf = llvm.alloca %one x {buf} : (i32) -> !llvm.ptr"]
    for i, (v, t) in enumerate((("%da", "i64"), ("%db", "i64"), ("%sd", "i32"))):
        body += [f"%f{i} = llvm.getelementptr %buf[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {buf}",
                 f"llvm.store {v}, %f{i} : {t}, !llvm.ptr"]
    for i in range(4 if a_regs else 0):  # after the accumulator words (:meth:`.runtime.DeviceRuntime._wgmma_issue`)
        body += [f"%q{i} = llvm.getelementptr %buf[0, 5, {i}] : (!llvm.ptr) -> !llvm.ptr, {buf}",
                 f"llvm.store %x{i}, %q{i} : i32, !llvm.ptr"]
    for i in range(words):
        v = f"%a{i}"
        if not scalars:
            body.append(f"%a{i} = llvm.extractvalue %acc[{i}] : {result}")
        if et != "i32":
            body.append(f"%w{i} = llvm.bitcast %a{i} : {et} to i32")
            v = f"%w{i}"
        body += [f"%p{i} = llvm.getelementptr %buf[0, 4, {i}] : (!llvm.ptr) -> !llvm.ptr, {buf}",
                 f"llvm.store {v}, %p{i} : i32, !llvm.ptr"]
    body += ["%e = llvm.ptrtoint %buf : !llvm.ptr to i64", f"%what = llvm.mlir.constant({WG_MMA} : i32) : i32",
             f"%form = llvm.mlir.constant({form} : i32) : i32",
             "llvm.call @__emu_wgmma(%ctx, %what, %form, %e) : (!llvm.ptr, i32, i32, i64) -> ()",
             f"%s0 = llvm.mlir.poison : {result}"]
    for i in range(words):
        out = "%r" if i == words - 1 else f"%s{i + 1}"
        body.append(f"%l{i} = llvm.load %p{i} : !llvm.ptr -> i32")
        v = f"%l{i}"
        if et != "i32":
            body.append(f"%v{i} = llvm.bitcast %l{i} : i32 to {et}")
            v = f"%v{i}"
        body.append(f"{out} = llvm.insertvalue {v}, %s{i}[{i}] : {result}")
    rw.define(sym, ", ".join(params), "\n".join(body), result)
    return [rw.call(sym, list(acc_values) + [desc_a, desc_b, scale_d] + list(a_words or []), result, can_abort=True)]


_WG_PASS_THROUGH = ("nvvm.wgmma.mma_async", "llvm.inline_asm", "llvm.br", "llvm.cond_br")


def _feeds_only_wgmma(o) -> bool:
    """An ``llvm.extractvalue`` whose value only feeds wgmma inline PTX (convert-nvvm-to-llvm passes the
    accumulator of a chained mma_async member by member)."""
    return o.operation.name == "llvm.extractvalue" and all(
        u.owner.operation.name == "llvm.inline_asm" and "wgmma.mma_async" in str(u.owner.attributes["asm_string"])
        for u in o.results[0].uses)


def check_accumulator_uses(op, rw) -> None:
    """Before rewriting a wgmma.mma_async: a later use of its result in the same block must come after a
    wgmma.wait_group that retires it (after the mma, c commit_groups, then a wait_group N with N < c: the
    mma's group is not among the newest N), unless it is the accumulator of another mma_async or a branch
    operand. Else the launch fails before it starts: on the GPU the registers are not written yet (PTX
    ISA, "wgmma.mma_async": accessing them before the wait is undefined). Uses in other blocks (also
    through block arguments) are not checked."""
    users = [u.owner.operation for u in op.results[0].uses]
    after, commits, retired = False, 0, False
    for o in op.operation.block.operations:
        if o.operation == op.operation:
            after = True
            continue
        if not after:
            continue
        name = o.operation.name
        if name == "nvvm.wgmma.commit.group.sync.aligned":
            commits += 1
        elif name == "nvvm.wgmma.wait.group.sync.aligned":
            retired |= ir.IntegerAttr(o.attributes["group"]).value < commits
        if not retired and any(o.operation == u for u in users) and name not in _WG_PASS_THROUGH \
                and not _feeds_only_wgmma(o):
            raise TilecoreError("the accumulator of a wgmma.mma_async is used before a wgmma.wait_group retires "
                                f"it (undefined in PTX: the registers are not written yet), by '{name}'",
                                format_location(o.location))


def _wgmma_mma_async(op, rw):
    """``nvvm.wgmma.mma_async %descA, %descB, %acc, #nvvm.shape<m = 64, n = N, k = K>,
    D [<f32|f16|s32>, #nvvm.wgmma_scale_out<one|zero>(, <satfinite>)], A [<ta>, #nvvm.wgmma_scale_in<one|neg>,
    <row|col>], B [<tb>, #nvvm.wgmma_scale_in<one|neg>, <row|col>] : !llvm.struct<(...)> -> same`` (PTX ISA
    "wgmma.mma_async"): the forms of :func:`.hopper.valid_form`; layoutA row / layoutB col = K-major
    (imm-trans 0), col / row = MN-major (16-bit types); scale-d zero ignores the input accumulator; neg
    negates A / B (float types); satfinite (s32) saturates instead of wrapping. The accumulator struct:
    N/2 f32 / i32, or (f16) N/4 i32 or vector<2xf16> words. A warpgroup collective."""
    def kw(name: str) -> str:
        return re.findall(r"<(\w+)>", str(op.attributes[name]))[-1]

    m, n, k = (int(x) for x in re.findall(r"= (\d+)", str(op.attributes["shape"])))
    if m != 64:
        rw.unknown(op)
    check_accumulator_uses(op, rw)
    acc, desc_a, desc_b = op.operands
    neg = (kw("scaleA") == "neg", kw("scaleB") == "neg")
    kmajor = (kw("layoutA") == "row", kw("layoutB") == "col")
    sat = "satfinite" in op.attributes
    scale_d = rw.const(int(kw("scaleD") == "one"))
    return _wgmma_emit(op, rw, n, k, kw("typeA"), kw("typeB"), kw("typeD"), neg, kmajor, sat, [acc], desc_a,
                       desc_b, scale_d)


def _asm_wgmma(op, rw, m):
    """``wgmma.mma_async.sync.aligned.m64nNkK.<d>.<a>.<b>[.satfinite]`` as MLIR's convert-nvvm-to-llvm
    writes it (``setp.ne.b32 p, $scale_d, 0`` first; imm-scale-a / -b and imm-trans-a / -b as ``n``
    operands, which must be ``llvm.mlir.constant`` values): the same semantics as the op."""
    n, k, d, a, b, sat = int(m.group(2)), int(m.group(3)), m.group(4), m.group(5), m.group(6), bool(m.group(7))
    words = len(m.group(8).split(","))
    ops = list(op.operands)
    imms = []
    for i in [int(x) for x in re.findall(r"\$(\d+)", m.group(11) or "")]:
        idx = i - words  # operands of the asm: the `words` outputs are tied ("0", "1", ...), not operands
        owner = ops[idx].owner
        if getattr(getattr(owner, "operation", None), "name", "") != "llvm.mlir.constant":
            rw.unknown(op)
        imms.append(ir.IntegerAttr(owner.attributes["value"]).value)
    imms += [1, 1, 0, 0][len(imms):]
    check_accumulator_uses(op, rw)
    sd, da, db = (ops[int(m.group(g)) - words] for g in (1, 9, 10))
    return _wgmma_emit(op, rw, n, k, a, b, d, (imms[0] == -1, imms[1] == -1), (imms[2] == 0, imms[3] == 0), sat,
                       ops[:words], da, db, sd)


def _asm_wgmma_rs(op, rw, m):
    """``wgmma.mma_async.sync.aligned.m64nNk16.<f32|f16>.<f16|bf16>.<f16|bf16> d, {a0, a1, a2, a3}, b-desc, p,
    imm-scale-a, imm-scale-b, imm-trans-b`` (PTX ISA 9.7.15.5.2, the form with A in registers; as
    ``tilecore_cute.mma_lowering.WGMMA_RS_ASM`` writes it: scale-d set from an i32 operand, the immediates
    literal): A is the four .f16x2 registers of each thread (PTX ISA 9.7.15.5.1.1.1, Figure 148;
    :func:`.hopper.a_fragment`), B from shared memory as in the descriptor form."""
    n, k, d, a, b = int(m.group(2)), int(m.group(3)), m.group(4), m.group(5), m.group(6)
    words = len(m.group(7).split(","))
    ops = list(op.operands)
    at = [ops[int(m.group(g)) - words] for g in (1, 8, 9, 10, 11, 12)]  # $N counts the outputs first
    sd, a_words, db = at[0], at[1:5], at[5]
    neg = (m.group(13) == "-1", m.group(14) == "-1")
    check_accumulator_uses(op, rw)
    return _wgmma_emit(op, rw, n, k, a, b, d, neg, (True, m.group(15) == "0"), False, ops[:words],
                       rw.const(0, "i64"), db, sd, a_words=a_words)


# ---------------------------------------------------------------- inline PTX
@dataclass
class AsmRow:
    """An inline PTX string the emulator recognises: ``pattern`` (matched against the asm string with
    runs of white space made one blank, leading / trailing white space dropped), the exact constraint
    string, the operand and result types, and the rewrite ``(op, rw, match) -> values``. Where the
    constraints or operand types vary (``n`` for an operand MLIR knows to be constant, ``r`` else), they
    are patterns matched against the constraint string / the operand types joined by ``", "``."""

    pattern: re.Pattern
    constraints: str | re.Pattern
    operand_types: tuple[str, ...] | re.Pattern
    result_type: str
    rewrite: Callable
    collective: bool = False


def _asm_mma_f8(op, rw, m):
    """``mma.sync.aligned.m16n8k32.row.col.f32.<a>.<b>.f32`` with a, b in e4m3 / e5m2 (sm_89+, PTX ISA
    8.4+; fragments as for s8: PTX ISA, "Matrix Fragments for mma.m16n8k32")."""
    return [_mma_call(rw, f"mma.m16n8k32.{m.group(1)}.{m.group(2)}", "i32", "f32", 4, list(op.operands))]


_F8 = r"(e4m3|e5m2)"
INLINE_ASM: list[AsmRow] = [
    AsmRow(re.compile(rf"mma\.sync\.aligned\.m16n8k32\.row\.col\.f32\.{_F8}\.{_F8}\.f32 "
                      r"\{\$0, ?\$1, ?\$2, ?\$3\}, \{\$4, ?\$5, ?\$6, ?\$7\}, \{\$8, ?\$9\}, "
                      r"\{\$10, ?\$11, ?\$12, ?\$13\};"),
           "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", ("i32",) * 6 + ("f32",) * 4, "!llvm.struct<(f32, f32, f32, f32)>",
           _asm_mma_f8, collective=True),
    # nvvm.mbarrier.try_wait.parity after MLIR's convert-nvvm-to-llvm (a PTX loop around try_wait.parity)
    AsmRow(re.compile(r"\{ \.reg \.pred P1; LAB_WAIT: mbarrier\.try_wait\.parity(\.shared)?\.b64 P1, \[\$0\], \$1, \$2; "
                      r"@P1 bra\.uni DONE; bra\.uni LAB_WAIT; DONE: \}"),
           re.compile(r"[rl],[rn],[rn]"), re.compile(r"!llvm\.ptr(<3>)?, i32, i32"), "",
           lambda op, rw, m: _mbar_try_wait_parity(op, rw), collective=True),
    # nvvm.wgmma.mma_async after convert-nvvm-to-llvm
    AsmRow(re.compile(r"\{ \.reg \.pred p; setp\.ne\.b32 p, \$(\d+), 0; wgmma\.mma_async\.sync\.aligned\."
                      r"m64n(\d+)k(\d+)\.(f32|f16|s32)\.(\w+)\.(\w+)(\.satfinite)? \{(\$\d+(?:, \$\d+)*)\}, "
                      r"\$(\d+), \$(\d+), p((?:, \$\d+)*); \}"),
           re.compile(r"(=[fr],)+(\d+,)+l,l(,[nr])+"), re.compile(r".*"), re.compile(r"!llvm\.struct<.*>"),
           _asm_wgmma, collective=True),
    # wgmma with A from registers (cute's inline PTX: MLIR 22's nvvm.wgmma.mma_async has no such form)
    AsmRow(re.compile(r"\{ \.reg \.pred p; setp\.ne\.b32 p, \$(\d+), 0; wgmma\.mma_async\.sync\.aligned\."
                      r"m64n(\d+)k(\d+)\.(f32|f16)\.(f16|bf16)\.(f16|bf16) \{(\$\d+(?:, \$\d+)*)\}, "
                      r"\{\$(\d+), \$(\d+), \$(\d+), \$(\d+)\}, \$(\d+), p, (-?1), (-?1), ([01]); \}"),
           re.compile(r"(=[fr],)+(\d+,)+r,r,r,r,l,r"), re.compile(r".*"), re.compile(r"!llvm\.struct<.*>"),
           _asm_wgmma_rs, collective=True),
    # nvvm.cp.async.bulk.tensor.shared.cluster.global with a predicate, after convert-nvvm-to-llvm
    AsmRow(re.compile(r"(@\$\d+ )?cp\.async\.bulk\.tensor\.([1-5])d\.shared::cluster\.global\."
                      r"mbarrier::complete_tx::bytes \[\$0\], \[\$1, \{\$\d+(?:, ?\$\d+)*\} ?\], \[\$\d+\];"),
           re.compile(r"l,l(,[nr])+,r(,[nrb])?"), re.compile(r"!llvm\.ptr<7>, !llvm\.ptr, (i32, )+!llvm\.ptr<3>(, i1)?"),
           "", _asm_tma_load, collective=True),
]


def inline_asm(op):
    """``(row, match)`` of :data:`INLINE_ASM` for an ``llvm.inline_asm`` op, or None."""
    asm = " ".join(op.attributes["asm_string"].value.split())
    constraints = op.attributes["constraints"].value if "constraints" in op.attributes else ""
    types = tuple(str(v.type) for v in op.operands)
    res = str(op.results[0].type) if len(op.results) else ""
    for r in INLINE_ASM:
        m = r.pattern.fullmatch(asm)
        if not m or (r.result_type != res if isinstance(r.result_type, str) else not r.result_type.fullmatch(res)):
            continue
        cons_ok = constraints == r.constraints if isinstance(r.constraints, str) else \
            r.constraints.fullmatch(constraints)
        types_ok = types == r.operand_types if isinstance(r.operand_types, tuple) else \
            r.operand_types.fullmatch(", ".join(types))
        if cons_ok and types_ok:
            return r, m
    return None


def _f8_format(op, rw, attr: str) -> int:
    name = str(ir.TypeAttr(op.attributes[attr]).value)
    if name not in F8_FORMATS:
        rw.unknown(op)
    return F8_FORMATS.index(name)


def _no_relu(op, rw) -> None:
    if "relu" in op.attributes and ir.BoolAttr(op.attributes["relu"]).value:
        rw.unknown(op)


def _via_host(op, rw, sym: str, params: str, routine: str, sig: str, body: list[str], ret: str):
    """Replace ``op`` by a call of helper ``sym`` (``params`` after the context) whose ``body`` calls the
    host routine ``routine`` (``sig``, bound in :mod:`.libcalls`) and leaves the result in ``%r``."""
    rw.declare(routine, sig)
    rw.define(sym, f"%ctx: !llvm.ptr, {params}", "\n".join(body), ret)
    return [rw.call(sym, list(op.operands), ret)]


def _cvt_f8x2_to_f16x2(op, rw):
    """``nvvm.convert.f8x2.to.f16x2`` (vector<2xi8> -> vector<2xf16>, no relu)."""
    _no_relu(op, rw)
    fmt = _f8_format(op, rw, "srcType")
    return _via_host(op, rw, f"__emu_cvt_f8x2_{fmt}_to_f16x2", "%v: vector<2xi8>", "__emu_f8x2_to_f16x2",
                     "(i32, i32) -> i32", [
                         f"%k = llvm.mlir.constant({fmt} : i32) : i32", "%w = llvm.bitcast %v : vector<2xi8> to i16",
                         "%x = llvm.zext %w : i16 to i32",
                         "%y = llvm.call @__emu_f8x2_to_f16x2(%k, %x) : (i32, i32) -> i32",
                         "%r = llvm.bitcast %y : i32 to vector<2xf16>"], "vector<2xf16>")


def _cvt_f32x2_to_f8x2(op, rw):
    """``nvvm.convert.f32x2.to.f8x2 a, b`` with rn + satfinite, no relu (i16 or vector<2xi8>)."""
    rnd = str(op.attributes["rnd"]) if "rnd" in op.attributes else ""
    sat = str(op.attributes["sat"]) if "sat" in op.attributes else ""
    if "<rn>" not in rnd or "satfinite" not in sat:
        rw.unknown(op)
    _no_relu(op, rw)
    fmt = _f8_format(op, rw, "dstTy")
    rt = str(op.results[0].type)
    return _via_host(op, rw, f"__emu_cvt_f32x2_to_f8x2_{fmt}_{'v' if rt.startswith('vector') else 's'}",
                     "%a: f32, %b: f32", "__emu_f32x2_to_f8x2", "(i32, f32, f32) -> i32", [
                         f"%k = llvm.mlir.constant({fmt} : i32) : i32",
                         "%y = llvm.call @__emu_f32x2_to_f8x2(%k, %a, %b) : (i32, f32, f32) -> i32",
                         "%h = llvm.trunc %y : i32 to i16", f"%r = llvm.bitcast %h : i16 to {rt}"], rt)


def _cvt_f4x2_to_f16x2(op, rw):
    """``nvvm.convert.f4x2.to.f16x2`` (E2M1 codes in an i8 -> vector<2xf16>, no relu)."""
    _no_relu(op, rw)
    if str(ir.TypeAttr(op.attributes["srcType"]).value) != "f4E2M1FN":
        rw.unknown(op)
    return _via_host(op, rw, "__emu_cvt_f4x2_to_f16x2", "%v: i8", "__emu_f4x2_to_f16x2", "(i32) -> i32", [
        "%x = llvm.zext %v : i8 to i32", "%y = llvm.call @__emu_f4x2_to_f16x2(%x) : (i32) -> i32",
        "%r = llvm.bitcast %y : i32 to vector<2xf16>"], "vector<2xf16>")


def _cvt_f32x2_to_f4x2(op, rw):
    """``nvvm.convert.f32x2.to.f4x2 a, b`` (E2M1, no relu): i8 with a's code in the high 4 bits."""
    _no_relu(op, rw)
    if str(ir.TypeAttr(op.attributes["dstTy"]).value) != "f4E2M1FN":
        rw.unknown(op)
    return _via_host(op, rw, "__emu_cvt_f32x2_to_f4x2", "%a: f32, %b: f32", "__emu_f32x2_to_f4x2",
                     "(f32, f32) -> i32", [
                         "%y = llvm.call @__emu_f32x2_to_f4x2(%a, %b) : (f32, f32) -> i32",
                         "%r = llvm.trunc %y : i32 to i8"], "i8")


def _cvt_float_to_tf32(op, rw):
    """``nvvm.convert.float.to.tf32`` with rna (``cvt.rna.tf32.f32``, no satfinite / relu): the nearest
    tf32 value, ties away from zero, as f32 bits (low 13 bits zero); NaN and infinities unchanged."""
    attrs = {k: str(op.attributes[k]) for k in ("rnd", "sat") if k in op.attributes}
    if "<rna>" not in attrs.get("rnd", "") or "satfinite" in attrs.get("sat", ""):
        rw.unknown(op)
    _no_relu(op, rw)
    rw.define("__emu_cvt_rna_tf32_f32", "%ctx: !llvm.ptr, %v: f32", "\n".join([
        "%b = llvm.bitcast %v : f32 to i32", "%inf = llvm.mlir.constant(2139095040 : i32) : i32",
        "%half = llvm.mlir.constant(4096 : i32) : i32", "%keep = llvm.mlir.constant(-8192 : i32) : i32",
        "%e = llvm.and %b, %inf : i32", "%special = llvm.icmp \"eq\" %e, %inf : i32",
        "%up = llvm.add %b, %half : i32", "%t = llvm.and %up, %keep : i32",
        "%r = llvm.select %special, %b, %t : i1, i32"]), "i32")
    return [rw.call("__emu_cvt_rna_tf32_f32", list(op.operands), "i32")]


def _fence(op, rw):
    rw.fence()
    return []


# ---------------------------------------------------------------- clusters
# PTX ISA, "Parallel Synchronization and Communication Instructions: barrier.cluster": ``nvvm.cluster.arrive
# [{aligned}]`` (barrier.cluster.arrive[.aligned], release semantics), ``nvvm.cluster.arrive.relaxed
# [{aligned}]`` (.relaxed), ``nvvm.cluster.wait [{aligned}]`` (barrier.cluster.wait, acquire semantics): see
# :meth:`.runtime.DeviceRuntime.cluster_barrier_op`. The runtime's lock orders the memory of the arriving and
# the waiting threads, so release and relaxed differ in nothing here.
def _cluster_barrier(what: int):
    def rewrite(op, rw):
        rw.fence()
        rw.call("__emu_cluster_barrier", [rw.const(what)], None, can_abort=True)
        rw.fence()
        return []
    return rewrite


def _mapa(op, rw):
    """``nvvm.mapa %a, %rank : !llvm.ptr<3> -> !llvm.ptr<7>`` (mapa.shared::cluster) or ``!llvm.ptr -> !llvm.ptr``
    (generic) (PTX ISA, "Data Movement and Conversion Instructions: mapa"): the address of the same variable
    in the shared memory of the CTA of that rank of the cluster (:meth:`.runtime.DeviceRuntime.mapa`; a rank
    outside the cluster or an address outside shared memory fails the launch at this op)."""
    a, r = op.operands
    at, rt_ = str(a.type), str(op.results[0].type)
    if str(r.type) != "i32" or memcheck.space_of(at) not in (0, 3, 7) or memcheck.space_of(rt_) not in (0, 7):
        rw.unknown(op)
    sym = f"__emu_mapa_{re.sub(r'[^a-z0-9]', '', at + rt_)}"
    rw.define(sym, f"%ctx: !llvm.ptr, %a: {at}, %rank: i32, %site: i32",
              f"%ai = llvm.ptrtoint %a : {at} to i64\n"
              "%x = llvm.call @__emu_mapa(%ctx, %ai, %rank, %site) : (!llvm.ptr, i64, i32, i32) -> i64\n"
              f"%r = llvm.inttoptr %x : i64 to {rt_}", rt_)
    return [rw.call(sym, [a, r, rw.const(rw.site())], rt_, can_abort=True)]


# PTX ISA, "Parallel Synchronization and Communication Instructions: griddepcontrol" (programmatic
# dependent launch): ``wait`` waits until the prerequisite grids have completed and their memory is
# visible; ``launch_dependents`` lets the grids that depend on this one be scheduled early. A single
# emulated launch has neither prerequisite nor dependent grids, so both do nothing.
GRID_DEP_ACTIONS = ("wait", "launch_dependents")


def _griddepcontrol(op, rw):
    if _kind(op, "kind") not in GRID_DEP_ACTIONS:
        rw.unknown(op)
    return []


def _setmaxnreg(op, rw):
    """``nvvm.setmaxregister increase|decrease N`` (PTX ISA, "Miscellaneous Instructions: setmaxnreg"): asks the
    warpgroup's register allocation to grow or shrink to N per thread (MLIR's verifier checks N: a multiple of
    8 in [24, 256]). It changes no register's value, so the emulator has nothing to do."""
    return []


NVVM_OPS: dict[str, OpRow] = {
    "nvvm.barrier0": OpRow(_barrier, collective=True),
    "nvvm.barrier": OpRow(_barrier, collective=True),
    "nvvm.barrier.arrive": OpRow(_barrier_arrive, collective=True),
    "nvvm.bar.warp.sync": OpRow(_warp_sync, collective=True),
    "nvvm.shfl.sync": OpRow(_shfl, collective=True),
    "nvvm.vote.sync": OpRow(_vote, collective=True),
    "nvvm.match.sync": OpRow(_match, collective=True),
    "nvvm.redux.sync": OpRow(_redux, collective=True),
    "nvvm.elect.sync": OpRow(_elect, collective=True),
    "nvvm.mma.sync": OpRow(_mma_sync, collective=True),
    "nvvm.ldmatrix": OpRow(_ldmatrix, collective=True),
    "nvvm.cp.async.shared.global": OpRow(_cp_async),
    "nvvm.cp.async.commit.group": OpRow(_cp_async_group(CP_ASYNC_COMMIT)),
    "nvvm.cp.async.wait.group": OpRow(_cp_async_group(CP_ASYNC_WAIT)),
    "nvvm.convert.f8x2.to.f16x2": OpRow(_cvt_f8x2_to_f16x2),
    "nvvm.convert.f32x2.to.f8x2": OpRow(_cvt_f32x2_to_f8x2),
    "nvvm.convert.f32x2.to.f4x2": OpRow(_cvt_f32x2_to_f4x2),
    "nvvm.convert.f4x2.to.f16x2": OpRow(_cvt_f4x2_to_f16x2),
    "nvvm.convert.float.to.tf32": OpRow(_cvt_float_to_tf32),
    # Fences order memory between real host threads: a host seq_cst fence.
    "nvvm.memory.barrier": OpRow(_fence), "nvvm.fence.sc.cluster": OpRow(_fence),
    "nvvm.fence.proxy": OpRow(_fence), "nvvm.fence.proxy.acquire": OpRow(_fence),
    "nvvm.fence.proxy.release": OpRow(_fence),
    # fence.{acquire,release}.sync_restrict::shared::{cluster,cta}.cluster and the proxy form (PTX ISA "membar /
    # fence", sync_restrict): ordering with the cluster's mbarrier operations, a host fence too
    "nvvm.fence.sync_restrict": OpRow(_fence), "nvvm.fence.proxy.sync_restrict": OpRow(_fence),
    "nvvm.griddepcontrol": OpRow(_griddepcontrol), "nvvm.setmaxregister": OpRow(_setmaxnreg),
    "nvvm.cluster.arrive": OpRow(_cluster_barrier(0), collective=True),
    "nvvm.cluster.arrive.relaxed": OpRow(_cluster_barrier(0), collective=True),
    "nvvm.cluster.wait": OpRow(_cluster_barrier(1), collective=True),
    "nvvm.mapa": OpRow(_mapa),
    "nvvm.mbarrier.init": OpRow(_mbar_init, collective=True),
    "nvvm.mbarrier.arrive": OpRow(_mbar_arrive("arrive"), collective=True),
    "nvvm.mbarrier.arrive_drop": OpRow(_mbar_arrive("arrive_drop"), collective=True),
    "nvvm.mbarrier.arrive.nocomplete": OpRow(_mbar_arrive("arrive.nocomplete"), collective=True),
    "nvvm.mbarrier.arrive_drop.nocomplete": OpRow(_mbar_arrive("arrive_drop.nocomplete"), collective=True),
    "nvvm.mbarrier.arrive.expect_tx": OpRow(_mbar_expect_tx, collective=True),
    "nvvm.mbarrier.expect_tx": OpRow(_mbar_tx("expect_tx"), collective=True),
    "nvvm.mbarrier.complete_tx": OpRow(_mbar_tx("complete_tx"), collective=True),
    "nvvm.mbarrier.test.wait": OpRow(_mbar_wait(False), collective=True),
    "nvvm.mbarrier.try_wait": OpRow(_mbar_wait(True), collective=True),
    "nvvm.mbarrier.try_wait.parity": OpRow(_mbar_try_wait_parity, collective=True),
    "nvvm.mbarrier.inval": OpRow(_mbar_inval, collective=True),
    "nvvm.cp.async.mbarrier.arrive": OpRow(_cp_async_mbarrier_arrive, collective=True),
    "nvvm.fence.mbarrier.init": OpRow(_fence),
    "nvvm.wgmma.fence.aligned": OpRow(_wgmma_sync(WG_FENCE), collective=True),
    "nvvm.wgmma.commit.group.sync.aligned": OpRow(_wgmma_sync(WG_COMMIT), collective=True),
    "nvvm.wgmma.wait.group.sync.aligned": OpRow(_wgmma_sync(WG_WAIT), collective=True),
    "nvvm.wgmma.mma_async": OpRow(_wgmma_mma_async, collective=True),
    "nvvm.cp.async.bulk.tensor.shared.cluster.global": OpRow(_tma_load, collective=True),
    "nvvm.cp.async.bulk.tensor.global.shared.cta": OpRow(_tma_store),
    "nvvm.cp.async.bulk.commit.group": OpRow(_bulk_group(1)),
    "nvvm.cp.async.bulk.wait_group": OpRow(_bulk_group(2)),
}


@dataclass
class RuntimeSymbol:
    """A runtime symbol a plugin's rows call: its MLIR ``signature`` (context pointer first, as in
    :data:`RUNTIME_SYMBOLS`), the ctypes ``proto`` of the callback, ``handler(rt, ctx, *args)`` and the value
    returned when the handler raises (the launch then fails with an internal error)."""

    signature: str
    proto: object
    handler: Callable
    fallback: object = None


@dataclass
class EmulatorOps:
    """A plugin's contribution to the emulator (see the module docstring): ``name`` (unique), ``rows``,
    ``symbols``, ``new_cta(rt)`` (the per-CTA state, or None) and ``cta_end(rt, ctx, state)`` (or None)."""

    name: str
    rows: dict[str, OpRow] = field(default_factory=dict)
    symbols: dict[str, RuntimeSymbol] = field(default_factory=dict)
    new_cta: Callable | None = None
    cta_end: Callable | None = None
    plugin: str = ""


def extensions() -> list[EmulatorOps]:
    """The emulator extensions of the loaded plugins."""
    from ..plugins import get_plugin_manager

    return list(get_plugin_manager().emulator_ops().values())


def _ext_row(ext: EmulatorOps, r: OpRow) -> OpRow:
    def rewrite(op, rw):
        for sym, s in ext.symbols.items():
            rw.declare(sym, s.signature)
        return r.rewrite(op, rw)
    return OpRow(rewrite, r.collective)


def row(op_name: str) -> OpRow | None:
    """The table row for an nvvm op (special registers share one row; then the core's table, then the
    plugins' rows)."""
    if op_name.startswith("nvvm.read.ptx.sreg."):
        return OpRow(_sreg)
    if op_name in NVVM_OPS:
        return NVVM_OPS[op_name]
    for ext in extensions():
        if op_name in ext.rows:
            return _ext_row(ext, ext.rows[op_name])
    return None


# ---------------------------------------------------------------- integer division
# On the host an integer division by zero (and the signed MIN / -1) traps: SIGFPE would kill the
# process. On the GPU they do not trap (PTX ISA, "Integer Arithmetic Instructions: div": "division
# by zero yields an unspecified, machine-specific value"; rem likewise); the emulator gives all ones
# for a quotient by zero and the dividend for a remainder by zero, and wraps MIN / -1 to MIN
# (MIN % -1 is 0), as two's complement arithmetic does.
INT_DIVISIONS: dict[str, tuple[bool, bool]] = {  # llvm op -> (signed, remainder)
    "llvm.sdiv": (True, False), "llvm.udiv": (False, False), "llvm.srem": (True, True), "llvm.urem": (False, True),
}


# Shifts by a run-time amount as the GPU does them. LLVM's shl / lshr / ashr by the width or more is poison;
# the host masks the amount (x86: x << (n % 32)), while PTX's shl / shr clamp it: "shift amounts greater than
# the register width N are clamped to N" (PTX ISA, "shl" / "shr", Logic and Shift Instructions), so shl and
# shr.u give 0 and shr.s the sign (tileiras' SHF.L.U32 / SHF.R.S32.HI alike). The amount is unsigned.
SHIFTS = ("llvm.shl", "llvm.lshr", "llvm.ashr")


def _int_helpers(ty: str):
    """(bit width, ``const(v)`` -> the MLIR text of a constant ``v`` of ``ty``, the i1 type of a compare) of an
    integer type or vector of them, for the helpers below written as MLIR text."""
    width = int(re.search(r"i(\d+)>?$", ty).group(1))

    def const(v: int) -> str:
        return f"llvm.mlir.constant(dense<{v}> : {ty}) : {ty}" if ty.startswith("vector") else \
            f"llvm.mlir.constant({v} : {ty}) : {ty}"

    return width, const, re.sub(r"i\d+>$", "i1>", ty) if ty.startswith("vector") else "i1"


def is_constant(value) -> bool:
    """Whether ``value`` is the result of an ``llvm.mlir.constant`` (a shift by it needs no guard)."""
    owner = value.owner  # an op, or the block of a block argument
    return getattr(getattr(owner, "operation", owner), "name", None) == "llvm.mlir.constant"


def clamped_shift(op, rw):
    """Replace a shift (scalar or vector) by a run-time amount by a helper that clamps the amount as PTX does."""
    name = op.operation.name
    ty = str(op.results[0].type)
    width, const, pred = _int_helpers(ty)
    body = [f"%w = {const(width)}", f'%big = llvm.icmp "uge" %d, %w : {ty}', f"%last = {const(width - 1)}",
            f"%d1 = llvm.select %big, %last, %d : {pred}, {ty}"]
    if name == "llvm.ashr":  # by width - 1: every bit is the sign
        body.append(f"%r = {name} %a, %d1 : {ty}")
    else:
        body += [f"%q = {name} %a, %d1 : {ty}", f"%z = {const(0)}", f"%r = llvm.select %big, %z, %q : {pred}, {ty}"]
    sym = f"__emu_{name.split('.')[1]}_{re.sub(r'[^a-z0-9]', '', ty)}"
    rw.define(sym, f"%ctx: !llvm.ptr, %a: {ty}, %d: {ty}", "\n".join(body), ty)
    return [rw.call(sym, list(op.operands), ty)]


# Float -> integer conversions as the GPU does them. On the host an out-of-range or NaN input of
# llvm.fptosi / fptoui is undefined (x86 gives 0x80000000, AVX-512 0xffffffff, ...); the PTX the NVPTX back
# end emits for them is `cvt.rzi.{s,u}N.fM`, and "for float-to-integer conversions, the result is clamped to
# the destination range by default" (PTX ISA, "cvt", Data Movement and Conversion Instructions), NaN -> 0:
# LLVM's fpto{s,u}i.sat. PTX has no 8-bit registers: an i8 (or i1) result is cvt.rzi.{s,u}16 then truncated
# (tileiras' F2I.S16 for f32 -> i8 alike), so it saturates to 16 bits and wraps to 8.
FLOAT_TO_INT: dict[str, str] = {"llvm.fptosi": "llvm.fptosi.sat", "llvm.fptoui": "llvm.fptoui.sat"}


def saturating_float_to_int(op, rw):
    """Replace an ``llvm.fptosi`` / ``llvm.fptoui`` (scalar or vector) by the saturating conversion PTX does."""
    name = op.operation.name
    src, dst = str(op.operands[0].type), str(op.results[0].type)
    vec = re.match(r"vector<(\d+)x", dst)
    width = int(re.search(r"i(\d+)>?$", dst).group(1))
    reg = dst if width >= 16 else re.sub(r"i\d+(>?)$", r"i16\1", dst)

    def mangle(ty: str) -> str:
        return (f"v{vec.group(1)}" if vec else "") + re.search(r"(\w+)>?$", ty).group(1)

    body, arg = [], "%a"
    if re.search(r"(f16|bf16)>?$", src):  # exact widening first: the host's conversions start from f32
        wide = re.sub(r"b?f16(>?)$", r"f32\1", src)
        body.append(f"%w = llvm.fpext %a : {src} to {wide}")
        src, arg = wide, "%w"
    conv = "%r" if reg == dst else "%s"
    body.append(f'{conv} = llvm.call_intrinsic "{FLOAT_TO_INT[name]}.{mangle(reg)}.{mangle(src)}"({arg}) : ({src}) -> {reg}')
    if reg != dst:
        body.append(f"%r = llvm.trunc %s : {reg} to {dst}")
    sym = f"__emu_{name.split('.')[1]}_{re.sub(r'[^a-z0-9]', '', str(op.operands[0].type) + dst)}"
    rw.define(sym, f"%ctx: !llvm.ptr, %a: {op.operands[0].type}", "\n".join(body), dst)
    return [rw.call(sym, list(op.operands), dst)]


def guarded_division(op, rw):
    """Replace an integer division / remainder (scalar or vector) by a helper that never traps."""
    name = op.operation.name
    signed, remainder = INT_DIVISIONS[name]
    ty = str(op.results[0].type)
    width, const, pred = _int_helpers(ty)
    body = [f"%z = {const(0)}", f"%one = {const(1)}", f'%bad = llvm.icmp "eq" %d, %z : {ty}']
    fix = "%bad"  # divide by 1 instead where the division would trap
    if signed:
        body += [f"%min = {const(-(1 << (width - 1)))}", f"%m1 = {const(-1)}", f'%amin = llvm.icmp "eq" %a, %min : {ty}',
                 f'%dm1 = llvm.icmp "eq" %d, %m1 : {ty}', f"%ovf = llvm.and %amin, %dm1 : {pred}",
                 f"%fix = llvm.or %bad, %ovf : {pred}"]
        fix = "%fix"
    body += [f"%d1 = llvm.select {fix}, %one, %d : {pred}, {ty}", f"%q = {name} %a, %d1 : {ty}"]
    if remainder:
        body.append(f"%r = llvm.select %bad, %a, %q : {pred}, {ty}")
    else:
        body += [f"%all = {const(-1)}", f"%r = llvm.select %bad, %all, %q : {pred}, {ty}"]
    sym = f"__emu_{name.split('.')[1]}_{re.sub(r'[^a-z0-9]', '', ty)}"
    rw.define(sym, f"%ctx: !llvm.ptr, %a: {ty}, %d: {ty}", "\n".join(body), ty)
    return [rw.call(sym, list(op.operands), ty)]


# ---------------------------------------------------------------- external calls
# callee -> (runtime symbol, its MLIR signature without the leading ctx, can abort)
CALLS: dict[str, tuple[str, str, bool]] = {
    "vprintf": ("__emu_vprintf", "(!llvm.ptr, !llvm.ptr) -> i32", False),
    "__assertfail": ("__emu_assertfail", "(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()", True),
}

# runtime symbols (bound to Python callbacks): name -> MLIR signature, ctx first
RUNTIME_SYMBOLS: dict[str, str] = {
    "__emu_barrier": "(!llvm.ptr, i32, i32, i32, i32) -> i32",
    "__emu_barrier_arrive": "(!llvm.ptr, i32, i32) -> ()",
    "__emu_warp": "(!llvm.ptr, i32, i32, i64, i32, i32) -> i64",
    "__emu_vprintf": "(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32",
    "__emu_assertfail": "(!llvm.ptr, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()",
    "__emu_clock": "(!llvm.ptr) -> i64",
    "__emu_cta_done": "(!llvm.ptr) -> ()",
    "__emu_spin": "(!llvm.ptr, i32) -> ()",
    "__emu_fault": "(!llvm.ptr, i64, i64, i64, i32, i32, i32) -> ()",
    "__emu_cp_async": "(!llvm.ptr, i32, i64, i64, i32, i32) -> ()",
    "__emu_mbarrier": "(!llvm.ptr, i32, i64, i64, i32) -> i64",
    "__emu_wgmma": "(!llvm.ptr, i32, i32, i64) -> ()",
    "__emu_tma": "(!llvm.ptr, i64, i64, i64, i64, i32) -> ()",
    "__emu_bulk_store": "(!llvm.ptr, i32, i64, i64, i64, i32) -> ()",
    "__emu_cluster_barrier": "(!llvm.ptr, i32) -> ()",
    "__emu_mapa": "(!llvm.ptr, i64, i32, i32) -> i64",
}

# memory ops checked against the buffers their address space may touch (:mod:`.memcheck`):
# op -> (pointer operand, operand whose type is accessed or None for the result, kind of access)
MEMORY_OPS: dict[str, tuple[int, int | None, int]] = {
    "llvm.load": (0, None, LOAD), "llvm.store": (1, 0, STORE), "llvm.atomicrmw": (0, 1, ATOMIC),
    "llvm.cmpxchg": (0, 1, ATOMIC),
}

# bulk memory intrinsics, checked the same way: op -> (((pointer operand, kind of access), ...),
# length operand in bytes or None for the op's ``len`` attribute)
BULK_MEMORY_OPS: dict[str, tuple[tuple[tuple[int, int], ...], int | None]] = {
    "llvm.intr.memcpy": (((0, STORE), (1, LOAD)), 2), "llvm.intr.memmove": (((0, STORE), (1, LOAD)), 2),
    "llvm.intr.memset": (((0, STORE),), 2), "llvm.intr.memcpy.inline": (((0, STORE), (1, LOAD)), None),
    "llvm.intr.memset.inline": (((0, STORE),), None),
}
