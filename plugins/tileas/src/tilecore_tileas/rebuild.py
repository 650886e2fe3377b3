"""The rebuild driver shared by the tileas stages.

Python has no dialect-conversion API in MLIR 22, and a tile op may turn into many
values (stage 4 keeps a tile as one SSA value per register), so the tileas stages
rebuild a function body op by op into a fresh block: ``Rebuilder`` walks the old
body in program order, asks its *populators* (ordered tables ``op name -> handler``;
the first populator that knows an op wins) for a handler, binds the old results to
whatever the handler returns, and recreates ops no populator knows generically with
mapped operands, converted result types and rebuilt regions. Every new op is created
under the old op's location, so bytecode locations reach the PTX (``-g``).
"""

from __future__ import annotations

from typing import Callable

from tilecore.errors import LoweringError, at_op
from tilecore.mlir import ir


class Rebuilder:
    """Rebuilds IR through ordered populators (see the module docstring).

    ``populators`` is a list of ``(name, {op_name: handler})``; a handler is called
    as ``handler(op, rb)`` with the insertion point set and must return the new
    values for ``op``'s results (a list, or None when it has none).
    ``convert_type`` maps an old result / block-argument type to its new type.
    ``fallback(op, rb)`` handles ops no populator knows (default: :meth:`generic`);
    ops of ``strict_dialects`` without a handler are an error instead.
    """

    def __init__(self, populators: list[tuple[str, dict]], convert_type: Callable, *, stage: str = "",
                 strict_dialects: tuple[str, ...] = (), fallback: Callable | None = None):
        self.populators = populators
        self.fallback = fallback
        self.convert_type = convert_type
        self.stage = stage
        self.strict = strict_dialects  # ops of these dialects must have a handler
        self.map: dict = {}
        self.fired: dict[str, int] = {}
        self.data: dict = {}

    # -- values -----------------------------------------------------------------------------
    def get(self, v):
        try:
            return self.map[v]
        except KeyError:
            raise LoweringError(f"internal error in {self.stage}: value used before its definition was rebuilt",
                                v.owner if isinstance(v, ir.OpResult) else None) from None

    def gets(self, vs) -> list:
        return [self.get(v) for v in vs]

    def bind(self, olds, news) -> None:
        olds = list(olds)
        news = list(news) if news is not None else []
        if len(olds) != len(news):  # a block / op written with more or fewer values than the stage expects
            if olds and isinstance(olds[0], ir.BlockArgument):
                owner = olds[0].owner.owner  # the block's parent op
                raise LoweringError(f"a block of '{owner.name}' has {len(olds)} argument(s); stage '{self.stage}' "
                                    f"expects {len(news)}", owner)
            raise LoweringError(f"{len(olds)} value(s) where stage '{self.stage}' makes {len(news)}",
                                olds[0].owner if olds and isinstance(olds[0], ir.OpResult) else None)
        for o, n in zip(olds, news):
            self.map[o] = n

    # -- ops --------------------------------------------------------------------------------
    def handler(self, name: str):
        for pop, table in self.populators:
            fn = table.get(name)
            if fn is not None:
                return pop, fn
        return None, None

    def op(self, op) -> None:
        op = op.operation
        pop, fn = self.handler(op.name)
        with op.location, at_op(op, self.stage):
            if fn is None:
                if op.name.split(".", 1)[0] in self.strict:
                    raise LoweringError(f"unsupported op '{op.name}' in stage '{self.stage}'", op)
                res = self.fallback(op, self) if self.fallback is not None else self.generic(op)
            else:
                self.fired[f"{pop}:{op.name}"] = self.fired.get(f"{pop}:{op.name}", 0) + 1
                res = fn(op, self)
            if op.results:
                n = len(list(res)) if res is not None else 0
                if n != len(op.results):  # an op written with more / fewer results than this stage makes
                    raise LoweringError(f"'{op.name}' has {len(op.results)} result(s); stage '{self.stage}' "
                                        f"lowers it to {n}", op)
                self.bind(op.results, res)

    def block_into(self, old_block, new_block, args=None) -> None:
        """Rebuild ``old_block``'s ops at the end of ``new_block`` (args bound to ``args`` or its arguments)."""
        self.bind(old_block.arguments, list(new_block.arguments) if args is None else args)
        with ir.InsertionPoint(new_block):
            for o in old_block.operations:
                self.op(o)

    def region_into(self, old_region, new_region) -> None:
        for ob in old_region.blocks:
            types = [self.convert_type(a.type) for a in ob.arguments]
            nb = new_region.blocks.append(*types, arg_locs=[a.location for a in ob.arguments])
            self.block_into(ob, nb)

    def generic(self, op, name: str | None = None, attrs: dict | None = None):
        """Recreate ``op`` (optionally renamed / with other attributes) with mapped operands and regions."""
        if attrs is None:
            attrs = attrs_of(op)
        new = ir.Operation.create(name or op.name, results=[self.convert_type(r.type) for r in op.results],
                                  operands=self.gets(op.operands), attributes=attrs, regions=len(op.regions))
        for o, n in zip(op.regions, new.regions):
            self.region_into(o, n)
        return list(new.results)


def attrs_of(op) -> dict:
    """The attributes of ``op`` as a plain dict."""
    attrs = op.operation.attributes
    names = [a if isinstance(a, str) else a.name for a in attrs]
    return {n: attrs[n] for n in names}


def inline_block(rb: Rebuilder, block, args: list) -> list:
    """Rebuild ``block``'s ops at the current insertion point with its arguments bound to ``args``;
    returns the (mapped) operands of its terminator instead of rebuilding it."""
    rb.bind(block.arguments, args)
    ops = list(block.operations)
    for o in ops[:-1]:
        rb.op(o)
    return rb.gets(ops[-1].operands)


def run_plugin_patterns(ctx, stage: str) -> dict:
    """Apply other plugins' patterns for ``stage`` (``tilecore_register_patterns``) before the built-in
    populators: a plugin can decompose or pre-lower ops the tables do not know. Returns fired counts."""
    from tilecore.conversion import apply_conversion

    pats = ctx.plugins.patterns(stage, ctx.target, ctx.options) if ctx.plugins is not None else []
    if not pats:
        return {}
    stats = apply_conversion(ctx.module, None, pats, ctx.type_converter, stage=stage, compile_target=ctx.target,
                             options=ctx.options, reconcile=False)
    return dict(stats.fired)


def run_stage(ctx, stage: str, body):
    """A tileas stage: other plugins' patterns for ``stage`` first, then ``body(ctx)`` (the built-in
    populators); returns ``body``'s ConversionStats with both sets of firing counts."""
    from .entry_check import check_module

    with ctx.module.context, ir.Location.unknown():
        check_module(ctx.module)  # outside-written tile IR is checked before anything changes it
        fired = run_plugin_patterns(ctx, stage)
        stats = body(ctx)
        stats.fired = {**fired, **stats.fired}
        return stats
