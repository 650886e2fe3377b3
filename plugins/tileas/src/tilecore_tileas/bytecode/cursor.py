"""A bounds-checked cursor over TileIR bytecode: LEB128 varints, zig-zag, padding.

Every read checks its bounds and raises :class:`BytecodeError` with the absolute
byte offset in the file, so a damaged file is always rejected with a location.
"""

from __future__ import annotations


class BytecodeError(Exception):
    """Malformed bytecode: ``message`` at absolute byte ``offset``."""

    def __init__(self, offset: int, message: str):
        super().__init__(f"{offset}: {message}")
        self.offset = offset
        self.message = message


class Cursor:
    """Reads ``data[pos:end]``; offsets are absolute positions in ``data``."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def sub(self, length: int, what: str) -> "Cursor":
        """A cursor over the next ``length`` bytes (consumed here)."""
        start = self.pos
        self.need(length, what)
        self.pos += length
        return Cursor(self.data, start, start + length)

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def fail(self, message: str, at: int | None = None):
        raise BytecodeError(self.pos if at is None else at, message)

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            self.fail(f"unexpected end of data reading {what} (need {n} bytes, {self.end - self.pos} left)")

    def u8(self, what: str = "byte") -> int:
        if self.pos >= self.end:
            self.fail(f"unexpected end of data reading {what}")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def fixed(self, size: int, what: str, signed: bool = False) -> int:
        self.need(size, what)
        v = int.from_bytes(self.data[self.pos:self.pos + size], "little", signed=signed)
        self.pos += size
        return v

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def varint(self, what: str = "varint", bits: int = 64) -> int:
        """Unsigned LEB128 (at most ``bits`` bits, 64 unless a caller knows better)."""
        start, result, shift = self.pos, 0, 0
        data, end = self.data, self.end
        while True:
            if self.pos >= end:
                self.fail(f"unexpected end of data reading {what}", start)
            b = data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= bits:
                self.fail(f"{what}: varint longer than {(bits + 6) // 7} bytes", start)
        if result >> bits:
            self.fail(f"{what}: varint exceeds {bits} bits", start)
        return result

    def svarint(self, what: str = "signed varint", bits: int = 64) -> int:
        """Zig-zag encoded signed LEB128 (the zig-zag form of at most ``bits`` bits)."""
        v = self.varint(what, bits)
        return (v >> 1) ^ -(v & 1)

    def count(self, what: str, min_size: int = 1) -> int:
        """A list length that must fit in the remaining bytes (``min_size`` bytes per item)."""
        at = self.pos
        n = self.varint(what)
        if n * min_size > self.end - self.pos:
            self.fail(f"{what} {n} exceeds the remaining {self.end - self.pos} bytes", at)
        return n

    def pad(self, alignment: int) -> None:
        """Skip padding up to the next absolute multiple of ``alignment``."""
        skip = -self.pos % alignment
        self.need(skip, f"alignment padding to {alignment}")
        self.pos += skip
