"""Attributes a lowered kernel (its ``llvm.func``) carries for whoever launches it.

- ``tilecore.dynamic_shared_bytes`` (i32): the dynamic shared memory a launch must give each CTA. A kernel
  whose scratch buffer is larger than PTX's 48 KiB of static shared memory (deep K-loop pipelines) declares
  it ``.extern .shared`` instead; launchers pass at least this many bytes (and on a GPU raise the
  function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` to it).
- ``tilecore.tensor_maps`` (string): the tensor-map recipes of :mod:`tilecore.tensormaps`.
- ``tilecore.tile_block`` (string, on a kernel with a cluster shape ``nvvm.cluster_dim``): ``"cluster"`` — a
  tile block is a whole cluster (the grid counts clusters: CTAs launched = grid x cluster shape, the CTAs of
  rank != 0 leave at entry), or ``"cta"`` — a tile block per CTA (CTA pairs; the grid a whole number of
  clusters). A kernel without it counts CTAs.
"""

from __future__ import annotations

DYNAMIC_SHARED_ATTR = "tilecore.dynamic_shared_bytes"
TILE_BLOCK_ATTR = "tilecore.tile_block"


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


def cluster_shape(func) -> tuple[int, ...]:
    """The CTAs per cluster (x, y, z) of kernel ``func`` (an ``llvm.func`` op): its ``nvvm.cluster_dim`` (PTX
    ``.reqnctapercluster``) padded with 1s, (1, 1, 1) without one."""
    from .mlir import ir

    if "nvvm.cluster_dim" not in func.attributes:
        return (1, 1, 1)
    dims = tuple(int(v) for v in ir.DenseI32ArrayAttr(func.attributes["nvvm.cluster_dim"]))
    return dims + (1,) * (3 - len(dims))


def block_ctas(func) -> tuple[int, ...]:
    """The CTAs of one tile block of kernel ``func`` (an ``llvm.func`` op): its cluster shape when a tile block is
    a cluster (``tilecore.tile_block = "cluster"``), else (1, 1, 1)."""
    from .mlir import ir

    attrs = func.attributes
    if TILE_BLOCK_ATTR not in attrs or ir.StringAttr(attrs[TILE_BLOCK_ATTR]).value != "cluster":
        return (1, 1, 1)
    return cluster_shape(func)


def cta_grid(module, symbol: str, grid) -> tuple[int, ...]:
    """The CTAs to launch for ``grid`` (1 to 3 sizes) tile blocks of kernel ``symbol`` of ``module``."""
    per = block_ctas(kernel_functions(module)[symbol])
    return tuple(g * c for g, c in zip(grid, per))
