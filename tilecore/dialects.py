"""Dialect definitions contributed by plugins (IRDL), loaded into every context.

A plugin returns :class:`DialectDef` objects from ``tilecore_register_dialects``;
:func:`make_context` builds an MLIR context with all of them loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import PluginError
from .mlir import dialect, ir


@dataclass
class DialectDef:
    """An IRDL dialect: ``name`` and the ``irdl.dialect`` module text that defines it.

    ``allow_unregistered``: the dialect needs ops of an unregistered companion
    namespace (IRDL cannot declare terminators, so a dialect with regions keeps its
    terminators there); contexts then allow unregistered dialects.
    """

    name: str
    irdl: str
    plugin: str = ""
    allow_unregistered: bool = False
    companions: tuple[str, ...] = ()  # the unregistered namespaces it uses (see _no_python_module)


# Namespaces of the IRDL dialects loaded so far: their ops parse in generic form only (MLIR's parser fails on
# their custom form without a diagnostic; :mod:`tilecore.inputs` locates such an op itself).
IRDL_NAMESPACES: set[str] = set()


def load_dialects(ctx, defs: list[DialectDef], on_error=None) -> None:
    """Parse and load each IRDL definition into ``ctx``.

    A definition that does not load raises :class:`PluginError`, or, with
    ``on_error(defn, reason)``, is reported there and skipped (the other
    dialects still load).
    """
    load = _irdl_loader()
    for d in defs:
        try:
            with ctx, ir.Location.unknown():
                mod = ir.Module.parse(d.irdl)
                load(mod)
            IRDL_NAMESPACES.add(d.name)
            for namespace in (d.name, *d.companions):
                _no_python_module(namespace)
        except Exception as e:  # noqa: BLE001
            diags = getattr(e, "error_diagnostics", None)
            reason = (f"IRDL definition of dialect '{d.name}' does not load: "
                      f"{diags[0].message if diags else str(e).splitlines()[0]}")
            if on_error is None:
                raise PluginError(f"plugin '{d.plugin}': {reason}") from None
            on_error(d, reason)


def _irdl_loader():
    """``irdl.load_dialects``, from the bindings' native IRDL module when it is there.

    ``mlir.dialects.irdl`` would import its generated op and enum classes first (~2 ms of every
    start-up) only to re-export this one function.
    """
    try:
        from mlir._mlir_libs._mlirDialectsIRDL import load_dialects
    except ImportError:
        load_dialects = dialect("irdl").load_dialects
    return load_dialects


def _no_python_module(namespace: str) -> None:
    """Tell the bindings that dialect ``namespace`` has no Python module.

    Without this, every ``Value.type`` / op access of an IRDL dialect retries
    ``import mlir.dialects.<namespace>`` (a failed import is not cached), which
    costs about 0.2 ms each time.
    """
    import sys
    import types

    sys.modules.setdefault(f"mlir.dialects.{namespace}", types.ModuleType(f"mlir.dialects.{namespace}"))


def make_context(defs: list[DialectDef] = (), on_error=None):
    """A fresh MLIR context with every upstream dialect and the given IRDL dialects loaded."""
    ctx = ir.Context()
    # One thread: the machine is small, and serialize forks (a forked child must not
    # inherit a thread pool it cannot use).
    ctx.enable_multithreading(False)
    if defs:
        ctx.allow_unregistered_dialects = any(d.allow_unregistered for d in defs)
        load_dialects(ctx, list(defs), on_error)
    return ctx
