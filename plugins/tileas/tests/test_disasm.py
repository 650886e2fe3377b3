"""`tilecore disasm` and the op sequence against NVIDIA's tileirdisasm on every corpus kernel."""

import glob
import os
import re
import subprocess
import sys

import cutile_kernels
import pytest
from tileas_test_paths import VISIBLE_CORPUS

from tilecore.compiler import read_input
from tilecore.plugins import get_plugin_manager
from tilecore.serialize import find_nvidia_tool

VISIBLE = sorted(glob.glob(os.path.join(VISIBLE_CORPUS, "*.tileirbc")))


def nvidia_op_names(path: str) -> list[str]:
    """Op mnemonics in the order tileirdisasm prints them (one op per line)."""
    out = subprocess.run([find_nvidia_tool("tileirdisasm"), path], capture_output=True, text=True,
                         check=True).stdout
    names = []
    for line in out.splitlines():
        s = line.strip()
        if not s or s[0] in "}(":  # block ends, `} else {`, reduce/scan block headers
            continue
        names.append(re.match(r"(?:%[^=]+= )?([a-z_0-9]+)", s).group(1))
    return names


def our_op_names(module) -> list[str]:
    """Op mnemonics of our module in pre-order.

    Like tileirdisasm, operand-less ``yield`` / ``continue`` terminators (implicit in its
    text form) are left out.
    """
    names = []

    def walk(op):
        mnemonic = op.name.split(".", 1)[1]
        if not (mnemonic in ("yield", "continue") and len(op.operands) == 0):
            names.append(mnemonic)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    for op in module.body.operations:
        walk(op.operation)
    return names


@pytest.mark.parametrize("name", [os.path.basename(p) for p in VISIBLE] + sorted(cutile_kernels.KERNELS))
def test_op_sequence_matches_tileirdisasm(name):
    path = os.path.join(VISIBLE_CORPUS, name) if name.endswith(".tileirbc") \
        else cutile_kernels.kernel_path(name)
    module, _ = read_input(path, get_plugin_manager())
    assert our_op_names(module) == nvidia_op_names(path)


def test_disasm_cli_prints_the_module():
    path = os.path.join(VISIBLE_CORPUS, "matmul_f16.tileirbc")
    res = subprocess.run([sys.executable, "-m", "tilecore", "disasm", path], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert '"cuda_tile.entry"()' in text and 'sym_name = "matmul_f16"' in text
    assert text.count('"cuda_tile.mmaf"') == 1 and '"cuda_tile.for"' in text
    assert '"cuda_tile_term.continue"' in text
    assert re.search(r'loc\("[^"]+\.py":\d+:\d+\)', text)  # debug locations file:line:col


def test_corpus_covers_most_cutile_opcodes():
    """The generated kernels use >= 80 % of the opcodes cuTile 1.7's bytecode writer can emit."""
    from tilecore_tileas.bytecode import decode_file

    emittable = {"absf", "absi", "addf", "addi", "andi", "assert", "assume", "atan2", "atomic_cas_tko",
                 "atomic_rmw_tko", "atomic_red_view_tko", "bitcast", "break", "broadcast", "cat", "ceil", "cmpf",
                 "cmpi", "constant", "continue", "cos", "cosh", "divf", "divi", "exp", "exp2", "exti", "extract",
                 "floor", "fma", "for", "fpowf", "fpowi", "ftof", "ftoi", "gdc_launch_dependents_tko",
                 "gdc_wait_tko", "get_global", "get_index_space_shape", "get_num_tile_blocks", "get_tile_block_id",
                 "if", "insert", "int_to_ptr", "iota", "itof", "join_tokens", "load_ptr_tko", "load_view_tko", "log",
                 "log2", "loop", "make_gather_scatter_view", "make_partition_view", "make_strided_view",
                 "make_tensor_view", "make_token", "maxf", "maxi", "minf", "mini", "mmaf", "mmaf_scaled", "mmai",
                 "mulf", "muli", "negf", "negi", "offset", "ori", "pack", "permute", "print_tko", "reduce", "remf",
                 "remi", "reshape", "return", "rsqrt", "scan", "select", "shli", "shri", "sin", "sinh", "sqrt",
                 "store_ptr_tko", "store_view_tko", "subf", "subi", "tan", "tanh", "trunci", "unpack", "xori",
                 "yield"}
    seen = set()
    for path in cutile_kernels.all_paths():
        with open(path, "rb") as fh:
            dec = decode_file(fh.read(), path)
        stack = [op for fn in dec.functions for op in fn.body.ops]
        while stack:
            op = stack.pop()
            seen.add(op.spec.name)
            stack += [o for region in op.regions for b in region for o in b.ops]
    assert len(cutile_kernels.KERNELS) >= 25
    assert len(seen & emittable) >= 0.8 * len(emittable), sorted(emittable - seen)


def nvidia_op_locations(path: str) -> list[tuple[str, str | None]]:
    """(mnemonic, "file:line:col") per op from ``tileirdisasm -g``; None for ops with regions
    (their location is printed after the closing brace)."""
    out = subprocess.run([find_nvidia_tool("tileirdisasm"), "-g", path], capture_output=True, text=True,
                         check=True).stdout
    aliases = {}
    for line in out.splitlines():
        m = re.match(r"(#loc\d*) = (.*)$", line)
        if m:
            aliases[m.group(1)] = m.group(2)

    def resolve(ref: str) -> str:
        text = aliases.get(ref, ref)
        if text.startswith("loc(unknown)"):
            return "unknown"
        m = re.match(r'loc\("([^"]*)":(\d+):(\d+)\)', text)
        if m:
            return f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
        m = re.match(r"#cuda_tile\.di_loc<(#loc\d*) in ", text)
        return resolve(m.group(1)) if m else text

    ops = []
    for line in out.splitlines():
        s = line.strip()
        if not s or s[0] in "}(#" or s.startswith("entry ") or s.startswith("global "):
            continue
        name = re.match(r"(?:%[^=]+= )?([a-z_0-9]+)", s).group(1)
        m = re.search(r"loc\((#loc\d*)\)$", s)
        ops.append((name, None if s.endswith("{") or not m else resolve(m.group(1))))
    return ops


@pytest.mark.parametrize("name", [os.path.basename(p) for p in VISIBLE] + ["rownorm_loop_if_f32", "while_break_i32",
                                                                          "cumsum_scan_f32"])
def test_debug_locations_match_tileirdisasm(name):
    from tilecore.errors import format_location

    path = os.path.join(VISIBLE_CORPUS, name) if name.endswith(".tileirbc") \
        else cutile_kernels.kernel_path(name)
    module, _ = read_input(path, get_plugin_manager())
    ours = []

    def walk(op):
        mnemonic = op.name.split(".", 1)[1]
        if not (mnemonic in ("yield", "continue") and len(op.operands) == 0):
            ours.append((mnemonic, None if op.regions else format_location(op.location)))
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    for entry in module.body.operations:
        for region in entry.operation.regions:
            for inner in region.blocks[0].operations:
                walk(inner.operation)
    theirs = nvidia_op_locations(path)
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    for (n, a), (_, b) in zip(ours, theirs):
        if b == "unknown":  # no debug info: we locate the op by its byte offset instead
            assert re.fullmatch(re.escape(path) + r":\d+", a), (n, a)
        elif b is not None:
            assert a == b, (n, a, b)
