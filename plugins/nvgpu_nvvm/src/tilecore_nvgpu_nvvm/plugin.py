"""Hook implementations of the ``nvgpu_nvvm`` plugin: the nvgpu half of stage 6.

One pattern class per row of spec note 3's nvgpu table (``tilecore plugins`` lists
them); every pattern checks its family's SM floor (``floors.FLOORS``) first.
"""

from tilecore.hookspecs import hookimpl

STAGE = "convert-nvgpu-and-gpu-to-nvvm"

# The pattern modules, in table order.
MODULES = ("signature", "carriers", "mbarrier", "tma", "warpgroup", "matrix", "async_copy", "packed")


@hookimpl
def tilecore_register_dialects():
    from .dialect import dialects

    return dialects()


@hookimpl
def tilecore_register_type_conversions(converter):
    from .types import convert_nvgpu_type

    converter.add_conversion(convert_nvgpu_type, plugin="nvgpu_nvvm")


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage != STAGE:
        return []
    import importlib

    out = []
    for name in MODULES:
        out.extend(importlib.import_module(f"{__package__}.{name}").patterns())
    from .nvvm_floors import patterns as nvvm_floor_checks

    return out + nvvm_floor_checks(target)
