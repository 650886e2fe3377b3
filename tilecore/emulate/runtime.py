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
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque

from ..errors import TilecoreError
from . import context as C
from .memcheck import Memory, describe_fault
from .printf import format_vprintf, read_cstring
from .warp import WARP_NAMES, WARP_OPS

_ALL = 0xFFFFFFFF


class _BadPointer(TilecoreError):
    """A pointer printf / assert hands the emulator points outside every buffer."""


class _Barrier:
    def __init__(self):
        self.arrived = 0
        self.waiting = 0
        self.count = -1
        self.preds: list[int] = []
        self.gen = 0
        self.results: dict[int, int] = {}


class _WarpSlot:
    def __init__(self, code: int, need: int):
        self.code = code
        self.need = need          # member lanes that have not exited
        self.waiting = 0
        self.lanes: dict[int, tuple] = {}
        self.results = None


class DeviceRuntime:
    """State of one launch: captured printf text, the first error, CTA synchronisation."""

    def __init__(self, block, grid, memory: Memory | None = None):
        self.block, self.grid = block, grid
        self.memory = memory  # the buffers checked accesses may touch; None: no checks
        self.nthreads = block[0] * block[1] * block[2]
        self.lock = threading.Lock()
        self.cta_cond = threading.Condition(self.lock)
        self.warp_conds = [threading.Condition(self.lock) for _ in range((self.nthreads + 31) // 32)]
        self.printf: list[str] = []
        self.error: TilecoreError | None = None
        self.aborted = False
        self.cta_gen = 0
        self.cp_async_pending: dict[int, tuple[list, deque]] = {}  # thread -> (uncommitted copies, groups)
        self._reset_cta()

    def _reset_cta(self):
        self.live = self.nthreads
        self.exited: set[int] = set()
        self.blocked = 0
        self.barriers: dict[int, _Barrier] = {}
        self.slots: dict[tuple, _WarpSlot] = {}
        self.done = 0

    # ---- helpers
    def _where(self, ctx: int) -> str:
        t = [C.slot(ctx, C.TID + d) for d in range(3)]
        b = [C.slot(ctx, C.CTAID + d) for d in range(3)]
        return f"block ({b[0]}, {b[1]}, {b[2]}), thread ({t[0]}, {t[1]}, {t[2]})"

    def fail(self, error: TilecoreError) -> None:
        """Record the first error and wake every waiting thread (lock held or not needed)."""
        if self.error is None:
            self.error = error
        self.aborted = True
        self.cta_cond.notify_all()
        for c in self.warp_conds:
            c.notify_all()

    def _aborted(self, ctx: int) -> bool:
        if self.aborted:
            C.set_slot(ctx, C.ABORT, 1)
        return self.aborted

    def _check_deadlock(self, ctx: int) -> None:
        if self.live and self.blocked >= self.live:
            waits = [f"barrier {i} ({b.arrived} of {b.count if b.count > 0 else self.live} arrived)"
                     for i, b in self.barriers.items() if b.arrived]
            waits += [f"'{WARP_NAMES[s.code]}' in warp {w} (lanes {sorted(s.lanes)} of mask {m:#010x})"
                      for (w, m), s in self.slots.items()]
            self.fail(TilecoreError(f"deadlock: all {self.live} running threads of the CTA wait: "
                                    + "; ".join(waits)))

    def _wait(self, cond, ready, ctx) -> bool:
        """Block until ``ready()``; False when the launch aborted meanwhile."""
        self.blocked += 1
        self._check_deadlock(ctx)
        while not ready() and not self.aborted:
            cond.wait()
        return not self._aborted(ctx)

    # ---- CTA barriers
    def _expected(self, b: _Barrier) -> int:
        return b.count if b.count > 0 else self.live

    def _release_if_full(self, b: _Barrier) -> None:
        if b.arrived and b.arrived >= self._expected(b):
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
            b = self.barriers.setdefault(bar_id, _Barrier())
            b.count = count
            b.arrived += 1
            b.preds.append(pred)
            gen = b.gen
            self._release_if_full(b)
            if b.gen == gen:
                b.waiting += 1
                if not self._wait(self.cta_cond, lambda: b.gen != gen, ctx):
                    return 0
            return b.results[gen][red]

    def barrier_arrive(self, ctx, bar_id, count):
        with self.lock:
            if self._aborted(ctx):
                return
            b = self.barriers.setdefault(bar_id, _Barrier())
            b.count = count
            b.arrived += 1
            b.preds.append(0)
            self._release_if_full(b)

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
            slot = self.slots.get((w, mask))
            if slot is None:
                # PTX: a .sync collective waits for the non-exited threads of its member mask
                need = sum(1 for ln in range(32) if (mask >> ln) & 1 and w * 32 + ln < self.nthreads
                           and w * 32 + ln not in self.exited)
                slot = self.slots[(w, mask)] = _WarpSlot(code, need)
            if slot.code != code:
                self.fail(TilecoreError(f"lanes of warp {w} with member mask {mask:#010x} execute different warp "
                                        f"collectives: '{WARP_NAMES[slot.code]}' and '{name}' ({self._where(ctx)})"))
                return self._aborted(ctx) and 0
            slot.lanes[lane] = (a, b, c)
            self._complete_if_ready(w, mask, slot)
            if slot.results is None:
                slot.waiting += 1
                if not self._wait(self.warp_conds[w], lambda: slot.results is not None, ctx):
                    return 0
            return slot.results[lane]

    def _complete_if_ready(self, w: int, mask: int, slot: _WarpSlot) -> None:
        if slot.results is None and len(slot.lanes) >= slot.need:
            slot.results = WARP_OPS[WARP_NAMES[slot.code]](mask, slot.lanes)
            del self.slots[(w, mask)]
            self.blocked -= slot.waiting
            self.warp_conds[w].notify_all()

    # ---- end of a thread's CTA
    def cta_done(self, ctx):
        t = C.slot(ctx, C.LINEAR_TID)
        with self.lock:
            self.live -= 1
            self.exited.add(t)
            if not self.aborted:
                for b in self.barriers.values():
                    if b.count <= 0:
                        self._release_if_full(b)
                for (w, m), s in list(self.slots.items()):
                    if w == t >> 5 and (m >> (t & 31)) & 1:
                        s.need -= 1
                        self._complete_if_ready(w, m, s)
                self._check_deadlock(ctx)
            self.done += 1
            gen = self.cta_gen
            if self.done == self.nthreads:
                self._reset_cta()
                self.cta_gen += 1
                self.cta_cond.notify_all()
            else:
                while self.cta_gen == gen and not self.aborted:
                    self.cta_cond.wait()
            self._aborted(ctx)

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
        if room == 0:
            raise _BadPointer(f"printf's argument buffer {args:#x} points into no buffer ({self._where(ctx)})")
        try:
            text = format_vprintf(fmt_text, args or 0, room, None if self.memory is None else
                                  lambda a: self._string(ctx, a, "a printf %s argument"))
        except IndexError:
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
        err = TilecoreError(describe_fault(memory, ctx, self._where(ctx), addr, size, align, space, what),
                            memory.site(site))
        with self.lock:
            self.fail(err)
            self._aborted(ctx)

    # ---- cp.async (see optable: the copies land when a wait retires their group, or at thread exit)
    def cp_async(self, ctx, what, dst, src, size, n):
        """``what`` 0: queue the copy of ``size`` bytes to ``dst``, ``n`` of them from ``src`` (the rest
        zero); 1: commit the queued copies as a group; 2: wait_group ``size``; 3: the thread exits."""
        t = C.slot(ctx, C.LINEAR_TID)
        if what == 3:  # thread exit
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
    "__emu_fault": (ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I64, _I32, _I32, _I32), "fault", None),
    "__emu_cp_async": (ctypes.CFUNCTYPE(None, _P, _I32, _I64, _I64, _I32, _I32), "cp_async", None),
}


def make_callbacks(current):
    """ctypes callbacks for every runtime symbol, dispatching to ``current()`` (the running launch)."""
    out = {}
    for sym, (proto, method, fallback) in CALLBACKS.items():
        def tramp(ctx, *args, _m=method, _fb=fallback):
            rt = current()
            try:
                return getattr(rt, _m)(ctx, *args)
            except Exception as e:  # noqa: BLE001 - never let a traceback escape a callback
                with rt.lock:
                    rt.fail(e if isinstance(e, _BadPointer) else
                            TilecoreError(f"internal error in the emulator ({_m}): {type(e).__name__}: {e}"))
                C.set_slot(ctx, C.ABORT, 1)
                return _fb
        out[sym] = proto(tramp)
    return out
