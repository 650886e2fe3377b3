"""TileIR bytecode reader (cuTile Python's output, versions 13.1 to 13.5)."""

from .reader import TILEIR_FORMAT, decode_file, disasm, read_tileir

__all__ = ["TILEIR_FORMAT", "decode_file", "disasm", "read_tileir"]
