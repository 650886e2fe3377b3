"""The cuda_tile type model: Python descriptors, their MLIR spelling and back.

The reader builds descriptors from the type table and spells them as MLIR type
text; the verifier parses MLIR types back into descriptors (IRDL types expose
their parameters only through their text).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

DYNAMIC = -(2**63)  # a dynamic size or stride (MLIR's ShapedType::kDynamic)

# Scalar element types by bytecode tag, spelled as MLIR types.
SCALARS: dict[int, str] = {
    0x00: "i1", 0x01: "i8", 0x02: "i16", 0x03: "i32", 0x04: "i64", 0x05: "f16", 0x06: "bf16",
    0x07: "f32", 0x08: "tf32", 0x09: "f64", 0x0A: "f8E4M3FN", 0x0B: "f8E5M2",
    0x12: "f8E8M0FNU", 0x13: "f4E2M1FN", 0x16: "i4", 130: "!cuda_tile.fnv8e5m3fnu",
}
SCALAR_SINCE = {0x12: (13, 2), 0x13: (13, 3), 0x16: (13, 3), 130: (13, 4)}
INT_WIDTHS = {"i1": 1, "i4": 4, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
FLOAT_WIDTHS = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 19, "f64": 64, "f8E4M3FN": 8, "f8E5M2": 8,
                "f8E8M0FNU": 8, "f4E2M1FN": 4}
TOKEN = "!cuda_tile.token"


def _i64s(v) -> str:
    return "array<i64" + (": " + ", ".join(map(str, v)) if v else "") + ">"


def _i32s(v) -> str:
    return "array<i32" + (": " + ", ".join(map(str, v)) if v else "") + ">"


@dataclass(frozen=True)
class Scalar:
    name: str  # i32, f16, !cuda_tile.token ...

    @property
    def text(self) -> str:
        return self.name

    def is_int(self) -> bool:
        return self.name in INT_WIDTHS

    def is_float(self) -> bool:
        return self.name in FLOAT_WIDTHS or self.name == "!cuda_tile.fnv8e5m3fnu"


@dataclass(frozen=True)
class Ptr:
    pointee: object

    @property
    def text(self) -> str:
        return f"!cuda_tile.ptr<{self.pointee.text}>"


@dataclass(frozen=True)
class Tile:
    shape: tuple[int, ...]
    element: object  # Scalar or Ptr

    @property
    def text(self) -> str:
        return f"!cuda_tile.tile<{_i64s(self.shape)}, {self.element.text}>"


@dataclass(frozen=True)
class TensorView:
    element: Scalar
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def text(self) -> str:
        return f"!cuda_tile.tensor_view<{self.element.text}, {_i64s(self.shape)}, {_i64s(self.strides)}>"


@dataclass(frozen=True)
class PartitionView:
    tile_shape: tuple[int, ...]
    tensor_view: TensorView
    dim_map: tuple[int, ...]
    padding: str  # a padding_value spelling or "none"

    @property
    def text(self) -> str:
        return (f"!cuda_tile.partition_view<{_i32s(self.tile_shape)}, {self.tensor_view.text}, "
                f"{_i32s(self.dim_map)}, \"{self.padding}\">")

    @property
    def index_rank(self) -> int:
        return len(self.tensor_view.shape)


@dataclass(frozen=True)
class StridedView:
    tile_shape: tuple[int, ...]
    traversal_strides: tuple[int, ...]
    tensor_view: TensorView
    dim_map: tuple[int, ...]
    padding: str

    @property
    def text(self) -> str:
        return (f"!cuda_tile.strided_view<{_i32s(self.tile_shape)}, {_i32s(self.traversal_strides)}, "
                f"{self.tensor_view.text}, {_i32s(self.dim_map)}, \"{self.padding}\">")

    @property
    def index_rank(self) -> int:
        return len(self.tensor_view.shape)


@dataclass(frozen=True)
class GatherScatterView:
    tile_shape: tuple[int, ...]
    tensor_view: TensorView
    sparse_dim: int
    padding: str

    @property
    def text(self) -> str:
        return (f"!cuda_tile.gather_scatter_view<{_i32s(self.tile_shape)}, {self.tensor_view.text}, "
                f"{self.sparse_dim} : i64, \"{self.padding}\">")

    @property
    def index_rank(self) -> int:
        return len(self.tensor_view.shape)


@dataclass(frozen=True)
class Func:
    inputs: tuple
    results: tuple

    @property
    def text(self) -> str:
        return f"({', '.join(t.text for t in self.inputs)}) -> ({', '.join(t.text for t in self.results)})"


VIEWS = (PartitionView, StridedView, GatherScatterView)


# ---------------------------------------------------------------------------------------------
# MLIR text -> descriptor (for the verifier)

def _split_top(s: str) -> list[str]:
    """Split ``s`` at top-level commas (outside <> () [] {} and quotes)."""
    out, depth, cur, quote = [], 0, [], False
    for ch in s:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "<([{":
            depth += 1
        elif not quote and ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def _ints(text: str) -> tuple[int, ...]:
    m = re.fullmatch(r"array<i(?:32|64)(?::\s*(.*))?>", text.strip())
    if not m:
        raise ValueError(text)
    return tuple(int(x) for x in m.group(1).split(",")) if m.group(1) else ()


@functools.lru_cache(maxsize=4096)
def parse_type(text: str):
    """Descriptor of a type spelled in MLIR text (``str(ir.Type)``).

    Remembered per text (the descriptors are frozen): a kernel spells the same few types on most of its
    ops, and a batch worker reads the same ones in every job.
    """
    text = text.strip()
    m = re.fullmatch(r"!cuda_tile\.(\w+)(?:<(.*)>)?", text, re.S)
    if not m:
        return Scalar(text)
    name, body = m.group(1), m.group(2)
    if name in ("token", "fnv8e5m3fnu"):
        return Scalar(text)
    p = _split_top(body or "")
    if name == "tile":
        return Tile(_ints(p[0]), parse_type(p[1]))
    if name == "ptr":
        return Ptr(parse_type(p[0]))
    if name == "tensor_view":
        return TensorView(parse_type(p[0]), _ints(p[1]), _ints(p[2]))
    if name == "partition_view":
        return PartitionView(_ints(p[0]), parse_type(p[1]), _ints(p[2]), p[3].strip('"'))
    if name == "strided_view":
        return StridedView(_ints(p[0]), _ints(p[1]), parse_type(p[2]), _ints(p[3]), p[4].strip('"'))
    if name == "gather_scatter_view":
        return GatherScatterView(_ints(p[0]), parse_type(p[1]), int(p[2].split(":")[0]), p[3].strip('"'))
    return Scalar(text)
