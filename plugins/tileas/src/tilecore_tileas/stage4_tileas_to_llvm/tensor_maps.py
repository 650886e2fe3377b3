"""The kernel's tensor-map parameters: what a TMA-fed K loop (:mod:`.pipeline`) reads its tiles through.

A tensor map is a kernel parameter the launcher encodes (:mod:`tilecore.tensormaps`: why, and the recipe
format). :class:`KernelTensorMaps` traces a tensor's base, extents and strides back to the kernel's
parameters (through the casts stage 3 and 4 put in between), appends one ``!llvm.ptr`` parameter per
distinct map (``byval`` 128 bytes, 64-byte aligned, ``nvvm.grid_constant``: PTX ``.param .align 64 .b8
p[128]``) and, at the end of the kernel, records the recipes in its ``tilecore.tensor_maps`` attribute.
"""

from __future__ import annotations

import re

from tilecore.mlir import ir
from tilecore.tensormaps import ATTR, DATA_TYPES, MAP_ALIGN, MAP_BYTES, SWIZZLE_CODES, TensorMapRecipe, dumps

# ops a kernel parameter may pass through on its way to a memref's base / extents / strides
_TRANSPARENT = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
                "llvm.bitcast", "llvm.addrspacecast", "builtin.unrealized_conversion_cast")
_WIDEN = ("arith.extsi", "arith.extui", "arith.index_cast", "arith.index_castui")
DATA_TYPE_BY_BYTES = {1: 0, 2: 1, 4: 2, 8: 4}  # UINT8 / UINT16 / UINT32 / UINT64


class KernelTensorMaps:
    """The tensor-map parameters of the kernel whose entry block is ``block`` (module docstring)."""

    def __init__(self, block):
        self.block = block
        self.first = len(list(block.arguments))
        self.recipes: list[TensorMapRecipe] = []
        self.values: list = []

    def _source(self, v):
        """The kernel parameter index ``v`` is (through casts; a narrowing cast disqualifies an extent),
        an int for a constant, or None."""
        if isinstance(v, int):
            return v
        while isinstance(v, ir.OpResult) and v.owner.name in _TRANSPARENT:
            if v.owner.name == "arith.trunci":
                return None
            v = v.owner.operands[0]
        if isinstance(v, ir.BlockArgument):
            return v.arg_number if v.owner == self.block and v.arg_number < self.first else None
        return int_constant(v)

    def _param_type(self, i: int) -> str:
        return str(list(self.block.arguments)[i].type)

    def recipe(self, memref, elem, box: tuple, swizzle: int, optional: bool,
               packed: bool = False) -> TensorMapRecipe | None:
        """The recipe of a tile-mode map of rank 2-5 over ``memref`` (rows of contiguous elements of type
        ``elem``, tile order) with box ``box`` (innermost first: ``(inner elements, rows, 1...)``) and ``swizzle``
        bytes, or None when the tensor's base, extents or strides are not kernel parameters (or constants).
        ``optional``: the kernel reads the map only after checking the tensor's alignment at run time.
        (PTX ISA §9.7.9.25, "cp.async.bulk.tensor": ``.dim`` 1d-5d; the driver's
        ``cuTensorMapEncodeTiled`` takes ``tensorRank`` 1-5 (3-5 need a 16-byte aligned base, as TMA always does
        here: the recipe's tensors are 16-byte aligned or behind the run-time check).)
        ``packed``: ``memref`` holds e2m1 elements two to a byte (extents and strides in elements), ``elem`` is
        i8: the map is over the bytes, its innermost extent and its strides half the memref's (``"div": 2`` for
        parameters; the kernel checks they are even before it reads the map: ``pipeline.aligned_16``)."""
        rank = len(memref.shape)
        if not 2 <= rank <= 5 or len(box) != rank or memref.strides[-1] != 1:
            return None
        tensor = self._source(memref.base)
        if not isinstance(tensor, int) or isinstance(memref.base, int) or \
                not self._param_type(tensor).startswith("!llvm.ptr"):
            return None
        eb = _bytes(elem)
        div = 2 if packed else 1
        dims, strides = [], []
        for i, d in enumerate(memref.shape[::-1]):  # innermost first
            s = self._source(d)
            if s is None:
                return None
            halve = i == 0 and packed
            dims.append((s // 2 if halve else s) if _is_const(d) else {"param": s, **({"div": 2} if halve else {})})
        for st_v in memref.strides[-2::-1]:  # bytes, of dimensions 1 .. rank - 1
            st = self._source(st_v)
            if st is None:
                return None
            strides.append(st * eb // div if _is_const(st_v) else
                           {"param": st, "scale": eb, **({"div": div} if packed else {})})
        name = str(elem)
        dt = DATA_TYPES.get(name, DATA_TYPE_BY_BYTES.get(eb))
        return TensorMapRecipe(param=-1, tensor=tensor, data_type=dt, global_dim=tuple(dims),
                               global_strides=tuple(strides), box_dim=tuple(box), element_strides=(1,) * rank,
                               swizzle=SWIZZLE_CODES[swizzle], optional=optional)

    def parameter(self, recipe: TensorMapRecipe):
        """The ``!llvm.ptr`` parameter holding the map of ``recipe`` (appended on first use)."""
        for r, v in zip(self.recipes, self.values):
            if _same(r, recipe):
                return v
        index = self.first + len(self.recipes)
        v = self.block.add_argument(ir.Type.parse("!llvm.ptr"), ir.Location.unknown())
        self.recipes.append(TensorMapRecipe(**{**recipe.__dict__, "param": index}))
        self.values.append(v)
        return v

    def finish(self, fn) -> None:
        """Give ``fn`` (the rebuilt kernel) the appended parameters' types, attributes and recipes."""
        if not self.recipes:
            return
        m = re.match(r"!llvm\.func<(.*?) \((.*)\)>$", str(ir.TypeAttr(fn.attributes["function_type"]).value))
        params = [p for p in m.group(2).split(", ") if p] + ["ptr"] * len(self.recipes)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.Type.parse(f"!llvm.func<{m.group(1)} ({', '.join(params)})>"))
        old = list(fn.attributes["arg_attrs"]) if "arg_attrs" in fn.attributes else \
            [ir.DictAttr.get({})] * self.first
        i64 = ir.IntegerType.get_signless(64)
        tmap = ir.DictAttr.get({"llvm.byval": ir.TypeAttr.get(ir.Type.parse(f"!llvm.array<{MAP_BYTES} x i8>")),
                                "llvm.align": ir.IntegerAttr.get(i64, MAP_ALIGN), "nvvm.grid_constant": ir.UnitAttr.get()})
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(old + [tmap] * len(self.recipes))
        fn.attributes[ATTR] = ir.StringAttr.get(dumps(self.recipes))


def int_constant(v) -> int | None:
    """The value of ``v`` when it is an int or an integer ``arith.constant`` / ``llvm.mlir.constant``, else None."""
    if isinstance(v, int):
        return v
    if isinstance(v, ir.OpResult) and v.owner.name in ("arith.constant", "llvm.mlir.constant"):
        attr = v.owner.attributes["value"]
        return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None
    return None


def _is_const(v) -> bool:
    return isinstance(v, int) or (isinstance(v, ir.OpResult) and v.owner.name in ("arith.constant", "llvm.mlir.constant"))


def _bytes(elem) -> int:
    s = str(elem)
    if isinstance(elem, ir.FloatType):
        return max(1, elem.width // 8)
    if s.startswith("i"):
        return max(1, ir.IntegerType(elem).width // 8)
    raise ValueError(f"no tensor map for elements of type {s}")


def _same(a: TensorMapRecipe, b: TensorMapRecipe) -> bool:
    return {**a.__dict__, "param": 0} == {**b.__dict__, "param": 0}
