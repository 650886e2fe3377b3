"""Hook implementations of the ``sm100`` plugin: sm_100a+ targets, the ``sm100`` dialect, tcgen05 patterns
and the tensor-memory MMA atoms (:mod:`.mma_sm100`, sm_100a / sm_103a)."""

from tilecore.hookspecs import hookimpl


@hookimpl
def tilecore_register_targets():
    from .targets import sm100_targets

    return sm100_targets()


@hookimpl
def tilecore_register_dialects():
    from .dialect import dialects

    return dialects()


@hookimpl
def tilecore_register_patterns(stage, target, options):
    if stage != "convert-cute-to-llvm":
        return []
    from .tcgen05 import patterns

    return patterns()


@hookimpl
def tilecore_register_atoms(target):
    # Every tcgen05 atom has min_cc 100 (mma_sm100._atom): none is admissible on an older target, whose
    # compiles need not import them (~1.5 ms of a cold sm_80 / sm_90a compile).
    if target is not None and target.cc < 100:
        return []
    from .mma_sm100 import atoms

    return atoms()


@hookimpl
def tilecore_register_emulator_ops():
    from .emulate_tcgen05 import emulator_ops

    return [emulator_ops()]
