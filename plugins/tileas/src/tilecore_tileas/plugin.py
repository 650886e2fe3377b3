"""Hook implementations of the ``tileas`` plugin: stage declarations of stages 1-4."""

from tilecore.hookspecs import hookimpl


@hookimpl
def tilecore_register_stages():
    from .atoms.select import stage as select_atoms
    from .layout.assign import stage as assign_layouts
    from .stage1_cuda_tile_to_tileaa import stage as stage1
    from .stage2_tileaa_to_tileas import stage as stage2
    from .stage3_tile_func_to_llvm import stage as stage3
    from .stage4_tileas_to_llvm import stage as stage4

    return [stage1(), stage2(), assign_layouts(), select_atoms(), stage3(), stage4()]


@hookimpl
def tilecore_register_atoms(target):
    from .atoms import builtin_atoms

    return builtin_atoms(target)


@hookimpl
def tilecore_register_type_conversions(converter):
    from .nv_tileaa.abi import nv_tileaa_rule

    converter.add_conversion(nv_tileaa_rule, plugin="tileas")


@hookimpl
def tilecore_register_dialects():
    from .cuda_tile.dialect import dialect_defs
    from .nv_tileaa import dialect_defs as tileaa_defs
    from .nv_tileas import dialect_defs as tileas_defs

    return dialect_defs() + tileaa_defs() + tileas_defs()


@hookimpl
def tilecore_register_input_formats():
    from .bytecode.reader import CUDA_TILE_TEXT_FORMAT, TILEIR_FORMAT

    return [TILEIR_FORMAT, CUDA_TILE_TEXT_FORMAT]
