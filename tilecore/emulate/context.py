"""The per-thread context block every emulated function receives as its last argument.

One ``Ctx`` per host thread: special registers the kernel reads (tid, ntid, ...),
the abort flag the rewritten code tests after every call that can fail, and the
range of CTAs / threads the native driver loops over. Fields are 32-bit slots so
the MLIR helpers address them as ``ctx[i] : i32``; the dynamic shared memory
pointer sits at byte ``SHARED_PTR_BYTE``, then the pointers to the tables of memory the
checked accesses may touch (:mod:`.memcheck`): global memory (``[lo, hi)`` pairs of i64,
``NRANGES`` of them) at ``RANGES_PTR_BYTE``, shared memory (pairs, ``NSHARED``) at
``SHARED_RANGES_PTR_BYTE`` and the thread's live local buffers (``[lo, hi, label]``
triples, ``NLOCAL`` of at most ``LOCAL_CAP``) at ``LOCAL_PTR_BYTE``; the launch's sink
(``SINK_BYTES`` of scratch memory that bad accesses touch instead) at ``SINK_PTR_BYTE``; the shared memory
of the whole cluster (pairs, ``NCLUSTER``: the CTA's own shared table in a launch without clusters) at
``CLUSTER_RANGES_PTR_BYTE``; the CTA's table of its static shared variables' addresses (i64 per variable, a
cluster launch only: each CTA of a cluster has its own instances) at ``SMEM_VARS_PTR_BYTE``.

Cluster slots (PTX ISA "Special Registers": ``%clusterid``, ``%nclusterid``, ``%cluster_ctaid``,
``%cluster_nctaid``, ``%cluster_ctarank``, ``%cluster_nctarank``): ``CLUSTERID`` / ``NCLUSTERID`` /
``CLUSTER_CTAID`` / ``CLUSTER_NCTAID`` (x, y, z), ``CLUSTER_RANK`` / ``CLUSTER_NRANK``; set for cluster
launches (:func:`tilecore.emulate.prelude.set_thread`), rank 0 of 1 otherwise.
"""

from __future__ import annotations

import ctypes

# i32 slot indices (the MLIR prelude and the special-register table use these).
TID, NTID, CTAID, NCTAID = 0, 3, 6, 9          # x, y, z at +0, +1, +2
LANEID, WARPID, NWARPID, LINEAR_TID = 12, 13, 14, 15
ABORT, CONCURRENT = 16, 17                       # abort flag; 1 when threads run concurrently
CTA_BEGIN, CTA_END, T_BEGIN, T_END = 18, 19, 20, 21
DYN_SMEM, TOTAL_SMEM, NRANGES = 22, 23, 24
NSHARED, NLOCAL, LOCAL_CAP = 25, 26, 27
CLUSTERID, NCLUSTERID, CLUSTER_CTAID, CLUSTER_NCTAID = 28, 31, 34, 37  # x, y, z at +0, +1, +2
CLUSTER_RANK, CLUSTER_NRANK, NCLUSTER = 40, 41, 42
SPINS, SPIN_LIMIT = 43, 44  # back edges of wait loops since the last check; checks every SPIN_LIMIT (:mod:`.waitloops`)
SLOTS = 48
SHARED_PTR_BYTE = SLOTS * 4
RANGES_PTR_BYTE = SHARED_PTR_BYTE + 8
SHARED_RANGES_PTR_BYTE = RANGES_PTR_BYTE + 8
LOCAL_PTR_BYTE = SHARED_RANGES_PTR_BYTE + 8
SINK_PTR_BYTE = LOCAL_PTR_BYTE + 8
CLUSTER_RANGES_PTR_BYTE = SINK_PTR_BYTE + 8
SMEM_VARS_PTR_BYTE = CLUSTER_RANGES_PTR_BYTE + 8
LOCAL_CAPACITY = 128  # local buffers (allocas) one thread may have live at once
SINK_BYTES = 1 << 16  # the scratch memory a bad access is sent to (no GPU access is larger)


class Ctx(ctypes.Structure):
    _fields_ = [("i", ctypes.c_int32 * SLOTS), ("shared", ctypes.c_void_p), ("ranges", ctypes.c_void_p),
                ("shared_ranges", ctypes.c_void_p), ("local", ctypes.c_void_p), ("sink", ctypes.c_void_p),
                ("cluster_ranges", ctypes.c_void_p), ("smem_vars", ctypes.c_void_p)]


def range_table(ranges) -> ctypes.Array:
    """A ctypes i64 array of the ``[lo, hi)`` pairs of ``ranges`` (``(label, lo, hi)`` tuples)."""
    return (ctypes.c_int64 * max(2 * len(ranges), 2))(*[v for _, lo, hi in ranges for v in (lo, hi)])


def new_ctx(grid, block, shared_ptr: int, dyn_smem: int, total_smem: int, concurrent: bool,
            ranges=None, nranges: int = 0, shared_ranges=None, nshared: int = 0, sink: int = 0,
            cluster_ranges=None, ncluster: int = 0) -> Ctx:
    """A context with the launch-wide fields filled (the driver sets the per-thread ones).

    ``ranges`` / ``shared_ranges``: ctypes arrays of ``nranges`` / ``nshared`` i64 ``[lo, hi)``
    pairs; ``sink``: the address of ``SINK_BYTES`` of scratch memory (both kept alive by the
    caller); the context owns its table of local buffers. ``cluster_ranges`` / ``ncluster``: the cluster's
    shared memory (None: the same table as ``shared_ranges``).
    """
    c = Ctx()
    c.sink = sink
    if ranges is not None:
        c.ranges = ctypes.addressof(ranges)
        c.i[NRANGES] = nranges
    if shared_ranges is not None:
        c.shared_ranges = ctypes.addressof(shared_ranges)
        c.i[NSHARED] = nshared
    if cluster_ranges is None:
        cluster_ranges, ncluster = shared_ranges, nshared
    if cluster_ranges is not None:
        c.cluster_ranges = ctypes.addressof(cluster_ranges)
        c.i[NCLUSTER] = ncluster
    c._local = (ctypes.c_int64 * (3 * LOCAL_CAPACITY))()
    c.local = ctypes.addressof(c._local)
    c.i[LOCAL_CAP] = LOCAL_CAPACITY
    for d in range(3):
        c.i[NTID + d] = block[d]
        c.i[NCTAID + d] = grid[d]
    c.i[CLUSTER_NRANK] = 1
    c.i[SPIN_LIMIT] = 0x7FFFFFFF  # a cooperative launch sets its own (:mod:`.ctasched`)
    for d in range(3):
        c.i[CLUSTER_NCTAID + d] = 1
    c.i[NWARPID] = (block[0] * block[1] * block[2] + 31) // 32
    c.i[CONCURRENT] = int(concurrent)
    c.i[DYN_SMEM] = dyn_smem
    c.i[TOTAL_SMEM] = total_smem
    c.shared = shared_ptr
    return c


def slot(ctx_addr: int, index: int) -> int:
    """Read an i32 slot of a context given its address (from inside a callback)."""
    return ctypes.c_int32.from_address(ctx_addr + 4 * index).value


def set_slot(ctx_addr: int, index: int, value: int) -> None:
    ctypes.c_int32.from_address(ctx_addr + 4 * index).value = value
