"""The Python side of the emulator: what ``__emu_*`` runtime symbols do during a launch.

One :class:`DeviceRuntime` per launch. Collectives synchronise the host threads of
the running CTA under one lock: CTA barriers (``bar.sync`` with id and thread
count, ``bar.red``, ``bar.arrive``) release when the expected number of threads
arrived (all threads still running when no count is given, as exited warps do
not hold a barrier on the GPU); warp collectives gather the lanes of their member
mask and compute every lane's result with the row of :data:`.warp.WARP_OPS`.
When every running thread of a CTA waits and nothing can release it, the launch
fails as a deadlock instead of hanging. Any failure (assert, deadlock, misuse)
sets the abort flag of every thread; the rewritten kernel returns at its next
check.

Clusters (PTX ISA "Cluster of Cooperative Thread Arrays"): a launch with clusters of more than one CTA
runs the CTAs of one cluster at the same time (one host thread per GPU thread of each), clusters one
after another. Each CTA has its own state (:class:`_Cta`: CTA barriers, warp collectives, wgmma, plugin
state); mbarriers (keyed by host address: every CTA's shared memory has addresses of its own), the
cluster barrier (``barrier.cluster``) and deadlock detection are the cluster's.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque

import numpy as np

from ..errors import TilecoreError
from . import context as C
from .memcheck import Memory, describe_fault
from .printf import format_vprintf, read_cstring
from .warp import WARP_NAMES, WARP_OPS

_ALL = 0xFFFFFFFF

# mbarrier operations: the ``what`` operand of ``__emu_mbarrier`` is the index (see optable)
MBAR_OPS = ("init", "arrive", "arrive_drop", "arrive.nocomplete", "arrive_drop.nocomplete", "expect_tx",
            "complete_tx", "arrive.expect_tx", "test.wait.state", "test.wait.parity", "try_wait.state",
            "try_wait.parity", "inval", "cp.async.arrive")


class _BadPointer(TilecoreError):
    """A pointer printf / assert hands the emulator points outside every buffer."""


class _Cta:
    """The state of one running CTA (of a cluster: one per rank)."""

    def __init__(self, nthreads: int):
        self.live = nthreads
        self.exited: set[int] = set()
        self.barriers: dict[int, _Barrier] = {}
        self.slots: dict[tuple, _WarpSlot] = {}
        self.wg_slots: dict[int, _WarpSlot] = {}  # warpgroup -> threads gathered for a wgmma.mma_async
        self.wgmma_state: dict[int, _WgmmaState] = {}  # warpgroup -> its issued / committed wgmma.mma_async ops
        self.ext: dict[str, tuple] = {}  # plugin extension name -> (EmulatorOps, its state for this CTA)


class _ClusterBarrier:
    """``barrier.cluster`` (PTX ISA "barrier.cluster"): ``phase`` completed phases; ``arrived`` arrivals in the
    current one; ``arrivals[g]`` how many arrives thread g (rank * threads + tid) made."""

    def __init__(self):
        self.phase = 0
        self.arrived = 0
        self.waiting = 0
        self.arrivals: dict[int, int] = {}


class _Barrier:
    def __init__(self):
        self.arrived = 0
        self.waiting = 0
        self.count = -1
        self.preds: list[int] = []
        self.gen = 0
        self.results: dict[int, int] = {}


class _MBarrier:
    """An mbarrier object (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier",
    "Contents of the mbarrier object"): the phase (here the number of completed phases; its parity is the
    phase bit), the expected and pending arrival counts and the tx-count."""

    def __init__(self, count: int):
        self.expected = self.pending = count
        self.tx = 0
        self.phase = 0
        self.waiting = 0  # threads blocked in a wait on it


class _WgmmaState:
    """The wgmma.mma_async ops of one warpgroup not yet retired by a wgmma.wait_group: ``open`` the ops since
    the last commit, ``groups[i]`` those of the warpgroup's i-th commit_group; each op is the list of
    ``(address, bytes read)`` of its shared-memory operands. ``fenced``: threads that executed a
    wgmma.fence (a thread's first wgmma.mma_async needs one)."""

    def __init__(self):
        self.open: list = []
        self.groups: list = []
        self.checked = 0  # groups[:checked] are retired and checked
        self.commits: dict[int, int] = {}  # thread -> its commit_group count
        self.fenced: set[int] = set()
        self.issued: set[int] = set()


class WaitToken:
    """What threads wait for in :meth:`DeviceRuntime.wait_for` (a plugin's collective); ``what`` names it in a
    deadlock message."""

    def __init__(self, what: str = "a plugin's collective"):
        self.what = what
        self.done = False
        self.waiting = 0


class _WarpSlot:
    def __init__(self, code: int, need: int):
        self.code = code
        self.need = need          # member lanes that have not exited
        self.waiting = 0
        self.lanes: dict[int, tuple] = {}
        self.results = None


class DeviceRuntime:
    """State of one launch: captured printf text, the first error, CTA synchronisation."""

    def __init__(self, block, grid, memory: Memory | None = None, ncta: int = 1):
        self.block, self.grid = block, grid
        self.ncta = ncta  # CTAs per cluster
        self.memory = memory  # the buffers checked accesses may touch; None: no checks
        self.shared_buffers: list = []  # (label, lo, hi) of the CTA's shared memory (set by the engine)
        self.shared_by_rank: list = []  # cluster launches: the shared buffers of each rank (set by the engine)
        self.windows: list = []  # cluster launches: [lo, hi) of each rank's shared window (set by the engine)
        self.sites: list = []  # source location of each checked access / mapa by id (set by the engine)
        self.cluster_table = None  # cluster launches: the i64 [lo, hi) table of every CTA's shared buffers that
        # shared::cluster / generic accesses are checked against (set by the engine), rank by rank
        self.arg_ranges: dict[int, tuple[int, int]] = {}  # kernel argument -> its array's host range (TMA)
        self.nthreads = block[0] * block[1] * block[2]
        self.nwarps = (self.nthreads + 31) // 32
        self.lock = threading.Lock()
        self.cta_cond = threading.Condition(self.lock)
        self.warp_conds = [threading.Condition(self.lock) for _ in range(self.nwarps * ncta)]
        self.printf: list[str] = []
        self.error: TilecoreError | None = None
        self.aborted = False
        self.cta_gen = 0
        self.cp_async_pending: dict[int, tuple[list, deque]] = {}  # thread -> (uncommitted copies, groups)
        self.bulk_pending: dict[int, tuple[list, deque]] = {}  # thread -> (uncommitted TMA stores, bulk groups)
        self.sched = None  # a cooperative launch's :class:`.ctasched.CtaScheduler` (set by the engine)
        self._reset_cta()

    def _reset_cta(self):
        if self.cluster_table is not None:  # a new cluster: every CTA's shared memory is there again
            k = 0
            for bufs in self.shared_by_rank:
                for _, lo, hi in bufs:
                    self.cluster_table[2 * k], self.cluster_table[2 * k + 1] = lo, hi
                    k += 1
        self.ctas = [_Cta(self.nthreads) for _ in range(self.ncta)]
        self.live = self.nthreads * self.ncta  # running threads of the cluster
        self.blocked = 0
        self.mbarriers: dict[int, _MBarrier] = {}  # shared-memory address -> object (the cluster's CTAs')
        self.tma_pending: dict[int, list] = {}  # mbarrier address -> bulk tensor copies not landed yet
        self.cluster_barrier = _ClusterBarrier()
        self.mbar_deferred: dict[int, list] = {}  # mbarrier address -> work run when a thread waits on it
        self.tokens: set = set()  # WaitTokens threads wait for (wait_for)
        self.done = 0

    # The state of the running CTA (cluster), swapped by the cooperative scheduler (:mod:`.ctasched`).
    CTA_STATE = ("ctas", "live", "blocked", "mbarriers", "tma_pending", "cluster_barrier", "mbar_deferred", "tokens",
                 "done", "cp_async_pending", "bulk_pending")

    def save_cta_state(self) -> dict:
        """The running CTA's state (its objects; a switched-out CTA keeps them untouched; with clusters also the
        cluster's table of live shared memory, where exited CTAs have empty entries) (lock held)."""
        state = {k: getattr(self, k) for k in self.CTA_STATE}
        if self.cluster_table is not None:
            state["cluster_table"] = list(self.cluster_table)
        return state

    def restore_cta_state(self, state: dict) -> None:
        """Make ``state`` (of :meth:`save_cta_state`) the running CTA's again (lock held)."""
        for k, v in state.items():
            if k == "cluster_table":
                self.cluster_table[:] = v
            else:
                setattr(self, k, v)

    def fresh_cta_state(self) -> None:
        """The state of a CTA that starts (lock held)."""
        self._reset_cta()
        self.cp_async_pending, self.bulk_pending = {}, {}

    def spin(self, ctx, site):
        """``__emu_spin``: the thread passed ``SPIN_LIMIT`` back edges of wait loops (:mod:`.waitloops`) since its
        last check; in a cooperative launch its CTA may be switched out (:meth:`.ctasched.CtaScheduler.park`)."""
        with self.lock:
            if self._aborted(ctx):
                return
            if self.sched is None:
                C.set_slot(ctx, C.SPINS, 0)
                return
            self.sched.park(ctx, site)

    # ---- helpers
    @staticmethod
    def rank_of(ctx: int) -> int:
        """The rank in its cluster of thread ``ctx``'s CTA (0 without clusters)."""
        return C.slot(ctx, C.CLUSTER_RANK)

    def cta(self, ctx: int) -> _Cta:
        """The state of thread ``ctx``'s CTA."""
        return self.ctas[C.slot(ctx, C.CLUSTER_RANK)]

    def global_tid(self, ctx: int) -> int:
        """The thread's index in its cluster (rank * threads per CTA + linear thread index)."""
        return C.slot(ctx, C.CLUSTER_RANK) * self.nthreads + C.slot(ctx, C.LINEAR_TID)

    def shared_of(self, ctx: int | None = None, rank: int | None = None) -> list:
        """(label, lo, hi) of the shared buffers of a CTA: thread ``ctx``'s, or rank ``rank``'s."""
        if not self.shared_by_rank:
            return self.shared_buffers
        return self.shared_by_rank[rank if rank is not None else self.rank_of(ctx)]

    def cluster_shared(self) -> list:
        """(label, lo, hi) of the shared buffers of every CTA of the cluster."""
        return [b for r in self.shared_by_rank for b in r] if self.shared_by_rank else self.shared_buffers

    def window_rank(self, addr: int) -> int | None:
        """The rank whose shared window holds host address ``addr`` (a launch without clusters: 0 for an
        address in the CTA's shared buffers); None when no CTA's."""
        if not self.windows:
            return 0 if any(lo <= addr < hi for _, lo, hi in self.shared_buffers) else None
        for r, (lo, hi) in enumerate(self.windows):
            if lo <= addr < hi:
                return r
        return None

    def translate(self, addr: int, rank: int) -> int:
        """The host address of the same shared-memory offset as ``addr`` in the CTA of rank ``rank``
        (``mapa``; ValueError when ``addr`` is in no CTA's shared memory or the rank is not in the cluster)."""
        own = self.window_rank(addr)
        if own is None:
            raise ValueError(f"address {addr:#x} is not in the shared memory of any CTA of the cluster")
        if not 0 <= rank < self.ncta:
            raise ValueError(f"CTA rank {rank} is outside the cluster of {self.ncta} CTA{'s' * (self.ncta > 1)}")
        if not self.windows:
            return addr
        return addr - self.windows[own][0] + self.windows[rank][0]

    def _where(self, ctx: int) -> str:
        t = [C.slot(ctx, C.TID + d) for d in range(3)]
        b = [C.slot(ctx, C.CTAID + d) for d in range(3)]
        return f"block ({b[0]}, {b[1]}, {b[2]}), thread ({t[0]}, {t[1]}, {t[2]})" + (
            f", cluster rank {C.slot(ctx, C.CLUSTER_RANK)}" if self.ncta > 1 else "")

    def fail(self, error: TilecoreError) -> None:
        """Record the first error and wake every waiting thread (lock held or not needed)."""
        if self.error is None:
            self.error = error
        self.aborted = True
        self.cta_cond.notify_all()
        for c in self.warp_conds:
            c.notify_all()
        if self.sched is not None:
            self.sched.wake_all()

    def _aborted(self, ctx: int) -> bool:
        if self.aborted:
            C.set_slot(ctx, C.ABORT, 1)
        return self.aborted

    def fail_at(self, ctx: int, message: str) -> None:
        """Fail the launch with ``message`` and the thread's place (lock held)."""
        self.fail(TilecoreError(f"{message} ({self._where(ctx)})"))
        self._aborted(ctx)

    def is_aborted(self, ctx: int) -> bool:
        """True (and the thread's abort flag set) when the launch has failed (lock held)."""
        return self._aborted(ctx)

    def warp_members(self, warp: int, ctx: int | None = None) -> int:
        """How many threads of ``warp`` (of thread ``ctx``'s CTA; rank 0 without ``ctx``) are in the block and
        have not exited (lock held)."""
        exited = (self.cta(ctx) if ctx is not None else self.ctas[0]).exited
        return sum(1 for t in range(32 * warp, min(32 * warp + 32, self.nthreads)) if t not in exited)

    def wait_for(self, ctx: int, token: WaitToken) -> bool:
        """Block the thread until :meth:`release` of ``token`` (lock held; counts for deadlock detection);
        False when the launch failed meanwhile."""
        if token.done:
            return not self._aborted(ctx)
        token.waiting += 1
        self.tokens.add(token)
        return self._wait(self.cta_cond, lambda: token.done, ctx)

    def release(self, token: WaitToken) -> None:
        """Wake the threads waiting for ``token`` (lock held)."""
        token.done = True
        self.blocked -= token.waiting
        token.waiting = 0
        self.tokens.discard(token)
        self.cta_cond.notify_all()

    def ext_state(self, ext, ctx: int | None = None, rank: int | None = None):
        """The state of plugin extension ``ext`` (:class:`.optable.EmulatorOps`) of a running CTA (thread
        ``ctx``'s, or rank ``rank``'s; rank 0 given neither), made by ``ext.new_cta(self)`` on first use
        (lock held)."""
        cta = self.ctas[rank if rank is not None else self.rank_of(ctx) if ctx is not None else 0]
        got = cta.ext.get(ext.name)
        if got is None:
            got = cta.ext[ext.name] = (ext, ext.new_cta(self) if ext.new_cta else None)
        return got[1]

    def defer_until_wait(self, ctx: int, mbar: int, work) -> None:
        """Run ``work(ctx)`` (lock held) when a thread next waits on (or tests) the mbarrier at host address
        ``mbar``, before the wait looks at the phase; at once when threads already wait on it (lock held).
        Asynchronous operations that complete on an mbarrier (tcgen05.commit) land this way, like the bulk
        tensor copies."""
        mb = self.mbarriers.get(mbar)
        if mb is not None and mb.waiting:
            work(ctx)
        else:
            self.mbar_deferred.setdefault(mbar, []).append(work)

    def _run_deferred(self, ctx: int, mbar: int) -> None:
        for work in self.mbar_deferred.pop(mbar, []):
            if self.aborted:
                return
            work(ctx)

    def arrive_on(self, ctx: int, mbar: int, name: str) -> None:
        """One arrival (count 1) on the mbarrier at ``mbar`` on behalf of an asynchronous operation (lock held)."""
        mb = self._mb_get(ctx, mbar, name)
        if mb is not None:
            self._mb_arrive(ctx, mb, 1, False, True, name)

    def _check_deadlock(self, ctx: int) -> None:
        if self.live and self.blocked >= self.live:
            waits = []
            for r, cta in enumerate(self.ctas):
                of = f" of CTA rank {r}" if self.ncta > 1 else ""
                waits += [f"barrier {i}{of} ({b.arrived} of {b.count if b.count > 0 else cta.live} arrived)"
                          for i, b in cta.barriers.items() if b.arrived]
                waits += [f"'{WARP_NAMES[s.code]}' in warp {w}{of} (lanes {sorted(s.lanes)} of mask {m:#010x})"
                          for (w, m), s in cta.slots.items()]
                waits += [f"wgmma.mma_async in warpgroup {g}{of} (threads {sorted(s.lanes)})"
                          for g, s in cta.wg_slots.items()]
            waits += [f"mbarrier at shared address {a & 0x3FFFF:#x}{self._rank_text(a)} (phase {b.phase}: "
                      f"{b.expected - b.pending} of {b.expected} arrivals, tx-count {b.tx}; {b.waiting} waiting)"
                      for a, b in self.mbarriers.items() if b.waiting]
            cb = self.cluster_barrier
            if cb.waiting:
                waits.append(f"barrier.cluster.wait ({cb.arrived} of {self.live} running threads arrived; "
                             f"{cb.waiting} waiting)")
            waits += [f"{tok.what} ({tok.waiting} waiting)" for tok in self.tokens if tok.waiting]
            self.fail(TilecoreError(f"deadlock: all {self.live} running threads of the "
                                    f"{'cluster' if self.ncta > 1 else 'CTA'} wait: " + "; ".join(waits)))

    def _rank_text(self, addr: int) -> str:
        r = self.window_rank(addr) if self.ncta > 1 else None
        return f" of CTA rank {r}" if r is not None else ""

    def _wait(self, cond, ready, ctx) -> bool:
        """Block until ``ready()``; False when the launch aborted meanwhile."""
        self.blocked += 1
        self._check_deadlock(ctx)
        if self.sched is not None:
            self.sched.switch_if_quiescent()
        while not ready() and not self.aborted:
            cond.wait()
        return not self._aborted(ctx)

    # ---- CTA barriers
    @staticmethod
    def _expected(b: _Barrier, cta: _Cta) -> int:
        return b.count if b.count > 0 else cta.live

    def _release_if_full(self, b: _Barrier, cta: _Cta) -> None:
        if b.arrived and b.arrived >= self._expected(b, cta):
            preds = b.preds
            b.results[b.gen] = {0: 0, 1: sum(1 for p in preds if p), 2: int(all(preds)), 3: int(any(preds))}
            self.blocked -= b.waiting
            b.arrived, b.waiting, b.preds = 0, 0, []
            b.gen += 1
            self.cta_cond.notify_all()

    def barrier(self, ctx, bar_id, count, red, pred):
        with self.lock:
            if self._aborted(ctx):
                return 0
            cta = self.cta(ctx)
            b = cta.barriers.setdefault(bar_id, _Barrier())
            b.count = count
            b.arrived += 1
            b.preds.append(pred)
            gen = b.gen
            self._release_if_full(b, cta)
            if b.gen == gen:
                b.waiting += 1
                if not self._wait(self.cta_cond, lambda: b.gen != gen, ctx):
                    return 0
            return b.results[gen][red]

    def barrier_arrive(self, ctx, bar_id, count):
        with self.lock:
            if self._aborted(ctx):
                return
            cta = self.cta(ctx)
            b = cta.barriers.setdefault(bar_id, _Barrier())
            b.count = count
            b.arrived += 1
            b.preds.append(0)
            self._release_if_full(b, cta)

    # ---- barrier.cluster (PTX ISA, "Parallel Synchronization and Communication Instructions: barrier.cluster")
    # barrier.cluster.arrive marks the thread's arrival (``.release`` / ``.relaxed``: the runtime's lock orders
    # memory either way); barrier.cluster.wait waits until every non-exited thread of every CTA of the cluster
    # has arrived in the phase of the thread's last arrive (``.acquire``). A thread must arrive before it waits
    # and wait before it arrives again (undefined in PTX otherwise: the launch fails). ``.aligned`` changes
    # nothing here.
    def cluster_barrier_op(self, ctx, what):
        """``what`` 0: barrier.cluster.arrive; 1: barrier.cluster.wait."""
        g = self.global_tid(ctx)
        with self.lock:
            if self._aborted(ctx):
                return
            cb = self.cluster_barrier
            mine = cb.arrivals.get(g, 0)
            if what == 0:
                if mine > cb.phase:
                    self.fail_at(ctx, "barrier.cluster.arrive again before a barrier.cluster.wait (undefined in PTX)")
                    return
                cb.arrivals[g] = mine + 1
                cb.arrived += 1
                self._cluster_release_if_full()
                return
            if mine == 0 or mine < cb.phase:
                self.fail_at(ctx, "barrier.cluster.wait without a barrier.cluster.arrive before it (undefined in "
                                  "PTX)")
                return
            if cb.phase >= mine:
                return
            cb.waiting += 1
            self._wait(self.cta_cond, lambda: cb.phase >= mine, ctx)

    def _cluster_release_if_full(self) -> None:
        cb = self.cluster_barrier
        if cb.arrived and cb.arrived >= self.live:
            cb.phase += 1
            cb.arrived = 0
            self.blocked -= cb.waiting
            cb.waiting = 0
            self.cta_cond.notify_all()

    # ---- mapa (PTX ISA, "Data Movement and Conversion Instructions: mapa")
    def mapa(self, ctx, addr, rank, site):
        """The address of the variable at shared address ``addr`` (of any CTA of the cluster) in the shared
        memory of the CTA of rank ``rank``; a rank outside the cluster or an address outside shared memory
        fails the launch at the op (undefined in PTX)."""
        try:
            return self.translate(addr & 0xFFFFFFFFFFFFFFFF, rank & 0xFFFFFFFF)
        except ValueError as e:
            where = self.sites[site] if 0 <= site < len(self.sites) else None
            with self.lock:
                self.fail(TilecoreError(f"mapa: {e} ({self._where(ctx)})", where))
                self._aborted(ctx)
            return addr

    # ---- warp collectives
    def warp(self, ctx, code, mask, a, b, c):
        t = C.slot(ctx, C.LINEAR_TID)
        lane, w = t & 31, t >> 5
        mask &= _ALL
        with self.lock:
            if self._aborted(ctx):
                return 0
            name = WARP_NAMES[code]
            if not (mask >> lane) & 1:
                self.fail(TilecoreError(f"'{name}' executed by lane {lane}, which is not in its member mask "
                                        f"{mask:#010x} ({self._where(ctx)})"))
                return self._aborted(ctx) and 0
            cta = self.cta(ctx)
            slot = cta.slots.get((w, mask))
            if slot is None:
                # PTX: a .sync collective waits for the non-exited threads of its member mask
                need = sum(1 for ln in range(32) if (mask >> ln) & 1 and w * 32 + ln < self.nthreads
                           and w * 32 + ln not in cta.exited)
                slot = cta.slots[(w, mask)] = _WarpSlot(code, need)
            if slot.code != code:
                self.fail(TilecoreError(f"lanes of warp {w} with member mask {mask:#010x} execute different warp "
                                        f"collectives: '{WARP_NAMES[slot.code]}' and '{name}' ({self._where(ctx)})"))
                return self._aborted(ctx) and 0
            slot.lanes[lane] = (a, b, c)
            wc = self.rank_of(ctx) * self.nwarps + w
            self._complete_if_ready(cta, w, mask, slot, wc)
            if slot.results is None:
                slot.waiting += 1
                if not self._wait(self.warp_conds[wc], lambda: slot.results is not None, ctx):
                    return 0
            return slot.results[lane]

    def _complete_if_ready(self, cta: _Cta, w: int, mask: int, slot: _WarpSlot, wc: int) -> None:
        if slot.results is None and len(slot.lanes) >= slot.need:
            slot.results = WARP_OPS[WARP_NAMES[slot.code]](mask, slot.lanes)
            del cta.slots[(w, mask)]
            self.blocked -= slot.waiting
            self.warp_conds[wc].notify_all()

    # ---- mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier")
    def _mb_get(self, ctx, addr: int, name: str):
        mb = self.mbarriers.get(addr)
        if mb is None:
            self.fail(TilecoreError(f"'{name}' on shared address {addr & 0x3FFFF:#x}{self._rank_text(addr)}, which "
                                    "holds no mbarrier object "
                                    f"(mbarrier.init missing, or after mbarrier.inval) ({self._where(ctx)})"))
            self._aborted(ctx)
        return mb

    def _mb_complete_if_done(self, mb: _MBarrier) -> None:
        """"Phase completion of the mbarrier object": pending arrivals and tx-count both zero -> the phase
        completes, the pending count is reloaded from the expected count, waiting threads resume."""
        if mb.pending == 0 and mb.tx == 0:
            mb.phase += 1
            mb.pending = mb.expected
            self.blocked -= mb.waiting
            mb.waiting = 0
            self.cta_cond.notify_all()

    def _mb_arrive(self, ctx, mb: _MBarrier, count: int, drop: bool, complete: bool, name: str) -> int:
        state = mb.phase
        if drop:
            mb.expected -= count
        mb.pending -= count
        if mb.pending < 0 or mb.expected < 0:
            self.fail(TilecoreError(f"'{name}' by {count} on an mbarrier with {mb.pending + count} pending arrivals "
                                    f"(more arrivals than its expected count; undefined in PTX) ({self._where(ctx)})"))
            self._aborted(ctx)
            return 0
        if not complete and mb.pending == 0 and mb.tx == 0:
            self.fail(TilecoreError(f"'{name}' completes the mbarrier's current phase (undefined in PTX for the "
                                    f".nocomplete forms) ({self._where(ctx)})"))
            self._aborted(ctx)
            return 0
        self._mb_complete_if_done(mb)
        return state

    def _mb_block(self, ctx, mb: _MBarrier, ready) -> int:
        if ready():
            return 1
        mb.waiting += 1
        return int(self._wait(self.cta_cond, ready, ctx))

    def mbarrier(self, ctx, what, addr, value, pred):
        """One mbarrier operation (``what``: :data:`MBAR_OPS` index) on the object at host address ``addr``;
        ``value``: the count / tx-count / state / phase parity operand; ``pred`` 0: a predicated-off op."""
        name = MBAR_OPS[what]
        if not pred & 1:
            return 0
        with self.lock:
            if self._aborted(ctx):
                return 0
            if name == "init":
                if not 1 <= value <= (1 << 20) - 1:
                    self.fail(TilecoreError(f"mbarrier.init with count {value}, outside [1, 2^20 - 1] "
                                            f"({self._where(ctx)})"))
                    self._aborted(ctx)
                    return 0
                self.mbarriers[addr] = _MBarrier(value)
                return 0
            mb = self._mb_get(ctx, addr, "mbarrier." + name)
            if mb is None:
                return 0
            if name == "inval":
                if mb.waiting:
                    self.fail(TilecoreError(f"mbarrier.inval while {mb.waiting} threads wait on it ({self._where(ctx)})"))
                    self._aborted(ctx)
                    return 0
                del self.mbarriers[addr]
                return 0
            value &= 0xFFFFFFFFFFFFFFFF
            if name in ("arrive", "arrive_drop", "arrive.nocomplete", "arrive_drop.nocomplete"):
                return self._mb_arrive(ctx, mb, value & 0xFFFFFFFF, "drop" in name, "nocomplete" not in name,
                                       "mbarrier." + name)
            if name in ("expect_tx", "complete_tx", "arrive.expect_tx"):
                tx = value & 0xFFFFFFFF
                mb.tx += -tx if name == "complete_tx" else tx
                if abs(mb.tx) > (1 << 20) - 1:
                    self.fail(TilecoreError(f"mbarrier.{name} takes the tx-count to {mb.tx}, outside "
                                            f"[-(2^20 - 1), 2^20 - 1] ({self._where(ctx)})"))
                    self._aborted(ctx)
                    return 0
                if name == "arrive.expect_tx":
                    return self._mb_arrive(ctx, mb, 1, False, True, "mbarrier." + name)
                self._mb_complete_if_done(mb)
                return 0
            if name == "cp.async.arrive":  # value 1: .noinc
                self._land_thread_copies(self.global_tid(ctx))
                if value & 1:
                    return self._mb_arrive(ctx, mb, 1, False, True, "cp.async.mbarrier.arrive.noinc")
                return 0  # the pending count goes up by one and the copies' arrive takes it down again
            # waits: a state (the phase number arrive returned) or a phase parity; the bulk tensor copies
            # that signal this mbarrier land first
            self._tma_land(ctx, addr)
            self._run_deferred(ctx, addr)
            if self.aborted:
                return 0
            if name.endswith("state"):
                ready = lambda: mb.phase > value  # noqa: E731 - phase number `value` completed
            else:
                parity = value & 1
                ready = lambda: (mb.phase & 1) != parity  # noqa: E731 - the phase with that parity completed
            if name.startswith("test"):  # non-blocking: give other threads a moment when it is not ready
                if not ready():
                    self.cta_cond.wait(0.0005)
                return int(ready())
            return self._mb_block(ctx, mb, ready)

    # ---- cp.async.bulk.tensor (TMA), tile mode (see optable)
    def tma(self, ctx, dst, tmap, coords, mbar, flags):
        """Queue the copy of the box at ``coords`` (i32[rank] at host address ``coords``; rank = flags & 7,
        predicate bit 8) of the tensor map at ``tmap`` to shared ``dst``, completing its bytes on the
        mbarrier at ``mbar`` when it lands (at the next wait on that mbarrier; at once when threads
        already wait on it).

        Clusters (PTX ISA 9.7.9.25 "cp.async.bulk.tensor", .multicast::cluster and .cta_group): ``dst`` is a shared::cluster address, in any
        CTA of the cluster. Without ``.cta_group`` (or ``::1``) the mbarrier must be in the destination's CTA;
        with ``.cta_group::2`` (flags bit 10) in the destination's CTA or its peer (rank ^ 1). With
        ``.multicast::cluster`` (bit 9; ctaMask in bits 16-31) the box lands at ``dst``'s offset in the shared
        memory of every CTA of the mask, each completing on the mbarrier at ``mbar``'s offset in that CTA
        (``.cta_group::2``: in the CTA of the destination's pair that ``mbar``'s CTA is in, leader or peer)."""
        from .hopper import WINDOW

        if not flags & 0x100:
            return
        rank = flags & 7
        cs = list((ctypes.c_int32 * rank).from_address(coords))
        with self.lock:
            if self._aborted(ctx):
                return
            try:
                tm, base = self._tensor_map(ctx, tmap, rank)
                pair = bool(flags & 0x400)
                if flags & 0x200:
                    mask = (flags >> 16) & 0xFFFF
                    if not mask or mask >> self.ncta:
                        raise ValueError(f"the ctaMask {mask:#06x} must name CTAs of the cluster of {self.ncta} "
                                         "CTA" + "s" * (self.ncta > 1))
                    mrank = self.window_rank(mbar)
                    if mrank is None:
                        raise ValueError(f"the mbarrier address {mbar:#x} is not in shared memory")
                    targets = [(self.translate(dst, r), self.translate(mbar, (r & ~1) | (mrank & 1) if pair else r))
                               for r in range(self.ncta) if (mask >> r) & 1]
                else:
                    targets = [(dst, mbar)]
                for d, m in targets:
                    self._shared_box(tm, d, "destination", self.cluster_shared())
                    if m not in self.mbarriers:
                        raise ValueError(f"the mbarrier at shared address {m % WINDOW:#x}{self._rank_text(m)} is not "
                                         "initialised")
                    dr, mr = self.window_rank(d), self.window_rank(m)
                    if mr != dr and not (pair and mr == (dr ^ 1)):
                        raise ValueError(f"the mbarrier (CTA rank {mr}) must be in the destination's CTA (rank {dr})"
                                         + (" or its peer" if pair else " (without .cta_group::2)"))
            except ValueError as e:
                self.fail(TilecoreError(f"cp.async.bulk.tensor: {e} ({self._where(ctx)})"))
                self._aborted(ctx)
                return
            for d, m in targets:
                self.tma_pending.setdefault(m, []).append((tm, base, cs, d, d % WINDOW))
            for m in dict.fromkeys(m for _, m in targets):
                if self.mbarriers[m].waiting:
                    self._tma_land(ctx, m)

    def _tensor_map(self, ctx, tmap: int, rank: int):
        """(the decoded tensor map at ``tmap`` for a ``rank``-D copy, the host address of its tensor's first
        element); ValueError when the map is unreadable, of another rank, or its tensor exceeds its array."""
        from . import tensormap

        if self.memory is not None and self.memory.readable(ctx, tmap) < 128:
            raise ValueError(f"the tensor map pointer {tmap:#x} does not point to 128 readable bytes")
        tm = tensormap.decode(ctypes.string_at(tmap, 128))
        if tm["rank"] != rank:
            raise ValueError(f"a {rank}-D copy with a {tm['rank']}-D tensor map")
        if tm["arg"] not in self.arg_ranges:
            raise ValueError(f"the tensor map names kernel argument {tm['arg']}, which is no array")
        lo, hi = self.arg_ranges[tm["arg"]]
        esize, dims = tm["esize"], tm["global_dim"]
        last = tm["offset"] + esize * (1 + (dims[0] - 1)) + sum(
            (d - 1) * s for d, s in zip(dims[1:], tm["global_strides"]))
        if lo + last > hi:
            raise ValueError(f"the tensor map's tensor ({last} bytes from offset {tm['offset']}) is larger "
                             f"than kernel argument {tm['arg']} ({hi - lo} bytes)")
        return tm, lo + tm["offset"]

    def _shared_box(self, tm, addr: int, what: str, buffers) -> None:
        from .hopper import WINDOW

        nbytes = tm["esize"] * int(np.prod(tm["box_dim"]))
        if addr % 128 or not any(b_lo <= addr and addr + nbytes <= b_hi for _, b_lo, b_hi in buffers):
            raise ValueError(f"the {what} (shared address {addr % WINDOW:#x}, {nbytes} bytes) must be "
                             "128-byte aligned inside one shared-memory buffer")

    # ---- cp.async.bulk.tensor shared -> global (TMA store), bulk async-groups (see optable)
    def bulk_store(self, ctx, what, tmap, src, coords, flags):
        """``what`` 0: queue the store of the box at shared ``src`` to the tensor of the map at ``tmap`` at
        ``coords`` (i32[rank] at host address ``coords``; rank = flags & 7); 1: commit the thread's queued
        stores as a bulk async-group; 2: wait_group ``flags`` (all but the newest ``flags`` groups land); 3:
        the thread exits (every store it queued lands)."""
        from . import tensormap
        from .hopper import WINDOW

        t = self.global_tid(ctx)
        open_, groups = self.bulk_pending.setdefault(t, ([], deque()))
        if what == 0:
            rank = flags & 7
            cs = list((ctypes.c_int32 * rank).from_address(coords))
            with self.lock:
                if self._aborted(ctx):
                    return
                try:
                    tm, base = self._tensor_map(ctx, tmap, rank)
                    self._shared_box(tm, src, "source", self.shared_of(ctx))
                except ValueError as e:
                    self.fail(TilecoreError(f"cp.async.bulk.tensor (store): {e} ({self._where(ctx)})"))
                    self._aborted(ctx)
                    return
            open_.append((tm, base, cs, src, src % WINDOW))
            return
        if what == 1:
            groups.append(list(open_))
            open_.clear()
            return
        landing = []
        if what == 2:
            while len(groups) > flags:
                landing += groups.popleft()
        else:
            landing = [s for g in groups for s in g] + open_
            self.bulk_pending.pop(t, None)
            if self.aborted:
                return
        with self.lock:
            for tm, base, cs, src, window in landing:
                tensormap.box_store(tm, base, cs, src, window)

    def _tma_land(self, ctx, mbar: int) -> None:
        from . import tensormap

        for tm, base, cs, dst, window in self.tma_pending.pop(mbar, []):
            try:
                n = tensormap.box_copy(tm, base, cs, dst, window)
            except ValueError as e:
                self.fail(TilecoreError(f"cp.async.bulk.tensor: {e} ({self._where(ctx)})"))
                self._aborted(ctx)
                return
            mb = self.mbarriers.get(mbar)
            if mb is None:
                self.fail(TilecoreError(f"cp.async.bulk.tensor completes on an mbarrier that was invalidated "
                                        f"({self._where(ctx)})"))
                self._aborted(ctx)
                return
            mb.tx -= n
            self._mb_complete_if_done(mb)

    # ---- wgmma (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions")
    def wgmma(self, ctx, what, form, buf):
        """``what`` 0: wgmma.fence; 1: wgmma.commit_group; 2: wgmma.wait_group ``form`` (N); 3:
        wgmma.mma_async of form ``form`` (:data:`.hopper.FORMS` index) with the thread's buffer at ``buf``
        (descriptor A, descriptor B: i64; scale-d: i32; pad; the accumulator words)."""
        t = C.slot(ctx, C.LINEAR_TID)
        g = t >> 7
        with self.lock:
            if self._aborted(ctx):
                return
            st = self.cta(ctx).wgmma_state.setdefault(g, _WgmmaState())
            if what == 0:
                st.fenced.add(t)
            elif what == 1:
                j = st.commits.get(t, 0)
                if j == len(st.groups):
                    st.groups.append(st.open)
                    st.open = []
                st.commits[t] = j + 1
            elif what == 2:
                upto = st.commits.get(t, 0) - form
                for group in st.groups[st.checked:max(upto, 0)]:
                    for operands in group:
                        self._wgmma_check_operands(ctx, operands)
                st.checked = max(st.checked, upto)
            else:
                self._wgmma_issue(ctx, t, g, st, form, buf)

    def _wgmma_check_operands(self, ctx, operands) -> None:
        from .hopper import SharedMemory

        for host, raw in operands:
            if not np.array_equal(SharedMemory.read(host, raw.shape[-1]), raw):
                self.fail(TilecoreError("shared memory read by a wgmma.mma_async changed before the "
                                        f"wgmma.wait_group that retires it (undefined in PTX) ({self._where(ctx)})"))
                self._aborted(ctx)
                return

    def _wgmma_issue(self, ctx, t, g, st, form, buf) -> None:
        if t not in st.issued and t not in st.fenced:
            self.fail(TilecoreError(f"wgmma.mma_async without a wgmma.fence before the warpgroup's first one "
                                    f"(PTX ISA: required) ({self._where(ctx)})"))
            self._aborted(ctx)
            return
        st.issued.add(t)
        wg_slots = self.cta(ctx).wg_slots
        slot = wg_slots.get(g)
        if slot is None:
            need = min(128, self.nthreads - 128 * g)
            slot = wg_slots[g] = _WarpSlot(form, need)
        if slot.code != form:
            self.fail(TilecoreError(f"threads of warpgroup {g} execute different wgmma.mma_async forms "
                                    f"({self._where(ctx)})"))
            self._aborted(ctx)
            return
        slot.lanes[t & 127] = buf
        if len(slot.lanes) >= slot.need:
            del wg_slots[g]
            if slot.need < 128:
                self.fail(TilecoreError(f"wgmma.mma_async needs the 128 threads of warpgroup {g} (4 warps); the "
                                        f"block has {slot.need} of them ({self._where(ctx)})"))
                self._aborted(ctx)
                return
            from . import hopper

            first = slot.lanes[0]
            desc_a = ctypes.c_uint64.from_address(first).value
            desc_b = ctypes.c_uint64.from_address(first + 8).value
            scale_d = ctypes.c_int32.from_address(first + 16).value
            f = hopper.FORMS[form]
            words = f["words"]
            accs = {lane: (ctypes.c_uint32 * words).from_address(a + 24) for lane, a in slot.lanes.items()}
            a_regs = {lane: (ctypes.c_uint32 * 4).from_address(a + 24 + 4 * words) for lane, a in slot.lanes.items()} \
                if f["a_regs"] else None  # A from registers: four words after the accumulator's
            try:
                operands = hopper.wgmma(f, desc_a, desc_b, scale_d, accs, hopper.SharedMemory(self.shared_of(ctx)),
                                        a_regs)
            except ValueError as e:
                self.fail(TilecoreError(f"wgmma.mma_async: {e} ({self._where(ctx)})"))
                self._aborted(ctx)
                return
            st.open.append(operands)
            slot.results = True
            self.blocked -= slot.waiting
            self.cta_cond.notify_all()
            return
        slot.waiting += 1
        self._wait(self.cta_cond, lambda: slot.results is not None, ctx)

    # ---- end of a thread's CTA
    def cta_done(self, ctx):
        t = C.slot(ctx, C.LINEAR_TID)
        with self.lock:
            cta = self.cta(ctx)
            self.live -= 1
            cta.live -= 1
            cta.exited.add(t)
            if not self.aborted:
                for b in cta.barriers.values():
                    if b.count <= 0:
                        self._release_if_full(b, cta)
                if (t >> 7) in cta.wg_slots:
                    self.fail(TilecoreError(f"a thread of warpgroup {t >> 7} exited while the others wait in "
                                            f"wgmma.mma_async ({self._where(ctx)})"))
                for (w, m), s in list(cta.slots.items()):
                    if w == t >> 5 and (m >> (t & 31)) & 1:
                        s.need -= 1
                        self._complete_if_ready(cta, w, m, s, self.rank_of(ctx) * self.nwarps + w)
                self._cluster_release_if_full()  # barrier.cluster waits for the non-exited threads only
                if cta.live == 0 and self.cluster_table is not None:
                    self._retire_shared(self.rank_of(ctx))
                self._check_deadlock(ctx)
            self.done += 1
            gen = self.cta_gen
            if self.done == self.nthreads * self.ncta:
                for c in self.ctas:
                    for ext, state in list(c.ext.values()):
                        if ext.cta_end is not None and not self.aborted:
                            ext.cta_end(self, ctx, state)
                if self.sched is not None:  # a cooperative launch: each host thread runs one CTA
                    self.sched.finished()
                    self._aborted(ctx)
                    return
                self._reset_cta()
                self.cta_gen += 1
                self.cta_cond.notify_all()
            elif self.sched is not None:
                if not self.aborted:
                    self.sched.switch_if_quiescent()  # the others may all be parked or blocked now
            else:
                while self.cta_gen == gen and not self.aborted:
                    self.cta_cond.wait()
            self._aborted(ctx)

    def _retire_shared(self, rank: int) -> None:
        """The CTA of ``rank`` has exited: its shared memory is gone (PTX ISA "Distributed Shared Memory": a CTA
        must not exit while others may still access its shared memory; a barrier.cluster before the exit is
        the usual guard): its entries of the cluster table become empty, so a later shared::cluster or generic
        access by a peer fails as out of bounds."""
        k = sum(len(b) for b in self.shared_by_rank[:rank])
        for j in range(k, k + len(self.shared_by_rank[rank])):
            self.cluster_table[2 * j] = self.cluster_table[2 * j + 1] = 0

    # ---- printf, assert, clock
    def _string(self, ctx, addr: int, what: str) -> str:
        """The C string at ``addr``, read no further than the end of its buffer when checks are on."""
        if self.memory is None or not addr:
            return read_cstring(addr)
        room = self.memory.readable(ctx, addr)
        if not room:
            raise _BadPointer(f"{what} {addr:#x} points into no buffer ({self._where(ctx)})")
        return read_cstring(addr, room)

    def vprintf(self, ctx, fmt, args):
        fmt_text = self._string(ctx, fmt, "printf's format string")
        room = None if self.memory is None or not args else self.memory.readable(ctx, args)
        try:  # a format without conversions reads no argument: its buffer may be any pointer (printf("done\n"))
            text = format_vprintf(fmt_text, args or 0, room, None if self.memory is None else
                                  lambda a: self._string(ctx, a, "a printf %s argument"))
        except IndexError:
            if room == 0:
                raise _BadPointer(f"printf's argument buffer {args:#x} points into no buffer "
                                  f"({self._where(ctx)})") from None
            raise _BadPointer(f"printf '{fmt_text}' reads past its argument buffer ({self._where(ctx)})") from None
        with self.lock:
            self.printf.append(text)
        return len(text)

    def assertfail(self, ctx, msg, file, line, func, _char_size):
        err = TilecoreError(f"device-side assertion failed: {self._string(ctx, msg, 'the assert message')} (in "
                            f"{self._string(ctx, func, 'the assert function name')}, {self._where(ctx)})",
                            f"{self._string(ctx, file, 'the assert file name')}:{line}")
        with self.lock:
            self.fail(err)
            self._aborted(ctx)

    def fault(self, ctx, addr, size, align, space, what, site):
        """A checked access was bad (or a thread's table of local buffers is full): fail the launch."""
        memory = self.memory or Memory()
        text = describe_fault(memory, ctx, self._where(ctx), addr, size, align, space, what)
        r = self.window_rank(addr) if self.cluster_table is not None else None
        if r is not None and self.ctas[r].live == 0:
            text += (f" (the shared memory of CTA rank {r}, which has exited: a CTA's shared memory must not be "
                     "accessed after it exits; PTX ISA \"Distributed Shared Memory\")")
        err = TilecoreError(text, memory.site(site))
        with self.lock:
            self.fail(err)
            self._aborted(ctx)

    # ---- cp.async (see optable: the copies land when a wait retires their group, or at thread exit)
    def cp_async(self, ctx, what, dst, src, size, n):
        """``what`` 0: queue the copy of ``size`` bytes to ``dst``, ``n`` of them from ``src`` (the rest
        zero); 1: commit the queued copies as a group; 2: wait_group ``size``; 3: the thread exits."""
        t = self.global_tid(ctx)
        if what == 3:  # thread exit (its TMA stores too: the rows of both set ``uses_cp_async``)
            if t in self.bulk_pending:
                self.bulk_store(ctx, 3, 0, 0, 0, 0)
            state = self.cp_async_pending.pop(t, None)
            if state is not None and not self.aborted:
                for group in state[1]:
                    self._land(group)
                self._land(state[0])
            return
        open_, groups = self.cp_async_pending.setdefault(t, ([], deque()))
        if what == 0:
            n &= 0xFFFFFFFF
            if n > size:
                with self.lock:
                    self.fail(TilecoreError(f"cp.async of {size} bytes with src-size {n} > {size} (undefined in "
                                            f"PTX) ({self._where(ctx)})"))
                    self._aborted(ctx)
                return
            open_.append((dst, src, size, n))
        elif what == 1:
            groups.append(list(open_))
            open_.clear()
        else:  # wait_group N (N in ``size``): all but the newest N committed groups complete
            while len(groups) > size:
                self._land(groups.popleft())

    def _land_thread_copies(self, t: int) -> None:
        """Every cp.async the thread issued so far lands (for cp.async.mbarrier.arrive)."""
        state = self.cp_async_pending.get(t)
        if state is not None:
            for group in state[1]:
                self._land(group)
            state[1].clear()
            self._land(state[0])
            state[0].clear()

    @staticmethod
    def _land(copies) -> None:
        for dst, src, size, n in copies:
            if n:
                ctypes.memmove(dst, src, n)
            if size > n:
                ctypes.memset(dst + n, 0, size - n)

    def clock(self, ctx):
        return time.perf_counter_ns()


_P, _I32, _I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
# runtime symbol -> (ctypes prototype, DeviceRuntime method, value returned after an internal error)
CALLBACKS = {
    "__emu_barrier": (ctypes.CFUNCTYPE(_I32, _P, _I32, _I32, _I32, _I32), "barrier", 0),
    "__emu_barrier_arrive": (ctypes.CFUNCTYPE(None, _P, _I32, _I32), "barrier_arrive", None),
    "__emu_warp": (ctypes.CFUNCTYPE(_I64, _P, _I32, _I32, _I64, _I32, _I32), "warp", 0),
    "__emu_vprintf": (ctypes.CFUNCTYPE(_I32, _P, _P, _P), "vprintf", 0),
    "__emu_assertfail": (ctypes.CFUNCTYPE(None, _P, _P, _P, _I32, _P, _I64), "assertfail", None),
    "__emu_clock": (ctypes.CFUNCTYPE(_I64, _P), "clock", 0),
    "__emu_cta_done": (ctypes.CFUNCTYPE(None, _P), "cta_done", None),
    "__emu_spin": (ctypes.CFUNCTYPE(None, _P, _I32), "spin", None),
    "__emu_fault": (ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I64, _I32, _I32, _I32), "fault", None),
    "__emu_cp_async": (ctypes.CFUNCTYPE(None, _P, _I32, _I64, _I64, _I32, _I32), "cp_async", None),
    "__emu_mbarrier": (ctypes.CFUNCTYPE(_I64, _P, _I32, _I64, _I64, _I32), "mbarrier", 0),
    "__emu_wgmma": (ctypes.CFUNCTYPE(None, _P, _I32, _I32, _I64), "wgmma", None),
    "__emu_tma": (ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I64, _I64, _I32), "tma", None),
    "__emu_bulk_store": (ctypes.CFUNCTYPE(None, _P, _I32, _I64, _I64, _I64, _I32), "bulk_store", None),
    "__emu_cluster_barrier": (ctypes.CFUNCTYPE(None, _P, _I32), "cluster_barrier_op", None),
    "__emu_mapa": (ctypes.CFUNCTYPE(_I64, _P, _I64, _I32, _I32), "mapa", 0),
}


def make_callbacks(current):
    """ctypes callbacks for every runtime symbol, dispatching to ``current()`` (the running launch); also the
    symbols of the plugins' emulator extensions (:class:`.optable.RuntimeSymbol`)."""
    from .optable import extensions

    table = {sym: (proto, method, fallback) for sym, (proto, method, fallback) in CALLBACKS.items()}
    for ext in extensions():
        for sym, s in ext.symbols.items():
            table.setdefault(sym, (s.proto, s.handler, s.fallback))
    out = {}
    for sym, (proto, method, fallback) in table.items():
        def tramp(ctx, *args, _m=method, _fb=fallback):
            rt = current()
            try:
                if callable(_m):
                    return _m(rt, ctx, *args)
                return getattr(rt, _m)(ctx, *args)
            except Exception as e:  # noqa: BLE001 - never let a traceback escape a callback
                with rt.lock:
                    rt.fail(e if isinstance(e, _BadPointer) else
                            TilecoreError(f"internal error in the emulator ({getattr(_m, '__name__', _m)}): "
                                          f"{type(e).__name__}: {e}"))
                C.set_slot(ctx, C.ABORT, 1)
                return _fb
        out[sym] = proto(tramp)
    return out
