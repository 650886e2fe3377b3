"""Stage 5 patterns for the TMA copy atom's ops (:mod:`.copy_sm90`) -> NVVM.

| op | NVVM | PTX |
|---|---|---|
| ``cute_nvgpu.mbarrier_init %bar`` | ``nvvm.mbarrier.init %bar, 1`` + ``nvvm.fence.mbarrier.init`` | ``mbarrier.init.shared.b64``; ``fence.mbarrier_init.release.cluster`` |
| ``cute_nvgpu.mbarrier_arrive_expect_tx %bar, %n`` | ``nvvm.mbarrier.arrive.expect_tx`` | ``mbarrier.arrive.expect_tx.shared.b64`` |
| ``cute_nvgpu.mbarrier_try_wait_parity %bar, %p`` | ``nvvm.mbarrier.try_wait.parity`` (a loop until it succeeds) | ``mbarrier.try_wait.parity.shared.b64`` |
| ``cute_nvgpu.mbarrier_inval %bar`` | ``nvvm.mbarrier.inval`` | ``mbarrier.inval.shared.b64`` |
| ``cute_nvgpu.tma_load %dst, %tmap, %bar, %c...`` | ``nvvm.cp.async.bulk.tensor.shared.cluster.global`` (tile) | ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes`` |
| ``cute_nvgpu.tma_store %tmap, %src, %c...`` | ``nvvm.cp.async.bulk.tensor.global.shared.cta`` (tile) | ``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`` |
| ``cute_nvgpu.bulk_commit_group`` | ``nvvm.cp.async.bulk.commit.group`` | ``cp.async.bulk.commit_group`` |
| ``cute_nvgpu.bulk_wait_group_read {n}`` | ``nvvm.cp.async.bulk.wait_group n {read}`` | ``cp.async.bulk.wait_group.read n`` |
"""

from __future__ import annotations

from tilecore.conversion import Pattern
from tilecore.mlir import dialects, ir

from .mma_lowering import _c32

WAIT_TICKS = 0x989680  # try_wait's suspend-time hint (ns), as CUTLASS' ClusterBarrier::wait uses


class MbarrierInitPattern(Pattern):
    root = "cute_nvgpu.mbarrier_init"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.mbarrier_init(op.operands[0], _c32(1))
            dialects.nvvm.fence_mbarrier_init()
        rw.erase(op)


class MbarrierExpectTxPattern(Pattern):
    root = "cute_nvgpu.mbarrier_arrive_expect_tx"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.mbarrier_arrive_expect_tx(ir.IntegerType.get_signless(64), op.operands[0], op.operands[1])
        rw.erase(op)


class MbarrierWaitPattern(Pattern):
    root = "cute_nvgpu.mbarrier_try_wait_parity"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.mbarrier_try_wait_parity(op.operands[0], op.operands[1], _c32(WAIT_TICKS))
        rw.erase(op)


class MbarrierInvalPattern(Pattern):
    root = "cute_nvgpu.mbarrier_inval"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.mbarrier_inval(op.operands[0])
        rw.erase(op)


class TmaLoadPattern(Pattern):
    root = "cute_nvgpu.tma_load"

    def rewrite(self, op, rw):
        dst, tmap, bar, *coords = op.operands
        with rw.ip, op.location:
            dst7 = dialects.llvm.addrspacecast(ir.Type.parse("!llvm.ptr<7>"), dst)
            dialects.nvvm.cp_async_bulk_tensor_shared_cluster_global(dst7, tmap, coords, bar, [])
        rw.erase(op)


class TmaStorePattern(Pattern):
    root = "cute_nvgpu.tma_store"

    def rewrite(self, op, rw):
        tmap, src, *coords = op.operands
        with rw.ip, op.location:
            dialects.nvvm.cp_async_bulk_tensor_global_shared_cta(tmap, src, coords)
        rw.erase(op)


class BulkCommitPattern(Pattern):
    root = "cute_nvgpu.bulk_commit_group"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.cp_async_bulk_commit_group()
        rw.erase(op)


class BulkWaitReadPattern(Pattern):
    root = "cute_nvgpu.bulk_wait_group_read"

    def rewrite(self, op, rw):
        with rw.ip, op.location:
            dialects.nvvm.cp_async_bulk_wait_group(ir.IntegerAttr(op.attributes["n"]).value, read=True)
        rw.erase(op)


def patterns():
    return [MbarrierInitPattern(), MbarrierExpectTxPattern(), MbarrierWaitPattern(), MbarrierInvalPattern(),
            TmaLoadPattern(), TmaStorePattern(), BulkCommitPattern(), BulkWaitReadPattern()]
