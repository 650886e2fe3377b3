"""Leave the ``tilecore`` process without the interpreter's finalization.

After a compile, Python's shutdown takes 50-70 ms here (measured 2026-11-23 on the 2-core machine,
vadd_f32 for sm_90a): it destroys every Python object (thousands of MLIR wrappers, the dialect
modules' classes), then the C++ static destructors of libMLIR / libLLVM run. A one-shot command
needs none of it. :func:`exit_now` does what the interpreter would do first — wait for non-daemon
threads, run the ``atexit`` handlers (multiprocessing, concurrent.futures, tempfile ...), flush
stdout / stderr (and C stdio, where ctypes is loaded) — and then ends the process with ``os._exit``.

It is used by the command-line entry points only (``python -m tilecore``; ``tilecore.cli.main`` when
called as the console script), never by ``main(argv)`` called from Python. It steps aside (plain
``sys.exit``) when ``TILECORE_NO_FAST_EXIT`` is set or a tracer / profiler is active (coverage,
``python -m cProfile``), whose reports are written at finalization.
"""

from __future__ import annotations

import os
import sys


def enabled() -> bool:
    """False when ``$TILECORE_NO_FAST_EXIT`` is set or a tracer / profiler is running."""
    if os.environ.get("TILECORE_NO_FAST_EXIT", "") not in ("", "0"):
        return False
    return sys.gettrace() is None and sys.getprofile() is None and "coverage" not in sys.modules


def exit_now(code: int | None = 0) -> None:
    """End the process with exit status ``code`` (None: 0), skipping the interpreter's finalization."""
    code = 0 if code is None else code
    if not isinstance(code, int) or not enabled():
        sys.exit(code)
    threading = sys.modules.get("threading")
    if threading is not None and hasattr(threading, "_shutdown"):
        try:
            threading._shutdown()  # join non-daemon threads, as Py_FinalizeEx does first
        except Exception:  # noqa: BLE001 - never fail on the way out
            pass
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (tilecore ... | head): what Python reports as 120
            code = code or 120
    ctypes = sys.modules.get("ctypes")  # native code (a JIT-compiled kernel, a library) may have used C stdio
    if ctypes is not None:
        try:
            ctypes.CDLL(None).fflush(None)
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def console_main() -> None:
    """``tilecore`` as a console script: ``tilecore.cli.main()``, then :func:`exit_now` with its status."""
    from .cli import main

    exit_now(main())
