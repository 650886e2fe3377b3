"""The sm100 plugin: Blackwell targets, tcgen05 fence lowering with its SM gate (nvvm on sm_100a, inline PTX on
sm_103a), atoms."""

from __future__ import annotations

import pytest

from tilecore.compiler import compile_module
from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.serialize import ptx_to_cubin
from tilecore.targets import resolve_target

KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k() attributes {nvvm.kernel} {
      "cute_nvgpu.tcgen05_fence_before_thread_sync"() : () -> ()
      "cute_nvgpu.tcgen05_fence_after_thread_sync"() : () -> ()
      llvm.return
    }
  }
}
"""
STAGES = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
          "serialize"]


@pytest.fixture(scope="module")
def pm():
    return PluginManager()


def test_targets(pm):
    t = pm.targets()
    assert t["sm_100a"].plugin == "sm100" and t["sm_100a"].cc == 100 and t["sm_100a"].arch_specific
    assert t["sm_100a"].feature_string == "+ptx90"
    assert t["sm_120a"].cc == 120
    assert "sm_90a" not in {n for n, v in t.items() if v.plugin == "sm100"}


@pytest.mark.parametrize("gpu", ["sm_100a", "sm_103a"])
def test_tcgen05_fences_lower_and_assemble(pm, gpu):
    with pm.make_context():
        m = ir.Module.parse(KERNEL)
    res = compile_module(m, resolve_target(gpu, pm.targets()), CompileOptions(emit="ptx"), pm, stages=STAGES)
    text = str(m)
    if gpu == "sm_100a":
        assert "nvvm.tcgen05.fence <before>" in text and "nvvm.tcgen05.fence <after>" in text
    else:  # MLIR 22's nvvm verifier rejects tcgen05 ops on sm_103a: inline PTX
        assert "nvvm.tcgen05" not in text and '"tcgen05.fence::before_thread_sync;"' in text
    ptx = res.artifacts["ptx"]["m"]
    assert "tcgen05.fence::before_thread_sync" in ptx and "tcgen05.fence::after_thread_sync" in ptx
    assert ptx_to_cubin(ptx, gpu)[:4] == b"\x7fELF"


@pytest.mark.parametrize("gpu", ["sm_90a", "sm_100", "sm_120a"])
def test_tcgen05_outside_its_targets_is_rejected_with_location(pm, gpu):
    with pm.make_context():
        m = ir.Module.parse(KERNEL)
    with pytest.raises(TilecoreError) as ei:
        compile_module(m, resolve_target(gpu, pm.targets()), CompileOptions(emit="ptx"), pm, stages=STAGES)
    assert ei.value.message == ("'cute_nvgpu.tcgen05_fence_before_thread_sync' needs one of sm_100a, sm_101a, "
                                f"sm_103a (tcgen05); target is {gpu}")
    assert ei.value.location and ei.value.location.endswith(":5:7")


def test_every_atom_has_a_lowering(pm):
    """The sm100 atoms listed on sm_100a are the seven tcgen05 MMA atoms and the four block-scaled ones (MXFP8,
    MXFP4, NVFP4, e2m1 with UE8M0 per 16); every MMA atom has a lowering."""
    atoms = pm.atoms(resolve_target("sm_100a", pm.targets()))
    assert sorted(a.name for a in atoms.values() if a.plugin == "sm100") == sorted([
        "mma.sm100a.mMnNk16.f16.f32", "mma.sm100a.mMnNk16.f16.f16", "mma.sm100a.mMnNk16.bf16.f32",
        "mma.sm100a.mMnNk8.tf32.f32", "mma.sm100a.mMnNk32.f8.f16",
        "mma.sm100a.mMnNk32.i8.i32",
        "mma.sm100a.mMnNk32.f8.f32", "mma.sm100a.mMnNk32.mxf8.f32", "mma.sm100a.mMnNk64.mxf4.f32",
        "mma.sm100a.mMnNk64.nvf4.f32", "mma.sm100a.mMnNk64.nvf4ue8m0.f32"])
    assert all(a.lower is not None for a in atoms.values() if a.kind in ("mma", "block_scaled_mma"))
