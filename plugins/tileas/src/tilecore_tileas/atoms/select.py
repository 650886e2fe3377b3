"""``tileas-select-atoms``: pick a copy atom per tiled memory op, a reduce atom per reduce / scan and an
MMA atom per dot (:mod:`.mma`; ``--option tileas.dot=fma`` keeps every dot on the CUDA cores) and a
``block_scaled_mma`` atom per block-scaled dot (none: the CUDA cores). A dot whose result meets row statistics
(reduced along N, rescaled by a row slice: :func:`row_dots`) gets the unit attribute ``rows_whole``: its
request asks for a warp grid of one column (:func:`tilecore.mma.grid_key`).

The choice is made from the atom registry (``ctx.atoms()``: every plugin's
``tilecore_register_atoms``) with :func:`tilecore.atoms.select_atom` on a request
describing the op, and recorded as ``atom = #nv_tileas.atom<"name">``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecore.conversion import ConversionStats
from tilecore.errors import at_op, ops_in
from tilecore.mlir import ir
from tilecore.mma import dot_smem_budget
from tilecore.stages import Stage

from ..entry_check import check_module
from ..layout import blocked
from ..nv_tileaa import DYNAMIC
from ..stage2_tileaa_to_tileas.kernel_spec import KernelSpec, kernel_spec_of
from . import default_atom
from .mma import MMA_INTERFACE, MmaRequest
from .reduce import ReduceRequest

NAME = "tileas-select-atoms"
DOT_OPTION = "tileas.dot"
DOT_PATHS = ("mma", "fma")  # the best admissible atom / always the CUDA cores
COPY_OPS = ("nv_tileas.tiled_load", "nv_tileas.tiled_store")


@dataclass
class CopyRequest:
    """The static facts of a tiled access: layout, tile box, memref strides, base alignment, element size."""

    layout: object
    tile_shape: tuple
    static_strides: list
    div_by: int
    elem_bytes: int
    weak: bool = True
    steps: tuple = ()  # traversal strides of a strided view (empty: it steps by the tile shape)

    def vectorizable(self) -> bool:
        lay = self.layout
        if not self.weak or lay.vec <= 1 or self.tile_shape[-1] % lay.vec or self.static_strides[-1] != 1:
            return False
        if (self.steps or self.tile_shape)[-1] % lay.vec:  # tile origins between vector groups: misaligned
            return False
        if self.elem_bytes == 0:  # sub-byte elements (4-bit floats, two per byte) are never vector-copied
            return False
        nbytes = lay.vec * self.elem_bytes
        if self.div_by % nbytes:
            return False
        return all(s != DYNAMIC and (s * self.elem_bytes) % nbytes == 0 for s in self.static_strides[:-1])


def _bytes(t) -> int:
    s = str(t)
    if s.startswith("!nv_tileaa.ptr"):
        return 8
    if isinstance(t, ir.FloatType):
        return t.width // 8
    return max(1, ir.IntegerType(t).width // 8)


def _div_by(value) -> int:
    owner = value.owner if isinstance(value, ir.OpResult) else None
    while owner is not None and owner.name in ("nv_tileas.assume", "nv_tileaa.assume"):
        if "div_by" in owner.attributes:
            return ir.IntegerAttr(owner.attributes["div_by"]).value
        owner = owner.operands[0].owner if isinstance(owner.operands[0], ir.OpResult) else None
    return 1


def copy_request(op, threads: int) -> CopyRequest | None:
    view = op.operands[0 if op.name == "nv_tileas.tiled_load" else 1]
    vop = view.owner
    memref = vop.operands[0]
    mk = memref.owner
    from ..stage4_tileas_to_llvm.memory import memref_type_parts, view_type_parts

    el, _shape, strides = memref_type_parts(memref.type)
    strides = [strides[d] for d in view_type_parts(view.type)[1]]  # in tile order (cuTile's order=)
    tile_t = op.results[0].type if op.name == "nv_tileas.tiled_load" else op.operands[0].type
    shape = tuple(ir.RankedTensorType(tile_t).shape) if str(tile_t).startswith("tensor<") else ()
    from ..stage4_tileas_to_llvm.memory import memory_order

    steps = tuple(ir.DenseI64ArrayAttr(op.attributes["traversal_strides"])) if "traversal_strides" in op.attributes \
        else ()
    return CopyRequest(blocked(shape, threads), shape, strides, _div_by(mk.operands[0]), _bytes(el),
                       memory_order(op)[0] is None, steps)


def signed(op, name: str) -> bool:
    """Whether a dot's ``signedness_lhs`` / ``signedness_rhs`` operand is signed (the default)."""
    return name not in op.attributes or "unsigned" not in str(op.attributes[name])


ROWS_WHOLE = "rows_whole"  # unit attribute of a dot whose result meets row statistics (:func:`row_dots`)


def mma_request(op, threads: int, target) -> MmaRequest:
    """The :class:`MmaRequest` of an ``nv_tileas.dot`` (2-D operands); ``rows_whole`` from the dot's
    ``rows_whole`` attribute (set by this stage, :func:`row_dots`)."""
    from ..stage4_tileas_to_llvm.narrow_float import element_name

    lhs, rhs, acc = op.operands[:3]
    m, k = ir.RankedTensorType(lhs.type).shape
    n = ir.RankedTensorType(rhs.type).shape[1]
    cc = target.cc if target is not None else 80
    return MmaRequest(m, n, k, element_name(lhs.type), element_name(rhs.type), element_name(acc.type),
                      signed(op, "signedness_lhs"), signed(op, "signedness_rhs"), threads=threads, cc=cc,
                      smem_budget=dot_smem_budget(cc), arch=target.name if target is not None else "",
                      rows_whole=ROWS_WHOLE in op.attributes)


# -- which dots' results meet row statistics ------------------------------------------------------------
ELEMENTWISE = ("arith", "math")


def _shape(value) -> tuple | None:
    return tuple(ir.RankedTensorType(value.type).shape) if str(value.type).startswith("tensor<") else None


def _carried(value) -> list:
    """The values a loop-carried ``value`` (an ``scf.for`` body argument or result) takes: the initial value and
    the body's yield."""
    if isinstance(value, ir.BlockArgument):
        loop = value.owner.owner
        if loop is None or loop.name != "scf.for" or value.arg_number == 0:
            return []
        i = value.arg_number - 1
        return [loop.operands[3 + i], list(value.owner.operations)[-1].operands[i]]
    op = value.owner
    if op.name != "scf.for":
        return []
    i = value.result_number
    return [op.operands[3 + i], list(op.regions[0].blocks[0].operations)[-1].operands[i]]


def row_statistic(value, rows, seen=None) -> bool:
    """Whether ``value`` (an ``(M,)`` / ``(M, 1)`` tile) is computed from a reduction ``rows(op)`` admits (through
    element-wise ops, reshapes, broadcasts and loop carries): a row statistic such as flash attention's running max /
    sum and its rescale factor ``exp(m_old - m_new)``."""
    seen = set() if seen is None else seen
    if value in seen or len(seen) > 256 or _shape(value) is None:
        return False
    seen.add(value)
    if isinstance(value, ir.BlockArgument):
        return any(row_statistic(v, rows, seen) for v in _carried(value))
    op = value.owner
    if rows(op):
        return True
    if op.name == "scf.for":
        return any(row_statistic(v, rows, seen) for v in _carried(value))
    if op.name in ("nv_tileas.reshape", "nv_tileas.broadcast") or op.name.split(".")[0] in ELEMENTWISE:
        return any(row_statistic(v, rows, seen) for v in op.operands)
    return False


def _row_broadcast(value, m: int, rows) -> bool:
    """Whether ``value`` is a row statistic of ``m`` rows broadcast over columns (``nv_tileas.broadcast`` of an
    ``(m, 1)`` tile)."""
    op = value.owner if isinstance(value, ir.OpResult) else None
    return (op is not None and op.name == "nv_tileas.broadcast" and _shape(op.operands[0]) == (m, 1)
            and row_statistic(op.operands[0], rows))


def row_dots(func, rows) -> list:
    """The 2-D dots of ``func`` whose results meet row statistics (``rows(op)``: whether a reduction ``op`` gives
    a row slice of an MMA fragment, stage 4's ``row_slice.reduce_admits``). Values joined through the accumulator
    (a dot's result and its accumulator operand), element-wise ops of the same shape and loop carries (``scf.for``
    / ``scf.if`` results, yields, body arguments, initial values) form groups; a group that is reduced along N
    (into a row slice) or combined element-wise with a broadcast row statistic (:func:`row_statistic`) wants its
    rows whole in a warp (warpgroup): its dots get ``rows_whole``. In flash attention that is S = Q K^T (row max /
    sum) and the output accumulator of P V (rescaled by ``exp(m_old - m_new)``, divided by the row sum), so both
    take the same one-column grid and the row statistics need neither a cross-warp combine nor a conversion
    between grids."""
    parent: dict = {}

    def find(v):
        parent.setdefault(v, v)
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    def union(a, b):
        if _shape(a) is not None and _shape(a) == _shape(b):
            parent[find(a)] = find(b)

    dots, marked = [], []
    for op in ops_in(func):
        name = op.name
        if name == "nv_tileas.dot" and len(_shape(op.operands[0]) or ()) == 2:
            dots.append(op)
            union(op.results[0], op.operands[2])
        elif rows(op):
            marked.append(op.operands[0])
        elif name.split(".")[0] in ELEMENTWISE and len(op.results) == 1 and len(_shape(op.results[0]) or ()) == 2:
            res = op.results[0]
            for v in op.operands:
                union(res, v)
            if any(_row_broadcast(v, _shape(res)[0], rows) for v in op.operands):
                marked.append(res)
        elif name == "scf.for":
            body = op.regions[0].blocks[0]
            for i, res in enumerate(op.results):
                for v in (op.operands[3 + i], body.arguments[1 + i], list(body.operations)[-1].operands[i]):
                    union(res, v)
        elif name == "scf.if":
            for region in op.regions:
                if len(region.blocks):
                    term = list(region.blocks[0].operations)[-1]
                    for res, v in zip(op.results, term.operands):
                        union(res, v)
    roots = {find(v) for v in marked}
    return [d for d in dots if find(d.results[0]) in roots]


def block_scaled_request(op, threads: int, target) -> MmaRequest:
    """The :class:`MmaRequest` of an ``nv_tileas.block_scaled_mma`` (cuda_tile mmaf_scaled): the dot's, plus
    the scale factors' element type and the K elements each covers."""
    from dataclasses import replace

    from ..stage4_tileas_to_llvm.narrow_float import element_name

    req = mma_request(op, threads, target)
    blocks = ir.RankedTensorType(op.operands[3].type).shape[1]
    return replace(req, scale=element_name(op.operands[3].type), scale_block=req.k // blocks if blocks else 0)


def dot_path(ctx) -> str:
    """``--option tileas.dot``: ``mma`` (default) or ``fma``; anything else is an error."""
    from tilecore.errors import TilecoreError

    path = (ctx.options.extra if ctx.options is not None else {}).get(DOT_OPTION, "mma")
    if path not in DOT_PATHS:
        raise TilecoreError(f"--option {DOT_OPTION}={path}: expected one of {', '.join(DOT_PATHS)}")
    return path


def select_mma(ctx, op, threads: int, atoms: dict, path: str):
    """The MMA atom of a dot: the best admissible one, or the CUDA-core atom with ``tileas.dot=fma``."""
    req = mma_request(op, threads, ctx.target)
    if path == "fma":
        atoms = {n: a for n, a in atoms.items() if a.data.get("cuda_cores")}
    return default_atom(atoms, "mma", ctx.target, req, interface=MMA_INTERFACE)


def run(ctx) -> ConversionStats:
    with ctx.module.context, ir.Location.unknown():
        check_module(ctx.module)  # outside-written tile IR is checked before anything changes it
        return _run(ctx)


def _run(ctx) -> ConversionStats:
    stats = ConversionStats(stage=NAME)
    atoms = ctx.atoms() if ctx.plugins else {}
    path = dot_path(ctx)
    for top in ctx.module.body.operations:
        top = top.operation
        if top.name != "nv_tileaa.func":
            continue
        spec = kernel_spec_of(top) or KernelSpec()
        threads = 32 * spec.num_warps

        def visit(op, threads=threads):
            atom = None
            if op.name in COPY_OPS:
                atom = default_atom(atoms, "copy", ctx.target, copy_request(op, threads))
            elif op.name in ("nv_tileas.reduce", "nv_tileas.scan"):
                t = op.operands[0].type
                shape = tuple(ir.RankedTensorType(t).shape)
                widths = {_bytes(ir.RankedTensorType(o.type).element_type) for o in op.operands}
                req = ReduceRequest(op.name.split(".")[1], blocked(shape, threads),
                                    ir.IntegerAttr(op.attributes["dim"]).value,
                                    widths.pop() if len(widths) == 1 else 0, threads, len(op.operands))
                atom = default_atom(atoms, "reduce", ctx.target, req)
            elif op.name == "nv_tileas.dot" and len(ir.RankedTensorType(op.operands[0].type).shape) == 2:
                atom = select_mma(ctx, op, threads, atoms, path)
            elif op.name == "nv_tileas.block_scaled_mma" and path == "mma":  # none admits: the CUDA cores
                atom = default_atom(atoms, "block_scaled_mma", ctx.target,
                                    block_scaled_request(op, threads, ctx.target), interface=MMA_INTERFACE)
            if atom is not None:
                op.attributes["atom"] = ir.Attribute.parse(f'#nv_tileas.atom<"{atom.name}">')
                stats.fired[f"tileas:{atom.name}"] = stats.fired.get(f"tileas:{atom.name}", 0) + 1

        from ..stage4_tileas_to_llvm.row_slice import reduce_admits

        for dot in row_dots(top, lambda op: reduce_admits(ctx, op)):
            dot.attributes[ROWS_WHOLE] = ir.UnitAttr.get()
        for op in ops_in(top):
            with at_op(op, NAME):
                visit(op)
    return stats


def stage() -> Stage:
    return Stage(NAME, after=("tileas-assign-layouts",), before=("convert-tile-func-to-llvm",), run=run,
                 description="copy / reduce / MMA atoms from the atom registry")
