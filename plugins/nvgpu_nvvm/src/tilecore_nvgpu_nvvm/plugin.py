"""Hook implementations of the ``nvgpu_nvvm`` plugin (patterns for stage 6)."""

from tilecore.hookspecs import hookimpl

STAGE = "convert-nvgpu-and-gpu-to-nvvm"


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage != STAGE:
        return []
    from . import async_copy

    return async_copy.patterns()
