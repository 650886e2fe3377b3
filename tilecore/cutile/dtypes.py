"""Element types of cuTile kernel parameters: short spelling, cuTile name, numpy name, bit width.

The short spelling (``f32``, ``bf16``, ``f8e4m3`` ...) is the one of signature strings such as
``"f32[2]i64"`` (:func:`tilecore.cutile.specialize.from_spelling`); the cuTile name is the attribute
of ``cuda.tile`` (``ct.float32``); the numpy name is ``numpy.dtype(...).name`` of an array holding
the type (bfloat16 and the 8-bit floats only with ``ml_dtypes``; 4-bit floats have no numpy array).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TilecoreError


@dataclass(frozen=True)
class ElementType:
    """One element type: ``spelling`` (``f32``), ``cutile`` (``float32``), ``numpy`` name or None, ``bits``."""

    spelling: str
    cutile: str
    numpy: str | None
    bits: int

    def ct(self):
        """The ``cuda.tile`` dtype object (imports cuda.tile)."""
        import cuda.tile as ct

        return getattr(ct, self.cutile)


#             spelling   cuTile name        numpy name         bits
_ROWS = [
    ("bool", "bool_", "bool", 8),
    ("i8", "int8", "int8", 8), ("i16", "int16", "int16", 16), ("i32", "int32", "int32", 32),
    ("i64", "int64", "int64", 64),
    ("u8", "uint8", "uint8", 8), ("u16", "uint16", "uint16", 16), ("u32", "uint32", "uint32", 32),
    ("u64", "uint64", "uint64", 64),
    ("f16", "float16", "float16", 16), ("bf16", "bfloat16", "bfloat16", 16), ("f32", "float32", "float32", 32),
    ("f64", "float64", "float64", 64),
    ("f8e4m3", "float8_e4m3fn", "float8_e4m3fn", 8), ("f8e5m2", "float8_e5m2", "float8_e5m2", 8),
    ("f8e8m0", "float8_e8m0fnu", "float8_e8m0fnu", 8),
    ("f4", "float4_e2m1fn", None, 4),
]
BY_SPELLING = {r[0]: ElementType(*r) for r in _ROWS}
BY_CUTILE = {t.cutile: t for t in BY_SPELLING.values()}
BY_NUMPY = {t.numpy: t for t in BY_SPELLING.values() if t.numpy}


def from_spelling(text: str) -> ElementType:
    """``"f32"`` -> its row; an unknown spelling is a :class:`TilecoreError` listing the known ones."""
    try:
        return BY_SPELLING[text]
    except KeyError:
        raise TilecoreError(f"unknown element type '{text}' (known: {', '.join(BY_SPELLING)})") from None


def from_numpy(dtype) -> ElementType:
    """The row of a numpy dtype (``numpy.dtype('float16')`` -> f16)."""
    import numpy as np

    name = np.dtype(dtype).name
    if name not in BY_NUMPY:
        raise TilecoreError(f"arrays of numpy dtype '{name}' cannot be cuTile kernel arguments "
                            f"(supported: {', '.join(BY_NUMPY)})")
    return BY_NUMPY[name]


def from_cutile(dtype) -> ElementType:
    """The row of a ``cuda.tile`` dtype object (``ct.float32``)."""
    name = getattr(dtype, "name", str(dtype))
    if name not in BY_CUTILE:
        raise TilecoreError(f"cuTile dtype '{name}' is not supported by tilecore.cutile")
    return BY_CUTILE[name]
