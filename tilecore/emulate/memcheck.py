"""Checked memory accesses: which memory an address space may touch, and what a bad access says.

With bounds checks on, every load, store, atomic and bulk copy of the kernel first calls a
check helper (text in :mod:`.prelude`) with its address, size, alignment and address space, and
accesses the pointer the helper returns: its own when the access is fine.
The access must be aligned and lie inside one buffer of the tables :data:`SPACES` names for its
address space:

- ``global``: the launch's argument arrays and the module's global-memory variables;
- ``shared``: the CTA's static ``addrspace(3)`` variables and its dynamic buffer (``shared_bytes``);
- ``cluster``: the shared memory of every CTA of the CTA's cluster (PTX ISA "Distributed Shared Memory": a
  ``shared::cluster`` address, ``addrspace(7)``, or a generic one may reach a peer CTA's shared memory;
  without clusters these are the CTA's own buffers);
- ``local``: the thread's live ``alloca`` buffers (registered when allocated, dropped when their
  function returns).

A generic (``addrspace(0)``) pointer may point into any of them. A bad access calls
``__emu_fault``, whose message (:func:`describe_fault`) names the thread, the address and the
nearest buffer with the access's offset from it, and which sets the thread's abort flag; the
access itself (and every later bad one of the thread, without a message) goes to the launch's
sink, scratch memory nobody reads, and the thread ends at its next abort test (the next call
that can abort, or its end); a bulk copy, which may be longer than the sink, returns at once
instead. So a load or store costs a call but no branch in the kernel's code, which keeps the JIT
time of big kernels near that without checks (matmul_f16: 1.3 s, 1.0 s unchecked).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from . import context as C

# address space -> (what the memory is called, tables a pointer of that space may point into)
SPACES: dict[int, tuple[str, tuple[str, ...]]] = {
    0: ("generic", ("global", "cluster", "local")),
    1: ("global", ("global",)),
    3: ("shared", ("shared",)),
    4: ("constant", ("global",)),
    5: ("local", ("local",)),
    7: ("shared", ("cluster",)),  # shared::cluster: the shared memory of every CTA of the cluster
}
ANY_SPACE = ("memory", ("global", "cluster", "local"))  # address spaces the table does not name

# table -> (byte offset of its pointer in the context, slot of its length, i64 words per entry)
TABLES: dict[str, tuple[int, int, int]] = {
    "global": (C.RANGES_PTR_BYTE, C.NRANGES, 2),
    "shared": (C.SHARED_RANGES_PTR_BYTE, C.NSHARED, 2),
    "cluster": (C.CLUSTER_RANGES_PTR_BYTE, C.NCLUSTER, 2),
    "local": (C.LOCAL_PTR_BYTE, C.NLOCAL, 3),
}

# bits of the ``what`` operand of __emu_fault: the kind of access, what went wrong
LOAD, STORE, ATOMIC = 0, 1, 1 | 8
MISALIGNED, LOCAL_FULL = 2, 4


def space_of(pointer_type: str) -> int:
    """The address space of an LLVM pointer type (``!llvm.ptr`` -> 0, ``!llvm.ptr<3>`` -> 3)."""
    return int(pointer_type[len("!llvm.ptr<"):-1]) if pointer_type.startswith("!llvm.ptr<") else 0


def pointer_type(space: int) -> str:
    return f"!llvm.ptr<{space}>" if space else "!llvm.ptr"


def space_info(space: int) -> tuple[str, tuple[str, ...]]:
    return SPACES.get(space, ANY_SPACE)


@dataclass
class Memory:
    """What the checks of one launch accept, with the names its error messages use.

    ``global_`` / ``shared``: ``(label, lo, hi)`` of every buffer; ``local_labels``: the label of
    each ``alloca`` by the id its registration passes; ``sites``: the source location of each
    checked access by its id. In a cluster launch ``shared_by_rank[r]`` is the shared memory of the
    CTA of rank r (``shared``: rank 0's), ``cluster`` all of them.
    """

    global_: list = field(default_factory=list)
    shared: list = field(default_factory=list)
    local_labels: list = field(default_factory=list)
    sites: list = field(default_factory=list)
    shared_by_rank: list = field(default_factory=list)

    @property
    def cluster(self) -> list:
        return [b for r in self.shared_by_rank for b in r] if self.shared_by_rank else self.shared

    def shared_of(self, ctx: int) -> list:
        """The shared buffers of the CTA of thread ``ctx``."""
        return self.shared_by_rank[C.slot(ctx, C.CLUSTER_RANK)] if self.shared_by_rank else self.shared

    def buffers(self, ctx: int, tables) -> list[tuple[str, int, int]]:
        """``(label, lo, hi)`` of the buffers of ``tables``, the local ones read from thread ``ctx``."""
        out = []
        for t in tables:
            if t == "global":
                out += self.global_
            elif t == "shared":
                out += self.shared_of(ctx)
            elif t == "cluster":
                out += self.cluster
            else:
                c = C.Ctx.from_address(ctx)
                n = min(c.i[C.NLOCAL], c.i[C.LOCAL_CAP])
                words = (ctypes.c_int64 * (3 * n)).from_address(c.local) if n else ()
                out += [(self._local_label(words[3 * k + 2]), words[3 * k], words[3 * k + 1]) for k in range(n)]
        return out

    def _local_label(self, i: int) -> str:
        return self.local_labels[i] if 0 <= i < len(self.local_labels) else f"local buffer {i}"

    def site(self, i: int) -> str | None:
        return self.sites[i] if 0 <= i < len(self.sites) else None

    def readable(self, ctx: int, addr: int) -> int:
        """How many bytes from ``addr`` lie in the buffer holding it (0: in none)."""
        for _, lo, hi in self.buffers(ctx, space_info(0)[1]):
            if lo <= addr < hi:
                return hi - addr
        return 0


def nearest(buffers, addr: int) -> str:
    """``; <label> spans [lo, hi), the access starts <offset> bytes from it`` for the closest buffer."""
    if not buffers:
        return "; there is no buffer of this kind"
    label, lo, hi = min(buffers, key=lambda r: 0 if r[1] <= addr < r[2] else min(abs(addr - r[1]),
                                                                                 abs(addr - r[2])))
    return f"; {label} spans [{lo:#x}, {hi:#x}), the access starts {addr - lo:+d} bytes from it"


def describe_fault(memory: Memory, ctx: int, where: str, addr: int, size: int, align: int, space: int,
                   what: int) -> str:
    """The message of a bad access (``where``: the thread) or of a full table of local buffers."""
    name, tables = space_info(space)
    if what & LOCAL_FULL:
        return (f"more than {C.LOCAL_CAPACITY} local buffers (alloca) live at once in one thread ({where}); "
                f"the emulator cannot check more")
    verb = "atomic on" if what & ATOMIC == ATOMIC else "store to" if what & STORE else "load from"
    head = f"{verb} {size} bytes at {addr:#x}"
    if what & MISALIGNED:
        return (f"misaligned {name} memory access: {head}, which is not a multiple of {align} bytes ({where})"
                + nearest(memory.buffers(ctx, tables), addr))
    return f"out-of-bounds {name} memory access: {head} ({where})" + nearest(memory.buffers(ctx, tables), addr)
