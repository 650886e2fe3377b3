"""The reader turns every visible corpus kernel into a verified cuda_tile module."""

import glob
import os

import pytest
from tileas_test_paths import VISIBLE_CORPUS

from tilecore.compiler import read_input
from tilecore.plugins import get_plugin_manager

CORPUS = VISIBLE_CORPUS
FILES = sorted(glob.glob(os.path.join(CORPUS, "*.tileirbc")))


def _ops(module):
    names = []

    def walk(op):
        names.append(op.operation.name)
        for region in op.operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner)

    for op in module.body.operations:
        walk(op)
    return names


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_visible_kernel_reads(path):
    module, _ = read_input(path, get_plugin_manager())
    entries = [op for op in module.body.operations if op.operation.name == "cuda_tile.entry"]
    name = os.path.basename(path).split(".")[0]
    assert len(entries) == 1
    attrs = entries[0].operation.attributes
    assert attrs["sym_name"].value == name
    assert "kernel" in attrs
    assert str(attrs["optimization_hints"]).startswith("#cuda_tile.optimization_hints<")
    loc = str(entries[0].operation.location)
    assert ".py" in loc and ":" in loc
    assert _ops(module)[-1] == "cuda_tile_term.return"


def test_optimization_hints_per_sm():
    import cutile_kernels

    module, _ = read_input(cutile_kernels.kernel_path("hinted_vadd_f32"), get_plugin_manager())
    entry = module.body.operations[0].operation
    assert str(entry.attributes["optimization_hints"]) == (
        "#cuda_tile.optimization_hints<{default = {num_cta_in_cga = 1 : i32, occupancy = 2 : i32}, "
        "sm_100 = {num_cta_in_cga = 2 : i32}, sm_90 = {occupancy = 4 : i32}}>")
    loads = [op.operation for op in entry.regions[0].blocks[0].operations
             if op.operation.name == "cuda_tile.load_view_tko"]
    assert [str(op.attributes["optimization_hints"]) for op in loads] == [
        "#cuda_tile.optimization_hints<{default = {latency = 3 : i32}}>",
        "#cuda_tile.optimization_hints<{default = {allow_tma = false}}>"]
