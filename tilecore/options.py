"""Compile options shared by the CLI, the compiler and the plugins."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CompileOptions:
    """Options of one compilation (mirrors tileiras' flags where it has one).

    ``opt_level``: -O0..-O3 (LLVM / ptxas level; the dialect cascade always runs);
    ``debug`` (-g) and ``lineinfo`` (--lineinfo): keep source locations to the PTX;
    ``index_bitwidth``: width of ``index`` in LLVM; ``emit``: mlir | llvm | ptx | cubin | metadata;
    ``print_ir_after_all`` / ``dump_dir`` / ``timing`` / ``remarks``: inspection;
    ``extra``: free-form plugin options (``--option key=value``).
    """

    opt_level: int = 3
    debug: bool = False
    lineinfo: bool = False
    index_bitwidth: int = 64
    emit: str = "cubin"
    print_ir_after_all: bool = False
    dump_dir: str | None = None
    timing: bool = False
    remarks: bool = False
    stop_after: str | None = None
    extra: dict = field(default_factory=dict)
