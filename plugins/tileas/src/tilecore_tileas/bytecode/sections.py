"""TileIR bytecode container: header, sections and their tables.

Layout (all integers little endian, varints LEB128)::

    magic "\\x7fTileIR\\x00", major u8, minor u8, tag u16
    section*: id u8 (bit 7: aligned), length varint, [alignment varint, 0xCB padding], payload
    end marker 0x00

Sections: 1 string, 2 function, 3 debug, 4 constant, 5 type, 6 global, 7 producer.
Tables (string / type / constant / debug attributes) are ``count``, padding, one
fixed-size offset per item, then the concatenated items. Padding aligns to
absolute file offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cuda_tile import types as T
from ..cuda_tile.ops import ENUMS
from .cursor import BytecodeError, Cursor

MAGIC = b"\x7fTileIR\x00"
SUPPORTED = ((13, 1), (13, 2), (13, 3), (13, 4), (13, 5))
MAX_TILE_ELEMENTS = 1 << 31  # far above any real tile; keeps MLIR's element counts from overflowing
SECTION_NAMES = {1: "string", 2: "function", 3: "debug", 4: "constant", 5: "type", 6: "global",
                 7: "producer"}


@dataclass
class Table:
    """A count + offsets + data table: item ``i`` is ``data[starts[i]:ends[i]]`` (absolute)."""

    starts: list[int]
    ends: list[int]
    first_id: int = 0

    def __len__(self):
        return len(self.starts)

    def item(self, data: bytes, index: int, what: str, at: int) -> Cursor:
        i = index - self.first_id
        if not 0 <= i < len(self.starts):
            raise BytecodeError(at, f"{what} index {index} out of range "
                                    f"({self.first_id}..{self.first_id + len(self.starts) - 1})")
        return Cursor(data, self.starts[i], self.ends[i])


def read_table(cur: Cursor, index_size: int, what: str, first_id: int = 0) -> Table:
    """Parse a table; offsets must be monotonic and inside the section."""
    n = cur.count(f"number of {what} entries", index_size)
    if n == 0:
        return Table([], [], first_id)
    cur.pad(index_size)
    at = cur.pos
    offsets = [cur.fixed(index_size, f"{what} offset") for _ in range(n)]
    base, size = cur.pos, cur.end - cur.pos
    starts, ends = [], []
    for i, off in enumerate(offsets):
        end = offsets[i + 1] if i + 1 < n else size
        if not off <= end <= size:
            raise BytecodeError(at + i * index_size, f"{what} entry {i} has invalid offset {off}")
        starts.append(base + off)
        ends.append(base + end)
    cur.pos = cur.end
    return Table(starts, ends, first_id)


@dataclass
class Container:
    """The parsed sections of a file, before any function body is decoded."""

    data: bytes
    version: tuple[int, int]
    version_text: str
    sections: dict[int, Cursor] = field(default_factory=dict)
    strings: Table | None = None
    types: Table | None = None
    constants: Table | None = None

    def string(self, index: int, at: int) -> str:
        cur = self.strings.item(self.data, index, "string", at)
        return cur.take(cur.remaining, "string").decode("utf-8", errors="replace")


def read_header(data: bytes) -> tuple[tuple[int, int], str, int]:
    """Check magic and version; returns ((major, minor), text, header size)."""
    for i, b in enumerate(MAGIC):
        if i >= len(data):
            raise BytecodeError(i, "truncated header: not TileIR bytecode")
        if data[i] != b:
            raise BytecodeError(i, "bad magic number: not TileIR bytecode (expected \\x7fTileIR\\x00)")
    cur = Cursor(data, len(MAGIC))
    major, minor = cur.u8("version major"), cur.u8("version minor")
    tag = cur.fixed(2, "version tag")
    text = f"{major}.{minor}" + (f".{tag}" if tag > 1 else "")
    if (major, minor) not in SUPPORTED:
        raise BytecodeError(len(MAGIC), f"unsupported TileIR bytecode version {text} "
                                        f"(this reader supports 13.1 to 13.5)")
    return (major, minor), text, cur.pos


def read_container(data: bytes) -> Container:
    """Split ``data`` into sections and parse the string, type and constant tables."""
    version, text, pos = read_header(data)
    c = Container(data, version, text)
    cur = Cursor(data, pos)
    while True:
        at = cur.pos
        b = cur.u8("section id")
        sid, aligned = b & 0x7F, bool(b & 0x80)
        if sid == 0:
            if aligned:
                cur.fail("end marker has the alignment flag set", at)
            break
        if sid not in SECTION_NAMES:
            cur.fail(f"unknown section id {sid}", at)
        if sid in c.sections:
            cur.fail(f"duplicate {SECTION_NAMES[sid]} section", at)
        length = cur.varint("section length")
        if aligned:
            al_at = cur.pos
            align = cur.varint("section alignment")
            if align == 0 or align & (align - 1) or align > 4096:
                cur.fail(f"invalid section alignment {align}", al_at)
            cur.pad(align)
        if length > cur.remaining:
            cur.fail(f"{SECTION_NAMES[sid]} section length {length} exceeds the remaining {cur.remaining} bytes", at)
        c.sections[sid] = cur.sub(length, f"{SECTION_NAMES[sid]} section")
    if not cur.at_end():
        cur.fail(f"{cur.remaining} bytes of trailing data after the end marker")
    for sid in (1, 2, 5):
        if sid not in c.sections:
            raise BytecodeError(len(data), f"missing {SECTION_NAMES[sid]} section")
    c.strings = read_table(Cursor(data, c.sections[1].pos, c.sections[1].end), 4, "string")
    c.types = read_table(Cursor(data, c.sections[5].pos, c.sections[5].end), 4, "type")
    if 4 in c.sections:
        c.constants = read_table(Cursor(data, c.sections[4].pos, c.sections[4].end), 8, "constant")
    else:
        c.constants = Table([], [])
    return c


# ---------------------------------------------------------------------------------------------
# Types

_PTR, _TILE, _TV, _PV, _FUNC, _GSV, _SV = 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x14, 0x15


class TypeTable:
    """Decodes type-table entries on demand (entries may refer to each other)."""

    def __init__(self, c: Container):
        self.c = c
        self.cache: dict[int, object] = {}
        self.busy: set[int] = set()

    def get(self, index: int, at: int):
        if index in self.cache:
            return self.cache[index]
        if index in self.busy:
            raise BytecodeError(at, f"type {index} refers to itself")
        cur = self.c.types.item(self.c.data, index, "type", at)
        self.busy.add(index)
        try:
            t = self._decode(cur)
        finally:
            self.busy.discard(index)
        if not cur.at_end():
            cur.fail(f"{cur.remaining} unread bytes at the end of type {index}")
        self.cache[index] = t
        return t

    def read(self, cur: Cursor, what: str = "type"):
        at = cur.pos
        return self.get(cur.varint(f"{what} index"), at)

    def _i64_list(self, cur: Cursor, what: str):
        n = cur.count(f"{what} rank", 8)
        return tuple(cur.fixed(8, what, signed=True) for _ in range(n))

    def _i32_list(self, cur: Cursor, what: str):
        n = cur.count(f"{what} rank", 4)
        return tuple(cur.fixed(4, what, signed=True) for _ in range(n))

    def _padding(self, cur: Cursor, present: bool) -> str:
        if not present:
            return "none"
        at = cur.pos
        v = cur.u8("padding value")
        if v >= len(ENUMS["padding_value"]):
            cur.fail(f"invalid padding value {v}", at)
        return ENUMS["padding_value"][v]

    def _flags(self, cur: Cursor, what: str) -> int:
        at = cur.pos
        f = cur.varint(f"{what} flags")
        if f & ~1:
            cur.fail(f"unknown {what} flag bits {f:#x}", at)
        return f

    def _ptr_attr(self, cur: Cursor, present: bool) -> None:
        # 13.4+ may attach an attribute to pointers / tensor views (multimem needs a multicast
        # pointer); no public producer writes one and its meaning is not documented, so it is
        # rejected rather than dropped.
        if present:
            cur.fail("pointer attributes are not supported (cuTile never writes them)")

    def _tensor_view(self, cur: Cursor, what: str):
        at = cur.pos
        tv = self.read(cur, what)
        if not isinstance(tv, T.TensorView):
            cur.fail(f"{what} must be a tensor_view type, got {tv.text}", at)
        return tv

    def _element(self, cur: Cursor, what: str, allow_ptr: bool):
        at = cur.pos
        e = self.read(cur, what)
        if isinstance(e, T.Scalar) and e.name != T.TOKEN:
            return e
        if allow_ptr and isinstance(e, T.Ptr):
            return e
        cur.fail(f"invalid {what} {e.text}", at)

    def _decode(self, cur: Cursor):
        v = self.c.version
        at = cur.pos
        tag = cur.varint("type tag")
        if tag == 0x11:
            return T.Scalar(T.TOKEN)
        if tag in T.SCALARS:
            if v < T.SCALAR_SINCE.get(tag, (13, 1)):
                cur.fail(f"type tag {tag:#x} needs bytecode version "
                         f"{'.'.join(map(str, T.SCALAR_SINCE[tag]))}", at)
            return T.Scalar(T.SCALARS[tag])
        if tag == _PTR:
            flags = self._flags(cur, "pointer") if v >= (13, 4) else 0
            p = self._element(cur, "pointee type", allow_ptr=True)
            self._ptr_attr(cur, bool(flags & 1))
            return T.Ptr(p)
        if tag == _TILE:
            e = self._element(cur, "tile element type", allow_ptr=True)
            shape = self._i64_list(cur, "tile shape")
            if any(d <= 0 for d in shape):
                cur.fail(f"tile shape {list(shape)} has a non-positive dimension", at)
            n = 1
            for d in shape:
                n *= d
            if n > MAX_TILE_ELEMENTS:
                cur.fail(f"tile shape {list(shape)} has more than {MAX_TILE_ELEMENTS} elements", at)
            return T.Tile(shape, e)
        if tag == _TV:
            flags = self._flags(cur, "tensor_view") if v >= (13, 4) else 0
            e = self._element(cur, "tensor_view element type", allow_ptr=False)
            shape = self._i64_list(cur, "tensor_view shape")
            strides = self._i64_list(cur, "tensor_view strides")
            if len(shape) != len(strides):
                cur.fail(f"tensor_view has {len(shape)} dimensions but {len(strides)} strides", at)
            self._ptr_attr(cur, bool(flags & 1))
            return T.TensorView(e, shape, strides)
        if tag == _PV:
            if v >= (13, 3):
                flags = self._flags(cur, "partition_view")
                tile = self._i32_list(cur, "partition_view tile shape")
                tv = self._tensor_view(cur, "partition_view tensor_view")
                dim_map = self._i32_list(cur, "partition_view dim_map")
                pad = self._padding(cur, bool(flags & 1))
            else:
                tile = self._i32_list(cur, "partition_view tile shape")
                tv = self._tensor_view(cur, "partition_view tensor_view")
                dim_map = self._i32_list(cur, "partition_view dim_map")
                pad = self._padding(cur, bool(cur.varint("padding flag")))
            return T.PartitionView(tile, tv, dim_map, pad)
        if tag == _GSV and v >= (13, 3):
            flags = self._flags(cur, "gather_scatter_view")
            tile = self._i32_list(cur, "gather_scatter_view tile shape")
            tv = self._tensor_view(cur, "gather_scatter_view tensor_view")
            sparse = cur.varint("sparse dimension")
            return T.GatherScatterView(tile, tv, sparse, self._padding(cur, bool(flags & 1)))
        if tag == _SV and v >= (13, 3):
            flags = self._flags(cur, "strided_view")
            tile = self._i32_list(cur, "strided_view tile shape")
            strides = self._i32_list(cur, "strided_view traversal strides")
            tv = self._tensor_view(cur, "strided_view tensor_view")
            dim_map = self._i32_list(cur, "strided_view dim_map")
            return T.StridedView(tile, strides, tv, dim_map, self._padding(cur, bool(flags & 1)))
        if tag == _FUNC:
            ins = tuple(self.read(cur, "parameter type") for _ in range(cur.count("parameter count")))
            outs = tuple(self.read(cur, "result type") for _ in range(cur.count("result count")))
            return T.Func(ins, outs)
        cur.fail(f"unknown type tag {tag:#x} for bytecode version {self.c.version_text}", at)
