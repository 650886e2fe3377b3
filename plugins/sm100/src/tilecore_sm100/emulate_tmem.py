"""Blackwell tensor memory in the CPU emulator: the per-CTA model and the allocation ops.

PTX ISA, "Tensor Memory" (9.7.16.2.1 "Tensor Memory Addressing", 9.7.16.2.2 "Tensor Memory Allocation")
and "tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit" (9.7.16.7.1):

- each CTA has 128 lanes x 512 columns of 32-bit cells; an address is 32 bits, the lane in bits 31-16 and
  the column in bits 15-0;
- memory is allocated in columns (all 128 lanes of them): ``nCols`` a power of 2 in [32, 512]; the
  address of the allocation (lane 0, its first column) is written to shared memory; the instructions are
  ``.sync.aligned`` (all threads of one warp execute the same one);
- ``tcgen05.dealloc`` frees an allocation (the address and ``nCols`` of one ``tcgen05.alloc``);
  ``tcgen05.relinquish_alloc_permit`` gives up the CTA's right to allocate: a later ``tcgen05.alloc`` of
  the CTA is illegal; all tensor memory a kernel allocated must be deallocated before it exits.

``.cta_group::2`` (PTX ISA 9.7.16.7.1, "tcgen05.alloc ... .cta_group::2": one warp of each of the two peer CTAs
executes the instruction; the same columns are allocated, deallocated or given up in the tensor memory of both
CTAs of the pair, ranks 2k and 2k + 1 of the cluster, and each warp's address is written to its own CTA's shared
memory): the first of the two warps to reach its j-th ``.cta_group::2`` alloc / dealloc / relinquish performs it
on both CTAs' tensor memory (the lowest run of columns free in both), the peer's j-th one gets the same result.

The emulator keeps one :class:`TensorMemory` per running CTA (the state of the ``sm100`` emulator extension,
:mod:`tilecore.emulate.optable`). An allocation takes the lowest free run of ``nCols`` columns aligned to
``nCols`` (the hardware's placement is not specified); the cells start zero (undefined on the GPU). A warp's
i-th alloc / dealloc / relinquish is executed once, by its first thread to reach it; the others get the same
result. Failures stop the launch with a message: a column count that is not a power of 2 in [32, 512], an
alloc that does not fit (the GPU would block until another warp frees columns: not modelled), an alloc after
the CTA relinquished its permit, a dealloc of columns that are not allocated (double free) or with another
column count, and allocations still live when the CTA's last thread exits (a leak).
"""

from __future__ import annotations

import ctypes

import numpy as np

from tilecore.emulate import context as C

LANES, COLUMNS = 128, 512
ALLOC, DEALLOC, RELINQUISH = 0, 1, 2
OP_NAMES = ("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")


def split_address(taddr: int) -> tuple[int, int]:
    """(lane, column) of a tensor-memory address (PTX ISA "Tensor Memory Addressing")."""
    taddr &= 0xFFFFFFFF
    return taddr >> 16, taddr & 0xFFFF


class TensorMemory:
    """One CTA's tensor memory, its allocations and the tcgen05 operations in flight."""

    def __init__(self, rt=None):
        self.cells = np.zeros((LANES, COLUMNS), np.uint32)
        self.allocs: dict[int, tuple[int, int]] = {}  # first column -> (columns, allocating warp)
        self.relinquished = False
        self.calls: dict[tuple[int, object], int] = {}  # (thread, op) -> how many it executed
        self.done: dict[tuple[int, int, int], object] = {}  # (warp, op, i) -> result of the warp's i-th op
        self.issued: dict[int, list] = {}  # thread -> its tcgen05.mma / cp not yet committed
        self.commits: dict[int, list] = {}  # thread -> its commits [operations, mbarrier, landed]
        self.ldst_slots: dict[tuple[int, int], tuple] = {}  # (warp, i) -> the lanes gathered for a tcgen05.ld / st
        self.pair_ops = 0  # .cta_group::2 alloc / dealloc / relinquish the CTA's warps executed
        self.pair_done: dict[tuple[int, int], object] = {}  # the pair's leader: (op, j) -> result of the j-th one

    # ---- allocation
    def free_at(self, start: int, ncols: int) -> bool:
        return all(not (s < start + ncols and start < s + n) for s, (n, _) in self.allocs.items())

    def alloc(self, ncols: int, warp: int, peer: TensorMemory | None = None) -> int:
        """Allocate ``ncols`` columns (with ``peer``: the same columns in the peer CTA's tensor memory too);
        returns the address (ValueError when it cannot)."""
        check_columns(ncols, "tcgen05.alloc")
        if self.relinquished or (peer is not None and peer.relinquished):
            raise ValueError(f"tcgen05.alloc of {ncols} columns after the CTA executed "
                             "tcgen05.relinquish_alloc_permit (PTX ISA: illegal)")
        for start in range(0, COLUMNS, ncols):
            if self.free_at(start, ncols) and (peer is None or peer.free_at(start, ncols)):
                self.allocs[start] = (ncols, warp)
                if peer is not None:
                    peer.allocs[start] = (ncols, warp)
                return start
        used = sum(n for n, _ in self.allocs.values())
        raise ValueError(f"tcgen05.alloc of {ncols} columns does not fit: {used} of {COLUMNS} columns are "
                         "allocated (the GPU would wait until another warp deallocates; the emulator does not "
                         "model that wait)")

    def dealloc(self, taddr: int, ncols: int) -> None:
        check_columns(ncols, "tcgen05.dealloc")
        lane, col = split_address(taddr)
        if lane or col not in self.allocs:
            raise ValueError(f"tcgen05.dealloc of {ncols} columns at tensor-memory address {taddr & 0xFFFFFFFF:#x} "
                             f"(lane {lane}, column {col}), which is not an allocation (never allocated, or "
                             "already deallocated: a double free)")
        if self.allocs[col][0] != ncols:
            raise ValueError(f"tcgen05.dealloc of {ncols} columns at column {col}, which tcgen05.alloc allocated "
                             f"with {self.allocs[col][0]} columns")
        del self.allocs[col]

    def check_allocated(self, col: int, ncols: int, what: str) -> None:
        """ValueError unless columns [col, col + ncols) lie in one allocation."""
        if not any(s <= col and col + ncols <= s + n for s, (n, _) in self.allocs.items()):
            raise ValueError(f"{what} accesses tensor-memory columns {col}..{col + ncols - 1}, which are not "
                             "inside one tcgen05.alloc allocation")

    def leaks(self) -> str:
        return "; ".join(f"{n} columns at column {s} (allocated by warp {w})" for s, (n, w) in sorted(self.allocs.items()))


def check_columns(ncols: int, what: str) -> None:
    if ncols < 32 or ncols > COLUMNS or ncols & (ncols - 1):
        raise ValueError(f"{what} with {ncols} columns: the column count must be a power of 2 in [32, {COLUMNS}]")


PAIR = 4  # ``what`` bit of a .cta_group::2 op


def tmem_op(ext, rt, ctx, what: int, addr: int, ncols: int) -> None:
    """Runtime handler of ``__sm100_tmem``: the warp's alloc (``addr``: host address of the shared-memory
    word that receives the address), dealloc (``addr``: the tensor-memory address) or relinquish; ``what``
    | :data:`PAIR`: the ``.cta_group::2`` form."""
    t = C.slot(ctx, C.LINEAR_TID)
    warp = t >> 5
    ncols &= 0xFFFFFFFF
    pair = bool(what & PAIR)
    what &= ~PAIR
    with rt.lock:
        if rt.is_aborted(ctx):
            return
        tm = rt.ext_state(ext, ctx)
        i = tm.calls.get((t, what), 0)
        tm.calls[(t, what)] = i + 1
        key = (warp, what, i)
        if key not in tm.done:
            try:
                if pair:
                    tm.done[key] = _pair_op(ext, rt, ctx, tm, what, warp, addr, ncols)
                elif what == ALLOC:
                    tm.done[key] = tm.alloc(ncols, warp)
                elif what == DEALLOC:
                    tm.dealloc(addr, ncols)
                    tm.done[key] = None
                else:
                    tm.relinquished = True
                    tm.done[key] = None
            except ValueError as e:
                rt.fail_at(ctx, f"{OP_NAMES[what]}.cta_group::2: {e}" if pair else str(e))
                return
        if what == ALLOC:
            ctypes.c_uint32.from_address(addr).value = tm.done[key]


def _pair_op(ext, rt, ctx, tm: TensorMemory, what: int, warp: int, addr: int, ncols: int):
    """The warp's j-th ``.cta_group::2`` op: performed on both CTAs of the pair by the first of the two warps,
    the result recorded on the pair's leader (even rank) for the other."""
    rank = rt.rank_of(ctx)
    if rt.ncta < 2 or (rank | 1) >= rt.ncta:
        raise ValueError(f"CTA rank {rank} has no peer CTA (a cluster of {rt.ncta} CTA{'s' * (rt.ncta > 1)}; "
                         ".cta_group::2 pairs ranks 2k and 2k + 1)")
    peer = rt.ext_state(ext, rank=rank ^ 1)
    lead = rt.ext_state(ext, rank=rank & ~1)
    j = tm.pair_ops
    tm.pair_ops += 1
    key = (what, j)
    if key in lead.pair_done:
        kind, result = lead.pair_done.pop(key)
        if kind != (what, ncols):
            raise ValueError(f"the peer CTA's {OP_NAMES[kind[0]]} number {j} with {kind[1]} columns does not "
                             f"match this {OP_NAMES[what]} with {ncols} columns")
        return result
    if what == ALLOC:
        result = tm.alloc(ncols, warp, peer)
    elif what == DEALLOC:
        tm.dealloc(addr, ncols)
        peer.dealloc(addr, ncols)
        result = None
    else:
        tm.relinquished = peer.relinquished = True
        result = None
    lead.pair_done[key] = ((what, ncols), result)
    return result


def cta_end(rt, ctx, tm: TensorMemory) -> None:
    """The CTA's last thread exits: allocations still live are a leak."""
    if tm is not None and tm.allocs:
        rt.fail_at(ctx, f"the CTA exits with tensor memory still allocated: {tm.leaks()}; every tcgen05.alloc "
                        "needs a tcgen05.dealloc before the kernel exits (PTX ISA, \"Tensor Memory Allocation\")")
