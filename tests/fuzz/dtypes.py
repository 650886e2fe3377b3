"""The dtype table of the generator.

One row per element type: its cuTile name, how numpy stores it (bf16 and 8-bit floats as raw
bits), how the numpy model computes with it, its kind, width, the lowest SM that has it, and the
range random inputs are drawn from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    key: str  # our spelling, also used in generated names
    ct: str  # attribute of cuda.tile
    storage: type  # numpy dtype of arrays handed to the emulator
    compute: type  # numpy dtype the model computes in (bf16 / f8: float32 holding exact values)
    kind: str  # "f" float, "i" signed, "u" unsigned, "b" bool
    bits: int
    min_sm: int = 80
    lo: float = -2.0  # input range
    hi: float = 2.0
    rtol: float = 0.0  # relative error of one inexact float op, about one ulp (0: exact kinds)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def encoded(self) -> bool:
        """Stored as raw bits (numpy has no such type)."""
        return self.storage is not self.compute


#   key       ct name           storage     compute     kind bits min_sm  lo      hi     rtol
_ROWS = [
    ("f16", "float16", np.float16, np.float16, "f", 16, 80, -2.0, 2.0, 1e-3),
    ("bf16", "bfloat16", np.uint16, np.float32, "f", 16, 80, -2.0, 2.0, 8e-3),
    ("f32", "float32", np.float32, np.float32, "f", 32, 80, -2.0, 2.0, 2e-6),
    ("f64", "float64", np.float64, np.float64, "f", 64, 80, -2.0, 2.0, 1e-13),
    ("f8e4m3", "float8_e4m3fn", np.uint8, np.float32, "f", 8, 89, -2.0, 2.0, 1.3e-1),
    ("f8e5m2", "float8_e5m2", np.uint8, np.float32, "f", 8, 89, -2.0, 2.0, 2.6e-1),
    # block-scaled mma only (ct.mma_scaled operands and scales): a code per byte in the model, e2m1 packed
    # two per byte for the kernel (runner.kernel_args)
    ("f8e8m0", "float8_e8m0fnu", np.uint8, np.float32, "f", 8, 100, 2.0**-127, 2.0**127, 0.0),
    ("f4e2m1", "float4_e2m1fn", np.uint8, np.float32, "f", 4, 100, -6.0, 6.0, 0.0),
    ("i8", "int8", np.int8, np.int8, "i", 8, 80, -128, 127, 0.0),
    ("i16", "int16", np.int16, np.int16, "i", 16, 80, -32768, 32767, 0.0),
    ("i32", "int32", np.int32, np.int32, "i", 32, 80, -(2**31), 2**31 - 1, 0.0),
    ("i64", "int64", np.int64, np.int64, "i", 64, 80, -(2**63), 2**63 - 1, 0.0),
    ("u8", "uint8", np.uint8, np.uint8, "u", 8, 80, 0, 255, 0.0),
    ("u32", "uint32", np.uint32, np.uint32, "u", 32, 80, 0, 2**32 - 1, 0.0),
    # runtime scalar parameters of the ``idioms`` template only (not in INTS: the other draws stay as they were)
    ("u16", "uint16", np.uint16, np.uint16, "u", 16, 80, 0, 2**16 - 1, 0.0),
    ("u64", "uint64", np.uint64, np.uint64, "u", 64, 80, 0, 2**64 - 1, 0.0),
    ("bool", "bool_", np.bool_, np.bool_, "b", 1, 80, 0, 1, 0.0),
]
DTYPES: dict[str, DType] = {r[0]: DType(*r) for r in _ROWS}

FLOATS = ["f16", "bf16", "f32", "f64"]  # computable float types (8-bit floats: load / cast / mma only)
F8 = ["f8e4m3", "f8e5m2"]
INTS = ["i8", "i16", "i32", "i64", "u8", "u32"]

# element types admissible as a runtime scalar parameter (bf16 / 8-bit float scalars are not drawn:
# the launch ABI of a 16-bit-pattern scalar is not what this test is about)
SCALAR_TYPES = ["f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u32", "bool"]


def get(key: str) -> DType:
    return DTYPES[key]
