"""Cooperative CTA scheduling: forward progress for CTAs that wait for each other through global memory.

On a GPU every CTA of a grid that fits is resident at once, so a CTA may wait in a loop for a flag that a
later CTA sets (stream-K fix-up, a global barrier, a reversed look-back, a semaphore). The emulator runs
CTAs one after another, where such a wait never ends. A kernel with wait loops (:mod:`.waitloops`) is
launched through a :class:`CtaScheduler` instead:

- each CTA in flight is a :class:`_Group` run by a :class:`_Crew` of host threads (one per GPU thread; a crew
  whose CTA finished runs the next one, so a launch in which no CTA waits uses one crew, like the concurrent
  path); one group holds the *baton* and runs, the others are switched out;
- a thread of the running group that has passed ``SPIN_LIMIT`` back edges of wait loops since its last
  check *parks* (:meth:`CtaScheduler.park`); once every running thread of the group is parked, waits on
  its CTA's barriers and collectives, or has exited (the group is quiescent), the group is switched out:
  its runtime state (:meth:`.runtime.DeviceRuntime.save_cta_state`) and its shared memory are saved, and
  the baton goes to a CTA not started yet (a fresh group), or else to the longest switched-out group, whose
  state and shared memory are restored;
- a finished CTA hands the baton to the longest switched-out group, or else starts the next CTA;
- when every CTA still running is switched out, none can be started, and two full rounds of switches leave
  global memory unchanged, no CTA can make progress (each waits for memory that nobody changes): the launch
  fails as a deadlock naming the kernel, each waiting CTA and the loop it waits in.

Only one CTA runs at a time, so the single instance of the static shared variables and the dynamic shared
buffer serve every CTA (saved and restored at each switch), and the rest of the emulator is unchanged.

In a launch with clusters the unit is a whole cluster (its CTAs run together on one crew, as without
waits; the shared windows of all its CTAs are saved at a switch); messages then name clusters.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque

from ..errors import TilecoreError
from . import context as C

SPIN_LIMIT = 8  # back edges of wait loops a thread runs before its CTA may be switched out
MAX_IN_FLIGHT = 64  # CTAs started and not finished at once (each holds a host thread per GPU thread)


class _Crew:
    """Host threads, one per GPU thread of a CTA, that run the CTAs the scheduler gives them, one after another."""

    def __init__(self, lock):
        self.cond = threading.Condition(lock)
        self.cta = -1  # the CTA it runs (the latest assignment)
        self.seq = 0  # assignments so far
        self.threads: list = []


class _Group:
    """One CTA in flight: its linear index, its crew and, while switched out, its state."""

    def __init__(self, cta: int, crew: _Crew, lock):
        self.cta = cta
        self.crew = crew
        self.cond = threading.Condition(lock)  # its parked threads wait here (not on the runtime's: no herd)
        self.parked = 0  # threads waiting in park()
        self.turn = 0  # times the group got the baton
        self.site = -1  # the wait loop its last parked thread waits in (an index of the runtime's sites)
        self.saved = None  # (runtime state, shared memory bytes) while switched out


class CtaScheduler:
    """Runs the CTAs ``0 .. ncta - 1`` of a launch cooperatively (see the module docstring).

    ``rt``: the launch's :class:`.runtime.DeviceRuntime` (its lock and ``cta_cond`` are used); ``contexts()``: new
    contexts of a crew's threads (one per GPU thread); ``call(ctx)``: runs the native driver on a context (its
    CTA_BEGIN / CTA_END set to the CTA); ``grid``: the grid (x, y, z) for messages; ``kernel``: the kernel's
    name; ``shared``: (label, lo, hi) of the shared memory a CTA owns (saved at switches); ``global_``: (label, lo, hi) of global memory (watched for progress);
    ``max_in_flight``: CTAs started and not finished at once (None: :data:`MAX_IN_FLIGHT`, read at the call).
    ``unit``: ``"CTA"``, or ``"cluster"`` in a launch with clusters, where the unit scheduled is a whole cluster
    (its CTAs run together, on one crew; ``ncta`` and ``grid`` count clusters).
    """

    def __init__(self, rt, ncta: int, contexts, call, grid, kernel: str, shared, global_,
                 max_in_flight: int | None = None, unit: str = "CTA"):
        self.rt = rt
        self.ncta = ncta
        self.contexts = contexts
        self.call = call
        self.grid = grid
        self.kernel = kernel
        self.shared = [(lo, hi - lo) for _, lo, hi in shared if hi > lo]
        self.global_ = [(lo, hi - lo) for _, lo, hi in global_ if hi > lo]
        self.max_in_flight = MAX_IN_FLIGHT if max_in_flight is None else max_in_flight
        self.unit = unit
        self.next_cta = 0
        self.active: _Group | None = None
        self.waiting: deque[_Group] = deque()  # switched-out groups, longest first
        self.crews: list[_Crew] = []  # every crew (their threads are joined at the end)
        self.idle: list[_Crew] = []  # crews whose CTA finished
        self.in_flight = 0
        self.done = False
        self.switches = 0
        self.stale = 0  # switches in a row that found global memory unchanged
        self.last_memory = None

    # ---- called by the engine
    def run(self) -> None:
        """Start CTA 0 and block until every CTA finished or the launch failed; joins every host thread."""
        rt = self.rt
        with rt.lock:
            self._start_next()
            while not self.done and not rt.aborted:
                rt.cta_cond.wait()
            self.done = True
            for crew in self.crews:
                crew.cond.notify_all()
            crews = list(self.crews)
        for crew in crews:
            for th in crew.threads:
                th.join()

    def _work(self, crew: _Crew, ctx) -> None:
        """A crew thread: run each CTA given to the crew on ``ctx`` until the launch is over."""
        rt = self.rt
        seen = 0
        while True:
            with rt.lock:
                while crew.seq == seen and not self.done and not rt.aborted:
                    crew.cond.wait()
                if crew.seq == seen or rt.aborted:
                    return
                seen, cta = crew.seq, crew.cta
            ctx.i[C.CTA_BEGIN], ctx.i[C.CTA_END], ctx.i[C.SPINS] = cta, cta + 1, 0
            self.call(ctx)

    # ---- called by the runtime (its lock held)
    def park(self, ctx: int, site: int) -> None:
        """Thread ``ctx`` of the running CTA passed its wait loops' back edges ``SPIN_LIMIT`` times: wait until its
        CTA gets the baton again (at once when no other CTA can run and memory changed)."""
        rt = self.rt
        g = self.active
        C.set_slot(ctx, C.SPINS, 0)
        if g is None:
            return
        g.parked += 1
        g.site = site
        turn = g.turn
        self.switch_if_quiescent()
        while not (self.active is g and g.turn != turn) and not rt.aborted:
            g.cond.wait()
        rt.is_aborted(ctx)

    def switch_if_quiescent(self) -> None:
        """Switch the running CTA out when each of its running threads is parked or blocked in a CTA wait and at
        least one is parked (a thread blocking or exiting calls this too)."""
        rt = self.rt
        g = self.active
        if g is None or rt.aborted or not g.parked or g.parked + rt.blocked < rt.live:
            return
        g.saved = (rt.save_cta_state(), [ctypes.string_at(lo, n) for lo, n in self.shared])
        self.waiting.append(g)
        self.active = None
        self.switches += 1
        if self.next_cta < self.ncta and self.in_flight < self.max_in_flight:
            self.stale, self.last_memory = 0, None  # a CTA starting is progress (and global memory is not read)
            self._start_next()
            return
        memory = self._memory()
        self.stale = self.stale + 1 if memory == self.last_memory else 0
        self.last_memory = memory
        if self.stale > 2 * len(self.waiting):
            self._deadlock()
            return
        self._resume(self.waiting.popleft())

    def finished(self) -> None:
        """Every thread of the running CTA has exited: resume the CTA switched out last, or start the next one; the
        launch is done when neither is left."""
        self.in_flight -= 1
        self.idle.append(self.active.crew)
        self.active = None
        self.stale = 0
        self.last_memory = None
        self.rt.fresh_cta_state()
        if self.waiting:  # the CTA switched out last may well have waited for this one (a chain of waits)
            self._resume(self.waiting.pop())
        elif self.next_cta < self.ncta:
            self._start_next()
        else:
            self.done = True
            self.rt.cta_cond.notify_all()

    # ---- internals (lock held)
    def _start_next(self) -> None:
        crew = self.idle.pop() if self.idle else self._new_crew()
        g = _Group(self.next_cta, crew, self.rt.lock)
        self.next_cta += 1
        self.in_flight += 1
        self.rt.fresh_cta_state()
        self.active = g
        g.turn = 1
        crew.cta = g.cta
        crew.seq += 1
        crew.cond.notify_all()  # its threads run the CTA once the caller releases the lock

    def _new_crew(self) -> _Crew:
        crew = _Crew(self.rt.lock)
        crew.threads = [threading.Thread(target=self._work, args=(crew, ctx), daemon=True) for ctx in self.contexts()]
        self.crews.append(crew)
        for th in crew.threads:
            th.start()
        return crew

    def _resume(self, g: _Group) -> None:
        state, shared = g.saved
        g.saved = None
        for (lo, n), data in zip(self.shared, shared):
            ctypes.memmove(lo, data, n)
        self.rt.restore_cta_state(state)
        self.active = g
        g.parked = 0  # its parked threads run again (some may not have woken yet: they must not count as parked)
        g.turn += 1
        g.cond.notify_all()

    def wake_all(self) -> None:
        """The launch failed: wake every parked thread (it returns at its abort check)."""
        for g in [*self.waiting, self.active]:
            if g is not None:
                g.cond.notify_all()
        for crew in self.crews:
            crew.cond.notify_all()

    def _memory(self) -> int:
        return hash(tuple(ctypes.string_at(lo, n) for lo, n in self.global_))

    def _coords(self, cta: int) -> str:
        gx, gy, _ = self.grid
        return f"({cta % gx}, {cta // gx % gy}, {cta // (gx * gy)})"

    def _deadlock(self) -> None:
        rt = self.rt
        sites = rt.sites
        parts = []
        stuck = sorted(self.waiting, key=lambda g: g.cta)
        for g in stuck:
            where = sites[g.site] if 0 <= g.site < len(sites) else "an unknown place"
            parts.append(f"{self.unit} {self._coords(g.cta)} in the loop at {where}")
        left, u = self.ncta - self.next_cta, self.unit
        tail = (f"; {left} {u}{'s' * (left > 1)} not started (the emulator keeps at most {self.max_in_flight} {u}s "
                "in flight)") if left else ""
        first = stuck[0].site if stuck else -1
        rt.fail(TilecoreError(
            f"deadlock: kernel '{self.kernel}': every running {self.unit} waits in a loop for global memory that no "
            f"CTA changes any more: " + "; ".join(parts) + tail,
            sites[first] if 0 <= first < len(sites) else None))
