"""Helpers shared by the core tests (importable as ``support``: tests/ is on the pytest pythonpath)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_PLUGIN = os.path.join(ROOT, "tests", "fixture_plugin")
DATA = os.path.join(ROOT, "tilecore", "data")
CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible")


def has_plugin(name: str) -> bool:
    try:
        importlib.import_module(f"tilecore_{name}")
        return True
    except ImportError:
        return False


needs_gpu_nvvm = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="gpu_nvvm plugin not installed")


def run_cli(*args, env=None, cwd=None):
    """Run the ``tilecore`` CLI in a subprocess; returns CompletedProcess (text)."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "tilecore", *args], capture_output=True, text=True, env=e, cwd=cwd)


def compile_text(pm, text: str, gpu: str, stages, emit: str = "mlir"):
    """Parse ``text`` in ``pm``'s context and run ``stages`` for ``gpu``; returns (module, CompileResult)."""
    from tilecore.compiler import compile_module
    from tilecore.mlir import ir
    from tilecore.options import CompileOptions
    from tilecore.targets import resolve_target

    with pm.make_context():
        m = ir.Module.parse(text)
    res = compile_module(m, resolve_target(gpu, pm.targets()), CompileOptions(emit=emit), pm, stages=list(stages))
    return m, res


def walk_ops(m, name: str | None = None) -> list:
    """Every op nested in module ``m`` in pre-order (only those called ``name`` if given)."""
    from tilecore.mlir import ir

    out = []
    m.operation.walk(lambda op: out.append(op) or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    return [o for o in out if name is None or o.name == name]


def parse_module(pm, text: str):
    """``text`` parsed in a context of ``pm`` (every plugin dialect loaded)."""
    from tilecore.mlir import ir

    with pm.make_context():
        return ir.Module.parse(text)


def gpu_module(body: str, target: str = "") -> str:
    """``body`` in a gpu.module (with an ``#nvvm.target`` when ``target`` is given, for the PTX path)."""
    if not target:
        return f"gpu.module @m {{\n{body}\n}}"
    return f"module attributes {{gpu.container_module}} {{\ngpu.module @m [{target}] {{\n{body}\n}}\n}}"


def ptxas_round_trip(pm, body: str, chip: str, features: str | None = None, passes: str = "") -> str:
    """``body`` in a gpu.module for ``chip`` (``features``: the target's own when None) through MLIR's NVPTX back
    end and ptxas (skipped without ptxas); ``passes`` first run on the gpu.module (``convert-nvvm-to-llvm`` for
    the ops MLIR 22 lowers to inline PTX). Returns the PTX."""
    from tilecore.serialize import find_nvidia_tool, module_to_ptx, ptx_to_cubin
    from tilecore.targets import resolve_target

    if not find_nvidia_tool("ptxas"):
        pytest.skip("needs ptxas")
    features = resolve_target(chip, pm.targets()).feature_string if features is None else features
    m = parse_module(pm, gpu_module(body, f'#nvvm.target<chip = "{chip}", features = "{features}">'))
    if passes:
        from tilecore.conversion import run_native_pipeline

        run_native_pipeline(m.operation, f"gpu.module({passes})", m.context)
    ptx = module_to_ptx(m)["m"]
    assert ptx_to_cubin(ptx, chip)[:4] == b"\x7fELF"
    return ptx
