"""The one import of the MLIR Python bindings.

Everything in tilecore and its plugins imports MLIR through this module, so the
binding package (``xtc-mlir-python-bindings``) can be swapped in one place.
Dialect modules are imported lazily through :func:`dialect` to keep start-up
cheap (``tilecore --help`` never needs MLIR at all).
"""

from __future__ import annotations

import importlib
import sys

# A cold ``tilecore compile`` may be loading the native libraries on another thread (tilecore.preload).
_preload = sys.modules.get(f"{__package__}.preload")
if _preload is not None:
    _preload.wait()

# ``mlir.ir`` imports numpy, when it can, only to register four element-attribute builders; that
# import is ~70 ms of a ~0.5 s compile that never needs numpy. Import the bindings with numpy
# hidden and register the same builders with numpy imported on first use.
_HIDE_NUMPY = "numpy" not in sys.modules
if _HIDE_NUMPY:
    sys.modules["numpy"] = None  # makes ``import numpy`` raise ImportError
try:
    from mlir import ir, passmanager, rewrite  # noqa: F401  (re-exported)
    from mlir.passmanager import PassManager  # noqa: F401
finally:
    if _HIDE_NUMPY and sys.modules.get("numpy", 0) is None:
        del sys.modules["numpy"]

# attribute kind -> (numpy dtype, element type)
_ELEMENTS_BUILDERS = {
    "F64ElementsAttr": ("float64", lambda ctx: ir.F64Type.get(context=ctx)),
    "I32ElementsAttr": ("int32", lambda ctx: ir.IntegerType.get_signless(32, context=ctx)),
    "I64ElementsAttr": ("int64", lambda ctx: ir.IntegerType.get_signless(64, context=ctx)),
    "IndexElementsAttr": ("int64", lambda ctx: ir.IndexType.get(context=ctx)),
}


def _elements_builder(dtype: str, element_type):
    def build(values, context):
        import numpy as np

        return ir.DenseElementsAttr.get(np.array(values, dtype=getattr(np, dtype)), type=element_type(context),
                                        context=context)

    return build


if _HIDE_NUMPY:
    for _kind, (_dtype, _element_type) in _ELEMENTS_BUILDERS.items():
        ir.register_attribute_builder(_kind, replace=True)(_elements_builder(_dtype, _element_type))

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


def site_packages_tool(*parts: str) -> str:
    """Path of a tool shipped inside the MLIR / LLVM wheels (mlir-opt, FileCheck ...)."""
    import os

    import mlir

    root = os.path.dirname(os.path.dirname(mlir.__file__))
    return os.path.join(root, *parts)
