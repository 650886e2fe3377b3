"""Bytecode versions 13.1-13.5, globals, dense constants and the producer section."""

import os

import cutile_kernels
import pytest
from test_disasm import nvidia_op_names, our_op_names
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.bytecode import read_tileir

from tilecore.plugins import get_plugin_manager

KERNELS = ["matmul_f16", "rownorm_loop_if_f32", "print_assert_f32", "float_unary_f32", "while_break_i32",
           "atomics_i32", "cumsum_scan_f32", "gather_scatter_f32", "argmax_rows_f32"]


def read(data, path="k.tileirbc"):
    return read_tileir(data, path, get_plugin_manager().make_context())


@pytest.mark.parametrize("version", ["13.1", "13.2", "13.3", "13.4"])
@pytest.mark.parametrize("name", KERNELS)
def test_cutile_versions_match_tileirdisasm(tmp_path, version, name):
    path = str(tmp_path / f"{name}.tileirbc")
    cutile_kernels.export(name, path, version)
    with open(path, "rb") as fh:
        module = read(fh.read(), path)
    assert module.operation.attributes["cuda_tile.bytecode_version"].value == version
    assert our_op_names(module) == nvidia_op_names(path)


@pytest.mark.parametrize("version", ["13.4", "13.5"])
def test_globals_and_dense_constants(tmp_path, version):
    path = tmp_path / "w.tileirbc"
    path.write_bytes(cutile_kernels.writer_kernel(version))
    module = read(path.read_bytes(), str(path))
    assert our_op_names(module) == nvidia_op_names(str(path))
    glob, entry = [op.operation for op in module.body.operations]
    assert glob.name == "cuda_tile.global"
    assert str(glob.attributes["value"]) == "dense<[1, 2, 3, 4]> : tensor<4xi32>"
    assert glob.attributes["alignment"].value == 16 and glob.attributes["sym_visibility"].value == "public"
    ops = [op.operation for op in entry.regions[0].blocks[0].operations]
    const = next(op for op in ops if op.name == "cuda_tile.constant")
    assert str(const.attributes["value"]) == "dense<[5, 6, 7, 8]> : tensor<4xi32>"
    get_global = next(op for op in ops if op.name == "cuda_tile.get_global")
    assert get_global.attributes["name"].value == "table"
    assert str(get_global.results[0].type) == "!cuda_tile.tile<array<i64>, !cuda_tile.ptr<i32>>"


def test_writer_only_ops_match_tileirdisasm(tmp_path):
    path = tmp_path / "ops.tileirbc"
    path.write_bytes(cutile_kernels.writer_ops_kernel())
    module = read(path.read_bytes(), str(path))
    names = our_op_names(module)
    assert names == nvidia_op_names(str(path))
    assert {"mulhii", "get_tensor_shape", "ptr_to_int", "int_to_ptr", "ptr_to_ptr", "memory_fence_alias_tko",
            "get_num_tile_blocks", "alloca"} <= set(names)
    alloca = [op.operation for op in module.body.operations[0].regions[0].blocks[0].operations][-2]
    assert alloca.name == "cuda_tile.alloca"
    assert (alloca.attributes["num_elem"].value, alloca.attributes["alignment"].value) == (64, 16)


def test_multimem_ops_of_13_5():
    """Decoded per cuTile's 13.5 encoders (tileirdisasm needs multicast pointers no producer writes)."""
    module = read(cutile_kernels.writer_kernel("13.5", multimem=True))
    ops = {op.operation.name: op.operation
           for op in module.body.operations[1].regions[0].blocks[0].operations}
    load = ops["cuda_tile.multimem_load_reduce_view_tko"]
    assert load.attributes["reduction"].value == "add" and load.attributes["memory_ordering"].value == "weak"
    assert [str(t) for t in load.results.types][0] == "!cuda_tile.tile<array<i64: 16>, f32>"
    assert "cuda_tile.multimem_store_view_tko" in ops
    red = ops["cuda_tile.multimem_reduce_view_tko"]
    assert (red.attributes["reduction"].value, red.attributes["memory_scope"].value) == ("max", "device")
    assert str(red.attributes["inbounds"]) == "array<i1: true>"


def test_every_opcode_up_to_13_4_is_checked_against_tileirdisasm(tmp_path):
    """The corpus the tests compare with tileirdisasm uses every op of the table but multimem (13.5).

    (entry, global and module are not opcodes in a file: functions and globals have sections.)
    """
    from tilecore_tileas.bytecode import decode_file
    from tilecore_tileas.cuda_tile.ops import OP_SPECS

    old = tmp_path / "print_13_1.tileirbc"
    cutile_kernels.export("print_assert_f32", str(old), "13.1")  # get_global of the print mutex
    blobs = [open(p, "rb").read() for p in cutile_kernels.all_paths()]
    blobs += [cutile_kernels.writer_ops_kernel(), cutile_kernels.writer_kernel("13.4"), old.read_bytes()]
    seen = set()
    for blob in blobs:
        stack = [op for fn in decode_file(blob).functions for op in fn.body.ops]
        while stack:
            op = stack.pop()
            seen.add(op.spec.name)
            stack += [o for region in op.regions for b in region for o in b.ops]
    missing = {s.name for s in OP_SPECS.values()} - seen
    assert missing == {"entry", "global", "module", "multimem_load_reduce_view_tko", "multimem_reduce_view_tko",
                       "multimem_store_view_tko"}


def test_producer_section():
    from tilecore_tileas.bytecode.sections import read_container

    data = bytearray(open(os.path.join(VISIBLE_CORPUS, "vadd_f32.tileirbc"), "rb").read())
    assert data[-1] == 0  # end marker
    first_string = read_container(bytes(data)).string(0, 0)
    data[-1:] = bytes([0x07, 0x01, 0x00, 0x00])  # producer section naming string 0, then the end marker
    module = read(bytes(data))
    assert module.operation.attributes["cuda_tile.producer"].value == first_string != ""


def test_opcode_newer_than_the_file_is_rejected():
    from tilecore_tileas.bytecode import decode_file

    from tilecore.errors import TilecoreError

    data = bytearray(open(os.path.join(VISIBLE_CORPUS, "vadd_f32.tileirbc"), "rb").read())
    op = decode_file(bytes(data)).functions[0].body.ops[0]
    data[op.offset] = 0x7B  # multimem_load_reduce_view_tko exists from 13.5 on; the file is 13.4
    with pytest.raises(TilecoreError) as e:
        read(bytes(data), "v.tileirbc")
    assert e.value.location == f"v.tileirbc:{op.offset}"
    assert e.value.message == "opcode 0x7b (multimem_load_reduce_view_tko) needs bytecode version 13.5, file is 13.4"


@pytest.mark.parametrize("version", ["13.1", "13.4"])
def test_printf_of_every_version_compiles_and_prints(tmp_path, version):
    """Before 13.2 cuTile serialises printf with a spin lock on a global whose alignment is 0
    ("unspecified"): it used to reach LLVM as ``alignment = 0`` and fail verification."""
    import numpy as np

    from tilecore import emulate
    from tilecore.compiler import compile_file

    path = cutile_kernels.export("print_assert_f32", str(tmp_path / "p.tileirbc"), version)
    res = compile_file(path, "sm_80")
    x = np.ones(256, np.float32)
    _, text = emulate.launch(res.module, "print_assert_f32", (2, 1, 1), 128,
                             [x, np.int32(256), np.int32(1)])
    assert sorted(text.splitlines()) == ["block 0 sum 128.000000", "block 1 sum 128.000000"]
