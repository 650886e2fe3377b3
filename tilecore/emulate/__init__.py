"""CPU emulator: run a lowered kernel (llvm + nvvm in a gpu.module) thread by thread on the host.

>>> res = launch(module, "vadd", grid=4, block=256, args=[a, b, c, np.int32(n)])  # doctest: +SKIP
>>> c_out, text = res                                                            # doctest: +SKIP

The kernel's own LLVM code runs natively, JIT-compiled through LLVM's C API
(:mod:`.jit`); only the GPU-specific parts are emulated (tables in :mod:`.optable`, :mod:`.libdevice`,
:mod:`.warp`). Pointer arguments are numpy arrays (copied to device memory and
back), the others Python / numpy scalars, in the order of the kernel's LLVM
signature.
"""

from __future__ import annotations

import hashlib
import os

from .engine import EmulatedKernel, LaunchResult

__all__ = ["launch", "compile_kernel", "EmulatedKernel", "LaunchResult"]

_CACHE: dict = {}


def compile_kernel(module, kernel: str, opt_level: int | None = None, check_bounds: bool = True) -> EmulatedKernel:
    """Rewrite and JIT-compile ``kernel`` of ``module`` (an ``ir.Module``, left unchanged, or MLIR text).

    Compiled kernels are cached by module text. ``opt_level``: the host JIT's level (:data:`.jit.LEVELS`;
    1: cheap to compile, 2: LLVM's ``default<O2>`` and default code generation, slower to compile, the
    sequential path's native loop up to twice as fast); None: ``$TILECORE_EMU_OPT_LEVEL``, else 1. ``check_bounds``: every load, store, atomic and bulk
    copy (global, shared, local or generic) that is misaligned or outside the buffers it may touch
    fails the launch (instead of corrupting host memory or crashing); see :mod:`.memcheck`.
    """
    from .hostmodule import build

    if isinstance(module, str):
        from ..inputs import read_mlir_text
        from ..plugins import get_plugin_manager

        module = read_mlir_text(module.encode(), "", get_plugin_manager().make_context())

    if opt_level is None:
        level = os.environ.get("TILECORE_EMU_OPT_LEVEL", "1").strip()
        if level not in ("0", "1", "2", "3"):
            from ..errors import TilecoreError

            raise TilecoreError(f"TILECORE_EMU_OPT_LEVEL must be 0, 1, 2 or 3, got {level!r}")
        opt_level = int(level)
    key = (id(module.context), hashlib.sha1(str(module).encode()).hexdigest(), kernel, opt_level, check_bounds)
    k = _CACHE.get(key)
    if k is None:
        k = _CACHE[key] = EmulatedKernel(build(module, kernel, check_bounds), opt_level)
        if len(_CACHE) > 32:
            _CACHE.pop(next(iter(_CACHE)))
    return k


def launch(module, kernel: str, grid, block, args, shared_bytes: int = 0, check_bounds: bool = True,
           isolate: bool = False, timeout: float | None = None) -> LaunchResult:
    """Run ``kernel`` of the lowered ``module`` on ``grid`` x ``block`` threads.

    ``grid`` / ``block``: an int or 1 to 3 sizes (``grid`` counts CTAs; a kernel with ``nvvm.cluster_dim``
    runs the CTAs of each cluster concurrently, the grid a whole number of clusters); ``args`` follow the kernel's LLVM
    parameters (numpy arrays for pointers, scalars for the rest); ``shared_bytes``:
    dynamic shared memory per CTA. Returns a :class:`LaunchResult` (``outputs``: the
    device arrays after the run, also copied into the given arrays; ``printf``: the
    captured device printf text), which unpacks as ``outputs, printf``. A failing
    device assert, a deadlock, a bad memory access (misaligned, or outside every buffer its
    address space may touch: unless ``check_bounds`` is False) or an op the emulator does not
    know raises :class:`~tilecore.errors.TilecoreError`.

    ``isolate``: compile and run in a child process (:mod:`.isolate`; about a second more per
    launch, no compile cache): a native fault there (an unchecked wild access, SIGSEGV / SIGBUS)
    raises ``TilecoreError("the kernel 'k' crashed the emulator (SIGSEGV) ...")`` instead of
    killing the caller. ``timeout``: with ``isolate``, seconds after which the child is killed
    and the launch fails (None: no limit).
    """
    if isolate:
        from .isolate import launch_isolated

        return launch_isolated(module, kernel, grid, block, args, shared_bytes, check_bounds, timeout)
    return compile_kernel(module, kernel, check_bounds=check_bounds).launch(grid, block, args, shared_bytes)
