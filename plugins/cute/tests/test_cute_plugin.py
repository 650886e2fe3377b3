"""The cute plugin: dialects load, stage 5 is declared, its first patterns emit NVVM, atoms register."""

from __future__ import annotations

import pytest

from tilecore.compiler import compile_module
from tilecore.conversion import ConversionError
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.targets import resolve_target

KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %t = "cute.thread_idx"() : () -> i32
      "cute_nvgpu.fence_view_async_shared"() : () -> ()
      llvm.store %t, %out : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""


@pytest.fixture(scope="module")
def pm():
    return PluginManager()


def lower(pm, text, gpu="sm_90a", stages=("convert-cute-to-llvm",)):
    with pm.make_context():
        m = ir.Module.parse(text)
    res = compile_module(m, resolve_target(gpu, pm.targets()), CompileOptions(emit="ptx"), pm,
                         stages=list(stages))
    return m, res


def op_list(m):
    out = []
    m.operation.walk(lambda op: out.append(op) or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    return out


def test_registrations(pm):
    assert {"cute", "cute_nvgpu"} <= set(pm.dialects())
    assert pm.stages()["convert-cute-to-llvm"].plugin == "cute"
    atoms = pm.atoms(resolve_target("sm_80", pm.targets()))
    assert atoms["copy.universal"].kind == "copy" and atoms["mma.sm80.mma_sync"].kind == "mma"
    assert "mma.sm90.wgmma" not in {a.name for a in atoms.values() if a.admissible(resolve_target("sm_80", pm.targets()))}


def test_fence_and_thread_idx_lower_to_nvvm(pm):
    m, _ = lower(pm, KERNEL)
    ops = op_list(m)
    names = [o.name for o in ops]
    assert "cute.thread_idx" not in names and "cute_nvgpu.fence_view_async_shared" not in names
    fence = next(o for o in ops if o.name == "nvvm.fence.proxy")
    assert str(fence.attributes["kind"]) == "#nvvm.proxy_kind<async.shared>"
    assert str(fence.attributes["space"]) == "#nvvm.shared_space<cta>"
    assert "nvvm.read.ptx.sreg.tid.x" in names


def test_through_serialize_ptxas_accepts(pm):
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target",
              "translate-debug-info", "serialize"]
    _, res = lower(pm, KERNEL, stages=stages)
    ptx = res.artifacts["ptx"]["m"]
    assert "fence.proxy.async.shared::cta" in ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"


def test_surviving_cute_op_fails_stage(pm):
    text = KERNEL.replace('"cute_nvgpu.fence_view_async_shared"() : () -> ()',
                          '%e = "cute_nvgpu.elect_one"() : () -> i1\n      %z = llvm.zext %e : i1 to i32\n'
                          '      llvm.store %z, %out : i32, !llvm.ptr<1>')
    with pytest.raises(ConversionError) as ei:
        lower(pm, text)
    assert "failed to legalize operation 'cute_nvgpu.elect_one' in stage 'convert-cute-to-llvm'" in ei.value.message
