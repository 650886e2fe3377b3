"""Idioms of the third-party kernel rounds (``tests/test_thirdparty_kernels*.py``) the other templates never drew.

Two ways in, both on the generator's ``idiom`` stream (``Gen.idiom``) or in a template of weight 0, so the programs
that the default draw gave before stay the same except for the statements these add:

- :func:`chain_op`: after any op chain (``Gen.chain``), with chance ``CHAIN_CHANCE``, one of: ``ct.where`` with a
  Python or runtime scalar branch; an ``@ct.function`` helper called with its defaults, with keyword-only
  arguments, in a conditional expression on a runtime scalar, or recursing on a constant depth; the functional
  forms (``ct.bitwise_xor`` / ``ct.bitwise_rshift``, ``ct.less`` / ``ct.negative``); scans with a
  non-commutative combiner (forward / backward fill of non-zeros; a tuple scan composing affine maps, the
  selective-scan recurrence, in wrapping integers); an exclusive cumsum; a three-operand tuple ``ct.reduce``
  (maximum, its first index, its count) with its results stored; a float conversion with a directed rounding mode
  (every pair cuTile admits between f64 / f32 / bf16 / f16).
- :func:`t_idioms` (``--template idioms``): 3-D / 4-D tiles (a 4-D grid folded into ``ct.bid(2)``), loads with
  ``order="F"`` or a permutation, runtime scalar parameters of every width (int8 ... uint64, f16 / f32 / f64,
  bool) converted with ``ct.astype``, ``expand_dims`` / ``broadcast_to`` / ``t[:, None]`` / ``reshape`` /
  ``permute`` chains, ``ct.static_iter``, ``while True`` with ``break`` on a runtime scalar, ``ct.arange`` with
  ``start`` / ``step``, tuple parameters (arrays and scalars), and several :func:`chain_op` idioms.

The numpy models are :mod:`.npsem`'s (``fill_scan``, ``affine_scan``, ``max_first_count``, ``directed_cast``).
"""

from __future__ import annotations

import math
import random

from . import generator as G
from .dtypes import DTYPES, F8, FLOATS, INTS, SCALAR_TYPES

CHAIN_CHANCE = 0.1  # per op chain: ~15 % of the default draw's programs add one idiom

# float -> float conversions with a directed rounding mode that cuTile 1.7 admits (``_ir/ops_utils.py``'s table)
DIRECTED_CASTS = {"f64": [("f32", ("RZ", "RM", "RP")), ("f16", ("RZ",)), ("bf16", ("RZ",))],
                  "f32": [("f16", ("RZ",)), ("bf16", ("RZ",))],
                  "bf16": [("f16", ("RZ", "RM", "RP", "RA"))],
                  "f16": [("f64", ("RA",))]}

# every width of a runtime scalar parameter (u16 / u64 only here)
SCALAR_WIDTHS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64", "bool"]

HELPERS = {
    "fz_affine": (["@ct.function", "def fz_affine(x, scale=2, *, shift=1):", "    return x * scale + shift"],
                  ["def m_fz_affine(x, d, scale=2, *, shift=1):", "    return ns.r(ns.r(x * scale, d) + shift, d)"]),
    "fz_bump": (["@ct.function", "def fz_bump(x, d):", "    return x if d == 0 else fz_bump(x + 1, d - 1)"],
                ["def m_fz_bump(x, d, k):", "    return x if d == 0 else m_fz_bump(ns.r(x + 1, k), d - 1, k)"]),
    "fz_max_first_count": (["@ct.function", "def fz_max_first_count(a0, a1, a2, b0, b1, b2):",
                            "    take = (b0 > a0) | ((b0 == a0) & (b1 < a1))",
                            "    count = ct.where(b0 > a0, b2, ct.where(a0 > b0, a2, a2 + b2))",
                            "    return ct.where(take, b0, a0), ct.where(take, b1, a1), count"], []),
}


def _helper(g, name: str) -> None:
    g.helpers.setdefault(name, HELPERS[name])


def chain_op(g, v, depth: int, pointwise_only: bool, allow_cast: bool):
    """One idiom applied to ``v`` (drawn on ``g.idiom``); returns the new value (``v`` when none applies)."""
    r = g.idiom
    kind = DTYPES[v.dt].kind
    if kind == "b" or v.dt in F8:
        return v
    movable = not pointwise_only and not v.tainted
    opts = ["helper_call", "functional"] + (["where_scalar"] if v.exact else [])
    if movable and v.exact:
        opts.append("fill_scan")
    if movable and kind in "iu":
        opts += ["affine_scan", "exclusive"]
    if movable and v.exact and depth == 0 and not g.keep_shape:
        opts.append("tuple_reduce")
    if kind == "f" and allow_cast and v.dt in DIRECTED_CASTS and v.bound < 6e4:
        opts.append("directed_cast")
    what = r.choice(opts)
    res = globals()["_" + what](g, v, depth)
    if res is None:
        return v
    g.features.add(f"idiom:{what}")
    return res


def _lit(dt: str, v) -> str:
    """A Python literal of element type ``dt``'s kind."""
    return repr(float(v)) if DTYPES[dt].kind == "f" else str(int(v))


def _where_scalar(g, v, depth):
    r = g.idiom
    d = DTYPES[v.dt]
    if v.dt in SCALAR_TYPES and r.random() < 0.5:  # a runtime scalar in both the condition and a branch
        s = g.scalar(v.dt, _scalar_value(r, v.dt))
        res = g.new_val(v, bound=max(v.bound, 2.0))
        g.emit(f"{res.name} = ct.where({v.name} < {s.name}, {s.name}, {v.name})",
               f"{res.name} = np.where({v.name} < {s.name}, {s.name}, {v.name}).astype({v.name}.dtype)", depth,
               g._bypass(res, v), feature="where_runtime_scalar")
        return res
    c = r.choice([0, 1, 3]) if d.kind == "u" else r.choice([-3, 0, 2]) if d.kind == "i" else r.choice([-0.5, 0.0, 0.5])
    k = r.choice([0, 2, 9]) if d.kind == "u" else r.choice([-9, 0, 7]) if d.kind == "i" else r.choice([1.5, -2.0, 0.25])
    left = r.random() < 0.5  # the scalar in the true or the false branch
    br = (f"{v.name}, {_lit(v.dt, k)}", f"{v.name}, np.asarray({_lit(v.dt, k)}, {v.name}.dtype)") if left else \
        (f"{_lit(v.dt, k)}, {v.name}", f"np.asarray({_lit(v.dt, k)}, {v.name}.dtype), {v.name}")
    res = g.new_val(v, bound=max(v.bound, abs(k)))
    g.emit(f"{res.name} = ct.where({v.name} > {_lit(v.dt, c)}, {br[0]})",
           f"{res.name} = np.where({v.name} > {_lit(v.dt, c)}, {br[1]})", depth, g._bypass(res, v),
           feature="where_scalar")
    return res


def _scalar_value(r, dt: str, unsigned: bool = False) -> str:
    """A runtime scalar's value as the numpy expression ``make_inputs`` writes (``unsigned``: converted to an
    unsigned type, so a float is not negative: float -> unsigned of a negative value is out of range)."""
    d = DTYPES[dt]
    if d.kind == "b":
        return f"np.bool_({r.random() < 0.5})"
    v = round(r.uniform(0 if unsigned else -2, 2), 3) if d.kind == "f" else r.randint(0, 5) if d.kind == "u" else r.randint(-5, 5)
    return f"np.{d.storage.__name__}({v})"


def _helper_call(g, v, depth):
    r = g.idiom
    d = DTYPES[v.dt]
    if d.kind == "f" and v.bound > 1e3:
        return None
    form = r.choice(["defaults", "keywords", "conditional", "recursion"])
    neg = "-1" if d.kind != "u" else "3"
    x, dm = v.name, repr(v.dt)
    if form == "recursion":
        _helper(g, "fz_bump")
        n = r.randint(1, 3)
        k, m, bound = f"fz_bump({x}, {n})", f"m_fz_bump({x}, {n}, {dm})", v.bound + n
    else:
        _helper(g, "fz_affine")
        a_k, a_m = f"fz_affine({x})", f"m_fz_affine({x}, {dm})"
        b_k, b_m = f"fz_affine({x}, 3, shift={neg})", f"m_fz_affine({x}, {dm}, 3, shift={neg})"
        bound = 3 * v.bound + 3
        if form == "defaults":
            k, m = a_k, a_m
        elif form == "keywords":
            k, m = b_k, b_m
        else:  # a runtime condition choosing between two calls
            s = g.scalar("i32", f"np.int32({r.randint(0, 5)})")
            k, m = f"{a_k} if {s.name} > 2 else {b_k}", f"{a_m} if {s.name} > 2 else {b_m}"
    exact = v.exact and d.kind != "f"
    res = g.new_val(v, exact=exact, bound=bound if d.kind == "f" else v.bound, nops=v.nops + (0 if exact else 2),
                    cancel=v.cancel or not exact)
    g.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, g._bypass(res, v), feature=f"function:{form}")
    return res



def _functional(g, v, depth):
    d = DTYPES[v.dt]
    res = g.new_val(v)
    if d.kind == "f":
        k = f"ct.where(ct.less({v.name}, 0), ct.negative({v.name}), {v.name})"
        m = f"np.where({v.name} < 0, -{v.name}, {v.name})"
    else:
        s = g.idiom.randint(1, d.bits - 1)
        k = f"ct.bitwise_xor({v.name}, ct.bitwise_rshift({v.name}, {s}))"
        m = f"{v.name} ^ ({v.name} >> {s})"
    g.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, g._bypass(res, v), feature="functional_forms")
    return res


def _fill_scan(g, v, depth):
    r = g.idiom
    ax = r.randrange(len(v.axes))
    rev = r.random() < 0.5
    zero = "0.0" if DTYPES[v.dt].kind == "f" else "0"
    res = g.new_val(v)
    g.emit(f"{res.name} = ct.scan({v.name}, axis={ax}, func=lambda p, q: ct.where(q != 0, q, p), identity={zero}"
           f"{', reverse=True' if rev else ''})", f"{res.name} = ns.fill_scan({v.name}, {ax}, {rev})", depth,
           g._bypass(res, v), feature="scan_noncommutative" + ("_reverse" if rev else ""))
    return res


def _affine_scan(g, v, depth):
    r = g.idiom
    ax = r.randrange(len(v.axes))
    rev = r.random() < 0.5
    a, t = g.tmp(), g.tmp()
    res = g.new_val(v)
    g.emit([f"{a} = ({v.name} & 3) - 1",
            f"{t}, {res.name} = ct.scan(({a}, {v.name}), axis={ax}, func=lambda a1, b1, a2, b2: (a1 * a2, a2 * b1 + b2), "
            f"identity=(1, 0){', reverse=True' if rev else ''})"],
           [f"{a} = ({v.name} & 3) - 1", f"{res.name} = ns.affine_scan({a}, {v.name}, {ax}, {rev})"], depth,
           g._bypass(res, v), feature="tuple_scan" + ("_reverse" if rev else ""))
    return res


def _exclusive(g, v, depth):
    r = g.idiom
    ax = r.randrange(len(v.axes))
    rev = r.random() < 0.5
    res = g.new_val(v)
    g.emit(f"{res.name} = ct.cumsum({v.name}, axis={ax}, reverse={rev}) - {v.name}",
           f"{res.name} = ns.scan('sum', {v.name}, {ax}, {rev}, {v.dt!r}) - {v.name}", depth, g._bypass(res, v),
           feature="exclusive_scan")
    return res


def _tuple_reduce(g, v, depth):
    """(maximum, its first index, its count) along an axis by one ``ct.reduce`` of three operands (the index an
    ``arange`` indexed with ``None``s, the ones a broadcast (1, ..., 1) tile); the three results stored."""
    _helper(g, "fz_max_first_count")
    r = g.idiom
    rank = len(v.axes)
    ax = r.randrange(rank)
    a = v.axes[ax]
    d = DTYPES[v.dt]
    ident = "-float('inf')" if d.kind == "f" else str(int(d.lo))
    sub = ", ".join(":" if i == ax else "None" for i in range(rank))
    ones = "(" + "1, " * rank + ")"
    m, i, c = g.tmp(), g.tmp(), g.tmp()
    g.emit(f"{m}, {i}, {c} = ct.reduce(({v.name}, ct.arange({a.sym}, dtype=ct.int32)[{sub}], "
           f"ct.full({ones}, 1, dtype=ct.int32)), axis={ax}, func=fz_max_first_count, identity=({ident}, 1073741824, 0), "
           f"keepdims=True)", f"{m}, {i}, {c} = ns.max_first_count({v.name}, {ax})", depth, feature="tuple_reduce")
    axes = list(v.axes)
    axes[ax] = G.Axis(f"ns.cdiv({a.extent}, {a.sym})", a.index, 1)
    for name, dt in ((m, v.dt), (i, "i32"), (c, "i32")):
        g.store(G.Val(name, dt, list(axes)), depth, draw=False)
    return v


def _directed_cast(g, v, depth, r=None):
    r = r or g.idiom
    dst, modes = r.choice(DIRECTED_CASTS[v.dt])
    if dst == "f16" and v.bound >= 6e4:
        return None
    mode = r.choice(modes)
    res = g.new_val(v, dt=dst, bound=v.bound * 1.01 + 1e-3)
    if not v.exact:
        res.rtol = max(v.rtol, 2 * DTYPES[v.dt].rtol)
        res.nops = v.nops + 1
    k = f"ct.astype({v.name}, ct.{DTYPES[dst].ct}, rounding_mode=ct.RoundingMode.{mode})"
    m = f"ns.directed_cast({v.name}, {dst!r}, {mode.lower()!r})"
    feature = f"directed_cast:{v.dt}->{dst}:{mode}"
    # half of the exact values converted to f16: scaled by 2**-20 first (exact), into f16's subnormal range, where
    # bf16 -> f16 has ties (RA rounded them to even: found so), and back by 2**10 twice (exact in f16); a draw of
    # its own (the idiom stream's later draws stay put)
    if dst == "f16" and v.exact and v.bound <= 64 and random.Random(f"subnormal-{g.seed}-{res.name}").random() < 0.5:
        k = f"ct.astype({v.name} * {2.0**-20!r}, ct.float16, rounding_mode=ct.RoundingMode.{mode}) * 1024.0 * 1024.0"
        m = (f"ns.r(ns.r(ns.directed_cast(ns.r({v.name} * {2.0**-20!r}, {v.dt!r}), 'f16', {mode.lower()!r}) * 1024.0, "
             f"'f16') * 1024.0, 'f16')")
        feature += ":subnormal"
    g.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, feature=feature)
    return res


# ------------------------------------------------------------------------------ the idioms template


def t_idioms(g, p):
    """3-D / 4-D tiles, ``order="F"`` / permuted loads, runtime scalars of every width, shape chains, static_iter,
    ``while True`` + ``break``, ``arange`` with start / step, and 2-4 :func:`chain_op` idioms (see the module)."""
    rank = g.pick([3, 3, 4])
    while True:
        T = [g.pick([1, 2, 4, 8]) for _ in range(rank)]
        if 2 <= math.prod(T) <= 512:
            break
    p.rank, p.tile = rank, T
    p.extents = [G._extent(g.rng, t, 2) for t in T]
    dt = g.pick(FLOATS + INTS)
    g.features.add(f"dtype:{dt}")
    bv = ["b0", "b1", "b2"] if rank == 3 else ["b0", "b1", "i2", "i3"]
    p.grid = [f"ns.cdiv(S[{i}], T{i})" for i in range(3)]
    q = g.array(dt, rank, [f"S[{i}]" for i in range(rank)])
    if rank == 4:  # the last two axes share ct.bid(2): computed tile indices
        p.grid[2] = "ns.cdiv(S[2], T2) * ns.cdiv(S[3], T3)"
        g.emit(["c3 = ct.cdiv(" + q.name + ".shape[3], T3)", "i2 = b2 // c3", "i3 = b2 % c3"],
               ["c3 = ns.cdiv(S[3], T3)", "i2 = b2 // c3", "i3 = b2 % c3"], feature="bid_folded")
    form = g.pick(["F", "perm", "none", "none"])
    order = tuple(reversed(range(rank))) if form == "F" else tuple(g.rng.sample(range(rank), rank)) \
        if form == "perm" else None
    perm = order or tuple(range(rank))
    idx = "(" + "".join(f"{bv[perm[i]]}, " for i in range(rank)) + ")"
    tsh = "(" + "".join(f"T{a}, " for a in perm) + ")"
    ko = ', order="F"' if form == "F" else f", order={order}" if order else ""
    mo = f", order={order}" if order else ""
    v = g.new_val(dt=dt, axes=[G.Axis(f"S[{a}]", bv[a], T[a], f"T{a}") for a in perm])
    g.emit(f"{v.name} = ct.load({q.name}, index={idx}, shape={tsh}{ko}, padding_mode=ct.PaddingMode.ZERO)",
           f"{v.name} = ns.load({q.name}, {idx}, {tsh}, 0{mo})", feature=f"load_order_{form}")
    cast = random.Random(f"cast-{g.seed}")  # a stream of its own: the draws below stay put
    if v.dt in DIRECTED_CASTS and cast.random() < 0.4:  # a directed cast of the loaded (exact) tile, stored as it is
        w = _directed_cast(g, v, 0, cast)
        if w is not None:
            g.store(w, 0, draw=False)
            v = w
    for _ in range(g.rng.randint(1, 2)):
        v = _scalar_width(g, v)
    shape_ops = [_bcast_sum, _none_index, _reshape_permute, _static_iter, _while_break, _arange, _axis_tuple,
                 _transpose_pair, _static_eval, _astile, _ones_zeros, _scalar_left, _while_tile_cond, _nested_break,
                 _range_step]
    for f in g.rng.sample(shape_ops, g.rng.randint(2, 3)):
        v = f(g, v) or v
    for _ in range(g.rng.randint(2, 4)):
        v = chain_op(g, v, 0, False, True)
    if g.idiom.random() < 0.5:  # tuple scans of mixed element types (on the idiom stream: the draws above stay)
        v = (_segmented_scan if DTYPES[v.dt].kind in "iu" else _argmax_scan)(g, v) or v
    v = g.chain(v, g.rng.randint(0, 2), 0)
    g.store(v, 0)
    if g.chance(0.5):
        _tuple_parameter(g)


def _tuple_parameter(g) -> None:
    """Two or three input parameters (arrays, scalars) passed as one tuple parameter ``t0`` (unpacked first thing
    in the kernel; ``cutile_python_v2``: the leaves pass one after the other, so the members move next to each
    other in the parameter list)."""
    ins = [q for q in g.params if q.role == "in"]
    if len(ins) < 2:
        return
    chosen = {q.name for q in g.rng.sample(ins, min(len(ins), g.rng.randint(2, 3)))}
    members = [q for q in ins if q.name in chosen]
    at = next(i for i, q in enumerate(g.params) if q.name in chosen)
    rest = [q for q in g.params if q.name not in chosen]
    g.params[:] = rest[:at] + members + rest[at:]
    for q in members:
        q.group = "t0"
    g.features.add("tuple_parameter")


def _scalar_width(g, v):
    """``v + ct.astype(s, v's type)`` for a runtime scalar ``s`` of any width."""
    sdt = g.pick(SCALAR_WIDTHS)
    d = DTYPES[v.dt]
    s = g.scalar(sdt, _scalar_value(g.rng, sdt, unsigned=d.kind == "u"))
    g.features.add(f"scalar_width:{sdt}")
    if d.kind == "f":
        res = g.new_val(v, exact=False, bound=v.bound + 3, nops=v.nops + 1, cancel=True)
        m = f"ns.r({v.name} + ns.cast(np.asarray({s.name}), {sdt!r}, {v.dt!r}), {v.dt!r})"
    else:
        res = g.new_val(v)
        m = f"({v.name} + ns.cast(np.asarray({s.name}), {sdt!r}, {v.dt!r})).astype({v.name}.dtype)"
    g.emit(f"{res.name} = {v.name} + ct.astype({s.name}, ct.{d.ct})", f"{res.name} = {m}", feature="runtime_scalar_width")
    return res


def _bcast_sum(g, v):
    """``sum(broadcast_to(expand_dims(v, axis=-2), (..., k, last)), axis=-2)``: k * v (k a power of two: exact)."""
    k = g.pick([2, 4])
    if DTYPES[v.dt].kind == "f" and v.bound * k > 1e4:
        return None
    shp = v.shape[:-1] + (k, v.shape[-1])
    res = g.new_val(v, bound=v.bound * k)
    t = g.tmp()
    g.emit([f"{t} = ct.broadcast_to(ct.expand_dims({v.name}, axis=-2), {shp})", f"{res.name} = ct.sum({t}, axis=-2)"],
           [f"{res.name} = ({v.name} * {k}).astype({v.name}.dtype)"], feature="expand_broadcast_sum")
    return res


def _none_index(g, v):
    """``v[:, None]`` (a new axis 1 by indexing), reduced away again by a max over it."""
    res = g.new_val(v)
    g.emit(f"{res.name} = ct.max({v.name}[:, None, ...], axis=1)", f"{res.name} = {v.name}.copy()", feature="none_index")
    return res


def _reshape_permute(g, v):
    """A permutation of the tile, two adjacent axes merged by ``reshape`` and split again."""
    r = len(v.axes)
    perm = tuple(g.rng.sample(range(r), r))
    shp = tuple(v.shape[i] for i in perm)
    j = g.rng.randrange(r - 1)
    flat = shp[:j] + (shp[j] * shp[j + 1],) + shp[j + 2:]
    t, u = g.tmp(), g.tmp()
    res = g.new_val(v, axes=[v.axes[i] for i in perm])
    g.emit([f"{t} = ct.permute({v.name}, {perm})", f"{u} = ct.reshape({t}, {flat})", f"{res.name} = ct.reshape({u}, {shp})"],
           [f"{res.name} = np.transpose({v.name}, {perm})"], feature="permute_reshape")
    return res


def _static_iter(g, v):
    res = g.new_val(v, exact=v.exact and DTYPES[v.dt].kind != "f", bound=v.bound + 6, nops=v.nops + 3)
    g.emit([f"{res.name} = {v.name}", "for c in ct.static_iter((1, 2, 3)):", f"    {res.name} = {res.name} + c"],
           [f"{res.name} = {v.name}", "for c in (1, 2, 3):", f"    {res.name} = ns.r({res.name} + c, {v.dt!r})"],
           feature="static_iter")
    return res


def _while_break(g, v):
    s = g.scalar("i32", f"np.int32({g.rng.randint(1, 3)})")
    res = g.new_val(v, exact=v.exact and DTYPES[v.dt].kind != "f", bound=v.bound + 3, nops=v.nops + 3)
    body = [f"{res.name} = {v.name}", "k = 0", "while True:", f"    {res.name} = {res.name} + 1", "    k += 1",
            f"    if k >= {s.name}:", "        break"]
    model = list(body)
    model[3] = f"    {res.name} = ns.r({res.name} + 1, {v.dt!r})"
    g.emit(body, model, feature="while_true_break")
    return res


def _arange(g, v):
    """``v + arange(n, start=, step=)`` along the last axis."""
    d = DTYPES[v.dt]
    n = v.shape[-1]
    start = g.rng.randint(0, 5)
    step = g.rng.choice([1, 2, 3] if d.kind == "u" else [-2, -1, 2, 3])
    res = g.new_val(v, exact=v.exact and d.kind != "f", bound=v.bound + 5 + 3 * n, nops=v.nops + 1)
    g.emit(f"{res.name} = {v.name} + ct.arange({v.axes[-1].sym}, dtype=ct.{d.ct}, start={start}, step={step})",
           f"{res.name} = ns.r({v.name} + (np.arange({n}) * {step} + {start}).astype({v.name}.dtype), {v.dt!r})",
           feature="arange_start_step")
    return res


def _axis_tuple(g, v):
    """``v - max(v, axis=(0, -1), keepdims=True)``: a reduction over an axis tuple with a negative axis."""
    d = DTYPES[v.dt]
    if d.kind == "f":
        res = g.new_val(v, exact=False, bound=2 * v.bound, nops=v.nops + 1, cancel=True)
        m = f"ns.r({v.name} - np.max({v.name}, axis=(0, -1), keepdims=True), {v.dt!r})"
    else:
        res = g.new_val(v)
        m = f"{v.name} - np.max({v.name}, axis=(0, -1), keepdims=True)"
    g.emit(f"{res.name} = {v.name} - ct.max({v.name}, axis=(0, -1), keepdims=True)", f"{res.name} = {m}",
           feature="reduce_axis_tuple")
    return res


def _transpose_pair(g, v):
    """``ct.transpose(v, 0, 2)``: two axes of a 3- / 4-D tile swapped."""
    axes = list(v.axes)
    axes[0], axes[2] = axes[2], axes[0]
    res = g.new_val(v, axes=axes)
    g.emit(f"{res.name} = ct.transpose({v.name}, 0, 2)", f"{res.name} = np.swapaxes({v.name}, 0, 2)",
           feature="transpose_axes")
    return res


def _static_eval(g, v):
    """``v + ct.static_eval(T0 * 2 + 1)`` (a compile-time expression of a constant parameter)."""
    d = DTYPES[v.dt]
    t = v.axes[0].sym if v.axes[0].sym.startswith("T") else "T0"
    res = g.new_val(v, exact=v.exact and d.kind != "f", bound=v.bound + 20, nops=v.nops + 1)
    g.emit(f"{res.name} = {v.name} + ct.static_eval({t} * 2 + 1)",
           f"{res.name} = ns.r({v.name} + ({t} * 2 + 1), {v.dt!r})", feature="static_eval")
    return res


def _astile(g, v):
    """``v + ct.astile((c0, ..., cn-1), dtype)`` along the last axis (a constant table)."""
    d = DTYPES[v.dt]
    vals = [g.rng.randint(0, 4) for _ in range(v.shape[-1])]
    lit = "(" + "".join(f"{_lit(v.dt, c)}, " for c in vals) + ")"
    res = g.new_val(v, exact=v.exact and d.kind != "f", bound=v.bound + 4, nops=v.nops + 1)
    g.emit(f"{res.name} = {v.name} + ct.astile({lit}, dtype=ct.{d.ct})",
           f"{res.name} = ns.r({v.name} + np.array({lit}, {v.name}.dtype), {v.dt!r})", feature="astile")
    return res


def _ones_zeros(g, v):
    """``v * ct.ones(shape, dtype) + ct.zeros(shape, dtype)``."""
    d = DTYPES[v.dt]
    res = g.new_val(v)
    g.emit(f"{res.name} = {v.name} * ct.ones({v.shape}, dtype=ct.{d.ct}) + ct.zeros({v.shape}, dtype=ct.{d.ct})",
           f"{res.name} = ns.r({v.name} * 1 + 0, {v.dt!r})", feature="ones_zeros")
    return res


def _scalar_left(g, v):
    """A Python scalar on the left of an operator: ``c - v``."""
    d = DTYPES[v.dt]
    c = g.rng.randint(0, 9)
    res = g.new_val(v, exact=v.exact and d.kind != "f", bound=v.bound + 9, nops=v.nops + 1,
                    cancel=v.cancel or d.kind == "f")
    g.emit(f"{res.name} = {_lit(v.dt, c)} - {v.name}", f"{res.name} = ns.r({_lit(v.dt, c)} - {v.name}, {v.dt!r})",
           feature="scalar_left")
    return res


def _while_tile_cond(g, v):
    """``while ct.max(w) > lim: w = w // 2`` (unsigned ``>> 1``, floats ``* 0.5``, exact): a loop on a condition of
    the tile."""
    d = DTYPES[v.dt]
    lim = g.rng.choice([1, 3, 20])
    if d.kind == "f" and v.bound > 1e4:  # no infinity that halving never brings down
        return None
    res = g.new_val(v)
    if d.kind == "f":
        k_step, m_step, lit = f"{res.name} * 0.5", f"ns.r({res.name} * 0.5, {v.dt!r})", f"{lim}.0"
    else:  # unsigned: a shift (cuTile 1.7 writes unsigned // as a divi rounding to -inf, which tileiras refuses too)
        op = ">> 1" if d.kind == "u" else "// 2"
        k_step, m_step, lit = f"{res.name} {op}", f"{res.name} {op}", str(lim)
    g.emit([f"{res.name} = {v.name}", f"while ct.max({res.name}) > {lit}:", f"    {res.name} = {k_step}"],
           [f"{res.name} = {v.name}", f"while np.max({res.name}) > {lit}:", f"    {res.name} = {m_step}"],
           feature="while_tile_condition")
    return res


def _nested_break(g, v):
    """Nested ``for`` loops, the inner one left by ``break`` on a runtime scalar."""
    s = g.scalar("i32", f"np.int32({g.rng.randint(0, 4)})")
    d = DTYPES[v.dt]
    res = g.new_val(v, exact=v.exact and d.kind != "f", bound=v.bound + 12, nops=v.nops + 12)
    body = [f"{res.name} = {v.name}", "for i in range(3):", "    for j in range(4):", f"        if j == {s.name}:",
            "            break", f"        {res.name} = {res.name} + 1"]
    model = body[:-1] + [f"        {res.name} = ns.r({res.name} + 1, {v.dt!r})"]
    g.emit(body, model, feature="nested_loop_break")
    return res


def _range_step(g, v):
    """``for i in range(lo, 9, step)`` with a runtime start and step."""
    lo = g.scalar("i32", f"np.int32({g.rng.randint(-2, 3)})")
    st = g.scalar("i32", f"np.int32({g.rng.randint(1, 4)})")
    d = DTYPES[v.dt]
    res = g.new_val(v, exact=v.exact and d.kind != "f", bound=v.bound + 12, nops=v.nops + 12)
    g.emit([f"{res.name} = {v.name}", f"for i in range({lo.name}, 9, {st.name}):", f"    {res.name} = {res.name} + 1"],
           [f"{res.name} = {v.name}", f"for i in range({lo.name}, 9, {st.name}):",
            f"    {res.name} = ns.r({res.name} + 1, {v.dt!r})"], feature="range_runtime_step")
    return res


def _argmax_scan(g, v):
    """A running argmax: ``ct.scan((v, index), ...)`` of a float tile and an int32 tile, the index stored, the
    value tile passed on."""
    if v.tainted or not v.exact or DTYPES[v.dt].kind != "f":
        return None
    r = g.idiom
    ax = r.randrange(len(v.axes))
    rev = r.random() < 0.5
    sub = ", ".join(":" if i == ax else "None" for i in range(len(v.axes)))
    m, i = g.tmp(), g.tmp()
    g.emit(f"{m}, {i} = ct.scan(({v.name}, ct.broadcast_to(ct.arange({v.axes[ax].sym}, dtype=ct.int32)[{sub}], "
           f"{v.shape})), axis={ax}, func=lambda a1, i1, a2, i2: (ct.where(a2 > a1, a2, a1), ct.where(a2 > a1, i2, i1)), "
           f"identity=(-float('inf'), 0){', reverse=True' if rev else ''})",
           f"{i} = ns.running_argmax({v.name}, {ax}, {rev})", feature="tuple_scan_argmax" + ("_reverse" if rev else ""))
    g.store(G.Val(i, "i32", list(v.axes)), 0, draw=False)
    return v


def _segmented_scan(g, v):
    """A segmented sum: ``ct.scan((v, flag), ...)`` of an integer tile and a bool tile (a new segment at every
    element divisible by 8)."""
    if v.tainted:
        return None
    r = g.idiom
    ax = r.randrange(len(v.axes))
    rev = r.random() < 0.5
    f, t = g.tmp(), g.tmp()
    res = g.new_val(v)
    g.emit([f"{f} = ({v.name} & 7) == 0",
            f"{res.name}, {t} = ct.scan(({v.name}, {f}), axis={ax}, func=lambda v1, f1, v2, f2: "
            f"(ct.where(f2, v2, v1 + v2), f1 | f2), identity=(0, False){', reverse=True' if rev else ''})"],
           [f"{f} = ({v.name} & 7) == 0", f"{res.name} = ns.segmented_sum({v.name}, {f}, {ax}, {rev})"],
           feature="tuple_scan_segmented" + ("_reverse" if rev else ""))
    return res
