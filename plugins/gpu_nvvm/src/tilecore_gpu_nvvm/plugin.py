"""Hook implementations of the ``gpu_nvvm`` plugin."""

from tilecore.conversion import NativePass
from tilecore.hookspecs import hookimpl

from .stage import STAGE

# Upstream passes run before the gpu lowering only when an op they rewrite is left (NativePass.needs):
# a 100k-op module without them would pay ~80 ms (scf) and ~200-400 ms (memref views) for nothing.
NATIVE_PREPARE = (
    ("convert-scf-to-cf", ("scf.for", "scf.if", "scf.while", "scf.execute_region", "scf.index_switch",
                           "scf.parallel", "scf.forall")),
    ("expand-strided-metadata", ("memref.subview", "memref.expand_shape", "memref.collapse_shape")),
)


@hookimpl
def tilecore_register_targets():
    from .targets import base_targets

    return base_targets()


@hookimpl
def tilecore_register_stages():
    from .stage import stage

    return [stage()]


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage != STAGE:
        return []
    from . import index_queries, libdevice_math, subgroup_reduce

    # Index queries, gpu.barrier and gpu.shuffle come from upstream's convert-gpu-to-nvvm (below),
    # whose output is the spec's form; the Python patterns cover what it lacks or does differently.
    return [*index_queries.patterns(), *subgroup_reduce.patterns(), *libdevice_math.patterns()]


@hookimpl
def tilecore_register_native_passes(stage, target, options):
    if stage != STAGE:
        return []
    # Upstream lowerings for what the Python patterns leave (run after them): structured control
    # flow to blocks and memref views to their strided metadata, only where such ops are left
    # (hand-written device functions; NATIVE_PREPARE); index queries with ranges, barrier
    # (nvvm.barrier0), shuffles (nvvm.shfl.sync), assert, printf, dynamic shared memory, gpu.func /
    # func.func / calls / returns (memref arguments as their descriptor fields); then everything
    # else to LLVM.
    return [*(NativePass(f"gpu.module({p})", needs=ops) for p, ops in NATIVE_PREPARE),
            NativePass("gpu.module(convert-gpu-to-nvvm{index-bitwidth=%d})" % options.index_bitwidth),
            NativePass("gpu.module(convert-to-llvm)")]
