"""Input formats: readers chosen by magic bytes, then by file suffix.

The core reads MLIR text (``.mlir``) and MLIR bytecode; plugins add more
(``tileas`` adds TileIR bytecode) through ``tilecore_register_input_formats``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable

from .errors import TilecoreError


@dataclass
class InputFormat:
    """A reader: ``read(data: bytes, path: str, ctx) -> ir.Module``.

    ``magic``: leading bytes that identify the format (checked first);
    ``suffixes``: file name endings used when no magic matches.
    ``sniff``: ``sniff(data) -> bool`` for a text format that shares a suffix with another (checked after
    the magic bytes, before the suffixes): the tileas plugin's cuda_tile custom syntax in a ``.mlir`` file.
    ``read`` raises :class:`~tilecore.errors.TilecoreError` with a location for bad input.
    """

    name: str
    read: Callable
    magic: bytes = b""
    suffixes: tuple[str, ...] = ()
    plugin: str = ""
    disasm: Callable | None = None  # disasm(module) -> text for `tilecore disasm`; default str(module)
    sniff: Callable | None = None


def choose_format(path: str, data: bytes, formats: list[InputFormat]) -> InputFormat:
    """The format that reads ``data`` (magic first, then suffix)."""
    for f in formats:
        if f.magic and data.startswith(f.magic):
            return f
    for f in formats:
        if f.sniff is not None and f.sniff(data):
            return f
    for f in formats:
        if any(path.endswith(s) for s in f.suffixes):
            return f
    names = ", ".join(f"{f.name} ({f.plugin})" for f in formats) or "none"
    raise TilecoreError(f"no installed plugin can read this input (known formats: {names})",
                        os.path.basename(path) if path else "<input>")


def read_mlir_text(data: bytes, path: str, ctx):
    """Parse MLIR text or MLIR bytecode; parse errors become a located TilecoreError."""
    from .errors import mlir_error_to_tilecore
    from .mlir import ir

    if not data.startswith(b"ML\xefR"):
        _refuse_parser_aborts(data, path or "<input>")
    try:
        with ctx:
            if path and os.path.isfile(path):
                return ir.Module.parseFile(path)  # locations carry the real file name
            text = data if data.startswith(b"ML\xefR") else data.decode("utf-8", errors="replace")
            return ir.Module.parse(text)
    except Exception as e:  # noqa: BLE001 - MLIRError carries the parser diagnostics
        if not getattr(e, "error_diagnostics", None) and not data.startswith(b"ML\xefR"):
            _locate_silent_failure(data, path or "<input>", ctx)
        raise mlir_error_to_tilecore(e, default_location=path or "<input>") from None


# An op spelled in custom form: the name at a line's start or after "=" (results), not quoted.
_CUSTOM_OP = re.compile(rb"(?:^|=)[ \t]*([A-Za-z_][\w$]*\.[A-Za-z_][\w$.]*)(?=[\s(<{:@%]|$)", re.M)


def _locate_silent_failure(data: bytes, where: str, ctx) -> None:
    """MLIR's parser fails without a diagnostic on a registered op without a custom parser (the plugins'
    IRDL dialects: ``%0 = cuda_tile.addf %a, %b : ...``): report the first such op at its line and column."""
    from .dialects import IRDL_NAMESPACES

    for m in _CUSTOM_OP.finditer(data):
        name = m.group(1).decode()
        line_start = data.rfind(b"\n", 0, m.start(1)) + 1
        if data[line_start:m.start(1)].lstrip().startswith(b"//") or name.split(".")[0] not in IRDL_NAMESPACES \
                or not ctx.is_registered_operation(name):
            continue
        line = data.count(b"\n", 0, m.start(1)) + 1
        raise TilecoreError(f"'{name}' is written in custom syntax, which its dialect (defined in IRDL) cannot "
                            f"parse: write it in generic form (\"{name}\"(...) : (...) -> ...), or write the "
                            "whole cuda_tile module in NVIDIA's syntax (entry @k(...) { ... })",
                            f"{where}:{line}:{m.start(1) - line_start + 1}")


# Text MLIR's parser accepts but then aborts on (an assertion, with the assertions-enabled build): a dense
# array of `index` elements (DenseArrayAttr asks the element type for its bit width, which index has not).
_PARSER_ABORTS = [(re.compile(rb"\barray<\s*index\b"),
                   "a dense array of 'index' elements (array<index: ...>) is not valid: dense arrays take i1, i8, "
                   "i16, i32, i64, f32 or f64 elements")]


def _refuse_parser_aborts(data: bytes, where: str) -> None:
    """Report, at its line and column, text that would abort MLIR's parser instead of failing it."""
    for pat, message in _PARSER_ABORTS:
        m = pat.search(data)
        if m:
            line = data.count(b"\n", 0, m.start()) + 1
            col = m.start() - (data.rfind(b"\n", 0, m.start()) + 1) + 1
            raise TilecoreError(message, f"{where}:{line}:{col}")


CORE_FORMATS = [
    InputFormat("mlir-bytecode", read_mlir_text, magic=b"ML\xefR", suffixes=(".mlirbc",), plugin="core"),
    InputFormat("mlir", read_mlir_text, suffixes=(".mlir",), plugin="core"),
]
