"""Hook implementations of the ``tileas`` plugin: stage declarations of stages 1-4."""

from tilecore.conversion import ConversionTarget
from tilecore.hookspecs import hookimpl
from tilecore.stages import Stage


def _no_dialect(stage: str, *dialects: str):
    def legality(target, options) -> ConversionTarget:
        return ConversionTarget(stage).add_illegal_dialect(*dialects)

    return legality


@hookimpl
def tilecore_register_stages():
    return [
        Stage("convert-cuda-tile-to-tileaa", legality=_no_dialect("convert-cuda-tile-to-tileaa", "cuda_tile"),
              description="cuda_tile -> nv_tileaa (+ arith / scf)"),
        Stage("convert-tileaa-to-tileas", after=("convert-cuda-tile-to-tileaa",),
              description="nv_tileaa -> nv_tileas (kernel spec, witnesses)"),
        Stage("convert-tile-func-to-llvm", after=("convert-tileaa-to-tileas",),
              description="kernel ABI, nvvm.* kernel attributes"),
        Stage("convert-tileas-to-llvm", after=("convert-tile-func-to-llvm",),
              legality=_no_dialect("convert-tileas-to-llvm", "nv_tileas"),
              description="nv_tileas -> llvm / nvvm / gpu / nvgpu"),
    ]


@hookimpl
def tilecore_register_dialects():
    from .cuda_tile.dialect import dialect_defs

    return dialect_defs()


@hookimpl
def tilecore_register_input_formats():
    from .bytecode.reader import TILEIR_FORMAT

    return [TILEIR_FORMAT]
