"""MLIR text of the host-side helpers every emulated module gets.

``__emu_set_thread(ctx, cta, t)`` fills the per-thread slots from a linear CTA
index and a linear thread index; ``__emu_drive(ctx, args...)`` (generated per
kernel by :func:`driver`) loops over the CTAs ``[CTA_BEGIN, CTA_END)`` and the
threads ``[T_BEGIN, T_END)`` of each, calling the kernel natively. Run
sequentially it is one call for the whole grid; run concurrently each host
thread drives one GPU thread and ``__emu_cta_done`` joins them at CTA ends.
"""

from __future__ import annotations

from . import context as C
from . import memcheck


def _ld(name: str, slot: int) -> str:
    return (f"%{name}_p = llvm.getelementptr %ctx[{slot}] : (!llvm.ptr) -> !llvm.ptr, i32\n"
            f"  %{name} = llvm.load %{name}_p : !llvm.ptr -> i32\n")


def _st(value: str, slot: int, tag: str) -> str:
    return (f"  %s{tag} = llvm.getelementptr %ctx[{slot}] : (!llvm.ptr) -> !llvm.ptr, i32\n"
            f"  llvm.store {value}, %s{tag} : i32, !llvm.ptr\n")


def _ld64(name: str, byte: int) -> str:
    return (f"%{name}_p = llvm.getelementptr %ctx[{byte}] : (!llvm.ptr) -> !llvm.ptr, i8\n"
            f"  %{name} = llvm.load %{name}_p : !llvm.ptr -> !llvm.ptr\n")


def _split3(lin: str, nx: str, ny: str, out: str) -> str:
    """x, y, z of a linear index over an (nx, ny, *) box."""
    return (f"  %{out}x = llvm.urem {lin}, {nx} : i32\n"
            f"  %{out}q = llvm.udiv {lin}, {nx} : i32\n"
            f"  %{out}y = llvm.urem %{out}q, {ny} : i32\n"
            f"  %{out}z = llvm.udiv %{out}q, {ny} : i32\n")


SET_THREAD = (
    "llvm.func internal @__emu_set_thread(%ctx: !llvm.ptr, %c: i32, %t: i32) {\n  "
    + _ld("ntx", C.NTID) + "  " + _ld("nty", C.NTID + 1) + "  " + _ld("ncx", C.NCTAID) + "  "
    + _ld("ncy", C.NCTAID + 1)
    + _split3("%t", "%ntx", "%nty", "t") + _split3("%c", "%ncx", "%ncy", "c")
    + "  %k31 = llvm.mlir.constant(31 : i32) : i32\n  %k5 = llvm.mlir.constant(5 : i32) : i32\n"
    "  %lane = llvm.and %t, %k31 : i32\n  %warp = llvm.lshr %t, %k5 : i32\n"
    + _st("%tx", C.TID, "0") + _st("%ty", C.TID + 1, "1") + _st("%tz", C.TID + 2, "2")
    + _st("%cx", C.CTAID, "3") + _st("%cy", C.CTAID + 1, "4") + _st("%cz", C.CTAID + 2, "5")
    + _st("%lane", C.LANEID, "6") + _st("%warp", C.WARPID, "7") + _st("%t", C.LINEAR_TID, "8")
    + "  llvm.return\n}\n"
)

# Cluster launches: ``%c`` is the cluster's linear index, the CTA's rank in its cluster is the context's
# CLUSTER_RANK (fixed per host thread); ctaid = clusterid * cluster_nctaid + cluster_ctaid per axis, the
# rank x-fastest over the cluster's CTAs (PTX ISA "Cluster of Cooperative Thread Arrays", "%cluster_ctarank").
SET_THREAD_CLUSTER = (
    "llvm.func internal @__emu_set_thread(%ctx: !llvm.ptr, %c: i32, %t: i32) {\n  "
    + _ld("ntx", C.NTID) + "  " + _ld("nty", C.NTID + 1) + "  " + _ld("nkx", C.NCLUSTERID) + "  "
    + _ld("nky", C.NCLUSTERID + 1) + "  " + _ld("cdx", C.CLUSTER_NCTAID) + "  " + _ld("cdy", C.CLUSTER_NCTAID + 1)
    + "  " + _ld("cdz", C.CLUSTER_NCTAID + 2) + "  " + _ld("rank", C.CLUSTER_RANK)
    + _split3("%t", "%ntx", "%nty", "t") + _split3("%c", "%nkx", "%nky", "k") + _split3("%rank", "%cdx", "%cdy", "r")
    + "".join(f"  %m{a} = llvm.mul %k{a}, %cd{a} : i32\n  %c{a} = llvm.add %m{a}, %r{a} : i32\n" for a in "xyz")
    + "  %k31 = llvm.mlir.constant(31 : i32) : i32\n  %k5 = llvm.mlir.constant(5 : i32) : i32\n"
    "  %lane = llvm.and %t, %k31 : i32\n  %warp = llvm.lshr %t, %k5 : i32\n"
    + _st("%tx", C.TID, "0") + _st("%ty", C.TID + 1, "1") + _st("%tz", C.TID + 2, "2")
    + _st("%cx", C.CTAID, "3") + _st("%cy", C.CTAID + 1, "4") + _st("%cz", C.CTAID + 2, "5")
    + _st("%lane", C.LANEID, "6") + _st("%warp", C.WARPID, "7") + _st("%t", C.LINEAR_TID, "8")
    + _st("%kx", C.CLUSTERID, "9") + _st("%ky", C.CLUSTERID + 1, "10") + _st("%kz", C.CLUSTERID + 2, "11")
    + _st("%rx", C.CLUSTER_CTAID, "12") + _st("%ry", C.CLUSTER_CTAID + 1, "13")
    + _st("%rz", C.CLUSTER_CTAID + 2, "14")
    + "  llvm.return\n}\n"
)

# ``__emu_smem_var(ctx, k)``: the running CTA's instance of static shared variable ``k`` (cluster launches).
SMEM_VAR = (
    "llvm.func internal @__emu_smem_var(%ctx: !llvm.ptr, %k: i32) -> !llvm.ptr<3> {\n  "
    + _ld64("tab", C.SMEM_VARS_PTR_BYTE)
    + "  %p = llvm.getelementptr %tab[%k] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
    "  %a = llvm.load %p : !llvm.ptr -> i64\n  %r = llvm.inttoptr %a : i64 to !llvm.ptr<3>\n"
    "  llvm.return %r : !llvm.ptr<3>\n}\n"
)

ABORTED = (
    "llvm.func internal @__emu_aborted(%ctx: !llvm.ptr) -> i1 {\n  " + _ld("a", C.ABORT)
    + "  %z = llvm.mlir.constant(0 : i32) : i32\n  %r = llvm.icmp \"ne\" %a, %z : i32\n  llvm.return %r : i1\n}\n"
)

DYN_SMEM = (
    "llvm.func internal @__emu_dyn_smem(%ctx: !llvm.ptr) -> !llvm.ptr<3> {\n"
    f"  %p = llvm.getelementptr %ctx[{C.SHARED_PTR_BYTE}] : (!llvm.ptr) -> !llvm.ptr, i8\n"
    "  %s = llvm.load %p : !llvm.ptr -> !llvm.ptr\n"
    "  %r = llvm.addrspacecast %s : !llvm.ptr to !llvm.ptr<3>\n  llvm.return %r : !llvm.ptr<3>\n}\n"
)


def driver(kernel: str, param_types: list[str]) -> str:
    """``__emu_drive(ctx, params...)``: the CTA x thread loop around ``kernel``."""
    params = "".join(f", %a{i}: {t}" for i, t in enumerate(param_types))
    args = ", ".join([f"%a{i}" for i in range(len(param_types))] + ["%ctx"])
    sig = ", ".join(list(param_types) + ["!llvm.ptr"])
    return (
        f"llvm.func @__emu_drive(%ctx: !llvm.ptr{params}) {{\n  "
        + _ld("cb", C.CTA_BEGIN) + "  " + _ld("ce", C.CTA_END) + "  " + _ld("tb", C.T_BEGIN) + "  "
        + _ld("te", C.T_END) + "  " + _ld("conc", C.CONCURRENT)
        + "  %one = llvm.mlir.constant(1 : i32) : i32\n  %zero = llvm.mlir.constant(0 : i32) : i32\n"
        "  llvm.br ^cta(%cb : i32)\n"
        "^cta(%c: i32):\n  %cm = llvm.icmp \"slt\" %c, %ce : i32\n  llvm.cond_br %cm, ^threads(%tb : i32), ^exit\n"
        "^threads(%t: i32):\n  %tm = llvm.icmp \"slt\" %t, %te : i32\n  llvm.cond_br %tm, ^body, ^cta_end\n"
        "^body:\n  llvm.call @__emu_set_thread(%ctx, %c, %t) : (!llvm.ptr, i32, i32) -> ()\n"
        f"  llvm.call @{kernel}({args}) : ({sig}) -> ()\n"
        "  %ab = llvm.call @__emu_aborted(%ctx) : (!llvm.ptr) -> i1\n"
        "  %tn = llvm.add %t, %one : i32\n  llvm.cond_br %ab, ^exit, ^threads(%tn : i32)\n"
        "^cta_end:\n  %isc = llvm.icmp \"ne\" %conc, %zero : i32\n  llvm.cond_br %isc, ^join, ^next\n"
        "^join:\n  llvm.call @__emu_cta_done(%ctx) : (!llvm.ptr) -> ()\n"
        "  %ab2 = llvm.call @__emu_aborted(%ctx) : (!llvm.ptr) -> i1\n  llvm.cond_br %ab2, ^exit, ^next\n"
        "^next:\n  %cn = llvm.add %c, %one : i32\n  llvm.br ^cta(%cn : i32)\n"
        "^exit:\n  llvm.return\n}\n"
    )


# __emu_in(tab, n, stride, a, end): some entry of the table (``n`` entries of ``stride`` i64 words,
# ``[lo, hi)`` first) holds all of ``[a, end)``.
IN_TABLE = (
    "llvm.func internal @__emu_in(%tab: !llvm.ptr, %n: i64, %stride: i64, %a: i64, %end: i64) -> i1 {\n"
    "  %z = llvm.mlir.constant(0 : i64) : i64\n  %one = llvm.mlir.constant(1 : i64) : i64\n"
    "  %no = llvm.mlir.constant(false) : i1\n  %yes = llvm.mlir.constant(true) : i1\n"
    "  llvm.br ^loop(%z : i64)\n"
    "^loop(%i: i64):\n  %more = llvm.icmp \"slt\" %i, %n : i64\n  llvm.cond_br %more, ^body, ^out(%no : i1)\n"
    "^body:\n  %w = llvm.mul %i, %stride : i64\n  %w1 = llvm.add %w, %one : i64\n"
    "  %plo = llvm.getelementptr %tab[%w] : (!llvm.ptr, i64) -> !llvm.ptr, i64\n"
    "  %phi = llvm.getelementptr %tab[%w1] : (!llvm.ptr, i64) -> !llvm.ptr, i64\n"
    "  %lo = llvm.load %plo : !llvm.ptr -> i64\n  %hi = llvm.load %phi : !llvm.ptr -> i64\n"
    "  %ge = llvm.icmp \"uge\" %a, %lo : i64\n  %le = llvm.icmp \"ule\" %end, %hi : i64\n"
    "  %in = llvm.and %ge, %le : i1\n  %inext = llvm.add %i, %one : i64\n"
    "  llvm.cond_br %in, ^out(%yes : i1), ^loop(%inext : i64)\n"
    "^out(%r: i1):\n  llvm.return %r : i1\n}\n"
)


def check(space: int) -> str:
    """``__emu_check_as<space>(ctx, p, size, align, what, site) -> ptr``: ``p`` when the access
    ``[p, p + size)`` is aligned to ``align`` and lies in one buffer of the tables its address space
    may touch (:data:`.memcheck.SPACES`); otherwise ``__emu_fault`` records the error and sets the
    abort flag (unless the thread already aborted), and the result is the launch's sink.
    ``what``: the kind of access (:data:`.memcheck.LOAD`, ``STORE``, ``ATOMIC``); ``site``: the
    access's index in the list of source locations of the module's checked accesses. Zero bytes are
    always fine. Never inlined: the kernel's code gets one call per access and no branch."""
    ptr = memcheck.pointer_type(space)
    tables = memcheck.space_info(space)[1]
    lines = [f"llvm.func internal @__emu_check_as{space}(%ctx: !llvm.ptr, %p: {ptr}, %size: i64, %align: i64, "
             f"%what: i32, %site: i32) -> {ptr} attributes {{no_inline}} {{",
             f"  %a = llvm.ptrtoint %p : {ptr} to i64", "  %end = llvm.add %a, %size : i64",
             "  %z = llvm.mlir.constant(0 : i64) : i64", "  %one = llvm.mlir.constant(1 : i64) : i64",
             f"  %space = llvm.mlir.constant({space} : i32) : i32",
             f"  %misaligned = llvm.mlir.constant({memcheck.MISALIGNED} : i32) : i32",
             "  %empty = llvm.icmp \"eq\" %size, %z : i64", "  llvm.cond_br %empty, ^ok, ^align",
             "^align:", "  %am = llvm.sub %align, %one : i64", "  %mis = llvm.and %a, %am : i64",
             "  %al = llvm.icmp \"eq\" %mis, %z : i64", "  %wm = llvm.or %what, %misaligned : i32",
             "  llvm.cond_br %al, ^t0, ^bad(%wm : i32)"]
    for k, t in enumerate(tables):
        byte, slot, stride = memcheck.TABLES[t]
        nxt = f"^t{k + 1}" if k + 1 < len(tables) else "^bad(%what : i32)"
        lines += [f"^t{k}:", "  " + _ld64(f"tab{k}", byte) + "  " + _ld(f"n{k}", slot).rstrip("\n"),
                  f"  %n{k}w = llvm.sext %n{k} : i32 to i64", f"  %s{k} = llvm.mlir.constant({stride} : i64) : i64",
                  f"  %in{k} = llvm.call @__emu_in(%tab{k}, %n{k}w, %s{k}, %a, %end) : "
                  "(!llvm.ptr, i64, i64, i64, i64) -> i1",
                  f"  llvm.cond_br %in{k}, ^ok, {nxt}"]
    sink = "%sc" if space else "%s"
    lines += ["^bad(%w: i32):", "  " + _ld("ab", C.ABORT).rstrip("\n"), "  %z32 = llvm.mlir.constant(0 : i32) : i32",
              "  %first = llvm.icmp \"eq\" %ab, %z32 : i32", "  llvm.cond_br %first, ^report(%w : i32), ^sink",
              "^report(%rw: i32):",
              "  llvm.call @__emu_fault(%ctx, %a, %size, %align, %space, %rw, %site) : "
              "(!llvm.ptr, i64, i64, i64, i32, i32, i32) -> ()", "  llvm.br ^sink",
              "^sink:", "  " + _ld64("s", C.SINK_PTR_BYTE).rstrip("\n")]
    if space:
        lines.append(f"  %sc = llvm.addrspacecast %s : !llvm.ptr to {ptr}")
    lines += [f"  llvm.return {sink} : {ptr}", "^ok:", f"  llvm.return %p : {ptr}", "}", ""]
    return "\n".join(lines)


# Local buffers: __emu_local_push(ctx, lo, hi, label) registers an alloca in the thread's table;
# a function that allocates takes __emu_local_mark(ctx) on entry and __emu_local_reset(ctx, mark)
# before it returns (its buffers die with its frame).
LOCAL = (
    "llvm.func internal @__emu_local_push(%ctx: !llvm.ptr, %lo: i64, %hi: i64, %label: i64) {\n  "
    + _ld("cnt", C.NLOCAL) + "  " + _ld("cap", C.LOCAL_CAP)
    + "  %full = llvm.icmp \"sge\" %cnt, %cap : i32\n  llvm.cond_br %full, ^over, ^push\n"
    "^push:\n  " + _ld64("tab", C.LOCAL_PTR_BYTE)
    + "  %c64 = llvm.sext %cnt : i32 to i64\n  %k3 = llvm.mlir.constant(3 : i64) : i64\n"
    "  %w = llvm.mul %c64, %k3 : i64\n  %p0 = llvm.getelementptr %tab[%w] : (!llvm.ptr, i64) -> !llvm.ptr, i64\n"
    "  %p1 = llvm.getelementptr %p0[1] : (!llvm.ptr) -> !llvm.ptr, i64\n"
    "  %p2 = llvm.getelementptr %p0[2] : (!llvm.ptr) -> !llvm.ptr, i64\n"
    "  llvm.store %lo, %p0 : i64, !llvm.ptr\n  llvm.store %hi, %p1 : i64, !llvm.ptr\n"
    "  llvm.store %label, %p2 : i64, !llvm.ptr\n  %one = llvm.mlir.constant(1 : i32) : i32\n"
    "  %cn = llvm.add %cnt, %one : i32\n" + _st("%cn", C.NLOCAL, "0") + "  llvm.return\n"
    "^over:\n  %size = llvm.sub %hi, %lo : i64\n  %z = llvm.mlir.constant(0 : i64) : i64\n"
    f"  %sp = llvm.mlir.constant(5 : i32) : i32\n  %wf = llvm.mlir.constant({memcheck.LOCAL_FULL} : i32) : i32\n"
    "  %m1 = llvm.mlir.constant(-1 : i32) : i32\n"
    "  llvm.call @__emu_fault(%ctx, %lo, %size, %z, %sp, %wf, %m1) : "
    "(!llvm.ptr, i64, i64, i64, i32, i32, i32) -> ()\n  llvm.return\n}\n"
    "llvm.func internal @__emu_local_mark(%ctx: !llvm.ptr) -> i32 {\n  " + _ld("r", C.NLOCAL)
    + "  llvm.return %r : i32\n}\n"
    "llvm.func internal @__emu_local_reset(%ctx: !llvm.ptr, %mark: i32) {\n"
    + _st("%mark", C.NLOCAL, "0") + "  llvm.return\n}\n"
)


def globals_table(memory_globals: list[tuple[str, str, int]]) -> str:
    """``__emu_globals(table)``: writes ``[lo, hi)`` of every module global (name, type, address space).

    Module globals are the global (or, in ``addrspace(3)``, shared) memory the bounds checks accept
    besides the argument arrays and the dynamic shared buffer; the globals are declared again here so
    the text parses alone (the host's definitions stay).
    """
    decls, body = [], ["%z = llvm.mlir.zero : !llvm.ptr"]
    for k, (name, ty, space) in enumerate(memory_globals):
        decls.append(f"llvm.mlir.global external @{name}() {{addr_space = {space} : i32}} : {ty}")
        body += [f"%a{k} = llvm.mlir.addressof @{name} : !llvm.ptr<{space}>",
                 f"%lo{k} = llvm.ptrtoint %a{k} : !llvm.ptr<{space}> to i64",
                 f"%g{k} = llvm.getelementptr %z[1] : (!llvm.ptr) -> !llvm.ptr, {ty}",
                 f"%s{k} = llvm.ptrtoint %g{k} : !llvm.ptr to i64",
                 f"%hi{k} = llvm.add %lo{k}, %s{k} : i64",
                 f"%p{k} = llvm.getelementptr %tab[{2 * k}] : (!llvm.ptr) -> !llvm.ptr, i64",
                 f"llvm.store %lo{k}, %p{k} : i64, !llvm.ptr",
                 f"%q{k} = llvm.getelementptr %tab[{2 * k + 1}] : (!llvm.ptr) -> !llvm.ptr, i64",
                 f"llvm.store %hi{k}, %q{k} : i64, !llvm.ptr"]
    return "\n".join(decls) + "\nllvm.func @__emu_globals(%tab: !llvm.ptr) {\n  " + "\n  ".join(body) \
        + "\n  llvm.return\n}\n"

