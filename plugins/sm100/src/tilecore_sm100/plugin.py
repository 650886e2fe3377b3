"""Hook implementations of the ``sm100`` plugin: sm_100a+ targets, tcgen05 patterns and atoms."""

from tilecore.atoms import Atom
from tilecore.hookspecs import hookimpl


@hookimpl
def tilecore_register_targets():
    from .targets import sm100_targets

    return sm100_targets()


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage != "convert-cute-to-llvm":
        return []
    from .tcgen05 import patterns

    return patterns()


@hookimpl
def tilecore_register_atoms(target):
    return [
        Atom("mma.sm100.umma", "mma", min_cc=100, priority=2, description="tcgen05.mma (UMMA), accumulator in TMEM"),
        Atom("mma.sm100.block_scaled", "mma", min_cc=100, description="tcgen05.mma block-scaled (mxf8 / mxf4)"),
    ]
