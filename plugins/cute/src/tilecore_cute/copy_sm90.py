"""The sm_90 tensor-memory-access copy atom ``copy.sm90.tma.tile`` (tileas' TMA interface, :mod:`tilecore.mma`).

PTX ISA, "Data Movement and Conversion Instructions: cp.async.bulk.tensor": ``cp.async.bulk.tensor.Nd.
shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [tensorMap, {c0, ...}], [mbar]`` copies
the box of the tensor map at the coordinates (innermost first) into shared memory, filling elements out of
bounds with zeros ("Tensor Access Modes: Tiled mode", "Out-of-bound access"), in the tensor map's swizzle
("Tensor-map swizzle modes": the 16-byte unit of address ``a`` XOR ``(a / 128) % (swizzle / 16)``, the
layout of :class:`tilecore.mma.SwizzledOperand`); the whole box's bytes count as transactions on the
mbarrier. "Parallel Synchronization and Communication Instructions: mbarrier": ``mbarrier.init`` (with
``fence.mbarrier_init`` so that the async proxy sees it), ``mbarrier.arrive.expect_tx`` (the issuing
thread's arrival, expecting the box bytes), ``mbarrier.try_wait.parity`` (phases alternate parity 0 / 1),
``mbarrier.inval`` before the memory is reused. "Memory Consistency Model: proxies": ``fence.proxy.async.
shared::cta`` orders generic-proxy accesses of shared memory before async-proxy ones (TMA writes, and the
reads of a TMA store).

Stores (PTX ISA §9.7.9.25, "cp.async.bulk.tensor", ``.global.shared::cta.tile.bulk_group``):
``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tensorMap, {c0, ...}], [src]`` writes the
shared box at ``src`` (dense, dimension 0 fastest, in the map's swizzle) to the tensor at the coordinates;
box elements out of bounds are not written ("Out-of-bound access"). The store joins the issuing thread's
bulk async-group: ``cp.async.bulk.commit_group`` closes it, ``cp.async.bulk.wait_group.read N`` waits until
at most N groups still read their shared memory ("Bulk and Tensor copy completion instructions").
The atom emits ``cute_nvgpu`` ops; stage 5 lowers them (:mod:`.tma_lowering`).
"""

from __future__ import annotations

from tilecore.atoms import Atom
from tilecore.mlir import ir
from tilecore.mma import TMA_INTERFACE

NAME = "copy.sm90.tma.tile"


def lower(cg, action: str, *args):
    op = ir.Operation.create
    if action == "barrier_init":
        op("cute_nvgpu.mbarrier_init", operands=[args[0]])
    elif action == "expect_tx":
        op("cute_nvgpu.mbarrier_arrive_expect_tx", operands=[args[0], args[1]])
    elif action == "load":
        dst, tensor_map, bar, coords = args
        op("cute_nvgpu.tma_load", operands=[dst, tensor_map, bar, *coords])
    elif action == "wait":
        op("cute_nvgpu.mbarrier_try_wait_parity", operands=[args[0], args[1]])
    elif action == "inval":
        op("cute_nvgpu.mbarrier_inval", operands=[args[0]])
    elif action == "fence_proxy":
        op("cute_nvgpu.fence_view_async_shared")
    elif action == "store":
        tensor_map, src, coords = args
        op("cute_nvgpu.tma_store", operands=[tensor_map, src, *coords])
    elif action == "store_commit":
        op("cute_nvgpu.bulk_commit_group")
    elif action == "store_wait":
        op("cute_nvgpu.bulk_wait_group_read", attributes={"n": ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                                                  int(args[0]))})
    else:
        raise ValueError(f"{NAME}: unknown action '{action}'")
    return []


def atoms() -> list[Atom]:
    return [Atom(NAME, "copy", lower=lower, min_cc=90, priority=20,
                 data={"interface": TMA_INTERFACE, "max_box": 256, "swizzles": (32, 64, 128), "stores": True},
                 description="cp.async.bulk.tensor tile mode (TMA) global -> shared on an mbarrier, 1-5-D, "
                             "zero fill, 32 / 64 / 128-byte swizzle; shared -> global in bulk groups, clipped")]
