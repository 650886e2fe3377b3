"""``vprintf(format, args)`` as the CUDA device runtime defines it, formatted on the host.

The argument buffer holds each argument at its natural alignment: integers as 4
or 8 bytes (by length modifier), floating point promoted to 8-byte double,
``%s`` / ``%p`` as 8-byte pointers.
"""

from __future__ import annotations

import ctypes
import re
import struct

_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcspn%])")


def read_cstring(addr: int, limit: int = 1 << 16) -> str:
    """A NUL-terminated string at host address ``addr``."""
    if not addr:
        return "(null)"
    return ctypes.string_at(addr, _strlen(addr, limit)).decode("utf-8", errors="replace")


def _strlen(addr: int, limit: int) -> int:
    n = 0
    while n < limit and ctypes.c_char.from_address(addr + n).value != b"\0":
        n += 1
    return n


class _Args:
    def __init__(self, addr: int, size: int | None):
        self.addr, self.off, self.size = addr, 0, size

    def take(self, fmt: str) -> int | float:
        size = struct.calcsize(fmt)
        self.off = (self.off + size - 1) // size * size
        if self.size is not None and self.off + size > self.size:
            raise IndexError("printf reads past its argument buffer")
        value = struct.unpack(fmt, ctypes.string_at(self.addr + self.off, size))[0]
        self.off += size
        return value


def format_vprintf(fmt: str, args_addr: int, args_size: int | None = None, read_string=read_cstring) -> str:
    """Format like the device ``printf``: ``fmt`` with the arguments packed at ``args_addr``.

    ``args_size``: the bytes readable there (None: unknown; reading past it raises IndexError);
    ``read_string(addr)``: how a ``%s`` argument is read.
    """
    args = _Args(args_addr, args_size)
    read_string = read_string or read_cstring
    out, pos = [], 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if width == "*":
            width = str(args.take("<i"))
        if prec == "*":
            prec = str(args.take("<i"))
        spec = "%" + flags + (width or "") + (f".{prec}" if prec is not None else "")
        wide = length in ("l", "ll", "j", "z", "t")
        if conv in "di":
            out.append((spec + "d") % args.take("<q" if wide else "<i"))
        elif conv in "ouxX":
            v = args.take("<Q" if wide else "<I")
            out.append((spec + ("d" if conv == "u" else conv)) % v)
        elif conv in "eEfFgG":
            out.append((spec + conv) % args.take("<d"))
        elif conv in "aA":
            v = args.take("<d").hex()
            out.append(v.upper() if conv == "A" else v)
        elif conv == "c":
            out.append((spec + "c") % chr(args.take("<i") & 0xFF))
        elif conv == "s":
            out.append((spec + "s") % read_string(args.take("<Q")))
        elif conv == "p":
            out.append((spec + "s") % hex(args.take("<Q")))
        else:  # %n writes nothing on the device
            args.take("<Q")
    out.append(fmt[pos:])
    return "".join(out)
