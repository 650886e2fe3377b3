"""Stage 1, populator A: arithmetic, tile algebra and structured control flow.

Element-wise cuda_tile math becomes ``arith`` / ``math`` on tensors (or scalars for
0-d tiles); ``for`` / ``if`` become ``scf``; shape ops become nv_tileaa ops.
"""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import ir

from ..nv_tileaa import PRINT_SLOTS, TERM, builder
from .common import create, element_type, has, i64, operands, result_types, s

# cuda_tile op -> arith / math op with the same operands (signedness chooses the second column).
SAME_OPERANDS = {
    "addf": "arith.addf", "subf": "arith.subf", "mulf": "arith.mulf", "divf": "arith.divf", "remf": "arith.remf",
    "negf": "arith.negf", "addi": "arith.addi", "subi": "arith.subi", "muli": "arith.muli", "andi": "arith.andi",
    "ori": "arith.ori", "xori": "arith.xori", "shli": "arith.shli", "select": "arith.select",
    "absf": "math.absf", "exp": "math.exp", "exp2": "math.exp2", "log": "math.log",
    "log2": "math.log2", "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "tanh": "math.tanh", "sin": "math.sin",
    "cos": "math.cos", "tan": "math.tan", "sinh": "math.sinh", "cosh": "math.cosh", "floor": "math.floor",
    "ceil": "math.ceil", "pow": "math.powf", "fpowf": "math.powf", "atan2": "math.atan2", "fma": "math.fma",
    "fpowi": "math.fpowi",
    "trunci": "arith.trunci", "bitcast": "arith.bitcast",
}
BY_SIGN = {  # name -> (signed, unsigned)
    "shri": ("arith.shrsi", "arith.shrui"), "remi": ("arith.remsi", "arith.remui"),
    "maxi": ("arith.maxsi", "arith.maxui"), "mini": ("arith.minsi", "arith.minui"),
    "exti": ("arith.extsi", "arith.extui"), "itof": ("arith.sitofp", "arith.uitofp"),
    "ftoi": ("arith.fptosi", "arith.fptoui"),
}
CMPF = {("equal", "ordered"): 1, ("greater_than", "ordered"): 2, ("greater_than_or_equal", "ordered"): 3,
        ("less_than", "ordered"): 4, ("less_than_or_equal", "ordered"): 5, ("not_equal", "ordered"): 6,
        ("equal", "unordered"): 8, ("greater_than", "unordered"): 9, ("greater_than_or_equal", "unordered"): 10,
        ("less_than", "unordered"): 11, ("less_than_or_equal", "unordered"): 12, ("not_equal", "unordered"): 13}
CMPI = {("equal", "signed"): 0, ("not_equal", "signed"): 1, ("less_than", "signed"): 2,
        ("less_than_or_equal", "signed"): 3, ("greater_than", "signed"): 4, ("greater_than_or_equal", "signed"): 5,
        ("equal", "unsigned"): 0, ("not_equal", "unsigned"): 1, ("less_than", "unsigned"): 6,
        ("less_than_or_equal", "unsigned"): 7, ("greater_than", "unsigned"): 8,
        ("greater_than_or_equal", "unsigned"): 9}


def _flat(op, rb):
    return [v for vs in operands(op, rb).values() for v in vs]


def fastmath(op) -> dict:
    """``rounding_mode = "approx"`` allows the approximate (fast) form: ``fastmath<afn>``."""
    if s(op, "rounding_mode") == "approx" or s(op, "rounding") == "approx":
        return {"fastmath": ir.Attribute.parse("#arith.fastmath<afn>")}
    return {}


# Directed rounding modes of cuda_tile float ops (``ct.add(x, y, rounding_mode=ct.RoundingMode.RZ)``; tileiras
# emits FADD.RZ / FMUL.RP / ...): the arith op carries ``tilecore.rounding`` = rz / rm / rp, which stage 4
# lowers to the libdevice function of that rounding (:mod:`..stage4_tileas_to_llvm.rounding`).
DIRECTED = {"zero": "rz", "negative_inf": "rm", "positive_inf": "rp"}
TF32_ROUNDING = {"nearest_even": "rn", "nearest_away": "rna", "zero": "rz"}  # what cuTile allows for tf32
ROUNDED_OPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "math.sqrt", "math.fma")


def rounding(op, name) -> dict:
    mode = DIRECTED.get(s(op, "rounding_mode") or s(op, "rounding") or "")
    if mode is None or name not in ROUNDED_OPS:
        return {}
    return {"tilecore.rounding": ir.StringAttr.get(mode)}


def same_operands(name):
    def h(op, rb):
        attrs = fastmath(op) if name.startswith("math.") or name.endswith("f") else {}
        directed = rounding(op, name)
        rts, args = result_types(op, rb), _flat(op, rb)
        if directed and _width(rts[0]) < 32:  # f16 / bf16: the f32 op, then narrowed in the same direction
            f32 = _like(rts[0], ir.F32Type.get())  # (directed roundings compose: the f16 grid is in the f32 one)
            wide = [create("arith.extf", [f32], [a]).results[0] for a in args]
            r = create(name, [f32], wide, {**attrs, **directed}).results[0]
            rn = create("arith.truncf", [rts[0]], [r]).results[0]
            return [directed_truncation(r, rn, directed["tilecore.rounding"].value)]
        return list(create(name, rts, args, {**attrs, **directed}).results)
    return h


def by_sign(names):
    def h(op, rb):
        name = names[0] if s(op, "signedness", "signed") == "signed" else names[1]
        return list(create(name, result_types(op, rb), _flat(op, rb)).results)
    return h


def _width(t):
    e = element_type(t)
    return ir.FloatType(e).width if isinstance(e, ir.FloatType) else 0


def ftof(op, rb):
    (src,) = _flat(op, rb)
    rt = result_types(op, rb)[0]
    wi, wo = _width(src.type), _width(rt)
    name = "arith.extf" if wo > wi else "arith.truncf" if wo < wi else None
    if name is None:  # f16 <-> bf16: go through f32
        f32 = ir.F32Type.get()
        mid_t = ir.RankedTensorType.get(ir.RankedTensorType(rt).shape, f32) if str(rt).startswith("tensor<") \
            else f32
        src = create("arith.extf", [mid_t], [src]).results[0]
        name = "arith.truncf"
    if str(element_type(rt)) == "tf32":  # stage 4 rounds (its tf32 module): nearest even unless RA / RZ is asked
        mode = TF32_ROUNDING.get(s(op, "rounding_mode") or "", "rn")
        return list(create(name, [rt], [src], {"tilecore.rounding": ir.StringAttr.get(mode)}).results)
    mode = DIRECTED.get(s(op, "rounding_mode") or "")
    if name == "arith.truncf" and mode is not None and _width(rt) <= 8:  # to an 8- / 4-bit float: stage 4 rounds
        return list(create(name, [rt], [src], {"tilecore.rounding": ir.StringAttr.get(mode)}).results)
    if s(op, "rounding_mode") == "nearest_away":  # ties away from zero (cuTile's RA, e.g. bf16 -> f16)
        mode = "ra"
    out = create(name, [rt], [src]).results[0]
    if name == "arith.truncf" and mode is not None:
        out = directed_truncation(src, out, mode)
    return [out]


def _like(t, el):
    """``el``, or a tensor of ``el`` shaped as ``t``."""
    return ir.RankedTensorType.get(ir.RankedTensorType(t).shape, el) if str(t).startswith("tensor<") else el


def _splat(t, attr):
    return create("arith.constant", [t], [], {"value": ir.DenseElementsAttr.get_splat(t, attr)
                                              if str(t).startswith("tensor<") else attr}).results[0]


def directed_truncation(src, rn, mode: str):
    """A float narrowing rounded toward zero (rz), -inf (rm) or +inf (rp), from the round-to-nearest one ``rn``:
    where ``rn`` lies on the wrong side of ``src`` it steps one code toward zero (rz; from +-inf that is the
    largest finite value, as PTX ``cvt.rz`` gives) or away from it in the mode's direction; the codes of a
    float are ordered by magnitude within each sign, so one step is +-1 on the bit pattern. NaN compares
    false everywhere and stays NaN. (PTX ISA "Data Movement and Conversion Instructions: cvt", rounding
    modifiers .rz / .rm / .rp of float-to-float conversions.) ``ra``, to nearest with ties away from zero (PTX
    has ``.rna`` for tf32 only): ``rn`` breaks ties to even, so where ``src`` lies exactly halfway between ``rn``
    and the next code away from zero (the differences are exact in ``src``'s wider type: Sterbenz, or a zero
    ``rn``), one step away from zero."""
    st, rt = src.type, rn.type
    width = ir.FloatType(element_type(rt)).width
    it = _like(rt, ir.IntegerType.get_signless(width))
    i1 = _like(rt, ir.IntegerType.get_signless(1))

    def cmp(pred, a, b):
        return create("arith.cmpf", [i1], [a, b], {"predicate": i64(CMPF[(pred, "ordered")])}).results[0]

    def const(v):
        return _splat(it, ir.IntegerAttr.get(element_type(it), v))

    back = create("arith.extf", [st], [rn]).results[0]
    bits = create("arith.bitcast", [it], [rn]).results[0]
    if mode == "ra":  # |rn| < |src| and |src| - |rn| == |next| - |src|: one step away from zero
        away = create("arith.addi", [it], [bits, const(1)]).results[0]
        nxt = create("arith.extf", [st], [create("arith.bitcast", [rt], [away]).results[0]]).results[0]
        a_src, a_rn, a_nxt = [create("math.absf", [st], [v]).results[0] for v in (src, back, nxt)]
        below = create("arith.subf", [st], [a_src, a_rn]).results[0]
        above = create("arith.subf", [st], [a_nxt, a_src]).results[0]
        tie = create("arith.andi", [i1], [cmp("less_than", a_rn, a_src), cmp("equal", below, above)]).results[0]
        return create("arith.select", [rt], [tie, create("arith.bitcast", [rt], [away]).results[0], rn]).results[0]
    if mode == "rz":  # |rn| > |src|
        absf = [create("math.absf", [st], [v]).results[0] for v in (back, src)]
        wrong = toward_zero = cmp("greater_than", *absf)
    else:  # rm: rn > src, one step down; rp: rn < src, one step up
        wrong = cmp("greater_than" if mode == "rm" else "less_than", back, src)
        negative = create("arith.cmpi", [i1], [bits, const(0)],
                          {"predicate": i64(CMPI[("less_than", "signed")])}).results[0]
        if mode == "rm":  # down is toward zero for a positive rn (its sign is src's, -0.0 included)
            one = _splat(i1, ir.IntegerAttr.get(ir.IntegerType.get_signless(1), 1))
            toward_zero = create("arith.xori", [i1], [negative, one]).results[0]
        else:
            toward_zero = negative
    step = create("arith.select", [it], [toward_zero, const(-1), const(1)]).results[0]
    step = create("arith.select", [it], [wrong, step, const(0)]).results[0]
    stepped = create("arith.addi", [it], [bits, step]).results[0]
    return create("arith.bitcast", [rt], [stepped]).results[0]


# floats stage 4 holds as codes (i8 registers): the conversions of their tiles are extf / truncf only
CODED_FLOATS = ("f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN")


def _coded(t) -> bool:
    return str(element_type(t)) in CODED_FLOATS


def _signed_op(op, names):
    return names[0] if s(op, "signedness", "signed") == "signed" else names[1]


def itof(op, rb):
    """Integer -> float; to an 8- / 4-bit float (cuTile's ``astype(i, float8_e4m3fn)``, which tileiras compiles)
    through f32, then ``arith.truncf`` (one rounding: an integer below 2^24 is exact in f32, one above lies past
    every such format's largest finite value either way)."""
    (src,) = _flat(op, rb)
    rt = result_types(op, rb)[0]
    name = _signed_op(op, BY_SIGN["itof"])
    mode = DIRECTED.get(s(op, "rounding_mode") or "")
    iw = ir.IntegerType(element_type(src.type)).width
    fw = _width(rt)
    if mode is not None and iw > {16: 11, 32: 24, 64: 53}.get(fw, 8) and not _coded(rt):
        return [_directed_itof(src, rt, name, mode, op)]
    if not _coded(rt):
        return list(create(name, [rt], [src]).results)
    wide = create(name, [_like(rt, ir.F32Type.get())], [src]).results[0]
    return list(create("arith.truncf", [rt], [wide]).results)


def _directed_itof(src, rt, name: str, mode: str, op):
    """An integer -> float conversion rounded toward zero / -inf / +inf (``cvt.rz`` / ``.rm`` / ``.rp``): the
    round-to-nearest f32 / f64 value, converted back to a 64-bit integer (exact: it is integral and, from a
    source of at most 32 bits, below 2^33) and compared with the source; where it lies on the wrong side it
    steps one code (codes are ordered by magnitude within a sign). An f16 / bf16 result narrows that f32
    value in the same direction (two roundings in one direction are one)."""
    iw = ir.IntegerType(element_type(src.type)).width
    if iw > 32:
        raise LoweringError(f"itof from i{iw} with rounding mode '{s(op, 'rounding_mode')}' is not supported "
                            "(round to nearest is)", op)
    fw = _width(rt)
    mid_t = rt if fw in (32, 64) else _like(rt, ir.F32Type.get())
    rn = create(name, [mid_t], [src]).results[0]
    wide_t = _like(src.type, ir.IntegerType.get_signless(64))
    signed = name == "arith.sitofp"
    exact = create("arith.extsi" if signed else "arith.extui", [wide_t], [src]).results[0]
    back = create("arith.fptosi", [wide_t], [rn]).results[0]
    i1 = _like(src.type, ir.IntegerType.get_signless(1))

    def cmpi(pred, a, b):
        return create("arith.cmpi", [i1], [a, b], {"predicate": i64(CMPI[(pred, "signed")])}).results[0]

    zero = _splat(wide_t, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0))
    above, below = cmpi("greater_than", back, exact), cmpi("less_than", back, exact)
    negative = cmpi("less_than", exact, zero)
    if mode == "rm":
        wrong, toward_zero = above, create("arith.xori", [i1], [negative, _splat(i1, ir.BoolAttr.get(True))])
        toward_zero = toward_zero.results[0]
    elif mode == "rp":
        wrong, toward_zero = below, negative
    else:
        wrong = create("arith.select", [i1], [negative, below, above]).results[0]
        toward_zero = _splat(i1, ir.BoolAttr.get(True))
    fwidth = ir.FloatType(element_type(mid_t)).width
    it = _like(mid_t, ir.IntegerType.get_signless(fwidth))

    def const(v):
        return _splat(it, ir.IntegerAttr.get(element_type(it), v))

    bits = create("arith.bitcast", [it], [rn]).results[0]
    step = create("arith.select", [it], [toward_zero, const(-1), const(1)]).results[0]
    step = create("arith.select", [it], [wrong, step, const(0)]).results[0]
    out = create("arith.bitcast", [mid_t], [create("arith.addi", [it], [bits, step]).results[0]]).results[0]
    if mid_t is rt:
        return out
    narrow = create("arith.truncf", [rt], [out]).results[0]
    return directed_truncation(out, narrow, mode)


def ftoi(op, rb):
    """Float -> integer truncates toward zero; float -> bool (cuTile's ``astype(x, bool_)`` is an
    ``ftoi`` to i1) is ``x != 0`` as for integers (cuTile compares those with zero), NaN true as in
    numpy; an ``fptoui`` to i1 would be poison for every value but 0 and 1. An 8- / 4-bit float source
    is widened to f32 first (exact; tileiras compiles these, stage 4 has no integer conversion of codes)."""
    (src,) = _flat(op, rb)
    if _coded(src.type):
        src = create("arith.extf", [_like(src.type, ir.F32Type.get())], [src]).results[0]
    rt = result_types(op, rb)[0]
    if str(element_type(rt)) != "i1":
        return list(create(_signed_op(op, BY_SIGN["ftoi"]), [rt], [src]).results)
    zero_t = src.type
    zero = ir.FloatAttr.get(element_type(zero_t), 0.0)
    if str(zero_t).startswith("tensor<"):
        zero = ir.DenseElementsAttr.get_splat(zero_t, zero)
    z = create("arith.constant", [zero_t], [], {"value": zero}).results[0]
    return list(create("arith.cmpf", [rt], [src, z], {"predicate": i64(CMPF[("not_equal", "unordered")])}).results)


def maxmin(kind):
    def h(op, rb):
        nan = has(op, "propagate_nan")
        name = {("max", True): "arith.maximumf", ("max", False): "arith.maxnumf",
                ("min", True): "arith.minimumf", ("min", False): "arith.minnumf"}[(kind, nan)]
        return list(create(name, result_types(op, rb), _flat(op, rb)).results)
    return h


def divi(op, rb):
    signed = s(op, "signedness", "signed") == "signed"
    rnd = s(op, "rounding", "zero")
    if signed:
        name = {"positive_inf": "arith.ceildivsi", "negative_inf": "arith.floordivsi"}.get(rnd, "arith.divsi")
    else:
        name = "arith.ceildivui" if rnd == "positive_inf" else "arith.divui"
    return list(create(name, result_types(op, rb), _flat(op, rb)).results)


def mulhii(op, rb):
    """High half of the product; the op is defined on unsigned integers."""
    x, y = _flat(op, rb)
    return [create("arith.mului_extended", [x.type, x.type], [x, y]).results[1]]


def absi(op, rb):
    """|x| as select(x < 0, 0 - x, x): plain integer ops, no library call."""
    (x,) = _flat(op, rb)
    zero = create("arith.constant", [x.type], [], {"value": _zero_attr(x.type)}).results[0]
    i1 = ir.IntegerType.get_signless(1)
    cond_t = ir.RankedTensorType.get(ir.RankedTensorType(x.type).shape, i1) if str(x.type).startswith("tensor<") \
        else i1
    neg = create("arith.cmpi", [cond_t], [x, zero], {"predicate": i64(CMPI[("less_than", "signed")])}).results[0]
    minus = create("arith.subi", [x.type], [zero, x]).results[0]
    return list(create("arith.select", [x.type], [neg, minus, x]).results)


def negi(op, rb):
    (x,) = _flat(op, rb)
    zero = create("arith.constant", [x.type], [], {"value": _zero_attr(x.type)}).results[0]
    return list(create("arith.subi", [x.type], [zero, x]).results)


def _zero_attr(t):
    if str(t).startswith("tensor<"):
        return ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(ir.RankedTensorType(t).element_type, 0))
    return ir.IntegerAttr.get(t, 0)


def cmpf(op, rb):
    key = (s(op, "comparison_predicate"), s(op, "comparison_ordering", "ordered"))
    return list(create("arith.cmpf", result_types(op, rb), _flat(op, rb), {"predicate": i64(CMPF[key])}).results)


def cmpi(op, rb):
    key = (s(op, "comparison_predicate"), s(op, "signedness", "signed"))
    return list(create("arith.cmpi", result_types(op, rb), _flat(op, rb), {"predicate": i64(CMPI[key])}).results)


def constant(op, rb):
    rt = result_types(op, rb)[0]
    val = ir.DenseElementsAttr(op.attributes["value"])
    if not str(rt).startswith("tensor<"):
        if not val.is_splat:
            raise LoweringError("a 0-d constant must hold one value", op)
        return list(create("arith.constant", [rt], [], {"value": val.get_splat_value()}).results)
    if str(val.type) != str(rt):
        raise LoweringError(f"constant type {val.type} does not match its tile type {rt}", op)
    return list(create("arith.constant", [rt], [], {"value": val}).results)


def for_op(op, rb):
    """``for`` -> ``scf.for``; a ``continue`` in ifs of the body (cuTile's ``continue``, and ``break`` as a
    flag it carries) ends the iteration with its values on that path (see :func:`_iteration`)."""
    g = operands(op, rb)
    lb, ub, step = g["lower_bound"][0], g["upper_bound"][0], g["step"][0]
    inits = g["init_values"]
    types = [v.type for v in inits]
    attrs = {"unsignedCmp": ir.UnitAttr.get()} if has(op, "unsigned_cmp") else {}
    new = create("scf.for", types, [lb, ub, step, *inits], attrs, regions=1)
    body = op.regions[0].blocks[0]
    blk = new.regions[0].blocks.append(*[rb.convert_type(a.type) for a in body.arguments],
                                       arg_locs=[a.location for a in body.arguments])
    rb.bind(body.arguments, list(blk.arguments))
    with ir.InsertionPoint(blk):
        _, vals = _iteration(list(body.operations), rb, types, flagged=False)
        create("scf.yield", [], vals)
    return list(new.results)


def if_op(op, rb):
    (cond,) = _flat(op, rb)
    new = create("scf.if", result_types(op, rb), [cond], {}, regions=2)
    for o, n in zip(op.regions, new.regions):
        if len(o.blocks):
            rb.region_into(o, n)
        else:
            n.blocks.append()
            with ir.InsertionPoint(n.blocks[0]):
                create("scf.yield", [], [])
    return list(new.results)


def scf_yield(op, rb):
    parent = op.parent.name if op.parent is not None else ""
    if parent in ("cuda_tile.reduce", "cuda_tile.scan"):
        create(f"{TERM}.yield", [], _flat_term(op, rb))  # combiner bodies: see populator C
    else:
        create("scf.yield", [], _flat_term(op, rb))


def _flat_term(op, rb):
    return rb.gets(op.operands)


EXITS = ("cuda_tile_term.break", "cuda_tile_term.continue")
RETURN = "cuda_tile_term.return"


def _has_exit(if_op) -> bool:
    """True when a branch of ``if_op`` (or of an if nested in it) ends the enclosing loop iteration."""
    for region in if_op.regions:
        for block in region.blocks:
            for o in block.operations:
                if o.operation.name in EXITS or (o.operation.name == "cuda_tile.if" and _has_exit(o.operation)):
                    return True
    return False


def may_return(op) -> bool:
    """True when ``op`` (an ``if`` or a ``loop``) holds a return from the kernel at any depth of ifs and loops:
    cuTile's early ``return`` in an if, and in a ``while`` loop's body (in a ``for`` body cuTile makes it a
    flag and an if after the loop)."""
    if op.name not in ("cuda_tile.if", "cuda_tile.loop"):
        return False
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                if o.operation.name == RETURN or may_return(o.operation):
                    return True
    return False


def returned_flag(rb, op):
    """The i1 that says whether lowered loop ``op`` (one that :func:`may_return`) returned from the kernel."""
    return rb.data["returned"].pop(op)


def _bool(value: int):
    i1 = ir.IntegerType.get_signless(1)
    return create("arith.constant", [i1], [], {"value": ir.IntegerAttr.get(i1, value)}).results[0]


def _iteration(ops, rb, types, flagged=True, carried=None, exits=None):
    """Lower one loop iteration's op sequence; returns (continue?, values) as SSA values.

    An ``if`` that breaks or continues in a branch (at any depth of nested ifs) becomes an ``scf.if``
    yielding the outcome; the ops after it are lowered inside each branch that falls through, so every
    path yields the loop-carried values of its own exit. With ``flagged`` (a ``loop``) the outcome
    starts with an i1 (true: continue, false: break); without it (a ``for``, which only continues) the
    flag is None and only the values are yielded. With ``carried`` (the iteration's values: a ``loop`` that
    may return from the kernel) the last value is an i1 more, true where the iteration returned: a return
    breaks with ``carried`` (never used after the loop: the kernel ends), as does a nested loop that returned.
    ``exits(name, values)``: the values an exit (``continue`` / ``break``) yields, when they are not its
    operands (a ``loop`` whose results differ from its iteration values, see :func:`loop`).
    """
    i1 = ir.IntegerType.get_signless(1)
    returning = carried is not None
    for idx, o in enumerate(ops):
        o = o.operation
        if o.name in EXITS:
            if not flagged and o.name == "cuda_tile_term.break":
                raise LoweringError("'cuda_tile.break' outside a 'loop' body", o)
            flag = _bool(int(o.name.endswith("continue"))) if flagged else None
            vals = rb.gets(o.operands)
            vals = exits(o.name, vals) if exits else vals
            return flag, vals + ([_bool(0)] if returning else [])
        if o.name == RETURN:
            if not returning:
                raise LoweringError("a 'return' inside a 'for' body is not supported", o)
            return _bool(0), list(carried[:-1]) + [_bool(1)]
        if o.name == "cuda_tile_term.yield":  # a branch falling through: bind the if's results
            rb.bind(o.parent.results, rb.gets(o.operands))
            continue
        if o.name == "cuda_tile.if" and (_has_exit(o) or (returning and may_return(o))):
            rest = list(ops[idx + 1:])
            outcome = [i1, *types] if flagged else list(types)
            with o.location:
                node = create("scf.if", outcome, rb.gets(o.operands), {}, regions=2)
                for region, new in zip(o.regions, node.regions):
                    blk = new.blocks.append()
                    body = list(region.blocks[0].operations) if len(region.blocks) else []
                    with ir.InsertionPoint(blk):
                        flag, vals = _iteration(body + rest, rb, types, flagged, carried, exits)
                        create("scf.yield", [], [flag, *vals] if flagged else vals)
            res = list(node.results)
            return (res[0], res[1:]) if flagged else (None, res)
        if o.name == "cuda_tile.loop" and may_return(o):  # an inner loop that returned ends this one too
            if not returning:
                raise LoweringError("a 'return' inside a 'for' body is not supported", o)
            rb.op(o)
            rest = list(ops[idx + 1:])
            outcome = [i1, *types]
            with o.location:
                node = create("scf.if", outcome, [returned_flag(rb, o)], {}, regions=2)
                with ir.InsertionPoint(node.regions[0].blocks.append()):
                    create("scf.yield", [], [_bool(0), *carried[:-1], _bool(1)])
                with ir.InsertionPoint(node.regions[1].blocks.append()):
                    flag, vals = _iteration(rest, rb, types, flagged, carried, exits)
                    create("scf.yield", [], [flag, *vals])
            res = list(node.results)
            return res[0], res[1:]
        rb.op(o)
    raise LoweringError("a loop body must end with 'continue' or 'break'", ops[-1] if ops else None)


def loop(op, rb):
    """``loop`` (with break / continue anywhere in nested ifs) -> ``scf.while``: the before region runs
    one iteration and continues while it ended in ``continue``; the after region forwards the values.
    A loop that may return from the kernel carries an i1 more (false at first, true once an iteration
    returned): the caller finds it with :func:`returned_flag` and runs the ops after the loop only where it
    is false. A loop whose results (the values of ``break``) differ from its iteration values (those of
    ``continue``) carries both: a ``continue`` keeps the result part as it was (zeros at first), a ``break``
    the iteration part; the loop's results are the result part."""
    inits = rb.gets(op.operands)
    types = [v.type for v in inits]
    rtypes = result_types(op, rb)
    exits = None
    split = [str(t) for t in types] != [str(t) for t in rtypes]
    if split:
        n_iter = len(inits)
        inits = inits + [_zero(t, op) for t in rtypes]
        types = types + list(rtypes)

        def exits(name, vals):
            if name.endswith("continue"):
                return vals + carried[n_iter:n_iter + len(rtypes)]
            return carried[:n_iter] + vals
    returning = may_return(op)
    if returning:
        inits = inits + [_bool(0)]
        types = types + [ir.IntegerType.get_signless(1)]
    node = create("scf.while", types, inits, {}, regions=2)
    body = op.regions[0].blocks[0]
    locs = [a.location for a in body.arguments] + [op.location] * (len(types) - len(body.arguments) - returning)
    before = node.regions[0].blocks.append(*types, arg_locs=locs + locs[:1] if returning else locs)
    carried = list(before.arguments)
    rb.bind(body.arguments, carried[:len(body.arguments)])
    with ir.InsertionPoint(before):
        flag, vals = _iteration(list(body.operations), rb, types, carried=carried if returning else None,
                                exits=exits)
        create("scf.condition", [], [flag, *vals])
    after = node.regions[1].blocks.append(*types)
    with ir.InsertionPoint(after):
        create("scf.yield", [], list(after.arguments))
    results = list(node.results)
    if returning:
        rb.data.setdefault("returned", {})[op] = results.pop()
    return results[n_iter:] if split else results


def _zero(ty, op):
    """A zero of a loop result type (the first value of a result carried through the iterations)."""
    tensor = isinstance(ty, ir.RankedTensorType)
    elem = ty.element_type if tensor else ty
    if isinstance(elem, (ir.IntegerType, ir.FloatType)):
        value = ir.IntegerAttr.get(elem, 0) if isinstance(elem, ir.IntegerType) else ir.FloatAttr.get(elem, 0.0)
        attr = ir.DenseElementsAttr.get_splat(ty, value) if tensor else value
        return create("arith.constant", [ty], [], {"value": attr}).results[0]
    raise LoweringError(f"a loop result of type {ty} that is not among its iteration values is not supported "
                        "(only integer and float tiles)", op)


def break_op(op, rb):
    """Loop bodies consume their exits (:func:`_iteration`); one reached here is outside any loop."""
    raise LoweringError("'cuda_tile.break' outside a 'loop' body", op)


def continue_op(op, rb):
    """See :func:`break_op`."""
    raise LoweringError("'cuda_tile.continue' outside a 'for' or 'loop' body", op)


def shape_op(name, attrs_fn=None):
    def h(op, rb):
        flat = _flat(op, rb)
        attrs = attrs_fn(op) if attrs_fn else {}
        return list(builder.build(name, _groups_for(name, flat), result_types(op, rb), attrs).results)
    return h


def _groups_for(name, flat):
    if name in ("extract_slice",):
        return [flat[0], flat[1:]]
    if name == "insert_slice":
        return [flat[0], flat[1], flat[2:]]
    return flat


def _perm(op):
    return {"permutation": op.attributes["permutation"]}


def _dim(op):
    return {"dim": op.attributes["dim"]}


def assert_op(op, rb):
    builder.build("assert", _flat(op, rb), [], {"message": op.attributes["message"]})


def print_op(op, rb):
    g = operands(op, rb)
    args = g.get("args", [])
    if len(args) > PRINT_SLOTS:
        raise LoweringError(f"print with more than {PRINT_SLOTS} arguments is not supported", op)
    slots = list(args) + [None] * (PRINT_SLOTS - len(args))
    tok = (g.get("token") or [None])[0]
    res = [ir.Type.parse("!nv_tileaa.mem_token")] if op.results else [None]
    new = builder.build("print", [*slots, tok], res, {"str": op.attributes["str"]})
    return list(new.results)


F32_MIN_NORMAL = 2.0 ** -126


def _flush(v):
    """``v`` with its f32 subnormals flushed to a zero of their sign (PTX ``.ftz``); other types unchanged."""
    if str(element_type(v.type)) != "f32":
        return v
    i1 = _like(v.type, ir.IntegerType.get_signless(1))
    mag = create("math.absf", [v.type], [v]).results[0]
    tiny = create("arith.cmpf", [i1], [mag, _splat(v.type, ir.FloatAttr.get(ir.F32Type.get(), F32_MIN_NORMAL))],
                  {"predicate": i64(CMPF[("less_than", "ordered")])}).results[0]
    zero = create("math.copysign", [v.type], [_splat(v.type, ir.FloatAttr.get(ir.F32Type.get(), 0.0)), v]).results[0]
    return create("arith.select", [v.type], [tiny, zero, v]).results[0]


def flushing(handler):
    """``handler`` for an op that may carry ``flush_to_zero``: f32 subnormal operands and results become
    zeros of their sign (the op's ``.ftz`` form; "flush_to_zero: flushes subnormal inputs and results")."""
    def h(op, rb):
        if not has(op, "flush_to_zero"):
            return handler(op, rb)
        olds = rb.gets(op.operands)
        rb.bind(op.operands, [_flush(v) for v in olds])
        try:
            results = handler(op, rb)
        finally:
            rb.bind(op.operands, olds)
        return [_flush(v) for v in results]
    return h


POPULATOR = {
    **{f"cuda_tile.{k}": same_operands(v) for k, v in SAME_OPERANDS.items()},
    **{f"cuda_tile.{k}": by_sign(v) for k, v in BY_SIGN.items()},
    "cuda_tile.ftof": ftof, "cuda_tile.ftoi": ftoi, "cuda_tile.itof": itof, "cuda_tile.maxf": maxmin("max"), "cuda_tile.minf": maxmin("min"),
    "cuda_tile.divi": divi, "cuda_tile.negi": negi, "cuda_tile.absi": absi, "cuda_tile.mulhii": mulhii, "cuda_tile.cmpf": cmpf, "cuda_tile.cmpi": cmpi,
    "cuda_tile.constant": constant, "cuda_tile.for": for_op, "cuda_tile.if": if_op, "cuda_tile.loop": loop,
    "cuda_tile_term.yield": scf_yield, "cuda_tile_term.continue": continue_op,
    "cuda_tile_term.break": break_op,
    "cuda_tile.broadcast": shape_op("broadcast"), "cuda_tile.reshape": shape_op("reshape"),
    "cuda_tile.permute": shape_op("permute", _perm), "cuda_tile.extract": shape_op("extract_slice"),
    "cuda_tile.insert": shape_op("insert_slice"), "cuda_tile.cat": shape_op("cat", _dim),
    "cuda_tile.iota": shape_op("iota"), "cuda_tile.pack": shape_op("pack"), "cuda_tile.unpack": shape_op("unpack"),
    "cuda_tile.assert": assert_op, "cuda_tile.print_tko": print_op,
}
for _name in ("addf", "subf", "mulf", "divf", "fma", "exp2", "rsqrt", "sqrt", "maxf", "minf"):
    POPULATOR[f"cuda_tile.{_name}"] = flushing(POPULATOR[f"cuda_tile.{_name}"])
