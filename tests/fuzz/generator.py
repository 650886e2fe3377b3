"""Seeded random cuTile programs: a program model rendered to Python source.

``generate(seed)`` draws one program (``random.Random(seed)``: a seed reproduces it exactly) and
returns a :class:`Program`; ``Program.render()`` is the text of a self-contained module with

- the ``@ct.kernel`` (``KERNEL``) and ``SIGNATURES`` (symbol, tile constants) it is exported with,
- ``PARAMS``: the kernel parameters (arrays with rank, element type and index type; scalars),
- ``make_inputs(S, T, rng)``: the argument arrays for array extents ``S`` and tile shape ``T``,
- ``grid(S, T)``: the launch grid,
- ``reference(inp, S, T)``: the numpy model, which runs the kernel block by block,
- ``CHECKS``: per output array, how it is compared (exact, or a tolerance from the element type,
  the magnitude bound and the accumulation length),
- ``FEATURES`` / ``MIN_SM``.

Programs are compositions of a *template* (how tiles are read and written: tile loads and
stores with index tuples / ``order=`` / padding modes, loops over tiles with ``break`` /
``continue``, ``tiled_view`` windows, gather / scatter, advanced indexing, atomics, mma, block-scaled
mma) and a
chain of ops from :mod:`.menu`. Array extents are never tile multiples (the last tile is
partial). Minimisation (:mod:`.runner`) renders the same program with :class:`Edits` (statements
removed or replaced by their bypass ``v3 = v2``) and smaller extents.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from . import idioms, menu
from .dtypes import DTYPES, F8, FLOATS, INTS, SCALAR_TYPES

OOB = "1048576"
# exact conversions: element type -> narrower types whose every value it represents
WIDENINGS = {"f32": ["f16", "bf16", "i8", "u8", "i16"], "f64": ["f32", "f16", "i32", "u32"], "f16": ["i8", "u8"],
             "i16": ["i8", "u8"], "i32": ["i8", "i16", "u8", "bool"], "i64": ["i32", "u32", "i16"],
             "u32": ["u8"], "bf16": ["i8", "u8"]}  # an index past the end of every array: the lanes past an array's end go there


@dataclass
class Axis:
    """Where a tile axis lands in an output array: array extent (an expression of ``S`` / ``T``),
    the tile-space index expression, and the tile size along it."""

    extent: str
    index: str
    size: int
    sym: str = ""  # the size as written in the program ("T0", or a number)

    def __post_init__(self):
        self.sym = self.sym or str(self.size)


@dataclass
class Val:
    """A tile value of the program."""

    name: str
    dt: str
    axes: list[Axis]
    exact: bool = True  # reproducible bit for bit by the model
    bound: float = 2.0  # magnitude bound (floats)
    nred: int = 1  # longest accumulation behind it (tolerance scale)
    nops: int = 0  # inexact float ops behind it
    tainted: bool = False  # holds undetermined / non-finite padding somewhere: position-preserving use only
    rtol: float = 0.0  # per-op relative tolerance override (tf32 inputs)
    cancel: bool = False  # went through an add / sub of inexact values: absolute errors of the operands' size

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)


@dataclass
class Stmt:
    """One statement: kernel lines and model lines at an indentation depth (relative to the body)."""

    kernel: list[str]
    model: list[str]
    depth: int = 0
    bypass: tuple[list[str], list[str]] | None = None  # what it becomes when minimisation drops it
    droppable: bool = False  # can be removed outright (a store among several)
    feature: str = ""


@dataclass
class Param:
    name: str
    kind: str  # "array" | "scalar"
    dt: str
    rank: int = 0
    index_dt: str = "i32"
    role: str = "in"  # "in" | "out"
    shape: list[str] = field(default_factory=list)  # extent expressions (arrays)
    init: str = ""  # how make_inputs fills it: "rand" | "zeros" | an expression
    value: str = ""  # scalar literal
    row_pad: int = 0  # rows this much longer than the extent (a strided, non-contiguous array)
    group: str = ""  # the tuple parameter it is a member of (members are consecutive in the parameter list)


@dataclass(frozen=True)
class Edits:
    """What minimisation did to a program: statements removed, statements replaced by their bypass."""

    removed: frozenset[int] = frozenset()
    bypassed: frozenset[int] = frozenset()

    def remove(self, i: int) -> Edits:
        return Edits(self.removed | {i}, self.bypassed - {i})

    def bypass(self, i: int) -> Edits:
        return Edits(self.removed - {i}, self.bypassed | {i})

    def lines(self, k: int, s: Stmt, side: int) -> list[str]:
        """Statement ``k``'s lines on one side (0 kernel, 1 model) after the edits."""
        if k in self.removed:
            return []
        if k in self.bypassed and s.bypass is not None:
            return s.bypass[side]
        return s.kernel if side == 0 else s.model


@dataclass
class Program:
    seed: int
    template: str
    rank: int
    tile: list[int]  # T (constants T0..)
    extents: list[int]  # S, shrinkable
    grid: list[str]  # expressions of S / T
    params: list[Param] = field(default_factory=list)
    stmts: list[Stmt] = field(default_factory=list)
    checks: dict[str, tuple] = field(default_factory=dict)
    features: set[str] = field(default_factory=set)
    min_sm: int = 80
    second_tile: list[int] | None = None  # a second KernelSignature with this tile shape
    loop_var: str | None = None  # model-side grid excludes the loop axis
    aux: list[tuple[str, str]] = field(default_factory=list)  # model-only outputs (name, output it is shaped like)
    num_ctas: int = 1  # cuTile's num_ctas (2: clusters of 2 CTAs, a tile block per cluster; CTA pairs: grid x whole clusters)
    helpers: list[tuple[list[str], list[str]]] = field(default_factory=list)  # module-level (@ct.function, model) code

    @property
    def name(self) -> str:
        return f"fz_{self.seed}"

    def signatures(self) -> list[tuple[str, list[int]]]:
        sigs = [(self.name, list(self.tile))]
        if self.second_tile is not None:
            sigs.append((self.name + "_b", list(self.second_tile)))
        return sigs

    def render(self, edits: Edits | None = None, extents: list[int] | None = None) -> str:
        return _render(self, edits or Edits(), extents or self.extents)


# ------------------------------------------------------------------------------ rendering


def _render(p: Program, edits: Edits, extents: list[int]) -> str:
    nt = len(p.tile)
    tnames = [f"T{i}" for i in range(nt)]
    out = [f'"""Random cuTile program, seed {p.seed} ({p.template}). Generated by tests/fuzz/generator.py."""',
           "import cuda.tile as ct", "import numpy as np", "", "from fuzz import npsem as ns", "",
           f"SEED = {p.seed}", f"TEMPLATE = {p.template!r}", f"FEATURES = {sorted(p.features)!r}",
           f"MIN_SM = {p.min_sm}", f"EXTENTS = {list(extents)!r}",
           f"SIGNATURES = {p.signatures()!r}", "PARAMS = ["]
    for q in p.params:
        if q.kind == "array":
            out.append(f"    ({q.name!r}, 'array', {q.dt!r}, {q.rank}, {q.index_dt!r}),")
        else:
            out.append(f"    ({q.name!r}, 'scalar', {q.dt!r}, 0, ''),")
    tuples: dict[str, list[str]] = {}
    for q in p.params:
        if q.group:
            tuples.setdefault(q.group, []).append(q.name)
    out += ["]"] + ([f"TUPLES = {tuples!r}"] if tuples else []) + [f"CHECKS = {p.checks!r}",
            "PRINTS = []  # the printf lines the model expects of the last launch (reference fills it)", "", ""]
    for kernel_lines, _model in p.helpers:  # @ct.function helpers the kernel calls
        out += kernel_lines + ["", ""]
    # kernel
    names = [q.group or q.name for q in p.params]
    args = ", ".join([n for i, n in enumerate(names) if n not in names[:i]] + [f"{t}: ct.Constant[int]" for t in tnames])
    out += ["@ct.kernel" if p.num_ctas == 1 else f"@ct.kernel(num_ctas={p.num_ctas})", f"def KERNEL({args}):"]
    for t, members in tuples.items():  # tuple parameters unpacked
        out.append(f"    {', '.join(members)}, = {t}")
    for i in range(len(p.grid)):
        out.append(f"    b{i} = ct.bid({i})")
    for k, s in enumerate(p.stmts):
        out += ["    " * (1 + s.depth) + ln for ln in edits.lines(k, s, 0)]
    out += ["", ""]
    # inputs
    out += ["def make_inputs(S, T, rng):", f"    {', '.join(tnames)}, = T", "    inp = {}"]
    for q in p.params:
        if q.kind == "scalar":
            out.append(f"    inp[{q.name!r}] = {q.value}")
        else:
            shape = "(" + "".join(f"{e}, " for e in q.shape) + ")"
            kind, _, arg = q.init.partition(":")
            extra = f", {arg}" if arg else ""
            if q.row_pad:
                extra += f", row_pad={q.row_pad}"
            out.append(f"    inp[{q.name!r}] = ns.make_array({kind!r}, {shape}, {q.dt!r}, rng{extra})")
    out += ["    return inp", "", ""]
    out += ["def grid(S, T):", f"    {', '.join(tnames)}, = T",
            "    return (" + "".join(f"{g}, " for g in _cluster_grid(p)) + ")", "", ""]
    for _kernel, model_lines in p.helpers:  # their numpy models
        out += model_lines + ["", ""]
    # reference
    out += ["def reference(inp, S, T):", f"    {', '.join(tnames)}, = T", "    PRINTS.clear()"]
    outs = []
    for q in p.params:
        if q.kind == "scalar":
            out.append(f"    {q.name} = inp[{q.name!r}]")
        elif q.role == "out":
            out.append(f"    {q.name} = ns.decode(inp[{q.name!r}], {q.dt!r}).copy()")
            outs.append(q.name)
        else:
            out.append(f"    {q.name} = ns.decode(inp[{q.name!r}], {q.dt!r})")
    for name, like in p.aux:  # what a check needs besides the outputs (e.g. a dot's sum of |products|)
        out.append(f"    {name} = np.zeros({like}.shape)")
        outs.append(name)
    bvars = ", ".join(f"b{i}" for i in range(len(p.grid)))
    out.append(f"    for {bvars}, in ns.blocks(grid(S, T)):")
    for k, s in enumerate(p.stmts):
        out += ["    " * (2 + s.depth) + ln for ln in edits.lines(k, s, 1)]
    out.append("    return {" + ", ".join(f"{o!r}: {o}" for o in outs) + "}")
    return "\n".join(out) + "\n"


def _cluster_grid(p: Program) -> list[str]:
    """The grid's expressions; for CTA pairs (a tile block per CTA: the grid of a kernel with clusters of
    ``num_ctas`` CTAs along x must be a whole number of them) x rounded up to a whole number of clusters, the extra
    tile blocks loading zeros and storing nothing (out of bounds on both sides). Otherwise a tile block is a
    cluster and any grid is valid."""
    if p.num_ctas == 1 or not p.grid or "cta_pairs" not in p.features:
        return list(p.grid)
    return [f"ns.cdiv({p.grid[0]}, {p.num_ctas}) * {p.num_ctas}", *p.grid[1:]]


# ------------------------------------------------------------------------------ generation


def _power(b: float, n: int) -> float:
    """b ** n, saturating at 1e300 (bounds of integer-derived floats are huge)."""
    return math.inf if n * math.log10(max(b, 1e-300)) > 300 else b**n


# binary menu rows drawn with a directed rounding mode too: row -> (cuTile function, divisor / operand in the kernel,
# in the model); the div row divides by |y| + 1 as the menu's does
DIRECTED_OPS = {"add": ("add", "{y}", "{y}"), "sub": ("sub", "{y}", "{y}"), "mul": ("mul", "{y}", "{y}"),
                "div": ("truediv", "ct.abs({y}) + 1.0", "ns.r(np.abs({y}) + 1.0, '{d}')")}


class Gen:
    """State while drawing one program."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        # draws added after a template's seeds were in use (reported, cited): a stream of their own, so the
        # programs those seeds draw stay the same except for the new form
        self.side = random.Random(f"side-{seed}")
        # round 3 of third-party kernels: its draws on a stream of their own (drawing them from ``side`` would
        # move the draws ``side`` makes after them in programs that reach them)
        self.side3 = random.Random(f"side3-{seed}")
        # num_ctas=2 (clusters; CTA pairs on sm_100a) for mma programs: a stream of its own (the others' draws stay put)
        self.clusters = random.Random(f"clusters-{seed}")
        # narrow mma tiles (N = 8, K tiles of 8 / 16: ``t_mma``): a stream of their own too
        self.narrow = random.Random(f"narrow-{seed}")
        # idioms of the third-party kernel rounds (``idioms.py``): a stream of their own too
        self.idiom = random.Random(f"idiom-{seed}")
        self.helpers: dict[str, tuple[list[str], list[str]]] = {}  # @ct.function helpers by name
        self.seed = seed
        self.nval = 0
        self.nin = 0
        self.nout = 0
        self.nscalar = 0
        self.params: list[Param] = []
        self.stmts: list[Stmt] = []
        self.checks: dict[str, tuple] = {}
        self.features: set[str] = set()
        self.min_sm = 80
        self.index_dt = "i32"
        self.symbolic = False  # a second signature changes T: no op may spell a tile shape out
        self.load_like = None  # template hook: a fresh load shaped like a value (second operands)
        self.keep_shape = False  # ops must keep the tile shape (a loop body feeding an accumulator)
        self.strided_ok = True  # arrays may be row-padded views (not for raw element offsets)
        self.aux: list[tuple[str, str]] = []

    # --- helpers
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def new_val(self, like: Val | None = None, **kw) -> Val:
        name = f"v{self.nval}"
        self.nval += 1
        if like is not None:
            base = dict(dt=like.dt, axes=list(like.axes), exact=like.exact, bound=like.bound, nred=like.nred,
                        nops=like.nops, tainted=like.tainted, rtol=like.rtol, cancel=like.cancel)
            base.update(kw)
            return Val(name, **base)
        return Val(name, **kw)

    def tmp(self) -> str:
        """A fresh name for an intermediate that is not tracked as a value."""
        name = f"v{self.nval}"
        self.nval += 1
        return name

    def emit(self, kernel, model, depth=0, bypass=None, droppable=False, feature=""):
        if isinstance(kernel, str):
            kernel = [kernel]
        if isinstance(model, str):
            model = [model]
        self.stmts.append(Stmt(kernel, model, depth, bypass, droppable, feature))
        if feature:
            self.features.add(feature)

    def array(self, dt: str, rank: int, shape: list[str], role="in", init="rand", draw=True) -> Param:
        """A new array parameter; ``draw`` False: no random index type / row padding (no draw from ``rng``)."""
        if role == "in":
            name = f"x{self.nin}"
            self.nin += 1
        else:
            name = f"y{self.nout}"
            self.nout += 1
        q = Param(name, "array", dt, rank, self.index_dt, role, shape, init)
        if draw and self.index_dt == "i32" and self.chance(0.05):  # one array indexed with int64 among int32 ones
            q.index_dt = "i64"
            self.features.add("index_mixed")
        if draw and rank >= 2 and self.strided_ok and self.chance(0.3):
            q.row_pad = self.rng.randint(1, 9)
            self.features.add("strided_array")
        self.params.append(q)
        self.min_sm = max(self.min_sm, DTYPES[dt].min_sm if dt in DTYPES else 80)
        return q

    def scalar(self, dt: str, value: str) -> Param:
        q = Param(f"s{self.nscalar}", "scalar", dt, value=value)
        self.nscalar += 1
        self.params.append(q)
        return q

    def scalar_literal(self, dt: str) -> str:
        d = DTYPES[dt]
        if d.kind == "b":
            return f"np.bool_({self.pick([True, False])})"
        if d.kind == "f":
            v = round(self.rng.uniform(-2, 2), 3)
        elif d.kind == "u":
            v = self.rng.randint(0, 5)
        else:
            v = self.rng.randint(-5, 5)
        return f"np.{d.storage.__name__}({v})"

    # --- padding
    def load_hints(self) -> str:
        """Keyword arguments of a load that do not change its values: latency, no TMA, an ordered
        (relaxed / acquire) load with a scope."""
        if not self.chance(0.3):
            return ""
        what = self.pick(["latency", "tma", "order"])
        self.features.add(f"load_hint:{what}")
        if what == "latency":
            return f", latency={self.rng.randint(1, 10)}"
        if what == "tma":
            return ", allow_tma=False"
        order = self.pick(["RELAXED", "ACQUIRE"])
        scope = self.pick(["BLOCK", "DEVICE", "SYS"])
        return f", memory_order=ct.MemoryOrder.{order}, memory_scope=ct.MemoryScope.{scope}"

    def store_hints(self) -> str:
        """The same for stores (relaxed / release)."""
        if not self.chance(0.3):
            return ""
        what = self.pick(["latency", "tma", "order"])
        self.features.add(f"store_hint:{what}")
        if what == "latency":
            return f", latency={self.rng.randint(1, 10)}"
        if what == "tma":
            return ", allow_tma=False"
        order = self.pick(["RELAXED", "RELEASE"])
        scope = self.pick(["BLOCK", "DEVICE", "SYS"])
        return f", memory_order=ct.MemoryOrder.{order}, memory_scope=ct.MemoryScope.{scope}"

    def padding(self, dt: str, finite_only: bool) -> tuple[str, str, bool]:
        rows = menu.FLOAT_PADDINGS if DTYPES[dt].is_float else menu.INT_PADDINGS
        if finite_only:
            rows = [r for r in rows if r[2]]
        weights = [6 if r[0] == "ZERO" else 1 for r in rows]
        mode, pad, finite = self.rng.choices(rows, weights)[0]
        if DTYPES[dt].kind == "b" and pad != "None":
            pad = "False"
        return mode, pad, finite

    # --- the op chain
    def chain(self, v: Val, n: int, depth: int, pointwise_only: bool = False, allow_cast=True,
              scalars_ok=True) -> Val:
        """Apply ``n`` random ops to ``v``; returns the last value."""
        for _ in range(n):
            v = self.step(v, depth, pointwise_only, allow_cast, scalars_ok)
        if self.idiom.random() < idioms.CHAIN_CHANCE:  # an idiom of the third-party rounds (its own stream)
            v = idioms.chain_op(self, v, depth, pointwise_only, allow_cast)
        return v

    def step(self, v: Val, depth: int, pointwise_only: bool, allow_cast: bool, scalars_ok: bool) -> Val:
        d = DTYPES[v.dt]
        choices = ["unary", "unary", "binary", "binary"]
        if d.kind == "b":
            choices = ["bool"]
        if allow_cast:
            choices += ["cast", "cast", "bitcast"]
        if scalars_ok and d.kind != "b":
            choices.append("scalar")
        if not pointwise_only and not v.tainted and d.kind != "b":
            choices += ["reduce", "scan", "move", "move"]
        if self.keep_shape:
            choices = [c for c in choices if c != "reduce"]
        if self.symbolic and "move" in choices:
            choices = [c for c in choices if c != "move"] + (["move"] if len(v.axes) >= 2 else [])
        for _ in range(8):
            kind = self.pick(choices)
            res = getattr(self, "op_" + kind)(v, depth)
            if res is not None:
                return res
        return v

    def _bypass(self, res: Val, src: Val):
        if res.dt == src.dt and res.shape == src.shape:
            return ([f"{res.name} = {src.name}"], [f"{res.name} = {src.name}"])
        return None

    def op_unary(self, v: Val, depth: int):
        kind = DTYPES[v.dt].kind
        rows = [u for u in menu.UNARY if kind in u.kinds and (v.exact or not u.exact_in)
                and (kind != "f" or v.bound <= u.max_bound)]
        if not rows:
            return None
        u = self.pick(rows)
        # one draw of the constants, shared by kernel and model
        seed = self.rng.random()
        k = self._fill_seeded(u.kernel, v.name, "", v.dt, seed)
        m = self._fill_seeded(u.model, v.name, "", v.dt, seed)
        res = self.new_val(v, exact=v.exact and u.keeps_exact, bound=u.bound(v.bound) if kind == "f" else v.bound,
                           nops=v.nops + (0 if u.keeps_exact else 1))
        self.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, self._bypass(res, v), feature=f"op:{u.name}")
        return res

    def _fill_seeded(self, tmpl, x, y, dt, seed):
        r = random.Random(seed)
        d = DTYPES[dt]
        return tmpl.format(x=x, y=y, d=dt, s=r.randint(0, d.bits - 1), m=d.bits - 1,
                           c=r.choice([3, 7, -5] if d.kind == "i" else [3, 7, 2]))

    def op_binary(self, v: Val, depth: int, other: Val | None = None):
        kind = DTYPES[v.dt].kind
        if other is None:
            other = self.operand(v, depth)
        if other is None:
            return None
        rows = [b for b in menu.BINARY if kind in b.kinds and ((v.exact and other.exact) or not b.exact_in)
                and (kind != "f" or max(v.bound, other.bound) <= b.max_bound)]
        if not rows:
            return None
        b = self.pick(rows)
        if self.chance(0.5) and not b.exact_in:
            v, other = other, v
        seed = self.rng.random()
        k = self._fill_seeded(b.kernel, v.name, other.name, v.dt, seed)
        m = self._fill_seeded(b.model, v.name, other.name, v.dt, seed)
        if b.name in DIRECTED_OPS and kind == "f" and self.side.random() < 0.3:
            k, m = self._directed(b.name, v, other)
        exact = v.exact and other.exact and (b.keeps_exact or kind in "iub")
        res = self.new_val(v, exact=exact, bound=b.bound(v.bound, other.bound) if kind == "f" else v.bound,
                           nred=max(v.nred, other.nred), nops=v.nops + other.nops + (0 if exact else 1),
                           tainted=v.tainted or other.tainted, rtol=max(v.rtol, other.rtol),
                           cancel=v.cancel or other.cancel or (b.name in ("add", "sub") and not exact))
        self.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, self._bypass(res, v), feature=f"op:{b.name}")
        return res

    def _directed(self, name: str, v: Val, other: Val) -> tuple[str, str]:
        """The binary row ``name`` with an explicit directed rounding mode (drawn on the side stream: rounding_mode
        was dropped by tilecore, every result rounded to nearest)."""
        mode = self.side.choice(["RZ", "RM", "RP"])
        self.features.add(f"rounding_mode:{mode}")
        fn, y, ym = DIRECTED_OPS[name]
        y, ym = y.format(y=other.name), ym.format(y=other.name, d=v.dt)
        return (f"ct.{fn}({v.name}, {y}, rounding_mode=ct.RoundingMode.{mode})",
                f"ns.directed({name!r}, {v.name}, {ym}, {mode.lower()!r}, {v.dt!r})")

    def operand(self, v: Val, depth: int) -> Val | None:
        """A second operand of ``v``'s type and shape: a fresh load from a new input array (when
        the template allows it) or ``v`` itself transformed."""
        if self.load_like is not None and self.chance(0.6):
            w = self.load_like(v, depth)
            if w is not None:
                return w
        if self.chance(0.3):
            w = self.vector_like(v, depth)
            if w is not None:
                return w
        return self.op_unary(v, depth)

    def vector_like(self, v: Val, depth: int) -> Val | None:
        """A 1-D array along ``v``'s last axis, loaded and reshaped to (1, ..., T) (broadcast by the
        binary op that uses it, like a bias row)."""
        a = v.axes[-1]
        if len(v.axes) < 2 or not a.index.startswith(("b", "r")) or not a.extent.startswith("S[") or v.tainted \
                or DTYPES[v.dt].kind == "b" or v.dt in F8:
            return None
        q = self.array(v.dt, 1, [a.extent])
        w = self.new_val(v, axes=list(v.axes), exact=True, bound=2.0, nred=1, nops=0)
        shape = "(" + "1, " * (len(v.axes) - 1) + f"{a.sym})"
        self.emit(f"{w.name} = ct.reshape(ct.load({q.name}, index=({a.index},), shape=({a.sym},), "
                  f"padding_mode=ct.PaddingMode.ZERO), {shape})",
                  f"{w.name} = np.reshape(ns.load({q.name}, ({a.index},), ({a.sym},), 0), {shape})", depth,
                  feature="broadcast_row")
        return w

    def op_scalar(self, v: Val, depth: int):
        d = DTYPES[v.dt]
        if v.dt not in SCALAR_TYPES:
            return None
        s = self.scalar(v.dt, self.scalar_literal(v.dt))
        self.features.add(f"scalar:{v.dt}")
        if d.kind == "f":
            k, m = f"{v.name} * {s.name} + {s.name}", f"ns.r(ns.r({v.name} * {s.name}, '{v.dt}') + {s.name}, '{v.dt}')"
            if v.bound > 100:
                return None
            res = self.new_val(v, exact=False, bound=v.bound * 2 + 2, nops=v.nops + 2, cancel=True)
        else:
            k, m = f"ct.maximum({v.name}, {s.name}) - {s.name}", f"np.maximum({v.name}, {s.name}) - {s.name}"
            res = self.new_val(v)
        # a bool scalar selects
        if self.chance(0.3):
            f = self.scalar("bool", self.scalar_literal("bool"))
            self.features.add("scalar:bool")
            k, m = f"ct.where({f.name}, {k}, {v.name})", f"np.where({f.name}, {m}, {v.name})"
        self.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, self._bypass(res, v), feature="runtime_scalar")
        return res

    def op_cast(self, v: Val, depth: int):
        src = DTYPES[v.dt]
        if src.kind == "f":
            targets = [t for t in FLOATS if t != v.dt and v.bound < 6e4]
            if v.exact:
                targets += ["i8", "i16", "i32", "i64", "u8", "u32", "bool"]
        elif src.kind == "b":
            targets = ["i32", "i8", "u8", "f32"]
        else:
            targets = [t for t in INTS if t != v.dt] + ["f32", "f64", "bool"]
            if src.bits <= 16:
                targets += ["f16", "bf16"] if v.dt != "u32" else []
        if not targets:
            return None
        dst = self.pick(targets)
        d = DTYPES[dst]
        x = v.name
        kx, mx = x, x
        if src.kind == "f" and d.is_int:  # clamp into range, the conversion of out-of-range floats is not modelled
            lo, hi = (0, 200) if d.kind == "u" else (-100, 100)
            kx = f"ct.minimum(ct.maximum({x}, {lo}.0), {hi}.0)"
            mx = f"np.minimum(np.maximum({x}, {lo}.0), {hi}.0)"
        k = f"ct.astype({kx}, ct.{d.ct})"
        m = f"ns.cast({mx}, {v.dt!r}, {dst!r})"
        feature = f"cast:{v.dt}->{dst}"
        bound = v.bound
        if src.kind in "iu" and d.kind == "f":
            bound = 2.0 ** (src.bits - (1 if src.kind == "i" else 0))
        if src.kind == "b":
            bound = 1.0
        # side stream (round 3 of third-party kernels): an integer / bool through an 8-bit float and on to a
        # type that holds every 8-bit value (tilecore refused int <-> e4m3 / e5m2 and e4m3 -> bool on sm_90a /
        # sm_100a); the result keeps the cast's type, so the rest of the program stays the same
        if src.kind in "iub" and dst in ("i32", "i64", "f32", "f64", "bool") and self.side3.random() < 0.3:
            f8 = self.side3.choice(F8)
            k = f"ct.astype(ct.astype({kx}, ct.{DTYPES[f8].ct}), ct.{d.ct})"
            m = f"ns.cast(ns.cast({mx}, {v.dt!r}, {f8!r}), {f8!r}, {dst!r})"
            feature = f"cast:{v.dt}->{f8}->{dst}"
            self.min_sm = max(self.min_sm, DTYPES[f8].min_sm)
            bound = max(bound, v.bound * 1.125 + 1)  # rounding to 3 / 2 mantissa bits may round up
        exact = v.exact
        res = self.new_val(v, dt=dst, exact=exact, bound=bound)
        if not exact and d.kind == "f":  # the error made in the source type stays
            res.rtol = max(v.rtol, src.rtol)
        self.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, feature=feature)
        return res

    def op_bitcast(self, v: Val, depth: int):
        """Float bits as an integer of the same width (exact values only; the other direction could
        make NaNs, whose handling is not modelled)."""
        pairs = {"f16": ["i16"], "bf16": ["i16"], "f32": ["i32", "u32"], "f64": ["i64"]}
        if v.dt not in pairs or not v.exact:
            return None
        dst = self.pick(pairs[v.dt])
        res = self.new_val(v, dt=dst)
        self.emit(f"{res.name} = ct.bitcast({v.name}, ct.{DTYPES[dst].ct})",
                  f"{res.name} = ns.bitcast({v.name}, {v.dt!r}, {dst!r})", depth, feature=f"bitcast:{v.dt}->{dst}")
        return res

    def op_bool(self, v: Val, depth: int):
        """A bool value: combine with a comparison, or turn back into integers."""
        if self.chance(0.5):
            op = self.pick(["&", "|", "^"])
            res = self.new_val(v)
            self.emit(f"{res.name} = {v.name} {op} ({v.name} == False)" if op == "^" else
                      f"{res.name} = {v.name} {op} {v.name}",
                      f"{res.name} = {v.name} {op} ({v.name} == False)" if op == "^" else
                      f"{res.name} = {v.name} {op} {v.name}", depth, self._bypass(res, v), feature=f"bool:{op}")
            return res
        return self.op_cast(v, depth)

    def op_reduce(self, v: Val, depth: int):
        kind = DTYPES[v.dt].kind
        if self.chance(0.2):
            res = self.op_custom(v, depth, scan=False)
            if res is not None:
                return res
        ax = self.rng.randrange(len(v.axes))
        n = v.axes[ax].size
        keep = self.chance(0.6)
        if self.chance(0.2) and v.exact:
            name, _, fn = self.pick(menu.ARGREDUCTIONS)
            mk, mm = f"{fn}({v.name}, axis={ax}, keepdims={keep})", f"ns.arg({name!r}, {v.name}, {ax}, {keep})"
            dt, exact, bound, nred = "i32", True, float(n), v.nred
        else:
            name, _, fn, model = self.pick(menu.REDUCTIONS)
            if name == "prod":
                if kind == "f" and (n > 16 or _power(v.bound, n) > 1e3):
                    return None
            if name == "sum" and kind == "f" and v.bound * n > 5e3 / max(1, 2 ** (DTYPES[v.dt].bits < 32)):
                return None
            mk, mm = f"{fn}({v.name}, axis={ax}, keepdims={keep})", f"ns.red({model!r}, {v.name}, {ax}, {keep}, {v.dt!r})"
            dt = v.dt
            exact = v.exact if name in ("max", "min") or kind != "f" else False
            bound = v.bound * n if name == "sum" else _power(v.bound, n) if name == "prod" else v.bound
            nred = v.nred * n if name in ("sum", "prod") else v.nred
        axes = list(v.axes)
        a = axes[ax]
        red_axis = Axis(f"ns.cdiv({a.extent}, {a.sym})", a.index, 1)
        if keep:
            axes[ax] = red_axis
            res = self.new_val(v, dt=dt, axes=axes, exact=exact, bound=bound, nred=nred,
                               nops=v.nops + (0 if exact else 1))
            self.emit(f"{res.name} = {mk}", f"{res.name} = {mm}", depth, feature=f"reduce:{name}")
            return res
        # dropped axis: expand it again right away (exercises reshape / expand_dims)
        tmp = self.tmp()
        res = self.new_val(v, dt=dt, axes=axes[:ax] + [red_axis] + axes[ax + 1:], exact=exact, bound=bound,
                           nred=nred, nops=v.nops + (0 if exact else 1))
        red_shape = tuple(x.size for x in res.axes)
        if self.symbolic or self.chance(0.5):
            k2, m2 = f"ct.expand_dims({tmp}, axis={ax})", f"np.expand_dims({tmp}, {ax})"
            feat = "expand_dims"
        else:
            k2, m2 = f"ct.reshape({tmp}, {red_shape})", f"np.reshape({tmp}, {red_shape})"
            feat = "reshape"
        self.emit([f"{tmp} = {mk}", f"{res.name} = {k2}"], [f"{tmp} = {mm}", f"{res.name} = {m2}"], depth,
                  feature=f"reduce:{name}")
        self.features.add(feat)
        return res

    def op_custom(self, v: Val, depth: int, scan: bool):
        """``ct.reduce`` / ``ct.scan`` with a lambda combiner (associative, commutative), keepdims."""
        d = DTYPES[v.dt]
        rows = [c for c in menu.CUSTOM if d.kind in c[1] and (v.exact or d.kind != "f")]
        if not rows:
            return None
        name, _, fn, ident, uf = self.pick(rows)
        ident = ident.format(imax=int(d.hi))
        ax = self.rng.randrange(len(v.axes))
        if scan:
            rev = self.chance(0.4)
            res = self.new_val(v)
            flip = (lambda e: f"np.flip({e}, {ax})") if rev else (lambda e: e)
            self.emit(f"{res.name} = ct.scan({v.name}, axis={ax}, func={fn}, identity={ident}, reverse={rev})",
                      f"{res.name} = {flip(f'{uf}.accumulate({flip(v.name)}, axis={ax})')}", depth,
                      self._bypass(res, v), feature=f"custom_scan:{name}")
            return res
        axes = list(v.axes)
        a = axes[ax]
        axes[ax] = Axis(f"ns.cdiv({a.extent}, {a.sym})", a.index, 1)
        res = self.new_val(v, axes=axes)
        self.emit(f"{res.name} = ct.reduce({v.name}, axis={ax}, func={fn}, identity={ident}, keepdims=True)",
                  f"{res.name} = {uf}.reduce({v.name}, axis={ax}, keepdims=True)", depth,
                  feature=f"custom_reduce:{name}")
        return res

    def op_scan(self, v: Val, depth: int):
        kind = DTYPES[v.dt].kind
        if self.chance(0.25):
            res = self.op_custom(v, depth, scan=True)
            if res is not None:
                return res
        name, _, fn, model = self.pick(menu.SCANS)
        ax = self.rng.randrange(len(v.axes))
        n = v.axes[ax].size
        if kind == "f" and name == "cumprod" and (n > 16 or _power(v.bound, n) > 1e3):
            return None
        if kind == "f" and name == "cumsum" and v.bound * n > 2e3:
            return None
        rev = self.chance(0.4)
        exact = kind != "f" and v.exact
        bound = v.bound * n if name == "cumsum" else _power(v.bound, n)
        res = self.new_val(v, exact=exact, bound=bound if kind == "f" else v.bound, nred=v.nred * n,
                           nops=v.nops + (0 if exact else 1))
        self.emit(f"{res.name} = {fn}({v.name}, axis={ax}, reverse={rev})",
                  f"{res.name} = ns.scan({model!r}, {v.name}, {ax}, {rev}, {v.dt!r})", depth, self._bypass(res, v),
                  feature=f"scan:{name}")
        return res

    def op_move(self, v: Val, depth: int):
        """Data movement inside the tile: transpose / permute, extract + cat, insert, reshape round
        trip, broadcast of a reduced value."""
        r = len(v.axes)
        opts = ["cat", "insert", "reshape", "broadcast"] + (["bytes"] if DTYPES[v.dt].kind in "fiu" else [])
        if r >= 2 and not (self.keep_shape and len(set(v.shape)) > 1):
            opts += ["transpose", "transpose"]
        if self.symbolic:
            opts = [o for o in opts if o == "transpose"]
            if not opts:
                return None
        what = self.pick(opts)
        if what == "transpose":
            if r == 2 and self.chance(0.5):
                perm = (1, 0)
                k, m, feat = f"ct.transpose({v.name})", f"np.transpose({v.name})", "transpose"
            else:
                perm = tuple(self.rng.sample(range(r), r))
                k, m, feat = f"ct.permute({v.name}, {perm})", f"np.transpose({v.name}, {perm})", "permute"
            res = self.new_val(v, axes=[v.axes[i] for i in perm])
            self.emit(f"{res.name} = {k}", f"{res.name} = {m}", depth, feature=feat)
            return res
        if what == "bytes":  # pack to bytes and back (flattened, then the tile shape again)
            res = self.new_val(v)
            k = f"ct.reshape(ct.unpack_from_bytes(ct.pack_to_bytes({v.name}), ct.{DTYPES[v.dt].ct}), {v.shape})"
            self.emit(f"{res.name} = {k}", f"{res.name} = {v.name}.copy()", depth, self._bypass(res, v),
                      feature="pack_bytes")
            return res
        cands = [i for i, a in enumerate(v.axes) if a.size >= 2]
        if not cands:
            return None
        ax = self.pick(cands)
        half = list(v.shape)
        half[ax] //= 2
        idx0 = tuple(0 for _ in v.axes)
        idx1 = tuple(1 if i == ax else 0 for i in range(r))
        lo, hi = self.tmp(), self.tmp()
        res = self.new_val(v)
        sl_lo = ", ".join(f":{s // 2}" if i == ax else ":" for i, s in enumerate(v.shape))
        sl_hi = ", ".join(f"{s // 2}:" if i == ax else ":" for i, s in enumerate(v.shape))
        if what == "cat":
            k = [f"{lo} = ct.extract({v.name}, index={idx0}, shape={tuple(half)})",
                 f"{hi} = ct.extract({v.name}, index={idx1}, shape={tuple(half)})",
                 f"{res.name} = ct.cat(({hi}, {lo}), axis={ax})"]
            m = [f"{lo} = {v.name}[{sl_lo}]", f"{hi} = {v.name}[{sl_hi}]",
                 f"{res.name} = np.concatenate(({hi}, {lo}), axis={ax})"]
            self.emit(k, m, depth, self._bypass(res, v), feature="extract+cat")
            return res
        if what == "insert":
            k = [f"{lo} = ct.extract({v.name}, index={idx1}, shape={tuple(half)})",
                 f"{res.name} = ct.insert({v.name}, index={idx0}, value={lo})"]
            m = [f"{lo} = {v.name}[{sl_hi}]", f"{res.name} = {v.name}.copy()", f"{res.name}[{sl_lo}] = {lo}"]
            self.emit(k, m, depth, self._bypass(res, v), feature="extract+insert")
            return res
        if what == "reshape":
            n = math.prod(v.shape)
            flat = (n,) if self.chance(0.5) else (n // v.shape[ax], v.shape[ax])
            k = [f"{lo} = ct.reshape({v.name}, {flat})", f"{res.name} = ct.reshape({lo}, {v.shape})"]
            m = [f"{lo} = np.reshape({v.name}, {flat})", f"{res.name} = np.reshape({lo}, {v.shape})"]
            self.emit(k, m, depth, self._bypass(res, v), feature="reshape")
            return res
        # broadcast: max over an axis with keepdims, broadcast back, combine
        if DTYPES[v.dt].kind == "f" and v.bound > 500:
            return None
        k = [f"{lo} = ct.max({v.name}, axis={ax}, keepdims=True)",
             f"{hi} = ct.broadcast_to({lo}, {v.shape})",
             f"{res.name} = {v.name} - {hi}"]
        m = [f"{lo} = np.fmax.reduce({v.name}, axis={ax}, keepdims=True)",
             f"{hi} = np.broadcast_to({lo}, {v.shape})",
             f"{res.name} = ns.r({v.name} - {hi}, '{v.dt}')"]
        kind = DTYPES[v.dt].kind
        res.exact = v.exact and kind != "f"
        res.cancel = res.cancel or not res.exact
        res.bound = 2 * v.bound
        res.nops = v.nops + (0 if res.exact else 1)
        self.emit(k, m, depth, self._bypass(res, v), feature="broadcast")
        return res

    # --- stores
    def store(self, v: Val, depth: int, order=None, draw=True):
        """Store ``v`` to a new output array (``draw`` False: no draw from ``rng``, no store hints)."""
        if v.tainted and any(not a.index.startswith(("b", "r", "j")) or "cdiv" in a.extent for a in v.axes):
            return
        q = self.array(v.dt, len(v.axes), [a.extent for a in v.axes], role="out", init="zeros", draw=draw)
        idx = "(" + "".join(f"{a.index}, " for a in v.axes) + ")"
        if order is not None:
            # store through a permuted tile space: the array's axes are the tile's axes permuted back
            inv = [order.index(i) for i in range(len(order))]
            q.shape = [v.axes[inv[i]].extent for i in range(len(order))]
            k = f"ct.store({q.name}, index={idx}, tile={v.name}, order={tuple(order)})"
            m = f"ns.store({q.name}, {idx}, {v.name}, order={tuple(order)})"
            self.features.add("store_order")
        else:
            k = f"ct.store({q.name}, index={idx}, tile={v.name}{self.store_hints() if draw else ''})"
            m = f"ns.store({q.name}, {idx}, {v.name})"
        self.emit(k, m, depth, droppable=True, feature="store")
        self.check(q.name, v)

    def check(self, name: str, v: Val, extra_nred: int = 1):
        d = DTYPES[v.dt]
        if v.exact or d.kind != "f":
            self.checks[name] = ("exact", v.dt)
        else:
            nred = v.nred * extra_nred
            # the absolute floor of the tolerance: the operands' size where sums may cancel, else 1
            floor = round(v.bound, 3) if (v.cancel or nred > 1) else 1.0
            self.checks[name] = ("approx", v.dt, floor, nred, v.nops, v.rtol)


# ------------------------------------------------------------------------------ templates


def _extent(rng: random.Random, t: int, most: int = 3) -> int:
    """An array extent that is not a multiple of the tile size ``t`` (unless t == 1): 1 to ``most``
    whole tiles and a partial one."""
    if t == 1:
        return rng.randint(2, 5)
    return t * rng.randint(1, most) + rng.randint(1, t - 1)


def _tile_shape(rng: random.Random, rank: int, budget: int = 2048) -> list[int]:
    while True:
        t = [2 ** rng.randint(0, 8 if rank == 1 else 6 if rank == 2 else 4) for _ in range(rank)]
        if math.prod(t) <= budget and math.prod(t) >= 2:
            return t


def _pick_dtype(g: Gen) -> str:
    rows = FLOATS * 3 + INTS * 2 + ["bool"] + F8
    return g.pick(rows)


def t_tiles(g: Gen, p: Program):
    """Tile loads / stores with index tuples over a 1-3-D grid; optional ``order=`` permutation,
    padding modes; a chain of ops; one or two stores; maybe a second signature."""
    rank, T = p.rank, p.tile
    dt = _pick_dtype(g)
    g.features.add(f"dtype:{dt}")
    p.grid = [f"ns.cdiv(S[{i}], T{i})" for i in range(rank)]
    order = None
    if rank >= 2 and g.chance(0.25):
        order = tuple(g.rng.sample(range(rank), rank))
        if order == tuple(range(rank)):
            order = tuple(reversed(range(rank)))
        g.features.add("load_order")
    # the logical (permuted) tile space: tile axis i walks array axis order[i]
    perm = order or tuple(range(rank))
    bv = [f"b{i}" for i in range(rank)]
    if g.chance(0.2):  # blocks walk axis 0 backwards: computed tile indices
        bv[0] = "r0"
        g.emit("r0 = ct.num_blocks(0) - 1 - b0", "r0 = grid(S, T)[0] - 1 - b0", feature="reversed_blocks")
    loaded_shape = [f"S[{perm[i]}]" for i in range(rank)]
    xshape = [f"S[{i}]" for i in range(rank)]

    def load(like_dt: str, depth: int, finite_only: bool, may_convert: bool = True) -> Val:
        narrow = [n for n in WIDENINGS.get(like_dt, []) if DTYPES[n].min_sm <= 80]
        if narrow and may_convert and g.chance(0.3):  # a narrower array, converted exactly
            w = load(g.pick(narrow), depth, finite_only, may_convert=False)
            src = DTYPES[w.dt]
            res = g.new_val(w, dt=like_dt, bound=2.0 ** src.bits if src.kind in "iu" else w.bound)
            g.emit(f"{res.name} = ct.astype({w.name}, ct.{DTYPES[like_dt].ct})",
                   f"{res.name} = ns.cast({w.name}, {w.dt!r}, {like_dt!r})", depth, feature=f"cast:{w.dt}->{like_dt}")
            return res
        if like_dt in F8 or like_dt == "bool":
            finite_only = True
        mode, pad, finite = g.padding(like_dt, finite_only)
        q = g.array(like_dt, rank, xshape)
        tshape = tuple(f"T{perm_axis}" for perm_axis in perm)
        idx = "(" + "".join(f"{bv[perm[i]]}, " for i in range(rank)) + ")"
        tsh = "(" + "".join(f"{t}, " for t in tshape) + ")"
        o = f", order={order}" if order else ""
        pm = "" if mode == "UNDETERMINED" else f", padding_mode=ct.PaddingMode.{mode}"
        pm += g.load_hints()
        v = g.new_val(dt=like_dt, axes=[Axis(loaded_shape[i], bv[perm[i]], T[perm[i]], f"T{perm[i]}")
                                        for i in range(rank)],
                      tainted=not finite, exact=True, bound=2.0)
        g.emit(f"{v.name} = ct.load({q.name}, index={idx}, shape={tsh}{o}{pm})",
               f"{v.name} = ns.load({q.name}, {idx}, {tsh}, {pad}{', order=' + str(order) if order else ''})",
               depth, feature=f"pad:{mode}")
        return v

    gdc = g.chance(0.1)
    if gdc:  # programmatic dependent launch: a no-op in a single launch
        g.emit("ct.grid_dependency_control_wait()", "pass", feature="gdc_wait")
    pointwise = g.chance(0.35)
    if g.chance(0.2) and max(T) >= 4:
        p.second_tile = list(T)
        ax = max(range(rank), key=lambda i: T[i])
        p.second_tile[ax] //= 2
        g.symbolic = True
        g.features.add("two_signatures")
    v = load(dt, 0, finite_only=not pointwise)
    load_axes = list(v.axes)
    g.load_like = lambda w, depth: load(w.dt, depth, not pointwise) if w.axes == load_axes else None
    if dt in F8:  # 8-bit floats: widen, compute, narrow
        v = _widen_f8(g, v)
    v = g.chain(v, g.rng.randint(2, 7), 0, pointwise_only=pointwise)
    if dt in F8 and DTYPES[v.dt].is_float and v.bound < 200:
        v = _narrow_f8(g, v, dt)
    if g.chance(0.2):
        _debug_ops(g, v)
    g.store(v, 0)
    if gdc:
        g.emit("ct.grid_dependency_control_launch_dependents()", "pass", feature="gdc_launch_dependents")
    if g.chance(0.25) and DTYPES[v.dt].kind != "b" and not v.tainted and v.exact and v.dt not in F8:
        m = g.new_val(v, dt="bool")
        g.emit(f"{m.name} = {v.name} >= {v.name} * 0", f"{m.name} = {v.name} >= {v.name} * 0",
               feature="store_bool")
        g.store(m, 0)
    if rank >= 2 and not v.tainted and g.chance(0.15):
        so = tuple(reversed(range(rank)))
        g.store(v, 0, order=so)
    if not v.tainted and g.chance(0.2) and not g.symbolic:
        _store_halves(g, v)


# element types a tile printf prints exactly (C and the model format the same numbers), and how
PRINTF_FORMATS = {"i8": "%d", "i16": "%d", "i32": "%d", "f16": "%.4f", "bf16": "%.4f", "f32": "%.4f", "f64": "%.4f"}


def _debug_ops(g: Gen, v: Val) -> None:
    """Debug ops that leave the outputs alone: ``ct.assert_`` on conditions that hold (a scalar one
    with a message, a tile one without), ``ct.printf`` (or ``ct.print`` of an f-string) of the block id
    and a runtime scalar and, for a small exact tile, of its elements (the runner compares the printed
    lines with the model's)."""
    if g.chance(0.5):
        g.emit('ct.assert_(b0 < ct.num_blocks(0), "fz: block index in range")', "assert b0 < grid(S, T)[0]",
               feature="assert")
        if DTYPES[v.dt].kind != "b" and not v.tainted and v.dt not in F8:  # no compares of 8-bit floats (tileiras
            # refuses them too: seed 6010)
            g.emit(f"ct.assert_({v.name} == {v.name})", f"assert np.all({v.name} == {v.name})", feature="assert_tile")
        return
    s = g.scalar("i32", str(g.rng.randint(-1000, 1000)))
    py = g.chance(0.4)  # ct.print with an f-string: cuTile writes the same C format
    k = f'ct.print(f"fz b={{b0}} s={{{s.name}}}")' if py else f'ct.printf("fz b=%d s=%d\\n", b0, {s.name})'
    m = f'ns.printf(PRINTS, "fz b=%d s=%d\\n", b0, {s.name})'
    if not py and g.side.random() < 0.5:  # more than 8 values (found broken: nv_tileaa.print held 8)
        extra = [f"b0 + {i}" for i in range(1, 10)]
        fmt = "fz b=%d s=%d" + " %d" * len(extra) + "\\n"
        k = f'ct.printf("{fmt}", b0, {s.name}, {", ".join(extra)})'
        m = f'ns.printf(PRINTS, "{fmt}", b0, {s.name}, {", ".join(extra)})'
        g.features.add("printf_many_args")
    g.emit(k, m, feature="print" if py else "printf")
    fmt = PRINTF_FORMATS.get(v.dt)
    if fmt and v.exact and not v.tainted and math.prod(v.shape) <= 64:
        k = f'ct.print(f"fz v={{{v.name}:{fmt[1:]}}}")' if py else f'ct.printf("fz v={fmt}\\n", {v.name})'
        g.emit(k, f'ns.printf(PRINTS, "fz v={fmt}\\n", {v.name})', feature="print_tile" if py else "printf_tile")


def _store_halves(g: Gen, v: Val) -> None:
    """Store the tile as two halves along one axis (tile-space indices 2b and 2b + 1 of half-size
    tiles) into one array."""
    cands = [i for i, a in enumerate(v.axes) if a.size >= 2 and a.index.startswith(("b", "r"))]
    if not cands:
        return
    ax = g.pick(cands)
    a = v.axes[ax]
    half = list(v.shape)
    half[ax] //= 2
    q = g.array(v.dt, len(v.axes), [x.extent for x in v.axes], role="out", init="zeros")
    lo, hi = g.tmp(), g.tmp()
    idx = [x.index for x in v.axes]
    i_lo = "(" + ", ".join(f"{x} * 2" if i == ax else x for i, x in enumerate(idx)) + ",)"
    i_hi = "(" + ", ".join(f"{x} * 2 + 1" if i == ax else x for i, x in enumerate(idx)) + ",)"
    z = tuple(0 for _ in v.axes)
    o = tuple(1 if i == ax else 0 for i in range(len(v.axes)))
    sl_lo = ", ".join(f":{a.size // 2}" if i == ax else ":" for i in range(len(v.axes)))
    sl_hi = ", ".join(f"{a.size // 2}:" if i == ax else ":" for i in range(len(v.axes)))
    g.emit([f"{lo} = ct.extract({v.name}, index={z}, shape={tuple(half)})",
            f"{hi} = ct.extract({v.name}, index={o}, shape={tuple(half)})",
            f"ct.store({q.name}, index={i_lo}, tile={lo})", f"ct.store({q.name}, index={i_hi}, tile={hi})"],
           [f"{lo} = {v.name}[{sl_lo}]", f"{hi} = {v.name}[{sl_hi}]",
            f"ns.store({q.name}, {i_lo}, {lo})", f"ns.store({q.name}, {i_hi}, {hi})"], droppable=True,
           feature="store_halves")
    g.check(q.name, v)


def _widen_f8(g: Gen, v: Val) -> Val:
    w = g.pick(["f32", "f16"])
    res = g.new_val(v, dt=w)
    g.emit(f"{res.name} = ct.astype({v.name}, ct.{DTYPES[w].ct})", f"{res.name} = ns.cast({v.name}, {v.dt!r}, {w!r})",
           feature=f"cast:{v.dt}->{w}")
    return res


def _narrow_f8(g: Gen, v: Val, dt: str) -> Val:
    res = g.new_val(v, dt=dt)
    g.emit(f"{res.name} = ct.astype({v.name}, ct.{DTYPES[dt].ct})", f"{res.name} = ns.cast({v.name}, {v.dt!r}, {dt!r})",
           feature=f"cast:{v.dt}->{dt}")
    return res


def t_loop(g: Gen, p: Program):
    """The last axis is walked by a loop (``for`` over ``ct.num_tiles`` or ``while``) with an
    accumulator, ``continue`` / ``break`` on a runtime scalar and an ``if`` / ``else``."""
    rank, T = p.rank, p.tile
    dt = g.pick(FLOATS + ["i32", "i64", "i16", "u32"])
    g.features.add(f"dtype:{dt}")
    last = rank - 1
    p.grid = [f"ns.cdiv(S[{i}], T{i})" for i in range(rank - 1)] or ["1"]
    xshape = [f"S[{i}]" for i in range(rank)]
    q = g.array(dt, rank, xshape)
    idx = "(" + "".join(f"b{i}, " for i in range(rank - 1)) + "j, )"
    tsh = "(" + "".join(f"T{i}, " for i in range(rank)) + ")"
    axes = [Axis(f"S[{i}]", f"b{i}", T[i], f"T{i}") for i in range(rank - 1)] + [Axis(f"S[{last}]", "j", T[last])]
    acc_axes = axes[:-1] + [Axis(f"T{last}", "0", T[last], f"T{last}")]
    zero = "0" if DTYPES[dt].is_int else "0.0"
    acc = g.new_val(dt=dt, axes=acc_axes)
    g.emit(f"{acc.name} = ct.full({tsh}, {zero}, dtype=ct.{DTYPES[dt].ct})",
           f"{acc.name} = np.zeros({tsh}, dtype=np.{DTYPES[dt].compute.__name__})")
    ntiles = f"ns.cdiv(S[{last}], T{last})"
    use_while = g.chance(0.3)
    lim = g.scalar("i32", f"np.int32({g.rng.randint(0, 4)})")
    if use_while:
        g.emit(["j = 0", f"while j < ct.num_tiles({q.name}, axis={last}, shape={tsh}):"],
               ["j = 0", f"while j < {ntiles}:"], feature="while")
    elif g.chance(0.5):
        g.emit(f"for j in range(ct.num_tiles({q.name}, axis={last}, shape={tsh})):",
               f"for j in range({ntiles}):", feature="for")
    else:
        g.emit(f"for j in range(ct.cdiv({q.name}.shape[{last}], T{last})):", f"for j in range({ntiles}):",
               feature="for")
    d1 = 1
    v = g.new_val(dt=dt, axes=axes)
    g.emit(f"{v.name} = ct.load({q.name}, index={idx}, shape={tsh}, padding_mode=ct.PaddingMode.ZERO)",
           f"{v.name} = ns.load({q.name}, {idx}, {tsh}, 0)", d1)
    if g.chance(0.35):  # a per-iteration weight: a 0-d tile loaded with shape ()
        qw = g.array(dt, 1, [ntiles], init="small")
        w = g.new_val(v, exact=False if DTYPES[dt].is_float else v.exact, bound=2.0 * (2 if DTYPES[dt].is_int else 1),
                      nops=1)
        if DTYPES[dt].is_float:
            g.emit(f"{w.name} = {v.name} * ct.load({qw.name}, index=(j,), shape=())",
                   f"{w.name} = ns.r({v.name} * {qw.name}[j], '{dt}')", d1, feature="load_0d")
        else:
            g.emit(f"{w.name} = {v.name} + ct.load({qw.name}, index=(j,), shape=())",
                   f"{w.name} = {v.name} + {qw.name}[j]", d1, feature="load_0d")
        v = w
    ctl = g.pick(["none", "continue", "break"])
    # side stream (round 3 of third-party kernels): a while loop's break becomes a return from the kernel (stage
    # 1 left a return inside a while body in an scf.if); the model breaks and skips the block after the loop
    returns = use_while and ctl == "break" and g.side3.random() < 0.5
    if returns:
        g.emit([f"if j == {lim.name}:", "    return"], [f"if j == {lim.name}:", "    break"], d1,
               feature="return_in_while")
    elif ctl != "none":
        step = ["j += 1"] if use_while and ctl == "continue" else []
        g.emit([f"if j == {lim.name}:"] + ["    " + s for s in step] + [f"    {ctl}"],
               [f"if j == {lim.name}:"] + ["    " + s for s in step] + [f"    {ctl}"], d1, feature=ctl)
    g.keep_shape = True  # scans, data movement, broadcasts of reductions: the accumulator's shape stays
    v = g.chain(v, g.rng.randint(0, 3), d1, pointwise_only=False, scalars_ok=False, allow_cast=False)
    if g.chance(0.5):
        # if / else on a runtime scalar, both branches keep the type
        flag = g.scalar("i32", f"np.int32({g.rng.randint(0, 3)})")
        before = len(g.stmts)
        a = g.op_unary(v, d1 + 1)
        k_then = g.stmts[before:]
        del g.stmts[before:]
        if a is not None:
            b_stmts_start = len(g.stmts)
            b = g.op_unary(v, d1 + 1)
            k_else = g.stmts[b_stmts_start:]
            del g.stmts[b_stmts_start:]
            if b is not None:
                res = g.new_val(v, exact=a.exact and b.exact, bound=max(a.bound, b.bound), nops=max(a.nops, b.nops))
                g.emit(f"if {flag.name} > 1:", f"if {flag.name} > 1:", d1, feature="if_else")
                g.stmts += k_then
                g.emit(f"    {res.name} = {a.name}", f"    {res.name} = {a.name}", d1)
                g.emit("else:", "else:", d1)
                g.stmts += k_else
                g.emit(f"    {res.name} = {b.name}", f"    {res.name} = {b.name}", d1)
                v = res
    if DTYPES[dt].is_float and v.bound * 8 > 1e3:
        v2 = g.new_val(v, bound=1.0, exact=False, nops=v.nops + 1)
        g.emit(f"{v2.name} = ct.tanh({v.name})", f"{v2.name} = ns.r(np.tanh({v.name}), '{dt}')", d1)
        v = v2
    # accumulate into acc (the loop-carried value)
    g.keep_shape = False
    add = "ns.r({a} + {b}, '{d}')" if DTYPES[dt].is_float else "{a} + {b}"
    g.emit(f"{acc.name} = {acc.name} + {v.name}", f"{acc.name} = " + add.format(a=acc.name, b=v.name, d=dt), d1)
    if use_while:
        g.emit("j += 1", "j += 1", d1)
    if returns:  # the loop broke at j == lim exactly when it returned: that block stores nothing
        g.emit("pass", [f"if {lim.name} < {ntiles}:", "    continue"], 0)
    s_max = 8  # loop trip count bound used for the tolerance (extents are at most 4 tiles)
    acc2 = g.new_val(acc, exact=DTYPES[dt].is_int, bound=v.bound * s_max, nred=max(v.nred, 1) * s_max,
                     nops=v.nops + 1)
    acc2.name = acc.name
    acc2 = g.chain(acc2, g.rng.randint(0, 2), 0, pointwise_only=False, scalars_ok=True)
    g.store(acc2, 0)
    g.features.add("loop")


def t_mma(g: Gen, p: Program):
    """``acc = ct.mma(a, b, acc)`` over K tiles, 2-D or batched 3-D, every admissible type pair;
    B maybe loaded transposed (``order=(1, 0)``); an elementwise epilogue."""
    a_dt, acc_dt = g.pick(menu.MMA_PAIRS)
    g.features.add(f"mma:{a_dt}->{acc_dt}")
    batched = g.chance(0.25)
    arr_dt = "f32" if a_dt == "tf32" else a_dt
    TM, TN, TK = g.pick([16, 32, 64]), g.pick([16, 32]), g.pick([16, 32])
    if acc_dt == "f64" or a_dt in F8:  # slow in the emulator (CUDA-core fallback, per-element conversions)
        TM, TN = 16, 16
    # narrow tiles (found off the tensor cores: N = 8 on sm_100a, a 16-bit K of 8 everywhere, an 8-bit K of 16 on
    # sm_90a): drawn on a stream of their own (like ``side3``: a draw on ``side`` here would move the tf32 rounding
    # draws after it), so other programs stay the same
    if acc_dt != "f64" and g.narrow.random() < 0.3:
        form = "k" if a_dt in F8 else g.narrow.choice(["n8", "k"])
        TM = 64 if a_dt in F8 else g.narrow.choice([16, 32, 64, 64])  # 64 rows: one wgmma / tcgen05 M = 64 block
        if form == "n8":
            TN = 8
        else:  # the K of one instruction less than the widest: 8 elements of 16 / 32 bits, 16 of 8 bits
            TK = 16 if a_dt in F8 or a_dt in ("i8", "u8") else 8
        g.features.add(f"mma_narrow_{form}")
    squeeze = False
    if batched:
        TB = g.pick([1, 2])
        # a batch tile of 1 as the TMA paths take it: (1, TM, TK) tiles reshaped to the dot's 2-D tiles, the
        # 2-D result reshaped to (1, TM, TN) for its store
        squeeze = TB == 1 and g.side.random() < 0.5
        p.tile = [TB, TM, TN, TK]
        p.extents = [_extent(g.rng, TB, 1) if TB > 1 else 2, _extent(g.rng, TM, 1), _extent(g.rng, TN, 1),
                     _extent(g.rng, TK, 2)]
        p.grid = ["ns.cdiv(S[0], T0)", "ns.cdiv(S[1], T1)", "ns.cdiv(S[2], T2)"]
        g.features.add("mma_batched")
        shp_a, shp_b = "(T0, T1, T3)", "(T0, T3, T2)"
        a_shape, b_shape = ["S[0]", "S[1]", "S[3]"], ["S[0]", "S[3]", "S[2]"]
        ia, ib = "(b0, b1, k)", "(b0, k, b2)"
        if g.chance(0.4):  # one B for every batch: 3-D x 2-D, broadcast
            shp_b, b_shape, ib = "(T3, T2)", ["S[3]", "S[2]"], "(k, b2)"
            g.features.add("mma_broadcast_b")
        acc_shape = "(T0, T1, T2)"
        axes = [Axis("S[0]", "b0", TB), Axis("S[1]", "b1", TM), Axis("S[2]", "b2", TN)]
        kax = 2
        if squeeze:
            g.features.add("mma_batch_reshape")
            acc_shape = "(T1, T2)"
            axes = axes[1:]
    else:
        p.tile = [TM, TN, TK]
        p.extents = [_extent(g.rng, TM, 2), _extent(g.rng, TN, 2), _extent(g.rng, TK, 2)]
        p.grid = ["ns.cdiv(S[0], T0)", "ns.cdiv(S[1], T1)"]
        shp_a, shp_b = "(T0, T2)", "(T2, T1)"
        a_shape, b_shape = ["S[0]", "S[2]"], ["S[2]", "S[1]"]
        ia, ib = "(b0, k)", "(k, b1)"
        acc_shape = "(T0, T1)"
        axes = [Axis("S[0]", "b0", TM), Axis("S[1]", "b1", TN)]
        kax = 1
    rank = len(a_shape)
    qa = g.array(arr_dt, rank, a_shape)
    transposed_b = not batched and g.chance(0.3)
    if transposed_b:
        qb = g.array(arr_dt, len(b_shape), [b_shape[1], b_shape[0]])
        ob = ", order=(1, 0)"
        g.features.add("load_order")
    else:
        qb = g.array(arr_dt, len(b_shape), b_shape)
        ob = ""
    zero = "0" if DTYPES[acc_dt].is_int else "0.0"
    acc = g.new_val(dt=acc_dt, axes=axes, exact=DTYPES[acc_dt].is_int)
    if g.chance(0.3):  # accumulate onto C
        qc = g.array(acc_dt, len(axes), [a.extent for a in axes], init="small")
        cidx = "(" + "".join(f"{a.index}, " for a in axes) + ")"
        if squeeze:  # C is 3-D: its (1, TM, TN) slice
            qc.rank, qc.shape = 3, ["S[0]"] + qc.shape
            g.emit(f"{acc.name} = ct.reshape(ct.load({qc.name}, index=(b0, b1, b2), shape=(1, T1, T2), "
                   f"padding_mode=ct.PaddingMode.ZERO), {acc_shape})",
                   f"{acc.name} = np.reshape(ns.load({qc.name}, (b0, b1, b2), (1, T1, T2), 0), {acc_shape})",
                   feature="mma_acc_loaded")
        else:
            g.emit(f"{acc.name} = ct.load({qc.name}, index={cidx}, shape={acc_shape}, padding_mode=ct.PaddingMode.ZERO)",
                   f"{acc.name} = ns.load({qc.name}, {cidx}, {acc_shape}, 0)", feature="mma_acc_loaded")
    else:
        g.emit(f"{acc.name} = ct.full({acc_shape}, {zero}, dtype=ct.{DTYPES[acc_dt].ct})",
               f"{acc.name} = np.zeros({acc_shape}, dtype=np.{DTYPES[acc_dt].compute.__name__})")
    kk = "S[3]" if batched else "S[2]"
    kt = "T3" if batched else "T2"
    g.emit(f"for k in range(ct.num_tiles({qa.name}, axis={kax}, shape={shp_a})):", f"for k in range(ns.cdiv({kk}, {kt})):",
           feature="mma")
    a, b = g.tmp(), g.tmp()
    ka = f"ct.load({qa.name}, index={ia}, shape={shp_a}, padding_mode=ct.PaddingMode.ZERO)"
    kb = f"ct.load({qb.name}, index={ib}, shape={shp_b}{ob}, padding_mode=ct.PaddingMode.ZERO)"
    ma = f"ns.load({qa.name}, {ia}, {shp_a}, 0)"
    mb = f"ns.load({qb.name}, {ib}, {shp_b}, 0{', order=(1, 0)' if transposed_b else ''})"
    if squeeze:  # (1, TM, TK) -> (TM, TK); a 3-D B likewise (a 2-D one is every batch's)
        ka, ma = f"ct.reshape({ka}, (T1, T3))", f"np.reshape({ma}, (T1, T3))"
        if len(b_shape) == 3:
            kb, mb = f"ct.reshape({kb}, (T3, T2))", f"np.reshape({mb}, (T3, T2))"
    if a_dt == "tf32":
        rm = ""
        if g.side.random() < 0.4:  # an explicit rounding (found broken: RZ failed to compile, RN rounded ties away)
            mode = g.side.choice(["RN", "RA", "RZ"])
            rm = f", rounding_mode=ct.RoundingMode.{mode}"
            g.features.add(f"tf32_rounding:{mode}")
        ka, kb = f"ct.astype({ka}, ct.tfloat32{rm})", f"ct.astype({kb}, ct.tfloat32{rm})"
    kmm = f"{acc.name} = ct.mma({a}, {b}, {acc.name})"
    if a_dt == acc_dt and a_dt in ("f16", "f32", "f64") and g.chance(0.35):  # matmul: result in the input type
        kmm = f"{acc.name} = {acc.name} + {a} @ {b}"
        g.features.add("matmul")
    g.emit([f"{a} = {ka}", f"{b} = {kb}", kmm],
           [f"{a} = {ma}", f"{b} = {mb}", f"{acc.name} = ns.mma({a}, {b}, {acc.name}, {acc_dt!r})"], 1)
    kmax = 3 * (TK if not batched else p.tile[3])
    v = g.new_val(acc, exact=DTYPES[acc_dt].is_int, bound=4.0 * math.sqrt(kmax), nred=kmax, nops=1)
    v.name = acc.name
    if a_dt == "tf32":
        v.rtol = 1e-3  # inputs rounded to 10 mantissa bits
    if acc_dt == "f16":
        v.nops = 3  # one rounding per K tile
    if DTYPES[acc_dt].is_float:
        v = g.chain(v, g.rng.randint(0, 3), 0, pointwise_only=True, allow_cast=True, scalars_ok=True)
    if squeeze:  # the store of a (1, TM, TN) slice
        w = g.new_val(v, axes=[Axis("S[0]", "b0", 1)] + list(v.axes))
        g.emit(f"{w.name} = ct.reshape({v.name}, (1, T1, T2))", f"{w.name} = np.reshape({v.name}, (1, T1, T2))",
               feature="reshape")
        v = w
    g.store(v, 0)


def t_attn(g: Gen, p: Program):
    """An attention loop: per block of query rows, walk the key / value tiles; scores by mma against
    K loaded transposed (``order=(1, 0)``, or loaded and ``ct.transpose``-d), online softmax (running
    max, rescaling), probabilities converted to the input type for the second mma."""
    dt = g.pick(["f16", "bf16", "f32"])
    g.features.add(f"attn:{dt}")
    TM, TN, D = g.pick([16, 32]), g.pick([16, 32]), g.pick([16, 32])
    p.tile = [TM, TN, D]
    p.extents = [_extent(g.rng, TM, 1), _extent(g.rng, TN, 2), D]
    p.grid = ["ns.cdiv(S[0], T0)"]
    qq = g.array(dt, 2, ["S[0]", "S[2]"], init="small")
    qk = g.array(dt, 2, ["S[1]", "S[2]"], init="small")
    qv = g.array(dt, 2, ["S[1]", "S[2]"], init="small")
    qo = g.array("f32", 2, ["S[0]", "S[2]"], role="out", init="zeros")
    ordered = g.chance(0.6)
    g.features.add("load_order" if ordered else "transpose")
    z = "ct.PaddingMode.ZERO"
    if ordered:
        kload = f"ct.load({qk.name}, index=(0, j), shape=(T2, T1), order=(1, 0), padding_mode={z})"
        kmodel = f"ns.load({qk.name}, (0, j), (T2, T1), 0, order=(1, 0))"
    else:
        kload = f"ct.transpose(ct.load({qk.name}, index=(j, 0), shape=(T1, T2), padding_mode={z}))"
        kmodel = f"np.transpose(ns.load({qk.name}, (j, 0), (T1, T2), 0))"
    ct_dt = DTYPES[dt].ct
    g.emit([f"q = ct.load({qq.name}, index=(b0, 0), shape=(T0, T2), padding_mode={z})",
            "m = ct.full((T0, 1), -1e30, dtype=ct.float32)",
            "den = ct.full((T0, 1), 0.0, dtype=ct.float32)",
            "acc = ct.full((T0, T2), 0.0, dtype=ct.float32)",
            f"for j in range(ct.num_tiles({qk.name}, axis=0, shape=(T1, T2))):",
            f"    kt = {kload}",
            f"    v = ct.load({qv.name}, index=(j, 0), shape=(T1, T2), padding_mode={z})",
            "    s = ct.mma(q, kt, ct.full((T0, T1), 0.0, dtype=ct.float32))",
            "    m2 = ct.maximum(m, ct.max(s, axis=1, keepdims=True))",
            "    alpha = ct.exp(m - m2)",
            "    pr = ct.exp(s - m2)",
            "    den = den * alpha + ct.sum(pr, axis=1, keepdims=True)",
            f"    acc = ct.mma(ct.astype(pr, ct.{ct_dt}), v, acc * alpha)",
            "    m = m2",
            f"ct.store({qo.name}, index=(b0, 0), tile=acc / den)"],
           [f"q = ns.load({qq.name}, (b0, 0), (T0, T2), 0)",
            "m = np.full((T0, 1), -1e30, np.float32)",
            "den = np.zeros((T0, 1), np.float32)",
            "acc = np.zeros((T0, T2), np.float32)",
            "for j in range(ns.cdiv(S[1], T1)):",
            f"    kt = {kmodel}",
            f"    v = ns.load({qv.name}, (j, 0), (T1, T2), 0)",
            "    s = ns.mma(q, kt, np.zeros((T0, T1), np.float32), 'f32')",
            "    m2 = np.fmax(m, np.fmax.reduce(s, axis=1, keepdims=True))",
            "    alpha = ns.r(np.exp(m - m2), 'f32')",
            "    pr = ns.r(np.exp(s - m2), 'f32')",
            "    den = ns.r(den * alpha + ns.red('sum', pr, 1, True, 'f32'), 'f32')",
            f"    acc = ns.mma(ns.cast(pr, 'f32', {dt!r}), v, ns.r(acc * alpha, 'f32'), 'f32')",
            "    m = m2",
            f"ns.store({qo.name}, (b0, 0), ns.r(acc / den, 'f32'))"], feature="attention")
    out = g.new_val(dt="f32", axes=[], exact=False, bound=1.0, nred=4, nops=1, rtol=max(DTYPES[dt].rtol, 1e-5))
    g.check(qo.name, out)


def t_gather(g: Gen, p: Program):
    """``ct.gather`` with index tiles (some out of bounds) and a mask, then ``ct.scatter`` to a
    permutation (distinct targets) with a mask; 1-D, or 2-D with broadcast index tiles."""
    dt = g.pick(FLOATS + INTS)
    g.features.add(f"dtype:{dt}")
    two_d = g.chance(0.35)
    pad = g.pick(["0", "1", "3"]) if DTYPES[dt].is_int else g.pick(["0.0", "1.5", "-2.0"])
    if not two_d:
        T0 = p.tile[0]
        p.grid = ["ns.cdiv(S[0], T0)"]
        qx = g.array(dt, 1, ["S[0]"])
        qi = g.array("i32", 1, ["S[0]"], init="index:S[0]")
        qp = g.array("i32", 1, ["S[0]"], init="perm:S[0]")
        i, idx, pidx, v = g.tmp(), g.tmp(), g.tmp(), g.new_val(dt=dt, axes=[Axis("S[0]", "b0", T0)])
        masked = g.chance(0.6)
        mk = f", mask=({i} % 3) != 0" if masked else ""
        mm = f", mask=({i} % 3) != 0" if masked else ""
        g.emit([f"{i} = ct.arange(T0, dtype=ct.int32) + b0 * T0",
                f"{idx} = ct.load({qi.name}, index=(b0,), shape=(T0,), padding_mode=ct.PaddingMode.ZERO)",
                f"{v.name} = ct.gather({qx.name}, {idx}{mk}, padding_value={pad})"],
               [f"{i} = np.arange(T0, dtype=np.int32) + b0 * T0",
                f"{idx} = ns.load({qi.name}, (b0,), (T0,), 0)",
                f"{v.name} = ns.gather({qx.name}, ({idx},){mm}, pad={pad})"], feature="gather" + ("_mask" if masked else ""))
        v = g.chain(v, g.rng.randint(0, 3), 0, pointwise_only=True, allow_cast=False, scalars_ok=True)
        qy = g.array(v.dt, 1, ["S[0]"], role="out", init="zeros")
        # padded lanes of the permutation load read index 0: always mask the lanes past the end
        smask = f"({i} < {qx.name}.shape[0])" + (f" & ({i} % 2 == 0)" if g.chance(0.4) else "")
        g.emit([f"{pidx} = ct.load({qp.name}, index=(b0,), shape=(T0,), padding_mode=ct.PaddingMode.ZERO)",
                f"ct.scatter({qy.name}, {pidx}, {v.name}, mask={smask})"],
               [f"{pidx} = ns.load({qp.name}, (b0,), (T0,), 0)",
                f"ns.scatter({qy.name}, ({pidx},), {v.name}, mask={smask})"], feature="scatter_mask")
        g.check(qy.name, v)
        return
    T0, T1 = p.tile[0], p.tile[1]
    p.grid = ["ns.cdiv(S[0], T0)", "ns.cdiv(S[1], T1)"]
    qx = g.array(dt, 2, ["S[0]", "S[1]"])
    ri, ci, v = g.tmp(), g.tmp(), g.new_val(dt=dt, axes=[Axis("S[0]", "b0", T0), Axis("S[1]", "b1", T1)])
    g.emit([f"{ri} = ct.reshape(ct.arange(T0, dtype=ct.int32) + b0 * T0, (T0, 1))",
            f"{ci} = ct.reshape(ct.arange(T1, dtype=ct.int32) + b1 * T1, (1, T1))",
            f"{v.name} = ct.gather({qx.name}, ({ri}, {ci}), padding_value={pad})"],
           [f"{ri} = np.reshape(np.arange(T0, dtype=np.int32) + b0 * T0, (T0, 1))",
            f"{ci} = np.reshape(np.arange(T1, dtype=np.int32) + b1 * T1, (1, T1))",
            f"{v.name} = ns.gather({qx.name}, ({ri}, {ci}), pad={pad})"], feature="gather_2d")
    v = g.chain(v, g.rng.randint(0, 3), 0, pointwise_only=False, allow_cast=True, scalars_ok=True)
    if v.shape == (T0, T1) and v.axes[0].extent == "S[0]":
        qy = g.array(v.dt, 2, ["S[0]", "S[1]"], role="out", init="zeros")
        g.emit(f"ct.scatter({qy.name}, ({ri}, {ci}), {v.name})", f"ns.scatter({qy.name}, ({ri}, {ci}), {v.name})",
               feature="scatter_2d")
        g.check(qy.name, v)
    else:
        g.store(v, 0)


def t_raw(g: Gen, p: Program):
    """Pointer loads / stores by element offset (``Array.get_raw_memory()``: ``load_offset`` /
    ``store_offset`` / ``atomic_add_offset`` with masks), 1-D or 2-D offsets from the array strides."""
    dt = g.pick(FLOATS + INTS)
    g.features.add(f"dtype:{dt}")
    g.strided_ok = False  # offsets assume the arrays' rows are contiguous (x and y share them)
    two_d = g.chance(0.5)
    T0, T1 = p.tile[0], p.tile[1]
    pad = g.pick(["0", "3"]) if DTYPES[dt].is_int else g.pick(["0.0", "-1.5"])
    extra = g.chance(0.5)
    if two_d:
        p.grid = ["ns.cdiv(S[0], T0)", "ns.cdiv(S[1], T1)"]
        qx = g.array(dt, 2, ["S[0]", "S[1]"])
        qy = g.array(dt, 2, ["S[0]", "S[1]"], role="out", init="zeros")
        axes = [Axis("S[0]", "b0", T0, "T0"), Axis("S[1]", "b1", T1, "T1")]
        k = ["r = ct.reshape(ct.arange(T0, dtype=ct.int32) + b0 * T0, (T0, 1))",
             "c = ct.reshape(ct.arange(T1, dtype=ct.int32) + b1 * T1, (1, T1))",
             f"off = r * {qx.name}.strides[0] + c",
             f"msk = (r < {qx.name}.shape[0]) & (c < {qx.name}.shape[1])" + (" & ((r + c) % 3 != 0)" if extra else "")]
        m = ["r = np.reshape(np.arange(T0, dtype=np.int32) + b0 * T0, (T0, 1))",
             "c = np.reshape(np.arange(T1, dtype=np.int32) + b1 * T1, (1, T1))",
             f"off = r * {qx.name}.shape[1] + c",
             f"msk = (r < {qx.name}.shape[0]) & (c < {qx.name}.shape[1])" + (" & ((r + c) % 3 != 0)" if extra else "")]
        flat = f"{qx.name}.reshape(-1)"
        yflat = f"{qy.name}.reshape(-1)"
    else:
        p.grid = ["ns.cdiv(S[0], T0)"]
        qx = g.array(dt, 1, ["S[0]"])
        qy = g.array(dt, 1, ["S[0]"], role="out", init="zeros")
        axes = [Axis("S[0]", "b0", T0, "T0")]
        k = ["off = ct.arange(T0, dtype=ct.int32) + b0 * T0",
             f"msk = (off < {qx.name}.shape[0])" + (" & (off % 3 != 0)" if extra else "")]
        m = ["off = np.arange(T0, dtype=np.int32) + b0 * T0",
             f"msk = (off < {qx.name}.shape[0])" + (" & (off % 3 != 0)" if extra else "")]
        flat, yflat = qx.name, qy.name
    v = g.new_val(dt=dt, axes=axes)
    k.append(f"{v.name} = {qx.name}.get_raw_memory().load_offset(off, mask=msk, padding_value={pad})")
    m.append(f"{v.name} = ns.gather({flat}, (off,), mask=msk, pad={pad})")
    g.emit(k, m, feature="raw_load_offset")
    v = g.chain(v, g.rng.randint(1, 4), 0, pointwise_only=True, allow_cast=False)
    g.emit(f"{qy.name}.get_raw_memory().store_offset(off, {v.name}, mask=msk)",
           f"ns.scatter({yflat}, (off,), {v.name}, mask=msk)", feature="raw_store_offset")
    g.check(qy.name, v)
    if DTYPES[dt].kind in "iu" and DTYPES[dt].bits >= 32 and g.chance(0.5):
        n = g.rng.randint(2, 9)
        qc = g.array(dt, 1, [str(n)], role="out", init="small")
        g.emit(f"{qc.name}.get_raw_memory().atomic_add_offset(off % {n}, {v.name}, mask=msk)",
               f"ns.atomic_rmw('add', {qc.name}, np.where(msk, off % {n}, {OOB}), {v.name})",
               feature="raw_atomic_add_offset")
        g.check(qc.name, v)


def t_atomic(g: Gen, p: Program):
    """Atomics: read-modify-write with colliding indices (order-independent results only), exchange /
    compare-and-swap on distinct indices (old values stored), tiled-view atomic add."""
    T0 = p.tile[0]
    p.grid = ["ns.cdiv(S[0], T0)"]
    kind = g.pick(["rmw", "rmw", "xchg", "cas", "view_add"])
    if kind == "rmw":
        op = g.pick(["add", "max", "min", "and", "or", "xor"])
        dt = g.pick(["i32", "i64", "u32"] + (["f32"] if op == "add" else []))
    elif kind == "view_add":
        dt = g.pick(["i32", "f32", "i64"])
        op = "add"
    else:
        dt = g.pick(["i32", "i64", "u32"])
        op = kind
        if kind == "cas" and g.side.random() < 0.5:  # float CAS (found broken: cmpxchg took no floats)
            dt = g.side.choice(["f32", "f64"])
    g.features.add(f"atomic:{kind}:{op}:{dt}")
    qx = g.array(dt, 1, ["S[0]"], init="small")
    v = g.new_val(dt=dt, axes=[Axis("S[0]", "b0", T0)])
    g.emit(f"{v.name} = ct.load({qx.name}, index=(b0,), shape=(T0,), padding_mode=ct.PaddingMode.ZERO)",
           f"{v.name} = ns.load({qx.name}, (b0,), (T0,), 0)")
    if dt == "f32":
        v2 = g.new_val(v, exact=False, bound=1.0, nops=1)
        g.emit(f"{v2.name} = ct.tanh({v.name})", f"{v2.name} = ns.r(np.tanh({v.name}), 'f32')")
        v = v2
    i = g.tmp()
    g.emit(f"{i} = ct.arange(T0, dtype=ct.int32) + b0 * T0", f"{i} = np.arange(T0, dtype=np.int32) + b0 * T0")
    n_targets = g.rng.randint(3, 40)
    mo = ""
    if kind != "view_add" and g.chance(0.4):  # an explicit ordering and scope (the results do not depend on it)
        order = g.pick(["RELAXED", "ACQUIRE", "RELEASE", "ACQ_REL"])
        mo = f", memory_order=ct.MemoryOrder.{order}, memory_scope=ct.MemoryScope.{g.pick(['BLOCK', 'DEVICE', 'SYS'])}"
        g.features.add(f"atomic_order:{order}")
    if kind == "rmw":
        qt = g.array(dt, 1, [str(n_targets)], role="out", init="small")
        qi = g.array("i32", 1, ["S[0]"], init=f"target:{n_targets}")
        idx = g.tmp()
        g.emit([f"{idx} = ct.load({qi.name}, index=(b0,), shape=(T0,), padding_mode=ct.PaddingMode.ZERO)",
                f"ct.atomic_{op}({qt.name}, ct.where({i} < {qx.name}.shape[0], {idx}, {OOB}), {v.name}{mo})"],
               [f"{idx} = ns.load({qi.name}, (b0,), (T0,), 0)",
                f"ns.atomic_rmw({op!r}, {qt.name}, np.where({i} < {qx.name}.shape[0], {idx}, {OOB}), {v.name})"],
               feature=f"atomic_{op}")
        g.check(qt.name, v, extra_nred=64)
        return
    if kind == "view_add":
        qt = g.array(dt, 1, ["2 * T0 + 3"], role="out", init="small")
        j = g.rng.randint(0, 2)
        g.emit(f"{qt.name}.tiled_view((T0,)).atomic_store_add((b0 % {j + 1},), {v.name})",
               f"ns.view_atomic_add({qt.name}, (b0 % {j + 1},), (T0,), (T0,), {v.name})", feature="view_atomic_add")
        g.check(qt.name, v, extra_nred=64)
        return
    # xchg / cas on a permutation of the target array: distinct indices
    qt = g.array(dt, 1, ["S[0]"], role="out", init="small")
    qp = g.array("i32", 1, ["S[0]"], init="perm:S[0]")
    qo = g.array(dt, 1, ["S[0]"], role="out", init="zeros")
    pidx = g.tmp()
    old = g.new_val(v, exact=True)
    tgt = f"ct.where({i} < {qx.name}.shape[0], {pidx}, {OOB})"
    mtgt = f"np.where({i} < {qx.name}.shape[0], {pidx}, {OOB})"
    if kind == "xchg":
        k, m = f"ct.atomic_xchg({qt.name}, {tgt}, {v.name}{mo})", f"ns.atomic_rmw('xchg', {qt.name}, {mtgt}, {v.name})"
    elif DTYPES[dt].kind == "f":  # expected: the current value on even lanes (swapped), the new one on odd lanes
        cur = f"ct.gather({qt.name}, {tgt})"
        k = f"ct.atomic_cas({qt.name}, {tgt}, ct.where({i} % 2 == 0, {cur}, {v.name}), {v.name}{mo})"
        m = (f"ns.atomic_cas({qt.name}, {mtgt}, np.where({i} % 2 == 0, ns.gather({qt.name}, ({mtgt},)), {v.name}), "
             f"{v.name})")
    else:
        k = f"ct.atomic_cas({qt.name}, {tgt}, {v.name} & 1, {v.name}{mo})"
        m = f"ns.atomic_cas({qt.name}, {mtgt}, {v.name} & 1, {v.name})"
    g.emit([f"{pidx} = ct.load({qp.name}, index=(b0,), shape=(T0,), padding_mode=ct.PaddingMode.ZERO)",
            f"{old.name} = {k}", f"ct.store({qo.name}, index=(b0,), tile={old.name})"],
           [f"{pidx} = ns.load({qp.name}, (b0,), (T0,), 0)", f"{old.name} = {m}",
            f"ns.store({qo.name}, (b0,), {old.name})"], feature=f"atomic_{kind}")
    g.check(qt.name, v)
    g.check(qo.name, old)


def t_view(g: Gen, p: Program):
    """``x.tiled_view(T, padding_mode=..., traversal_steps=...)``: overlapping (step < tile, incl. 1)
    or gapped windows; the loaded tile goes through a chain and a view store."""
    rank, T = p.rank, p.tile
    dt = g.pick(FLOATS + INTS + F8)
    g.features.add(f"dtype:{dt}")
    steps = []
    for t in T:
        steps.append(g.pick([t, t, max(1, t // 2), 1, t + 1]))
    g.features.add("traversal_steps" if steps != T else "tiled_view")
    if 1 in steps and any(t > 1 for t in T):
        g.features.add("traversal_step_1")
    p.grid = [f"ns.cdiv(S[{i}], {steps[i]})" for i in range(rank)]
    # at most ~6 windows per axis (small steps would make hundreds of blocks)
    p.extents = [min(e, 6 * st - g.rng.randint(0, st - 1)) for e, st in zip(p.extents, steps)]
    mode, pad, finite = g.padding(dt, finite_only=True)
    qx = g.array(dt, rank, [f"S[{i}]" for i in range(rank)])
    idx = "(" + "".join(f"b{i}, " for i in range(rank)) + ")"
    tsh = "(" + "".join(f"T{i}, " for i in range(rank)) + ")"
    v = g.new_val(dt=dt, axes=[Axis(f"ns.cdiv(S[{i}], {steps[i]}) * T{i}", f"b{i}", T[i], f"T{i}") for i in range(rank)])
    pm = "" if mode == "UNDETERMINED" else f", padding_mode=ct.PaddingMode.{mode}"
    g.emit(f"{v.name} = {qx.name}.tiled_view({tsh}{pm}, traversal_steps={tuple(steps)}).load({idx})",
           f"{v.name} = ns.view_load({qx.name}, {idx}, {tsh}, {tuple(steps)}, {pad})", feature=f"pad:{mode}")
    if steps != T and g.side.random() < 0.5:  # the view's num_tiles (found broken: the step was ignored)
        qn = Param("ynt", "array", "i32", 1, g.index_dt, "out", [str(rank)], "zeros")  # no draw from g.rng
        g.params.append(qn)
        view = f"{qx.name}.tiled_view({tsh}, traversal_steps={tuple(steps)})"
        g.emit([f"{qn.name}.tiled_view((1,)).store(({k},), ct.full((1,), {view}.num_tiles({k}), dtype=ct.int32))"
                for k in range(rank)], [f"{qn.name}[{k}] = ns.cdiv(S[{k}], {steps[k]})" for k in range(rank)],
               feature="view_num_tiles")
        g.checks[qn.name] = ("exact", "i32")
    if dt in F8:  # 8-bit floats: widen, compute, narrow
        v = _widen_f8(g, v)
    v = g.chain(v, g.rng.randint(1, 4), 0)
    if dt in F8 and DTYPES[v.dt].is_float and v.bound < 200:
        v = _narrow_f8(g, v, dt)
    if v.shape == tuple(T) and all(a.extent.endswith(f"* T{i}") for i, a in enumerate(v.axes)):
        qy = g.array(v.dt, rank, [a.extent for a in v.axes], role="out", init="zeros")
        g.emit(f"{qy.name}.tiled_view({tsh}).store({idx}, {v.name})", f"ns.store({qy.name}, {idx}, {v.name})",
               feature="view_store")
        g.check(qy.name, v)
    else:
        g.store(v, 0)


def t_advidx(g: Gen, p: Program):
    """``ct.load_advanced_indexing`` / ``store_advanced_indexing``: one axis indexed by a tile of row
    indices (some out of bounds), the others by ``ct.Slice`` at a constant or runtime offset that may
    run past the edge."""
    rank = g.pick([2, 2, 3])
    T = p.tile = _tile_shape(g.rng, rank, 1024)
    p.rank = rank
    p.extents = [_extent(g.rng, t) for t in T]
    dt = g.pick(FLOATS + INTS)
    g.features.add(f"dtype:{dt}")
    sparse = g.rng.randrange(rank)
    p.grid = [f"ns.cdiv(S[{sparse}], T{sparse})"]
    qx = g.array(dt, rank, [f"S[{i}]" for i in range(rank)])
    qi = g.array("i32", 1, [f"S[{sparse}]"], init=f"index:S[{sparse}]")
    qp = g.array("i32", 1, [f"S[{sparse}]"], init=f"perm:S[{sparse}]")
    qy = g.array(dt, rank, [f"S[{i}]" for i in range(rank)], role="out", init="zeros")
    rows, prow = g.tmp(), g.tmp()
    dense = [a for a in range(rank) if a != sparse]
    starts_k, starts_m = [], []
    runtime = g.chance(0.5)
    for a in dense:
        if runtime:
            s = g.scalar("i32", f"np.int32(min(S[{a}] - 1, {g.rng.randint(0, 6)}))")
            starts_k.append(s.name)
            starts_m.append(s.name)
            g.features.add("adv_slice_runtime")
        else:
            starts_k.append("0")
            starts_m.append("0")
    lens = [f"T{a}" for a in dense]
    kidx, kidx2 = [], []
    for a in range(rank):
        if a == sparse:
            kidx.append(rows)
            kidx2.append(prow)
        else:
            j = dense.index(a)
            kidx.append(f"ct.Slice({starts_k[j]}, {lens[j]})")
            kidx2.append(f"ct.Slice({starts_k[j]}, {lens[j]})")
    v = g.new_val(dt=dt, axes=[Axis("?", "?", T[a]) for a in range(rank)])
    st = "(" + ", ".join(starts_m) + ",)"
    ln = "(" + ", ".join(lens) + ",)"
    g.emit([f"{rows} = ct.load({qi.name}, index=(b0,), shape=(T{sparse},), padding_mode=ct.PaddingMode.ZERO)",
            f"{v.name} = ct.load_advanced_indexing({qx.name}, ({', '.join(kidx)},), padding_mode=ct.PaddingMode.ZERO)"],
           [f"{rows} = ns.load({qi.name}, (b0,), (T{sparse},), 0)",
            f"{v.name} = ns.adv_load({qx.name}, {sparse}, {rows}, {st}, {ln}, 0)"], feature="adv_load")
    v = g.chain(v, g.rng.randint(0, 2), 0, pointwise_only=True, allow_cast=False)
    g.emit([f"{prow} = ct.load({qp.name}, index=(b0,), shape=(T{sparse},), padding_mode=ct.PaddingMode.ZERO)",
            f"{prow} = ct.where(ct.arange(T{sparse}, dtype=ct.int32) + b0 * T{sparse} < {qp.name}.shape[0], {prow}, {OOB})",
            f"ct.store_advanced_indexing({qy.name}, ({', '.join(kidx2)},), {v.name})"],
           [f"{prow} = ns.load({qp.name}, (b0,), (T{sparse},), 0)",
            f"{prow} = np.where(np.arange(T{sparse}, dtype=np.int32) + b0 * T{sparse} < {qp.name}.shape[0], {prow}, {OOB})",
            f"ns.adv_store({qy.name}, {sparse}, {prow}, {st}, {v.name})"], feature="adv_store")
    g.check(qy.name, v)


# ct.mma_scaled's formats (cuTile's docstring table): operand type, scale type, scale block along K
SCALED_KINDS = [("f8e4m3", "f8e8m0", 32), ("f8e5m2", "f8e8m0", 32), ("f4e2m1", "f8e8m0", 32), ("f4e2m1", "f8e8m0", 16),
                ("f4e2m1", "f8e4m3", 16)]
SCALED_OPERAND_EXP = {"f8e4m3": 1, "f8e5m2": 1, "f4e2m1": 3}  # operand codes with |value| <= 2**n (e2m1: all)
SCALE_EXP = 2  # scales in [2**-2, 2**2]


def _scaled_operand(g: Gen, dt: str, rows: str, cols: str, idx: tuple[str, str], shape: tuple[str, str],
                    init: str, k_axis: int) -> tuple[str, str, Param]:
    """A K-tile of an mma_scaled operand (or its scales) whose logical shape is ``shape`` (rows x cols of
    the array ``rows x cols``): loaded as it is, or from the transposed array with ``order=(1, 0)``, or
    loaded transposed and ``ct.transpose``-d (cuTile's docstring form for B). Zero padding."""
    form = "plain" if k_axis == 1 else g.pick(["plain", "plain", "order", "transpose"])
    zero = ", padding_mode=ct.PaddingMode.ZERO"
    i0, i1 = idx
    s0, s1 = shape
    if form == "plain":
        q = g.array(dt, 2, [rows, cols], init=init)
        return (f"ct.load({q.name}, index=({i0}, {i1}), shape=({s0}, {s1}){zero}{g.load_hints()})",
                f"ns.load({q.name}, ({i0}, {i1}), ({s0}, {s1}), 0)", q)
    q = g.array(dt, 2, [cols, rows], init=init)
    g.features.add(f"mma_scaled_{form}")
    if form == "order":
        return (f"ct.load({q.name}, index=({i0}, {i1}), shape=({s0}, {s1}), order=(1, 0){zero})",
                f"ns.load({q.name}, ({i0}, {i1}), ({s0}, {s1}), 0, order=(1, 0))", q)
    return (f"ct.transpose(ct.load({q.name}, index=({i1}, {i0}), shape=({s1}, {s0}){zero}))",
            f"np.transpose(ns.load({q.name}, ({i1}, {i0}), ({s1}, {s0}), 0))", q)


def t_mma_scaled(g: Gen, p: Program):
    """``acc = ct.mma_scaled(a, sa, b, sb, acc)`` over K tiles (block-scaled MMA: e4m3 / e5m2 with e8m0
    scales per 32, e2m1 with e8m0 per 16 / 32 or e4m3 per 16; f32 accumulator, zeros or loaded from C);
    B and its scales maybe stored transposed (``order=(1, 0)`` or ``ct.transpose``); 16- to 128-row
    tiles, K tiles of 32 to 128, extents not tile multiples (the last K tile and its scale blocks
    partial). The result is stored as it is, checked against the exact sum (``compare``'s "dot" check),
    and maybe scaled by a power of two under its magnitude bound and put through an elementwise epilogue.
    Operand codes are drawn among every finite code of a magnitude range (subnormals, zeros, both signs),
    scales among the positive codes in [2**-2, 2**2]."""
    op_dt, sc_dt, blk = g.pick(SCALED_KINDS)
    g.features.add(f"mma_scaled:{op_dt}/{sc_dt}/{blk}")
    TM, TN, TK = g.pick([16, 32, 64, 64, 128, 128]), g.pick([16, 32, 64]), g.pick([32, 64, 64, 128])
    if TK % blk:
        TK = blk
    p.tile = [TM, TN, TK]
    # M / N: a partial tile after 0-1 whole ones, K: after 1-2 (the scale blocks of the last one partial too)
    wholes = [g.rng.randint(0, 1), g.rng.randint(0, 1), g.rng.randint(1, 2)]
    # the emulator runs a CUDA-core mma_scaled at ~1e5 multiply-adds a second: a budget of them per program
    # (larger where the tile may take the tensor cores: 64- / 128-row tiles, N >= 32)
    budget = 4 << 20 if TM >= 64 and TN >= 32 else 1 << 19
    while math.prod(w + 1 for w in wholes) * TM * TN * TK > budget and any(wholes):
        wholes[max(range(3), key=lambda i: wholes[i])] -= 1
    p.extents = [t * w + g.rng.randint(1, t - 1) for t, w in zip(p.tile, wholes)]
    p.grid = ["ns.cdiv(S[0], T0)", "ns.cdiv(S[1], T1)"]
    # scale columns: cdiv(K, block), the last K tile's scale loads zero-padded; or as many as the K tiles
    # cover, none padded (ZERO padding of an e8m0 tile is 2**127 in tilecore, 2**-127 in tileiras: the
    # CUDA-core lowering's scale product overflows to inf, times the padded operand's 0: NaN)
    ks = f"ns.cdiv(S[2], {blk})"
    if g.side.random() < 0.3:
        if sc_dt == "f8e8m0":
            g.features.add("mma_scaled_e8m0_pad")
    else:
        ks = f"ns.cdiv(S[2], T2) * (T2 // {blk})"
    codes, scales = f"codes:{SCALED_OPERAND_EXP[op_dt]}", f"scales:{SCALE_EXP}"
    acc_axes = [Axis("S[0]", "b0", TM), Axis("S[1]", "b1", TN)]
    acc, acc_abs = g.tmp(), g.tmp()
    c_max = 0.0
    if g.chance(0.3):  # accumulate onto C
        qc = g.array("f32", 2, ["S[0]", "S[1]"], init="small")
        c_max = 1.0
        g.emit(f"{acc} = ct.load({qc.name}, index=(b0, b1), shape=(T0, T1), padding_mode=ct.PaddingMode.ZERO)",
               [f"{acc} = ns.load({qc.name}, (b0, b1), (T0, T1), 0).astype(np.float64)", f"{acc_abs} = np.abs({acc})"],
               feature="mma_acc_loaded")
    else:
        g.emit(f"{acc} = ct.full((T0, T1), 0.0, dtype=ct.float32)",
               [f"{acc} = np.zeros((T0, T1))", f"{acc_abs} = np.zeros((T0, T1))"])
    a, sa, b, sb = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    ka, ma, qa = _scaled_operand(g, op_dt, "S[0]", "S[2]", ("b0", "k"), ("T0", "T2"), codes, 1)
    ksa, msa, _ = _scaled_operand(g, sc_dt, "S[0]", ks, ("b0", "k"), ("T0", f"T2 // {blk}"), scales, 1)
    kb, mb, _ = _scaled_operand(g, op_dt, "S[2]", "S[1]", ("k", "b1"), ("T2", "T1"), codes, 0)
    ksb, msb, _ = _scaled_operand(g, sc_dt, ks, "S[1]", ("k", "b1"), (f"T2 // {blk}", "T1"), scales, 0)
    g.emit(f"for k in range(ct.num_tiles({qa.name}, axis=1, shape=(T0, T2))):", "for k in range(ns.cdiv(S[2], T2)):",
           feature="mma_scaled")
    g.emit([f"{a} = {ka}", f"{sa} = {ksa}", f"{b} = {kb}", f"{sb} = {ksb}",
            f"{acc} = ct.mma_scaled({a}, {sa}, {b}, {sb}, {acc})"],
           [f"{a} = {ma}", f"{sa} = {msa}", f"{b} = {mb}", f"{sb} = {msb}",
            f"{acc} = ns.mma_scaled({a}, {sa}, {b}, {sb}, {acc})",
            f"{acc_abs} = ns.mma_scaled(np.abs({a}), {sa}, np.abs({b}), {sb}, {acc_abs})"], 1)
    # the result as it is: within the f32 sum's error bound of the exact sum (K products, C, the rounding)
    k_max = p.extents[2]
    q = g.array("f32", 2, ["S[0]", "S[1]"], role="out", init="zeros")
    g.aux.append((f"{q.name}_abs", q.name))
    g.emit(f"ct.store({q.name}, index=(b0, b1), tile={acc}{g.store_hints()})",
           [f"ns.store({q.name}, (b0, b1), {acc})", f"ns.store({q.name}_abs, (b0, b1), {acc_abs})"], feature="store")
    g.checks[q.name] = ("dot", "f32", k_max + 2)
    if not g.chance(0.6):
        return
    # an epilogue on the result scaled under 1 by a power of two (exact): |acc| <= A <= bound
    op_max = min(DTYPES[op_dt].hi, 2.0 ** SCALED_OPERAND_EXP[op_dt])  # e2m1: 6
    a_max = k_max * (op_max * 2.0**SCALE_EXP) ** 2 + c_max
    scale = 2.0 ** -math.ceil(math.log2(a_max))
    v = Val(g.tmp(), "f32", acc_axes, exact=False, bound=1.0, nred=k_max + 2, nops=1, cancel=True)
    g.emit(f"{v.name} = {acc} * {scale!r}", f"{v.name} = ns.r({acc} * {scale!r}, 'f32')", feature="mma_scaled_epilogue")
    v = g.chain(v, g.rng.randint(1, 3), 0, pointwise_only=True, allow_cast=True, scalars_ok=True)
    g.store(v, 0)


TEMPLATES = [("tiles", t_tiles, 10), ("loop", t_loop, 3), ("mma", t_mma, 3), ("attn", t_attn, 1), ("gather", t_gather, 2), ("raw", t_raw, 2),
             ("atomic", t_atomic, 2), ("view", t_view, 2), ("advidx", t_advidx, 1), ("mma_scaled", t_mma_scaled, 1),
             # weight 0 (``--template idioms`` only; appended last, so the default draw's choices stay the same)
             ("idioms", lambda g, p: idioms.t_idioms(g, p), 0)]


MAX_BLOCKS = 12  # the emulator runs blocks one after another: keep launches small


def _blocks(p: Program, extents: list[int]) -> int:
    from . import npsem

    env = {"S": extents, "ns": npsem, **{f"T{i}": t for i, t in enumerate(p.tile)}}
    return math.prod(eval(g, env) for g in p.grid)  # noqa: S307 - our own expressions


def _clusters(g: Gen, p: Program) -> None:
    """cuTile ``num_ctas=2`` (the ``clusters`` stream): clusters of 2 CTAs on sm_90+, and on
    sm_100a CTA pairs (``tcgen05.mma.cta_group::2``) where the dot admits them: then a 2-D f16 / bf16 dot gets
    128-row tiles (the pair's instruction M is 256); its N must be 32 or more (each CTA stages half of B)."""
    p.num_ctas = 2
    g.features.add("num_ctas:2")
    pair_types = {"mma:f16->f16", "mma:f16->f32", "mma:bf16->f32"}
    # Each CTA of a pair stages half of B: rows of 32 bytes or more, so N >= 32. N is not widened here: the body,
    # drawn before, writes the tile's sizes as numbers (a bias row of N elements: seed 7010 widened N = 8 to 32 and
    # its (1, 8) row no longer broadcast against the (128, 32) accumulator: cuTile refused to export it).
    if "mma_batched" not in g.features and g.features & pair_types and p.tile[1] >= 32:
        p.tile[0] = 128
        p.extents[0] = _extent(g.clusters, 128, 2)
        g.features.add("cta_pairs")


def _cap_blocks(p: Program) -> None:
    """Shrink the largest extents until the launch has at most MAX_BLOCKS blocks."""
    while _blocks(p, p.extents) > MAX_BLOCKS:
        i = max(range(len(p.extents)), key=lambda k: p.extents[k] / p.tile[k] if k < len(p.tile) else 0)
        if p.extents[i] <= 1:
            break
        p.extents[i] = max(1, p.extents[i] - max(1, p.tile[i] if i < len(p.tile) else 1))


def generate(seed: int, template: str | None = None) -> Program:
    """Draw program ``seed`` (optionally forcing a template)."""
    g = Gen(seed)
    names = [t[0] for t in TEMPLATES]
    fns = {t[0]: t[1] for t in TEMPLATES}
    name = template or g.rng.choices(names, [t[2] for t in TEMPLATES])[0]
    rank = g.pick([1, 1, 2, 2, 2, 3]) if name in ("tiles", "view", "loop") else 1 if name in ("atomic",) else 2
    if name in ("gather", "raw"):
        rank = 2
    tile = _tile_shape(g.rng, rank, 2048 if name != "loop" else 1024)
    if name in ("atomic", "gather", "raw"):
        tile = [g.pick([16, 32, 64, 128]), g.pick([4, 8, 16])][:rank]
    if g.chance(0.15):
        g.index_dt = "i64"
        g.features.add("index_i64")
    p = Program(seed=seed, template=name, rank=rank, tile=tile, extents=[_extent(g.rng, t) for t in tile], grid=[])
    fns[name](g, p)
    if g.side.random() < 0.12:  # an early-return guard (found broken: the return stayed inside an scf.if)
        k = g.side.randint(0, 2)
        g.stmts.insert(0, Stmt([f"if b0 % 3 == {k}:", "    return"], [f"if b0 % 3 == {k}:", "    continue"],
                               droppable=True, feature="early_return"))
        g.features.add("early_return")
    if name == "mma" and g.clusters.random() < 0.3:
        _clusters(g, p)
    elif name not in ("mma", "mma_scaled") and g.clusters.random() < 0.15:
        # num_ctas=2 elsewhere: a tile block per cluster (the CTA of rank 0 runs it; prints and atomics once)
        p.num_ctas = 2
        g.features.add("num_ctas:2")
    p.params, p.stmts, p.checks, p.features, p.min_sm = g.params, g.stmts, g.checks, g.features | {f"template:{name}"}, g.min_sm
    p.aux = g.aux
    p.helpers = list(g.helpers.values())
    if g.index_dt == "i64":
        for q in p.params:
            if q.kind == "array":
                q.index_dt = "i64"
    _cap_blocks(p)
    p.features.add(f"rank:{p.rank}")
    p.features.add(f"grid:{len(p.grid)}d")
    return p
