"""Stage 4, ``convert-tileas-to-llvm``: nv_tileas bodies -> llvm / arith / math / gpu / cf.

The kernel body (an ``llvm.func`` made by stage 3) is rebuilt into registers: each
tile becomes one scalar per register of its blocked layout (:mod:`.values`,
:mod:`tilecore_tileas.layout`), element-wise ops repeat per register
(:mod:`.elementwise`; a dot's result stays in its MMA atom's fragment layout through element-wise ops
and loops, :mod:`.fragments`), memory goes through the copy atoms (:mod:`.memory`), layout
changes through shared memory (:mod:`.exchange`, :mod:`.shape_ops`), reductions and
scans through the reduce atoms, and ``scf`` carries flattened registers
(:mod:`.control`); ``scf`` is then lowered to ``cf``. Output: llvm + arith + math + cf
+ gpu ops inside the gpu.module, which stage 6 finishes. Registers of 8-bit float tiles hold
their codes as i8 (:mod:`.narrow_float`), of tf32 tiles f32 values (:mod:`.tf32`); dot and
block-scaled MMA are in :mod:`.dot`.
"""

from __future__ import annotations

from tilecore.conversion import ConversionStats, ConversionTarget, run_native_pipeline
from tilecore.errors import LoweringError
from tilecore.launch_attrs import DYNAMIC_SHARED_ATTR
from tilecore.mlir import dialects, ir
from tilecore.mma import STATIC_SHARED_BYTES, max_shared_bytes
from tilecore.stages import Stage

from ..layout.row_slice import RowSlice
from ..nv_tileaa.abi import nv_tileaa_rule
from ..rebuild import Rebuilder, attrs_of, run_stage
from . import clusters, control, dot, elementwise, memory, misc, narrow_float, row_slice, shape_ops, tf32, tma_store
from .codegen import SMEM_SYMBOL, CodeGen
from .fragments import FRAGMENTS, blocked_operands
from .tensor_maps import KernelTensorMaps

NAME = "convert-tileas-to-llvm"


def legality(target, options) -> ConversionTarget:
    return ConversionTarget(NAME).add_illegal_dialect("nv_tileas", "nv_tileas_term", "nv_tileaa", "nv_tileaa_term",
                                                      "scf")


def convert_type(t):
    """Scalar element types keep their type (8-bit floats: i8 codes, tf32: f32 values); pointers take the
    converter's nv_tileaa row."""
    return nv_tileaa_rule(t, None) if str(t).startswith("!nv_tileaa.ptr") else tf32.storage(narrow_float.storage(t))


def populator() -> dict:
    nt = "nv_tileas"
    table = {
        "arith.constant": elementwise.constant,
        "scf.for": control.for_op, "scf.if": control.if_op, "scf.yield": control.yield_op,
        "scf.while": control.while_op, "scf.condition": control.condition_op,
        f"{nt}.make_token": misc.token, f"{nt}.join_tokens": misc.token, f"{nt}.assume": misc.assume,
        f"{nt}.make_memref": memory.make_memref, f"{nt}.view": memory.view,
        f"{nt}.tiled_load": memory.tiled_load, f"{nt}.tiled_store": tma_store.tiled_store,
        f"{nt}.tiled_atomic_rmw": memory.tiled_atomic_rmw, f"{nt}.gather_load": memory.gather_load,
        f"{nt}.scatter_store": memory.scatter_store, f"{nt}.load": memory.load, f"{nt}.store": memory.store,
        f"{nt}.atomic_rmw": memory.atomic_rmw, f"{nt}.atomic_cas": memory.atomic_cas, f"{nt}.offset": memory.offset,
        f"{nt}.broadcast": shape_ops.broadcast, f"{nt}.reshape": shape_ops.reshape,
        f"{nt}.permute": shape_ops.permute, f"{nt}.extract_slice": shape_ops.extract_slice,
        f"{nt}.insert_slice": shape_ops.insert_slice, f"{nt}.cat": shape_ops.cat, f"{nt}.iota": shape_ops.iota,
        f"{nt}.reduce": row_slice.reduce_op(misc.reduce_like("reduce")), f"{nt}.scan": misc.reduce_like("scan"),
        f"{nt}.print": misc.print_op, f"{nt}.assert": misc.assert_op, f"{nt}.dot": dot.dot,
        f"{nt}.block_scaled_mma": dot.block_scaled_mma,
        "builtin.unrealized_conversion_cast": misc.cast,
        f"{nt}.ptr_to_int": elementwise.ptr_cast("ptr_to_int"), f"{nt}.int_to_ptr": elementwise.ptr_cast("int_to_ptr"),
        f"{nt}.ptr_to_ptr": elementwise.ptr_cast("ptr_to_ptr"), f"{nt}.get_global": misc.get_global,
        f"{nt}.pack": shape_ops.pack, f"{nt}.unpack": shape_ops.pack,
        f"{nt}.memory_fence": misc.memory_fence, f"{nt}.gdc_wait": misc.gdc("wait"), f"{nt}.gdc_launch_dependents": misc.gdc("launch_dependents"),
    }
    # Handlers that take tiles in any layout (MMA fragments included); the rest see blocked tiles.
    any_layout = ("arith.constant", "scf.for", "scf.if", "scf.yield", "scf.while", "scf.condition", f"{nt}.dot",
                  "builtin.unrealized_conversion_cast", f"{nt}.tiled_store", f"{nt}.reshape",  # (fragments by TMA)
                  f"{nt}.reduce")  # (row_slice.reduce_op: blocked operands unless it reduces a fragment's rows)
    # Handlers that take row slices of fragments (layout.row_slice) too; the others see them blocked.
    row_slices = ("arith.constant", "scf.for", "scf.if", "scf.yield", "scf.while", "scf.condition",
                  "builtin.unrealized_conversion_cast", f"{nt}.reshape", f"{nt}.reduce", f"{nt}.broadcast")
    out = {}
    for name, h in table.items():
        keep = (FRAGMENTS if name in any_layout else ()) + ((RowSlice,) if name in row_slices else ())
        out[name] = h if len(keep) == len(FRAGMENTS) + 1 else blocked_operands(h, keep)
    return out


def _kernel_threads(fn) -> int:
    if "nvvm.reqntid" in fn.attributes:
        return int(list(ir.DenseI32ArrayAttr(fn.attributes["nvvm.reqntid"]))[0])
    return 128


def lower_function(fn, gpu_module, ctx) -> dict:
    """Rebuild the body of one llvm.func kernel; returns the fired-handler counts."""
    kernels = [o for o in gpu_module.regions[0].blocks[0].operations
               if o.operation.name == "llvm.func" and "nvvm.kernel" in o.operation.attributes]
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    symbol = SMEM_SYMBOL if len(kernels) <= 1 else f"{SMEM_SYMBOL}_{name}"
    old = fn.regions[0].blocks[0]
    narrow_float.check_types(old, ctx.target)
    with ir.InsertionPoint(fn), fn.location:
        new_fn = ir.Operation.create("llvm.func", results=[], operands=[],
                                     attributes=attrs_of(fn), regions=1)
    new_block = new_fn.regions[0].blocks.append(*[a.type for a in old.arguments],
                                                arg_locs=[a.location for a in old.arguments])
    cg = CodeGen(new_block, _kernel_threads(fn), ctx.target, ctx.options, ctx.atoms() if ctx.plugins else {},
                 gpu_module, symbol)
    # The element-wise bank is the fallback: every op no handler claims is recreated per register.
    rb = Rebuilder([("tileas", populator())], convert_type, stage=NAME,
                   strict_dialects=("nv_tileas", "nv_tileas_term", "nv_tileaa", "nv_tileaa_term"),
                   fallback=elementwise.elementwise)
    rb.data.update(cg=cg, div_by={}, tensor_maps=KernelTensorMaps(new_block))
    from .pairs import NO_TMEM_DOT, NOT_A_PAIR, PAIRS_ATTR, decide
    from .pipeline import single_dot_stages

    why = decide(cg, fn, old)  # CTA pairs: B halves of the paired dots (cg.cta_pairs), or why not
    cluster = clusters.has_cluster(fn)
    if cluster and why:  # not paired: a tile block is the whole cluster
        clusters.tile_blocks_are_clusters(old)
    single_dot_stages(cg, rb, old)  # block-scaled dots whose A / B come by TMA (their loads lower to stages)
    try:
        rb.block_into(old, new_block)
        cg.finish(new_fn)
        rb.data["tensor_maps"].finish(new_fn)
        limit = max_shared_bytes(ctx.target.cc)
        if cg.smem_bytes > limit:
            raise LoweringError(f"kernel '{name}' needs {cg.smem_bytes} bytes of shared memory; a CTA on "
                                f"{ctx.target.name} has at most {limit}", fn)
    except Exception:
        new_fn.erase()
        raise
    del new_fn.attributes["tileas.kernel"]
    if cluster:
        new_fn.attributes[clusters.TILE_BLOCK_ATTR] = ir.StringAttr.get("cluster" if why else "cta")
        if why:
            clusters.exit_other_ranks(new_fn, new_block)
    if why not in (NOT_A_PAIR, NO_TMEM_DOT):  # a tcgen05 kernel of 2-CTA clusters says whether its CTAs pair
        new_fn.attributes[PAIRS_ATTR] = ir.StringAttr.get("cta_group::2" if not why else f"off: {why}")
    fn.erase()
    dynamic = cg.smem_bytes > STATIC_SHARED_BYTES
    if dynamic:
        new_fn.attributes[DYNAMIC_SHARED_ATTR] = ir.IntegerAttr.get(cg.i32, cg.smem_bytes)
    with ir.InsertionPoint.at_block_begin(gpu_module.regions[0].blocks[0]), ir.Location.unknown():
        _smem_global(cg.smem_symbol, max(16, cg.smem_bytes), cg.smem_align, dynamic)
    return rb.fired


def _smem_global(symbol: str, nbytes: int, align: int = 16, dynamic: bool = False):
    """The kernel's scratch buffer: a static shared array, or (``dynamic``: over PTX's 48 KiB of static shared
    memory) an ``.extern .shared`` one whose bytes the launch provides (``tilecore.launch_attrs``)."""
    if dynamic:
        dialects.llvm.GlobalOp(ir.Type.parse("!llvm.array<0 x i8>"), symbol,
                               ir.Attribute.parse("#llvm.linkage<external>"), addr_space=3, alignment=align)
        return
    ty = ir.Type.parse(f"!llvm.array<{nbytes} x i8>")
    g = dialects.llvm.GlobalOp(ty, symbol, ir.Attribute.parse("#llvm.linkage<internal>"),
                               addr_space=3, alignment=align)
    g.regions[0].blocks.append()
    with ir.InsertionPoint(g.regions[0].blocks[0]):
        u = dialects.llvm.mlir_undef(ty)
        dialects.llvm.return_(arg=u)


def run(ctx) -> ConversionStats:
    return run_stage(ctx, NAME, _run)  # other plugins' patterns for this stage go first


def _run(ctx) -> ConversionStats:
    stats = ConversionStats(stage=NAME)
    module = ctx.module
    for top in module.body.operations:
        if top.operation.name != "gpu.module":
            continue
        for fn in list(top.regions[0].blocks[0].operations):
            if fn.operation.name == "llvm.func" and "tileas.kernel" in fn.operation.attributes:
                fired = lower_function(fn.operation, top.operation, ctx)
                for k, v in fired.items():
                    stats.fired[k] = stats.fired.get(k, 0) + v
    run_native_pipeline(module.operation, SCF_TO_CF, module.context)
    return stats


# convert-scf-to-cf without pattern rollback (MLIR's one-shot dialect conversion). With rollback, the conversion
# logs each block split for undo: its memory and time grow with branches (scf.if) x ops, 10-20 bytes each (TileGym's
# MLA decode, TD = 512: 1584 scf.if among 61494 ops took 1.55 GB and 2.7 s; 4639 among 101890 ran out of memory
# under 6 GB). Without: 0.53 s and no growth, the same PTX (the SCF lowering patterns match and rewrite, or leave the
# op as it is: there is nothing to roll back).
SCF_TO_CF = "gpu.module(convert-scf-to-cf{allow-pattern-rollback=false})"


def stage() -> Stage:
    return Stage(NAME, after=("convert-tile-func-to-llvm",), legality=legality, run=run,
                 description="nv_tileas -> llvm / nvvm / gpu (registers, copy and reduce atoms, smem exchange)")
