"""Hook implementations of the ``cute`` plugin: dialects, stage 5 and its patterns, the sm_80 MMA atoms."""

from tilecore.conversion import ConversionTarget
from tilecore.hookspecs import hookimpl
from tilecore.stages import Stage

STAGE = "convert-cute-to-llvm"


def legality(target, options) -> ConversionTarget:
    """No cute / cute_nvgpu op survives stage 5."""
    return ConversionTarget(STAGE).add_illegal_dialect("cute", "cute_nvgpu")


@hookimpl
def tilecore_register_dialects():
    from .dialect import dialects

    return dialects()


@hookimpl
def tilecore_register_stages():
    return [Stage(STAGE, after=("convert-tileas-to-llvm",), before=("convert-nvgpu-and-gpu-to-nvvm",),
                  legality=legality, description="cute / cute_nvgpu atoms and descriptors -> llvm / nvvm / nvgpu")]


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage != STAGE:
        return []
    from . import fences, mma_lowering, tma_lowering

    return fences.patterns() + mma_lowering.patterns() + tma_lowering.patterns()


@hookimpl
def tilecore_register_atoms(target):
    from . import copy_sm80, copy_sm90, mma_sm80, mma_sm90

    return mma_sm80.atoms() + mma_sm90.atoms() + copy_sm80.atoms() + copy_sm90.atoms()
