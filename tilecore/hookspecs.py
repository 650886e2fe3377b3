"""Hook specifications of the ``tilecore`` pluggy project.

A plugin is a module with ``@hookimpl`` functions, published through the entry
point group ``tilecore.plugins``. Every ``register_*`` hook returns a list (or
``None``); the plugin manager validates each item and records which plugin
contributed it.
"""

from __future__ import annotations

import pluggy

PROJECT = "tilecore"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def tilecore_register_dialects():
    """Return :class:`tilecore.dialects.DialectDef` objects (IRDL source text).

    The core loads every contributed dialect into every context it creates.
    """


@hookspec
def tilecore_register_targets():
    """Return :class:`tilecore.targets.Target` objects (an arch plugin adds its SMs)."""


@hookspec
def tilecore_register_stages():
    """Return :class:`tilecore.stages.Stage` declarations (name, after/before, legality)."""


@hookspec
def tilecore_register_patterns(stage, target, options):
    """Return :class:`tilecore.conversion.Pattern` objects for ``stage`` (a stage name).

    ``target`` is the :class:`~tilecore.targets.Target` being compiled for and
    ``options`` the :class:`~tilecore.options.CompileOptions`; a plugin may
    return different patterns per target.
    """


@hookspec
def tilecore_register_native_passes(stage, target, options):
    """Return :class:`tilecore.conversion.NativePass` objects run after the Python patterns of ``stage``."""


@hookspec
def tilecore_register_type_conversions(converter):
    """Extend the shared LLVM :class:`~tilecore.typeconv.TypeConverter` (call ``converter.add_conversion``)."""


@hookspec
def tilecore_register_atoms(target):
    """Return :class:`tilecore.atoms.Atom` objects (copy / MMA / reduce atoms) admissible on ``target``."""


@hookspec
def tilecore_register_input_formats():
    """Return :class:`tilecore.inputs.InputFormat` readers keyed by magic bytes / suffix."""


@hookspec
def tilecore_register_emulator_ops():
    """Return :class:`tilecore.emulate.optable.EmulatorOps` objects: rows for the CPU emulator's op table
    (nvvm op name -> rewrite), the runtime symbols those rewrites call (with their Python handlers) and
    per-CTA state (see the :mod:`tilecore.emulate.optable` docstring)."""
