"""nvgpu.device_async_wait -> nvvm.cp.async.wait.group N (the plugin's first pattern)."""

from __future__ import annotations

from tilecore.conversion import ConversionTarget, apply_conversion
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.targets import resolve_target

KERNEL = """func.func @k(%t: !nvgpu.device.async.token) {
  nvgpu.device_async_wait %t {numGroups = 2 : i32}
  nvgpu.device_async_wait %t
  return
}"""


def test_wait_group_carries_group_count():
    pm = PluginManager()
    target = resolve_target("sm_80", pm.targets())
    pats = [p for p in pm.patterns("convert-nvgpu-and-gpu-to-nvvm", target, CompileOptions())
            if p.root == "nvgpu.device_async_wait"]
    assert [p.plugin for p in pats] == ["nvgpu_nvvm"]
    with pm.make_context():
        m = ir.Module.parse(KERNEL)
    apply_conversion(m, ConversionTarget("t").add_illegal_op("nvgpu.device_async_wait"), pats)
    waits = []
    m.operation.walk(lambda op: (waits.append(op) if op.name == "nvvm.cp.async.wait.group" else None)
                     or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    assert [ir.IntegerAttr(w.attributes["n"]).value for w in waits] == [2, 0]
