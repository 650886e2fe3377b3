"""Attributes a lowered kernel (its ``llvm.func``) carries for whoever launches it.

- ``tilecore.dynamic_shared_bytes`` (i32): the dynamic shared memory a launch must give each CTA. A kernel
  whose scratch buffer is larger than PTX's 48 KiB of static shared memory (deep K-loop pipelines) declares
  it ``.extern .shared`` instead; launchers pass at least this many bytes (and on a GPU raise the
  function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` to it).
- ``tilecore.tensor_maps`` (string): the tensor-map recipes of :mod:`tilecore.tensormaps`.
"""

from __future__ import annotations

DYNAMIC_SHARED_ATTR = "tilecore.dynamic_shared_bytes"


def kernel_functions(module) -> dict:
    """Symbol -> ``llvm.func`` op of every kernel (``nvvm.kernel``) in ``module`` (an ``ir.Module``), at any depth."""
    from .mlir import ir

    out = {}

    def walk(block):
        for op in block.operations:
            o = op.operation
            if o.name == "llvm.func":  # a function body holds no functions: not walked (thousands of ops)
                if "nvvm.kernel" in o.attributes:
                    out[ir.StringAttr(o.attributes["sym_name"]).value] = o
                continue
            for r in o.regions:
                for b in r.blocks:
                    walk(b)

    walk(module.body)
    return out


def dynamic_shared_bytes(func) -> int:
    """The dynamic shared memory kernel ``func`` (an ``llvm.func`` op) needs per CTA (0 when none)."""
    from .mlir import ir

    if DYNAMIC_SHARED_ATTR not in func.attributes:
        return 0
    return ir.IntegerAttr(func.attributes[DYNAMIC_SHARED_ATTR]).value
