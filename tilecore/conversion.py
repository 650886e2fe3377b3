"""The conversion driver: ConversionTarget, Pattern, apply_conversion.

MLIR 22's Python bindings have a greedy rewrite driver but no dialect
conversion, so this module builds one on top of ``mlir.rewrite``:

* every :class:`Pattern` (root op, benefit, pure ``match``, ``rewrite``) is
  dispatched from one greedy callback per root op, in benefit order with ties
  broken by plugin name (so the winner is deterministic and printable);
* type changes are bridged with ``builtin.unrealized_conversion_cast``
  (:class:`Rewriter` inserts and folds them), removed at the end by
  ``reconcile-unrealized-casts``;
* the work happens on a clone: on failure the caller's module is untouched,
  on success the clone's body replaces the caller's;
* afterwards the :class:`ConversionTarget` is checked and every illegal survivor
  is reported with its location and the plugins that had patterns for it.

Exceptions raised by patterns never cross the C++ driver: the dispatch callback
catches them, stops matching, and the driver re-raises after the walk.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .errors import TilecoreError, format_location, mlir_error_to_tilecore
from .mlir import PassManager, ir, rewrite

CAST_OP = "builtin.unrealized_conversion_cast"
MAX_NOTES = 10
_NATIVE_ILLEGAL = re.compile(r"failed to legalize operation '([\w.]+)'")  # survivors listed individually in a legality failure; the rest are counted


# --------------------------------------------------------------------------- target


class ConversionTarget:
    """Which ops may survive a conversion.

    Rules, most specific first: a dynamic rule for the op, a static op rule, a
    dynamic rule for the dialect, a static dialect rule. Ops no rule mentions are
    legal (partial conversion) unless ``unknown_legal=False``.
    """

    def __init__(self, name: str = "", unknown_legal: bool = True, top_level: bool = False):
        self.name = name
        self.unknown_legal = unknown_legal
        # True: the rules concern ops directly in the checked op's body only (gpu.module in a
        # builtin.module); the legality check then looks at those, not at the thousands nested in them
        self.top_level = top_level
        self._dialects: dict[str, bool] = {}
        self._ops: dict[str, bool] = {}
        self._dyn_ops: dict[str, Callable] = {}
        self._dyn_dialects: dict[str, Callable] = {}

    def add_legal_dialect(self, *names: str) -> "ConversionTarget":
        for n in names:
            self._dialects[n] = True
        return self

    def add_illegal_dialect(self, *names: str) -> "ConversionTarget":
        for n in names:
            self._dialects[n] = False
        return self

    def add_legal_op(self, *names: str) -> "ConversionTarget":
        for n in names:
            self._ops[n] = True
        return self

    def add_illegal_op(self, *names: str) -> "ConversionTarget":
        for n in names:
            self._ops[n] = False
        return self

    def add_dynamically_legal_op(self, name: str, fn: Callable) -> "ConversionTarget":
        """``fn(op) -> bool`` decides legality of each ``name`` op."""
        self._dyn_ops[name] = fn
        return self

    def add_dynamically_legal_dialect(self, name: str, fn: Callable) -> "ConversionTarget":
        """``fn(op) -> bool`` decides legality of each op of dialect ``name``."""
        self._dyn_dialects[name] = fn
        return self

    def static_verdict(self, name: str) -> bool | None:
        """The verdict for every op called ``name``, or None when a dynamic rule decides per op."""
        if name in self._dyn_ops:
            return None
        if name in self._ops:
            return self._ops[name]
        dialect = name.split(".", 1)[0]
        if dialect in self._dyn_dialects:
            return None
        return self._dialects.get(dialect, self.unknown_legal)

    def is_legal(self, op) -> bool:
        """True when ``op`` may survive under this target."""
        name = op.name
        if name in self._dyn_ops:
            return bool(self._dyn_ops[name](op))
        if name in self._ops:
            return self._ops[name]
        dialect = name.split(".", 1)[0]
        if dialect in self._dyn_dialects:
            return bool(self._dyn_dialects[dialect](op))
        if dialect in self._dialects:
            return self._dialects[dialect]
        return self.unknown_legal

    def describe(self) -> dict:
        """A JSON-able summary (used by ``tilecore pipeline``)."""
        return {
            "legal_dialects": sorted(d for d, ok in self._dialects.items() if ok),
            "illegal_dialects": sorted(d for d, ok in self._dialects.items() if not ok),
            "legal_ops": sorted(o for o, ok in self._ops.items() if ok),
            "illegal_ops": sorted(o for o, ok in self._ops.items() if not ok),
            "dynamic": sorted([*self._dyn_ops, *(d + ".*" for d in self._dyn_dialects)]),
        }


# --------------------------------------------------------------------------- patterns


class Pattern:
    """A rewrite of one root op.

    Subclasses set ``root`` (op name, ``"gpu.thread_id"``) and ``benefit``,
    implement ``match(op)`` (pure: must not touch the IR) and
    ``rewrite(op, rw)`` (builds the replacement through ``rw``, a
    :class:`Rewriter`). ``plugin`` is filled in by the plugin manager.
    Raise :class:`~tilecore.errors.LoweringError` to reject an op with a
    diagnostic the user must see.
    """

    root: str = ""
    benefit: int = 1
    plugin: str = ""
    # A pattern that updates its root in place (attributes, operands) instead of
    # replacing or erasing it sets this; its ``match`` must then fail on the result.
    modifies_in_place: bool = False
    # A pattern on a container op (gpu.func, gpu.module) that only edits it in place sets
    # this: it runs once per matching op in a walk before the greedy driver, which would
    # otherwise revisit the container after every rewrite nested in it. ``rw`` then offers
    # ``ip`` (before the op), ``target`` and ``options`` only.
    prepass: bool = False

    @property
    def name(self) -> str:
        return type(self).__name__

    def match(self, op) -> bool:
        return True

    def rewrite(self, op, rw: "Rewriter") -> None:  # pragma: no cover - abstract
        raise NotImplementedError(f"{self.name}.rewrite")

    def describe(self) -> str:
        return f"{self.plugin}:{self.name}" if self.plugin else self.name


class FunctionPattern(Pattern):
    """A pattern made from plain functions (handy in tests and small plugins)."""

    def __init__(self, root: str, rewrite_fn: Callable, match_fn: Callable | None = None,
                 benefit: int = 1, name: str | None = None):
        self.root = root
        self.benefit = benefit
        self._rewrite = rewrite_fn
        self._match = match_fn
        self._name = name or getattr(rewrite_fn, "__name__", "FunctionPattern")

    @property
    def name(self) -> str:
        return self._name

    def match(self, op) -> bool:
        return True if self._match is None else bool(self._match(op))

    def rewrite(self, op, rw):
        self._rewrite(op, rw)


@dataclass
class NativePass:
    """An upstream (C++) pass pipeline run after a stage's Python patterns.

    ``pipeline`` is the text inside ``builtin.module(...)``, for example
    ``"gpu.module(convert-gpu-to-nvvm)"``. ``plugin`` is filled in by the manager.
    ``needs``: op names; when given, the pipeline runs only if the Python patterns left an op of
    one of them (noticed by the rewrite driver as it visits the ops, no extra walk), so a pass for
    rare input (``scf.for`` in a hand-written device function) costs nothing on the rest.
    """

    pipeline: str
    plugin: str = ""
    needs: tuple[str, ...] = ()


def order_patterns(patterns: Iterable[Pattern]) -> dict[str, list[Pattern]]:
    """Group patterns by root op, highest benefit first, ties by plugin then pattern name."""
    by_root: dict[str, list[Pattern]] = defaultdict(list)
    for p in patterns:
        by_root[p.root].append(p)
    for lst in by_root.values():
        lst.sort(key=lambda p: (-p.benefit, p.plugin, p.name))
    return dict(by_root)


# --------------------------------------------------------------------------- rewriter


class Rewriter:
    """What a pattern sees while rewriting: insertion point, type converter, casts.

    ``with rw.ip:`` builds new ops before the matched op (the op's location is
    the default location). ``operands(op)`` gives the operands already in their
    converted types; ``replace(op, values)`` bridges any type change back with
    an unrealized cast so not-yet-converted users stay valid.
    """

    def __init__(self, base, type_converter, state: "_DriverState"):
        self._base = base
        self.root_done = False
        self.type_converter = type_converter
        self._state = state
        self.target = state.compile_target
        self.options = state.options

    @property
    def ip(self):
        return self._base.ip

    @property
    def memo(self) -> dict:
        """A dict shared by every rewrite of one conversion (declared symbols, hoisted constants, ...)."""
        return self._state.memo

    def attr(self, text: str) -> ir.Attribute:
        """``ir.Attribute.parse(text)``, parsed once per conversion."""
        return self._parsed(ir.Attribute.parse, text)

    def type(self, text: str) -> ir.Type:
        """``ir.Type.parse(text)``, parsed once per conversion."""
        return self._parsed(ir.Type.parse, text)

    def _parsed(self, parse, text: str):
        return self.memoized((parse, text), lambda: parse(text))

    def memoized(self, key, make):
        """``memo[key]``, made by ``make()`` the first time this conversion asks for it."""
        v = self._state.memo.get(key)
        if v is None:
            v = self._state.memo[key] = make()
        return v

    def convert_type(self, t):
        """The converted type of ``t`` (``t`` itself when no rule applies)."""
        if self.type_converter is None:
            return t
        out = self.type_converter.convert(t)
        return t if out is None else out

    def cast(self, value, to_type):
        """Bridge ``value`` to ``to_type`` (folding an existing opposite cast)."""
        if value.type == to_type:
            return value
        owner = value.owner
        if isinstance(owner, ir.OpView):
            owner = owner.operation
        if (isinstance(owner, ir.Operation) and owner.name == CAST_OP
                and len(owner.operands) == 1 and owner.operands[0].type == to_type):
            return owner.operands[0]
        with self._base.ip:
            op = ir.Operation.create(CAST_OP, results=[to_type], operands=[value])
        return op.results[0]

    def operand(self, value):
        """One operand value in its converted type."""
        return self.cast(value, self.convert_type(value.type))

    def operands(self, op) -> list:
        """All operands of ``op`` in their converted types."""
        return [self.operand(v) for v in op.operands]

    def replace(self, op, values) -> None:
        """Replace ``op``'s results by ``values`` (an op, an OpView or a list of values)."""
        if isinstance(values, (ir.Operation, ir.OpView)):
            values = list(values.results)
        elif isinstance(values, ir.Value):
            values = [values]
        values = [_as_value(v) for v in values]
        results = list(op.results)
        if len(values) != len(results):
            raise TilecoreError(f"internal: {op.name} has {len(results)} results, replacement has {len(values)}")
        bridged = [self.cast(v, r.type) for v, r in zip(values, results)]
        self._base.replace_op(op.operation if isinstance(op, ir.OpView) else op, bridged)
        self.root_done = True

    def erase(self, op) -> None:
        """Erase ``op`` (it must have no remaining uses: checked, since erasing a used op aborts)."""
        op = op.operation if isinstance(op, ir.OpView) else op
        for r in op.results:
            if any(True for _ in r.uses):
                raise TilecoreError(f"internal: erasing '{op.name}' whose result is still used")
        self._base.erase_op(op)
        self.root_done = True

    def notify(self, message: str) -> None:
        """Record a remark (printed with ``--remarks``)."""
        self._state.remarks.append(message)


def _as_value(v):
    """A Value from a Value or a single-result op."""
    if isinstance(v, (ir.Operation, ir.OpView)):
        return v.results[0]
    return v


# --------------------------------------------------------------------------- driver


@dataclass
class ConversionStats:
    """What one conversion did: pattern firings, wall time, ops before/after."""

    stage: str = ""
    fired: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    ops_before: int = 0
    ops_after: int = 0
    native_passes: list[str] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)
    # True when the result was last changed by a PassManager run, which verifies its output
    verified: bool = False

    @property
    def applied(self) -> int:
        return sum(self.fired.values())


class _DriverState:
    def __init__(self, compile_target, options):
        self.error: BaseException | None = None
        self.fired: Counter = Counter()
        self.remarks: list[str] = []
        self.compile_target = compile_target
        self.options = options
        self.memo: dict = {}
        self.seen: set[str] = set()  # watched op names (NativePass.needs) the driver visited


class ConversionError(TilecoreError):
    """A conversion left illegal ops behind (``survivors``: list of (op name, location, plugins))."""

    def __init__(self, message, location=None, notes=None, survivors=None):
        super().__init__(message, location, notes)
        self.survivors = survivors or []


def count_ops(op) -> int:
    """Number of operations nested in ``op`` (itself included)."""
    n = 0

    def cb(_):
        nonlocal n
        n += 1
        return ir.WalkResult.ADVANCE

    op.walk(cb, ir.WalkOrder.PRE_ORDER)
    return n


def _make_callback(pats: list[Pattern], type_converter, state: _DriverState, watched: bool = False):
    names = {id(p): p.describe() for p in pats}

    def callback(op, base):
        if state.error is not None:
            return True
        if watched:  # a NativePass needs this op name: note that one is here
            state.seen.add(op.name)
        for p in pats:
            try:
                with op.location:  # (a Location also makes its context current)
                    if not p.match(op):
                        continue
                    rw = Rewriter(base, type_converter, state)
                    p.rewrite(op, rw)
                    if not rw.root_done and not p.modifies_in_place:
                        # Otherwise the driver would re-match the same op forever.
                        raise TilecoreError(f"internal error in pattern {p.describe()}: rewrite of "
                                            f"'{op.name}' neither replaced nor erased it")
            except TilecoreError as e:
                if e.location is None:
                    e.location = format_location(op.location)
                state.error = e
                return True
            except Exception as e:  # noqa: BLE001 - a plugin bug becomes a located error
                state.error = TilecoreError(
                    f"internal error in pattern {p.describe()} on '{op.name}': {type(e).__name__}: {e}",
                    format_location(op.location))
                state.error.__cause__ = e
                return True
            state.fired[names[id(p)]] += 1
            return False
        return True

    return callback


class _PrepassRewriter:
    """What a ``prepass`` pattern sees: an insertion point before its op, the target and options."""

    def __init__(self, op, state: "_DriverState"):
        self.ip = ir.InsertionPoint(op)
        self.target = state.compile_target
        self.options = state.options
        self.memo = state.memo
        self.root_done = False


def _run_prepass(work_op, pats: list[Pattern], state: "_DriverState") -> None:
    by_root = defaultdict(list)
    for p in pats:
        by_root[p.root].append(p)
    todo = []
    advance, skip = ir.WalkResult.ADVANCE, ir.WalkResult.SKIP  # (one callback per op of the module)

    def cb(op):
        if op.name in by_root:
            todo.append(op)
            return skip  # a container root does not nest in itself: skip its body
        return advance

    work_op.walk(cb, ir.WalkOrder.PRE_ORDER)
    for op in todo:
        for p in by_root[op.name]:
            with op.location:
                if p.match(op):
                    try:
                        p.rewrite(op, _PrepassRewriter(op, state))
                    except TilecoreError as e:
                        if e.location is None:
                            e.location = format_location(op.location)
                        raise
                    state.fired[p.describe()] += 1


def run_native_pipeline(module_op, pipeline: str, context=None, verify: bool = True) -> None:
    """Run ``builtin.module(<pipeline>)`` on ``module_op``; MLIR diagnostics become a TilecoreError.

    ``verify=False`` turns off the pass manager's verify-each (it verifies the whole module
    after every pass, nested pipelines twice): the caller then verifies once at the end.
    """
    ctx = context or module_op.context
    try:
        pm = PassManager.parse(f"builtin.module({pipeline})", context=ctx)
    except ValueError as e:
        msg = str(e).splitlines()[0].split("error: ", 1)[-1]
        raise TilecoreError(f"pass pipeline '{pipeline}' failed: {msg}") from None
    if not verify:
        pm.enable_verifier(False)
    try:
        pm.run(module_op)
    except Exception as e:  # noqa: BLE001 - MLIRError carries the diagnostics
        raise mlir_error_to_tilecore(e, f"pass pipeline '{pipeline}' failed: ") from None


def find_illegal(module_op, target: ConversionTarget) -> list:
    """Every op nested in ``module_op`` that ``target`` does not allow (pre-order)."""
    bad = []
    root = module_op.operation if isinstance(module_op, ir.OpView) else module_op
    verdicts: dict[str, bool | None] = {}  # per op name; None: ask the dynamic rule for each op

    advance = ir.WalkResult.ADVANCE  # (the callback runs once per op: ~9,000 on a matmul, 4 walks)
    get = verdicts.get
    unseen = object()

    def cb(op):
        name = op.name
        verdict = get(name, unseen)
        if verdict is True:
            return advance
        if verdict is unseen:
            verdict = verdicts[name] = target.static_verdict(name)
            if verdict is True:
                return advance
        if verdict is None:
            verdict = target.is_legal(op)
        if not verdict and op != root:
            bad.append(op)
        return advance

    if target.top_level:
        for region in root.regions:
            for block in region.blocks:
                for op in block.operations:
                    cb(op.operation)
        return bad
    root.walk(cb, ir.WalkOrder.PRE_ORDER)
    return bad


def check_legality(module_op, target: ConversionTarget, stage: str = "",
                   patterns_by_root: dict[str, list[Pattern]] | None = None) -> None:
    """Raise :class:`ConversionError` naming every illegal op left in ``module_op``."""
    bad = find_illegal(module_op, target)
    if not bad:
        return
    patterns_by_root = patterns_by_root or {}
    # Casts left behind are symptoms of another survivor: report the real ops first.
    bad.sort(key=lambda op: op.name == CAST_OP)
    survivors = []
    for op in bad:
        plugins = sorted({p.plugin or "?" for p in patterns_by_root.get(op.name, [])})
        survivors.append((op.name, format_location(op.location), plugins))
    where = f"stage '{stage}'" if stage else "conversion"

    def line(s):
        name, loc, plugins = s
        had = f"patterns from: {', '.join(plugins)}" if plugins else "no plugin has a pattern for it"
        return f"{loc}: illegal op '{name}' survived {where} ({had})"

    first = survivors[0]
    plugins = first[2]
    had = f"patterns from: {', '.join(plugins)}" if plugins else "no plugin has a pattern for it"
    notes = [line(s) for s in survivors[1:MAX_NOTES + 1]]
    if len(survivors) > MAX_NOTES + 1:
        notes.append(f"... and {len(survivors) - MAX_NOTES - 1} more illegal ops")
    raise ConversionError(
        f"failed to legalize operation '{first[0]}' in {where} ({had})",
        first[1], notes=notes, survivors=survivors)


def _transplant(dst_op, src_op) -> None:
    """Make ``dst_op`` (a single-block, single-region op) hold ``src_op``'s body and attributes."""
    dst_block = dst_op.regions[0].blocks[0]
    src_block = src_op.regions[0].blocks[0]
    for op in list(dst_block.operations):
        op.erase()
    for op in list(src_block.operations):
        dst_block.append(op)
    for name in _attr_names(dst_op):
        del dst_op.attributes[name]
    for name in _attr_names(src_op):
        dst_op.attributes[name] = src_op.attributes[name]


def _attr_names(op) -> list[str]:
    return [a if isinstance(a, str) else a.name for a in op.attributes]


def apply_conversion(module, target: ConversionTarget | None, patterns: Iterable[Pattern],
                     type_converter=None, *, native_passes: Iterable[NativePass] = (),
                     stage: str = "", compile_target=None, options=None,
                     reconcile: bool = True, max_iterations: int = 10) -> ConversionStats:
    """Convert ``module`` (a ``builtin.module`` or any single-block op) in place.

    Python ``patterns`` run first through the greedy driver (folding off), then
    ``native_passes``, then ``reconcile-unrealized-casts``; finally ``target``
    is checked. On any failure a :class:`TilecoreError` is raised and
    ``module`` is unchanged. Returns :class:`ConversionStats`.
    """
    t0 = time.perf_counter()
    mod_op = module.operation if isinstance(module, (ir.Module, ir.OpView)) else module
    patterns = list(patterns)
    native_passes = list(native_passes)
    prepass = [p for p in patterns if p.prepass]
    by_root = order_patterns(p for p in patterns if not p.prepass)
    watch = {n for np_ in native_passes for n in np_.needs}
    stats = ConversionStats(stage=stage)
    ctx = mod_op.context
    work = mod_op.clone()
    work_op = work.operation if isinstance(work, ir.OpView) else work
    try:
        counting = bool(getattr(options, "timing", False))  # op counts only feed --timing
        if counting:
            stats.ops_before = count_ops(work_op)
        state = _DriverState(compile_target, options)
        if prepass:
            _run_prepass(work_op, prepass, state)
        if by_root or watch:
            pset = rewrite.RewritePatternSet(ctx)
            for root in [*by_root, *sorted(watch - set(by_root))]:
                pats = by_root.get(root, [])
                pset.add(root, _make_callback(pats, type_converter, state, root in watch),
                         benefit=max((p.benefit for p in pats), default=1))
            frozen = pset.freeze()
            # The driver simplifies the regions (dead code, unreachable and identical blocks) after
            # every iteration; on a 100k-op kernel that costs as much as the rest of the driver. The
            # first iteration, where every rewrite happens, runs without it; the second (which
            # revisits every op, as the driver's second iteration does) and any later ones with it:
            # the same fixpoint, one region simplification fewer.
            first = max_iterations > 1
            for iterations in ((1, max_iterations - 1) if first else (max_iterations,)):
                cfg = rewrite.GreedyRewriteConfig()
                cfg.enable_folding = False
                cfg.enable_constant_cse = False
                cfg.max_iterations = iterations
                cfg.use_top_down_traversal = True  # diagnostics come in program order
                if first:
                    cfg.region_simplification_level = rewrite.GreedySimplifyRegionLevel.DISABLED
                    first = False
                try:
                    rewrite.apply_patterns_and_fold_greedily(work_op, frozen, cfg)
                except Exception as e:  # noqa: BLE001
                    if state.error is None:
                        # Non-convergence is not fatal by itself: legality decides.
                        if "converge" not in str(e):
                            raise TilecoreError(f"rewrite driver failed in {stage or 'conversion'}: {e}") from None
                if state.error is not None:
                    raise state.error
        stats.fired = state.fired
        stats.remarks = state.remarks
        # The native pipelines run without verify-each (a verification of a 100k-op module costs
        # about as much as the pass itself); the result is verified once, below.
        ran_native = False
        for np_ in native_passes:
            if np_.needs and not state.seen.intersection(np_.needs):
                continue  # nothing for it to do
            ran_native = True
            try:
                run_native_pipeline(work_op, np_.pipeline, ctx, verify=False)
            except TilecoreError as e:
                m = _NATIVE_ILLEGAL.search(e.message)
                if m:  # an op the upstream pass could not lower either: say who was consulted
                    pats = sorted({p.plugin or "?" for p in by_root.get(m.group(1), [])})
                    had = f"patterns from: {', '.join(pats)}; " if pats else "no Python pattern; "
                    e.message = (f"failed to legalize operation '{m.group(1)}' in stage '{stage or 'conversion'}' "
                                 f"({had}native pass '{np_.pipeline}' from {np_.plugin or 'native'})")
                elif stage:
                    e.message = f"in stage '{stage}' ({np_.plugin or 'native'}): {e.message}"
                raise
            stats.native_passes.append(np_.pipeline)
        invalid = f"{f'stage {stage!r}' if stage else 'conversion'} produced invalid IR: "
        if reconcile:
            try:
                _reconcile_casts(work_op, ctx)
            except TilecoreError as e:  # casts it cannot fold: say whose IR it was
                e.message = invalid + e.message.replace("pass pipeline 'reconcile-unrealized-casts' failed: ", "")
                raise
        if reconcile or ran_native:
            try:
                work_op.verify()
            except Exception as e:  # noqa: BLE001 - MLIRError with the verifier diagnostics
                raise mlir_error_to_tilecore(e, invalid) from None
            stats.verified = True  # the stage skips its own verify
        if target is not None:
            check_legality(work_op, target, stage, by_root)
        if counting:
            stats.ops_after = count_ops(work_op)
        _transplant(mod_op, work_op)
    finally:
        work_op.erase()
    stats.seconds = time.perf_counter() - t0
    return stats


def _reconcile_casts(op, ctx) -> None:
    # Cheaper than looking for casts first: a Python walk costs ~1 us per op, the pass far less.
    # (Not verified here: apply_conversion verifies once after all native pipelines.)
    run_native_pipeline(op, "reconcile-unrealized-casts", ctx, verify=False)
