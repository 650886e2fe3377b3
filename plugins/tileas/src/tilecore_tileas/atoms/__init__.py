"""The tileas atoms: copy atoms (global memory access) and reduce atoms, in the core registry.

``tilecore_register_atoms(target)`` returns :func:`builtin_atoms`; a plugin can add an
atom of the same kind with a higher priority, or one that ``overrides`` a built-in by
name. ``tileas-select-atoms`` (:mod:`.select`) picks one per memory / reduce / scan op
(:func:`tilecore.atoms.select_atom` over a request describing the op) and records it as
``atom = #nv_tileas.atom<"name">``; stage 4 calls the named atom's ``lower``.

Only atoms whose ``data["interface"]`` is :data:`INTERFACE` take part (other plugins
register copy / MMA atoms for the CuTe pipeline with other calling conventions); a
third-party atom sets it to plug into tileas.

Copy atoms (``lower(cg, "load" | "store", access, tile)``):
    ``copy.global.scalar`` - one masked scalar access per element (always admissible);
    ``copy.global.vec`` - one aligned vector access per group of ``vec`` contiguous
    elements with an in-bounds fast path (admissible when the access is contiguous and
    the base / stride ``div_by`` hints make each group ``vec * bytes`` aligned).
Reduce atoms (``lower(cg, op, rb, sources, kind)`` with kind ``reduce`` or ``scan``):
    ``reduce.in_thread`` - every element of the tile is in the thread (tiny tiles);
    ``reduce.warp_shuffle`` - rows of the last axis spread over lanes of one warp
    (butterfly ``shfl.xor``), reduce only;
    ``reduce.smem_tree`` - through shared memory (any axis, any layout).
MMA atoms have their own interface (:data:`.mma.MMA_INTERFACE`, :mod:`.mma`): the built-in
``mma.cuda_core.fma``; the tensor-core atoms come from the ``cute`` plugin (or a third party).
"""

from __future__ import annotations

from tilecore.atoms import Atom, select_atom

from . import copy, reduce
from .mma import MMA_INTERFACE, fma_atom  # noqa: F401 (MMA_INTERFACE re-exported)

INTERFACE = "tileas/1"


def builtin_atoms(target=None) -> list[Atom]:
    atoms = [
        Atom("copy.global.scalar", "copy", lower=copy.lower_scalar, priority=0,
             description="masked scalar ld.global / st.global per element"),
        Atom("copy.global.vec", "copy", lower=copy.lower_vector, priority=10, admits=copy.vector_admits,
             description="aligned vector ld.global / st.global per group of vec contiguous elements"),
        Atom("reduce.smem_tree", "reduce", lower=reduce.lower_smem, priority=0,
             description="shared-memory exchange, serial combine per result element"),
        Atom("reduce.warp_shuffle", "reduce", lower=reduce.lower_shuffle, priority=10,
             admits=reduce.shuffle_admits, description="in-thread partials + shfl.xor butterfly within a warp"),
        Atom("scan.warp_shuffle", "reduce", lower=reduce.lower_scan_shuffle, priority=10,
             admits=reduce.scan_shuffle_admits,
             description="in-thread scan + shfl.up / shfl.down scan of the thread totals within a warp"),
        Atom("reduce.in_thread", "reduce", lower=reduce.lower_in_thread, priority=20,
             admits=reduce.in_thread_admits, description="the whole tile is in every thread"),
    ]
    for a in atoms:
        a.data["interface"] = INTERFACE
    return atoms + [fma_atom()]


def default_atom(atoms: dict, kind: str, target, request=None, interface: str = INTERFACE):
    """The atom :func:`select_atom` picks among those of ``interface`` (falls back to the built-ins when the
    registry has none)."""
    reg = {n: a for n, a in (atoms or {}).items() if a.data.get("interface") == interface}
    reg = reg or {a.name: a for a in builtin_atoms(target) if a.data.get("interface") == interface}
    return select_atom(reg, kind, target, request)
