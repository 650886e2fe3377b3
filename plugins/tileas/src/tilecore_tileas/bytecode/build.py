"""Build the cuda_tile MLIR module from decoded records (see the cuda_tile package docs)."""

from __future__ import annotations

from tilecore.mlir import ir

from ..cuda_tile import types as T
from ..cuda_tile.ops import non_single, segment_sizes
from .decode import BlockRec, Decoded, OpRec


class Builder:
    """Turns :class:`~.decode.Decoded` records into ``builtin.module`` IR in ``ctx``."""

    def __init__(self, dec: Decoded, ctx, path: str = "<input>"):
        self.dec, self.ctx, self.path = dec, ctx, path
        self.type_cache: dict[str, ir.Type] = {}
        self.loc_cache: dict[int, ir.Location] = {}
        self.unknown = ir.Location.unknown(ctx)

    # -- types, locations, attributes -------------------------------------------------------
    def type(self, t) -> ir.Type:
        text = t.text
        ty = self.type_cache.get(text)
        if ty is None:
            if isinstance(t, T.Func):
                ty = ir.FunctionType.get([self.type(x) for x in t.inputs], [self.type(x) for x in t.results])
            else:
                ty = ir.Type.parse(text)
            self.type_cache[text] = ty
        return ty

    def _loc(self, desc: tuple) -> ir.Location:
        kind = desc[0]
        if kind == "file":
            return ir.Location.file(desc[1], desc[2], desc[3])
        if kind == "callsite":
            return ir.Location.callsite(self._loc(desc[1]), [self._loc(desc[2])])
        return self.unknown

    def location(self, func_debug: int, ordinal: int, at: int) -> ir.Location:
        """The op's debug location; without one, ``loc("<file>:<byte offset>")`` (a name
        location, rendered by tilecore like a bytecode error) so diagnostics still point somewhere."""
        dbg = self.dec.debug
        attr_id = dbg.op_attr_id(func_debug, ordinal)
        loc = self.loc_cache.get(attr_id)
        if loc is None:
            loc = self._loc(dbg.location(attr_id, at))
            self.loc_cache[attr_id] = loc
        if loc == self.unknown:
            return ir.Location.name(f"{self.path}:{at}")
        return loc

    def attr(self, a: tuple) -> ir.Attribute:
        kind = a[0]
        if kind == "unit":
            return ir.UnitAttr.get()
        if kind in ("enum", "str"):
            return ir.StringAttr.get(a[1])
        if kind == "i64":
            return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _signed64(a[1]))
        if kind == "bool":
            return ir.BoolAttr.get(a[1])
        if kind == "int":
            ty, v = a[1], a[2]
            if ty.name == "i1":
                return ir.BoolAttr.get(bool(v))
            w = T.INT_WIDTHS[ty.name]
            return ir.IntegerAttr.get(self.type(ty), v - (1 << w) if v >> (w - 1) else v)
        if kind == "float":
            ty, bits = a[1], a[2]
            digits = max(1, (T.FLOAT_WIDTHS[ty.name] + 3) // 4)
            return ir.Attribute.parse(f"0x{bits:0{digits}X} : {ty.name}")
        if kind == "type":
            return ir.TypeAttr.get(self.type(a[1]))
        if kind == "array":
            return ir.ArrayAttr.get([self.attr(x) for x in a[1]])
        if kind == "dense":
            return self.dense(a[1], a[2])
        if kind == "i32s":
            return ir.DenseI32ArrayAttr.get(a[1])
        if kind == "bools":
            return ir.DenseBoolArrayAttr.get(a[1])
        if kind == "dict":
            return ir.DictAttr.get({k: self.attr(v) for k, v in a[1]})
        if kind == "hints":
            d = ir.DictAttr.get({k: self.attr(v) for k, v in a[1]})
            return ir.Attribute.parse(f"#cuda_tile.optimization_hints<{d}>")
        if kind == "div_by":
            return ir.Attribute.parse(f"#cuda_tile.div_by<{a[1]} : i64, {_opt(a[2])}, {_opt(a[3])}>")
        if kind == "bounded":
            return ir.Attribute.parse(f"#cuda_tile.bounded<{_opt(a[1])}, {_opt(a[2])}>")
        if kind == "same_elements":
            return ir.Attribute.parse(f"#cuda_tile.same_elements<{ir.DenseI64ArrayAttr.get(a[1])}>")
        raise AssertionError(kind)  # pragma: no cover - decode only produces the kinds above

    def dense(self, ty: T.Tile, raw: bytes) -> ir.Attribute:
        """``dense<...> : tensor<shape x elem>`` from the raw little-endian bytes (splat if uniform)."""
        el = ty.element.name
        width = T.INT_WIDTHS.get(el) or T.FLOAT_WIDTHS.get(el)
        esize = max(1, (width + 7) // 8)
        chunks = {raw[i:i + esize] for i in range(0, len(raw), esize)}
        if len(chunks) == 1:
            raw = raw[:esize]
        shape = "x".join(map(str, ty.shape))
        tensor = f"tensor<{shape}x{el}>" if shape else f"tensor<{el}>"
        if el == "i1":  # MLIR bit-packs i1, so spell the values out
            return ir.Attribute.parse(f"dense<{_bool_literal(raw, ty.shape if len(raw) > 1 else ())}> : {tensor}")
        return ir.Attribute.parse(f'dense<"0x{raw.hex().upper()}"> : {tensor}')

    # -- ops ----------------------------------------------------------------------------------
    def op(self, rec: OpRec, values: list, func_debug: int) -> ir.Operation:
        spec = rec.spec
        operands = [values[i] for _name, _kind, ids in rec.operands for i in ids]
        attrs = {k: self.attr(v) for k, v in rec.attrs.items()}
        okinds = [k for _n, k in spec.operands()]
        if non_single(okinds) > 1:
            attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(
                segment_sizes(okinds, [len(ids) for _n, _k, ids in rec.operands]))
        rkinds = [k for _n, k in spec.results()]
        if non_single(rkinds) > 1:
            attrs["resultSegmentSizes"] = ir.DenseI32ArrayAttr.get(segment_sizes(rkinds, rec.result_groups))
        op = ir.Operation.create(spec.full_name, results=[self.type(t) for t in rec.results],
                                 operands=operands, attributes=attrs, regions=len(rec.regions),
                                 loc=self.location(func_debug, rec.ordinal, rec.offset))
        for region, blocks in zip(op.regions, rec.regions):
            for b in blocks:
                self.block(region, b, values, func_debug, op.location)
        return op

    def block(self, region, rec: BlockRec, values: list, func_debug: int, loc) -> None:
        block = region.blocks.append(*[self.type(t) for t in rec.args], arg_locs=[loc] * len(rec.args))
        mark = len(values)
        values += list(block.arguments)
        with ir.InsertionPoint(block):
            for op_rec in rec.ops:
                op = self.op(op_rec, values, func_debug)
                values += list(op.results)
        del values[mark:]

    def module(self) -> ir.Module:
        with self.ctx, self.unknown:
            m = ir.Module.create()
            if self.dec.producer is not None:
                m.operation.attributes["cuda_tile.producer"] = ir.StringAttr.get(self.dec.producer)
            m.operation.attributes["cuda_tile.bytecode_version"] = ir.StringAttr.get(self.dec.version_text)
            with ir.InsertionPoint(m.body):
                for g in self.dec.globals:
                    ir.Operation.create("cuda_tile.global", attributes={
                        "sym_name": ir.StringAttr.get(g.name),
                        "value": self.dense(g.value[1], g.value[2]),
                        "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), g.alignment),
                        "sym_visibility": ir.StringAttr.get(g.visibility),
                        **({"constant": ir.UnitAttr.get()} if g.constant else {}),
                    })
                for fn in self.dec.functions:
                    self.function(fn)
            return m

    def function(self, fn) -> None:
        loc = self.location(fn.debug, 0, fn.offset)
        attrs = {"sym_name": ir.StringAttr.get(fn.name),
                 "function_type": ir.TypeAttr.get(self.type(fn.type)),
                 "kernel": ir.UnitAttr.get(),
                 "optimization_hints": self.attr(fn.hints if fn.hints else ("hints", []))}
        if fn.flags & 0x01:
            attrs["private"] = ir.UnitAttr.get()
        op = ir.Operation.create("cuda_tile.entry", attributes=attrs, regions=1, loc=loc)
        self.block(op.regions[0], fn.body, [], fn.debug, loc)


def _bool_literal(raw: bytes, shape) -> str:
    if not shape:
        return "true" if raw[0] else "false"
    step = len(raw) // shape[0]
    return "[" + ", ".join(_bool_literal(raw[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def _opt(v) -> str:
    return "unit" if v is None else f"{v} : i64"


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def build_module(dec: Decoded, ctx, path: str = "<input>") -> ir.Module:
    """The ``builtin.module`` holding the globals and entries of ``dec`` (``path`` names the file
    in the locations of ops without debug info)."""
    return Builder(dec, ctx, path).module()
