"""JIT-compile a rewritten kernel module and launch it over a grid.

Kernels without collectives run sequentially: one native call of the driver
loops over every CTA and thread. Kernels with collectives run one host thread
per GPU thread of a CTA (so barriers and shuffles really synchronise), CTAs one
after another. Kernels with wait loops (:mod:`.waitloops`: a CTA may wait for
another) run cooperatively (:mod:`.ctasched`): each CTA on host threads of its
own, one CTA at a time, a spinning CTA switched out for another. Kernels with
clusters of more than one CTA (``nvvm.cluster_dim``) run one host thread per
GPU thread of each CTA of a cluster, clusters one after another
(:meth:`EmulatedKernel.launch`), or cooperatively like CTAs when they have wait
loops.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import TilecoreError
from . import context as C
from .hostmodule import HostModule
from .jit import HostJit
from .libcalls import make_libcalls
from .memcheck import Memory
from .runtime import DeviceRuntime, make_callbacks

MAX_THREADS_PER_CTA = 1024

# LLVM scalar type -> (ctypes type, numpy dtype used to convert the Python value)
SCALARS = {
    "i1": (ctypes.c_bool, np.bool_), "i8": (ctypes.c_int8, np.int8), "i16": (ctypes.c_int16, np.int16),
    "i32": (ctypes.c_int32, np.int32), "i64": (ctypes.c_int64, np.int64), "f32": (ctypes.c_float, np.float32),
    "f64": (ctypes.c_double, np.float64), "f16": (ctypes.c_uint16, np.float16),
}


@dataclass
class LaunchResult:
    """``outputs``: one array per pointer parameter (device memory copied back); ``printf``: captured text."""

    outputs: list = field(default_factory=list)
    printf: str = ""

    def __iter__(self):
        return iter((self.outputs, self.printf))


@dataclass
class PointerTable:
    """A pointer argument whose memory is a table of int64 ``words`` (rows) holding, in column ``column`` of
    row r, the device address of array ``items[r]`` (cuTile's list-of-arrays parameter: one row per array,
    its base pointer, extents and strides). Each item gets device memory of its own (checked as a buffer,
    copied back into the item afterwards) and its address is written into its row."""

    words: np.ndarray
    items: list
    column: int = 0


def copy_back(originals, outputs) -> None:
    """Copy each launch output into the caller's array it came from (unless that one is read-only)."""
    for orig, dev in zip(originals, outputs):
        if orig.flags.writeable:
            np.copyto(orig, dev.reshape(orig.shape))


def overlap_groups(addresses, args) -> list[tuple[int, int, list[int]]]:
    """``(lo, hi, positions)`` of each group of two or more C-contiguous arrays among ``args`` whose bytes overlap,
    the array at position i taken to start at ``addresses[i]`` (its own address, or the one it had in the caller's
    process: :mod:`.isolate`)."""
    spans = sorted((addresses[i], addresses[i] + a.nbytes, i) for i, a in enumerate(args)
                   if isinstance(a, np.ndarray) and a.flags.c_contiguous and a.nbytes)
    groups = []
    for lo, hi, i in spans:
        if groups and lo < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
            groups[-1][2].append(i)
        else:
            groups.append([lo, hi, [i]])
    return [(lo, hi, members) for lo, hi, members in groups if len(members) > 1]


def shared_copies(args) -> dict[int, np.ndarray]:
    """Device copies of the C-contiguous arrays among ``args`` whose memory overlaps another's (``f(x, x)``, an
    in-place kernel; overlapping windows of one buffer), by position: one buffer per group of overlapping arrays
    (the union of their bytes, placed at the host's address modulo 64), each array a view into it, so that the
    kernel sees one memory as on a GPU (a copy each lost the stores through one of them: the other's copy was
    written back over them). Arrays that overlap none get no entry (the caller copies them alone)."""
    out = {}
    for lo, hi, members in overlap_groups([a.ctypes.data if isinstance(a, np.ndarray) else 0 for a in args], args):
        raw = np.empty(hi - lo + 64, np.uint8)
        skip = (lo - raw.ctypes.data) % 64
        buf = raw[skip:skip + hi - lo]
        buf[:] = np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))
        for i in members:
            a = args[i]
            start = a.ctypes.data - lo
            out[i] = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    return out


def _dims(v, what: str) -> tuple[int, int, int]:
    vals = [int(v)] if isinstance(v, (int, np.integer)) else [int(x) for x in v]
    if not 1 <= len(vals) <= 3 or any(x < 1 for x in vals):
        raise TilecoreError(f"{what} must be 1 to 3 positive sizes, got {v!r}")
    return tuple(vals + [1] * (3 - len(vals)))


SHARED_WINDOW = 1 << 18  # the shared address space a wgmma descriptor's start address reaches (:mod:`.hopper`)
DYN_SHARED_ALIGN = 1024  # the 128B swizzle pattern repeats every 1024 bytes


def place_dynamic_shared(dyn: int, static) -> tuple[np.ndarray, int]:
    """The host buffer for ``dyn`` bytes of dynamic shared memory and its address: aligned to 1024 bytes,
    and placed so that no byte of it has the same low 18 address bits as a byte of the static shared
    variables ``static`` ((label, lo, hi)): the low 18 bits are then a byte's shared address, unique in
    the CTA, as wgmma matrix descriptors need (:mod:`.hopper`)."""
    buf = np.zeros(dyn + SHARED_WINDOW + DYN_SHARED_ALIGN, dtype=np.uint8)
    first = (buf.ctypes.data + DYN_SHARED_ALIGN - 1) // DYN_SHARED_ALIGN * DYN_SHARED_ALIGN
    used = [(lo % SHARED_WINDOW, hi - lo) for _, lo, hi in static if hi > lo]
    for base in range(first, first + SHARED_WINDOW, DYN_SHARED_ALIGN):
        o = base % SHARED_WINDOW
        if not dyn or all((s - o) % SHARED_WINDOW >= dyn and (o - s) % SHARED_WINDOW >= n for s, n in used):
            return buf, base
    return buf, first  # more than the window in all: addresses cannot be unique


class EmulatedKernel:
    """A kernel compiled for the host; :meth:`launch` runs it on a grid."""

    def __init__(self, host: HostModule, opt_level: int = 1):
        """JIT-compile ``host`` at ``opt_level`` (:data:`.jit.LEVELS`: 1, the default, is cheap to compile and
        runs the kernels as fast as 2 where the runtime's callbacks dominate; 2 is MLIR's ExecutionEngine at
        ``default<O2>``). ``jit_seconds``: the wall time the JIT took; ``engine.timings``: its steps."""
        self.host = host
        self._rt: DeviceRuntime | None = None
        self._callbacks = make_callbacks(lambda: self._rt)
        self._libcalls = make_libcalls()
        symbols = {sym: ctypes.cast(cb, ctypes.c_void_p).value for sym, cb in {**self._callbacks, **self._libcalls}.items()}
        t0 = time.perf_counter()
        try:
            self.engine = HostJit(host.module, symbols, ("__emu_drive", "__emu_globals"), opt_level)
        except TilecoreError as e:  # an LLVM translation / code generation failure is a user-visible error
            raise TilecoreError(f"the host JIT cannot compile kernel '{host.kernel}': {e.message}",
                                host.location) from None
        self.jit_seconds = time.perf_counter() - t0
        self._drive = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.engine.lookup("__emu_drive"))
        self._global_vars, self._shared_vars = self._module_globals()
        self._lock = threading.Lock()

    def _module_globals(self) -> tuple[list, list]:
        """``(label, lo, hi)`` of the module's global-memory and of its shared-memory variables, as placed
        by the JIT."""
        n = len(self.host.globals)
        table = (ctypes.c_int64 * max(2 * n, 2))()
        table_ref = ctypes.c_void_p(ctypes.addressof(table))
        argv = (ctypes.c_void_p * 1)(ctypes.addressof(table_ref))
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.engine.lookup("__emu_globals"))(argv)
        placed = [(g, space, table[2 * k], table[2 * k + 1]) for k, (g, space) in enumerate(self.host.globals)]
        self._smem_sizes = {g: hi - lo for g, space, lo, hi in placed if space == 3}
        return ([(f"global @{g}", lo, hi) for g, space, lo, hi in placed if space != 3],
                [(f"shared @{g}", lo, hi) for g, space, lo, hi in placed if space == 3])

    @property
    def collective(self) -> bool:
        """True when the kernel uses barriers or warp collectives (threads then run concurrently)."""
        return self.host.collective

    def pointer_indices(self) -> list[int]:
        """Indices of the kernel's pointer parameters (whose arrays come back as ``outputs``)."""
        return [i for i, t in enumerate(self.host.param_types) if t.startswith("!llvm.ptr")]

    def _marshal(self, args):
        types = self.host.param_types
        if self.host.tensor_maps:  # the kernel's trailing tensor maps, encoded from the other arguments
            from ..tensormaps import append_maps, emulator_map

            try:
                args = append_maps(self.host.tensor_maps, args, emulator_map)
            except ValueError as e:
                raise TilecoreError(f"kernel '{self.host.kernel}': {e}", self.host.location) from None
        if len(args) != len(types):
            raise TilecoreError(f"kernel '{self.host.kernel}' takes {len(types)} arguments "
                                f"({', '.join(types)}), got {len(args)}", self.host.location)
        storage, device, originals, arrays = [], [], [], []
        # one copy of memory that arguments / list items share: positions of args, then of the items in order
        flat = list(args) + [item for a in args if isinstance(a, PointerTable) for item in a.items]
        shared = shared_copies(flat)
        items = []  # (caller's array, device copy, memory range) of pointer tables' items
        for i, (a, t) in enumerate(zip(args, types)):
            if t.startswith("!llvm.ptr") and isinstance(a, PointerTable):
                words = np.array(a.words, dtype=np.int64, copy=True, order="C")
                for r, item in enumerate(a.items):
                    k = len(args) + len(items)
                    dev = shared[k] if k in shared else np.array(item, copy=True, order="C")
                    items.append((item, dev, (f"argument {i} item {r}", dev.ctypes.data,
                                              dev.ctypes.data + max(dev.nbytes, 1))))
                    words[r, a.column] = dev.ctypes.data
                device.append(words)
                arrays.append((f"argument {i}", words.ctypes.data, words.ctypes.data + words.nbytes))
                keep = np.asarray(a.words).view()
                keep.flags.writeable = False  # the caller's table keeps its words (no device addresses)
                originals.append(keep)
                storage.append(ctypes.c_void_p(words.ctypes.data))
            elif t.startswith("!llvm.ptr"):
                if not isinstance(a, np.ndarray):
                    raise TilecoreError(f"argument {i} ({t}) must be a numpy array, got {type(a).__name__}")
                dev = shared[i] if i in shared else np.array(a, copy=True, order="C")
                device.append(dev)
                arrays.append((f"argument {i}", dev.ctypes.data, dev.ctypes.data + dev.nbytes))
                originals.append(a)
                storage.append(ctypes.c_void_p(dev.ctypes.data))
            elif t in SCALARS:
                if isinstance(a, np.ndarray) and a.ndim:
                    raise TilecoreError(f"argument {i} ({t}) must be a scalar, got an array of shape {a.shape}")
                ct, dt = SCALARS[t]
                v = np.array(a).astype(dt)
                storage.append(ct(int(v.view(np.uint16)) if t == "f16" else v.item()))
            else:
                raise TilecoreError(f"argument {i} has type {t}, which the emulator cannot pass yet",
                                    self.host.location)
        return storage, device, originals, arrays, items

    def launch(self, grid, block, args, shared_bytes: int = 0) -> LaunchResult:
        """Run the kernel on ``grid`` x ``block`` threads; see :func:`tilecore.emulate.launch`."""
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        if self.host.reqntid is not None and tuple(block) != self.host.reqntid:
            raise TilecoreError(f"kernel '{self.host.kernel}' must be launched with blocks of {self.host.reqntid} "
                                f"threads (its nvvm.reqntid, PTX .reqntid), got {tuple(block)}", self.host.location)
        if self.host.cluster_size > 1:
            return self._launch_clusters(grid, block, args, shared_bytes)
        nthreads = block[0] * block[1] * block[2]
        if nthreads > MAX_THREADS_PER_CTA:
            raise TilecoreError(f"block of {nthreads} threads exceeds {MAX_THREADS_PER_CTA} threads per CTA")
        ncta = grid[0] * grid[1] * grid[2]
        storage, device, originals, arrays, items = self._marshal(list(args))
        dyn = max(int(shared_bytes), self.host.dynamic_shared_bytes)  # a kernel's own need (deep pipelines)
        shared, shared_ptr = place_dynamic_shared(dyn, self._shared_vars)
        memory = Memory(arrays + [r for _, _, r in items] + self._global_vars,
                        self._shared_vars + [("the dynamic shared memory", shared_ptr, shared_ptr + dyn)],
                        self.host.local_labels, self.host.sites)
        sink = np.zeros(C.SINK_BYTES + 4096, dtype=np.uint8)  # scratch memory for bad accesses, page aligned
        checks = (C.range_table(memory.global_), len(memory.global_), C.range_table(memory.shared),
                  len(memory.shared), (sink.ctypes.data + 4095) // 4096 * 4096)  # what every context gets
        with self._lock:
            self._rt = rt = DeviceRuntime(block, grid, memory if self.host.check_bounds else None)
            rt.shared_buffers = memory.shared
            rt.sites = self.host.sites
            rt.arg_ranges = {i: (lo, hi) for i, (_, lo, hi) in zip(self.pointer_indices(), arrays)}
            if self.host.wait_loops:
                self._run_cooperative(rt, storage, grid, block, ncta, nthreads, shared_ptr, dyn, checks, memory)
            elif self.collective:
                self._run_concurrent(rt, storage, grid, block, ncta, nthreads, shared_ptr, dyn, checks)
            else:
                ctx = C.new_ctx(grid, block, shared_ptr, dyn, dyn, False, *checks)
                ctx.i[C.CTA_BEGIN], ctx.i[C.CTA_END], ctx.i[C.T_BEGIN], ctx.i[C.T_END] = 0, ncta, 0, nthreads
                self._call(ctx, storage)
            self._rt = None
        if rt.error is not None:
            raise rt.error
        copy_back(originals, device)
        copy_back([o for o, _, _ in items], [d for _, d, _ in items])
        return LaunchResult(device, "".join(rt.printf))

    def _launch_clusters(self, grid, block, args, shared_bytes: int) -> LaunchResult:
        """A launch with clusters of ``host.cluster`` CTAs (PTX ISA "Cluster of Cooperative Thread Arrays"):
        ``grid`` counts CTAs and must be a whole number of clusters; CTA (x, y, z) belongs to cluster
        (x / cx, y / cy, z / cz) at (x % cx, y % cy, z % cz), rank x-fastest. The CTAs of a cluster run
        at the same time, one host thread per GPU thread; each CTA has a shared window of its own
        (``SHARED_WINDOW`` bytes, aligned to it, so a byte's shared address is its offset in the window):
        the static shared variables from offset 0 (each aligned to its alignment, at least 16 bytes), the
        dynamic shared memory after them (aligned to 1024 bytes)."""
        cl, n = self.host.cluster, self.host.cluster_size
        if any(g % c for g, c in zip(grid, cl)):
            raise TilecoreError(f"grid {grid} is not a whole number of clusters {cl} (kernel "
                                f"'{self.host.kernel}' has nvvm.cluster_dim {list(cl)})", self.host.location)
        nthreads = block[0] * block[1] * block[2]
        if nthreads > MAX_THREADS_PER_CTA:
            raise TilecoreError(f"block of {nthreads} threads exceeds {MAX_THREADS_PER_CTA} threads per CTA")
        nclusters = [g // c for g, c in zip(grid, cl)]
        storage, device, originals, arrays, items = self._marshal(list(args))
        dyn = max(int(shared_bytes), self.host.dynamic_shared_bytes)
        offsets, off = [], 0
        for name, align in self.host.smem_vars:
            a = max(align, 16)
            off = (off + a - 1) // a * a
            offsets.append(off)
            off += self._smem_sizes.get(name, 0)
        dyn_off = (off + DYN_SHARED_ALIGN - 1) // DYN_SHARED_ALIGN * DYN_SHARED_ALIGN
        if dyn_off + dyn > SHARED_WINDOW:
            raise TilecoreError(f"kernel '{self.host.kernel}' needs {dyn_off + dyn} bytes of shared memory per CTA, "
                                f"more than the emulator's {SHARED_WINDOW}", self.host.location)
        keep, windows, by_rank, bases, var_tables = [], [], [], [], []
        for r in range(n):
            buf = np.zeros(2 * SHARED_WINDOW, dtype=np.uint8)
            base = (buf.ctypes.data + SHARED_WINDOW - 1) // SHARED_WINDOW * SHARED_WINDOW
            keep.append(buf)
            windows.append((base, base + SHARED_WINDOW))
            bases.append(base)
            by_rank.append([(f"shared @{name} of CTA rank {r}", base + o, base + o + self._smem_sizes.get(name, 0))
                            for (name, _), o in zip(self.host.smem_vars, offsets)]
                           + [(f"the dynamic shared memory of CTA rank {r}", base + dyn_off, base + dyn_off + dyn)])
            var_tables.append((ctypes.c_int64 * max(len(offsets), 1))(*[base + o for o in offsets]))
        memory = Memory(arrays + [r for _, _, r in items] + self._global_vars, by_rank[0], self.host.local_labels,
                        self.host.sites, by_rank)
        sink = np.zeros(C.SINK_BYTES + 4096, dtype=np.uint8)
        global_table = C.range_table(memory.global_)
        shared_tables = [C.range_table(b) for b in by_rank]
        cluster_table = C.range_table(memory.cluster)
        with self._lock:
            self._rt = rt = DeviceRuntime(block, grid, memory if self.host.check_bounds else None, n)
            rt.shared_buffers, rt.shared_by_rank, rt.windows = by_rank[0], by_rank, windows
            rt.sites = self.host.sites
            rt.cluster_table = cluster_table
            rt.arg_ranges = {i: (lo, hi) for i, (_, lo, hi) in zip(self.pointer_indices(), arrays)}
            def contexts(spin_limit=None):  # one per thread of the cluster, rank by rank
                ctxs = []
                for r in range(n):
                    for t in range(nthreads):
                        ctx = C.new_ctx(grid, block, bases[r] + dyn_off, dyn, dyn, True, global_table,
                                        len(memory.global_), shared_tables[r], len(by_rank[r]),
                                        (sink.ctypes.data + 4095) // 4096 * 4096, cluster_table, len(memory.cluster))
                        ctx.smem_vars = ctypes.addressof(var_tables[r])
                        for d in range(3):
                            ctx.i[C.NCLUSTERID + d] = nclusters[d]
                            ctx.i[C.CLUSTER_NCTAID + d] = cl[d]
                        ctx.i[C.CLUSTER_RANK], ctx.i[C.CLUSTER_NRANK] = r, n
                        ctx.i[C.CTA_BEGIN], ctx.i[C.CTA_END] = 0, nclusters[0] * nclusters[1] * nclusters[2]
                        ctx.i[C.T_BEGIN], ctx.i[C.T_END] = t, t + 1
                        if spin_limit is not None:
                            ctx.i[C.SPIN_LIMIT] = spin_limit
                        ctxs.append(ctx)
                return ctxs

            if self.host.wait_loops:  # clusters that may wait for each other: cooperatively, a cluster a unit
                from .ctasched import SPIN_LIMIT, CtaScheduler

                rt.sched = CtaScheduler(rt, nclusters[0] * nclusters[1] * nclusters[2],
                                        lambda: contexts(SPIN_LIMIT), lambda ctx: self._call(ctx, storage),
                                        tuple(nclusters), self.host.kernel, memory.cluster, memory.global_,
                                        unit="cluster")
                rt.sched.run()
            else:
                self._run_threads(contexts(), storage)
            self._rt = None
        del keep
        if rt.error is not None:
            raise rt.error
        copy_back(originals, device)
        copy_back([o for o, _, _ in items], [d for _, d, _ in items])
        return LaunchResult(device, "".join(rt.printf))

    def _call(self, ctx, storage):
        ctx_ref = ctypes.c_void_p(ctypes.addressof(ctx))
        argv = (ctypes.c_void_p * (1 + len(storage)))(
            ctypes.addressof(ctx_ref), *[ctypes.addressof(s) for s in storage])
        self._drive(argv)

    def _run_concurrent(self, rt, storage, grid, block, ncta, nthreads, shared_ptr, dyn, checks):
        ctxs = []
        for t in range(nthreads):
            ctx = C.new_ctx(grid, block, shared_ptr, dyn, dyn, True, *checks)
            ctx.i[C.CTA_BEGIN], ctx.i[C.CTA_END], ctx.i[C.T_BEGIN], ctx.i[C.T_END] = 0, ncta, t, t + 1
            ctxs.append(ctx)
        self._run_threads(ctxs, storage)

    def _run_cooperative(self, rt, storage, grid, block, ncta, nthreads, shared_ptr, dyn, checks, memory):
        """A kernel with wait loops (:mod:`.waitloops`): CTAs run cooperatively (:mod:`.ctasched`), each on host
        threads of its own (one per GPU thread), one at a time; a CTA spinning in a wait loop is switched out."""
        from .ctasched import SPIN_LIMIT, CtaScheduler

        def contexts():
            ctxs = []
            for t in range(nthreads):
                ctx = C.new_ctx(grid, block, shared_ptr, dyn, dyn, True, *checks)
                ctx.i[C.T_BEGIN], ctx.i[C.T_END], ctx.i[C.SPIN_LIMIT] = t, t + 1, SPIN_LIMIT
                ctxs.append(ctx)
            return ctxs

        rt.sched = CtaScheduler(rt, ncta, contexts, lambda ctx: self._call(ctx, storage), grid, self.host.kernel,
                                memory.shared, memory.global_)
        rt.sched.run()

    def _run_threads(self, ctxs, storage) -> None:
        """Run the kernel once per context, each on a host thread of its own, all at the same time."""
        threads = [threading.Thread(target=self._call, args=(ctx, storage), daemon=True) for ctx in ctxs]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
