"""Decode function bodies, attributes, globals and debug info into plain records.

Nothing here touches MLIR: every index, count, enum value and flag is checked
while decoding, so :mod:`.build` only ever sees well-formed records.

Values are numbered per function: parameters first, then each result in op
order; a nested block's arguments and results are visible only inside it.
Debug info gives each function a list of debug-attribute ids: the function's
own, then one per op in pre-order (an op before the ops of its regions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cuda_tile import types as T
from ..cuda_tile.ops import ENUMS, HETERO_SLOTS, OP_SPECS, OpSpec
from .cursor import BytecodeError, Cursor
from .sections import Container, Table, TypeTable, read_table

MAX_DEPTH = 64  # nested regions; deeper files are rejected rather than risk the Python stack


@dataclass
class OpRec:
    spec: OpSpec
    offset: int
    ordinal: int  # position in the function's debug list
    results: list = field(default_factory=list)  # type descriptors
    result_groups: list = field(default_factory=list)  # sizes per result group
    operands: list = field(default_factory=list)  # [(name, kind, [value ids])]
    attrs: dict = field(default_factory=dict)  # name -> attribute descriptor
    regions: list = field(default_factory=list)  # [[BlockRec]]


@dataclass
class BlockRec:
    args: list
    ops: list


@dataclass
class FuncRec:
    name: str
    type: T.Func
    flags: int
    hints: tuple | None
    debug: int  # function debug index (1-based, 0 = none)
    body: BlockRec
    offset: int


@dataclass
class GlobalRec:
    name: str
    type: object
    value: tuple
    alignment: int
    visibility: str
    constant: bool
    offset: int


@dataclass
class Decoded:
    version: tuple[int, int]
    version_text: str
    functions: list
    globals: list
    producer: str | None
    debug: "DebugInfo"


# ---------------------------------------------------------------------------------------------
# Debug info

class DebugInfo:
    """Per-function debug-attribute lists and the debug-attribute table."""

    def __init__(self, c: Container):
        self.c = c
        self.func_offsets: list[int] = []
        self.indices: list[int] = []
        self.table = Table([], [], first_id=1)
        self.cache: dict[int, tuple] = {}
        self.busy: set[int] = set()
        if 3 in c.sections:
            s = c.sections[3]
            cur = Cursor(c.data, s.pos, s.end)
            n = cur.count("number of functions with debug info", 4)
            cur.pad(4)
            self.func_offsets = [cur.fixed(4, "debug index offset") for _ in range(n)]
            m = cur.count("number of debug indices", 8)
            cur.pad(8)
            self.indices = [cur.fixed(8, "debug index") for _ in range(m)]
            self.table = read_table(cur, 4, "debug attribute", first_id=1)

    def op_attr_id(self, func_debug: int, ordinal: int) -> int:
        """Debug-attribute id of the ``ordinal``-th entry of a function (0 = unknown)."""
        if func_debug == 0 or func_debug > len(self.func_offsets):
            return 0
        i = self.func_offsets[func_debug - 1] + ordinal
        return self.indices[i] if i < len(self.indices) else 0

    def location(self, attr_id: int, at: int) -> tuple:
        """A location descriptor: ("unknown",), ("file", name, line, col), ("callsite", callee, caller)."""
        if attr_id == 0:
            return ("unknown",)
        if attr_id in self.cache:
            return self.cache[attr_id]
        if attr_id in self.busy:
            raise BytecodeError(at, f"debug attribute {attr_id} refers to itself")
        self.busy.add(attr_id)
        try:
            cur = self.table.item(self.c.data, attr_id, "debug attribute", at)
            loc = self._decode(cur)
        finally:
            self.busy.discard(attr_id)
        self.cache[attr_id] = loc
        return loc

    def _file(self, cur: Cursor) -> str:
        at = cur.pos
        f = self.location(cur.varint("debug file index"), at)
        if f[0] != "difile":
            cur.fail("debug attribute is not a file")
        return f[1]

    def _decode(self, cur: Cursor) -> tuple:
        at = cur.pos
        tag = cur.varint("debug tag")
        if tag == 1:  # compile unit
            return ("cu", self._file(cur))
        if tag == 2:  # file: name, directory
            at_n = cur.pos
            name = self.c.string(cur.varint("file name"), at_n)
            at_d = cur.pos
            directory = self.c.string(cur.varint("directory"), at_d)
            full = name if name.startswith("/") or not directory else f"{directory.rstrip('/')}/{name}"
            return ("difile", full)
        if tag == 3:  # lexical block: scope, file, line, col
            self.location(cur.varint("scope"), at)
            f = self._file(cur)
            return ("file", f, cur.varint("line"), cur.varint("column"))
        if tag == 4:  # loc: scope, filename, line, col
            self.location(cur.varint("scope"), at)
            at_n = cur.pos
            name = self.c.string(cur.varint("file name"), at_n)
            return ("file", name, cur.varint("line"), cur.varint("column"))
        if tag == 5:  # subprogram: file, line, name, linkage name, compile unit, scope line
            f = self._file(cur)
            line = cur.varint("line")
            return ("file", f, line, 0)
        if tag == 6:  # call site: callee, caller
            callee = self.location(cur.varint("callee"), at)
            caller = self.location(cur.varint("caller"), at)
            return ("callsite", callee, caller)
        return ("unknown",)


# ---------------------------------------------------------------------------------------------
# Attributes

class AttrReader:
    """Reads op attributes (inline and self-contained tagged forms)."""

    def __init__(self, c: Container, types: TypeTable):
        self.c, self.types = c, types

    def string(self, cur: Cursor, what: str) -> str:
        at = cur.pos
        return self.c.string(cur.varint(what), at)

    def enum(self, cur: Cursor, enum: str, what: str) -> str:
        at = cur.pos
        v = cur.varint(what)
        names = ENUMS[enum]
        if v >= len(names):
            cur.fail(f"invalid {what} value {v}", at)
        return names[v]

    def dense(self, cur: Cursor, ty, what: str) -> tuple:
        """A constant-table reference decoded against ``ty`` (a tile type)."""
        at = cur.pos
        idx = cur.varint(f"{what} constant index")
        item = self.c.constants.item(self.c.data, idx, "constant", at)
        size = item.varint("constant size")
        raw = item.take(size, "constant data")
        if not isinstance(ty, T.Tile) or not isinstance(ty.element, T.Scalar) \
                or not (ty.element.is_int() or ty.element.is_float()):
            cur.fail(f"{what} needs an integer or float tile type, got {ty.text}", at)
        el = ty.element.name
        width = T.INT_WIDTHS.get(el) or T.FLOAT_WIDTHS.get(el) or 8
        n = 1
        for d in ty.shape:
            n *= d
        esize = max(1, (width + 7) // 8)
        if len(raw) != n * esize and not (len(raw) == esize):
            cur.fail(f"{what}: {len(raw)} bytes of data for {n} elements of {el}", at)
        return ("dense", ty, raw)

    def tagged(self, cur: Cursor, depth: int = 0) -> tuple:
        at = cur.pos
        if depth > MAX_DEPTH:
            cur.fail("attributes nested too deeply")
        tag = cur.varint("attribute tag")
        if tag == 1:  # integer: type, value
            ty = self.types.read(cur, "integer attribute type")
            if not (isinstance(ty, T.Scalar) and ty.is_int()):
                cur.fail(f"integer attribute of non-integer type {ty.text}", at)
            v = cur.varint("integer value") if ty.name != "i1" else cur.u8("bool value")
            w = T.INT_WIDTHS[ty.name]
            return ("int", ty, v & ((1 << w) - 1))
        if tag == 2:  # float: type, bits
            ty = self.types.read(cur, "float attribute type")
            if not (isinstance(ty, T.Scalar) and ty.name in T.FLOAT_WIDTHS):
                cur.fail(f"float attribute of non-float type {ty.text}", at)
            w = T.FLOAT_WIDTHS[ty.name]
            # cuTile zig-zags the unsigned bit pattern: a 64-bit pattern with its top bit set (-inf,
            # negative f64 constants) takes 65 bits in the varint
            bits = cur.u8("float bits") if w <= 8 else cur.svarint("float bits", w + 1)
            if bits < 0 or bits >> w:
                cur.fail(f"float value {bits:#x} does not fit in {w} bits", at)
            return ("float", ty, bits)
        if tag == 3:
            return ("bool", cur.u8("bool value") != 0)
        if tag == 4:
            return ("type", self.types.read(cur, "type attribute"))
        if tag == 5:
            return ("str", self.string(cur, "string attribute"))
        if tag == 6:
            n = cur.count("array size")
            return ("array", [self.tagged(cur, depth + 1) for _ in range(n)])
        if tag == 7:
            ty = self.types.read(cur, "dense attribute type")
            return self.dense(cur, ty, "dense attribute")
        if tag == 8:  # div_by: divisor, flags, [every], [along]
            divisor = cur.varint("divisor")
            flags = cur.u8("div_by flags")
            if flags & ~3:
                cur.fail(f"unknown div_by flag bits {flags:#x}", at)
            every = cur.svarint("every") if flags & 1 else None
            along = cur.svarint("along") if flags & 2 else None
            return ("div_by", divisor, every, along)
        if tag == 9:  # same_elements: i64 list
            n = cur.count("same_elements size", 8)
            return ("same_elements", [cur.fixed(8, "same_elements value", signed=True) for _ in range(n)])
        if tag == 10:
            return ("dict", self.dictionary(cur, depth))
        if tag == 11:
            return ("hints", self.dictionary(cur, depth))
        if tag == 12:  # bounded: flags, [lb], [ub]
            flags = cur.u8("bounded flags")
            if flags & ~3:
                cur.fail(f"unknown bounded flag bits {flags:#x}", at)
            lb = cur.svarint("lower bound") if flags & 1 else None
            ub = cur.svarint("upper bound") if flags & 2 else None
            return ("bounded", lb, ub)
        cur.fail(f"unknown attribute tag {tag}", at)

    def dictionary(self, cur: Cursor, depth: int = 0) -> list:
        n = cur.count("dictionary size", 2)
        out, seen = [], set()
        for _ in range(n):
            at = cur.pos
            key = self.string(cur, "dictionary key")
            if not key or key in seen:
                cur.fail(f"invalid or duplicate dictionary key '{key}'", at)
            seen.add(key)
            out.append((key, self.tagged(cur, depth + 1)))
        return out


# ---------------------------------------------------------------------------------------------
# Ops and functions

class BodyDecoder:
    """Decodes the ops of one function body against the op table."""

    def __init__(self, c: Container, types: TypeTable, attrs: AttrReader):
        self.c, self.types, self.attrs = c, types, attrs
        self.values: list = []  # type descriptors of the values in scope
        self.ordinal = 0

    def value(self, cur: Cursor, what: str) -> int:
        at = cur.pos
        v = cur.varint(what)
        if v >= len(self.values):
            cur.fail(f"{what}: value index {v} out of range ({len(self.values)} values in scope)", at)
        return v

    def op(self, cur: Cursor, depth: int) -> OpRec:
        at = cur.pos
        opcode = cur.varint("opcode")
        spec = OP_SPECS.get(opcode)
        if spec is None or spec.name in ("entry", "module", "global"):
            cur.fail(f"unknown opcode {opcode:#x}", at)
        if self.c.version < spec.since:
            cur.fail(f"opcode {opcode:#x} ({spec.name}) needs bytecode version "
                     f"{'.'.join(map(str, spec.since))}, file is {self.c.version_text}", at)
        self.ordinal += 1
        rec = OpRec(spec, at, self.ordinal)
        flags: set[str] = set()
        for f in spec.fields:
            self.field(cur, rec, f, flags, depth)
        return rec

    def field(self, cur: Cursor, rec: OpRec, f, flags: set, depth: int) -> None:
        v = self.c.version
        name = f.names[0] if f.names else ""
        if v < f.since:
            if f.default is not None:
                rec.attrs[name] = ("enum", f.default)
            if f.kind in ("TS", "TS1"):
                rec.result_groups.append(0)
            return
        if f.optional and f"@{name}" not in flags:
            return
        k = f.kind
        if k == "T":
            for n in f.names:
                rec.results.append(self.types.read(cur, f"{n} type"))
                rec.result_groups.append(1)
        elif k in ("TS", "TS1"):
            at = cur.pos
            n = cur.count("result count")
            want = 1 if k == "TS1" else (len(f.names) if len(f.names) > 1 else None)
            if want is not None and n != want:
                cur.fail(f"{rec.spec.name} has {n} results, expected {want}", at)
            if want is None:
                self._group_size(cur, f.names[0], n, at)
            rec.results += [self.types.read(cur, "result type") for _ in range(n)]
            rec.result_groups += [1] * n if len(f.names) > 1 else [n]
        elif k == "F":
            at = cur.pos
            bits = cur.varint("flags")
            if bits >> len(f.names):
                cur.fail(f"unknown flag bits {bits:#x} for {rec.spec.name}", at)
            for i, n in enumerate(f.names):
                if bits >> i & 1:
                    flags.add(n)
                    if n[0] not in "?@":
                        rec.attrs[n] = ("unit",)
        elif k == "E":
            rec.attrs[name] = ("enum", self.attrs.enum(cur, f.enum, name))
        elif k == "I":
            rec.attrs[name] = ("i64", cur.varint(name))
        elif k == "B":
            rec.attrs[name] = ("bool", cur.u8(name) != 0)
        elif k == "S":
            rec.attrs[name] = ("str", self.attrs.string(cur, name))
        elif k == "P":
            at = cur.pos
            p = self.attrs.tagged(cur)
            if p[0] not in ("div_by", "bounded", "same_elements"):
                cur.fail(f"{name} must be div_by, bounded or same_elements, got {p[0]}", at)
            rec.attrs[name] = p
        elif k == "A":
            n = cur.count(f"{name} size")
            rec.attrs[name] = ("array", [self.attrs.tagged(cur) for _ in range(n)])
        elif k == "D":
            if not rec.results:
                cur.fail(f"{rec.spec.name} has no result type for its constant")
            rec.attrs[name] = self.attrs.dense(cur, rec.results[0], name)
        elif k == "I32A":
            n = cur.count(f"{name} size", 4)
            rec.attrs[name] = ("i32s", [cur.fixed(4, name, signed=True) for _ in range(n)])
        elif k == "BA":
            n = cur.count(f"{name} size", 1)
            rec.attrs[name] = ("bools", [cur.u8(name) != 0 for _ in range(n)])
        elif k == "H":
            rec.attrs[name] = ("hints", self.attrs.dictionary(cur))
        elif k == "TY":
            rec.attrs[name] = ("type", self.types.read(cur, name))
        elif k == "O":
            for n in f.names:
                rec.operands.append((n, "single", [self.value(cur, n)]))
        elif k == "OV":
            at = cur.pos
            n = self._group_size(cur, name, cur.count(f"{name} count"), at)
            rec.operands.append((name.lstrip("~"), "variadic", [self.value(cur, name) for _ in range(n)]))
        elif k == "OC":
            at = cur.pos
            n = cur.count("operand count")
            fixed = [x for x in f.names if not x.startswith("*")]
            if n < len(fixed):
                cur.fail(f"{rec.spec.name} has {n} operands, needs at least {len(fixed)}", at)
            for x in fixed:
                rec.operands.append((x, "single", [self.value(cur, x)]))
            for x in f.names:
                if x.startswith("*"):
                    m = self._group_size(cur, x[1:], n - len(fixed), at)
                    rec.operands.append((x[1:].lstrip("~"), "variadic", [self.value(cur, x[1:]) for _ in range(m)]))
        elif k == "O?":
            present = f"?{name}" in flags
            rec.operands.append((name, "optional", [self.value(cur, name)] if present else []))
        elif k == "R":
            at = cur.pos
            n = cur.varint("region count")
            if n != int(name):
                cur.fail(f"{rec.spec.name} has {n} regions, expected {name}", at)
            if depth >= MAX_DEPTH:
                cur.fail(f"regions nested deeper than {MAX_DEPTH}", at)
            rec.regions = [self.region(cur, depth + 1) for _ in range(n)]
        else:  # pragma: no cover - the op table is checked by the tests
            raise AssertionError(k)

    def _group_size(self, cur: Cursor, name: str, n: int, at: int) -> int:
        if name.startswith("~") and n > HETERO_SLOTS:
            cur.fail(f"{n} values in group '{name[1:]}' (the cuda_tile dialect holds at most {HETERO_SLOTS})", at)
        return n

    def region(self, cur: Cursor, depth: int) -> list:
        n = cur.count("block count")
        return [self.block(cur, depth) for _ in range(n)]

    def block(self, cur: Cursor, depth: int) -> BlockRec:
        mark = len(self.values)
        nargs = cur.count("block argument count")
        args = [self.types.read(cur, "block argument type") for _ in range(nargs)]
        self.values += args
        at = cur.pos
        nops = cur.count("block op count")
        if nops == 0:
            cur.fail("empty block (a block needs a terminator)", at)
        ops = []
        for _ in range(nops):
            op = self.op(cur, depth)
            self.values += op.results
            ops.append(op)
        del self.values[mark:]
        return BlockRec(args, ops)

    def body(self, cur: Cursor, params: list) -> BlockRec:
        self.values = list(params)
        self.ordinal = 0
        ops = []
        while not cur.at_end():
            op = self.op(cur, 0)
            self.values += op.results
            ops.append(op)
        if not ops:
            cur.fail("empty function body")
        return BlockRec(list(params), ops)


def decode(c: Container) -> Decoded:
    """Decode every function, global and the producer string of a container."""
    types = TypeTable(c)
    attrs = AttrReader(c, types)
    data = c.data
    debug = DebugInfo(c)

    s = c.sections[2]
    cur = Cursor(data, s.pos, s.end)
    functions = []
    for _ in range(cur.count("number of functions", 4)):
        at = cur.pos
        name = attrs.string(cur, "function name")
        if not name:
            cur.fail("empty function name", at)
        sig_at = cur.pos
        ftype = types.read(cur, "function signature")
        if not isinstance(ftype, T.Func):
            cur.fail(f"function signature is not a function type: {ftype.text}", sig_at)
        flags_at = cur.pos
        flags = cur.u8("function flags")
        if flags & ~0x07:
            cur.fail(f"unknown function flag bits {flags:#x}", flags_at)
        if not flags & 0x02:
            cur.fail(f"function '{name}' is not a kernel entry (only entry functions are supported)", flags_at)
        dbg = cur.varint("function debug index")
        hints = None
        if c.version >= (13, 5) or flags & 0x04:
            h_at = cur.pos
            hints = attrs.tagged(cur)
            if hints[0] != "hints":
                cur.fail("expected optimization hints", h_at)
        if c.version >= (13, 5):
            attrs.tagged(cur)  # argument attributes (an array, empty from cuTile)
        length = cur.varint("function body length")
        body_cur = cur.sub(length, "function body")
        dec = BodyDecoder(c, types, attrs)
        body = dec.body(body_cur, list(ftype.inputs))
        functions.append(FuncRec(name, ftype, flags, hints, dbg, body, at))
    if not cur.at_end():
        cur.fail("unread bytes at the end of the function section")

    globals_ = []
    if 6 in c.sections:
        s = c.sections[6]
        cur = Cursor(data, s.pos, s.end)
        for _ in range(cur.count("number of globals", 4)):
            at = cur.pos
            name = attrs.string(cur, "global name")
            ty = types.read(cur, "global type")
            value = attrs.dense(cur, ty, "global value")
            align = cur.varint("global alignment")
            vis, const = "public", False
            if c.version >= (13, 3):
                vis = attrs.enum(cur, "visibility", "symbol visibility")
                const = bool(cur.varint("global constant flag"))
            globals_.append(GlobalRec(name, ty, value, align, vis, const, at))

    producer = None
    if 7 in c.sections:
        s = c.sections[7]
        cur = Cursor(data, s.pos, s.end)
        producer = attrs.string(cur, "producer")

    # Resolve every location now: debug-table damage is reported before any IR exists.
    for fn in functions:
        _check_locations(debug, fn)
    return Decoded(c.version, c.version_text, functions, globals_, producer, debug)


def _check_locations(debug: DebugInfo, fn: FuncRec) -> None:
    debug.location(debug.op_attr_id(fn.debug, 0), fn.offset)
    stack = list(fn.body.ops)
    while stack:
        op = stack.pop()
        debug.location(debug.op_attr_id(fn.debug, op.ordinal), op.offset)
        for region in op.regions:
            for b in region:
                stack.extend(b.ops)
