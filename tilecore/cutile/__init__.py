"""Run cuTile kernels compiled by tilecore, with ``ct.launch``'s conventions.

>>> import cuda.tile as ct, numpy as np, tilecore.cutile                    # doctest: +SKIP
>>> tilecore.cutile.launch(None, (8,), vadd, (x, y, out, 128))             # doctest: +SKIP
>>> k = tilecore.cutile.compile(vadd, (x, y, out, 128), gpu_name="sm_90a")  # doctest: +SKIP
>>> k.cubin[:4], k.contract.threads, k.launch(None, 8, (x, y, out, 128))    # doctest: +SKIP

``launch(stream, grid, kernel, args)``: ``kernel`` is a ``@ct.kernel``; ``args`` one value per
parameter: arrays (numpy; CuPy, PyTorch or anything with ``__dlpack__`` / ``__cuda_array_interface__``),
Python / numpy scalars and the values of ``ct.Constant`` parameters. The kernel is specialised for the
arguments as cuTile does it (:mod:`.specialize`), exported with ``cuda.tile.compilation.export_kernel``,
compiled by tilecore and kept in memory per (kernel, specialisation, target, options).

* CPU path (numpy arrays, or ``device="cpu"``): the kernel runs in :mod:`tilecore.emulate`, arrays are
  updated in place, printf goes to stdout, a device assert is a :class:`~tilecore.errors.TilecoreError`
  at the kernel's source location (:mod:`.cpu`).
* GPU path (device arrays, or ``device="cuda"``): the cubin is loaded and launched through NVIDIA's
  ``cuda-core`` (``pip install tilecore[cuda]``) on ``stream`` with tilecore's launch contract: grid =
  tile blocks, block = the kernel's threads per CTA; ``gpu_name`` defaults to the device's (:mod:`.gpu`).

Modules: :mod:`.dtypes` (element types), :mod:`.arrays` (array arguments), :mod:`.specialize`
(specialisations), :mod:`.contract` (launch contract, marshalling), :mod:`.kernel` (compiled kernels,
cache), :mod:`.cpu` / :mod:`.gpu` (the two paths), :mod:`.cli` (``tilecore run file.py::kernel``).
"""

from __future__ import annotations

from .contract import LaunchContract, ParamEntry
from .kernel import CompiledKernel, clear_cache

__all__ = ["launch", "compile", "CompiledKernel", "LaunchContract", "ParamEntry", "clear_cache"]

DEFAULT_CPU_TARGET = "sm_80"


def launch(stream, grid, kernel, args, *, gpu_name: str | None = None, device: str | None = None, options=None,
           isolate: bool = False) -> None:
    """Launch ``kernel`` on ``grid`` tile blocks (an int or 1 to 3 sizes) with ``args``, as ``ct.launch``.

    ``stream``: the caller's CUDA stream on the GPU path (None: the device's default stream; a
    ``cuda.core`` Stream, a PyTorch / CuPy stream or a raw handle), ignored on the CPU path. ``device``:
    ``"cpu"`` / ``"cuda"`` (None: ``"cuda"`` when the arrays are device arrays). ``gpu_name``: the target
    (None: the device's on a GPU, sm_80 for the emulator). ``options``: a
    :class:`~tilecore.options.CompileOptions` or a dict of plugin options (``{"tileas.dot": "fma"}``).
    ``isolate``: on the CPU path, run in a child process (a native crash becomes an error).
    Every failure a user can cause is a :class:`~tilecore.errors.TilecoreError`.
    """
    from .kernel import cached, choose_device
    from .specialize import bind

    specs, values = bind(kernel, args)
    where = choose_device(device, values)
    if gpu_name is None:
        gpu_name = _device_arch(values) if where == "cuda" else DEFAULT_CPU_TARGET
    cached(kernel, specs, gpu_name, options).run_bound(stream, grid, values, where, isolate)


def compile(kernel, args_or_signatures, gpu_name: str | None = None, options=None) -> CompiledKernel:  # noqa: A001
    """Compile ``kernel`` for one specialisation; returns a :class:`~.kernel.CompiledKernel` (``cubin``, ``ptx``,
    ``contract``, ``launch``).

    ``args_or_signatures``: one item per parameter, mixed freely: an example argument (array, scalar,
    constant value: specialised as :func:`launch` would), a spelling (``"f32[2]"``, ``"f32[2]i64"``,
    ``"f32"``), a ``cuda.tile.compilation`` constraint; or a whole ``KernelSignature``. ``gpu_name``: None
    means the device's when an example argument is a device array, else sm_80.
    """
    from .arrays import is_array, is_device_array
    from .kernel import cached
    from .specialize import specs_of

    specs = specs_of(kernel, args_or_signatures)
    if gpu_name is None:
        items = getattr(args_or_signatures, "parameters", args_or_signatures)
        devices = [a for a in items if is_array(a) and is_device_array(a)]
        gpu_name = _device_arch_of_array(devices[0]) if devices else DEFAULT_CPU_TARGET
    return cached(kernel, specs, gpu_name, options)


def _device_arch(values) -> str:
    from .gpu import arch_of, device, device_id_of

    return arch_of(device(device_id_of(values)))


def _device_arch_of_array(obj) -> str:
    from .arrays import describe_device
    from .gpu import arch_of, device

    return arch_of(device(describe_device(obj, "argument").device_id))
