"""The byte cursor: LEB128 varints, zig-zag, fixed-width reads, padding, all bounds-checked."""

import pytest
from tilecore_tileas.bytecode.cursor import BytecodeError, Cursor


def leb(x: int) -> bytes:
    out = bytearray()
    while True:
        b, x = x & 0x7F, x >> 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32, 2**63, 2**64 - 1])
def test_varint_round_trip(value):
    cur = Cursor(leb(value))
    assert cur.varint() == value and cur.at_end()


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 2**40, -(2**40), 2**63 - 1, -(2**63)])
def test_zigzag(value):
    cur = Cursor(leb(((value << 1) ^ (value >> 63)) & (2**64 - 1)))
    assert cur.svarint() == value


def test_zigzag_of_a_64_bit_pattern_takes_65_bits():
    """cuTile zig-zags float bit patterns as if signed: -inf (f64) is a 65-bit varint."""
    bits = 0xFFF0000000000000
    with pytest.raises(BytecodeError) as e:
        Cursor(leb(bits << 1)).svarint("float bits")
    assert e.value.message == "float bits: varint exceeds 64 bits"
    assert Cursor(leb(bits << 1)).svarint("float bits", 65) == bits


def test_varint_errors_carry_the_start_offset():
    with pytest.raises(BytecodeError) as e:
        Cursor(b"\x00\x00\x80\x80", 2).varint("count")
    assert (e.value.offset, e.value.message) == (2, "unexpected end of data reading count")
    with pytest.raises(BytecodeError) as e:
        Cursor(b"\xff" * 11 + b"\x01").varint("count")
    assert (e.value.offset, e.value.message) == (0, "count: varint longer than 10 bytes")
    with pytest.raises(BytecodeError) as e:
        Cursor(b"\xff" * 9 + b"\x7f").varint("count")
    assert e.value.message == "count: varint exceeds 64 bits"


def test_padding_is_absolute_and_bounded():
    cur = Cursor(bytes(16), 5)
    cur.pad(4)
    assert cur.pos == 8
    cur.pad(8)
    assert cur.pos == 8
    short = Cursor(bytes(6), 5)
    with pytest.raises(BytecodeError) as e:
        short.pad(8)
    assert e.value.message.startswith("unexpected end of data reading alignment padding to 8")


def test_counts_must_fit_the_remaining_bytes():
    cur = Cursor(leb(1000) + bytes(10))
    with pytest.raises(BytecodeError) as e:
        cur.count("number of types", 4)
    assert e.value.message == "number of types 1000 exceeds the remaining 10 bytes"


def test_fixed_and_sub_cursors_stay_in_bounds():
    cur = Cursor(b"\x01\x02\x03\x04\x05")
    assert cur.fixed(2, "u16") == 0x0201
    sub = cur.sub(2, "payload")
    assert (sub.pos, sub.end, cur.pos) == (2, 4, 4)
    with pytest.raises(BytecodeError):
        sub.fixed(4, "u32")
    with pytest.raises(BytecodeError):
        cur.sub(2, "payload")
