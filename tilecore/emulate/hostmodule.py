"""Turn the gpu.module of a lowered kernel into a module the host JIT can run.

Steps (each GPU-specific piece is looked up in :mod:`.optable` / :mod:`.libdevice`):

1. copy the llvm ops of the gpu.module holding the kernel into a fresh module;
2. give every defined function a trailing context pointer (:mod:`.context`) and
   pass it along at every call between them;
3. rewrite nvvm ops, ``vprintf`` / ``__assertfail`` calls and dynamic shared memory
   into calls of emulator helpers; after a call that can fail (assert, a collective
   the CTA aborted) the function returns when the context's abort flag is set; with
   bounds checks, every memory access goes through the pointer a check returns and
   allocas register their buffers (:mod:`.memcheck`);
4. give libdevice ``__nv_*`` declarations host bodies; drop GPU-only attributes
   (``nvvm.kernel`` would make the function a PTX entry);
5. add the helpers (:mod:`.prelude`) and the grid driver ``__emu_drive``;
6. count the back edges of wait loops, where a CTA may wait for another CTA (:mod:`.waitloops`): a kernel
   with such loops is launched cooperatively (:mod:`.ctasched`); other kernels are left as they were.

Static ``addrspace(3)`` globals stay module globals: CTAs run one after another,
so one instance is the shared memory of the running CTA. A kernel with clusters of more than one CTA
(``nvvm.cluster_dim``, PTX ``.reqnctapercluster``) runs the CTAs of a cluster at the same time, each with
its own shared memory: there every ``llvm.mlir.addressof`` of a static shared variable reads the running
CTA's instance from the context (``__emu_smem_var``), and the engine lays the instances out in one shared
window per CTA (:meth:`.engine.EmulatedKernel.launch`).
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field

from ..errors import TilecoreError, format_location
from ..launch_attrs import dynamic_shared_bytes
from ..mlir import ir
from ..tensormaps import recipes_of
from . import libdevice, memcheck, optable, prelude, waitloops


@dataclass
class HostModule:
    """The rewritten module, the kernel's LLVM parameter types and whether it has collectives."""

    module: object
    kernel: str
    param_types: list[str]
    collective: bool
    location: str
    globals: list[tuple[str, int]] = field(default_factory=list)  # (name, address space) of the module
    # globals __emu_globals reports, in order
    sites: list[str] = field(default_factory=list)          # source location of each checked access
    local_labels: list[str] = field(default_factory=list)   # name of each registered alloca
    check_bounds: bool = True  # accesses are checked (:mod:`.memcheck`)
    tensor_maps: list = field(default_factory=list)  # the kernel's tensor-map recipes (:mod:`tilecore.tensormaps`)
    dynamic_shared_bytes: int = 0  # what the kernel needs at least (:mod:`tilecore.launch_attrs`)
    cluster: tuple = (1, 1, 1)  # CTAs per cluster (x, y, z) from ``nvvm.cluster_dim``
    smem_vars: list = field(default_factory=list)  # cluster kernels: (name, alignment) of each static shared
    # variable, in the order of __emu_smem_var's index
    reqntid: tuple | None = None  # the block the kernel must be launched with (``nvvm.reqntid``), None: any
    wait_loops: int = 0  # back edges of wait loops (:mod:`.waitloops`): the kernel is launched cooperatively

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]


def _fail(msg: str, op=None) -> TilecoreError:
    return TilecoreError(msg, format_location(op.location) if op is not None else None)


HOST_KERNEL = "__emu_kernel"  # the kernel's name in the host module


def find_kernel_module(module, kernel: str):
    """The op whose body holds ``llvm.func @kernel`` (a gpu.module, or the module itself)."""
    holders = [module.operation]
    gpu_funcs = []
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            holders.append(op)
    for h in holders:
        body = h.regions[0].blocks[0]
        for op in body.operations:
            if (op.operation.name == "llvm.func" and op.attributes["sym_name"].value == kernel
                    and len(op.regions[0].blocks)):
                return h
            if op.operation.name == "gpu.func" and op.attributes["sym_name"].value == kernel:
                gpu_funcs.append(op)
    if gpu_funcs:
        raise _fail(f"kernel '{kernel}' is not lowered to the llvm / nvvm dialects yet", gpu_funcs[0])
    names = sorted(op.attributes["sym_name"].value for h in holders for op in h.regions[0].blocks[0].operations
                   if op.operation.name == "llvm.func" and len(op.regions[0].blocks)
                   and ("nvvm.kernel" in op.attributes or "gpu.kernel" in op.attributes))
    if any(op.operation.name == "gpu.binary" for op in module.body.operations):
        raise TilecoreError(f"no kernel '{kernel}' to emulate: the module is already serialized (gpu.binary); "
                            "give the module before the serialize stage")
    raise TilecoreError(f"no kernel '{kernel}' in the module" + (f" (kernels: {', '.join(names)})" if names else ""))


def _call(callee: str, operands, result_type, attrs=None):
    attributes = dict(attrs or {})
    attributes["callee"] = ir.FlatSymbolRefAttr.get(callee)
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([len(operands), 0])
    attributes.setdefault("op_bundle_sizes", ir.DenseI32ArrayAttr.get([]))
    results = [ir.Type.parse(result_type) if isinstance(result_type, str) else result_type] if result_type else []
    return ir.Operation.create("llvm.call", results=results, operands=list(operands), attributes=attributes)


def _parse_func_type(text: str) -> tuple[str, list[str]]:
    """(result, params) of ``!llvm.func<R (P, ...)>`` with top-level splitting."""
    inner = text[len("!llvm.func<"):-1]
    depth, split = 0, None
    for i, ch in enumerate(inner):
        if ch in "<([{":
            if ch == "(" and depth == 0 and split is None:
                split = i
            depth += 1
        elif ch in ">)]}":
            depth -= 1
    ret, plist = inner[:split].strip(), inner[split + 1:-1]
    params, depth, cur = [], 0, ""
    for ch in plist:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur.strip())
    return ret, params


class Rewriter:
    """Builds replacement ops before the op being rewritten (the API the table rows use)."""

    def __init__(self, host, check_bounds: bool = True):
        self.host = host
        self.check_bounds = check_bounds
        self.texts: dict[str, str] = {}       # helper symbol -> MLIR definition
        self.checks: dict[tuple, str] = {}    # (space, accessed type, alignment) -> its check helper
        self.decls: dict[str, str] = {}       # external symbol -> signature
        self.sites: list[str] = []            # source location of every checked access, by id
        self.local_labels: list[str] = []     # name of every registered alloca, by id
        self.allocating: list = []            # functions that register allocas
        self.local_helpers: dict[tuple, str] = {}  # (element type, count type) -> its registration helper
        self.ctx = None
        self.op = None
        self.func = None
        self.abort_block = None
        self.aborting: list = []              # calls of the current function that can abort
        self.uses_cp_async = False            # a cp.async op was rewritten: pending copies land at exit
        self.cluster = (1, 1, 1)              # the kernel's CTAs per cluster
        self.smem_vars: dict[str, int] = {}   # cluster kernels: static shared variable -> its index

    # ---- API for table rows
    def const(self, value: int, ty: str = "i32"):
        with ir.InsertionPoint(self.op):
            t = ir.Type.parse(ty)
            return ir.Operation.create("llvm.mlir.constant", results=[t],
                                       attributes={"value": ir.IntegerAttr.get(t, value)}).result

    def call(self, callee: str, operands, result_type, can_abort: bool = False, after=None):
        """``llvm.call @callee(ctx, operands...)`` before the op (or right after op ``after``); returns its
        result (or None).

        ``can_abort``: the function returns right after the call when the abort flag is set (the block
        is split there by :meth:`split_after_aborting_calls`, once the whole function is rewritten).
        """
        with ir.InsertionPoint(self.op) if after is None else ir.InsertionPoint.after(after):
            c = _call(callee, [self.ctx, *operands], result_type)
        if can_abort:
            self.aborting.append(c)
        return c.results[0] if result_type else None

    def define(self, sym: str, params: str, body: str, ret: str) -> None:
        """Add helper ``sym`` (``llvm.func internal``) whose body computes ``%r`` (unless ``ret`` is void)."""
        if sym in self.texts:
            return
        tail = "llvm.return" if ret in ("void", "()") else f"llvm.return %r : {ret}"
        arrow = "" if ret in ("void", "()") else f" -> {ret}"
        self.texts[sym] = f"llvm.func internal @{sym}({params}){arrow} {{\n{body}\n{tail}\n}}\n"

    def declare(self, sym: str, sig: str) -> None:
        self.decls.setdefault(sym, sig)

    def warp_helper(self, vt: str, result: str) -> str:
        """Typed wrapper around ``__emu_warp``: encodes the value in 64 bits and decodes the result."""
        sym = f"__emu_warp_{re.sub(r'[^a-z0-9]', '', vt)}_{result}"
        enc = {"i1": "%e = llvm.zext %v : i1 to i64", "i32": "%e = llvm.zext %v : i32 to i64",
               "f32": "%b = llvm.bitcast %v : f32 to i32\n%e = llvm.zext %b : i32 to i64",
               "i64": "%e = llvm.bitcast %v : i64 to i64", "f64": "%e = llvm.bitcast %v : f64 to i64"}.get(vt)
        if enc is None:
            raise _fail(f"'{self.op.operation.name}' on {vt} is not emulated", self.op)
        dec_val = {"i1": "%val = llvm.trunc %w : i64 to i1", "i32": "%val = llvm.trunc %w : i64 to i32",
                   "f32": "%lo = llvm.trunc %w : i64 to i32\n%val = llvm.bitcast %lo : i32 to f32",
                   "i64": "%val = llvm.bitcast %w : i64 to i64", "f64": "%val = llvm.bitcast %w : i64 to f64"}[vt]
        pred = "%k32 = llvm.mlir.constant(32 : i64) : i64\n%hi = llvm.lshr %w, %k32 : i64\n" \
               "%pr = llvm.trunc %hi : i64 to i1"
        call = "%w = llvm.call @__emu_warp(%ctx, %code, %m, %e, %x, %y) : " \
               "(!llvm.ptr, i32, i32, i64, i32, i32) -> i64"
        if result == "val":
            ret, body = vt, f"{dec_val}\n%r = llvm.bitcast %val : {vt} to {vt}"
        elif result == "valpred":
            ret = f"!llvm.struct<({vt}, i1)>"
            body = f"{dec_val}\n{pred}\n%u = llvm.mlir.poison : {ret}\n%s0 = llvm.insertvalue %val, %u[0] : {ret}\n" \
                   f"%r = llvm.insertvalue %pr, %s0[1] : {ret}"
        elif result == "i1":
            ret, body = "i1", "%r = llvm.trunc %w : i64 to i1"
        elif result == "i32":
            ret, body = "i32", "%r = llvm.trunc %w : i64 to i32"
        elif result == "i32pred":
            ret = "!llvm.struct<(i32, i1)>"
            body = f"%lo = llvm.trunc %w : i64 to i32\n{pred}\n%u = llvm.mlir.poison : {ret}\n" \
                   f"%s0 = llvm.insertvalue %lo, %u[0] : {ret}\n%r = llvm.insertvalue %pr, %s0[1] : {ret}"
        else:
            ret, body = "void", ""
        self.define(sym, f"%ctx: !llvm.ptr, %code: i32, %m: i32, %v: {vt}, %x: i32, %y: i32",
                    f"{enc}\n{call}\n{body}", ret)
        return sym

    def check_access(self, ptr, accessed_type: str, kind: int, align: int | None = None):
        """Before the op: the pointer it must access instead of ``ptr``: ``ptr`` itself when
        ``[ptr, ptr + sizeof(type))`` is aligned to ``align`` (None: the type's ABI alignment) and lies in a
        buffer its address space may touch, else (the launch fails) the sink (:mod:`.memcheck`).
        ``kind``: :data:`.memcheck.LOAD`, ``STORE`` or ``ATOMIC`` (for the message)."""
        pt = str(ptr.type)
        space = memcheck.space_of(pt)
        key = (space, accessed_type, align)
        sym = self.checks.get(key)
        if sym is None:
            sym = self.checks[key] = f"__emu_chk_{len(self.checks)}"
            self.texts.setdefault(f"__emu_check_as{space}", prelude.check(space))
            if align is None:  # the offset of T in struct<(i8, T)>
                align_ir = (f"%ga = llvm.getelementptr %z[0, 1] : (!llvm.ptr) -> !llvm.ptr, "
                            f"!llvm.struct<(i8, {accessed_type})>\n%align = llvm.ptrtoint %ga : !llvm.ptr to i64")
            else:
                align_ir = f"%align = llvm.mlir.constant({align} : i64) : i64"
            self.define(sym, f"%ctx: !llvm.ptr, %p: {pt}, %st: i32, %site: i32",
                        "%z = llvm.mlir.zero : !llvm.ptr\n"
                        f"%g = llvm.getelementptr %z[1] : (!llvm.ptr) -> !llvm.ptr, {accessed_type}\n"
                        f"%size = llvm.ptrtoint %g : !llvm.ptr to i64\n{align_ir}\n"
                        f"%r = llvm.call @__emu_check_as{space}(%ctx, %p, %size, %align, %st, %site) : "
                        f"(!llvm.ptr, {pt}, i64, i64, i32, i32) -> {pt}", pt)
        return self.call(sym, [ptr, self.const(kind), self.const(self._site())], pt)

    def check_range(self, ptr, length, kind: int) -> None:
        """Before the op: return (abort) unless the ``length`` bytes (an integer value) at ``ptr`` lie in a
        buffer its address space may touch (a bulk copy may be longer than the sink)."""
        pt = str(ptr.type)
        space = memcheck.space_of(pt)
        lt = str(length.type)
        sym = f"__emu_chk_range_as{space}_{lt}"
        self.texts.setdefault(f"__emu_check_as{space}", prelude.check(space))
        self.define(sym, f"%ctx: !llvm.ptr, %p: {pt}, %n: {lt}, %st: i32, %site: i32",
                    (f"%size = llvm.zext %n : {lt} to i64" if lt != "i64" else "%size = llvm.bitcast %n : i64 to i64")
                    + "\n%one = llvm.mlir.constant(1 : i64) : i64\n"
                    f"%q = llvm.call @__emu_check_as{space}(%ctx, %p, %size, %one, %st, %site) : "
                    f"(!llvm.ptr, {pt}, i64, i64, i32, i32) -> {pt}", "void")
        self.call(sym, [ptr, length, self.const(kind), self.const(self._site())], None, can_abort=True)

    def register_local(self, alloca, where: str) -> None:
        """After ``alloca`` (a host alloca: the op itself or its replacement) allocated at ``where``: add
        its buffer to the thread's table of local buffers, dropped again when the function returns."""
        elem = str(ir.TypeAttr(alloca.attributes["elem_type"]).value)
        count = alloca.operands[0]
        ct = str(count.type)
        sym = self.local_helpers.setdefault((elem, ct), f"__emu_local_{len(self.local_helpers)}")
        widen = f"%n64 = llvm.zext %n : {ct} to i64" if ct != "i64" else "%n64 = llvm.bitcast %n : i64 to i64"
        self.define(sym, f"%ctx: !llvm.ptr, %p: !llvm.ptr, %n: {ct}, %label: i64",
                    "%z = llvm.mlir.zero : !llvm.ptr\n"
                    f"%g = llvm.getelementptr %z[1] : (!llvm.ptr) -> !llvm.ptr, {elem}\n"
                    f"%es = llvm.ptrtoint %g : !llvm.ptr to i64\n{widen}\n%size = llvm.mul %es, %n64 : i64\n"
                    "%lo = llvm.ptrtoint %p : !llvm.ptr to i64\n%hi = llvm.add %lo, %size : i64\n"
                    "llvm.call @__emu_local_push(%ctx, %lo, %hi, %label) : (!llvm.ptr, i64, i64, i64) -> ()", "void")
        self.local_labels.append(f"local buffer of {elem} (alloca at {where})")
        with ir.InsertionPoint.after(alloca):
            label = ir.Operation.create("llvm.mlir.constant", results=[ir.IntegerType.get_signless(64)],
                                        attributes={"value": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                                len(self.local_labels) - 1)})
        self.call(sym, [alloca.results[0], count, label.result], None, after=label)
        if not any(f == self.func for f in self.allocating):
            self.allocating.append(self.func)

    def site(self) -> int:
        """The id of the current op's source location (checked accesses report it)."""
        self.sites.append(format_location(self.op.location))
        return len(self.sites) - 1

    _site = site

    def fence(self) -> None:
        with ir.InsertionPoint(self.op):
            ir.Operation.create("llvm.fence", attributes={  # 7: seq_cst (LLVM's AtomicOrdering)
                "ordering": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 7)})

    def unknown(self, op):
        raise _fail(f"the emulator does not support '{op.operation.name}' yet", op)

    # ---- internals
    def split_after_aborting_calls(self) -> None:
        """Split the blocks of the current function after every call that can abort: the function
        returns there when the abort flag is set. One pass over each block, from its last such call
        back to its first, so every op moves once (splitting as the calls are made moved the rest of
        the block each time: quadratic in big kernels)."""
        pending = {getattr(c, "operation", c) for c in self.aborting}
        self.aborting = []
        for block in list(self.func.regions[0].blocks):
            ops = list(block.operations)
            cuts = [i for i, o in enumerate(ops) if o.operation in pending]
            end, tail = len(ops), []
            for i in reversed(cuts):
                cont = block.create_after()
                for o in ops[i + 1:end] + tail:
                    cont.append(o)
                with ir.InsertionPoint(block):
                    flag = _call("__emu_aborted", [self.ctx], "i1")
                    br = ir.Operation.create("llvm.cond_br", operands=[flag.result], successors=[self._abort(), cont],
                                             attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0])})
                end, tail = i + 1, [flag, br]

    def _abort(self):
        if self.abort_block is None:
            region = self.func.regions[0]
            last = list(region.blocks)[-1]
            self.abort_block = last.create_after()
            ret, _ = _parse_func_type(str(self.func.attributes["function_type"].value))
            with ir.InsertionPoint(self.abort_block):
                if ret == "void":
                    ir.Operation.create("llvm.return")
                else:
                    t = ir.Type.parse(ret if ret.startswith("!") or ret[0] in "if" else "!llvm." + ret)
                    p = ir.Operation.create("llvm.mlir.poison", results=[t])
                    ir.Operation.create("llvm.return", operands=[p.result])
        return self.abort_block


def _add_ctx_param(func) -> None:
    ret, params = _parse_func_type(str(func.attributes["function_type"].value))
    params.append("ptr")
    func.attributes["function_type"] = ir.TypeAttr.get(ir.Type.parse(f"!llvm.func<{ret} ({', '.join(params)})>"))
    if "arg_attrs" in func.attributes:
        # A grid-constant byval parameter (a tensor map: ``.param .align 64 .b8 p[128]``) is a plain pointer
        # to the argument's launch-memory copy here; nvvm.* argument attributes are for kernels only.
        attrs = [ir.DictAttr.get({a.name: a.attr for a in d if not _HOST_DROPPED_ARG_ATTRS.match(a.name)})
                 for d in map(ir.DictAttr, func.attributes["arg_attrs"])] + [ir.DictAttr.get({})]
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    func.regions[0].blocks[0].add_argument(ir.Type.parse("!llvm.ptr"), ir.Location.unknown())


_HOST_DROPPED_ARG_ATTRS = re.compile(r"^(nvvm\.|llvm\.byval$|llvm\.align$)")
_GPU_ATTRS = re.compile(r"^(nvvm\.|gpu\.|rocdl\.|target_cpu$|target_features$|tune_cpu$)")


def _walk(block, out):
    for op in block.operations:
        out.append(op)
        for r in op.regions:
            for b in r.blocks:
                _walk(b, out)


def build(module, kernel: str, check_bounds: bool = True) -> HostModule:
    """Rewrite the kernel's gpu.module of ``module`` (left unchanged) into a host JIT module.

    ``check_bounds``: every load, store, atomic and bulk copy (``llvm.intr.memcpy`` ...) in any
    address space first checks that it is aligned and stays inside one buffer it may touch
    (:mod:`.memcheck`); allocas register their buffers. A bad access fails the launch with its
    thread, address and nearest buffer.
    """
    holder = find_kernel_module(module, kernel)
    with module.context, ir.Location.unknown():
        host = ir.Module.create()
        for op in holder.regions[0].blocks[0].operations:
            if op.operation.name.startswith("llvm."):  # gpu.module / gpu.func / host code stay behind
                op.clone(ip=ir.InsertionPoint(host.body))
        return _rewrite(host, kernel, check_bounds)


def _rewrite(host, kernel: str, check_bounds: bool) -> HostModule:
    body = host.body
    funcs = {op.attributes["sym_name"].value: op for op in body.operations
             if op.operation.name == "llvm.func" and len(op.regions[0].blocks)}
    decls = {op.attributes["sym_name"].value: op for op in body.operations
             if op.operation.name == "llvm.func" and not len(op.regions[0].blocks)}
    dyn_shared = {op.attributes["sym_name"].value for op in body.operations
                  if op.operation.name == "llvm.mlir.global" and "addr_space" in op.attributes
                  and op.attributes["addr_space"].value == 3 and "external" in str(op.attributes["linkage"])}
    kfunc = funcs[kernel]
    # The host module also holds libm functions (the libdevice bodies call them), runtime symbols and the
    # driver: a kernel named like one of them ('fmod', 'sqrtf', ...) would clash, so it gets a reserved name.
    kfunc.attributes["sym_name"] = ir.StringAttr.get(HOST_KERNEL)
    funcs[HOST_KERNEL] = funcs.pop(kernel)
    location = format_location(kfunc.location)
    param_types = [str(a.type) for a in kfunc.regions[0].blocks[0].arguments]
    tensor_maps = recipes_of(kfunc)
    dynamic_shared = dynamic_shared_bytes(kfunc)
    rw = Rewriter(host, check_bounds)
    rw.cluster = kernel_cluster(kfunc)
    reqntid = kernel_reqntid(kfunc)
    smem_vars = []
    if rw.cluster != (1, 1, 1):
        smem_vars = [(op.attributes["sym_name"].value,
                      ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else 0)
                     for op in body.operations if op.operation.name == "llvm.mlir.global"
                     and "addr_space" in op.attributes and op.attributes["addr_space"].value == 3
                     and op.attributes["sym_name"].value not in dyn_shared]
        rw.smem_vars = {name: k for k, (name, _) in enumerate(smem_vars)}
    collective = rw.cluster != (1, 1, 1)  # the CTAs of a cluster run concurrently
    for f in funcs.values():
        _add_ctx_param(f)
        for a in list(f.attributes):
            if _GPU_ATTRS.match(a):
                del f.attributes[a]
    wait_loops = 0
    for f in funcs.values():
        rw.func, rw.abort_block = f, None
        rw.ctx = f.regions[0].blocks[0].arguments[-1]
        backedges = waitloops.wait_loop_branches(f)  # on the kernel's own ops, before they are rewritten
        ops = []
        for b in f.regions[0].blocks:
            _walk(b, ops)
        for op in ops:
            rw.op = op
            collective |= _rewrite_op(op, rw, funcs, dyn_shared)
        wait_loops += waitloops.instrument(rw, backedges)
        rw.split_after_aborting_calls()
        if any(f == g for g in rw.allocating):
            _drop_locals_on_return(f, rw.ctx)
    if rw.uses_cp_async:
        optable.cp_async_exit(rw, kfunc)
    _give_libdevice_bodies(decls, rw)
    for g in list(body.operations):
        if g.operation.name == "llvm.mlir.global" and g.attributes["sym_name"].value in dyn_shared:
            g.operation.erase()
    memory_globals = [(g.attributes["sym_name"].value, str(g.attributes["global_type"].value),
                       g.attributes["addr_space"].value if "addr_space" in g.attributes else 0)
                      for g in body.operations if g.operation.name == "llvm.mlir.global"]
    if wait_loops:
        rw.texts.setdefault("__emu_backedge", waitloops.BACKEDGE)
    _append_support(host, rw, HOST_KERNEL, param_types, memory_globals)
    _pin_host_target(host)
    return HostModule(host, kernel, param_types, collective, location, [(g[0], g[2]) for g in memory_globals],
                      rw.sites, rw.local_labels, check_bounds, tensor_maps, dynamic_shared, rw.cluster, smem_vars,
                      reqntid, wait_loops)


def _sizes_attr(kfunc, name: str) -> tuple[int, int, int] | None:
    """A kernel's x, y, z sizes attribute ``name`` (1 to 3 positive sizes, padded with 1s); None without one."""
    if name not in kfunc.attributes:
        return None
    dims = [int(v) for v in ir.DenseI32ArrayAttr(kfunc.attributes[name])]
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise _fail(f"{name} {dims} is not 1 to 3 positive sizes", kfunc)
    return tuple(dims + [1] * (3 - len(dims)))


def kernel_cluster(kfunc) -> tuple[int, int, int]:
    """CTAs per cluster (x, y, z) of a kernel: its ``nvvm.cluster_dim`` (PTX ``.reqnctapercluster``), else 1."""
    return _sizes_attr(kfunc, "nvvm.cluster_dim") or (1, 1, 1)


def kernel_reqntid(kfunc) -> tuple[int, int, int] | None:
    """The block (x, y, z) a kernel must be launched with: its ``nvvm.reqntid`` (PTX ``.reqntid``: "the kernel
    must be launched with exactly these dimensions", PTX ISA "Performance-Tuning Directives: .reqntid"), padded with
    1s; None without one."""
    return _sizes_attr(kfunc, "nvvm.reqntid")


def _rewrite_op(op, rw: Rewriter, funcs: dict, dyn_shared: set) -> bool:
    """Rewrite one op for the host if it is GPU-specific; True when it is a collective."""
    name = op.operation.name
    if name.startswith("nvvm."):
        r = optable.row(name)
        if r is None:
            rw.unknown(op)
        _replace(op, r.rewrite(op, rw))
        return r.collective
    if name == "llvm.call":
        if "callee" not in op.attributes:
            raise _fail("indirect calls are not emulated", op)
        callee = op.attributes["callee"].value
        if callee in funcs:
            _pass_ctx(op, rw.ctx)
        elif callee in optable.CALLS:
            sym, _, can_abort = optable.CALLS[callee]
            res = str(op.results[0].type) if len(op.results) else None
            new = rw.call(sym, list(op.operands), res, can_abort=can_abort)
            _replace(op, [new] if res else [])
        elif not callee.startswith("__nv_"):  # __nv_* declarations get host bodies
            raise _fail(f"the emulator does not support calls of the external function '{callee}'", op)
    elif name == "llvm.call_intrinsic":
        intr = op.attributes["intrin"].value
        if intr.startswith("llvm.nvvm.") or intr.startswith("llvm.nvptx."):
            raise _fail(f"the emulator does not support the intrinsic '{intr}' yet", op)
    elif name == "llvm.inline_asm":
        found = optable.inline_asm(op)
        if found is None:
            asm = op.attributes["asm_string"].value
            cons = op.attributes["constraints"].value if "constraints" in op.attributes else ""
            raise _fail(f"the emulator does not support this inline PTX assembly: '{asm}' (constraints '{cons}')",
                        op)
        asm_row, match = found
        _replace(op, asm_row.rewrite(op, rw, match))
        return asm_row.collective
    elif name == "llvm.mlir.addressof" and op.attributes["global_name"].value in dyn_shared:
        _replace(op, [rw.call("__emu_dyn_smem", [], str(op.results[0].type))])
    elif name == "llvm.mlir.addressof" and op.attributes["global_name"].value in rw.smem_vars:
        _replace(op, [rw.call("__emu_smem_var", [rw.const(rw.smem_vars[op.attributes["global_name"].value])],
                              str(op.results[0].type))])
    elif name in optable.INT_DIVISIONS:
        _replace(op, optable.guarded_division(op, rw))
    elif name in optable.SHIFTS and not optable.is_constant(op.operands[1]):
        _replace(op, optable.clamped_shift(op, rw))
    elif name in optable.FLOAT_TO_INT:
        _replace(op, optable.saturating_float_to_int(op, rw))
    elif name == "llvm.alloca":
        where = format_location(op.location)
        alloca = _host_alloca(op) if str(op.results[0].type) != "!llvm.ptr" else op
        if rw.check_bounds:
            rw.register_local(alloca, where)
    elif name in optable.MEMORY_OPS and rw.check_bounds:
        ptr_i, type_i, kind = optable.MEMORY_OPS[name]
        accessed = op.results[0].type if type_i is None else op.operands[type_i].type
        align = ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else None
        op.operands[ptr_i] = rw.check_access(op.operands[ptr_i], str(accessed), kind, align or None)
    elif name in optable.BULK_MEMORY_OPS and rw.check_bounds:
        pointers, len_i = optable.BULK_MEMORY_OPS[name]
        length = op.operands[len_i] if len_i is not None else rw.const(ir.IntegerAttr(op.attributes["len"]).value,
                                                                        "i64")
        for ptr_i, kind in pointers:
            rw.check_range(op.operands[ptr_i], length, kind)
    return False


# The JIT compiles for the host CPU by default, and some CPUs change the numbers: with AVX512-BF16
# an f32 / f64 -> bf16 fptrunc becomes vcvtneps2bf16, which flushes subnormals (the GPU keeps them).
# Every function is compiled for the architecture's baseline instead, so conversions the baseline
# lacks go to the routines of .libcalls and results do not depend on the machine.
_BASELINE_TARGET = {  # platform.machine() -> (target_cpu, target_features)
    "x86_64": ("x86-64", ("+cx8", "+fxsr", "+mmx", "+sse", "+sse2")),
    "AMD64": ("x86-64", ("+cx8", "+fxsr", "+mmx", "+sse", "+sse2")),
    "aarch64": ("generic", ("+neon",)),
    "arm64": ("generic", ("+neon",)),
}


# platform.machine() -> the host's LLVM data layout. The JIT module needs it at translation: sizes of types
# (``getelementptr null[1]``: a local buffer's extent, a checked access's size) fold there, and without a
# layout LLVM's default aligns i64 to 4 bytes: struct<(i32, i64)> (printf's arguments) measured 12 bytes of
# its 16, and a store to its i64 failed as out of bounds.
_HOST_DATA_LAYOUT = {
    "x86_64": "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128",
    "AMD64": "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128",
    "aarch64": "e-m:e-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128",
    "arm64": "e-m:e-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128",
}


def _pin_host_target(host) -> None:
    """Give the module the host's data layout (any 64-bit little-endian one aligning i64 to 8 where the
    architecture is not listed) and every defined function the baseline ``target_cpu`` / ``target_features``
    of this architecture."""
    host.operation.attributes["llvm.data_layout"] = ir.StringAttr.get(
        _HOST_DATA_LAYOUT.get(platform.machine(), "e-i64:64-i128:128"))
    pinned = _BASELINE_TARGET.get(platform.machine())
    if pinned is None:
        return
    cpu = ir.StringAttr.get(pinned[0])
    features = ir.Attribute.parse("#llvm.target_features<[" + ", ".join(f'"{f}"' for f in pinned[1]) + "]>")
    for f in host.body.operations:
        if f.operation.name == "llvm.func" and len(f.regions[0].blocks):
            f.attributes["target_cpu"] = cpu
            f.attributes["target_features"] = features


def _give_libdevice_bodies(decls: dict, rw: Rewriter) -> None:
    """Replace every ``__nv_*`` declaration by a host definition (:mod:`.libdevice`)."""
    for sym, d in decls.items():
        if not sym.startswith("__nv_"):
            continue
        ret, params = _parse_func_type(str(d.attributes["function_type"].value))
        got = libdevice.body(sym, ret, params)
        if got is None:
            raise _fail(f"the emulator has no host version of the libdevice function '{sym}'", d)
        text, needs = got
        for fn, sig in needs.items():
            rw.declare(fn, sig)
        d.operation.erase()
        rw.define(sym, ", ".join(f"%a{i}: {t}" for i, t in enumerate(params)), text, ret)


def _replace(op, new_values) -> None:
    for old, new in zip(op.results, new_values):
        old.replace_all_uses_with(new)
    op.operation.erase()


def _host_alloca(op):
    """Local memory (``alloca`` in addrspace 5) lives on the host thread's stack (addrspace 0): returns
    the host alloca (the kernel uses it through an addrspacecast)."""
    attrs = {n: op.attributes[n] for n in op.attributes}
    with ir.InsertionPoint(op):
        a = ir.Operation.create("llvm.alloca", results=[ir.Type.parse("!llvm.ptr")], operands=list(op.operands),
                                attributes=attrs)
        c = ir.Operation.create("llvm.addrspacecast", results=[op.results[0].type], operands=[a.result])
    _replace(op, [c.result])
    return a


def _drop_locals_on_return(func, ctx) -> None:
    """Take the thread's count of local buffers on entry of ``func`` and restore it before every return."""
    entry = func.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(entry):
        mark = _call("__emu_local_mark", [ctx], "i32")
    returns = []
    for b in func.regions[0].blocks:
        returns += [o for o in b.operations if o.operation.name == "llvm.return"]
    for r in returns:
        with ir.InsertionPoint(r):
            _call("__emu_local_reset", [ctx, mark.result], None)


def _pass_ctx(op, ctx) -> None:
    attrs = {n: op.attributes[n] for n in op.attributes}
    with ir.InsertionPoint(op):
        n = _call(attrs.pop("callee").value, [*op.operands, ctx],
                  op.results[0].type if len(op.results) else None, attrs)
    _replace(op, list(n.results))


def _append_support(host, rw: Rewriter, kernel: str, param_types: list[str], memory_globals) -> None:
    defined = {op.attributes["sym_name"].value for op in host.body.operations if "sym_name" in op.attributes}
    parts = [prelude.SET_THREAD_CLUSTER + prelude.SMEM_VAR if rw.cluster != (1, 1, 1) else prelude.SET_THREAD,
             prelude.ABORTED, prelude.DYN_SMEM, prelude.IN_TABLE, prelude.LOCAL,
             prelude.driver(kernel, param_types), prelude.globals_table(memory_globals)]
    parts += list(rw.texts.values())
    # the driver calls the kernel: declare it for parsing, the host's definition stays
    parts.append(f"llvm.func @{kernel}({', '.join(param_types + ['!llvm.ptr'])})\n")
    for sym, sig in {**optable.RUNTIME_SYMBOLS, **rw.decls}.items():
        if sym not in defined:
            args, ret = sig.split("->")
            ret = ret.strip()
            parts.append(f"llvm.func @{sym}{args.strip()}" + ("" if ret == "()" else f" -> {ret}") + "\n")
    text = "\n".join(parts)
    try:
        extra = ir.Module.parse(text)
    except Exception as e:  # noqa: BLE001 - a bug in a table row's text: say which
        raise TilecoreError(f"internal error in the emulator's helper text: {e}\n{text}") from None
    for op in list(extra.body.operations):
        if op.attributes["sym_name"].value in defined and not len(op.regions[0].blocks):
            continue
        host.body.append(op)
    try:
        host.operation.verify()
    except Exception as e:  # noqa: BLE001 - never hand a broken module to LLVM (assertions abort)
        raise TilecoreError(f"internal error: the emulator's host module does not verify: {e}") from None
