"""Bad TileIR bytecode through the CLI: `error: <file>:<byte offset>: <what>`, exit 1, no traceback."""

import os
import re
import subprocess
import sys

import pytest
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.bytecode import decode_file

VADD = os.path.join(VISIBLE_CORPUS, "vadd_f32.tileirbc")
MATMUL = os.path.join(VISIBLE_CORPUS, "matmul_f16.tileirbc")


def data(path=VADD) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def disasm(tmp_path, content: bytes, name="bad.tileirbc", *extra):
    path = tmp_path / name
    path.write_bytes(content)
    res = subprocess.run([sys.executable, "-m", "tilecore", "disasm", str(path), *extra], capture_output=True,
                         text=True)
    assert res.returncode == 1, res.stdout[:500]
    assert "Traceback" not in res.stderr
    assert res.stdout == ""
    # other plugins may add warning lines; the error itself is one line
    errors = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, res.stderr
    m = re.fullmatch(r"error: (.+):(\d+): (.+)", errors[0])
    assert m, res.stderr
    assert m.group(1) == str(path)
    return int(m.group(2)), m.group(3)


def first_op(content: bytes, name: str):
    """(op record, offset of the next op) for the first top-level op called ``name``."""
    ops = decode_file(content).functions[0].body.ops
    for op, nxt in zip(ops, ops[1:]):
        if op.spec.name == name:
            return op, nxt.offset
    raise AssertionError(name)


@pytest.mark.parametrize("cut", [5, 11, 40, 300, 690])
def test_truncated(tmp_path, cut):
    off, msg = disasm(tmp_path, data()[:cut])
    assert off <= cut
    assert re.search(r"truncated header|unexpected end of data|exceeds the remaining", msg), msg


def test_wrong_magic(tmp_path):
    content = b"\x7fTileXR\x00" + data()[8:]
    assert disasm(tmp_path, content) == (5, "bad magic number: not TileIR bytecode (expected \\x7fTileIR\\x00)")


@pytest.mark.parametrize("major,minor", [(13, 0), (13, 6), (12, 4), (14, 1)])
def test_unsupported_version(tmp_path, major, minor):
    content = data()[:8] + bytes([major, minor]) + data()[10:]
    assert disasm(tmp_path, content) == (
        8, f"unsupported TileIR bytecode version {major}.{minor} (this reader supports 13.1 to 13.5)")


def test_unknown_opcode(tmp_path):
    content = bytearray(data())
    op = decode_file(bytes(content)).functions[0].body.ops[0]
    content[op.offset] = 0x20  # a gap in the opcode table (0x19-0x24 are unassigned)
    assert disasm(tmp_path, bytes(content)) == (op.offset, "unknown opcode 0x20")


def test_out_of_range_value_index(tmp_path):
    content = bytearray(data())
    _addf, end = first_op(bytes(content), "addf")
    content[end - 1] = 0x7F  # rhs operand: value 127 does not exist
    off, msg = disasm(tmp_path, bytes(content))
    assert off == end - 1
    assert re.fullmatch(r"rhs: value index 127 out of range \(\d+ values in scope\)", msg)


def test_out_of_range_type_index(tmp_path):
    content = bytearray(data())
    op, _ = first_op(bytes(content), "addf")
    content[op.offset + 1] = 0x7E  # result type id
    off, msg = disasm(tmp_path, bytes(content))
    assert (off, msg.split(" (")[0]) == (op.offset + 1, "type index 126 out of range")


def test_corrupted_section_id(tmp_path):
    content = bytearray(data())
    content[12] = 0x0B  # first section header: id 11 does not exist
    assert disasm(tmp_path, bytes(content)) == (12, "unknown section id 11")


def test_corrupted_enum_value(tmp_path):
    content = bytearray(data())
    op, _ = first_op(bytes(content), "addf")
    content[op.offset + 3] = 9  # rounding mode 9 does not exist
    assert disasm(tmp_path, bytes(content)) == (op.offset + 3, "invalid rounding_mode value 9")


def test_corrupted_region_count(tmp_path):
    content = bytearray(data(MATMUL))
    op, _ = first_op(bytes(content), "for")
    # opcode, result count, result type, flags, operand count, 4 operands, then the region count
    pos = op.offset + 9
    assert content[pos] == 1
    content[pos] = 3
    assert disasm(tmp_path, bytes(content)) == (pos, "for has 3 regions, expected 1")


def test_no_partial_output_file(tmp_path):
    out = tmp_path / "out.mlir"
    disasm(tmp_path, data()[:400], "bad.tileirbc", "-o", str(out))
    assert not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".out")]


def test_trailing_garbage(tmp_path):
    off, msg = disasm(tmp_path, data() + b"\x01\x02")
    assert (off, msg) == (len(data()), "2 bytes of trailing data after the end marker")
