"""Tensor maps a kernel takes as trailing parameters: the launch contract of tilecore's TMA kernels.

A kernel whose K loops read their tiles by TMA (``cp.async.bulk.tensor``, sm_90+) needs a 128-byte
``CUtensorMap`` per tensor it reads that way. NVIDIA documents neither the map's bits nor a way to make one
from PTX; ``tileiras`` has the CUDA driver build them at launch through an undocumented cubin attribute
(``EICOMPAT_ATTR_INST_TENSORMAP_V1``: its cubins hold the maps in the parameter bank past the declared
parameters). tilecore keeps the cuTile parameters as they are and appends one parameter per map,
``.param .align 64 .b8 name[128]`` (an LLVM ``byval`` ``nvvm.grid_constant`` pointer), which the launcher
fills: with ``cuTensorMapEncodeTiled`` on a GPU, with :func:`tilecore.emulate.tensormap.encode_tiled` in
the emulator. What to encode is the kernel's **recipe** (:class:`TensorMapRecipe`), stored as JSON in the
kernel's ``tilecore.tensor_maps`` attribute, printed in ``tilecore compile``'s summary and written by
``--emit metadata``: every field is a constant or a kernel parameter (times a constant), so a launcher
that has the cuTile parameters has everything.

The recipe of one map (``CUtensorMapEncodeTiled``'s arguments, dimensions innermost first):

| field | meaning |
|---|---|
| ``param`` | the index of the map's parameter (after the cuTile parameters) |
| ``tensor`` | the parameter holding the tensor's base address (``globalAddress``) |
| ``data_type`` | ``CUtensorMapDataType`` (6 FLOAT16, 9 BFLOAT16, 7 FLOAT32, 0 UINT8, 3 INT32 ...) |
| ``global_dim`` | per dimension: an int, or ``{"param": i}`` (that parameter's value; below 1 counts as 1) |
| ``global_strides`` | bytes, per dimension but the innermost: an int, or ``{"param": i, "scale": s}`` (value x s) |
| ``"div": d`` | (in a parameter entry) the value is divided by ``d``: a map over the bytes of an e2m1 tensor (two elements a byte: its innermost extent and its strides, in elements, halved); an optional map whose values ``d`` does not divide is not read (:func:`unaligned`) |
| ``box_dim`` / ``element_strides`` | ints |
| ``swizzle`` | ``CUtensorMapSwizzle``: 0 none, 1 32B, 2 64B, 3 128B |
| ``interleave`` / ``l2_promotion`` / ``oob_fill`` | ``CUtensorMapInterleave`` (0) / ``CUtensorMapL2promotion`` / ``CUtensorMapFloatOOBfill`` (0: zeros) |
| ``optional`` | true: the kernel checks at run time that the tensor's base and strides are 16-byte multiples and reads the map only then; a launcher encodes 128 zero bytes when they are not (the encoder refuses them) |

Where the compiler knows the tensor's base and row strides are 16-byte multiples (cuTile's ``assume div_by``
facts, which its launcher guarantees) the recipe is not optional and always encodes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

ATTR = "tilecore.tensor_maps"
MAP_BYTES = 128
MAP_ALIGN = 64
# CUtensorMapDataType of a tile element (tileas' element names)
DATA_TYPES = {"f16": 6, "bf16": 9, "f32": 7, "tf32": 7, "i32": 3, "i16": 1, "i8": 0, "f8E4M3FN": 0, "f8E5M2": 0}
DATA_TYPE_NAMES = {0: "u8", 1: "u16", 3: "i32", 6: "f16", 7: "f32", 9: "bf16"}
SWIZZLE_CODES = {0: 0, 32: 1, 64: 2, 128: 3}  # bytes -> CUtensorMapSwizzle


@dataclass(frozen=True)
class TensorMapRecipe:
    """How to encode the tensor map of kernel parameter ``param`` (module docstring)."""

    param: int
    tensor: int
    data_type: int
    global_dim: tuple
    global_strides: tuple
    box_dim: tuple
    element_strides: tuple
    swizzle: int = 0
    interleave: int = 0
    l2_promotion: int = 0
    oob_fill: int = 0
    optional: bool = False

    @property
    def rank(self) -> int:
        return len(self.global_dim)

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @staticmethod
    def from_json(d: dict) -> TensorMapRecipe:
        return TensorMapRecipe(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})

    def resolve(self, params) -> dict:
        """The encoder's arguments for the kernel parameter values ``params`` (ints for extents and strides;
        the tensor's entry is passed through as ``tensor_value``)."""
        def value(x, what):
            if isinstance(x, int):
                return x
            try:
                v = int(params[x["param"]])
            except (IndexError, TypeError, ValueError):
                raise ValueError(f"tensor map parameter {self.param}: {what} needs kernel parameter {x['param']}, "
                                 f"which is not an integer") from None
            return v * int(x.get("scale", 1)) // int(x.get("div", 1))

        dims = [max(1, value(d, "globalDim")) for d in self.global_dim]
        strides = [value(s, "globalStrides") for s in self.global_strides]
        return {"tensor_value": params[self.tensor], "data_type": self.data_type, "rank": self.rank,
                "global_dim": dims, "global_strides": strides, "box_dim": list(self.box_dim),
                "element_strides": list(self.element_strides), "interleave": self.interleave,
                "swizzle": self.swizzle, "l2_promotion": self.l2_promotion, "oob_fill": self.oob_fill}

    def describe(self) -> str:
        """One line: ``param 15: tensor map of param 0 (f16, dims [p2, p1], strides [p3 x 2 B], ...)``."""
        def show(x):
            if isinstance(x, int):
                return str(x)
            return f"p{x['param']}" + (f" x {x['scale']}" if x.get("scale", 1) != 1 else "") + \
                (f" / {x['div']}" if x.get("div", 1) != 1 else "")

        swz = {0: "none", 1: "32B", 2: "64B", 3: "128B"}[self.swizzle]
        return (f"param {self.param}: tensor map of param {self.tensor} "
                f"({DATA_TYPE_NAMES.get(self.data_type, self.data_type)}, dims [{', '.join(map(show, self.global_dim))}], "
                f"strides [{', '.join(show(s) + ' B' for s in self.global_strides)}], box {list(self.box_dim)}, "
                f"swizzle {swz}, {'zero' if self.oob_fill == 0 else 'NaN'} fill)")


def dumps(recipes) -> str:
    return json.dumps([r.to_json() for r in recipes], separators=(",", ":"))


def loads(text: str) -> list[TensorMapRecipe]:
    return [TensorMapRecipe.from_json(d) for d in json.loads(text)]


def recipes_of(func) -> list[TensorMapRecipe]:
    """The recipes of an ``llvm.func`` kernel (its ``tilecore.tensor_maps`` attribute; [] without one)."""
    from .mlir import ir

    if ATTR not in func.attributes:
        return []
    return loads(ir.StringAttr(func.attributes[ATTR]).value)


def kernel_recipes(module) -> dict[str, list[TensorMapRecipe]]:
    """Kernel symbol -> its recipes, for every kernel of ``module`` (an ``ir.Module``) that has some."""
    from .launch_attrs import kernel_functions

    return {name: recipes_of(f) for name, f in kernel_functions(module).items() if ATTR in f.attributes}


def emulator_map(recipe: TensorMapRecipe, params):
    """The emulator's 128 bytes (:func:`tilecore.emulate.tensormap.encode_tiled`) for the parameter values
    ``params``: the tensor is named by its parameter index (the emulator's device addresses exist only
    inside a launch)."""
    import numpy as np

    from .emulate.tensormap import encode_tiled

    if unaligned(recipe, params):  # the emulator's copy of the tensor starts 16-byte aligned
        return np.zeros(MAP_BYTES, np.uint8)
    f = recipe.resolve(params)
    return encode_tiled(f["data_type"], f["rank"], recipe.tensor, f["global_dim"], f["global_strides"], f["box_dim"],
                        f["element_strides"], f["interleave"], f["swizzle"], f["l2_promotion"], f["oob_fill"])


def unaligned(recipe: TensorMapRecipe, params, address: int | None = None) -> bool:
    """True when an optional map's tensor (at ``address``, when known) is not 16-byte aligned in its base or
    strides: the kernel will not read the map, a launcher passes :data:`ZERO_MAP`."""
    f = recipe.resolve(params)
    return recipe.optional and (any(s % 16 for s in f["global_strides"]) or (address is not None and address % 16 != 0)
                                or _inexact(recipe, params))


def _inexact(recipe: TensorMapRecipe, params) -> bool:
    """Whether an entry with ``"div"`` (a packed e2m1 tensor's extent or stride) does not divide exactly (an odd
    extent: the kernel takes its element copies and does not read the map)."""
    for x in (*recipe.global_dim, *recipe.global_strides):
        if isinstance(x, dict) and int(x.get("div", 1)) != 1:
            if (int(params[x["param"]]) * int(x.get("scale", 1))) % int(x["div"]):
                return True
    return False


ZERO_MAP = bytes(MAP_BYTES)


def cuda_map(recipe: TensorMapRecipe, params, address: int) -> bytes:
    """The driver's 128 bytes (``cuTensorMapEncodeTiled``, ``cuda.bindings``) for the parameter values
    ``params``, the tensor at device ``address`` (:data:`ZERO_MAP` for an optional map the kernel will
    not read)."""
    from cuda.bindings import driver as d

    if unaligned(recipe, params, address):
        return ZERO_MAP
    f = recipe.resolve(params)
    err, tmap = d.cuTensorMapEncodeTiled(
        d.CUtensorMapDataType(f["data_type"]), f["rank"], address, f["global_dim"], f["global_strides"],
        f["box_dim"], f["element_strides"], d.CUtensorMapInterleave(f["interleave"]),
        d.CUtensorMapSwizzle(f["swizzle"]), d.CUtensorMapL2promotion(f["l2_promotion"]),
        d.CUtensorMapFloatOOBfill(f["oob_fill"]))
    if err != d.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled failed for tensor map parameter {recipe.param}: {err.name}")
    import ctypes

    return ctypes.string_at(tmap.getPtr(), MAP_BYTES)


def append_maps(recipes, params, encode) -> list:
    """``params`` (the cuTile parameters) followed by ``encode(recipe, params)`` for each map, in parameter
    order; a list already holding the maps is returned as it is."""
    params = list(params)
    if not recipes:
        return params
    first = min(r.param for r in recipes)
    if len(params) == first + len(recipes):
        return params
    if len(params) != first:
        raise ValueError(f"the kernel takes {first} parameters and {len(recipes)} tensor maps after them; "
                         f"got {len(params)} arguments")
    return params + [encode(r, params) for r in sorted(recipes, key=lambda r: r.param)]
