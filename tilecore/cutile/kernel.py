"""Compiled cuTile kernels: export with cuTile, compile with tilecore, launch on the CPU or a GPU.

:func:`compile_kernel` exports a ``@ct.kernel`` for one specialisation with
``cuda.tile.compilation.export_kernel`` (TileIR bytecode, architecture independent), lowers it with
the installed tilecore stages and reads the launch contract off the lowered kernel; the PTX and
the cubin are serialized when first asked for. :func:`cached` keeps compiled kernels in memory per
(kernel, specialisation, target, options); tilecore has no on-disk compile cache.
"""

from __future__ import annotations

import io
from collections import OrderedDict

from ..errors import TilecoreError
from .contract import LaunchContract, build_contract, check_grid
from .specialize import kernel_name, parameters, signature

BYTECODE_VERSION = "13.4"  # the newest the tileas reader and cuTile 1.7 share; architecture independent
CACHE_SIZE = 128
_CACHE: OrderedDict = OrderedDict()


def _options(options):
    from dataclasses import replace

    from ..options import CompileOptions

    if options is None:
        return CompileOptions(emit="mlir")
    if isinstance(options, dict):
        return CompileOptions(emit="mlir", extra=dict(options))
    if isinstance(options, CompileOptions):
        return replace(options, emit="mlir", extra=dict(options.extra))
    raise TilecoreError(f"options must be a CompileOptions or a dict of plugin options, got {type(options).__name__}")


def _options_key(o) -> tuple:
    return (o.opt_level, o.debug, o.lineinfo, o.index_bitwidth, tuple(sorted(o.extra.items())))


def export_bytecode(kernel, specs, symbol: str) -> bytes:
    """TileIR bytecode of ``kernel`` for ``specs`` (cuTile's ``export_kernel``); a kernel cuTile cannot compile
    is a :class:`TilecoreError` at cuTile's location."""
    from cuda.tile._exception import TileError
    from cuda.tile.compilation import export_kernel

    what = f"kernel '{symbol}' ({', '.join(str(s) for s in specs)})"
    buf = io.BytesIO()
    try:
        export_kernel(kernel, [signature(specs, symbol)], buf, gpu_code=None, output_format="tileir_bytecode",
                      bytecode_version=BYTECODE_VERSION)
    except TileError as e:
        loc = None if e.loc.is_unknown() else f"{e.loc.filename}:{e.loc.line}:{e.loc.col}"
        # a message cuTile built from an inner error ends with that error's location frames: 'Unknown location'
        message = "\n".join(t for t in e.message.splitlines() if t.strip() != "Unknown location")
        raise TilecoreError(f"cuTile cannot export {what}: {message}", loc) from None
    except (TypeError, ValueError, NotImplementedError) as e:
        raise TilecoreError(f"cuTile cannot export {what}: {e}") from None
    return buf.getvalue()


class CompiledKernel:
    """One specialisation of a ``@ct.kernel`` compiled by tilecore for ``gpu_name``.

    ``specs``: one spec per Python parameter (:mod:`.specialize`); ``bytecode``: what cuTile exported;
    ``module``: the lowered MLIR module (llvm + nvvm, what the emulator runs); ``contract``: the
    :class:`~.contract.LaunchContract` (threads per CTA, cluster, dynamic shared memory, every kernel
    parameter and what it is); ``ptx`` / ``cubin``: serialized on first use. :meth:`launch` runs it.
    """

    def __init__(self, kernel, specs, gpu_name: str, options=None):
        from ..compiler import compile_module, read_input
        from ..plugins import get_plugin_manager
        from ..stages import StageScheduler
        from ..targets import resolve_target

        self.kernel, self.specs = kernel, tuple(specs)
        self.symbol = kernel_name(kernel)
        self.names = [p.name for p in parameters(kernel)]
        self.options = _options(options)
        self._pm = get_plugin_manager()
        self.target = resolve_target(gpu_name, self._pm.targets())
        self.gpu_name = self.target.name
        self.bytecode = export_bytecode(kernel, self.specs, self.symbol)
        self.module, _ = read_input(f"{self.symbol}.tileirbc", self._pm, data=self.bytecode)
        stages = [n for n in StageScheduler(self._pm).names() if n != "serialize"]
        if not stages:
            raise TilecoreError("no installed stage lowers TileIR bytecode (install tilecore[tileas])")
        compile_module(self.module, self.target, self.options, self._pm, stop_after=stages[-1])
        self.contract: LaunchContract = build_contract(self.module, self.symbol, self.specs, self.names)
        self._artifacts: dict | None = None
        self._emulated: dict = {}
        self._gpu_kernels: dict = {}

    def __repr__(self) -> str:
        return (f"<CompiledKernel {self.symbol}({', '.join(f'{n}: {s}' for n, s in zip(self.names, self.specs))}) "
                f"for {self.gpu_name}, {self.contract.threads_per_cta} threads/CTA>")

    def _serialized(self) -> dict:
        if self._artifacts is None:
            from dataclasses import replace

            from ..compiler import compile_module

            res = compile_module(self.module, self.target, replace(self.options, emit="cubin"), self._pm,
                                 stages=["serialize"])
            self._artifacts = res.artifacts
        return self._artifacts

    @property
    def ptx(self) -> str:
        """The PTX text of the kernel's module."""
        return "\n".join(self._serialized()["ptx"].values())

    @property
    def cubin(self) -> bytes:
        """The cubin (ptxas)."""
        return self._serialized()["cubin"]

    @property
    def threads_per_cta(self) -> int:
        """Threads per CTA (the block of a launch)."""
        return self.contract.threads_per_cta

    def emulated(self, check_bounds: bool = True):
        """The kernel JIT-compiled for the CPU emulator (:class:`tilecore.emulate.EmulatedKernel`)."""
        if check_bounds not in self._emulated:
            from ..emulate import compile_kernel

            self._emulated[check_bounds] = compile_kernel(self.module, self.symbol, check_bounds=check_bounds)
        return self._emulated[check_bounds]

    def gpu_kernel(self, device_id: int):
        """The ``cuda.core.Kernel`` of the cubin loaded on CUDA device ``device_id`` (loaded once)."""
        if device_id not in self._gpu_kernels:
            from .gpu import cuda_core

            code = cuda_core().ObjectCode.from_cubin(self.cubin, name=self.symbol)
            self._gpu_kernels[device_id] = code.get_kernel(self.symbol)
        return self._gpu_kernels[device_id]

    def bind(self, args) -> list:
        """Check launch arguments against this specialisation; returns the bound values. A different type or
        rank, a layout breaking an assumption (a strided last axis where unit stride was assumed ...) or
        another constant is a :class:`TilecoreError` naming the argument."""
        from .arrays import describe, is_array
        from .specialize import check_count, const_spec

        params = parameters(self.kernel)
        args = tuple(args)
        check_count(self.kernel, params, len(args))
        values = []
        for p, spec, a in zip(params, self.specs, args):
            if spec.kind == "constant":
                got = const_spec(a, p.name)
                if got != spec:
                    raise TilecoreError(f"constant '{p.name}' is {got}, the kernel was compiled for {spec}")
                values.append(got.value)
            elif spec.kind == "tuple":
                from .specialize import tuple_spec

                if not isinstance(a, tuple):
                    raise TilecoreError(f"argument '{p.name}' must be a tuple {spec}, got {type(a).__name__}")
                got, v = tuple_spec(a, p, p.name)
                if got != spec:
                    raise TilecoreError(f"argument '{p.name}' is {got}, the kernel was compiled for {spec} "
                                        "(tilecore.cutile.launch compiles a new specialisation for such arguments)")
                values.append(v)
            elif spec.kind == "list":
                from .specialize import ListArg, bind_list, is_array_list

                if not is_array_list(a):
                    raise TilecoreError(f"argument '{p.name}' must be a list of arrays ({spec}), got "
                                        f"{type(a).__name__}")
                items = bind_list(a, p)
                bad = spec.unmet(items)
                if bad:
                    raise TilecoreError(f"argument '{p.name}' " + "; ".join(bad) + " (tilecore.cutile.launch "
                                        "compiles a new specialisation for such arguments)")
                values.append(ListArg(tuple(items)))
            elif spec.kind == "array":
                if not is_array(a):
                    raise TilecoreError(f"argument '{p.name}' must be an array ({spec}), got {type(a).__name__}")
                arr = describe(a, f"argument '{p.name}'")
                bad = spec.unmet(arr)
                if bad:
                    raise TilecoreError(f"argument '{p.name}' " + "; ".join(bad) + " (tilecore.cutile.launch "
                                        "compiles a new specialisation for such arguments)")
                values.append(arr)
            else:
                if is_array(a):
                    raise TilecoreError(f"argument '{p.name}' must be a {spec} scalar, got an array")
                values.append(a)
        return values

    def launch(self, stream, grid, args, *, device: str | None = None, isolate: bool = False) -> None:
        """Launch on ``grid`` tile blocks with ``args`` (as :func:`tilecore.cutile.launch`); the arguments must
        fit this specialisation (:meth:`bind`)."""
        self.run_bound(stream, grid, self.bind(args), device, isolate)

    def run_bound(self, stream, grid, values, device: str | None = None, isolate: bool = False) -> None:
        """Launch with already bound ``values`` on ``device`` (``"cpu"``, ``"cuda"`` or None: by the arrays)."""
        g = check_grid(grid, self.contract)
        if choose_device(device, values) == "cuda":
            from . import gpu

            gpu.run(self, stream, g, values)
        else:
            from . import cpu

            cpu.run(self, g, values, isolate=isolate)


def choose_device(device: str | None, values) -> str:
    """``"cpu"`` or ``"cuda"``: ``device`` if given, else ``"cuda"`` when an array argument is in device memory."""
    from .arrays import ArrayArg
    from .specialize import ListArg

    if device is not None:
        if device not in ("cpu", "cuda"):
            raise TilecoreError(f"device must be 'cpu' or 'cuda', got {device!r}")
        return device
    def leaves(vs):
        for v in vs:
            yield from leaves(v) if isinstance(v, tuple) else (v,)

    on_device = {v.on_device for v in leaves(values) if isinstance(v, (ArrayArg, ListArg))}
    if len(on_device) > 1:
        raise TilecoreError("some array arguments are in host memory and some on a CUDA device")
    return "cuda" if on_device == {True} else "cpu"


def cached(kernel, specs, gpu_name: str, options=None) -> CompiledKernel:
    """The compiled kernel for (kernel, specs, target, options), compiled on first use (kept in memory)."""
    from ..targets import parse_target_name

    key = (id(kernel), tuple(specs), parse_target_name(gpu_name), _options_key(_options(options)))
    hit = _CACHE.get(key)
    if hit is not None and hit.kernel is kernel:
        _CACHE.move_to_end(key)
        return hit
    ck = _CACHE[key] = CompiledKernel(kernel, specs, gpu_name, options)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return ck


def clear_cache() -> None:
    """Forget every compiled kernel (the next launch compiles again)."""
    _CACHE.clear()
