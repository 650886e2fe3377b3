"""The nv_tileaa rows of the shared LLVM type converter (spec note 1, "Type ABI").

| nv_tileaa type                       | LLVM / NVVM                                          |
|--------------------------------------|------------------------------------------------------|
| ``!nv_tileaa.ptr<T, AS>``            | ``!llvm.ptr<AS>`` (a kernel argument: the bare pointer) |
| ``!nv_tileaa.mem_token``             | ``i32`` (the token width of every async / pipeline token) |
| ``!nv_tileaa.memref<T, shape, strides, AS>`` | ``{ptr, ptr, offset, sizes[N], strides[N]}`` descriptor |
| ``!nv_tileaa.tiled_view<...>``       | ``{ptr base, i64 packed layout / rank metadata}``    |

Tiles (builtin tensors) have no row: stage 4 keeps them in registers, one scalar per element
a thread holds, not as one LLVM value.
"""

from __future__ import annotations

import re

from tilecore.typeconv import memref_descriptor_type, tiled_view_descriptor_type, token_type

_PTR = re.compile(r"!nv_tileaa\.ptr<.*, (\d+) : i32>$")
_MEMREF = re.compile(r"!nv_tileaa\.memref<.*?, array<i64(?:: ([^>]*))?>, array<i64[^>]*>, (\d+) : i32>$")


def nv_tileaa_rule(t, conv):
    """Converter rule for the nv_tileaa types (None for anything else)."""
    s = str(t)
    if not s.startswith("!nv_tileaa."):
        return None
    if s == "!nv_tileaa.mem_token":
        return token_type()
    m = _PTR.match(s)
    if m:
        from tilecore.typeconv import llvm_ptr

        return llvm_ptr(int(m.group(1)))
    m = _MEMREF.match(s)
    if m:
        rank = len(m.group(1).split(",")) if m.group(1) else 0
        return memref_descriptor_type(int(m.group(2)), rank, conv.index_type())
    if s.startswith("!nv_tileaa.tiled_view<"):
        space = re.search(r", (\d+) : i32>, array", s)
        return tiled_view_descriptor_type(int(space.group(1)) if space else 1)
    return None
