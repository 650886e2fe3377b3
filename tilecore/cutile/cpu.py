"""The CPU path: a compiled cuTile kernel runs in :mod:`tilecore.emulate` on host arrays.

Arrays are updated in place, as on a GPU: a C-contiguous array is handed to the emulator as it is
(the emulator copies its results back); a strided one (a view with gaps, e.g. ``x[:, ::2]``) as the
memory it spans, and afterwards only its own elements are written back. Arguments sharing memory (``f(x, x)``)
share it in the emulator too. Device printf
text goes to stdout; a device assert, a bad memory access or a deadlock is a
:class:`~tilecore.errors.TilecoreError` at the kernel's source location.
"""

from __future__ import annotations

import sys

from ..errors import TilecoreError
from .contract import list_words, marshal


def _span_view(a, writable: bool = False):
    """A uint8 view of the bytes array ``a`` spans (strides >= 0): the emulator copies it (one copy for arguments
    whose memory overlaps: :func:`tilecore.emulate.engine.shared_copies`). Read-only: it writes nothing back into
    it (:func:`_write_back` copies the array's own elements afterwards); ``writable``: it writes the span back."""
    import ctypes

    import numpy as np

    extent = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize
    buf = np.ctypeslib.as_array((ctypes.c_uint8 * extent).from_address(a.ctypes.data))
    buf.flags.writeable = writable
    return buf


def _span_copy(a):
    """A writable copy (uint8) of the bytes array ``a`` spans (strides >= 0)."""
    return _span_view(a).copy()


def _write_back(a, span) -> None:
    """Copy the elements of strided host array ``a`` out of ``span`` (its bytes after the launch)."""
    import numpy as np

    if a.flags.writeable:
        flat = np.ascontiguousarray(span).view(a.dtype)
        np.copyto(a, np.lib.stride_tricks.as_strided(flat, shape=a.shape, strides=a.strides))


def _refuse_lost_stores(symbol: str, names, passed, users, outputs) -> None:
    """A kernel that stored into a read-only numpy array (``np.broadcast_to``, ``np.frombuffer`` of bytes ...)
    gets no copy back into it: a :class:`TilecoreError` naming the argument instead of results lost silently.
    ``passed``: what the emulator got for each pointer parameter; ``users``: the caller's array behind it."""
    import numpy as np

    for name, h, user, dev in zip(names, passed, users, outputs):
        if isinstance(h, np.ndarray) and not user.flags.writeable and h.nbytes:
            after = np.ascontiguousarray(dev).reshape(-1).view(np.uint8)[:h.nbytes]
            if not np.array_equal(after, np.ascontiguousarray(h).reshape(-1).view(np.uint8)):
                raise TilecoreError(f"kernel '{symbol}' stored into argument '{name}', a read-only numpy array: its "
                                    "results cannot be copied back (pass a writable array)")


def run(compiled, grid, values, isolate: bool = False, timeout: float | None = None,
        check_bounds: bool = True) -> str:
    """Run ``compiled`` (a :class:`~.kernel.CompiledKernel`) on ``grid`` in the emulator with bound
    ``values``; writes printf text to stdout and returns it."""
    # what is handed to the emulator for each pointer parameter, in order (an array, or the table of a list of
    # arrays): the launch's outputs come back in this order; position -> strided host array
    passed, strided = [], {}
    c = compiled.contract

    def pointer_host(a):
        if a.host is None:
            raise TilecoreError(f"an argument of kernel '{compiled.symbol}' is in CUDA device memory ({a.layout()}); "
                                "the CPU emulator needs host arrays (numpy), or launch with device='cuda'")
        if any(st < 0 for st in a.host.strides):
            raise TilecoreError(f"an array argument of kernel '{compiled.symbol}' has negative strides ({a.layout()}); "
                                "the CPU path needs strides >= 0")
        return a.host

    def pointer(a):
        h = pointer_host(a)
        if not (h.flags.c_contiguous or h.size == 0):
            strided[len(passed)] = h
            h = _span_view(h)
        passed.append(h)
        return h

    # (the copy the emulator writes back into, its bytes before the launch, the item's name) of list arguments'
    # read-only items
    items_read_only = []

    def table(lst):  # a list of arrays: the emulator places each item and writes its address into its row
        from ..emulate.engine import PointerTable

        name = [e.name for e in c.params if e.kind == "list"][sum(isinstance(p, PointerTable) for p in passed)]
        hosts = []
        for r, a in enumerate(lst.items):
            h = pointer_host(a)
            if not h.flags.writeable:  # a copy the emulator may write into: a store is then an error
                span = _span_copy(h)
                items_read_only.append((span, span.copy(), f"{name}[{r}]"))
                h = span
            elif not (h.flags.c_contiguous or h.size == 0):  # the emulator writes the span's bytes back
                h = _span_view(h, writable=True)
            hosts.append(h)
        passed.append(PointerTable(list_words(lst.items), hosts))  # a pointer parameter too (its words)
        return passed[-1]

    args = marshal(c, values, pointer, table=table)
    if isolate and any(e.kind == "list" for e in c.params):  # the child would write the items back, not us
        raise TilecoreError("a list-of-arrays argument cannot be passed to an isolated launch yet")
    if isolate:
        from ..emulate import launch

        result = launch(compiled.module, c.kernel, c.cta_grid(grid), c.threads, args, shared_bytes=c.shared_bytes,
                        check_bounds=check_bounds, isolate=True, timeout=timeout)
    else:
        result = compiled.emulated(check_bounds).launch(c.cta_grid(grid), c.threads, args, c.shared_bytes)
    for k, host in strided.items():
        _write_back(host, result.outputs[k])
    _refuse_lost_stores(compiled.symbol, [e.name for e in c.params if e.kind in ("pointer", "list")], passed,
                        [strided.get(k, h) for k, h in enumerate(passed)], result.outputs)
    for span, before, name in items_read_only:
        if bytes(span) != bytes(before):
            raise TilecoreError(f"kernel '{compiled.symbol}' stored into argument '{name}', a read-only numpy array: "
                                "its results cannot be copied back (pass a writable array)")
    if result.printf:
        sys.stdout.write(result.printf)
        sys.stdout.flush()
    return result.printf
