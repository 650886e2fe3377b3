"""Test-session hygiene for every test directory (tests/, plugins/*/tests/).

After each test module the CPU emulator's cache of JIT-compiled kernels is emptied and freed heap memory is
handed back to the OS (glibc ``malloc_trim``): a pytest-xdist worker runs many modules, and without this it keeps
the peak memory of every heavy one it ran (a 256-row block-scaled emulator run peaks at ~7 GiB); two workers on
a 24 GiB machine then ran out of memory.
"""

from __future__ import annotations

import ctypes
import gc

import pytest


@pytest.fixture(autouse=True, scope="module")
def _release_memory_after_module():
    yield
    try:
        from tilecore import emulate

        emulate._CACHE.clear()
    except ImportError:
        pass
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
