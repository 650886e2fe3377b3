"""Isolated launches: the kernel runs in a child process, so a native fault is an error, not a dead caller."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from support import has_plugin

from tilecore.emulate import launch
from tilecore.errors import TilecoreError
from tilecore.plugins import get_plugin_manager

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

# Every thread stores its index to address 16 (a wild pointer): unchecked, a SIGSEGV of whoever runs it.
WILD_STORE = """
gpu.module @m {
  llvm.func @k(%x: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %c = llvm.mlir.constant(16 : i64) : i64
    %p = llvm.inttoptr %c : i64 to !llvm.ptr<1>
    llvm.store %t, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}
"""

# Thread t writes t * 2 to x[t] and prints its index.
DOUBLE = """
gpu.module @m {
  llvm.mlir.global internal constant @fmt("t=%d\\0A\\00") {addr_space = 0 : i32}
  llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
  llvm.func @k(%x: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %p = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %two = llvm.mlir.constant(2 : i32) : i32
    %v = llvm.mul %t, %two : i32
    llvm.store %v, %p : i32, !llvm.ptr<1>
    %one = llvm.mlir.constant(1 : i32) : i32
    %buf = llvm.alloca %one x !llvm.struct<(i32)> : (i32) -> !llvm.ptr
    llvm.store %t, %buf : i32, !llvm.ptr
    %f = llvm.mlir.addressof @fmt : !llvm.ptr
    %r = llvm.call @vprintf(%f, %buf) : (!llvm.ptr, !llvm.ptr) -> i32
    llvm.return
  }
}
"""


@pytest.fixture(scope="module")
def pm():
    return get_plugin_manager()


def parsed(pm, text):
    from tilecore.mlir import ir

    with pm.make_context():
        return ir.Module.parse(text)


def test_a_native_fault_in_an_isolated_launch_is_an_error(pm):
    with pytest.raises(TilecoreError) as e:
        launch(parsed(pm, WILD_STORE), "k", grid=1, block=4, args=[np.zeros(4, np.int32)], check_bounds=False,
               isolate=True)
    assert e.value.render() == ("error: the kernel 'k' crashed the emulator (SIGSEGV); run it with bounds "
                                "checks on to find the access")


def test_isolated_launch_returns_arrays_printf_and_errors(pm):
    x = np.zeros(4, np.int32)
    res = launch(parsed(pm, DOUBLE), "k", grid=1, block=4, args=[x, 4], isolate=True)
    assert x.tolist() == [0, 2, 4, 6] and res.outputs[0].tolist() == [0, 2, 4, 6]
    assert sorted(res.printf.splitlines()) == [f"t={i}" for i in range(4)]
    # errors come back with their location (the module text keeps it)
    with pytest.raises(TilecoreError) as e:
        launch(parsed(pm, WILD_STORE), "k", grid=1, block=4, args=[np.zeros(4, np.int32)], isolate=True)
    assert "out-of-bounds global memory access: store to 4 bytes at 0x10" in e.value.render()
    assert e.value.location and e.value.location.endswith(":7:5")
    with pytest.raises(TilecoreError, match="no kernel 'nope' in the module"):
        launch(DOUBLE, "nope", grid=1, block=1, args=[x, 4], isolate=True)


def test_isolated_launch_times_out(pm):
    spin = parsed(pm, """
    gpu.module @m {
      llvm.func @k() attributes {nvvm.kernel} {
        llvm.br ^spin
      ^spin:
        llvm.br ^spin
      }
    }""")
    with pytest.raises(TilecoreError, match="did not finish within 3 s"):
        launch(spin, "k", grid=1, block=1, args=[], isolate=True, timeout=3)


def test_cli_reports_a_crash_with_exit_status_1(tmp_path):
    (tmp_path / "wild.mlir").write_text(WILD_STORE)
    np.save(tmp_path / "x.npy", np.zeros(4, np.int32))
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", "wild.mlir", "--kernel", "k", "--block", "4",
                        "--arg", "x.npy", "--no-bounds-check"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith("error: the kernel 'k' crashed the emulator (SIGSEGV)"), r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", "wild.mlir", "--kernel", "k", "--block", "4",
                        "--arg", "x.npy"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1 and "out-of-bounds global memory access" in r.stderr and "Traceback" not in r.stderr
