"""Stage 1's type converter: the public cuda_tile types -> nv_tileaa equivalents.

Three functor pairs, as the spec names them: TileType -> builtin tensor (0-d tile ->
its element), PointerType -> ``!nv_tileaa.ptr<pointee, 1>``, TokenType ->
``!nv_tileaa.mem_token``; a tensor_view becomes ``!nv_tileaa.memref``. Partition /
strided views have no runtime value of their own: stage 1 folds them into the ops
that use them, so converting one is an error.
"""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import ir

from ..cuda_tile import types as T
from ..nv_tileaa import GLOBAL_ADDRSPACE


def _i64s(v) -> str:
    return "array<i64" + (": " + ", ".join(map(str, v)) if v else "") + ">"


def element_text(e) -> str:
    if isinstance(e, T.Ptr):
        return f"!nv_tileaa.ptr<{element_text(e.pointee)}, {GLOBAL_ADDRSPACE} : i32>"
    if e.text == "!cuda_tile.token":
        return "!nv_tileaa.mem_token"
    return e.text


def convert_text(desc) -> str:
    """The nv_tileaa type text of a cuda_tile type descriptor."""
    if isinstance(desc, T.Tile):
        el = element_text(desc.element)
        if not desc.shape:
            return el
        return f"tensor<{'x'.join(map(str, desc.shape))}x{el}>"
    if isinstance(desc, T.Ptr):
        return element_text(desc)
    if isinstance(desc, T.TensorView):
        return (f"!nv_tileaa.memref<{element_text(desc.element)}, {_i64s(desc.shape)}, {_i64s(desc.strides)}, "
                f"{GLOBAL_ADDRSPACE} : i32>")
    if isinstance(desc, T.VIEWS):
        raise LoweringError(f"a {type(desc).__name__} cannot be passed as a value (block argument or result)")
    return element_text(desc)


class TypeConverter:
    """Caches conversions by type text (IRDL types expose parameters only through text)."""

    def __init__(self):
        self.cache: dict[str, ir.Type] = {}

    def __call__(self, ty: ir.Type) -> ir.Type:
        key = str(ty)
        out = self.cache.get(key)
        if out is None:
            out = ty if not key.startswith("!cuda_tile.") else ir.Type.parse(convert_text(T.parse_type(key)))
            self.cache[key] = out
        return out
