"""The sm_80 global -> shared copy atom ``copy.sm80.cp_async`` (tileas' copy interface, :mod:`tilecore.mma`).

PTX ISA, "Data Movement and Conversion Instructions: cp.async": ``cp.async.cg.shared.global [dst], [src],
16, src-size`` copies 16 bytes asynchronously, reading ``src-size`` of them and zero-filling the rest
(``.cg``: cached in L2 only, the only cache mode 16-byte copies allow besides ``.ca``); both addresses
must be 16-byte aligned. ``cp.async.commit_group`` closes a group of the thread's copies,
``cp.async.wait_group N`` waits until at most N groups are pending; the data is then visible to the
thread that copied it, and to the CTA after a barrier. The atom emits ``cute_nvgpu.cp_async*`` ops;
stage 5 lowers them (:mod:`.mma_lowering`).
"""

from __future__ import annotations

from tilecore.atoms import Atom
from tilecore.mlir import ir
from tilecore.mma import G2S_INTERFACE

CHUNK_BYTES = 16


def lower(cg, action: str, *args):
    i32 = ir.IntegerType.get_signless(32)
    if action == "copy":
        dst, src, nbytes = args
        ir.Operation.create("cute_nvgpu.cp_async", operands=[dst, src, nbytes],
                            attributes={"size": ir.IntegerAttr.get(i32, CHUNK_BYTES)})
        return []
    if action == "commit":
        ir.Operation.create("cute_nvgpu.cp_async_commit")
        return []
    if action == "wait":
        ir.Operation.create("cute_nvgpu.cp_async_wait", attributes={"n": ir.IntegerAttr.get(i32, int(args[0]))})
        return []
    raise ValueError(f"copy.sm80.cp_async: unknown action '{action}'")


def atoms() -> list[Atom]:
    return [Atom("copy.sm80.cp_async", "copy", lower=lower, min_cc=80, priority=10,
                 data={"interface": G2S_INTERFACE, "chunk_bytes": CHUNK_BYTES},
                 description="cp.async.cg 16 bytes global -> shared, zero-fill, commit / wait groups")]
