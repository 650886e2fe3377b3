"""Initializers of ``llvm.mlir.global`` arrays built from tile constants."""

from __future__ import annotations

from tilecore.mlir import ir


def array_initializer(dense) -> tuple[ir.Type, ir.Attribute]:
    """``(!llvm.array<N x E>, value)`` for a global holding ``dense`` (a DenseElementsAttr of any rank) in
    row-major order: the value is ``dense`` flattened to ``tensor<N x E>``. (LLVM's translation of an array
    global asserts when the initializer keeps a multi-dimensional shape: ``dense<[[1, 2], [3, 4]]> :
    tensor<2x2xi32>`` for ``!llvm.array<4 x i32>``.)"""
    ty = ir.RankedTensorType(dense.type)
    n = 1
    for d in ty.shape:
        n *= d
    arr = ir.Type.parse(f"!llvm.array<{n} x {ty.element_type}>")
    if len(ty.shape) == 1:
        return arr, dense
    text = str(dense)
    body = text[len("dense<"):text.rindex("> : ")]
    if body.startswith("["):
        body = "[" + body.replace("[", "").replace("]", "") + "]"
    return arr, ir.Attribute.parse(f"dense<{body}> : tensor<{n}x{ty.element_type}>")
