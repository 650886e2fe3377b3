"""Small LLVM-dialect builders shared by the gpu_nvvm patterns (constants, calls, declarations)."""

from __future__ import annotations

from tilecore.mlir import dialects, ir


def i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def constant(t: ir.Type, value) -> ir.Value:
    """``llvm.mlir.constant(value : t)`` at the current insertion point."""
    attr = ir.FloatAttr.get(t, value) if isinstance(value, float) else ir.IntegerAttr.get(t, value)
    return ir.Operation.create("llvm.mlir.constant", results=[t], attributes={"value": attr}).results[0]


def enclosing(op, name: str):
    """The closest ancestor of ``op`` named ``name`` (``gpu.module``, ``gpu.func`` ...), or None."""
    parent = op.parent
    while parent is not None and parent.name != name:
        parent = parent.parent
    return parent


FUNCTION_OPS = ("gpu.func", "llvm.func", "func.func")


def function_of(op):
    """The closest enclosing function op (``gpu.func``, ``llvm.func``, ``func.func``) of ``op``, or None."""
    fn = op.parent
    while fn is not None and fn.name not in FUNCTION_OPS:
        fn = fn.parent
    return fn


_UNSET = object()


def hoisted_constant(rw, op, t: ir.Type, value, fn=_UNSET) -> ir.Value:
    """An ``llvm.mlir.constant`` at the entry of the function holding ``op``, one per (type, value).

    Shared by every rewrite of the conversion (``rw.memo``); being at the entry it dominates
    every use in the function. Outside a function it is a plain :func:`constant` at ``rw.ip``.
    ``fn``: ``function_of(op)`` when the caller already has it (several constants per rewrite).
    """
    return _hoisted(rw, op, ("const", t, value), lambda: constant(t, value), fn)


def _hoisted(rw, op, key, build, fn=_UNSET) -> ir.Value:
    """``build()`` once per (function, ``key``) at the entry of the function holding ``op`` (memoised
    in ``rw.memo``); outside a function, at ``rw.ip``."""
    if fn is _UNSET:
        fn = function_of(op)
    if fn is None:
        with rw.ip:
            return build()
    key = (fn, *key)
    v = rw.memo.get(key)
    if v is None:
        with ir.InsertionPoint.at_block_begin(fn.regions[0].blocks[0]), fn.location:
            v = rw.memo[key] = build()
    return v


def declare_function(op, name: str, arg_types: list, result_type, memo: dict | None = None) -> None:
    """Declare ``llvm.func @name(args) -> result`` in the gpu.module holding ``op`` (once).

    With ``memo`` (``rw.memo``) a name already declared by this conversion is not looked up again.
    """
    module = enclosing(op, "gpu.module") or enclosing(op, "builtin.module")
    if memo is not None:
        key = ("declared", module, name)
        if key in memo:
            return
        memo[key] = True
    block = module.regions[0].blocks[0]
    for existing in block.operations:
        if existing.operation.name == "llvm.func" and \
                ir.StringAttr(existing.attributes["sym_name"]).value == name:
            return
    args = ", ".join(str(t) for t in arg_types)
    ret = "!llvm.void" if result_type is None else str(result_type)
    fn_type = ir.TypeAttr.get(ir.Type.parse(f"!llvm.func<{ret} ({args})>"))
    with ir.InsertionPoint.at_block_begin(block):
        dialects.llvm.LLVMFuncOp(name, fn_type)


def call(name: str, args: list, result_type, memo: dict | None = None) -> ir.Value | None:
    """``llvm.call @name(args)`` at the current insertion point (declare it first).

    Built generically: the CallOp builder costs ~20 us, several times the op itself. With
    ``memo`` (``rw.memo``) the attributes are built once per (callee, argument count).
    """
    attrs = None
    if memo is not None:
        key = ("call-attrs", name, len(args))
        attrs = memo.get(key)
    if attrs is None:
        attrs = {"callee": ir.FlatSymbolRefAttr.get(name),
                 "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(args), 0]),
                 "op_bundle_sizes": ir.DenseI32ArrayAttr.get([])}
        if memo is not None:
            memo[key] = attrs
    op = ir.Operation.create("llvm.call", results=[] if result_type is None else [result_type],
                             operands=list(args), attributes=attrs)
    return op.results[0] if result_type is not None else None


# --- generic builders for the hot aggregate / vector ops ------------------------------------------
# ``ir.Operation.create`` with attributes built once per conversion (``rw.memo``) costs ~2 us per op;
# the generated OpView builders cost 6-9 us (they rebuild every attribute and check every argument).


def _position(rw, position: tuple) -> dict:
    return rw.memoized(("position", position), lambda: {"position": ir.DenseI64ArrayAttr.get(list(position))})


def extractvalue(rw, container: ir.Value, position: tuple, result_type: ir.Type) -> ir.Value:
    """``llvm.extractvalue container[position]`` at the current insertion point."""
    return ir.Operation.create("llvm.extractvalue", results=[result_type], operands=[container],
                               attributes=_position(rw, position)).result


def insertvalue(rw, container: ir.Value, value: ir.Value, position: tuple) -> ir.Value:
    """``llvm.insertvalue value, container[position]`` at the current insertion point."""
    return ir.Operation.create("llvm.insertvalue", results=[container.type], operands=[container, value],
                               attributes=_position(rw, position)).result


def extractelement(rw, op, vec: ir.Value, lane: int, result_type: ir.Type, fn=_UNSET) -> ir.Value:
    """``llvm.extractelement vec[lane]`` (the i32 lane constant hoisted, see :func:`hoisted_constant`)."""
    idx = hoisted_constant(rw, op, i32(), lane, fn)
    return ir.Operation.create("llvm.extractelement", results=[result_type], operands=[vec, idx]).result


def insertelement(rw, op, vec: ir.Value, value: ir.Value, lane: int, fn=_UNSET) -> ir.Value:
    """``llvm.insertelement value, vec[lane]`` (the i32 lane constant hoisted)."""
    idx = hoisted_constant(rw, op, i32(), lane, fn)
    return ir.Operation.create("llvm.insertelement", results=[vec.type], operands=[vec, value, idx]).result


def hoisted_poison(rw, op, t: ir.Type, fn=_UNSET) -> ir.Value:
    """An ``llvm.mlir.poison : t`` at the entry of the function holding ``op``, one per type."""
    return _hoisted(rw, op, ("poison", t), lambda: ir.Operation.create("llvm.mlir.poison", results=[t]).result, fn)


def bitcast(value: ir.Value, t: ir.Type) -> ir.Value:
    """``llvm.bitcast value : t`` at the current insertion point."""
    return ir.Operation.create("llvm.bitcast", results=[t], operands=[value]).result
