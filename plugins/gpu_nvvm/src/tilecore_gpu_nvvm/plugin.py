"""Hook implementations of the ``gpu_nvvm`` plugin."""

from tilecore.conversion import NativePass
from tilecore.hookspecs import hookimpl

from .stage import STAGE


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
    # Upstream lowerings for what the Python patterns leave (run after them): index queries with
    # ranges, barrier (nvvm.barrier0), shuffles (nvvm.shfl.sync), assert, printf, dynamic shared
    # memory, gpu.func / gpu.return; then everything else to LLVM.
    return [NativePass("gpu.module(convert-gpu-to-nvvm{index-bitwidth=%d})" % options.index_bitwidth),
            NativePass("gpu.module(convert-to-llvm)")]
