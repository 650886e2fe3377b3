"""Hook implementations of the ``sm100`` plugin: sm_100a+ targets and tcgen05 patterns.

It registers no MMA atoms yet: the tcgen05 (UMMA) and block-scaled atoms arrive with their lowering
(an atom listed by ``tilecore plugins`` always has one); until then sm_100a dots take cute's atoms."""

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
def tilecore_register_emulator_ops():
    from .emulate_tcgen05 import emulator_ops

    return [emulator_ops()]
