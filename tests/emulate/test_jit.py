"""The emulator's host JIT (tilecore/emulate/jit.py): every level gives the same numbers, the packed entry points
pass f16 / i1 / i64 scalars, libm resolves, the timings are recorded, bad levels are clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from tilecore.emulate import compile_kernel
from tilecore.emulate.engine import EmulatedKernel
from tilecore.emulate.hostmodule import build
from tilecore.emulate.jit import LEVELS
from tilecore.errors import TilecoreError

# out[g] = x[g] * s + h (two roundings) + (flag ? expf(x[g]) : k) for g < n
MIX = """
gpu.module @m {
llvm.func @__nv_expf(f32) -> f32
llvm.func @mix(%out: !llvm.ptr<1>, %x: !llvm.ptr<1>, %h: f16, %flag: i1, %k: i64, %s: f32, %n: i32)
    attributes {nvvm.kernel} {
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %c = nvvm.read.ptx.sreg.ctaid.x : i32
  %nt = nvvm.read.ptx.sreg.ntid.x : i32
  %base = llvm.mul %c, %nt : i32
  %g = llvm.add %base, %t : i32
  %in = llvm.icmp "slt" %g, %n : i32
  llvm.cond_br %in, ^body, ^end
^body:
  %px = llvm.getelementptr %x[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
  %v = llvm.load %px : !llvm.ptr<1> -> f32
  %hf = llvm.fpext %h : f16 to f32
  %m = llvm.fmul %v, %s : f32
  %a = llvm.fadd %m, %hf : f32
  %e = llvm.call @__nv_expf(%v) : (f32) -> f32
  %kf = llvm.sitofp %k : i64 to f32
  %sel = llvm.select %flag, %e, %kf : i1, f32
  %r = llvm.fadd %a, %sel : f32
  %po = llvm.getelementptr %out[%g] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
  llvm.store %r, %po : f32, !llvm.ptr<1>
  llvm.br ^end
^end:
  llvm.return
}
}
"""

N = 1000  # not a multiple of the 128-thread CTA


def _run(level: int, flag: bool) -> np.ndarray:
    x = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    compile_kernel(MIX, "mix", opt_level=level).launch((N + 127) // 128, 128, [out, x, 0.375, flag, -3, 1.5, N])
    return x, out


@pytest.mark.parametrize("flag", [True, False])
def test_every_level_gives_the_same_bits(flag):
    results = {level: _run(level, flag)[1] for level in LEVELS}
    x = _run(1, flag)[0]
    a = x * np.float32(1.5) + np.float32(0.375)
    want = a + (np.exp(x) if flag else np.float32(-3))
    np.testing.assert_allclose(results[1], want, rtol=2e-6, atol=1e-6)
    for level, got in results.items():
        assert got.view(np.uint32).tolist() == results[1].view(np.uint32).tolist(), level


def test_the_jit_records_its_steps():
    from tilecore.inputs import read_mlir_text
    from tilecore.plugins import get_plugin_manager

    module = read_mlir_text(MIX.encode(), "", get_plugin_manager().make_context())
    k = EmulatedKernel(build(module, "mix"))
    assert k.jit_seconds > 0
    assert set(k.engine.timings) == {"translate", "optimise", "codegen", "link"}


def test_bad_levels_are_errors(monkeypatch):
    with pytest.raises(TilecoreError, match=r"JIT level must be one of \[0, 1, 2, 3\], got 7"):
        compile_kernel(MIX, "mix", opt_level=7)
    monkeypatch.setenv("TILECORE_EMU_OPT_LEVEL", "fast")
    with pytest.raises(TilecoreError, match="TILECORE_EMU_OPT_LEVEL must be 0, 1, 2 or 3, got 'fast'"):
        compile_kernel(MIX, "mix")
    monkeypatch.setenv("TILECORE_EMU_OPT_LEVEL", "2")
    assert np.array_equal(_run(2, True)[1], _run(1, True)[1])
