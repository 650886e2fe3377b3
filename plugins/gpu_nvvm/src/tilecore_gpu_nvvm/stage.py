"""Stage 6, ``convert-nvgpu-and-gpu-to-nvvm``: its declaration and strict legality target."""

from tilecore.conversion import ConversionTarget
from tilecore.stages import Stage

STAGE = "convert-nvgpu-and-gpu-to-nvvm"


def legality(target, options) -> ConversionTarget:
    """Only llvm.*, nvvm.* and the gpu.module container may survive stage 6."""
    return (ConversionTarget(STAGE, unknown_legal=False)
            .add_legal_dialect("llvm", "nvvm")
            .add_legal_op("builtin.module", "gpu.module"))


def stage() -> Stage:
    return Stage(STAGE, after=("convert-cute-to-llvm", "convert-tileas-to-llvm"), before=("attach-nvvm-target",),
                 legality=legality, description="gpu + nvgpu -> nvvm / llvm (strict: only gpu.module stays)")
