"""Load the MLIR bindings' native libraries on a second thread while a cold compile imports Python code.

``import mlir.ir`` spends ~40 ms of a cold ``tilecore compile`` in the dynamic loader, mapping and
relocating ``libMLIRPythonCAPI.so`` (200 MB) and ``libLLVM.so`` (136 MB). CPython imports an
extension module with the GIL held through ``dlopen``; libc's ``dlopen`` called through ctypes runs
with the GIL released. :func:`start` calls it on a daemon thread, so the loader works while the main
thread imports tilecore, pluggy, the plugin manager and the standard-library modules the compile
needs (pure Python); when ``mlir._mlir_libs._mlir`` is imported, its ``DT_NEEDED`` libraries are
already there (matched by soname) and only the small extension itself is loaded. :func:`wait`, which
:mod:`tilecore.mlir` calls before importing the bindings, joins the thread. The overlap needs a free
core: on the 2-core development machine the smallest of 20 whole ``tilecore compile`` runs of
vadd_f32 went from 190 to 174 ms, while at a load average of 10-18 the medians did not change.

The libraries are loaded with lazy binding (``RTLD_LAZY``): a function is bound on its first call,
not every one of the libraries' functions at load time (CPython loads extension modules with
``RTLD_NOW``; a library already loaded keeps its mode). Only functions called are bound, which is
less work for a one-shot compile; a long-lived process (batch workers, the Python API) that forks a
child per compile would bind the back end's functions again in every child, so only the CLI's
single compile (:func:`tilecore.cli._compile_one`) starts the preload.

An extension module imported while the loader works waits for it (glibc's loader lock): the small
standard-library extensions a compile loads (:data:`EXTENSIONS`) are imported before the thread
starts. Any failure (no ctypes, no ``dlopen`` symbol, the library not found or not loadable) leaves
the normal import to load, and report, the bindings.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

LIBRARY = os.path.join("_mlir_libs", "libMLIRPythonCAPI.so")  # inside the ``mlir`` package; pulls libLLVM.so in

# Extension modules of the standard library that a compile imports (json, dataclasses / inspect, pickle,
# subprocess, tempfile / random, struct, the bindings' array use), imported here, before the thread
# takes the loader's lock. A name missing from this list only makes its import wait for the loader.
EXTENSIONS = ("_json", "_opcode", "_typing", "math", "_bisect", "array", "_struct", "_pickle", "fcntl",
              "_posixsubprocess", "select", "_random", "_sha512")

_thread = None


def library_path() -> str | None:
    """``libMLIRPythonCAPI.so`` of the ``mlir`` package the bindings' import would find (not imported)."""
    try:
        spec = importlib.util.find_spec("mlir")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, LIBRARY)
        if os.path.isfile(path):
            return path
    return None


def start() -> bool:
    """Start loading the MLIR libraries on a daemon thread; False when it is not done (see the module doc)."""
    global _thread
    if _thread is not None or "mlir._mlir_libs._mlir" in sys.modules or not hasattr(os, "RTLD_LAZY"):
        return False
    path = library_path()
    if path is None:
        return False
    try:
        import ctypes
        import threading

        dlopen = ctypes.CDLL(None).dlopen
    except (ImportError, OSError, AttributeError):
        return False
    dlopen.restype = ctypes.c_void_p
    dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    for name in EXTENSIONS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # The handle is never closed: the libraries stay loaded for the process' life, as the import leaves them.
    _thread = threading.Thread(target=dlopen, args=(os.fsencode(path), os.RTLD_LAZY),
                               name="tilecore-mlir-preload", daemon=True)
    _thread.start()
    return True


def wait() -> None:
    """Wait for :func:`start`'s thread (no-op when none runs)."""
    if _thread is not None:
        _thread.join()
