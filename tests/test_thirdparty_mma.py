"""A third-party MMA atom through tileas' MMA interface: it outranks the built-in, is the one used end to end
(numbers in the emulator), and blocking its plugin restores the cute plugin's atom."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from support import has_plugin

HERE = os.path.dirname(__file__)
TILEAS_TESTS = os.path.join(os.path.dirname(HERE), "plugins", "tileas", "tests")

ct = pytest.importorskip("cuda.tile")
pytestmark = pytest.mark.skipif(not (has_plugin("tileas") and has_plugin("cute")), reason="needs tileas and cute")

sys.path.insert(0, TILEAS_TESTS)
import cutile_kernels as ck  # noqa: E402

from tilecore import emulate  # noqa: E402
from tilecore.compiler import compile_file  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402
from tilecore.plugins import PluginManager  # noqa: E402

TM, TN, TK = 32, 32, 32


@pytest.fixture(scope="module")
def bytecode(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("thirdparty-mma") / "matmul_f16_f32.tileirbc")
    ck.export_spec(ck.mma_loop, ["f16[2]", "f16[2]", "f32[2]", TM, TN, TK], "matmul_f16_f32", path)
    return path


def _arr(x: np.ndarray) -> list:
    return [x, *[np.int32(d) for d in x.shape], *[np.int32(s // x.itemsize) for s in x.strides]]


def _compile(path, pm, **kw):
    return compile_file(path, "sm_80", CompileOptions(emit="ptx"), plugins=pm, **kw)


def _run(module, m, n, k):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    emulate.launch(module, "matmul_f16_f32", (-(-m // TM), -(-n // TN), 1), (128, 1, 1), _arr(a) + _arr(b) + _arr(c))
    return c, a.astype(np.float32) @ b.astype(np.float32)


def test_thirdparty_mma_atom_outranks_the_builtin_and_computes_right(clean_env, with_thirdparty, bytecode):
    pm = PluginManager()
    assert pm.atoms(None)["thirdparty.mma.m16n8k8.f16.f32"].plugin == "thirdparty"
    chosen = _compile(bytecode, pm, stop_after="tileas-select-atoms")
    assert '#nv_tileas.atom<"thirdparty.mma.m16n8k8.f16.f32">' in str(chosen.module)
    res = _compile(bytecode, pm)
    ptx = "\n".join(res.artifacts["ptx"].values())
    assert "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32" in ptx and "m16n8k16" not in ptx
    assert "ldmatrix" not in ptx  # its fragments are gathered with plain shared-memory loads
    module = _compile(bytecode, pm, stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    got, want = _run(module, 45, 37, 70)  # no size a tile multiple
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_blocking_the_thirdparty_plugin_restores_the_builtin_atom(clean_env, with_thirdparty, bytecode):
    clean_env.setenv("TILECORE_DISABLED_PLUGINS", "thirdparty")
    pm = PluginManager()
    assert "thirdparty" not in pm.plugins
    chosen = _compile(bytecode, pm, stop_after="tileas-select-atoms")
    assert '#nv_tileas.atom<"mma.sm80.m16n8k16.f16.f32">' in str(chosen.module)
    ptx = "\n".join(_compile(bytecode, pm).artifacts["ptx"].values())
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx and "ldmatrix" in ptx
