"""Specialisations of a cuTile kernel: what each parameter is for one compiled variant.

A kernel is compiled once per tuple of parameter specs (one per Python parameter):

* :class:`ArraySpec`: element type, rank, index width and the layout facts cuTile turns into
  ``assume`` hints (unit stride, 16-byte divisibility of strides / shapes / base address, no
  internal aliasing, non-negative strides);
* :class:`ScalarSpec`: a runtime scalar of one element type;
* :class:`ConstSpec`: the value of a ``ct.Constant`` parameter.

:func:`bind` derives them from launch arguments with cuTile's own rules (``ct.launch``'s
dispatcher): an array's facts are read from its layout, a Python ``int`` is an ``int32`` scalar (or
the ``ct.ScalarAnnotation`` width), a ``float`` a ``float32``, a ``bool`` a ``bool``; a numpy scalar
keeps its own dtype (cuTile would take an ``np.float64`` for a ``float``, i.e. ``float32``); the
index width of an array is ``int32`` unless its parameter is annotated with
``ct.ArrayAnnotation(index_dtype=ct.int64)``. :func:`from_spelling` reads the ``"f32[2]i64"``
spelling of the tests, :func:`from_constraint` a ``cuda.tile.compilation`` constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TilecoreError
from .arrays import ArrayArg, describe, is_array
from .dtypes import BY_SPELLING, from_cutile, from_numpy
from .dtypes import from_spelling as element_type

INT_RANGE = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "i8": (-128, 127),
             "i16": (-(2**15), 2**15 - 1), "u8": (0, 255), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1),
             "u64": (0, 2**64 - 1)}
TMA_MAX_NDIM = 5  # cuTile infers per-axis facts only up to this rank
DIVISOR = 16  # bytes (strides, base address) / elements (shapes)


@dataclass(frozen=True)
class ArraySpec:
    """An array parameter: the ``ArrayConstraint`` of one specialisation, as hashable plain data."""

    dtype: str
    ndim: int
    index: str = "i32"
    stride_constant: tuple = ()
    stride_divisible_by: tuple = ()
    shape_divisible_by: tuple = ()
    base_divisible_by: int = 1
    may_alias: bool = True
    nonnegative_strides: bool = True

    kind = "array"

    def __str__(self) -> str:
        return f"{BY_SPELLING[self.dtype].cutile}[{self.ndim}]" + (" (int64 index)" if self.index == "i64" else "")

    def constraint(self):
        """The ``cuda.tile.compilation.ArrayConstraint`` of this spec."""
        import cuda.tile as ct
        from cuda.tile.compilation import ArrayConstraint

        return ArrayConstraint(BY_SPELLING[self.dtype].ct(), self.ndim,
                               index_dtype=ct.int64 if self.index == "i64" else ct.int32,
                               stride_lower_bound_incl=0 if self.nonnegative_strides else None, alias_groups=(),
                               may_alias_internally=self.may_alias, stride_constant=list(self.stride_constant),
                               stride_divisible_by=list(self.stride_divisible_by),
                               shape_divisible_by=list(self.shape_divisible_by),
                               base_addr_divisible_by=self.base_divisible_by)

    def unmet(self, a: ArrayArg) -> list[str]:
        """What array ``a`` breaks of this spec (its type, rank, index width or an assumption)."""
        if a.dtype.spelling != self.dtype or len(a.shape) != self.ndim:
            return [f"is {a.dtype.cutile}[{len(a.shape)}], the kernel was compiled for {self}"]
        out = []
        lo, hi = INT_RANGE[self.index]
        for what, vals in (("shape", a.shape), ("stride", a.strides)):
            bad = [v for v in vals if not lo <= v <= hi]
            if bad:
                out.append(f"has {what} {bad[0]}, which does not fit the kernel's {self.index} index type")
        if self.nonnegative_strides and any(s < 0 for s in a.strides):
            out.append(f"has negative strides {a.strides} (cuTile assumes strides >= 0)")
        bits = a.dtype.bits
        for i, s in enumerate(a.strides):
            c = self.stride_constant[i]
            if c is not None and s != c:
                axis = "its last axis" if i == self.ndim - 1 else f"axis {i}"
                what = "unit stride" if c == 1 else f"stride {c}"
                out.append(f"has stride {s} on {axis}, but the kernel was compiled assuming {what} there")
            d = self.stride_divisible_by[i]
            if d > 1 and s % d:
                out.append(f"has stride {s} on axis {i} ({s * bits // 8} bytes), the kernel assumes a multiple "
                           f"of {d} elements")
        for i, n in enumerate(a.shape):
            d = self.shape_divisible_by[i]
            if d > 1 and n % d:
                out.append(f"has extent {n} on axis {i}, the kernel assumes a multiple of {d}")
        if self.base_divisible_by > 1 and a.ptr % self.base_divisible_by:
            out.append(f"starts at address {a.ptr:#x}, the kernel assumes a multiple of {self.base_divisible_by} "
                       "bytes")
        if not self.may_alias and not elements_disjoint(a.shape, a.strides):
            out.append(f"has overlapping elements (strides {a.strides}), the kernel assumes none")
        return out


@dataclass(frozen=True)
class ScalarSpec:
    """A runtime scalar parameter of element type ``dtype`` (a spelling)."""

    dtype: str
    kind = "scalar"

    def __str__(self) -> str:
        return BY_SPELLING[self.dtype].cutile

    def constraint(self):
        """The ``cuda.tile.compilation.ScalarConstraint`` of this spec."""
        from cuda.tile.compilation import ScalarConstraint

        return ScalarConstraint(BY_SPELLING[self.dtype].ct())


@dataclass(frozen=True)
class ConstSpec:
    """The value of a ``ct.Constant`` parameter (``type_name`` keeps 1, 1.0 and True apart)."""

    value: object
    type_name: str = ""
    kind = "constant"

    def __str__(self) -> str:
        return repr(self.value)

    def constraint(self):
        """The value itself (cuTile's shorthand for a ``ConstantConstraint``)."""
        return self.value


@dataclass(frozen=True)
class ListSpec:
    """A list-of-arrays parameter (``xs[i]`` in the kernel): the spec every item meets (``element``) and
    whether two items may share memory. cuTile passes it as a table of int64 words, one row per array (base
    pointer, extents, strides), and the number of rows."""

    element: ArraySpec
    elements_may_alias: bool = False
    kind = "list"

    def __str__(self) -> str:
        return f"list[{self.element}]"

    def constraint(self):
        """The ``cuda.tile.compilation.ListConstraint`` of this spec."""
        from cuda.tile.compilation import ListConstraint

        return ListConstraint(self.element.constraint(), alias_groups=(),
                              elements_may_alias=self.elements_may_alias)

    def unmet(self, items) -> list[str]:
        """What the list of :class:`ArrayArg` ``items`` breaks of this spec (per item)."""
        out = [] if items else ["is an empty list"]
        for k, a in enumerate(items):
            out += [f"item {k} {m}" for m in self.element.unmet(a)]
        if not self.elements_may_alias and _items_overlap(items):
            out.append("has items sharing memory, the kernel assumes none")
        return out


@dataclass(frozen=True)
class TupleSpec:
    """A tuple parameter of arrays, scalars and tuples (one spec per item); its leaves are kernel parameters
    one after the other."""

    items: tuple
    kind = "tuple"

    def __str__(self) -> str:
        return "(" + ", ".join(str(s) for s in self.items) + ("," if len(self.items) == 1 else "") + ")"

    def constraint(self):
        """The ``cuda.tile.compilation.TupleConstraint`` of this spec."""
        from cuda.tile.compilation import TupleConstraint

        return TupleConstraint([s.constraint() for s in self.items])


def tuple_spec(value, p, where: str):
    """(spec, bound value) of a tuple argument: arrays, scalars and nested tuples, bound as at top level."""
    specs, values = [], []
    for k, a in enumerate(value):
        what = f"{where}[{k}]"
        if isinstance(a, tuple):
            sp, v = tuple_spec(a, p, what)
        elif is_array(a):
            v = describe(a, f"argument {what}")
            sp = array_spec(v, p.index)
        else:
            sp, v = scalar_spec(a, what, p.int_dtype), a
        specs.append(sp)
        values.append(v)
    return TupleSpec(tuple(specs)), tuple(values)


@dataclass(frozen=True)
class ListArg:
    """A bound list-of-arrays argument: its items (:class:`ArrayArg`)."""

    items: tuple

    @property
    def on_device(self) -> bool:
        return any(a.on_device for a in self.items)


def _items_overlap(items) -> bool:
    """True when the memory two items span overlaps (by address ranges; strides >= 0)."""
    spans = sorted((a.ptr, a.ptr + sum((n - 1) * s for n, s in zip(a.shape, a.strides)) * a.dtype.bits // 8
                    + max(a.dtype.bits // 8, 1)) for a in items if all(n > 0 for n in a.shape))
    return any(lo < prev_hi for (_, prev_hi), (lo, _) in zip(spans, spans[1:]))


def list_spec(items, name: str) -> ListSpec:
    """The spec of a list of :class:`ArrayArg` ``items``: the facts every item's own spec has (cuTile
    specialises a list on what holds for all its arrays)."""
    if not items:
        raise TilecoreError(f"argument '{name}' is an empty list of arrays")
    specs = [array_spec(a, idx) for a, idx in items]
    first = specs[0]
    for k, sp in enumerate(specs[1:], 1):
        if (sp.dtype, sp.ndim) != (first.dtype, first.ndim):
            raise TilecoreError(f"argument '{name}': item {k} is {sp}, item 0 is {first} (the items of a list "
                                "must have one element type and rank)")

    def common(field):
        vals = [getattr(sp, field) for sp in specs]
        return tuple(v[0] if len(set(v)) == 1 else None for v in zip(*vals))

    element = ArraySpec(first.dtype, first.ndim, first.index, common("stride_constant"),
                        tuple(min(v) for v in zip(*[sp.stride_divisible_by for sp in specs])),
                        tuple(min(v) for v in zip(*[sp.shape_divisible_by for sp in specs])),
                        min(sp.base_divisible_by for sp in specs), any(sp.may_alias for sp in specs), True)
    return ListSpec(element, _items_overlap([a for a, _ in items]))


def elements_disjoint(shape, strides) -> bool:
    """cuTile's test that no two elements of a layout share memory (strides sorted, each >= the span
    below it)."""
    pairs = sorted(zip(strides, shape))
    if not pairs:
        return True
    ok = pairs[0][0] > 0
    for (s0, n0), (s1, _) in zip(pairs, pairs[1:]):
        ok = ok and s1 > 0 and s1 >= s0 * n0
    return ok


def array_spec(a: ArrayArg, index: str = "i32") -> ArraySpec:
    """The spec cuTile derives from array ``a`` (its layout facts) with index width ``index``."""
    nd, bits = len(a.shape), a.dtype.bits
    stride_div = DIVISOR * 8 // bits if (DIVISOR * 8) % bits == 0 else 1
    sc, sd, shd = [None] * nd, [1] * nd, [1] * nd
    if nd <= TMA_MAX_NDIM:
        for i, (n, s) in enumerate(zip(a.shape, a.strides)):
            if s == 1:
                sc[i] = 1
            elif (s * bits) % 8 == 0 and (s * bits // 8) % DIVISOR == 0:
                sd[i] = stride_div
            if n % DIVISOR == 0 and (n * bits) % 8 == 0:
                shd[i] = DIVISOR
    return ArraySpec(a.dtype.spelling, nd, index, tuple(sc), tuple(sd), tuple(shd),
                     DIVISOR if a.ptr % DIVISOR == 0 else 1, not elements_disjoint(a.shape, a.strides), True)


def from_spelling(text: str):
    """``"f32[2]"`` (array, int32 index), ``"f32[2]i64"`` (int64 index) or ``"f32"`` (scalar); a ``/16``
    suffix (``"f16[2]/16"``) adds that every stride but the last is a multiple of 16 bytes (what cuTile
    infers from an array with aligned rows).

    Arrays follow the conventions of the visible corpus: unit last stride, 16-byte aligned base,
    non-negative strides, no aliasing, no divisibility facts (unless ``/16``)."""
    if "[" not in text:
        return ScalarSpec(element_type(text).spelling)
    text, _, aligned = text.partition("/")
    if aligned not in ("", str(DIVISOR)):
        raise TilecoreError(f"bad alignment in '{text}/{aligned}' (only /{DIVISOR})")
    dt, rest = text.split("[", 1)
    rank, _, index = rest.partition("]")
    try:
        nd = int(rank)
    except ValueError:
        raise TilecoreError(f"bad array spelling '{text}' (expected e.g. 'f32[2]' or 'f32[2]i64')") from None
    if index not in ("", "i32", "i64"):
        raise TilecoreError(f"bad index type in '{text}' (i32 or i64)")
    el = element_type(dt)
    rows = max(1, DIVISOR * 8 // el.bits) if aligned else 1
    return ArraySpec(el.spelling, nd, index or "i32", tuple([None] * (nd - 1) + [1]) if nd else (),
                     tuple([rows] * (nd - 1) + [1]) if nd else (), (1,) * nd, DIVISOR, False, True)


def from_constraint(c):
    """A spec from a ``cuda.tile.compilation`` constraint (array, list of arrays, tuple, scalar or constant)."""
    from cuda.tile.compilation import (
        ArrayConstraint,
        ConstantConstraint,
        ListConstraint,
        ScalarConstraint,
        TupleConstraint,
    )

    if isinstance(c, TupleConstraint):
        return TupleSpec(tuple(from_constraint(x) for x in c.items))
    if isinstance(c, ListConstraint):
        if c.alias_groups:
            raise TilecoreError("alias groups are not supported by tilecore.cutile (arrays never alias)")
        return ListSpec(from_constraint(c.element), c.elements_may_alias)
    if isinstance(c, ScalarConstraint):
        return ScalarSpec(from_cutile(c.dtype).spelling)
    if isinstance(c, ConstantConstraint):
        return const_spec(c.value, "constant")
    if not isinstance(c, ArrayConstraint):
        raise TilecoreError(f"{type(c).__name__} parameters are not supported by tilecore.cutile "
                            "(arrays, scalars and constants are)")
    if any(x is not None for x in c.shape_constant):
        raise TilecoreError("static array shapes (shape_constant) are not supported by tilecore.cutile")
    if c.alias_groups:
        raise TilecoreError("alias groups are not supported by tilecore.cutile (arrays never alias)")
    nonneg = all(lb == 0 or sc is not None for lb, sc in zip(c.stride_lower_bound_incl, c.stride_constant))
    if any(lb not in (0, None) for lb in c.stride_lower_bound_incl):
        raise TilecoreError("stride lower bounds other than 0 are not supported by tilecore.cutile")
    return ArraySpec(from_cutile(c.dtype).spelling, c.ndim, "i64" if c.index_dtype.name == "int64" else "i32",
                     tuple(c.stride_constant), tuple(c.stride_divisible_by), tuple(c.shape_divisible_by),
                     c.base_addr_divisible_by, c.may_alias_internally, nonneg)


def const_spec(value, name: str) -> ConstSpec:
    """The spec of constant ``value``: a bool, int, float or a tuple of them (nested tuples too; ``ct.Constant``
    means a constant of any type, e.g. a tile shape); numpy scalars become Python values."""
    import numpy as np

    def plain(v):
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, tuple):
            return tuple(plain(x) for x in v)
        if not isinstance(v, (bool, int, float)):
            raise TilecoreError(f"constant parameter '{name}' must be a bool, int, float or a tuple of them, got "
                                f"{type(v).__name__}")
        return v

    def type_key(v):  # keeps 1, 1.0 and True apart, inside tuples too
        return f"({','.join(type_key(x) for x in v)})" if isinstance(v, tuple) else type(v).__name__

    value = plain(value)
    return ConstSpec(value, type_key(value))


def scalar_spec(value, name: str, int_dtype: str = "i32") -> ScalarSpec:
    """The spec of runtime scalar ``value`` (see the module docstring for the rules)."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return ScalarSpec("bool")
    if isinstance(value, np.generic):
        return ScalarSpec(from_numpy(value.dtype).spelling)
    if isinstance(value, int):
        lo, hi = INT_RANGE[int_dtype]
        if not lo <= value <= hi:
            raise TilecoreError(f"scalar parameter '{name}' = {value} does not fit {BY_SPELLING[int_dtype].cutile} "
                                "(annotate it with ct.ScalarAnnotation(dtype=ct.int64) or pass a numpy scalar)")
        return ScalarSpec(int_dtype)
    if isinstance(value, float):
        return ScalarSpec("f32")
    raise TilecoreError(f"parameter '{name}': a {type(value).__name__} is not a kernel argument "
                        "(arrays, Python / numpy scalars and ct.Constant values are)")


@dataclass(frozen=True)
class Parameter:
    """One Python parameter of a kernel: ``name``, ``constant`` (``ct.Constant``), ``index`` (array
    index width from ``ct.ArrayAnnotation``), ``int_dtype`` (from ``ct.ScalarAnnotation``)."""

    name: str
    constant: bool
    index: str = "i32"
    int_dtype: str = "i32"
    is_list: bool = False  # ct.ListAnnotation


def check_kernel(kernel) -> None:
    """A :class:`TilecoreError` unless ``kernel`` is a ``@ct.kernel``."""
    import cuda.tile as ct

    if not isinstance(kernel, ct.kernel):
        raise TilecoreError(f"expected a @ct.kernel, got {type(kernel).__name__} "
                            f"{getattr(kernel, '__name__', '')!s}".rstrip())


def kernel_name(kernel) -> str:
    """The Python name of a ``@ct.kernel``."""
    return kernel._annotated_function.pyfunc.__name__


def parameters(kernel) -> list[Parameter]:
    """The parameters of a ``@ct.kernel`` with what their annotations say."""
    check_kernel(kernel)
    from cuda.tile._annotated_function import LeafAnnotationNode

    fn = kernel._annotated_function
    out = []
    for name, node in zip(fn.pysig.parameters, fn.parameter_annotations):
        if not isinstance(node, LeafAnnotationNode):  # a tuple annotation: all constant, or a runtime tuple
            leaves = list(_annotation_leaves(node))
            constant = {bool(leaf.constant) for leaf in leaves}
            if len(constant) > 1 or any(leaf.list is not None or (leaf.array is not None and leaf.array.index_dtype
                                                                   is not None) for leaf in leaves):
                raise TilecoreError(f"parameter '{name}' of kernel '{fn.pyfunc.__name__}' is a tuple annotated with "
                                    "constant and runtime items, lists or index types: not supported by "
                                    "tilecore.cutile")
            out.append(Parameter(name, constant == {True}))
            continue
        index = int_dtype = "i32"
        if node.list is not None:  # ct.ListAnnotation(element=ct.ArrayAnnotation(...) or an Annotated type)
            el = node.list.element
            meta = [m for m in getattr(el, "__metadata__", ()) if hasattr(m, "index_dtype")]
            el = meta[0] if meta else el
            if getattr(el, "index_dtype", None) is not None:
                index = from_cutile(el.index_dtype).spelling
        if node.array is not None:
            if node.array.static_shape_dims or node.array.static_stride_dims:
                raise TilecoreError(f"parameter '{name}': static_shape_dims / static_stride_dims are not supported "
                                    "by tilecore.cutile")
            index = from_cutile(node.array.index_dtype).spelling
        if node.scalar is not None:
            int_dtype = from_cutile(node.scalar.dtype).spelling
        out.append(Parameter(name, bool(node.constant), index, int_dtype, node.list is not None))
    return out


def _annotation_leaves(node):
    """The leaf annotation nodes of a tuple annotation node (cuTile's homogeneous / heterogeneous tuples)."""
    if hasattr(node, "items"):
        for item in node.items:
            yield from _annotation_leaves(item)
    elif hasattr(node, "each"):
        yield from _annotation_leaves(node.each)
    else:
        yield node


def check_count(kernel, params, n: int) -> None:
    if n != len(params):
        raise TilecoreError(f"kernel '{kernel_name(kernel)}' takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}), got {n}")


def bind(kernel, args) -> tuple[tuple, list]:
    """Specs and values of launch arguments ``args``: values are :class:`ArrayArg` for arrays, the
    arguments themselves for scalars and constants."""
    params = parameters(kernel)
    args = tuple(args)
    check_count(kernel, params, len(args))
    specs, values = [], []
    for p, a in zip(params, args):
        if p.constant:
            specs.append(const_spec(a, p.name))
            values.append(specs[-1].value)
        elif isinstance(a, tuple) and not p.is_list:
            spec, v = tuple_spec(a, p, p.name)
            specs.append(spec)
            values.append(v)
        elif p.is_list or is_array_list(a):
            if not is_array_list(a):
                raise TilecoreError(f"argument '{p.name}' must be a list of arrays, got {type(a).__name__}")
            items = bind_list(a, p)
            specs.append(list_spec([(x, p.index) for x in items], p.name))
            values.append(ListArg(tuple(items)))
        elif is_array(a):
            arr = describe(a, f"argument '{p.name}'")
            spec = array_spec(arr, p.index)
            bad = [m for m in spec.unmet(arr) if "index type" in m or "negative" in m]
            if bad:
                raise TilecoreError(f"argument '{p.name}' {bad[0]}" + (
                    " (annotate the parameter with ct.ArrayAnnotation(index_dtype=ct.int64))"
                    if "index type" in bad[0] else ""))
            specs.append(spec)
            values.append(arr)
        else:
            specs.append(scalar_spec(a, p.name, p.int_dtype))
            values.append(a)
    return tuple(specs), values


def is_array_list(a) -> bool:
    """True for a Python list / tuple of arrays (a list-of-arrays argument)."""
    return isinstance(a, (list, tuple)) and len(a) > 0 and all(is_array(x) for x in a)


def bind_list(a, p) -> list:
    """The :class:`ArrayArg` items of list argument ``a`` of parameter ``p`` (index widths checked)."""
    items = [describe(x, f"item {k} of argument '{p.name}'") for k, x in enumerate(a)]
    lo, hi = INT_RANGE[p.index]
    for k, x in enumerate(items):
        if any(not lo <= v <= hi for v in (*x.shape, *x.strides)):
            raise TilecoreError(f"item {k} of argument '{p.name}' does not fit the {p.index} index type (annotate "
                                "the parameter with ct.ListAnnotation(element=ct.ArrayAnnotation(index_dtype="
                                "ct.int64)))")
    return items


def specs_of(kernel, items) -> tuple:
    """Specs from ``compile``'s second argument: example arguments, spellings (``"f32[2]"``),
    ``cuda.tile.compilation`` constraints, or a ``KernelSignature`` (its parameters), mixed freely."""
    if hasattr(items, "parameters") and hasattr(items, "calling_convention"):
        items = items.parameters
    params = parameters(kernel)
    items = tuple(items)
    check_count(kernel, params, len(items))
    out = []
    for p, item in zip(params, items):
        if p.constant:
            value = getattr(item, "value", item) if type(item).__name__ == "ConstantConstraint" else item
            out.append(const_spec(value, p.name))
        elif isinstance(item, str):
            out.append(from_spelling(item))
        elif type(item).__module__.startswith("cuda.tile"):
            out.append(from_constraint(item))
        elif is_array(item):
            out.append(array_spec(describe(item, f"argument '{p.name}'"), p.index))
        elif isinstance(item, tuple) and not p.is_list:
            out.append(tuple_spec(item, p, p.name)[0])
        elif is_array_list(item):
            out.append(list_spec([(x, p.index) for x in bind_list(item, p)], p.name))
        else:
            out.append(scalar_spec(item, p.name, p.int_dtype))
    return tuple(out)


def signature(specs, symbol: str):
    """The ``KernelSignature`` of ``specs``: calling convention ``cutile_python_v1``, or ``cutile_python_v2``
    where a parameter is a tuple (a tuple constant, or a tuple of arrays / scalars: v1 refuses them; v2 passes
    arrays and scalars as v1 does, a tuple's leaves one after the other)."""
    from cuda.tile.compilation import CallingConvention, KernelSignature

    tuples = any(s.kind == "tuple" or (s.kind == "constant" and isinstance(s.value, tuple)) for s in specs)
    cc = CallingConvention.cutile_python_v2() if tuples else CallingConvention.cutile_python_v1()
    return KernelSignature([s.constraint() for s in specs], cc, symbol=symbol)
