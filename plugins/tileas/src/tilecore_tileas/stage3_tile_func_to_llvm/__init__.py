"""Stage 3, ``convert-tile-func-to-llvm``: the kernel boundary (spec note 1).

Each ``nv_tileaa.func`` becomes an ``llvm.func`` inside the module's ``gpu.module``
(the module gets ``gpu.container_module``) with the bare-pointer kernel ABI: one
parameter per entry argument, in entry-signature order (pointers -> ``!llvm.ptr<1>``,
scalars unchanged). The kernel spec becomes ``nvvm.kernel``, ``nvvm.reqntid`` =
(32 x num_warps, 1, 1), ``nvvm.minctasm``, ``nvvm.cluster_dim`` + ``nvvm.blocksareclusters``
(only when the target supports clusters, sm_90+, and the cluster has more than one
CTA) and ``nvvm.maxnreg``; ``cute_nvgpu.grid_constant`` argument attributes become
``nvvm.grid_constant``. The body keeps its nv_tileas ops (stage 4 lowers them),
reading pointer arguments through unrealized casts. A kernel that returns values
is rejected.

Launch contract: grid = the tile-block grid (one CTA per tile block, ``gpu.block_id``
= ``get_tile_block_id``), block = (32 x num_warps, 1, 1) threads, no dynamic shared memory.
"""

from __future__ import annotations

from tilecore.conversion import ConversionStats, ConversionTarget
from tilecore.errors import LoweringError
from tilecore.mlir import ir
from tilecore.stages import Stage

from ..llvm_globals import array_initializer
from ..nv_tileaa.abi import nv_tileaa_rule
from ..rebuild import run_stage
from ..stage2_tileaa_to_tileas.kernel_spec import KernelSpec, kernel_spec_of

NAME = "convert-tile-func-to-llvm"
GPU_MODULE = "tileas_kernels"
CLUSTER_MIN_CC = 90
BLOCKS_ARE_CLUSTERS_MIN_PTX = 90  # PTX ISA 9.0


def legality(target, options) -> ConversionTarget:
    return ConversionTarget(NAME).add_illegal_op("nv_tileaa.func", "nv_tileaa_term.return", "nv_tileas.global")


def abi_type(t: ir.Type, converter=None) -> ir.Type:
    """Bare-pointer ABI: a pointer argument is the aligned pointer itself (the converter's ptr row);
    scalars keep their type."""
    if converter is not None:
        out = converter.convert_kernel_argument(t)
        if out is not None:
            return out
    return nv_tileaa_rule(t, None) if str(t).startswith("!nv_tileaa.ptr") else t


def _i32(v):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)


def kernel_attributes(spec: KernelSpec, target) -> dict:
    """The nvvm.* attributes of a kernel with ``spec`` on ``target`` (the spec's finalize_kernel_entry)."""
    attrs = {"nvvm.kernel": ir.UnitAttr.get(),
             "nvvm.reqntid": ir.DenseI32ArrayAttr.get([32 * spec.num_warps, 1, 1]),
             "nvvm.minctasm": _i32(spec.num_ctas)}
    product = spec.cluster_dim[0] * spec.cluster_dim[1] * spec.cluster_dim[2]
    cc = target.cc if target is not None else 80
    if cc >= CLUSTER_MIN_CC and product > 1:
        attrs["nvvm.cluster_dim"] = ir.DenseI32ArrayAttr.get(list(spec.cluster_dim))
        # .blocksareclusters exists from PTX 9.0; with an older PTX the cluster shape alone is required.
        if target is None or target.ptx_version >= BLOCKS_ARE_CLUSTERS_MIN_PTX:
            attrs["nvvm.blocksareclusters"] = ir.UnitAttr.get()
    if spec.max_registers:
        attrs["nvvm.maxnreg"] = _i32(spec.max_registers)
    return attrs


def _arg_attrs(func) -> ir.Attribute | None:
    if "arg_attrs" not in func.attributes:
        return None
    out = []
    for d in ir.ArrayAttr(func.attributes["arg_attrs"]):
        entries = {}
        for na in ir.DictAttr(d):
            name = na.name
            entries["nvvm.grid_constant" if name == "cute_nvgpu.grid_constant" else name] = \
                ir.UnitAttr.get() if name == "cute_nvgpu.grid_constant" else na.attr
        out.append(ir.DictAttr.get(entries))
    return ir.ArrayAttr.get(out)


def _gpu_module(module):
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            return op.operation
    with ir.InsertionPoint(module.body), ir.Location.unknown():
        gm = ir.Operation.create("gpu.module", results=[], operands=[],
                                 attributes={"sym_name": ir.StringAttr.get(GPU_MODULE)}, regions=1)
        gm.regions[0].blocks.append()
    return gm


def convert_func(func, gpu_module, target, converter=None) -> None:
    body = func.regions[0].blocks[0]
    term = list(body.operations)[-1]
    if term.operation.name == "nv_tileaa_term.return" and len(term.operands):
        raise LoweringError("a kernel entry must not return values (the kernel 'returns' "
                            f"{len(term.operands)} value(s))", term)
    spec = kernel_spec_of(func) or KernelSpec()
    arg_types = [a.type for a in body.arguments]
    abi = [abi_type(t, converter) for t in arg_types]
    fty = ir.Type.parse(f"!llvm.func<void ({', '.join(str(t) for t in abi)})>")
    attrs = {"sym_name": func.attributes["sym_name"], "function_type": ir.TypeAttr.get(fty),
             "tileas.kernel": ir.UnitAttr.get(), **kernel_attributes(spec, target)}
    aa = _arg_attrs(func)
    if aa is not None:
        attrs["arg_attrs"] = aa
    with ir.InsertionPoint(gpu_module.regions[0].blocks[0]), func.location:
        fn = ir.Operation.create("llvm.func", results=[], operands=[], attributes=attrs, regions=1)
    blk = fn.regions[0].blocks.append(*abi, arg_locs=[a.location for a in body.arguments])
    with ir.InsertionPoint(blk):
        for old, new, t in zip(body.arguments, blk.arguments, arg_types):
            if new.type != t:
                with old.location:
                    cast = ir.Operation.create("builtin.unrealized_conversion_cast", results=[t], operands=[new])
                old.replace_all_uses_with(cast.results[0])
            else:
                old.replace_all_uses_with(new)
    for op in list(body.operations):
        blk.append(op.operation)
    last = list(blk.operations)[-1]
    with ir.InsertionPoint(last), last.location:
        ir.Operation.create("llvm.return", results=[], operands=[])
    last.erase()
    func.erase()


def convert_global(g, gpu_module) -> None:
    """A module-level nv_tileas.global -> llvm.mlir.global in global memory (address space 1)."""
    arr, value = array_initializer(ir.DenseElementsAttr(g.attributes["value"]))
    attrs = {"sym_name": g.attributes["sym_name"], "global_type": ir.TypeAttr.get(arr),
             "linkage": ir.Attribute.parse("#llvm.linkage<internal>"), "value": value,
             "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)}
    # alignment 0 means "unspecified" (cuTile's print mutex of bytecode < 13.2 writes it); LLVM wants a power of 2
    if "alignment" in g.attributes and ir.IntegerAttr(g.attributes["alignment"]).value > 0:
        attrs["alignment"] = g.attributes["alignment"]
    if "constant" in g.attributes:
        attrs["constant"] = ir.UnitAttr.get()
    with ir.InsertionPoint.at_block_begin(gpu_module.regions[0].blocks[0]), g.location:
        ir.Operation.create("llvm.mlir.global", results=[], operands=[], attributes=attrs, regions=1)
    g.erase()


def run(ctx) -> ConversionStats:
    return run_stage(ctx, NAME, _run)  # other plugins' patterns for this stage go first


def _run(ctx) -> ConversionStats:
    module = ctx.module
    funcs = [op.operation for op in module.body.operations if op.operation.name == "nv_tileaa.func"]
    if funcs:
        module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
        gm = _gpu_module(module)
        for g in [op.operation for op in module.body.operations if op.operation.name == "nv_tileas.global"]:
            convert_global(g, gm)
        for f in funcs:
            convert_func(f, gm, ctx.target, ctx.type_converter)
    return ConversionStats(stage=NAME)


def stage() -> Stage:
    return Stage(NAME, after=("convert-tileaa-to-tileas",), legality=legality, run=run,
                 description="kernel ABI (bare pointers), nvvm.* kernel attributes, gpu.module")
