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
    from . import barrier, index_queries, libdevice_math, shuffles, subgroup_reduce

    return [*index_queries.patterns(), *barrier.patterns(), *shuffles.patterns(), *subgroup_reduce.patterns(),
            *libdevice_math.patterns()]


@hookimpl
def tilecore_register_native_passes(stage, target, options):
    if stage != STAGE:
        return []
    # Upstream lowerings for what the Python patterns leave (run after them).
    return [NativePass("gpu.module(convert-gpu-to-nvvm{index-bitwidth=%d})" % options.index_bitwidth),
            NativePass("gpu.module(convert-to-llvm)")]
