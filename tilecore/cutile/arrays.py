"""Array arguments of a cuTile launch: where they live and their layout.

:func:`describe` turns a kernel argument into an :class:`ArrayArg` (data pointer, shape, strides in
elements, element type, host or CUDA device). numpy arrays (and host objects numpy can view:
``__array_interface__``, a CPU ``__dlpack__``) are read with numpy; device arrays (CuPy, PyTorch
CUDA tensors, anything with ``__cuda_array_interface__`` or a CUDA ``__dlpack__``) through
``cuda.core.utils.StridedMemoryView`` (``pip install tilecore[cuda]``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TilecoreError
from .dtypes import ElementType, from_numpy

# DLPack device types (dlpack.h DLDeviceType) whose memory a CUDA kernel reads
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13


@dataclass
class ArrayArg:
    """One array argument: ``ptr`` (address), ``shape``, ``strides`` (elements), ``dtype``, ``device_id``
    (-1: host memory), ``host`` (the numpy array over host memory, None for device arrays), ``obj``
    (what the caller passed)."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: ElementType
    device_id: int
    host: object = None
    obj: object = None

    @property
    def on_device(self) -> bool:
        """True for memory of a CUDA device."""
        return self.device_id >= 0

    def layout(self) -> str:
        """``float32[4, 8] strides (8, 1)``: for messages."""
        return f"{self.dtype.cutile}{list(self.shape)} strides {tuple(self.strides)}"


def is_array(obj) -> bool:
    """True for what :func:`describe` accepts (numpy arrays, DLPack and CUDA-array-interface objects; not
    numpy scalars, which have the interfaces too)."""
    import numpy as np

    if isinstance(obj, np.generic):
        return False
    return isinstance(obj, np.ndarray) or any(hasattr(obj, a) for a in (
        "__dlpack__", "__cuda_array_interface__", "__array_interface__"))


def is_device_array(obj) -> bool:
    """True when ``obj`` lives in CUDA device memory (by its DLPack device or CUDA array interface)."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        return False
    if hasattr(obj, "__dlpack_device__"):
        try:
            return int(obj.__dlpack_device__()[0]) in (_DL_CUDA, _DL_CUDA_MANAGED)
        except Exception:  # noqa: BLE001 - an exporter that cannot say: fall back on the interfaces
            pass
    return hasattr(obj, "__cuda_array_interface__")


def row_major_strides(shape) -> tuple[int, ...]:
    """C-order strides in elements of ``shape``."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(out))


def _host_view(obj):
    import numpy as np

    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__"):
        try:
            return np.from_dlpack(obj)
        except (BufferError, TypeError, RuntimeError) as e:
            raise TilecoreError(f"cannot view a {type(obj).__name__} as a host array: {e}") from None
    return np.asarray(obj)


def describe_host(obj, what: str) -> ArrayArg:
    """A host array (numpy or what numpy can view without a copy) as an :class:`ArrayArg`."""
    a = _host_view(obj)
    if not a.dtype.isnative:  # a GPU reads little-endian words (DLPack refuses other byte orders too)
        raise TilecoreError(f"{what}: dtype '{a.dtype.str}' is not in the machine's byte order (convert "
                            f"it: a.astype(a.dtype.newbyteorder('=')))")
    if any(s % a.itemsize for s in a.strides):
        raise TilecoreError(f"{what}: strides {a.strides} (bytes) are not a multiple of the element size "
                            f"{a.itemsize}")
    return ArrayArg(a.ctypes.data, tuple(int(n) for n in a.shape), tuple(s // a.itemsize for s in a.strides),
                    from_numpy(a.dtype), -1, a, obj)


def describe_device(obj, what: str) -> ArrayArg:
    """A CUDA array (CuPy, PyTorch, any DLPack / CUDA array interface exporter) as an :class:`ArrayArg`."""
    from .gpu import cuda_core

    smv = cuda_core().utils.StridedMemoryView
    try:
        view = smv.from_any_interface(obj, stream_ptr=-1)  # the caller's stream orders its own work
    except NotImplementedError as e:  # e.g. bfloat16 without ml_dtypes
        raise TilecoreError(f"{what}: {e}") from None
    shape = tuple(int(n) for n in view.shape)
    strides = tuple(int(s) for s in view.strides) if view.strides is not None else row_major_strides(shape)
    return ArrayArg(int(view.ptr), shape, strides, from_numpy(view.dtype), int(view.device_id), None, obj)


def describe(obj, what: str = "argument") -> ArrayArg:
    """:class:`ArrayArg` of a kernel argument; ``what`` names it in messages."""
    return describe_device(obj, what) if is_device_array(obj) else describe_host(obj, what)
