"""Tile blocks of kernels with a cluster shape (cuTile ``num_ctas``): one tile block per cluster (stage 4).

A kernel whose hints ask for clusters of several CTAs (``nvvm.cluster_dim``, stage 3) runs one tile block per
*cluster*, as tileiras' code does: ``ct.bid(axis)`` is the cluster's id (``%clusterid``), ``ct.num_blocks(axis)``
the number of clusters (``%nclusterid``), the launch grid counts tile blocks = clusters (``.blocksareclusters``;
``tilecore.cutile.contract``: CTAs launched = grid x cluster shape), so any grid is valid whatever ``num_ctas``
is (cuTile: "each block is executed by a subset of a GPU"). The CTA of rank 0 runs the tile block; the other
CTAs of the cluster leave at entry, before any side effect (:func:`exit_other_ranks`).

The exception is a kernel whose tensor-core dots run as CTA pairs (:mod:`.pairs`, ``--option
sm100.cta_pairs=on``): there a tile block is one CTA and a cluster two consecutive tile blocks along x
(the grid must be a whole number of clusters). The kernel says which in ``tilecore.tile_block``.
"""

from __future__ import annotations

import math

from tilecore.launch_attrs import (
    TILE_BLOCK_ATTR,  # noqa: F401 - re-exported: the kernel's reading of a tile block
    cluster_shape,
)
from tilecore.mlir import dialects, ir

from .codegen import create

# a tile block's id and the grid's size -> the cluster's id and the number of clusters (gpu dialect)
CLUSTER_QUERIES = {"gpu.block_id": "gpu.cluster_id", "gpu.grid_dim": "gpu.cluster_dim"}


def has_cluster(fn) -> bool:
    """Whether the kernel ``fn`` has a cluster shape of more than one CTA."""
    return math.prod(cluster_shape(fn)) > 1


def tile_blocks_are_clusters(block) -> None:
    """Read every tile-block id / grid size of the body ``block`` (nested regions too) from the cluster
    queries instead (the same dimension attribute)."""
    found = []

    def walk(b):
        for op in b.operations:
            op = op.operation
            if op.name in CLUSTER_QUERIES:
                found.append(op)
            for region in op.regions:
                for inner in region.blocks:
                    walk(inner)

    walk(block)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            new = create(CLUSTER_QUERIES[op.name], [r.type for r in op.results], [],
                         {"dimension": op.attributes["dimension"]})
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()


def exit_other_ranks(fn, entry) -> None:
    """Make the CTAs of cluster rank != 0 leave the kernel ``fn`` (an ``llvm.func`` whose entry block is
    ``entry``) before its first op: a new entry block reads ``%cluster_ctarank`` and branches to ``entry``
    (which keeps its arguments, now the branch's operands) or to a block that returns."""
    args = list(entry.arguments)
    head = entry.create_before(*[a.type for a in args], arg_locs=[a.location for a in args])
    leave = entry.create_after()
    i32 = ir.IntegerType.get_signless(32)
    with ir.InsertionPoint(head), fn.location:
        rank = create("nvvm.read.ptx.sreg.cluster.ctarank", [i32], []).results[0]
        leader = dialects.arith.cmpi(dialects.arith.CmpIPredicate.eq, rank, dialects.arith.constant(i32, 0))
        dialects.cf.cond_br(leader, list(head.arguments), [], entry, leave)
    with ir.InsertionPoint(leave), fn.location:
        dialects.llvm.return_()
