"""Wait loops: the loops in which a CTA may wait for another CTA, found statically and instrumented.

A *wait loop* is a loop of a kernel's control-flow graph that (1) accesses global or generic memory
atomically (``llvm.atomicrmw``, ``llvm.cmpxchg``, an atomic or volatile ``llvm.load``): it can observe
what other CTAs do, and (2) whose exit depends on a value read from memory inside the loop (a load, an
atomic's result, a call's result; followed through the loop's SSA values and block arguments): whether
it ends depends on that observation. A spin lock (``while atomic_cas(lock, 0, 1) == 1``), a flag wait, a
global barrier's counter poll or a look-back scan are wait loops; a ``for`` loop over tiles that
accumulates with atomics is not (its exit depends on the induction variable only), so the common kernels
are left exactly as they were.

Each back edge of a wait loop gets a call of ``__emu_backedge(ctx, site, taken)`` (:data:`BACKEDGE`): a native
counter of the thread's taken back edges in a row (leaving the loop through that branch resets it); at
``SPIN_LIMIT`` it calls the runtime's ``__emu_spin(ctx, site)``, where the cooperative CTA scheduler (:mod:`.ctasched`) may switch to another
CTA. A kernel with wait loops is launched cooperatively (:meth:`.engine.EmulatedKernel.launch`).
"""

from __future__ import annotations

from . import context as C

ATOMIC_OPS = ("llvm.atomicrmw", "llvm.cmpxchg")
SOURCES = ("llvm.load", "llvm.atomicrmw", "llvm.cmpxchg", "llvm.call", "llvm.inline_asm")
BRANCHES = ("llvm.br", "llvm.cond_br", "llvm.switch")


def _space(ptr_type: str) -> int:
    """The address space of an ``!llvm.ptr`` type (0 for the generic ``!llvm.ptr``)."""
    return int(ptr_type[len("!llvm.ptr<"):-1]) if ptr_type.startswith("!llvm.ptr<") else 0


def _observes_others(op) -> bool:
    """True for an atomic access, or an atomic / volatile load, of global (1) or generic (0) memory."""
    name = op.operation.name
    if name not in ATOMIC_OPS and name != "llvm.load":
        return False
    if name == "llvm.load" and "volatile_" not in op.attributes:
        from ..mlir import ir

        if "ordering" not in op.attributes or ir.IntegerAttr(op.attributes["ordering"]).value == 0:
            return False  # ordering 0: not_atomic (a plain load)
    return _space(str(op.operands[0].type)) in (0, 1)


def _successors(block) -> list:
    ops = list(block.operations)
    if not ops or ops[-1].operation.name not in BRANCHES:
        return []
    return list(ops[-1].operation.successors)


def _back_edges(blocks: list) -> tuple[list, list]:
    """``(source, header)`` of every back edge (edges to a block on the depth-first stack from the entry) and
    the successor indices of each block."""
    index = {b: i for i, b in enumerate(blocks)}
    succ = [[index[s] for s in _successors(b)] for b in blocks]
    edges, state = [], [0] * len(blocks)  # 0 new, 1 on the stack, 2 done
    stack = [(0, 0)]
    state[0] = 1
    while stack:
        b, k = stack.pop()
        if k < len(succ[b]):
            stack.append((b, k + 1))
            s = succ[b][k]
            if state[s] == 1:
                edges.append((b, s))
            elif state[s] == 0:
                state[s] = 1
                stack.append((s, 0))
        else:
            state[b] = 2
    return edges, succ


def _loop_body(src: int, header: int, preds: list) -> set:
    """The blocks of the natural loop of back edge ``src -> header``: those reaching ``src`` without ``header``."""
    body, work = {header, src}, [src]
    while work:
        b = work.pop()
        if b == header:
            continue
        for p in preds[b]:
            if p not in body:
                body.add(p)
                work.append(p)
    return body


def _exit_reads_memory(blocks, body: set, succ: list, index: dict) -> bool:
    """Whether a branch leaving the loop decides on a value read from memory inside the loop."""
    in_loop = {blocks[b] for b in body}
    defining = {}  # value -> op, for the loop's ops
    incoming = {}  # block argument (block, position) -> values passed from loop blocks
    for b in body:
        for op in blocks[b].operations:
            for r in op.results:
                defining[r] = op
        term = list(blocks[b].operations)[-1]
        if term.operation.name in BRANCHES:
            _collect_incoming(term, in_loop, incoming)
    args = {a: (blk, i) for blk in in_loop for i, a in enumerate(blk.arguments)}
    work = []
    for b in body:
        term = list(blocks[b].operations)[-1]
        if term.operation.name in ("llvm.cond_br", "llvm.switch") and any(
                index[s] not in body for s in _successors(blocks[b])):
            work.append(term.operands[0])
    seen = set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        op = defining.get(v)
        if op is not None:
            if op.operation.name in SOURCES:
                return True
            work.extend(op.operands)
        elif v in args:
            work.extend(incoming.get(args[v], []))
    return False


def _collect_incoming(term, in_loop: set, incoming: dict) -> None:
    """Record the values ``term`` (a branch) passes to the arguments of its successors in the loop, with the
    condition that chooses the successor (``cond_br %c, ^b(%true), ^b(%false)`` makes the argument ``%c``)."""
    name = term.operation.name
    ops = list(term.operands)
    succs = list(term.operation.successors)
    if name == "llvm.br":
        groups = [ops]
    elif name == "llvm.cond_br":
        sizes = list(term.attributes["operandSegmentSizes"])
        groups = [ops[1:1 + sizes[1]], ops[1 + sizes[1]:1 + sizes[1] + sizes[2]]]
    else:  # llvm.switch: the cases' operands are not followed (conservative: no dependence through them)
        groups = [[] for _ in succs]
    chooser = [ops[0]] if name != "llvm.br" else []  # the value choosing the edge decides the argument too
    for s, vals in zip(succs, groups):
        if s in in_loop:
            for i, v in enumerate(vals):
                incoming.setdefault((s, i), []).extend([v, *chooser])


def wait_loop_branches(func) -> list[tuple]:
    """``(terminator, header)`` of each back edge of a wait loop of ``func`` (an ``llvm.func``): the branch that
    closes the loop and the loop's first block."""
    blocks = list(func.regions[0].blocks)
    if len(blocks) < 2:
        return []
    index = {b: i for i, b in enumerate(blocks)}
    edges, succ = _back_edges(blocks)
    preds = [[] for _ in blocks]
    for b, ss in enumerate(succ):
        for s in ss:
            preds[s].append(b)
    found = []
    for src, header in edges:
        body = _loop_body(src, header, preds)
        if not any(_observes_others(op) for b in body for op in blocks[b].operations):
            continue
        if not _exit_reads_memory(blocks, body, succ, index):
            continue
        found.append((list(blocks[src].operations)[-1], blocks[header]))
    return found


def instrument(rw, backedges: list) -> int:
    """Put ``__emu_backedge(ctx, site, taken)`` before each back-edge branch of ``backedges`` (of
    :func:`wait_loop_branches`, in the rewriter's current function); ``taken``: whether the branch goes back to
    the loop's header (a conditional branch that leaves the loop resets the thread's count). Returns how many.
    The call can abort (a deadlock or another failure while the CTA was switched out)."""
    from ..mlir import ir

    for term, header in backedges:
        rw.op = term
        i1 = ir.IntegerType.get_signless(1)
        succs = list(term.operation.successors)
        if term.operation.name == "llvm.cond_br" and not (succs[0] == header and succs[1] == header):
            taken = term.operands[0]
            if succs[0] != header:  # the false edge goes back
                with ir.InsertionPoint(term):
                    taken = ir.Operation.create("llvm.xor", results=[i1],
                                                operands=[taken, rw.const(1, "i1")]).result
        else:
            taken = rw.const(1, "i1")
        rw.call("__emu_backedge", [rw.const(rw.site()), taken], None, can_abort=True)
    return len(backedges)


# ``__emu_backedge(ctx, site, taken)``: count the thread's taken back edges of wait loops (a loop left resets the
# count); at SPIN_LIMIT ask the runtime (``__emu_spin``) whether the CTA is to be switched out.
BACKEDGE = (
    "llvm.func internal @__emu_backedge(%ctx: !llvm.ptr, %site: i32, %taken: i1) {\n"
    f"  %np = llvm.getelementptr %ctx[{C.SPINS}] : (!llvm.ptr) -> !llvm.ptr, i32\n"
    "  %zero = llvm.mlir.constant(0 : i32) : i32\n"
    "  llvm.cond_br %taken, ^count, ^left\n"
    "^left:\n  llvm.store %zero, %np : i32, !llvm.ptr\n  llvm.return\n"
    "^count:\n  %n = llvm.load %np : !llvm.ptr -> i32\n"
    f"  %lp = llvm.getelementptr %ctx[{C.SPIN_LIMIT}] : (!llvm.ptr) -> !llvm.ptr, i32\n"
    "  %lim = llvm.load %lp : !llvm.ptr -> i32\n"
    "  %one = llvm.mlir.constant(1 : i32) : i32\n  %n1 = llvm.add %n, %one : i32\n"
    "  llvm.store %n1, %np : i32, !llvm.ptr\n"
    "  %due = llvm.icmp \"sge\" %n1, %lim : i32\n  llvm.cond_br %due, ^spin, ^out\n"
    "^spin:\n  llvm.call @__emu_spin(%ctx, %site) : (!llvm.ptr, i32) -> ()\n  llvm.br ^out\n"
    "^out:\n  llvm.return\n}\n"
)
