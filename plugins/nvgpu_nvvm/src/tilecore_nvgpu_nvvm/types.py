"""LLVM types of the nvgpu types (the plugin's rules for the shared type converter).

| nvgpu type                                   | LLVM type                                     |
|----------------------------------------------|-----------------------------------------------|
| !nvgpu.mbarrier.group<memorySpace = S, ...>  | !llvm.ptr<S> (the group's first i64 word)     |
| !nvgpu.mbarrier.token                        | i64 (the arrival state)                       |
| !nvgpu.tensormap.descriptor<...>             | !llvm.ptr (the 128-byte CUtensorMap)          |
| !nvgpu.warpgroup.descriptor<...>             | i64 (the GMMA shared-memory descriptor)       |
| !nvgpu.warpgroup.accumulator<vector<MxNxT>>  | !llvm.struct of M/64 structs of N/2 T values  |
"""

from __future__ import annotations

from tilecore.mlir import ir

from .common import i64, ptr


def accumulator_struct(vector_type: ir.VectorType) -> ir.Type:
    """Per-thread registers of a warpgroup accumulator: one inner struct per 64-row WGMMA tile."""
    m, n = vector_type.shape
    inner = "!llvm.struct<(" + ", ".join([str(vector_type.element_type)] * (n // 2)) + ")>"
    return ir.Type.parse("!llvm.struct<(" + ", ".join([inner[len("!llvm."):]] * (m // 64)) + ")>")


def fragmented_vector(t: ir.Type) -> ir.VectorType:
    text = str(t)
    return ir.VectorType(ir.Type.parse(text.split("fragmented = ", 1)[1][:-1]))


def convert_nvgpu_type(t, conv):
    text = str(t)
    if not text.startswith("!nvgpu."):
        return None
    if text.startswith("!nvgpu.mbarrier.group"):
        from .mbarrier import group_info

        return ptr(group_info(t)[0])
    if text == "!nvgpu.mbarrier.token":
        return i64()
    if text.startswith("!nvgpu.tensormap.descriptor"):
        return ptr(0)
    if text.startswith("!nvgpu.warpgroup.descriptor"):
        return i64()
    if text.startswith("!nvgpu.warpgroup.accumulator"):
        return accumulator_struct(fragmented_vector(t))
    return None
