"""Hook implementations of the ``cute`` plugin: dialects, stage 5, its first patterns and copy atoms."""

from tilecore.atoms import Atom
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
    from .fences import patterns

    return patterns()


@hookimpl
def tilecore_register_atoms(target):
    return [
        Atom("copy.universal", "copy", min_cc=80, description="scalar ld/st, one element per access"),
        Atom("copy.sm80.cp_async", "copy", min_cc=80, priority=1, description="cp.async global -> shared"),
        Atom("mma.sm80.mma_sync", "mma", min_cc=80, description="mma.sync.aligned m16n8k16"),
        Atom("mma.sm90.wgmma", "mma", min_cc=90, priority=1,
             admits=lambda req: getattr(req, "arch_specific", True), description="wgmma.mma_async (sm_90a)"),
    ]
