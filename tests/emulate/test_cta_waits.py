"""Emulator: CTAs that wait for each other through global memory (:mod:`tilecore.emulate.waitloops`,
:mod:`tilecore.emulate.ctasched`).

On a GPU every CTA of these small grids is resident at once, so a CTA may spin until a later CTA sets a flag.
The emulator used to run CTAs one after another, and each of these kernels hung it: reversed look-back scan,
stream-K fix-up, a "last block done" counter polled in a loop, a global barrier from atomic_add, a turn-taking
semaphore from atomic_cas, a per-thread spin on an atomic load (llvm dialect, no collectives). They now run
cooperatively (a spinning CTA is switched out for another one) and are checked against numpy on sizes that are
not tile multiples; a kernel that waits for a flag nobody sets fails with a deadlock error naming the kernel,
the waiting CTAs and the loop's source line, instead of hanging. A ``for`` loop with atomics is not a wait
loop: such kernels keep the old code path.
"""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest
from support import gpu_module, has_plugin
from support import parse_module as parse

from tilecore.emulate import launch
from tilecore.errors import TilecoreError

ct = pytest.importorskip("cuda.tile")
pytestmark = pytest.mark.skipif(not has_plugin("tileas"), reason="needs the tileas plugin")

import tilecore.cutile as tc  # noqa: E402
from tilecore.cutile.kernel import cached  # noqa: E402
from tilecore.cutile.specialize import bind  # noqa: E402

ConstInt = ct.Constant[int]
Z = ct.PaddingMode.ZERO
ACQ, REL = ct.MemoryOrder.ACQUIRE, ct.MemoryOrder.RELEASE


def _line_of(text: str) -> int:
    """The line of this file that holds ``text`` (first one)."""
    with open(__file__) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


def _wait_loops(kernel, args) -> int:
    """How many wait-loop back edges the emulator found in ``kernel`` compiled for ``args`` (sm_80)."""
    specs, _ = bind(kernel, args)
    return cached(kernel, specs, "sm_80").emulated().host.wait_loops


def _in_child(fn, timeout: float = 120):
    """Run ``fn()`` in a forked child: a hang fails the test after ``timeout`` s instead of blocking the run."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def body():
        try:
            fn()
            send.send(None)
        except BaseException as e:  # noqa: BLE001 - hand any failure to the parent
            send.send(f"{type(e).__name__}: {e}")
        os._exit(0)

    p = ctx.Process(target=body)
    p.start()
    if not recv.poll(timeout):
        p.kill()
        p.join()
        pytest.fail(f"the launch did not finish in {timeout} s (the emulator hangs)")
    got = recv.recv()
    p.join()
    assert got is None, got


# ------------------------------------------------------------------------------ reversed decoupled look-back
@ct.kernel
def suffix_sum(X, Y, Incl, Flags, TILE: ConstInt):
    """Y[i] = sum(X[i:]): CTA b adds its tile's suffix sums to the inclusive suffix of CTA b + 1 (a LATER CTA),
    waiting for its flag."""
    b = ct.bid(0)
    n = ct.num_blocks(0)
    x = ct.load(X, (b,), (TILE,), padding_mode=Z)
    right = ct.full((TILE,), 0, dtype=ct.int32) + ct.sum(x, axis=0, keepdims=True)  # the tile's total
    own = right - ct.cumsum(x, axis=0) + x  # suffix sums inside the tile
    carry = ct.full((1,), 0, dtype=ct.int32)
    if b + 1 < n:
        while ct.atomic_add(Flags, b + 1, 0, memory_order=ACQ) == 0:
            pass
        carry = ct.load(Incl, (b + 1,), (1,))
    ct.store(Incl, (b,), ct.sum(x, axis=0, keepdims=True) + carry)
    ct.atomic_xchg(Flags, b, 1, memory_order=REL)
    ct.store(Y, (b,), own + carry)


@pytest.mark.parametrize("n", [100, 37])
def test_reversed_look_back_scan_waits_for_later_ctas(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, n).astype(np.int32)
    tile = 16
    grid = -(-n // tile)
    y, incl, flags = np.zeros(n, np.int32), np.zeros(grid, np.int32), np.zeros(grid, np.int32)
    assert _wait_loops(suffix_sum, (x, y, incl, flags, tile)) == 1
    tc.launch(None, (grid,), suffix_sum, (x, y, incl, flags, tile))
    np.testing.assert_array_equal(y, np.cumsum(x[::-1])[::-1])
    np.testing.assert_array_equal(flags, 1)


# ------------------------------------------------------------------------------ decoupled look-back in order
@ct.kernel
def prefix_sum(X, Y, Incl, Flags, TILE: ConstInt):
    """Y[i] = sum(X[:i + 1]): CTA b waits for CTA b - 1 (an earlier CTA: this always worked in order)."""
    b = ct.bid(0)
    x = ct.load(X, (b,), (TILE,), padding_mode=Z)
    carry = ct.full((1,), 0, dtype=ct.int32)
    if b > 0:
        while ct.atomic_add(Flags, b - 1, 0, memory_order=ACQ) == 0:
            pass
        carry = ct.load(Incl, (b - 1,), (1,))
    ct.store(Incl, (b,), ct.sum(x, axis=0, keepdims=True) + carry)
    ct.atomic_xchg(Flags, b, 1, memory_order=REL)
    ct.store(Y, (b,), ct.cumsum(x, axis=0) + carry)


def test_look_back_scan_in_order():
    x = np.random.default_rng(3).integers(-9, 9, 70).astype(np.int32)
    grid = -(-70 // 16)
    y, incl, flags = np.zeros(70, np.int32), np.zeros(grid, np.int32), np.zeros(grid, np.int32)
    tc.launch(None, (grid,), prefix_sum, (x, y, incl, flags, 16))
    np.testing.assert_array_equal(y, np.cumsum(x))


# ------------------------------------------------------------------------------ stream-K fix-up
@ct.kernel
def row_sums_split(X, Out, Partial, Flags, SPLIT: ConstInt, TN: ConstInt):
    """Out[r] = sum(X[r, :]) with each row split over SPLIT CTAs (CTA r * SPLIT + s takes column tiles s, s +
    SPLIT, ...): the first CTA of a row waits for the partial sums of the LATER CTAs of its row and adds them."""
    c = ct.bid(0)
    r, s = c // SPLIT, c % SPLIT
    acc = ct.full((1,), 0.0, dtype=ct.float32)
    for j in range(s, ct.num_tiles(X, axis=1, shape=(1, TN)), SPLIT):
        acc += ct.sum(ct.reshape(ct.load(X, (r, j), (1, TN), padding_mode=Z), (TN,)), axis=0, keepdims=True)
    if s == 0:
        for k in range(1, SPLIT):
            while ct.atomic_add(Flags, r * SPLIT + k, 0, memory_order=ACQ) == 0:
                pass
            acc += ct.load(Partial, (r * SPLIT + k,), (1,))
        ct.store(Out, (r,), acc)
    else:
        ct.store(Partial, (c,), acc)
        ct.atomic_xchg(Flags, c, 1, memory_order=REL)


def test_stream_k_fix_up_waits_for_later_partials():
    rows, cols, split = 3, 90, 3
    x = np.random.default_rng(5).standard_normal((rows, cols)).astype(np.float32)
    out, part, flags = np.zeros(rows, np.float32), np.zeros(rows * split, np.float32), np.zeros(rows * split, np.int32)
    tc.launch(None, (rows * split,), row_sums_split, (x, out, part, flags, split, 16))
    np.testing.assert_allclose(out, x.sum(1), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ "last block done" counter polled in a loop
@ct.kernel
def total_by_first_cta(X, Partial, Total, Done, TILE: ConstInt):
    """Each CTA stores its partial sum and counts itself done; CTA 0 polls the counter until every CTA is done,
    then adds the partials."""
    b = ct.bid(0)
    n = ct.num_blocks(0)
    ct.store(Partial, (b,), ct.sum(ct.load(X, (b,), (TILE,), padding_mode=Z), axis=0, keepdims=True))
    ct.atomic_add(Done, 0, 1, memory_order=REL)
    if b == 0:
        while ct.atomic_add(Done, 0, 0, memory_order=ACQ) < n:
            pass
        ct.store(Total, (0,), ct.sum(ct.load(Partial, (0,), (8,), padding_mode=Z), axis=0, keepdims=True))


def test_last_block_done_counter_read_in_a_loop():
    x = np.random.default_rng(7).integers(-100, 100, 75).astype(np.int32)
    grid = -(-75 // 16)
    part, total, done = np.zeros(grid, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    tc.launch(None, (grid,), total_by_first_cta, (x, part, total, done, 16))
    assert total[0] == x.sum() and done[0] == grid


# ------------------------------------------------------------------------------ global barrier from atomic_add
@ct.kernel
def normalize_global(X, Y, Partial, Count, TILE: ConstInt):
    """Y = X / sum(X) in one launch: every CTA publishes its partial sum, meets the others at a global barrier
    (an atomic counter polled in a loop), then reads every partial."""
    b = ct.bid(0)
    n = ct.num_blocks(0)
    x = ct.load(X, (b,), (TILE,), padding_mode=Z)
    ct.store(Partial, (b,), ct.sum(x, axis=0, keepdims=True))
    ct.atomic_add(Count, 0, 1, memory_order=REL)
    while ct.atomic_add(Count, 0, 0, memory_order=ACQ) < n:
        pass
    total = ct.sum(ct.load(Partial, (0,), (8,), padding_mode=Z), axis=0, keepdims=True)
    ct.store(Y, (b,), x / total)


def test_global_barrier_from_atomics():
    x = np.random.default_rng(11).uniform(1, 2, 90).astype(np.float32)
    grid = -(-90 // 16)
    y, part, count = np.zeros_like(x), np.zeros(grid, np.float32), np.zeros(1, np.int32)
    assert _wait_loops(normalize_global, (x, y, part, count, 16)) == 1
    tc.launch(None, (grid,), normalize_global, (x, y, part, count, 16))
    np.testing.assert_allclose(y, x / x.sum(), rtol=1e-5)
    assert count[0] == grid


def test_global_barrier_needing_more_ctas_in_flight_than_allowed_is_a_deadlock(monkeypatch):
    import tilecore.emulate.ctasched as ctasched

    monkeypatch.setattr(ctasched, "MAX_IN_FLIGHT", 2)  # the barrier needs all 3 CTAs at once
    x = np.ones(40, np.float32)
    y, part, count = np.zeros_like(x), np.zeros(3, np.float32), np.zeros(1, np.int32)

    def run():
        with pytest.raises(TilecoreError) as e:
            tc.launch(None, (3,), normalize_global, (x, y, part, count, 16))
        msg = str(e.value)
        assert "deadlock: kernel 'normalize_global'" in msg and "CTA (0, 0, 0) in the loop at" in msg, msg
        assert msg.endswith("; 1 CTA not started (the emulator keeps at most 2 CTAs in flight)"), msg

    _in_child(run)


# ------------------------------------------------------------------------------ turn-taking semaphore from atomic_cas
@ct.kernel
def reverse_turns(Log, Turn, Pos):
    """CTAs enter a critical section in REVERSE order: CTA b spins (atomic_cas) until Turn == b, appends b to
    the log, hands the turn to b - 1."""
    b = ct.bid(0)
    while ct.atomic_cas(Turn, 0, b, b, memory_order=ACQ) != b:
        pass
    p = ct.gather(Pos, 0)
    ct.scatter(Log, p, b)
    ct.scatter(Pos, 0, p + 1)
    ct.atomic_xchg(Turn, 0, b - 1, memory_order=REL)


def test_semaphore_from_atomic_cas_in_reverse_order():
    grid = 6
    log, turn, pos = np.full(grid, -1, np.int32), np.array([grid - 1], np.int32), np.zeros(1, np.int32)
    tc.launch(None, (grid,), reverse_turns, (log, turn, pos))
    np.testing.assert_array_equal(log, np.arange(grid)[::-1])
    assert turn[0] == -1 and pos[0] == grid


# ------------------------------------------------------------------------------ a real deadlock
@ct.kernel
def wait_for_nobody(X, Flags, TILE: ConstInt):
    """CTA 1 waits for flag 5, which no CTA sets (a kernel that hangs on a GPU too)."""
    b = ct.bid(0)
    if b == 1:
        while ct.atomic_add(Flags, 5, 0, memory_order=ACQ) == 0:  # deadlock here
            pass
    ct.store(X, (b,), ct.full((TILE,), 1.0, dtype=ct.float32))


def test_waiting_for_a_flag_nobody_sets_is_a_deadlock_error():
    x, flags = np.zeros(40, np.float32), np.zeros(6, np.int32)

    def run():
        with pytest.raises(TilecoreError) as e:
            tc.launch(None, (3,), wait_for_nobody, (x, flags, 16))
        line = _line_of("# deadlock here")
        msg = str(e.value)
        assert (f"test_cta_waits.py:{line}:" in msg and "deadlock: kernel 'wait_for_nobody': every running CTA waits "
                "in a loop for global memory that no CTA changes any more: CTA (1, 0, 0) in the loop at" in msg), msg
        assert "CTA (0, 0, 0)" not in msg and "CTA (2, 0, 0)" not in msg, msg  # those finished

    _in_child(run)


# ------------------------------------------------------------------------------ for loops with atomics are not wait loops
@ct.kernel
def histogram_loop(X, Counts, TILE: ConstInt):
    """A grid-stride loop of atomic adds: its exit depends on the induction variable only."""
    for j in range(ct.bid(0), ct.num_tiles(X, axis=0, shape=(TILE,)), ct.num_blocks(0)):
        i = j * TILE + ct.arange(TILE, dtype=ct.int32)
        bins = ct.gather(X, i, padding_value=-1)  # out of range: bin -1, which the atomic skips
        ct.atomic_add(Counts, bins, ct.full((TILE,), 1, dtype=ct.int32))


def test_for_loop_with_atomics_is_not_a_wait_loop():
    x = np.random.default_rng(2).integers(0, 4, 50).astype(np.int32)
    counts = np.zeros(4, np.int32)
    assert _wait_loops(histogram_loop, (x, counts, 16)) == 0
    tc.launch(None, (2,), histogram_loop, (x, counts, 16))
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=4))


# ------------------------------------------------------------------------------ llvm dialect: every thread spins
# Thread t of CTA b (no collectives): waits until CTA b + 1 has set flag[b + 1] (an atomic acquire load), then
# writes out[b * ntid + t] = flag[b + 1] + b and sets flag[b] to flag[b + 1] + 1 (the last CTA starts at 1).
SPIN_EACH_THREAD = """
llvm.func @chain(%flag: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
  %b = nvvm.read.ptx.sreg.ctaid.x : i32
  %n = nvvm.read.ptx.sreg.nctaid.x : i32
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %nt = nvvm.read.ptx.sreg.ntid.x : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %b1 = llvm.add %b, %one : i32
  %last = llvm.icmp "sge" %b1, %n : i32
  llvm.cond_br %last, ^done(%zero : i32), ^spin
^spin:
  %p = llvm.getelementptr %flag[%b1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  %v = llvm.load %p atomic acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
  %unset = llvm.icmp "eq" %v, %zero : i32
  llvm.cond_br %unset, ^spin, ^done(%v : i32)
^done(%got: i32):
  %bt = llvm.mul %b, %nt : i32
  %i = llvm.add %bt, %t : i32
  %q = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  %val = llvm.add %got, %b : i32
  llvm.store %val, %q : i32, !llvm.ptr<1>
  %is0 = llvm.icmp "eq" %t, %zero : i32
  llvm.cond_br %is0, ^publish, ^end
^publish:
  %mine = llvm.getelementptr %flag[%b] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  %next = llvm.add %got, %one : i32
  llvm.store %next, %mine atomic release {alignment = 4 : i64} : i32, !llvm.ptr<1>
  llvm.br ^end
^end:
  llvm.return
}
"""


def test_threads_spinning_on_an_atomic_load_without_collectives():
    from tilecore.plugins import get_plugin_manager

    module = parse(get_plugin_manager(), gpu_module(SPIN_EACH_THREAD))
    grid, block = 5, 3
    flag, out = np.zeros(grid, np.int32), np.zeros(grid * block, np.int32)
    (flag_out, got), _ = launch(module, "chain", grid, block, [flag, out])
    np.testing.assert_array_equal(flag_out, grid - np.arange(grid))  # flag[b] = flag[b + 1] + 1, the last one 1
    seen = np.append(flag_out[1:], 0)  # what CTA b waited for
    np.testing.assert_array_equal(got, np.repeat(seen + np.arange(grid), block))


WAIT_FOR_NOBODY = """
llvm.func @wait(%flag: !llvm.ptr<1>) attributes {nvvm.kernel} {
  %zero = llvm.mlir.constant(0 : i32) : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  %p = llvm.getelementptr %flag[%one] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  llvm.br ^spin
^spin:
  %v = llvm.load %p atomic acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
  %unset = llvm.icmp "eq" %v, %zero : i32
  llvm.cond_br %unset, ^spin, ^end
^end:
  llvm.return
}
"""


def test_cli_run_of_a_deadlocking_kernel_fails_with_status_1(tmp_path):
    import subprocess
    import sys

    src = tmp_path / "wait.mlir"
    src.write_text(gpu_module(WAIT_FOR_NOBODY))
    np.save(tmp_path / "flags.npy", np.zeros(2, np.int32))
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", str(src), "--kernel", "wait", "--grid", "2",
                        "--block", "2", "--arg", "flags.npy"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    line = gpu_module(WAIT_FOR_NOBODY).splitlines().index("  llvm.cond_br %unset, ^spin, ^end") + 1
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(f"error: {src}:{line}:") and "deadlock: kernel 'wait': every running CTA waits in a " \
        "loop for global memory that no CTA changes any more: CTA (0, 0, 0) in the loop at" in r.stderr, r.stderr
    assert "CTA (1, 0, 0)" in r.stderr and "Traceback" not in r.stderr


# A list walk: the exit depends on plain loads (next[i]), the atomic add is after the loop: not a wait loop (a
# plain load may be hoisted out of a loop on a GPU too). The same loop reading next[i] with an acquire load is one.
LIST_WALK = """
llvm.func @walk(%next: !llvm.ptr<1>, %count: !llvm.ptr<1>) attributes {nvvm.kernel} {
  %zero = llvm.mlir.constant(0 : i32) : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  %neg = llvm.mlir.constant(-1 : i32) : i32
  llvm.br ^loop(%zero, %zero : i32, i32)
^loop(%i: i32, %steps: i32):
  %s1 = llvm.add %steps, %one : i32
  %p = llvm.getelementptr %next[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  %n = llvm.load %p LOAD : !llvm.ptr<1> -> i32
  %more = llvm.icmp "ne" %n, %neg : i32
  llvm.cond_br %more, ^loop(%n, %s1 : i32, i32), ^end
^end:
  %r = llvm.atomicrmw add %count, %s1 monotonic : !llvm.ptr<1>, i32
  llvm.return
}
"""


@pytest.mark.parametrize("load, wait_loops", [("", 0), ("atomic acquire {alignment = 4 : i64}", 1)])
def test_plain_loads_do_not_make_a_wait_loop(load, wait_loops):
    from tilecore.emulate import compile_kernel
    from tilecore.plugins import get_plugin_manager

    module = parse(get_plugin_manager(), gpu_module(LIST_WALK.replace("LOAD", load)))
    assert compile_kernel(module, "walk").host.wait_loops == wait_loops
    nxt, count = np.array([3, -1, 1, 2], np.int32), np.zeros(1, np.int32)
    (_, got), _ = launch(module, "walk", 2, 2, [nxt, count])
    assert got[0] == 4 * 4  # 0 -> 3 -> 2 -> 1: four adds by each of the four threads


# ------------------------------------------------------------------------------ clusters that wait for later clusters
# :func:`suffix_sum` with a tile block of two CTAs (a cluster): cluster b waits for cluster b + 1.
suffix_sum_clusters = suffix_sum.replace_hints(num_ctas=ct.ByTarget(sm_90=2, sm_100=2))


@pytest.mark.parametrize("sm", ["sm_90a", "sm_100a"])
def test_clusters_waiting_for_later_clusters(sm):
    x = np.random.default_rng(13).integers(-50, 50, 61).astype(np.int32)
    grid = -(-61 // 16)
    y, incl, flags = np.zeros(61, np.int32), np.zeros(grid, np.int32), np.zeros(grid, np.int32)
    tc.launch(None, (grid,), suffix_sum_clusters, (x, y, incl, flags, 16), gpu_name=sm)
    assert ".reqnctapercluster 2, 1, 1" in tc.compile(suffix_sum_clusters, (x, y, incl, flags, 16), gpu_name=sm).ptx
    np.testing.assert_array_equal(y, np.cumsum(x[::-1])[::-1])
