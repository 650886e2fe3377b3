"""The GPU path: load a compiled kernel's cubin and launch it through NVIDIA's ``cuda-core``.

``cuda-core`` (``pip install tilecore[cuda]``) loads the cubin (``ObjectCode.from_cubin``), and
``cuda.core.launch`` launches it on the caller's stream with tilecore's launch contract: grid = the
tile blocks, block = the kernel's threads per CTA, its cluster shape and dynamic shared memory.
Parameters are marshalled by the contract (:func:`.contract.marshal`): device pointers as Python
ints, extents and strides as numpy integers of the kernel's index width, scalars as numpy scalars.
Nothing here needs ``tileiras``.
"""

from __future__ import annotations

from ..errors import TilecoreError

INSTALL_HINT = "pip install tilecore[cuda]"


def cuda_core():
    """The ``cuda.core`` module; a :class:`TilecoreError` with the install hint when it is missing."""
    try:
        import cuda.core as cc

        cc.LaunchConfig  # noqa: B018 - a namespace package without cuda-core has no such name
    except (ImportError, AttributeError):
        raise TilecoreError("running cuTile kernels on a GPU needs NVIDIA's cuda-core package, which is not "
                            f"installed (install it with: {INSTALL_HINT})") from None
    return cc


def device(device_id: int = 0):
    """``cuda.core.Device(device_id)``, made current; no driver or no GPU is a :class:`TilecoreError`."""
    cc = cuda_core()
    try:
        dev = cc.Device(device_id)
        dev.set_current()
    except Exception as e:  # noqa: BLE001 - driver missing, no device, bad ordinal: all "no GPU"
        raise TilecoreError(f"device='cuda' but no CUDA GPU can be used ({type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else 'no detail'}); run on the CPU emulator with "
                            "numpy arrays or device='cpu'") from None
    return dev


def arch_of(dev, targets=None) -> str:
    """The tilecore target for device ``dev``: ``sm_<major><minor>``, with the ``a`` suffix where tilecore has
    that arch-specific target (its features run only on that exact SM, which this device is)."""
    major, minor = tuple(dev.compute_capability)
    name = f"sm_{major}{minor}"
    if targets is None:
        from ..plugins import get_plugin_manager

        targets = get_plugin_manager().targets()
    return name + "a" if name + "a" in targets else name


def device_id_of(values) -> int:
    """The CUDA device of the device-array arguments (0 when there is none); arrays on several devices are a
    :class:`TilecoreError`."""
    from .arrays import ArrayArg

    ids = sorted({v.device_id for v in values if isinstance(v, ArrayArg) and v.on_device})
    if len(ids) > 1:
        raise TilecoreError(f"array arguments are on several CUDA devices {ids}")
    return ids[0] if ids else 0


def check_device_arrays(values) -> None:
    """Every array argument must be in CUDA device memory."""
    from .arrays import ArrayArg

    host = [v for v in values if isinstance(v, ArrayArg) and not v.on_device]
    if host:
        raise TilecoreError(f"device='cuda' needs CUDA arrays (CuPy, PyTorch CUDA tensors ...), got a host array "
                            f"({host[0].layout()}); use numpy arrays with the CPU emulator (device='cpu')")


def check_runs_on(target_name: str, dev) -> None:
    """A cubin for ``target_name`` must match the device's SM (same major version, minor at most the
    device's; an arch-specific ``a`` target exactly that SM)."""
    from ..targets import Target

    t = Target.make(target_name, 0)
    major, minor = tuple(dev.compute_capability)
    cc = 10 * major + minor
    if t.cc // 10 != major or t.cc > cc or (t.arch_specific and t.cc != cc):
        raise TilecoreError(f"the kernel was compiled for {target_name}, which does not run on this GPU "
                            f"(sm_{major}{minor}); compile it with gpu_name=None or 'sm_{major}{minor}'")


def stream_of(cc, dev, stream):
    """A ``cuda.core`` stream from ``stream``: None (the device's default stream), a ``cuda.core`` Stream, an
    object with ``__cuda_stream__``, a PyTorch stream (``.cuda_stream``), a CuPy stream (``.ptr``) or a raw
    ``CUstream`` handle (int)."""
    if stream is None:
        return dev.default_stream
    if isinstance(stream, cc.Stream) or hasattr(stream, "__cuda_stream__"):
        return stream
    for attr in ("cuda_stream", "ptr"):
        if isinstance(getattr(stream, attr, None), int):
            return cc.Stream.from_handle(getattr(stream, attr))
    if isinstance(stream, int):
        return cc.Stream.from_handle(stream)
    raise TilecoreError(f"cannot use a {type(stream).__name__} as a CUDA stream")


def allow_dynamic_shared(kernel, device_id: int, nbytes: int) -> None:
    """Let ``kernel`` (a ``cuda.core`` Kernel) use ``nbytes`` of dynamic shared memory: above 48 KiB a CTA has
    to opt in (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``)."""
    from cuda.bindings import driver as d

    attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err,) = d.cuKernelSetAttribute(attr, nbytes, kernel.handle, device_id)
    if err != d.CUresult.CUDA_SUCCESS:
        raise TilecoreError(f"cannot give the kernel {nbytes} bytes of dynamic shared memory on device "
                            f"{device_id}: {err.name}")


def launch_dims(contract, grid) -> dict:
    """The ``cuda.core.LaunchConfig`` fields of a launch: ``grid`` tile blocks (counted in clusters when the
    kernel has a cluster shape, as cuda.core wants: a tile block is a cluster, or in a kernel of CTA pairs one
    CTA of it), the kernel's threads per CTA and dynamic shared memory."""
    dims = {"grid": tuple(grid), "block": contract.threads, "shmem_size": contract.shared_bytes}
    if contract.cluster != (1, 1, 1):
        per_cta = contract.block_ctas == (1, 1, 1)
        dims.update(grid=tuple(g // c if per_cta else g for g, c in zip(grid, contract.cluster)),
                    cluster=contract.cluster)
    return dims


def launch_config(contract, grid):
    """The ``cuda.core.LaunchConfig`` of a launch (:func:`launch_dims`)."""
    return cuda_core().LaunchConfig(**launch_dims(contract, grid))


def parameters(contract, values) -> list:
    """The kernel parameters, marshalled by ``contract``: what ``cuda.core.launch`` receives (a kernel with
    tensor maps gets them as 128-byte ``ctypes`` arrays: :func:`launch_with_tensor_maps` passes those)."""
    import ctypes

    from ..tensormaps import MAP_BYTES, cuda_map
    from .contract import marshal

    def tensor_map(recipe, params):  # the driver's encoding, passed by value (a 128-byte parameter)
        return (ctypes.c_ubyte * MAP_BYTES).from_buffer_copy(cuda_map(recipe, params, int(params[recipe.tensor])))

    return marshal(contract, values, lambda a: int(a.ptr), tensor_map)


# the ctypes type a kernel parameter of this LLVM type is passed as (cuLaunchKernel's kernelParams)
_CTYPES = {"i1": "c_bool", "i8": "c_int8", "i16": "c_int16", "i32": "c_int32", "i64": "c_int64", "f32": "c_float",
           "f64": "c_double"}


def launch_with_tensor_maps(kernel, stream, contract, grid, params) -> None:
    """``cuLaunchKernel`` with ``kernelParams`` built here: cuda.core's launch takes scalars and buffers but
    not a 128-byte parameter passed by value, which a tensor map is."""
    import ctypes

    import numpy as np
    from cuda.bindings import driver as d

    storage = []
    for entry, v in zip(contract.params, params):
        if entry.type.startswith("!llvm.ptr"):
            storage.append(ctypes.c_void_p(int(v)))
        elif entry.type == "f16":
            storage.append(ctypes.c_uint16(int(np.float16(v).view(np.uint16))))
        else:
            storage.append(getattr(ctypes, _CTYPES[entry.type])(v.item() if hasattr(v, "item") else v))
    storage += params[len(contract.params):]  # the tensor maps (ctypes arrays)
    argv = (ctypes.c_void_p * len(storage))(*[ctypes.addressof(x) for x in storage])
    err, func = d.cuKernelGetFunction(kernel.handle)
    if err == d.CUresult.CUDA_SUCCESS:
        dims = launch_dims(contract, grid)
        (err,) = d.cuLaunchKernel(func, *dims["grid"], *dims["block"], dims["shmem_size"], int(stream.handle),
                                  ctypes.addressof(argv), 0)
    if err != d.CUresult.CUDA_SUCCESS:
        raise TilecoreError(f"cannot launch kernel '{contract.kernel}': {err.name}")


def run(compiled, stream, grid, values) -> None:
    """Launch ``compiled`` (a :class:`~.kernel.CompiledKernel`) on ``grid`` with bound ``values`` on ``stream``."""
    cc = cuda_core()
    did = device_id_of(values)
    dev = device(did)
    check_device_arrays(values)
    check_runs_on(compiled.gpu_name, dev)
    kernel = compiled.gpu_kernel(did)
    if compiled.contract.shared_bytes > 48 * 1024:
        allow_dynamic_shared(kernel, did, compiled.contract.shared_bytes)
    params = parameters(compiled.contract, values)
    if compiled.contract.tensor_maps:
        launch_with_tensor_maps(kernel, stream_of(cc, dev, stream), compiled.contract, grid, params)
        return
    cc.launch(stream_of(cc, dev, stream), launch_config(compiled.contract, grid), kernel, *params)
