"""Byte code of the methods ``dataclasses`` generates, kept across processes like Python's ``.pyc`` files.

``@dataclass`` writes each class' ``__init__``, ``__repr__``, ``__eq__`` ... as source text and compiles
it (``exec`` of the text) when the class is created. A cold ``tilecore compile`` creates ~55
dataclasses (tilecore's and the plugins') and compiled ~230 such functions: ~7 ms of the ~16 ms it spent
creating them (vadd_f32, sm_90a, 2026-11-24). :func:`install` gives the ``dataclasses`` module an
``exec`` of its own (a module global shadows the builtin) that takes the code object of a text it has
seen before from a file beside tilecore's byte code (``tilecore/__pycache__/codecache.<tag>.dataclasses``,
or under ``sys.pycache_prefix``): a marshal'd dict text -> code object, headed by the interpreter's
byte-code magic number. The same text compiled by the same interpreter gives the same code object, so
the classes are the same with or without the file; ``compile`` runs with ``dont_inherit`` as ``exec``
from the dataclasses module would (no ``__future__`` flags).

:func:`save` writes the file when a text was compiled that it did not hold (atomically: a temporary
file and a rename, so concurrent processes never read a partial file; the last writer wins). A missing,
unreadable, foreign (other magic number) or corrupt file is an empty cache, and a file that cannot be
written is not written, as with ``.pyc`` files; nothing is written when ``sys.dont_write_bytecode`` is
set. Entries no process used for a while are dropped when the file would hold more than
:data:`MAX_ENTRIES`. Used by ``tilecore compile``'s single compile (:func:`tilecore.cli.cold_compile_setup`).
"""

import importlib.util
import marshal
import os
import sys

MAX_ENTRIES = 4000
_CodeType = type(compile("", "<string>", "exec"))

_code: dict | None = None  # text -> code object, from the file
_used: set = set()  # texts this process executed
_new = False  # a text was compiled that the file did not hold


def path() -> str | None:
    """Where the cache file is (None when there is no place for byte code)."""
    try:
        pyc = importlib.util.cache_from_source(__file__)
    except (NotImplementedError, ValueError):  # no cache_tag
        return None
    return pyc[:-len(".pyc")] + ".dataclasses"


def _load() -> dict:
    p = path()
    try:
        with open(p, "rb") as fh:
            raw = fh.read()
        magic = importlib.util.MAGIC_NUMBER
        if raw.startswith(magic):
            table = marshal.loads(raw[len(magic):])
            if isinstance(table, dict):
                return table
    except (OSError, TypeError, ValueError, EOFError):
        pass
    return {}


def _exec(source, globals=None, locals=None):
    """``exec`` for the dataclasses module: a text's code object from the cache, compiled on a miss."""
    global _code, _new
    if not isinstance(source, str):
        return exec(source, globals, locals)
    if _code is None:
        _code = _load()
    code = _code.get(source)
    if type(code) is not _CodeType:  # a miss (or a file some other program wrote)
        code = _code[source] = compile(source, "<string>", "exec", dont_inherit=True)
        _new = True
    _used.add(source)
    return exec(code, globals, locals)


def install() -> bool:
    """Route the dataclasses module's ``exec`` through the cache (False when its code is not as expected)."""
    import dataclasses

    if getattr(dataclasses, "exec", None) is _exec:
        return True
    if "exec" in vars(dataclasses) or not hasattr(dataclasses, "_create_fn"):  # another Python's dataclasses
        return False
    dataclasses.exec = _exec
    return True


def uninstall() -> None:
    """Give the dataclasses module the builtin ``exec`` back."""
    import dataclasses

    if getattr(dataclasses, "exec", None) is _exec:
        del dataclasses.exec


def save() -> bool:
    """Write the cache file if this process compiled a text it did not hold; True when written."""
    global _new
    p = path()
    if not _new or _code is None or p is None or sys.dont_write_bytecode:
        return False
    table = _code if len(_code) <= MAX_ENTRIES else {t: _code[t] for t in _used}
    from .errors import TilecoreError
    from .fsutil import write_atomically

    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        write_atomically(p, importlib.util.MAGIC_NUMBER + marshal.dumps(table))
    except (OSError, TilecoreError, ValueError):
        return False
    _new = False
    return True
