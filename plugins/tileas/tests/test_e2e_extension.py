"""A third-party plugin extends the tileas stages: a stage-1 pattern and an atom override.

This module is itself the plugin (``PluginManager(load=[__name__])`` imports it by name):
it decomposes ``cuda_tile.mulhii`` into other cuda_tile ops before the built-in populators
see it, and replaces the built-in scalar copy atom by one that counts its uses.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.atoms import INTERFACE, copy

from tilecore.atoms import Atom
from tilecore.compiler import compile_module, read_input
from tilecore.conversion import Pattern
from tilecore.hookspecs import hookimpl
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.targets import resolve_target

HERE = os.path.dirname(os.path.abspath(__file__))
USES = {"copy": 0}


class MulhiUnsigned(Pattern):
    """mulhii(x, y) = trunc((zext x * zext y) >> 32) on i32 tiles, in cuda_tile ops."""

    root = "cuda_tile.mulhii"

    def rewrite(self, op, rw):
        t32 = op.results[0].type
        t64 = ir.Type.parse(str(t32).replace(", i32>", ", i64>"))
        shape = str(t32).split("array<i64: ")[1].split(">")[0].replace(", ", "x")
        with rw.ip:
            def new(name, operands, ty, attrs):
                return ir.Operation.create(f"cuda_tile.{name}", results=[ty], operands=operands,
                                           attributes={k: ir.Attribute.parse(v) for k, v in attrs.items()}).results[0]

            a = new("exti", [op.operands[0]], t64, {"signedness": '"unsigned"'})
            b = new("exti", [op.operands[1]], t64, {"signedness": '"unsigned"'})
            p = new("muli", [a, b], t64, {"overflow": '"none"'})
            k = new("constant", [], t64, {"value": f"dense<32> : tensor<{shape}xi64>"})
            h = new("shri", [p, k], t64, {"signedness": '"unsigned"'})
            rw.replace(op, [new("trunci", [h], t32, {"overflow": '"none"'})])


def counting_scalar_copy(cg, kind, access, tile):
    USES["copy"] += 1
    return copy.lower_scalar(cg, kind, access, tile)


@hookimpl
def tilecore_register_patterns(stage, target, options):
    return [MulhiUnsigned()] if stage == "convert-cuda-tile-to-tileaa" else []


@hookimpl
def tilecore_register_atoms(target):
    return [Atom("test.copy.counting", "copy", lower=counting_scalar_copy, priority=0,
                 overrides="copy.global.scalar", data={"interface": INTERFACE})]


def _compile(path, pm, stop="convert-tileas-to-llvm"):
    mod, _ = read_input(path, pm)
    target = resolve_target("sm_80", pm.targets())
    compile_module(mod, target, CompileOptions(), pm, stop_after=stop)
    return mod


@pytest.mark.parametrize("with_plugin", [False, True])
def test_plugin_pattern_runs_before_the_populators(with_plugin):
    """The built-in lowering (arith.mului_extended) and the plugin's decomposition agree with numpy;
    with the plugin loaded its pattern wins (it runs first), so no mului_extended is left."""
    from stage4_interpreter import Interpreter

    pm = PluginManager(load=[__name__]) if with_plugin else PluginManager()
    mod = _compile(os.path.join(HERE, "data", "mulhi.cuda_tile.mlir"), pm)
    assert ("arith.mului_extended" in str(mod)) is not with_plugin
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32)
    _, _, c = Interpreter(mod, "mulhi").launch((1, 1, 1), (128, 1, 1), [a, b, np.zeros(8, np.uint32)])
    np.testing.assert_array_equal(c, ((a.astype(np.uint64) * b.astype(np.uint64)) >> 32).astype(np.uint32))


def test_plugin_atom_overrides_the_builtin_copy_atom():
    pm = PluginManager(load=[__name__])
    before = USES["copy"]
    mod = _compile(os.path.join(VISIBLE_CORPUS, "relu_f16.tileirbc"), pm, stop="tileas-select-atoms")
    assert str(mod).count('atom = #nv_tileas.atom<"test.copy.counting">') == 2
    _compile(os.path.join(VISIBLE_CORPUS, "relu_f16.tileirbc"), pm)
    assert USES["copy"] == before + 2  # one tiled load, one tiled store
