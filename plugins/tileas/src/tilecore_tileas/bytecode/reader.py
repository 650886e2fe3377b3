"""TileIR bytecode -> cuda_tile MLIR module, registered as a tilecore input format.

Reading runs in three steps: split and check the container (:mod:`.sections`),
decode every function into plain records (:mod:`.decode`), and only then build
IR (:mod:`.build`) and verify it (:mod:`tilecore_tileas.cuda_tile.verifier`).
Bad input is a :class:`~tilecore.errors.TilecoreError` located at
``<file>:<byte offset>``; verifier failures are located at the op.
"""

from __future__ import annotations

from tilecore.errors import TilecoreError, mlir_error_to_tilecore
from tilecore.inputs import InputFormat

from .build import build_module
from .cursor import BytecodeError
from .decode import decode
from .sections import MAGIC, read_container


def decode_file(data: bytes, path: str = "<input>"):
    """Decode ``data`` into :class:`~.decode.Decoded` records (no MLIR); raises TilecoreError."""
    try:
        return decode(read_container(data))
    except BytecodeError as e:
        raise TilecoreError(e.message, f"{path}:{e.offset}") from None
    except RecursionError:
        raise TilecoreError("bytecode nested too deeply", f"{path}:0") from None


def read_tileir(data: bytes, path: str, ctx, verify: bool = True):
    """Read TileIR bytecode into a ``builtin.module`` of cuda_tile ops in ``ctx``."""
    from ..cuda_tile.verifier import verify_module

    dec = decode_file(data, path or "<input>")
    try:
        module = build_module(dec, ctx, path or "<input>")
    except Exception as e:  # noqa: BLE001 - an MLIR builder rejected a decoded value
        raise mlir_error_to_tilecore(e, "cannot build IR: ", default_location=f"{path}:0") from None
    if verify:
        verify_module(module)
    return module


def disasm(module) -> str:
    """Text for ``tilecore disasm``: the module in MLIR generic form with debug locations."""
    return module.operation.get_asm(enable_debug_info=True)


TILEIR_FORMAT = InputFormat("tileir-bytecode", read_tileir, magic=MAGIC, suffixes=(".tileirbc",),
                            plugin="tileas", disasm=disasm)


def _read_cuda_tile_text(data: bytes, path: str, ctx):
    from ..cuda_tile.asm import read_cuda_tile_text

    return read_cuda_tile_text(data, path, ctx)


def _sniff_cuda_tile_text(data: bytes) -> bool:
    from ..cuda_tile.asm import looks_like_cuda_tile_text

    return looks_like_cuda_tile_text(data)


# NVIDIA's textual cuda_tile (tileirdisasm's output, the corpus' *.cuda_tile.mlir), recognised by content
CUDA_TILE_TEXT_FORMAT = InputFormat("cuda-tile-text", _read_cuda_tile_text, suffixes=(".cuda_tile",),
                                    plugin="tileas", disasm=disasm, sniff=_sniff_cuda_tile_text)
