"""The blocked layout model, tileas-assign-layouts, the atom registry and tileas-select-atoms."""

import os

from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.atoms import INTERFACE, builtin_atoms, default_atom
from tilecore_tileas.atoms.reduce import ReduceRequest, shuffle_admits
from tilecore_tileas.atoms.select import CopyRequest
from tilecore_tileas.layout import blocked

from tilecore.atoms import Atom
from tilecore.compiler import compile_module, read_input
from tilecore.options import CompileOptions
from tilecore.plugins import get_plugin_manager
from tilecore.targets import resolve_target

CORPUS = VISIBLE_CORPUS
STAGES = ["convert-cuda-tile-to-tileaa", "convert-tileaa-to-tileas", "tileas-assign-layouts", "tileas-select-atoms"]


def test_blocked_layout_covers_each_element_once():
    for shape in [(128,), (4, 128), (2, 512), (8,), (3,), (5, 7), (1,)]:
        lay = blocked(shape, 128)
        held = {}
        for t in range(lay.owners):
            for k in range(lay.regs):
                f = lay.static_flat(k, t)
                if f < lay.n:
                    assert f not in held
                    held[f] = (t, k)
                else:
                    assert not lay.always_valid(k)
        assert sorted(held) == list(range(lay.n))


def test_blocked_layout_values():
    lay = blocked((2, 512), 128)
    assert (lay.vec, lay.owners, lay.regs) == (4, 128, 8)
    small = blocked((4,), 128)
    assert (small.vec, small.owners, small.regs) == (4, 1, 4)  # every thread holds the whole tile
    assert blocked((4,), 128) == blocked((2, 2), 128).__class__((4,), 4, 1, 128)


def _lowered(name):
    pm = get_plugin_manager()
    mod, _ = read_input(os.path.join(CORPUS, f"{name}.tileirbc"), pm)
    compile_module(mod, resolve_target("sm_80", pm.targets()), CompileOptions(), pm, stages=STAGES)
    return str(mod)


def test_assign_layouts_marks_exchanges():
    text = _lowered("transpose_f32")
    assert "layouts = [#nv_tileas.blocked<array<i64: 32, 64>, 4 : i64, 128 : i64>]" in text
    assert 'exchange = "smem"' in text
    soft = _lowered("row_softmax_f16")
    assert soft.count('exchange = "registers"') >= 2  # reshape 2 -> 2x1 moves no data


def test_select_atoms_vector_for_1d_and_scalar_for_dynamic_strides():
    vadd = _lowered("vadd_f32")
    assert vadd.count('atom = #nv_tileas.atom<"copy.global.vec">') == 3
    relu = _lowered("relu_f16")  # 2-D with a dynamic row stride: groups not provably aligned
    assert relu.count('atom = #nv_tileas.atom<"copy.global.scalar">') == 2
    rownorm = _lowered("rownorm_loop_if_f32")
    assert 'atom = #nv_tileas.atom<"reduce.warp_shuffle">' in rownorm


def test_copy_request_alignment():
    lay = blocked((128,), 128)
    assert CopyRequest(lay, (128,), [1], 16, 4).vectorizable()
    assert not CopyRequest(lay, (128,), [1], 4, 4).vectorizable()  # base only 4-byte aligned
    assert not CopyRequest(lay, (128,), [2], 16, 4).vectorizable()  # not contiguous


def test_reduce_atom_choice():
    atoms = {a.name: a for a in builtin_atoms()}
    tiny = ReduceRequest("reduce", blocked((4,), 128), 0, 4, 128)
    assert default_atom(atoms, "reduce", None, tiny).name == "reduce.in_thread"
    rows = ReduceRequest("reduce", blocked((4, 128), 128), 1, 4, 128)
    assert shuffle_admits(rows) and default_atom(atoms, "reduce", None, rows).name == "reduce.warp_shuffle"
    cols = ReduceRequest("reduce", blocked((4, 128), 128), 0, 4, 128)
    assert default_atom(atoms, "reduce", None, cols).name == "reduce.smem_tree"
    scan = ReduceRequest("scan", blocked((4, 128), 128), 1, 4, 128)  # rows of 32 threads: one warp each
    assert default_atom(atoms, "reduce", None, scan).name == "scan.warp_shuffle"
    wide = ReduceRequest("scan", blocked((2, 1024), 128), 1, 4, 128)  # a row wider than a warp
    assert default_atom(atoms, "reduce", None, wide).name == "reduce.smem_tree"
    col_scan = ReduceRequest("scan", blocked((4, 128), 128), 0, 4, 128)
    assert default_atom(atoms, "reduce", None, col_scan).name == "reduce.smem_tree"
    # two 32-bit operands (argmax: value, index) shuffle too; mixed widths (elem_bytes 0) do not
    pair = ReduceRequest("reduce", blocked((4, 128), 128), 1, 4, 128, operands=2)
    assert default_atom(atoms, "reduce", None, pair).name == "reduce.warp_shuffle"
    mixed = ReduceRequest("reduce", blocked((4, 128), 128), 1, 0, 128, operands=2)
    assert default_atom(atoms, "reduce", None, mixed).name == "reduce.smem_tree"


def test_a_plugin_atom_wins_by_priority_and_foreign_atoms_are_ignored():
    atoms = {a.name: a for a in builtin_atoms()}
    atoms["cute.copy"] = Atom("cute.copy", "copy", priority=99)  # another pipeline's atom: no tileas interface
    mine = Atom("my.copy", "copy", lower=lambda *a: None, priority=50, data={"interface": INTERFACE})
    req = CopyRequest(blocked((128,), 128), (128,), [1], 16, 4)
    assert default_atom(atoms, "copy", None, req).name == "copy.global.vec"
    atoms["my.copy"] = mine
    assert default_atom(atoms, "copy", None, req).name == "my.copy"
