"""Copy atoms: how a tile moves between registers and global memory."""

from __future__ import annotations

from tilecore.mlir import dialects, ir

# scalar accesses of this many registers or more build their first element's offset once (a matmul's 128-register
# epilogue: ~1,000 SASS instructions and LLVM ops fewer); fewer (a row of a row softmax: 8 more instructions
# shared) rebuild it in each register's branch
SHARED_OFFSET_REGS = 32


def vector_admits(access) -> bool:
    return getattr(access, "vectorizable", lambda: False)()


def _pad(cg, access):
    from ..stage4_tileas_to_llvm.memory import padding_value

    return padding_value(cg, access.element, access.v.padding, access.v.memref.narrow)


def _scalar_load(cg, access, k, pad, shared=False):
    lay = access.lay
    g = access.register_coords(k, shared_offset=shared)
    cond = cg.and_(access.in_bounds(g), cg.valid(lay, k))
    return cg.masked(cond, lambda: access.load(access.address(g)), pad, access.element)


def _scalar_store(cg, access, k, value, shared=False):
    lay = access.lay
    g = access.register_coords(k, shared_offset=shared)
    cond = cg.and_(access.in_bounds(g), cg.valid(lay, k), cg.owner_mask(lay))
    cg.masked(cond, lambda: access.store(value, access.address(g)))


def lower_scalar(cg, kind, access, tile):
    """One masked access per element; out-of-bounds loads give the view's padding value. The registers'
    addresses are, with :data:`SHARED_OFFSET_REGS` registers or more, the thread's first element's offset, built
    once, plus constants (where the layout allows: :meth:`.memory.TiledAccess.register_coords`'
    ``shared_offset``), not each rebuilt in its register's branch."""
    lay = access.lay
    shared = lay.regs >= SHARED_OFFSET_REGS
    if kind == "load":
        pad = _pad(cg, access)
        return [_scalar_load(cg, access, k, pad, shared) for k in range(lay.regs)]
    for k in range(lay.regs):
        _scalar_store(cg, access, k, tile.regs[k], shared)
    return None


def lower_vector(cg, kind, access, tile):
    """Per group of ``vec`` registers: one aligned vector access when the group is in bounds,
    the scalar path otherwise."""
    from ..stage4_tileas_to_llvm.codegen import elem_bytes

    llvm = dialects.llvm
    lay, el = access.lay, access.element
    vt = ir.VectorType.get([lay.vec], el)
    align = lay.vec * elem_bytes(el)
    pad = _pad(cg, access) if kind == "load" else None
    out = []
    for rep in range(lay.reps):
        k0 = rep * lay.vec
        g = access.register_coords(k0)
        fast = cg.and_(access.in_bounds(g, extra_last=lay.vec - 1), cg.valid(lay, k0),
                       cg.owner_mask(lay) if kind == "store" else None)
        if kind == "load":
            def vec_path(g=g):
                v = llvm.load(vt, access.address(g), alignment=align)
                return [llvm.extractelement(v, cg.c32(j)) for j in range(lay.vec)]

            def slow_path(k0=k0):
                return [_scalar_load(cg, access, k0 + j, pad) for j in range(lay.vec)]

            out += cg.if_(fast, vec_path, slow_path, types=[el] * lay.vec)
        else:
            def vec_store(g=g, k0=k0):
                v = llvm.mlir_poison(vt)
                for j in range(lay.vec):
                    v = llvm.insertelement(v, tile.regs[k0 + j], cg.c32(j))
                llvm.store(v, access.address(g), alignment=align)
                return []

            def slow_store(k0=k0):
                for j in range(lay.vec):
                    _scalar_store(cg, access, k0 + j, tile.regs[k0 + j])
                return []

            cg.if_(fast, vec_store, slow_store)
    return out if kind == "load" else None
