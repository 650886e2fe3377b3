"""cuTile kernels exported once, compiled once per architecture and run in the CPU emulator.

The regression tests share this: ``KernelSet(KERNELS)`` over a ``name -> (kernel, parameters)``
table (parameters as in :mod:`cutile_kernels`), ``arr`` for the ABI of an array argument.
"""

from __future__ import annotations

import os
import tempfile

import cutile_kernels as ck
import numpy as np

from tilecore import emulate
from tilecore.compiler import compile_file

BLOCK = (128, 1, 1)


class KernelSet:
    """The kernels of ``table``, each exported on first use and compiled once per architecture (with
    ``options``, a :class:`tilecore.options.CompileOptions`, when given)."""

    def __init__(self, table: dict, prefix: str = "tileas-kernels-", options=None):
        self.table = table
        self.options = options
        self._dir = tempfile.mkdtemp(prefix=prefix)
        self._compiled: dict = {}

    def compiled(self, name: str, sm: str):
        """The lowered module of kernel ``name`` for ``sm``."""
        if (name, sm) not in self._compiled:
            path = os.path.join(self._dir, f"{name}.tileirbc")
            if not os.path.exists(path):
                kernel, params = self.table[name]
                ck.export_spec(kernel, params, name, path)
            self._compiled[name, sm] = compile_file(path, sm, self.options).module
        return self._compiled[name, sm]

    def run(self, name: str, sm: str, grid, args) -> None:
        """Launch ``name`` compiled for ``sm`` on ``grid`` x its block (:func:`block_of`); array arguments are
        updated in place."""
        module = self.compiled(name, sm)
        emulate.launch(module, name, grid, block_of(module, name), args)


def block_of(module, name: str) -> tuple:
    """The block kernel ``name`` of a lowered ``module`` is launched with: its ``nvvm.reqntid`` (8 warps for large
    accumulators on sm_90+), else :data:`BLOCK`."""
    from tilecore.emulate.hostmodule import kernel_reqntid
    from tilecore.launch_attrs import kernel_functions

    return kernel_reqntid(kernel_functions(module)[name]) or BLOCK


def arr(a: np.ndarray) -> list:
    """An array parameter in the kernel ABI: pointer, shape, strides (in elements, i32)."""
    return [a, *[np.int32(d) for d in a.shape], *[np.int32(s // a.itemsize) for s in a.strides]]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
