"""Memory: memrefs, tiled views, tiled loads / stores / atomics, pointer tiles.

A tiled access computes, per register, the global coordinates of its element
(``index * tile + coord``), the bounds predicate against the memref sizes and the
address ``base + sum(coord * stride)``; the copy atom chosen by ``tileas-select-atoms``
(attribute ``atom``) emits the actual loads / stores (:mod:`tilecore_tileas.atoms`).

Memory holds every element in its storage type (``cg.storage_type``): a bool (i1 register)
is one byte, 0 or 1, as in a numpy bool array. Accesses and copy atoms work on storage-typed
values; the ops convert registers at the edge (:func:`to_memory`, :func:`from_memory`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir
from tilecore.narrow_floats import encode

from ..atoms import default_atom
from ..irdl_text import group_values
from ..nv_tileaa import DYNAMIC
from ..nv_tileas import OPS
from ..stage1_cuda_tile_to_tileaa.common import element_type, resize_int
from .codegen import elem_bytes
from .exchange import exchange, replicate
from .narrow_float import PACKED, is_narrow, storage
from .values import TOKEN, MemrefV, TileV, ViewV

PTR1 = "!llvm.ptr<1>"


def _ints(attr) -> tuple:
    return tuple(int(x) for x in ir.DenseI64ArrayAttr(attr))


def memref_type_parts(t):
    """(element type as written, shape, strides) of an ``!nv_tileaa.memref`` type."""
    m = re.match(r"!nv_tileaa\.memref<(.*?), array<i64(?:: ([^>]*))?>, array<i64(?:: ([^>]*))?>, (\d+) : i32>",
                 str(t))
    el = ir.Type.parse(m.group(1)) if not m.group(1).startswith("!nv_tileaa.ptr") else ir.Type.parse(PTR1)
    shape = [int(x) for x in m.group(2).split(",")] if m.group(2) else []
    strides = [int(x) for x in m.group(3).split(",")] if m.group(3) else []
    return el, shape, strides


def make_memref(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    el, shape, strides = memref_type_parts(op.results[0].type)
    base, dyn = ins[0], ins[1:]
    nshape = sum(1 for d in shape if d == DYNAMIC)
    dshape, dstrides = dyn[:nshape], dyn[nshape:]
    index = dyn[0].type if dyn else cg.i32  # the array's index type: i32, or i64 (int64 shapes / strides)
    shp, st = [], []
    it = iter(dshape)
    for d in shape:
        shp.append(next(it) if d == DYNAMIC else cg.const(index, d))
    it = iter(dstrides)
    old_strides = iter(op.operands[1 + nshape:])
    stride_div = []
    for s in strides:
        st.append(resize_int(next(it), cg.i64) if s == DYNAMIC else s)
        stride_div.append(known_div_by(next(old_strides)) if s == DYNAMIC else max(1, abs(s)))
    div = rb.data["div_by"].get(op.operands[0], 1)
    narrow = str(el) if is_narrow(el) else ""
    return [MemrefV(base, storage(el), shp, st, strides, div, narrow, stride_div)]


def known_div_by(value) -> int:
    """The largest ``div_by`` an ``nv_tileas.assume`` chain ending in ``value`` (an old value) states, or 1."""
    best = 1
    while isinstance(value, ir.OpResult) and value.owner.name in ("nv_tileas.assume", "nv_tileaa.assume"):
        owner = value.owner
        if "div_by" in owner.attributes:
            best = max(best, ir.IntegerAttr(owner.attributes["div_by"]).value)
        value = owner.operands[0]
    return best


def view_type_parts(t):
    """(tile shape, dim_map, padding) of a ``!nv_tileaa.tiled_view`` type."""
    t = str(t)
    tile = re.match(r"!nv_tileaa\.tiled_view<array<i64(?:: ([^>]*))?>", t).group(1)
    dim_map, pad = re.search(r'array<i64(?:: ([^>]*))?>, "(\w+)">$', t).groups()
    return _int_list(tile), _int_list(dim_map), pad


def _int_list(text) -> tuple:
    return tuple(int(x) for x in text.split(",")) if text else ()


def permuted(m: MemrefV, dim_map: tuple) -> MemrefV:
    """The memref with its axes in tile order: axis ``k`` is axis ``dim_map[k]`` of ``m`` (cuTile's
    ``order=``: the permutation is applied to the array's axes before the tile space is built)."""
    if dim_map == tuple(range(len(dim_map))):
        return m
    return replace(m, shape=[m.shape[d] for d in dim_map], strides=[m.strides[d] for d in dim_map],
                   static_strides=[m.static_strides[d] for d in dim_map],
                   stride_div=[m.stride_div[d] for d in dim_map] if m.stride_div else [])


def view(op, rb):
    """A tiled view over the memref permuted into tile order, so accesses never see its dim_map."""
    tile, dim_map, pad = view_type_parts(op.results[0].type)
    return [ViewV(permuted(rb.get(op.operands[0]), dim_map), tile, tuple(range(len(tile))), pad)]


class TiledAccess:
    """Addresses and bounds of the elements of one tile accessed through a tiled view.

    Coordinates are computed at the access's index width (:attr:`index`): i32, or i64 when the
    memref's sizes or the tile indices are 64-bit (cuTile's int64 index type), so dimensions of
    2^31 elements or more keep exact coordinates; element offsets are always i64.
    """

    def __init__(self, cg, v: ViewV, index: list, lay, op):
        self.cg, self.v, self.lay = cg, v, lay
        if len(index) != len(v.tile_shape):
            raise LoweringError("tiled access with a view rank different from its index count", op)
        self.steps = v.traversal_strides or v.tile_shape  # a strided view steps by its traversal strides
        widths = [ir.IntegerType(x.type).width for x in [*index, *v.memref.shape]]
        self.index = cg.i64 if max(widths, default=32) > 32 else cg.i32
        index = [resize_int(i, self.index) for i in index]
        self.origin = [cg.op("arith.muli", i, cg.const(self.index, t)) if t != 1 else i
                       for i, t in zip(index, self.steps)]
        self.element = cg.storage_type(v.memref.element)  # as memory holds it (a bool: a byte)
        self.sparse = None  # (dim, per-register coordinates) for gather / scatter views
        self.ordering, self.syncscope = memory_order(op)
        self._value_cache = {}  # (block, key) -> value: :meth:`_cached`

    def load(self, addr):
        """A scalar load with the op's memory ordering (weak: a plain load)."""
        if self.ordering is None:
            return dialects.llvm.load(self.element, addr)
        return dialects.llvm.load(self.element, addr, ordering=self.ordering, syncscope=self.syncscope,
                                  alignment=elem_bytes(self.element))

    def store(self, value, addr):
        if self.ordering is None:
            return dialects.llvm.store(value, addr)
        return dialects.llvm.store(value, addr, ordering=self.ordering, syncscope=self.syncscope,
                                   alignment=elem_bytes(self.element))

    def coords(self, f, k=None):
        """Global coordinates of the element with tile-local flat index ``f`` (held in register ``k``)."""
        cg = self.cg
        local = [resize_int(c, self.index) for c in cg.coords(self.v.tile_shape, f)]
        g = [cg.op("arith.addi", o, c) for o, c in zip(self.origin, local)]
        if self.sparse is not None:
            g[self.sparse[0]] = resize_int(self.sparse[1][k], self.index)
        return g

    def register_coords(self, k, shared_offset: bool = False):
        """:meth:`coords` of register ``k`` of the access's blocked layout. Where register ``k``'s element lies a
        constant distance from the thread's first in every thread (:meth:`Blocked.register_distance`), they are
        the first element's coordinates plus that distance (:class:`_Split`), which :meth:`offset` turns into
        the first element's offset plus a constant: one address shared by the thread's registers."""
        cg, lay = self.cg, self.lay
        dist = None if self.sparse is not None or lay.owners == 1 else \
            lay.register_distance(k, tuple(self.v.tile_shape))
        if dist is None or not (any(dist) or shared_offset):
            return self.coords(cg.flat(lay, k), k)
        first = self._cached(("first",), lambda: self.coords(cg.flat(lay, 0), 0))
        # shared: built here, once per block (a scalar access guards each register's address in a branch of
        # its own, where it could not be shared); else built with each address, where that is made
        first_off = self._cached(("offset",), lambda: self.offset(first)) if shared_offset else None
        return _Split([self._cached(("+", d, c), lambda a=a, c=c: cg.op("arith.addi", a, cg.const(self.index, c)))
                       if c else a for d, (a, c) in enumerate(zip(first, dist))], first, dist, first_off)

    def _cached(self, key, make):
        """``make()``, built once per block and ``key`` (the first element's coordinates or offset, a coordinate
        or bound check that registers share; values of one block do not reach another: a branch's builds its
        own)."""
        block = ir.InsertionPoint.current.block
        got = self._value_cache.get((block, key))
        if got is None:
            got = self._value_cache[(block, key)] = make()
        return got

    def in_bounds(self, g, extra_last: int = 0):
        cg = self.cg
        conds = []
        for d, (c, n) in enumerate(zip(g, self.v.memref.shape)):
            if d == len(g) - 1 and extra_last:
                c = cg.op("arith.addi", c, cg.const(self.index, extra_last))
            # unsigned: a negative coordinate is out (registers of one row or column share the check)
            conds.append(self._cached(("<", d, c), lambda c=c, n=n: cg.cmpi(6, c, resize_int(n, self.index))))
        return cg.and_(*conds)

    def offset(self, g):
        """The element offset (i64) of global coordinates ``g`` from the memref's base.

        Coordinates from :meth:`register_coords` (``first + distance``) give ``offset(first) + sum(distance *
        stride)``: for an element in bounds that is its offset (``first`` and the distance are computed in the
        index width, which an in-bounds coordinate cannot have wrapped past), and the first part is the same
        for all the thread's registers."""
        cg = self.cg
        if isinstance(g, _Split):
            off = self.offset(g.first) if g.first_offset is None else g.first_offset
            static = sum(c * s for c, s in zip(g.distance, self.v.memref.strides) if isinstance(s, int))
            if static:
                off = cg.op("arith.addi", off, cg.const(cg.i64, static))
            for c, s in zip(g.distance, self.v.memref.strides):
                if c and not isinstance(s, int):
                    off = cg.op("arith.addi", off, cg.op("arith.muli", s, cg.const(cg.i64, c)))
            return off
        off = None
        for c, s in zip(g, self.v.memref.strides):
            c64 = resize_int(c, cg.i64)
            if isinstance(s, int):
                term = c64 if s == 1 else cg.op("arith.muli", c64, cg.const(cg.i64, s))
            else:
                term = cg.op("arith.muli", c64, s)
            off = term if off is None else cg.op("arith.addi", off, term)
        return off

    def address(self, g):
        return dialects.llvm.getelementptr(ir.Type.parse(PTR1), self.v.memref.base, [self.offset(g)],
                                           [-2147483648], self.element, 0)

    def load_packed(self, pad):
        """Every register of a tile of 4-bit elements packed two per byte (element 2i in the low half of
        byte i): one byte load per element, shifted to its half (out of bounds: ``pad``)."""
        cg, lay = self.cg, self.lay
        regs = []
        for k in range(lay.regs):
            g = self.coords(cg.flat(lay, k), k)
            cond = cg.and_(self.in_bounds(g), cg.valid(lay, k))

            def nibble(g=g):
                off = self.offset(g)
                return cg.op("arith.andi", cg.op("arith.shrui", self.load(self._byte_ptr(off)), self._half_shift(off)),
                             cg.const(cg.i8, 15))

            regs.append(cg.masked(cond, nibble, pad, cg.i8))
        return regs

    def store_packed(self, tile) -> None:
        """Store a tile of 4-bit codes two per byte. A register pair that fills one byte (consecutive
        elements of one thread, adjacent in memory: the tile's last axis has unit stride, both in
        bounds, the first at an even offset) is one byte store; every other element updates its
        half byte with two atomics (and: clear, or: set), so neighbouring elements stored by other
        threads or CTAs survive (a transposed store, order=(1, 0), takes this path)."""
        cg, lay = self.cg, self.lay
        owner = cg.owner_mask(lay)
        paired = lay.vec % 2 == 0 and self.v.memref.static_strides[-1] == 1
        for k0 in range(0, lay.regs, 2 if paired else 1):
            ks = [k0, k0 + 1] if paired else [k0]
            gs = [self.coords(cg.flat(lay, k), k) for k in ks]
            conds = [cg.and_(self.in_bounds(g), cg.valid(lay, k), owner) for g, k in zip(gs, ks)]
            if not paired:
                cg.masked(conds[0], lambda g=gs[0], k=k0: self._store_nibble(g, tile.regs[k]))
                continue
            off = self.offset(gs[0])
            even = cg.cmpi(0, cg.op("arith.andi", off, cg.const(cg.i64, 1)), cg.const(cg.i64, 0))
            whole = cg.and_(conds[0], conds[1], even)

            def byte(off=off, k=k0):
                hi = cg.op("arith.shli", tile.regs[k + 1], cg.const(cg.i8, 4))
                self.store(cg.op("arith.ori", tile.regs[k], hi), self._byte_ptr(off))
                return []

            def halves(gs=gs, conds=conds, k=k0):
                for g, c, r in zip(gs, conds, (tile.regs[k], tile.regs[k + 1])):
                    cg.masked(c, lambda g=g, r=r: self._store_nibble(g, r))
                return []

            cg.if_(whole if whole is not None else cg.const(cg.i1, 1), byte, halves)

    def _byte_ptr(self, off):
        """The byte holding packed element ``off`` (i64 element offset)."""
        half = self.cg.op("arith.shrui", off, self.cg.const(self.cg.i64, 1))
        return dialects.llvm.getelementptr(ir.Type.parse(PTR1), self.v.memref.base, [half], [-2147483648],
                                           self.cg.i8, 0)

    def _half_shift(self, off):
        """The bit position (i8: 0 or 4) of packed element ``off`` within its byte."""
        cg = self.cg
        return cg.op("arith.trunci", cg.op("arith.shli", cg.op("arith.andi", off, cg.const(cg.i64, 1)),
                                           cg.const(cg.i64, 2)), ty=cg.i8)

    def _store_nibble(self, g, code) -> None:
        """Two byte atomics (and: clear the half, or: set it); the back end widens them to 32-bit ones."""
        cg, llvm = self.cg, dialects.llvm
        off = self.offset(g)
        p = self._byte_ptr(off)
        shift = self._half_shift(off)
        clear = cg.op("arith.xori", cg.op("arith.shli", cg.const(cg.i8, 15), shift), cg.const(cg.i8, -1))
        order = llvm.AtomicOrdering.monotonic
        llvm.atomicrmw(llvm.AtomicBinOp._and, p, clear, order)
        llvm.atomicrmw(llvm.AtomicBinOp._or, p, cg.op("arith.shli", code, shift), order)

    def vectorizable(self) -> bool:
        """Static facts a vector copy atom needs (contiguous, aligned groups of ``vec`` elements)."""
        m, lay = self.v.memref, self.lay
        if self.ordering is not None:  # ordered accesses are scalar atomics
            return False
        if self.sparse is not None:  # gathered rows / columns: run-time offsets, alignment unknown
            return False
        if lay.vec <= 1 or self.v.tile_shape[-1] % lay.vec or m.static_strides[-1] != 1:
            return False
        if self.steps[-1] % lay.vec:  # a window starting between groups (traversal step 1) is misaligned
            return False
        nbytes = lay.vec * elem_bytes(self.element)
        if m.div_by % nbytes:
            return False
        return all(s != DYNAMIC and (s * elem_bytes(self.element)) % nbytes == 0 for s in m.static_strides[:-1])


PADDING_VALUES = {"nan": float("nan"), "pos_inf": float("inf"), "neg_inf": float("-inf"), "neg_zero": -0.0}


class _Split(list):
    """Global coordinates ``first + distance`` (:meth:`TiledAccess.register_coords`), with both parts kept."""

    def __init__(self, coords, first, distance, first_offset):
        super().__init__(coords)
        self.first, self.distance, self.first_offset = first, distance, first_offset


def padding_value(cg, ty, pad: str, narrow: str = ""):
    """The value out-of-bounds loads give (``narrow``: the code of an 8- / 4-bit float element)."""
    if narrow:
        return cg.const(cg.i8, encode(PADDING_VALUES.get(pad, 0.0), narrow))
    if str(ty).startswith("!llvm.ptr"):
        return dialects.llvm.mlir_zero(ty)
    if isinstance(ty, ir.FloatType):
        return cg.const(ty, PADDING_VALUES.get(pad, 0.0))
    return cg.const(ty, 0)


def _atom(rb, op, kind, request=None):
    cg = rb.data["cg"]
    name = ir.StringAttr(ir.Attribute.parse(str(op.attributes["atom"]).replace("#nv_tileas.atom<", "")
                                            .rstrip(">"))).value if "atom" in op.attributes else None
    atom = cg.atoms.get(name) if name else None
    return atom or default_atom(cg.atoms, kind, cg.target, request)


def _with_op_view(v: ViewV, op) -> ViewV:
    """The view with what the op's attributes add (traversal strides of a strided view)."""
    if "traversal_strides" in op.attributes:
        return ViewV(v.memref, v.tile_shape, v.dim_map, v.padding, _ints(op.attributes["traversal_strides"]))
    return v


def to_memory(cg, tile: TileV) -> TileV:
    """``tile`` with its registers as memory holds them (bools as the bytes 0 / 1)."""
    if str(tile.regs[0].type) != "i1":
        return tile
    return TileV(tile.layout, [cg.to_storage(r) for r in tile.regs])


def from_memory(cg, regs: list, elem) -> list:
    """Registers read from memory as ``cg.storage_type(elem)`` as ``elem`` values (a byte -> a bool)."""
    return [cg.from_storage(r, elem) for r in regs]


def tiled_load(op, rb):
    cg = rb.data["cg"]
    piped = rb.data.get("piped")
    if piped and op.results[0] in piped:  # a pipelined K loop copied this tile to shared memory already
        return [piped[op.results[0]], TOKEN]
    ins = rb.gets(op.operands)
    v = _with_op_view(ins[0], op)
    index = [x for x in ins[1:] if x is not TOKEN]
    rt = ir.RankedTensorType(op.results[0].type)
    lay = cg.layout(rt.shape)
    acc = TiledAccess(cg, v, index, lay, op)
    if v.memref.narrow in PACKED:  # no copy atom moves half bytes
        return [TileV(lay, acc.load_packed(padding_value(cg, acc.element, v.padding, v.memref.narrow))), TOKEN]
    atom = _atom(rb, op, "copy", acc)
    regs = atom.lower(cg, "load", acc, None)
    return [TileV(lay, from_memory(cg, regs, v.memref.element)), TOKEN]


def tiled_store(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    tile, v = ins[0], _with_op_view(ins[1], op)
    index = [x for x in ins[2:] if x is not TOKEN]
    tile = as_tile(cg, tile, v.tile_shape)
    acc = TiledAccess(cg, v, index, tile.layout, op)
    if v.memref.narrow in PACKED:  # no copy atom moves half bytes
        acc.store_packed(tile)
        return [TOKEN]
    atom = _atom(rb, op, "copy", acc)
    atom.lower(cg, "store", acc, to_memory(cg, tile))
    return [TOKEN]


def _not_packed(v: ViewV, op, what: str) -> None:
    if v.memref.narrow in PACKED:
        raise LoweringError(f"{what} {v.memref.narrow} tiles (two per byte) is not supported yet", op)


def as_tile(cg, v, shape):
    if isinstance(v, TileV):
        return v
    lay = cg.layout(shape)
    return TileV(lay, [v] * lay.regs)


def _gather_access(cg, op, v, offsets, index, lay):
    """A TiledAccess whose coordinate along ``sparse_dim`` comes from the ``offsets`` tile."""
    _not_packed(v, op, "gathering / scattering")
    sd = ir.IntegerAttr(op.attributes["sparse_dim"]).value
    offs = as_tile(cg, offsets, (v.tile_shape[sd],))
    el = offs.regs[0].type
    full = index[:sd] + [cg.const(el, 0)] + index[sd:]  # (of the offsets' type: i64 offsets widen the access)
    # the dense coordinates are element offsets (a cuTile Slice's start), not tile indices: unit steps
    acc = TiledAccess(cg, replace(v, traversal_strides=(1,) * len(v.tile_shape)), full, lay, op)
    per_elem = exchange(cg, [offs], lay.shape, lambda c, load: load(0, c[sd]))
    acc.sparse = (sd, per_elem.regs)
    return acc


def gather_load(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    v, offsets = ins[0], ins[1]
    index = [x for x in ins[2:] if x is not TOKEN]
    lay = cg.layout(ir.RankedTensorType(op.results[0].type).shape)
    acc = _gather_access(cg, op, v, offsets, index, lay)
    regs = _atom(rb, op, "copy", acc).lower(cg, "load", acc, None)
    return [TileV(lay, from_memory(cg, regs, v.memref.element)), TOKEN]


def scatter_store(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    v, offsets = ins[1], ins[2]
    tile = as_tile(cg, ins[0], v.tile_shape)
    index = [x for x in ins[3:] if x is not TOKEN]
    acc = _gather_access(cg, op, v, offsets, index, tile.layout)
    _atom(rb, op, "copy", acc).lower(cg, "store", acc, to_memory(cg, tile))
    return [TOKEN]


# -- atomics ------------------------------------------------------------------------------------
RMW = {"and": "_and", "or": "_or", "xor": "_xor", "add": "add", "addf": "fadd", "max": "max", "min": "min",
       "umax": "umax", "umin": "umin", "xchg": "xchg"}
ORDER = {0: "monotonic", 1: "monotonic", 2: "acquire", 3: "release", 4: "acq_rel"}
# mem_scope discriminant -> LLVM NVPTX sync scope (none / sys: the system scope, "")
SCOPE = {0: None, 1: "block", 2: "device", 3: None}


def _discriminant(op, name):
    if name not in op.attributes:
        return None
    return int(re.search(r"<(\d+)", str(op.attributes[name])).group(1))


def memory_order(op):
    """(LLVM ordering or None for a weak access, sync scope) of a memory op's mem_semantic / mem_scope."""
    sem = _discriminant(op, "mem_semantic")
    if not sem:  # weak (0) or absent
        return None, None
    scope = SCOPE.get(_discriminant(op, "mem_scope") or 0)
    return getattr(dialects.llvm.AtomicOrdering, ORDER[sem]), scope


def _ordering(op):
    """Atomic read-modify-writes are at least relaxed (monotonic); (ordering, sync scope)."""
    order, scope = memory_order(op)
    return order or dialects.llvm.AtomicOrdering.monotonic, scope


def _rmw(cg, op, mode, ptr, val):
    llvm = dialects.llvm
    bin_op = getattr(llvm.AtomicBinOp, RMW[mode])
    order, scope = _ordering(op)
    return llvm.atomicrmw(bin_op, ptr, val, order, syncscope=scope)


def tiled_atomic_rmw(op, rb):
    cg = rb.data["cg"]
    ins = rb.gets(op.operands)
    v = _with_op_view(ins[0], op)
    _not_packed(v, op, "atomics on")
    rest = [x for x in ins[1:] if x is not TOKEN]
    index, value = rest[:-1], rest[-1]
    value = as_tile(cg, value, v.tile_shape)
    lay = value.layout
    acc = TiledAccess(cg, v, index, lay, op)
    mode = ir.StringAttr(op.attributes["mode"]).value
    for k in range(lay.regs):
        g = acc.coords(cg.flat(lay, k), k)
        cond = cg.and_(acc.in_bounds(g), cg.valid(lay, k), cg.owner_mask(lay))
        cg.masked(cond, lambda g=g, k=k: _rmw(cg, op, mode, acc.address(g), value.regs[k]))
    return [TOKEN]


# -- pointer tiles ------------------------------------------------------------------------------
def _pointee(t):
    s = str(t)
    m = re.search(r"!nv_tileaa\.ptr<(.*), \d+ : i32>", s)
    inner = m.group(1)
    return ir.Type.parse(PTR1) if inner.startswith("!nv_tileaa.ptr") else storage(ir.Type.parse(inner))


def _elem_of(t):
    return storage(element_type(t))


def _per_element(cg, vals, shape):
    """Tiles (or scalars, broadcast) of ``shape`` -> (layout, per-register lists)."""
    lay = cg.layout(shape)
    return lay, [v.regs if isinstance(v, TileV) else ([v] * lay.regs if v is not None else [None] * lay.regs)
                 for v in vals]


def offset(op, rb):
    cg = rb.data["cg"]
    ptr, off = rb.gets(op.operands)
    el = _pointee(_elem_of(op.operands[0].type))
    p1 = ir.Type.parse(PTR1)

    def one(p, o):
        return dialects.llvm.getelementptr(p1, p, [o], [-2147483648], el, 0)

    if not isinstance(ptr, TileV) and not isinstance(off, TileV):
        return [one(ptr, off)]
    shape = (ptr if isinstance(ptr, TileV) else off).shape
    lay, (ps, os_) = _per_element(cg, [ptr, off], shape)
    return [TileV(lay, [one(p, o) for p, o in zip(ps, os_)])]


def _shape_of(t):
    return tuple(ir.RankedTensorType(t).shape) if str(t).startswith("tensor<") else ()


def load(op, rb):
    cg = rb.data["cg"]
    g = group_values(op, OPS["load"][0])
    ptrs, mask, pad = rb.get(g["ptrs"]), rb.get(g["mask"]) if g["mask"] is not None else None, \
        rb.get(g["padding"]) if g["padding"] is not None else None
    el = _pointee(_elem_of(op.operands[0].type))
    mem = cg.storage_type(el)
    shape = _shape_of(op.results[0].type)
    lay, (ps, ms, pds) = _per_element(cg, [ptrs, mask, pad], shape)
    out = []
    for k in range(lay.regs):
        cond = cg.and_(ms[k], cg.valid(lay, k))
        default = cg.to_storage(pds[k]) if pds[k] is not None else padding_value(cg, mem, "zero")
        out.append(cg.masked(cond, lambda k=k: dialects.llvm.load(mem, ps[k]), default, mem))
    out = from_memory(cg, out, el)
    return [TileV(lay, out) if shape else out[0], TOKEN]


def store(op, rb):
    cg = rb.data["cg"]
    g = group_values(op, OPS["store"][0])
    ptrs, val = rb.get(g["ptrs"]), rb.get(g["value"])
    mask = rb.get(g["mask"]) if g["mask"] is not None else None
    shape = _shape_of(op.operands[0].type)
    lay, (ps, vs, ms) = _per_element(cg, [ptrs, val, mask], shape)
    for k in range(lay.regs):
        cond = cg.and_(ms[k], cg.valid(lay, k), cg.owner_mask(lay))
        cg.masked(cond, lambda k=k: dialects.llvm.store(cg.to_storage(vs[k]), ps[k]))
    return [TOKEN]


def atomic_rmw(op, rb):
    cg = rb.data["cg"]
    g = group_values(op, OPS["atomic_rmw"][0])
    ptrs, arg = rb.get(g["ptrs"]), rb.get(g["arg"])
    mask = rb.get(g["mask"]) if g["mask"] is not None else None
    shape = _shape_of(op.operands[0].type)
    lay, (ps, vs, ms) = _per_element(cg, [ptrs, arg, mask], shape)
    mode = ir.StringAttr(op.attributes["mode"]).value
    el = _elem_of(op.results[0].type)
    out = []
    for k in range(lay.regs):
        cond = cg.and_(ms[k], cg.valid(lay, k), cg.owner_mask(lay))
        out.append(cg.masked(cond, lambda k=k: _rmw(cg, op, mode, ps[k], vs[k]), padding_value(cg, el, "zero"), el))
    res = TileV(lay, out)
    res = replicate(cg, res)
    return [res if shape else res.regs[0], TOKEN]


def atomic_cas(op, rb):
    cg = rb.data["cg"]
    g = group_values(op, OPS["atomic_cas"][0])
    ptrs, cmp, val = rb.get(g["ptrs"]), rb.get(g["cmp"]), rb.get(g["value"])
    mask = rb.get(g["mask"]) if g["mask"] is not None else None
    shape = _shape_of(op.operands[0].type)
    lay, (ps, cs, vs, ms) = _per_element(cg, [ptrs, cmp, val, mask], shape)
    el = _elem_of(op.results[0].type)
    llvm = dialects.llvm
    out = []

    # PTX ISA "Parallel Synchronization and Communication Instructions: atom": atom.cas is .b32 / .b64, a
    # bitwise compare; LLVM's cmpxchg takes integers only, so float tiles swap their bit patterns.
    bits = ir.IntegerType.get_signless(ir.FloatType(el).width) if isinstance(el, ir.FloatType) else None

    def cas(k):
        order, scope = _ordering(op)
        c, v = (cs[k], vs[k]) if bits is None else (llvm.bitcast(bits, cs[k]), llvm.bitcast(bits, vs[k]))
        pair = llvm.cmpxchg(ps[k], c, v, order, llvm.AtomicOrdering.monotonic, syncscope=scope)
        old = llvm.extractvalue(bits or el, pair, [0])
        return old if bits is None else llvm.bitcast(el, old)

    for k in range(lay.regs):
        cond = cg.and_(ms[k], cg.valid(lay, k), cg.owner_mask(lay))
        out.append(cg.masked(cond, lambda k=k: cas(k), padding_value(cg, el, "zero"), el))
    res = replicate(cg, TileV(lay, out))
    return [res if shape else res.regs[0], TOKEN]
