"""The launch contract of a compiled cuTile kernel, and marshalling of arguments by it.

tilecore's kernel ABI (stage 3, ``convert-tile-func-to-llvm``): one kernel parameter per entry
argument of the cuTile function, in order; with calling convention ``cutile_python_v1`` an array
parameter of rank n is its base pointer, its n extents and its n strides (in elements, of the
array's index type), a scalar is itself, a ``ct.Constant`` is no parameter. Threads per CTA come
from the kernel's ``nvvm.reqntid``, the cluster shape from ``nvvm.cluster_dim``, the dynamic shared
memory from ``tilecore.dynamic_shared_bytes`` (a kernel whose scratch buffer exceeds 48 KiB). The grid is the
tile-block grid: one CTA per tile block, or with a cluster shape one *cluster* per tile block (the kernel's
``tilecore.tile_block = "cluster"``, tileiras' reading of cuTile's ``num_ctas``: any grid, CTAs launched = grid x
cluster shape), except in a kernel of CTA pairs (``"cta"``: a tile block per CTA, the grid a whole number of
clusters).
A kernel whose K loops read tiles by TMA takes one more parameter per tensor map after those, which the
launcher encodes from the others by the kernel's recipes (:mod:`tilecore.tensormaps`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TilecoreError
from .dtypes import BY_SPELLING
from .specialize import INT_RANGE

MAX_GRID = (2**31 - 1, 65535, 65535)  # CUDA's grid limits (x, y, z)
MAX_THREADS_PER_CTA = 1024


@dataclass(frozen=True)
class ParamEntry:
    """One kernel parameter: ``kind`` (``pointer`` / ``shape`` / ``stride`` / ``scalar``), the Python
    argument it comes from (``arg``: position, ``name``), ``axis`` (shape / stride), ``type`` (its
    LLVM type: ``!llvm.ptr<1>``, ``i32`` ...) and ``dtype`` (element / scalar type spelling)."""

    kind: str
    arg: int
    name: str
    axis: int | None
    type: str
    dtype: str = ""
    path: tuple = ()  # the leaf's position inside a tuple argument (its name says it too: ``t[0][1]``)

    def __str__(self) -> str:
        what = {"pointer": f"{self.name} (pointer to {self.dtype})", "scalar": f"{self.name} ({self.dtype})",
                "list": f"{self.name} (table of {self.dtype} arrays)", "list_len": f"len({self.name})",
                "shape": f"{self.name}.shape[{self.axis}]", "stride": f"{self.name}.strides[{self.axis}]"}
        return f"{what[self.kind]}: {self.type}"


@dataclass(frozen=True)
class LaunchContract:
    """How to launch a compiled kernel: ``kernel`` (its symbol), ``threads`` per CTA (x, y, z),
    ``cluster`` shape (CTAs, (1, 1, 1): none), ``shared_bytes`` of dynamic shared memory and the
    ``params`` in order."""

    kernel: str
    threads: tuple[int, int, int]
    cluster: tuple[int, int, int]
    shared_bytes: int
    params: tuple[ParamEntry, ...]
    tensor_maps: tuple = ()  # TensorMapRecipe per trailing tensor-map parameter (tilecore.tensormaps)
    block_ctas: tuple[int, int, int] = (1, 1, 1)  # CTAs per tile block: the cluster shape, or (1, 1, 1)

    def cta_grid(self, grid) -> tuple[int, int, int]:
        """The CTAs to launch for ``grid`` tile blocks (x, y, z)."""
        return tuple(g * c for g, c in zip(grid, self.block_ctas))

    @property
    def threads_per_cta(self) -> int:
        """The number of threads of one CTA."""
        return self.threads[0] * self.threads[1] * self.threads[2]

    def describe(self) -> str:
        """Multi-line text: the kernel, its block, cluster, shared memory and every parameter."""
        lines = [f"kernel {self.kernel}: block {self.threads} ({self.threads_per_cta} threads per CTA), cluster "
                 f"{self.cluster}, {self.shared_bytes} bytes of dynamic shared memory, {len(self.params)} parameters"
                 + (f" and {len(self.tensor_maps)} tensor maps" if self.tensor_maps else "")]
        lines += [f"  {i}: {p}" for i, p in enumerate(self.params)]
        lines += [f"  {r.describe()}" for r in self.tensor_maps]
        return "\n".join(lines)


def _dense(attr) -> tuple[int, ...]:
    from ..mlir import ir

    return tuple(int(v) for v in ir.DenseI32ArrayAttr(attr))


def build_contract(module, symbol: str, specs, names) -> LaunchContract:
    """The contract of kernel ``symbol`` in the lowered ``module`` compiled for ``specs`` (parameter
    ``names``); the parameter list is checked against the kernel's LLVM signature."""
    from ..emulate.hostmodule import find_kernel_module

    holder = find_kernel_module(module, symbol)
    func = next(op for op in holder.regions[0].blocks[0].operations
                if op.operation.name == "llvm.func" and op.attributes["sym_name"].value == symbol)
    from ..launch_attrs import block_ctas, cluster_shape, dynamic_shared_bytes
    from ..tensormaps import recipes_of

    maps = tuple(recipes_of(func.operation))
    args = list(func.regions[0].blocks[0].arguments)
    types = [str(a.type) for a in args[:len(args) - len(maps)]]  # the cuTile parameters
    attrs = func.attributes
    threads = _dense(attrs["nvvm.reqntid"]) if "nvvm.reqntid" in attrs else (1, 1, 1)
    cluster = cluster_shape(func.operation)
    entries = []

    def add(i, spec, name, path=()):
        if spec.kind == "array":
            entries.append(("pointer", i, name, None, spec.dtype, path))
            entries.extend(("shape", i, name, k, spec.index, path) for k in range(spec.ndim))
            entries.extend(("stride", i, name, k, spec.index, path) for k in range(spec.ndim))
        elif spec.kind == "scalar":
            entries.append(("scalar", i, name, None, spec.dtype, path))
        elif spec.kind == "list":  # a table of int64 words (one row per array) and its number of rows
            entries.extend([("list", i, name, None, spec.element.dtype, path), ("list_len", i, name, None, "", path)])
        elif spec.kind == "tuple":  # its leaves in order (calling convention cutile_python_v2)
            for k, item in enumerate(spec.items):
                add(i, item, f"{name}[{k}]", (*path, k))

    for i, (spec, name) in enumerate(zip(specs, names)):
        add(i, spec, name)
    if len(entries) != len(types):
        raise TilecoreError(f"kernel '{symbol}' has {len(types)} parameters ({', '.join(types)}) but its cuTile "
                            f"signature gives {len(entries)}: the calling convention is not the one expected")
    params = []
    for (kind, i, name, axis, dtype, path), t in zip(entries, types):
        if (kind in ("pointer", "list")) != t.startswith("!llvm.ptr"):
            raise TilecoreError(f"kernel '{symbol}': parameter {len(params)} ({name}, {kind}) has LLVM type {t}")
        params.append(ParamEntry(kind, i, name, axis, t, dtype, path))
    return LaunchContract(symbol, tuple(threads) + (1,) * (3 - len(threads)),
                          cluster, dynamic_shared_bytes(func.operation), tuple(params), maps,
                          block_ctas(func.operation))


def check_grid(grid, contract: LaunchContract) -> tuple[int, int, int]:
    """``grid`` (an int or 1 to 3 sizes) as (x, y, z); too large a grid, a non-positive size or one that
    is not a whole number of clusters is a :class:`TilecoreError`."""
    import numpy as np

    vals = [grid] if isinstance(grid, (int, np.integer)) else list(grid) if isinstance(grid, (tuple, list)) else []
    if not 1 <= len(vals) <= 3 or any(not isinstance(v, (int, np.integer)) for v in vals):
        raise TilecoreError(f"grid must be an int or 1 to 3 ints, got {grid!r}")
    g = tuple(int(v) for v in vals) + (1,) * (3 - len(vals))
    if any(v < 1 for v in g):
        raise TilecoreError(f"grid {g} has a size below 1")
    for axis, (v, most) in enumerate(zip(g, MAX_GRID)):
        if v > most:
            raise TilecoreError(f"grid {g} is too large: axis {'xyz'[axis]} has {v} tile blocks, at most {most} "
                                "can be launched")
    for axis, (v, c) in enumerate(zip(g, contract.cluster)):
        if v % c and contract.block_ctas == (1, 1, 1):
            raise TilecoreError(f"grid {g} is not a whole number of clusters {contract.cluster} "
                                f"(axis {'xyz'[axis]})")
    return g


def scalar_value(value, dtype: str, name: str):
    """``value`` as the numpy scalar of spelling ``dtype`` (a Python value of the right kind is converted,
    a numpy scalar must have that exact type)."""
    import numpy as np

    et = BY_SPELLING[dtype]
    if et.numpy is None or et.spelling in ("bf16", "f8e4m3", "f8e5m2", "f8e8m0"):
        raise TilecoreError(f"scalar parameter '{name}' of type {et.cutile} cannot be passed yet")
    np_type = np.dtype(et.numpy).type
    if isinstance(value, np.generic):
        if value.dtype != np.dtype(et.numpy):
            raise TilecoreError(f"scalar argument '{name}' is a {value.dtype.name}, the kernel was compiled for "
                                f"{et.cutile}")
        return value
    kind = "b" if dtype == "bool" else "f" if dtype.startswith("f") else "i"
    got = "b" if isinstance(value, bool) else "i" if isinstance(value, int) else "f" if isinstance(value, float) \
        else "?"
    if got != kind:
        raise TilecoreError(f"scalar argument '{name}' is a {type(value).__name__}, the kernel was compiled for "
                            f"{et.cutile}")
    if kind == "i":
        lo, hi = INT_RANGE[dtype]
        if not lo <= value <= hi:
            raise TilecoreError(f"scalar argument '{name}' = {value} does not fit {et.cutile}")
    return np_type(value)


def index_value(v: int, type_: str, entry: ParamEntry):
    """An extent or stride as the numpy integer of the parameter's LLVM type (i32 / i64)."""
    import numpy as np

    key = {"i32": "i32", "i64": "i64"}.get(type_)
    if key is None:
        raise TilecoreError(f"parameter {entry} has an index type the launcher does not know")
    lo, hi = INT_RANGE[key]
    if not lo <= v <= hi:
        raise TilecoreError(f"{entry.name}: {entry.kind} {v} does not fit the kernel's {key} index type")
    return np.int32(v) if key == "i32" else np.int64(v)


def list_words(items):
    """The table cuTile passes for a list of arrays: one row of int64 words per item, its base pointer, its
    extents, its strides (in elements)."""
    import numpy as np

    return np.array([[a.ptr, *a.shape, *a.strides] for a in items], dtype=np.int64)


def marshal(contract: LaunchContract, values, pointer, tensor_map=None, table=None) -> list:
    """The kernel parameters for bound ``values`` (:class:`~.arrays.ArrayArg` / scalars, one per Python
    parameter), in the contract's order: ``pointer(array_arg)`` for each base pointer, numpy integers of
    the index width for extents and strides, numpy scalars for scalars, ``table(list_arg)`` for a list of arrays
    (its words: :func:`list_words`) and its length; then, for a kernel with tensor maps,
    ``tensor_map(recipe, params)`` for each (the encoded map; None leaves them to the launcher: the
    emulator encodes them itself)."""
    out = []
    for e in contract.params:
        v = values[e.arg]
        for k in e.path:
            v = v[k]
        if e.kind == "pointer":
            out.append(pointer(v))
        elif e.kind == "shape":
            out.append(index_value(v.shape[e.axis], e.type, e))
        elif e.kind == "stride":
            out.append(index_value(v.strides[e.axis], e.type, e))
        elif e.kind == "list":
            if table is None:
                raise TilecoreError(f"argument '{e.name}' is a list of arrays: tilecore.cutile passes those on the "
                                    "CPU path only so far")
            out.append(table(v))
        elif e.kind == "list_len":
            out.append(index_value(len(v.items), e.type, e))
        else:
            out.append(scalar_value(v, e.dtype, e.name))
    check_tensor_map_strides(contract, out)
    if contract.tensor_maps and tensor_map is not None:
        from ..tensormaps import append_maps

        try:
            out = append_maps(contract.tensor_maps, out, tensor_map)
        except ValueError as e:
            raise TilecoreError(f"kernel '{contract.kernel}': {e}") from None
    return out


def check_tensor_map_strides(contract: LaunchContract, params) -> None:
    """A :class:`TilecoreError` naming the argument when an array the kernel reads by TMA has a stride of 0 (a
    broadcast view, ``np.broadcast_to`` / ``expand``): its tensor map cannot be encoded (``cuTensorMapEncodeTiled``
    and cuTile's own encoder need positive strides), while cuTile's layout facts (0 is a multiple of 16 bytes) let
    the kernel take the TMA path without a run-time check. ``params``: the marshalled kernel parameters."""
    from ..tensormaps import unaligned

    for r in contract.tensor_maps:
        if unaligned(r, params):  # an optional map the kernel will not read
            continue
        for s in r.global_strides:
            if isinstance(s, dict) and int(params[s["param"]]) == 0:
                e = contract.params[s["param"]]
                raise TilecoreError(f"argument '{e.name}' has stride 0 on axis {e.axis} (a broadcast view), but kernel "
                                    f"'{contract.kernel}' reads it by TMA, whose tensor maps need positive strides: "
                                    "pass a copy (numpy.ascontiguousarray) or compile with options={\"tileas.tma\": \"off\"}")
