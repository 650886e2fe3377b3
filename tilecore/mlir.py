"""The one import of the MLIR Python bindings.

Everything in tilecore and its plugins imports MLIR through this module, so the
binding package (``xtc-mlir-python-bindings``) can be swapped in one place.
Dialect modules are imported lazily through :func:`dialect` to keep start-up
cheap (``tilecore --help`` never needs MLIR at all).
"""

from __future__ import annotations

import importlib

from mlir import ir, passmanager, rewrite  # noqa: F401  (re-exported)
from mlir.passmanager import PassManager  # noqa: F401

__all__ = ["ir", "passmanager", "rewrite", "PassManager", "dialect", "dialects"]


def dialect(name: str):
    """Return the Python module of an upstream MLIR dialect (``arith``, ``llvm``, ``nvvm`` ...)."""
    return importlib.import_module(f"mlir.dialects.{name}")


class _Dialects:
    """Attribute access to dialect modules: ``dialects.arith``, ``dialects.nvvm``."""

    def __getattr__(self, name: str):
        mod = dialect(name)
        setattr(self, name, mod)
        return mod


dialects = _Dialects()


def execution_engine():
    """Return the ``mlir.execution_engine`` module (imported on demand)."""
    return importlib.import_module("mlir.execution_engine")


def site_packages_tool(*parts: str) -> str:
    """Path of a tool shipped inside the MLIR / LLVM wheels (mlir-opt, FileCheck ...)."""
    import os

    import mlir

    root = os.path.dirname(os.path.dirname(mlir.__file__))
    return os.path.join(root, *parts)
