"""The code generator state of stage 4: thread index, constants, index math, shared memory.

Every helper builds at the current insertion point; values that must dominate the
whole kernel (the thread index, the shared-memory base) are built once at its entry.
"""

from __future__ import annotations

from contextlib import contextmanager

from tilecore.mlir import dialects, ir

from ..layout import Blocked, blocked, row_major_strides
from ..llvm_globals import array_initializer

SMEM_SYMBOL = "__tileas_smem"  # + "_<kernel>" when a gpu.module holds several kernels


def create(name, results, operands, attrs=None, regions=0):
    return ir.Operation.create(name, results=results, operands=operands, attributes=attrs or {}, regions=regions)


class CodeGen:
    """Per-kernel state (see the module docstring)."""

    def __init__(self, entry_block, threads: int, target=None, options=None, atoms=None, gpu_module=None,
                 smem_symbol: str = SMEM_SYMBOL):
        self.gpu_module = gpu_module
        self.smem_symbol = smem_symbol
        self._tables = 0
        self.threads = threads
        self.target = target
        self.options = options
        self.atoms = atoms or {}
        self.i1 = ir.IntegerType.get_signless(1)
        self.i8 = ir.IntegerType.get_signless(8)
        self.i32 = ir.IntegerType.get_signless(32)
        self.i64 = ir.IntegerType.get_signless(64)
        self.smem_bytes = 0
        self.scratch_shift = 0  # bytes of the scratch buffer before smem_base (shifted_scratch)
        self.smem_align = 16  # of the scratch buffer (1024: swizzled wgmma operands need the atom's alignment)
        with ir.InsertionPoint(entry_block), ir.Location.unknown():
            tid = create("gpu.thread_id", [ir.IndexType.get()], [], {"dimension": ir.Attribute.parse("#gpu<dim x>")})
            self.tid = create("arith.index_cast", [self.i32], [tid.results[0]]).results[0]
            self.smem_base = dialects.llvm.mlir_addressof(ir.Type.parse("!llvm.ptr<3>"), smem_symbol)
        # Kernel-wide values go before the shared-memory base: after the thread index, before the body.
        self.entry_ip = ir.InsertionPoint(self.smem_base.owner)
        self._slot: dict[int, object] = {}
        self._owner: dict[int, object] = {}
        self._padded: dict[tuple, object] = {}
        self._origin: dict[tuple, tuple] = {}
        self._const_attrs: dict[tuple, object] = {}  # (type, int) -> its attribute (const)
        # Callables ``hook(cg, fn)`` run once the kernel body is lowered (an atom's kernel prologue / epilogue).
        self.finish_hooks: dict[str, object] = {}

    # -- layouts ----------------------------------------------------------------------------
    def layout(self, shape) -> Blocked:
        return blocked(shape, self.threads)

    def slot(self, owners: int):
        """``tid % owners`` (built at the kernel entry)."""
        if owners not in self._slot:
            if owners >= self.threads:
                self._slot[owners] = self.tid
            else:
                with self.entry_ip, ir.Location.unknown():
                    self._slot[owners] = self.op("arith.remui", self.tid, self.c32(owners))
        return self._slot[owners]

    def owner_mask(self, lay: Blocked):
        """i1 ``tid < owners`` or None when every thread is an owner."""
        if lay.owners >= self.threads:
            return None
        if lay.owners not in self._owner:
            with self.entry_ip, ir.Location.unknown():
                self._owner[lay.owners] = self.cmpi(6, self.tid, self.c32(lay.owners))
        return self._owner[lay.owners]

    def flat(self, lay: Blocked, k: int):
        """i32 flat element index held in register ``k`` of this thread."""
        rep, j = divmod(k, lay.vec)
        if lay.owners == 1:
            return self.c32(rep * lay.vec + j)
        base = self.op("arith.addi", self.slot(lay.owners), self.c32(rep * lay.owners)) if rep else \
            self.slot(lay.owners)
        f = self.op("arith.muli", base, self.c32(lay.vec)) if lay.vec > 1 else base
        return self.op("arith.addi", f, self.c32(j)) if j else f

    def padded_flat(self, lay: Blocked, k: int, row_len: int, row_pad: int):
        """:meth:`flat` in a row-major buffer whose rows of ``row_len`` are ``row_pad`` elements longer.

        When a register repetition spans whole rows (``owners * vec`` a multiple of ``row_len``, which
        ``vec`` divides), register ``k`` sits a constant distance from the thread's first element, so
        one padded base per layout serves every register (no division per register).
        """
        if not row_pad:
            return self.flat(lay, k)
        per_rep = lay.owners * lay.vec
        if lay.owners == 1 or per_rep % row_len or row_len % lay.vec:
            f = self.flat(lay, k)
            row = self.op("arith.divui", f, self.c32(row_len))
            return self.op("arith.addi", f, self.op("arith.muli", row, self.c32(row_pad)))
        key = (lay.owners, lay.vec, row_len, row_pad)
        if key not in self._padded:
            with self.entry_ip, ir.Location.unknown():
                f0 = self.op("arith.muli", self.slot(lay.owners), self.c32(lay.vec)) if lay.vec > 1 else \
                    self.slot(lay.owners)
                row = self.op("arith.divui", f0, self.c32(row_len))
                self._padded[key] = self.op("arith.addi", f0, self.op("arith.muli", row, self.c32(row_pad)))
        rep, j = divmod(k, lay.vec)
        offset = rep * per_rep + j + (rep * per_rep // row_len) * row_pad
        return self.op("arith.addi", self._padded[key], self.c32(offset)) if offset else self._padded[key]

    def lane_and_warp(self):
        """i32 (lane, warp) of this thread (built at the kernel entry)."""
        if "lane" not in self._origin:
            with self.entry_ip, ir.Location.unknown():
                self._origin["lane"] = (self.op("arith.remui", self.tid, self.c32(32)),
                                        self.op("arith.divui", self.tid, self.c32(32)))
        return self._origin["lane"]

    def fragment_origin(self, frag):
        """i32 (row, column) of register 0 of an MMA fragment layout in this thread: its warp's
        sub-tile origin + (lane / 4, 2 * (lane % 4)) (see :mod:`tilecore_tileas.layout.fragment`)."""
        key = _origin_key(frag)
        if key not in self._origin and hasattr(frag, "origin_values"):  # a layout that computes its own
            with self.entry_ip, ir.Location.unknown():
                self._origin[key] = frag.origin_values(self)
        if key not in self._origin and hasattr(frag, "groups_m"):  # a warpgroup layout (wgmma)
            lane, warp = self.lane_and_warp()
            with self.entry_ip, ir.Location.unknown():
                grid = frag.groups_m * frag.groups_n
                q = self.op("arith.divui", warp, self.c32(4))
                if grid * 128 < self.threads:
                    q = self.op("arith.remui", q, self.c32(grid))
                gr = self.op("arith.divui", q, self.c32(frag.groups_n))
                gc = self.op("arith.remui", q, self.c32(frag.groups_n))
                wrow = self.op("arith.muli", gr, self.c32(frag.shape[0] // frag.groups_m))
                wcol = self.op("arith.muli", gc, self.c32(frag.inst_n))
                w = self.op("arith.remui", warp, self.c32(4))
                row = self.op("arith.addi", self.op("arith.addi", wrow, self.op("arith.muli", w, self.c32(16))),
                              self.op("arith.shrui", lane, self.c32(2)))
                col = self.op("arith.addi", wcol,
                              self.op("arith.muli", self.op("arith.andi", lane, self.c32(3)), self.c32(2)))
                self._origin[key] = (row, col, wrow, wcol)
        if key not in self._origin:
            lane, warp = self.lane_and_warp()
            with self.entry_ip, ir.Location.unknown():
                grid = frag.warps_m * frag.warps_n
                w = warp if grid * 32 >= self.threads else self.op("arith.remui", warp, self.c32(grid))
                wm, wn = frag.warp_shape
                wr = self.op("arith.divui", w, self.c32(frag.warps_n))
                wc = self.op("arith.remui", w, self.c32(frag.warps_n))
                wrow, wcol = self.op("arith.muli", wr, self.c32(wm)), self.op("arith.muli", wc, self.c32(wn))
                row = self.op("arith.addi", wrow, self.op("arith.shrui", lane, self.c32(2)))
                col = self.op("arith.addi", wcol,
                              self.op("arith.muli", self.op("arith.andi", lane, self.c32(3)), self.c32(2)))
                self._origin[key] = (row, col, wrow, wcol)
        return self._origin[key][:2]

    def warp_origin(self, frag):
        """i32 (row, column) of the first element of this warp's (warpgroup's) sub-tile of a fragment layout."""
        self.fragment_origin(frag)
        return self._origin[_origin_key(frag)][2:]

    def flat_in_tile(self, lay: Blocked, k: int):
        """:meth:`flat`, or 0 for a register past the tile (so a read through it stays inside the buffer)."""
        f = self.flat(lay, k)
        valid = self.valid(lay, k)
        return f if valid is None else self.select(valid, f, self.c32(0))

    def valid(self, lay: Blocked, k: int):
        """i1 'register k holds a real element' or None when it always does."""
        if lay.always_valid(k):
            return None
        chunk = self.op("arith.addi", self.slot(lay.owners), self.c32((k // lay.vec) * lay.owners))
        return self.cmpi(6, chunk, self.c32(lay.chunks))

    def coords(self, shape, f) -> list:
        """Row-major coordinates (i32) of flat index ``f`` in ``shape``."""
        out = []
        for d, st in zip(shape, row_major_strides(shape)):
            q = self.op("arith.divui", f, self.c32(st)) if st > 1 else f
            out.append(self.op("arith.remui", q, self.c32(d)) if d > 1 else self.c32(0) if d == 1 else q)
        return out

    def linear(self, shape, coords):
        """Row-major flat index (i32) of ``coords`` in ``shape``."""
        f = None
        for c, st in zip(coords, row_major_strides(shape)):
            term = self.op("arith.muli", c, self.c32(st)) if st != 1 else c
            f = term if f is None else self.op("arith.addi", f, term)
        return f if f is not None else self.c32(0)

    # -- scalars ----------------------------------------------------------------------------
    def c32(self, v: int):
        return self.const(self.i32, v)

    def const(self, ty, v):
        # The attribute is made once per (type, int value) of the kernel (thousands of constants on a
        # matmul, most of them a few i32 offsets): no type printing, no attribute lookup per use.
        key = (ty, v) if type(v) is int else None  # (floats: 0.0 == -0.0 would share a key)
        attr = self._const_attrs.get(key) if key is not None else None
        if attr is None:
            if isinstance(ty, ir.FloatType) or str(ty) in ("f16", "bf16", "f32", "f64"):
                attr = ir.FloatAttr.get(ty, float(v))
            else:
                attr = ir.IntegerAttr.get(ty, int(v))
            if key is not None:
                self._const_attrs[key] = attr
        return create("arith.constant", [ty], [], {"value": attr}).results[0]

    def op(self, name, *operands, ty=None, attrs=None):
        return create(name, [ty or operands[0].type], list(operands), attrs).results[0]

    def cmpi(self, pred: int, a, b):
        return create("arith.cmpi", [self.i1], [a, b],
                      {"predicate": ir.IntegerAttr.get(self.i64, pred)}).results[0]

    def and_(self, *conds):
        conds = [c for c in conds if c is not None]
        if not conds:
            return None
        out = conds[0]
        for c in conds[1:]:
            out = self.op("arith.andi", out, c)
        return out

    def select(self, c, a, b):
        return create("arith.select", [a.type], [c, a, b]).results[0]

    def vector(self, regs: list):
        """The values ``regs`` (one type) as one ``vector`` value, the first in element 0 (for one vector store of
        consecutive elements)."""
        v = dialects.llvm.mlir_poison(ir.VectorType.get([len(regs)], regs[0].type))
        for j, r in enumerate(regs):
            v = dialects.llvm.insertelement(v, r, self.c32(j))
        return v

    def if_(self, cond, then_fn, else_fn=None, types=()):
        """scf.if with result ``types``; ``then_fn`` / ``else_fn`` build and return the yielded values."""
        node = create("scf.if", list(types), [cond], regions=2)
        for region, fn in ((node.regions[0], then_fn), (node.regions[1], else_fn)):
            blk = region.blocks.append()
            with ir.InsertionPoint(blk):
                vals = fn() if fn is not None else []
                create("scf.yield", [], list(vals or []))
        return list(node.results)

    def for_(self, lb, ub, inits, body_fn, step=1):
        """``scf.for`` over i32 ``[lb, ub)`` by ``step`` carrying ``inits``; ``body_fn(iv, carried)``
        builds the body and returns the next carried values. Returns the final ones."""
        node = create("scf.for", [v.type for v in inits], [lb, ub, self.c32(step), *inits], regions=1)
        blk = node.regions[0].blocks.append(self.i32, *[v.type for v in inits])
        with ir.InsertionPoint(blk):
            create("scf.yield", [], list(body_fn(blk.arguments[0], list(blk.arguments)[1:])))
        return list(node.results)

    def each_share(self, total: int, fn) -> None:
        """``fn(i)`` for every ``i`` in ``[0, total)``, the CTA's threads taking turns: thread ``tid`` runs
        ``i = j * threads + tid`` in an ``scf.for`` over ``j`` (the last round guarded when ``total`` is not a
        multiple of the thread count)."""
        op, c = self.op, self.c32

        def body(j, _):
            i = op("arith.addi", op("arith.muli", j, c(self.threads)), self.tid)
            if total % self.threads:
                self.if_(self.cmpi(6, i, c(total)), lambda: (fn(i), [])[1])
            else:
                fn(i)
            return []

        self.for_(c(0), c(-(-total // self.threads)), [], body)

    def masked(self, cond, fn, default=None, ty=None):
        """``fn()`` when ``cond`` (None = always); the result or ``default`` otherwise."""
        if cond is None:
            return fn()
        if ty is None:
            self.if_(cond, lambda: (fn(), [])[1])
            return None
        return self.if_(cond, lambda: [fn()], lambda: [default], types=[ty])[0]

    def constant_table(self, dense, tensor_type):
        """Address of a read-only global holding ``dense`` (row-major) in the kernel's gpu.module."""
        name = f"{self.smem_symbol.replace('smem', 'cst')}{self._tables}"
        self._tables += 1
        arr, dense = array_initializer(dense)
        with ir.InsertionPoint.at_block_begin(self.gpu_module.regions[0].blocks[0]), ir.Location.unknown():
            create("llvm.mlir.global", [], [], {
                "sym_name": ir.StringAttr.get(name), "global_type": ir.TypeAttr.get(arr),
                "linkage": ir.Attribute.parse("#llvm.linkage<internal>"), "constant": ir.UnitAttr.get(),
                "value": dense, "addr_space": ir.IntegerAttr.get(self.i32, 1),
                "alignment": ir.IntegerAttr.get(self.i64, 16)}, regions=1)
        with self.entry_ip, ir.Location.unknown():
            return dialects.llvm.mlir_addressof(ir.Type.parse("!llvm.ptr<1>"), name)

    # -- shared memory ----------------------------------------------------------------------
    def storage_type(self, ty):
        """The type memory (global or shared) holds element type ``ty`` in: a bool (i1) is one byte."""
        return self.i8 if str(ty) == "i1" else ty

    def to_storage(self, value):
        """``value`` as memory holds it: a bool becomes the byte 0 or 1 (other types are unchanged)."""
        return self.op("arith.extui", value, ty=self.i8) if str(value.type) == "i1" else value

    def from_storage(self, value, elem):
        """A value read from memory as ``storage_type(elem)`` in registers: a bool is true when its byte
        is nonzero."""
        return self.cmpi(1, value, self.const(self.i8, 0)) if str(elem) == "i1" else value

    def smem_ptr(self, byte_offset: int, index, elem):
        llvm = dialects.llvm
        p3 = ir.Type.parse("!llvm.ptr<3>")
        base = self.smem_base
        if byte_offset:
            base = llvm.getelementptr(p3, base, [], [byte_offset], self.i8, 0)
        return llvm.getelementptr(p3, base, [index], [-2147483648], self.storage_type(elem), 0)

    def smem_store(self, byte_offset, index, value):
        value = self.to_storage(value)
        dialects.llvm.store(value, self.smem_ptr(byte_offset, index, value.type))

    def smem_load(self, byte_offset, index, elem):
        v = dialects.llvm.load(self.storage_type(elem), self.smem_ptr(byte_offset, index, elem))
        return self.from_storage(v, elem)

    def reserve(self, nbytes: int) -> None:
        """The scratch buffer holds at least ``nbytes`` from ``smem_base`` (past a shifted region's start)."""
        self.smem_bytes = max(self.smem_bytes, (self.scratch_shift + nbytes + 15) // 16 * 16)

    @contextmanager
    def shifted_scratch(self, nbytes: int):
        """Within: ``smem_base`` (every scratch user's origin) is ``nbytes`` (a multiple of 1024) further on,
        so that what the code built here puts in shared memory stays clear of the first ``nbytes`` (a
        pipelined loop's stages, which its body reads while the next ones land)."""
        saved = self.smem_base, self.scratch_shift
        self.smem_base = dialects.llvm.getelementptr(ir.Type.parse("!llvm.ptr<3>"), self.smem_base, [], [nbytes],
                                                     self.i8, 0)
        self.scratch_shift += nbytes
        try:
            yield
        finally:
            self.smem_base, self.scratch_shift = saved

    def barrier(self):
        create("gpu.barrier", [], [])

    def finish(self, fn) -> None:
        """Run the finish hooks on the lowered kernel ``fn`` (in registration order)."""
        for hook in list(self.finish_hooks.values()):
            hook(self, fn)


def _origin_key(frag) -> tuple:
    return (type(frag).__name__, frag.shape, getattr(frag, "warps_m", getattr(frag, "groups_m", 0)),
            getattr(frag, "warps_n", getattr(frag, "groups_n", 0)))


def scalar_bits(ty) -> int:
    """The width of an integer / float type (0 for any other type: pointers, vectors ...)."""
    return ty.width if isinstance(ty, (ir.IntegerType, ir.FloatType)) else 0


def elem_bytes(ty) -> int:
    s = str(ty)
    if s == "i1":
        return 1
    if s.startswith("!llvm.ptr"):
        return 8
    if isinstance(ty, ir.FloatType):
        return max(1, ty.width // 8)
    return max(1, ir.IntegerType(ty).width // 8)
